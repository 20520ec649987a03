"""Loading models: one checkpoint, the head a lab asks for, loaded once per process; the labs' one import for
models.

A lab resolves a model once, at the edge (`models.load(name, *families, head=...)`), and passes the
`LoadedModel` on (model in eval mode, tokenizer, device, head, where it came from). Loading is keyed
by (model, head): bert-base-uncased serves Fill in the blank (`mlm`) and next-sentence prediction
(`pretraining`) from one checkpoint. Which models exist is labs.core.models.registry's business; its names are
re-exported here so that a lab needs one import. Nothing runs at import time: torch and transformers
are imported on first use so that the app's page answers quickly.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from labs.core.errors import BadInput
from labs.core.models import fits, offline_cache
from labs.core.models.device import in_gpu_call, on_zero_gpu, pick_device  # noqa: F401  (re-exported too)
from labs.core.models.offered import (  # noqa: F401  (re-exported: the labs' one import for models)
    choice_names,
    choices,
    default_name,
    get_choice,
    gpu_model_names,
    registry,
    reset_registry,
    skipped_extra_models,
)
from labs.core.models.registry import (  # noqa: F401  (re-exported too)
    DEFAULT_HEAD,
    FAMILIES,
    FAMILY_WORDS,
    HEAD_WORDS,
    HEADS,
    HUB_MODELS,
    MINILM_NAME,
    SMOLLM2_NAME,
    TASK_HEADS,
    ModelChoice,
    ModelUnavailable,
    check_family,
    family_from_config,
    hub_online,
    in_hub_cache,
    offline_models,
)

log = logging.getLogger(__name__)


@dataclass
class LoadedModel:
    choice: ModelChoice
    model: Any
    tokenizer: Any
    device: str
    load_seconds: float
    head: str = ""  # the head it was loaded with (HEADS); "" means the family's default
    untrained: tuple[str, ...] = field(default=())  # weights the checkpoint lacked: initialised at random

    def __post_init__(self):
        self.head = self.head or DEFAULT_HEAD[self.choice.family]

    def __reduce__(self):
        """A loaded model crosses processes by name (a ZeroGPU call, a Ray task): the other side loads, or already
        holds, the same checkpoint with the same head, instead of receiving its weights in a pickle."""
        return load_by_key, (self.choice.name, self.head)

    @property
    def name(self) -> str:
        return self.choice.name

    @property
    def family(self) -> str:
        return self.choice.family

    @property
    def source(self) -> str:
        return self.choice.source

    @property
    def head_trained(self) -> bool:
        """Did the checkpoint contain every weight of this head? A random head's output is noise and
        must never be shown as the model's answer."""
        return not self.untrained

    @property
    def max_tokens(self) -> int:
        """The longest input this model reads: the tokenizer's limit or the position table, if smaller
        (T5's relative positions have no table)."""
        positions = getattr(self.model.config, "max_position_embeddings", None) or 10**9
        return min(self.tokenizer.model_max_length, positions)


# ---------------------------------------------------------------- loading

_loaded: dict[tuple[str, str], LoadedModel] = {}  # (model name, head) -> the one loaded copy
_load_lock = threading.Lock()


def loaded_names() -> list[str]:
    return list(dict.fromkeys(name for name, _ in _loaded))


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
            AutoModelForPreTraining,
            AutoModelForQuestionAnswering,
            AutoModelForSeq2SeqLM,
            AutoModelForSequenceClassification,
            AutoModelForTokenClassification,
            AutoTokenizer,
            DataCollatorForLanguageModeling,
            get_linear_schedule_with_warmup,
            set_seed,
        )
        _transformers_ready = True


# Which heads each family can serve with trained weights, or train (task heads start random).
FAMILY_HEADS = {"masked": ("mlm", "pretraining", "encoder") + TASK_HEADS,
                "encoder": ("encoder", "pretraining") + TASK_HEADS,
                "causal": ("causal",), "seq2seq": ("seq2seq", "encoder")}


def check_head(choice: ModelChoice, head: str) -> str:
    """The head to load (the family's default for ""), or BadInput when this family cannot have it."""
    head = head or DEFAULT_HEAD[choice.family]
    if head not in HEADS:
        raise BadInput(f"There is no head called '{str(head)[:40]}'. Heads: {', '.join(HEADS)}.")
    if head not in FAMILY_HEADS[choice.family]:
        raise BadInput(f"'{choice.name}' cannot have a {HEAD_WORDS[head]}: it is {FAMILY_WORDS[choice.family]}. "
                       "Pick an encoder such as bert-base-uncased or all-MiniLM-L6-v2.")
    return head


def load(name, *families: str, head: str = "") -> LoadedModel:
    """Load a registry model with a head once per process (thread-safe) and return it, in eval mode.
    With families, a model of another family is refused first (BadInput, before anything loads). A
    model already loaded by the caller passes through (after the same checks), or gives its
    checkpoint with another head when one is asked for.

    Every model is loaded with eager attention: it is the only implementation that returns
    attention weights, and one copy in memory then serves every lab."""
    if isinstance(name, LoadedModel):
        check_family(name.choice, families)
        if not head or head == name.head:
            return name
        name = name.choice.name
    choice = get_choice(name)
    check_family(choice, families)
    key = (choice.name, check_head(choice, head))
    if key in _loaded:
        return _on_call_device(key) if in_gpu_call() else _loaded[key]
    with _load_lock:
        if key not in _loaded:
            started = time.perf_counter()
            _import_transformers()
            device = pick_device()
            if choice.needs_gpu:  # before a byte of its weights is read
                _check_gpu_model(choice, key[1], device)
            model, tokenizer, untrained = _load_uncached(choice, key[1], device)
            model.to(device).eval()
            _loaded[key] = LoadedModel(choice, model, tokenizer, device, time.perf_counter() - started,
                                       key[1], untrained)
            log.info("loaded %s (%s) from %s in %.1f s", choice.name, key[1], choice.location,
                     _loaded[key].load_seconds)
            if untrained:
                log.info("%s has no trained weights for %d tensors of its %s", choice.name, len(untrained), key[1])
            # A model and its tokenizer add ~300,000 Python objects that live as long as the server. The
            # garbage collector's full passes walked all of them (0.24 s, every thread stopped, several
            # times in a class's burst of requests); frozen, they are left out of its passes.
            gc.freeze()
        return _loaded[key]


def new_load_lock() -> None:
    """In a ZeroGPU worker (labs.core.work.zerogpu): another thread of the app may have held the lock at the fork,
    and that thread does not exist here."""
    global _load_lock
    _load_lock = threading.Lock()


def _on_call_device(key: tuple[str, str]) -> LoadedModel:
    """In a ZeroGPU worker: the model the app had loaded (on the CPU, inherited by the fork), moved to this call's
    GPU once; the move stays in the worker, as everything a GPU call changes in memory does."""
    loaded, device = _loaded[key], pick_device()
    if loaded.device != device:
        loaded.model.to(device)
        loaded.device = device
    return loaded


def load_by_key(name: str, head: str) -> LoadedModel:
    """What an unpickled LoadedModel becomes: the same model loaded in this process (see LoadedModel.__reduce__)."""
    return load(name, head=head)


def require_trained_head(loaded: LoadedModel) -> LoadedModel:
    """The loaded model, or ModelUnavailable when its head was initialised at random (a plain encoder
    asked for next-sentence prediction): its output must never be shown as the model's answer."""
    if not loaded.head_trained:
        raise ModelUnavailable(
            f"'{loaded.name}' has no trained {HEAD_WORDS[loaded.head]} (its checkpoint lacks "
            f"{len(loaded.untrained)} of the head's weights, so they would be random). Pick a model that was "
            "pre-trained with it, such as bert-base-uncased.")
    return loaded


def model_class(head: str):
    import transformers

    return getattr(transformers, {
        "mlm": "AutoModelForMaskedLM", "pretraining": "AutoModelForPreTraining", "causal": "AutoModelForCausalLM",
        "seq2seq": "AutoModelForSeq2SeqLM", "sequence_classification": "AutoModelForSequenceClassification",
        "token_classification": "AutoModelForTokenClassification",
        "question_answering": "AutoModelForQuestionAnswering", "encoder": "AutoModel"}[head])


def _from_pretrained_kwargs(choice: ModelChoice) -> dict:
    return {"local_files_only": choice.source != "hub" or not hub_online(), "trust_remote_code": False}


GPU_ONLY = ("'{name}' runs on a GPU only, and this request could not have one{why}. Pick a smaller model, such as "
            "SmolLM2-135M-Instruct or all-MiniLM-L6-v2.")


def _check_gpu_model(choice: ModelChoice, head: str, device: str) -> None:
    """A model that needs the GPU: refused where there is none (on ZeroGPU, outside a GPU call: the call was
    refused, for instance GPU time used up) unless LAB_DEVICE names the device on purpose, and where its weights
    do not fit (labs.core.models.fits)."""
    if not device.startswith("cuda") and not os.environ.get("LAB_DEVICE", "").strip():
        why = " (on ZeroGPU: GPU time for today may be used up)" if on_zero_gpu() else ""
        raise ModelUnavailable(GPU_ONLY.format(name=choice.name, why=why))
    fits.check(choice, model_class(head).__name__, device, _from_pretrained_kwargs(choice)["local_files_only"])


def _load_uncached(choice: ModelChoice, head: str, device: str = "cpu"):
    try:
        if choice.gguf_file:
            model, tokenizer, untrained = _load_smollm2(choice)
        else:
            dtype = fits.load_dtype(choice, device) if choice.needs_gpu else None  # the others: as they always were
            model, tokenizer, untrained = _pretrained(choice.location, head, dtype, **_from_pretrained_kwargs(choice))
    except ModelUnavailable:
        raise
    except Exception as exc:
        raise ModelUnavailable(_explain_failure(choice, exc)) from exc
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token  # causal LMs ship without one; batching needs it
    return model, tokenizer, untrained


def _pretrained(folder: str, head: str, dtype=None, **kwargs):
    """(model, tokenizer, the weights the checkpoint lacked: transformers initialises them at random)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
    chosen = {"dtype": dtype} if dtype is not None else {}
    model, info = model_class(head).from_pretrained(folder, attn_implementation="eager", use_safetensors=None,
                                                    output_loading_info=True, **chosen, **kwargs)
    return model, tokenizer, tuple(sorted(info.get("missing_keys") or ()))


def _load_smollm2(choice: ModelChoice):
    """From the converted copy (see labs.core.models.offline_cache); a copy that fails to load is deleted and
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
    loaded = next((m for (n, _), m in _loaded.items() if n == choice.name), None)
    if loaded is not None:
        return loaded.tokenizer
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


def load_for_task(name, head: str, *, num_labels: int | None = None, labels: list[str] | None = None,
                  scratch: bool = False, seed: int = 0):
    """A fresh (never cached) model with a task head for a fine-tuning run, and its tokenizer.

    The encoder comes pre-trained from the registry model, the head is new (unless the checkpoint
    has one already) and initialised from `seed`; with scratch=True every weight is random (same
    architecture). Each run gets its own copy so that runs never share weights, and the copy is freed
    when the run ends. `labels` names the classes (id2label); otherwise `num_labels` counts them."""
    import torch

    choice = get_choice(name)
    if choice.family in ("causal", "seq2seq"):
        raise ModelUnavailable(f"'{choice.name}' is not an encoder; fine-tuning a {HEAD_WORDS[head]} here needs an "
                               "encoder (BERT-style), such as all-MiniLM-L6-v2.")
    head = check_head(choice, head)
    extra = {}
    if labels:
        extra = {"num_labels": len(labels), "id2label": dict(enumerate(labels)),
                 "label2id": {label: i for i, label in enumerate(labels)}}
    elif num_labels:
        extra = {"num_labels": num_labels}
    try:
        kwargs = _from_pretrained_kwargs(choice)
        # One load at a time in the whole process: transformers builds models on the "meta" device
        # through process-wide patches, so a load in another thread can receive empty tensors.
        with _load_lock:
            _import_transformers()
            from transformers import AutoConfig, AutoTokenizer

            if choice.name not in _tokenizers:
                _tokenizers[choice.name] = AutoTokenizer.from_pretrained(choice.location, **kwargs)
            torch.manual_seed(seed)  # the new head (or every weight, from scratch) starts from this seed
            if scratch:
                config = AutoConfig.from_pretrained(choice.location, **extra, **kwargs)
                model = model_class(head).from_config(config)
            else:
                model = model_class(head).from_pretrained(choice.location, use_safetensors=None,
                                                          ignore_mismatched_sizes=True, **extra, **kwargs)
    except Exception as exc:
        raise ModelUnavailable(_explain_failure(choice, exc)) from exc
    return model.to(pick_device()), _tokenizers[choice.name]


def load_for_classification(name: str, num_labels: int, *, scratch: bool = False, seed: int = 0):
    """load_for_task with a sentence-classification head (the sentiment run)."""
    return load_for_task(name, "sequence_classification", num_labels=num_labels, scratch=scratch, seed=seed)


def _explain_failure(choice: ModelChoice, exc: Exception) -> str:
    if choice.source == "hub" and not hub_online():
        return (f"'{choice.name}' is not available: the Hugging Face Hub cannot be reached and the model "
                "is not in the local cache. While online, run `./lab download` once.")
    return f"'{choice.name}' could not be loaded ({type(exc).__name__}: {str(exc)[:200]})."


def readable_tokens(tokenizer, ids) -> list[str]:
    """Subword tokens as a student can read them: byte-level BPE's "Ġ" (a leading space) becomes
    "␣" and "Ċ" (a newline) "↵"; WordPiece "##" pieces stay as they are."""
    return [t.replace("Ġ", "␣").replace("Ċ", "↵") for t in tokenizer.convert_ids_to_tokens(list(ids))]
