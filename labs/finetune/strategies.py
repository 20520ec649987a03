"""Fine-tune, the settings and strategies: which parameters train (full, frozen embeddings, frozen
bottom layers, head only, LoRA adapters, prompt tuning and prefix tuning via peft), checked settings, and parameter
counts (B3, B6)."""

from __future__ import annotations

import functools
import gc
import re
from dataclasses import dataclass

from labs.core.errors import BadInput, check_int, check_number
from labs.core.models import models
from labs.finetune import bottleneck
from labs.finetune.data import MAX_CSV_ROWS
from labs.finetune.tasks import check_task

# The lecture's rates ("Learning rate: 2e-5, 3e-5, 5e-5") and the handout's question about 1e-2 (tab.py quotes both).
LEARNING_RATE_PRESETS = {"2e-5": 2e-5, "3e-5": 3e-5, "5e-5": 5e-5, "1e-2 (too high!)": 1e-2}
DEFAULTS = dict(strategy="full", learning_rate=5e-5, epochs=3, batch_size=16, train_examples=200, seed=0,
                warmup_ratio=0.1, weight_decay=0.01, lora_targets="query, value", task="sentiment")
LIMITS = dict(epochs=(1, 10), batch_size=(2, 64), train_examples=(8, MAX_CSV_ROWS))
LORA_TARGETS = {"query, value": ("query", "value"), "query, key, value": ("query", "key", "value")}
_ALIASES = {"query": ("query", "q_lin", "q_proj"), "key": ("key", "k_lin", "k_proj"),
            "value": ("value", "v_lin", "v_proj")}  # BERT, DistilBERT, Llama-style names
HEAD_NAMES = ("pooler", "pre_classifier", "classifier", "qa_outputs")  # "the head" of BERT / DistilBERT task models
# Feature extraction: only the head the checkpoint lacks learns (BERT, MiniLM: the last linear layer on the
# pooled or token features; DistilBERT has no pooler, so its untrained pre_classifier learns too).
FEATURE_HEAD = ("pre_classifier", "classifier", "qa_outputs")
LLRD_DECAY = 0.95  # the course's ξ: lr_l = lr · ξ^(L − l)
VIRTUAL_TOKENS = 20  # prompt / prefix tuning's default number of virtual tokens (peft's guides use 20)
# peft's task type per task head: prompt tuning prepends tokens, so only sentence-level heads keep their positions
PEFT_TASK_TYPES = {"ForSequenceClassification": "SEQ_CLS", "ForTokenClassification": "TOKEN_CLS",
                   "ForQuestionAnswering": "QUESTION_ANS"}
PROMPT_TUNING_TASKS = ("sentiment", "pair")


@dataclass(frozen=True)
class Settings:
    """One run's settings, checked (check_settings), as transformers' TrainingArguments gathers a Trainer's: what
    the tab, the API endpoints and every run of the lab pass along, and what a shared run is keyed by."""
    model: str
    strategy: str = DEFAULTS["strategy"]
    learning_rate: float = DEFAULTS["learning_rate"]
    epochs: int = DEFAULTS["epochs"]
    batch_size: int = DEFAULTS["batch_size"]
    train_examples: int = DEFAULTS["train_examples"]
    seed: int = DEFAULTS["seed"]
    warmup_ratio: float = DEFAULTS["warmup_ratio"]
    weight_decay: float = DEFAULTS["weight_decay"]
    lora_targets: str = DEFAULTS["lora_targets"]
    task: str = DEFAULTS["task"]


ENCODER_FAMILIES = ("encoder", "masked")  # what this lab fine-tunes: BERT-style encoders


def check_settings(model, strategy, learning_rate, epochs, batch_size, train_examples, seed,
                   warmup_ratio=DEFAULTS["warmup_ratio"], weight_decay=DEFAULTS["weight_decay"],
                   lora_targets: str = DEFAULTS["lora_targets"], max_train: int | None = None,
                   task: str = DEFAULTS["task"]) -> Settings:
    # 0 is allowed: the control run, which must change (and forget) nothing.
    lr = check_number(learning_rate, "The learning rate", 0, 1, hint=" (typical: 2e-5 to 5e-5)")
    values = {}
    for what, value in (("epochs", epochs), ("batch_size", batch_size), ("train_examples", train_examples)):
        values[what] = check_int(value, f"The {what.replace('_', ' ')}")
        low, high = LIMITS[what]
        high = min(high, max_train) if what == "train_examples" and max_train else high
        if not low <= values[what] <= high:
            raise BadInput(f"The {what.replace('_', ' ')} must be between {low} and {high}; got {values[what]}.")
    warmup = check_number(warmup_ratio, "The warm-up ratio", 0, 0.5)
    decay = check_number(weight_decay, "The weight decay", 0, 0.5)
    parse_strategy(strategy)
    if not isinstance(lora_targets, str) or lora_targets not in LORA_TARGETS:
        raise BadInput(f"LoRA targets are one of: {', '.join(LORA_TARGETS)}.")
    choice = models.get_choice(model)
    models.check_family(choice, ENCODER_FAMILIES)  # a causal LM or a T5 is refused before anything loads
    return Settings(choice.name, strategy, lr, values["epochs"], values["batch_size"],
                    values["train_examples"], check_int(seed, "The seed", 0, 2**32 - 1), warmup, decay, lora_targets,
                    check_task(task))


STRATEGY_KINDS = {"full": "Full fine-tuning", "freeze_embeddings": "Freeze the embeddings",
                  "freeze_bottom": "Partial: freeze the embeddings and the bottom N layers",
                  "features": "Feature extraction (frozen encoder, a linear head)",
                  "head_only": "Head only (pooler + classifier)", "llrd": f"Layer-wise lr decay (ξ = {LLRD_DECAY})",
                  "lora": "LoRA (peft)", "adapter": "Bottleneck adapters (Houlsby; N = bottleneck size)",
                  "prompt": "Prompt tuning (peft: N soft prompt tokens at the input)",
                  "prefix": "Prefix tuning (peft: N key/value vectors at every layer)"}
SIMPLE_KINDS = ("full", "freeze_embeddings", "features", "head_only")  # names without a number


def strategy_name(kind: str, n: int) -> str:
    """The strategy's name from its kind and number: ("freeze_bottom", 4) -> "freeze_bottom_4"."""
    return {"freeze_bottom": f"freeze_bottom_{int(n)}", "lora": f"lora_r{int(n)}", "prompt": f"prompt_{int(n)}",
            "adapter": f"adapter_{int(n)}",
            "prefix": f"prefix_{int(n)}", "llrd": f"llrd_{LLRD_DECAY}"}.get(kind, kind)


def parse_strategy(strategy: str) -> tuple[str, float]:
    """(kind, N or r or ξ): kind is one of STRATEGY_KINDS."""
    if strategy in SIMPLE_KINDS:
        return strategy, 0
    text = strategy if isinstance(strategy, str) else ""
    match = re.fullmatch(r"(freeze_bottom_|lora_r|prompt_|prefix_|adapter_)(\d{1,3})", text)
    if match and int(match.group(2)) >= 1:
        kind = {"freeze_bottom_": "freeze_bottom", "lora_r": "lora"}.get(match.group(1), match.group(1)[:-1])
        return kind, int(match.group(2))
    match = re.fullmatch(r"llrd_(0?\.\d{1,4}|1(\.0*)?)", text)
    if match and float(match.group(1)) > 0:
        return "llrd", float(match.group(1))
    raise BadInput(f"Unknown strategy {str(strategy)[:40]!r}. Use full, freeze_embeddings, freeze_bottom_N "
                   "(e.g. freeze_bottom_4), features, head_only, llrd_0.95, lora_rR (e.g. lora_r8), adapter_M "
                   "(bottleneck size M, e.g. adapter_64), prompt_N or prefix_N (N virtual tokens, e.g. prompt_20).")


def is_head(name: str) -> bool:
    return any(part in HEAD_NAMES for part in name.split("."))


def layer_index(name: str) -> int | None:
    match = re.search(r"\.layer\.(\d+)\.", name)
    return int(match.group(1)) if match else None


def num_layers(model) -> int:
    return model.config.num_hidden_layers if hasattr(model.config, "num_hidden_layers") else model.config.n_layers


def apply_strategy(model, strategy: str, lora_targets: str = "query, value"):
    """Freeze what the strategy freezes (or wrap the model with LoRA adapters); returns the model to train."""
    kind, n = parse_strategy(strategy)
    if kind == "freeze_bottom" and n > num_layers(model):
        raise BadInput(f"This model has {num_layers(model)} layers; freeze_bottom_{n} is too many.")
    if kind == "lora":
        return _with_lora(model, n, lora_targets)
    if kind in ("prompt", "prefix"):
        return _with_prompt(model, kind, n)
    if kind == "adapter":
        return bottleneck.insert(model, n)
    for name, param in model.named_parameters():
        frozen = {"full": False,
                  "freeze_embeddings": ".embeddings." in name,
                  "freeze_bottom": ".embeddings." in name or (layer_index(name) is not None and layer_index(name) < n),
                  "features": not any(part in FEATURE_HEAD for part in name.split(".")),
                  "head_only": not is_head(name), "llrd": False}[kind]
        param.requires_grad_(not frozen)
    return model


def layer_depth(name: str, layers: int) -> int:
    """A parameter's depth l for layer-wise decay: embeddings 0, encoder layer i → i + 1, the head L."""
    if ".embeddings." in name or name.startswith("embeddings."):
        return 0
    index = layer_index(name)
    return layers if index is None else index + 1


def layer_rates(model, strategy: str, learning_rate: float) -> list[tuple[int, float, list]]:
    """[(depth, rate, [(name, parameter)])] for the trainable parameters, shallowest first. One group at
    `learning_rate` unless the strategy is llrd_ξ: then depth l learns at lr · ξ^(L − l) (the head at lr)."""
    kind, decay = parse_strategy(strategy)
    layers, groups = num_layers(model), {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            groups.setdefault(layer_depth(name, layers) if kind == "llrd" else layers, []).append((name, param))
    return [(depth, learning_rate * (decay ** (layers - depth) if kind == "llrd" else 1.0), groups[depth])
            for depth in sorted(groups)]


def lora_module_names(model, lora_targets: str) -> list[str]:
    """The Linear layers' short names that LoRA adapts in this architecture (e.g. query, value)."""
    import torch

    present = {name.rsplit(".", 1)[-1] for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)}
    names = [alias for target in LORA_TARGETS[lora_targets] for alias in _ALIASES[target] if alias in present]
    if not names:
        raise BadInput("LoRA found no attention projections to adapt in this model.")
    return names


def _with_lora(model, rank: int, lora_targets: str):
    from peft import LoraConfig, TaskType, get_peft_model

    head = sorted({part for name, _ in model.named_modules() for part in name.split(".") if part in HEAD_NAMES})
    config = LoraConfig(task_type=TaskType.SEQ_CLS, r=rank, lora_alpha=2 * rank, lora_dropout=0.0,
                        target_modules=lora_module_names(model, lora_targets), modules_to_save=head)
    return get_peft_model(model, config)


def peft_task_type(model) -> str:
    """peft's task type for this transformers task model (BertForTokenClassification -> TOKEN_CLS)."""
    name = type(model).__name__
    return next((t for suffix, t in PEFT_TASK_TYPES.items() if name.endswith(suffix)), "SEQ_CLS")


def _with_prompt(model, kind: str, tokens: int):
    """Prompt tuning (trainable vectors before the input's embeddings) or prefix tuning (trainable keys and values
    at every layer), with peft's own configs; peft keeps the task head trainable (modules_to_save)."""
    from peft import PrefixTuningConfig, PromptTuningConfig, get_peft_model

    task_type = peft_task_type(model)
    if kind == "prompt" and task_type != "SEQ_CLS":
        raise BadInput("Prompt tuning puts its virtual tokens before the input, which moves every token's position: "
                       "a token or span label no longer lines up (peft offers it here for sentence-level tasks: "
                       "sentiment, pair). Use prefix tuning for NER and QA: it keeps the positions.")
    config = (PromptTuningConfig if kind == "prompt" else PrefixTuningConfig)(
        task_type=task_type, num_virtual_tokens=int(tokens))
    return get_peft_model(model, config)


def is_prompt_learning(model) -> bool:
    """A peft prompt / prefix tuning model (its encoder's weights are all frozen)."""
    return bool(getattr(getattr(model, "active_peft_config", None), "is_prompt_learning", False))


def encoder_of(model):
    """The model whose hidden states tell what pre-training taught: for prompt and prefix tuning the transformers
    model inside peft's wrapper, without the virtual tokens (its weights stay frozen); otherwise the model itself."""
    return model.base_model if is_prompt_learning(model) else model


def count_params(model) -> tuple[int, int]:
    """(trainable, total). peft keeps a frozen copy of each head it trains ("original_module"):
    that copy is not part of the model being trained, so it is not counted. A peft model's trainable count is
    peft's own (get_nb_trainable_parameters, what print_trainable_parameters prints)."""
    trainable = total = 0
    for name, param in model.named_parameters():
        if "original_module" in name:
            continue
        total += param.numel()
        trainable += param.numel() if param.requires_grad else 0
    if hasattr(model, "get_nb_trainable_parameters"):
        trainable = model.get_nb_trainable_parameters()[0]
    return trainable, total


def prompt_added(kind: str, tokens: int, hidden: int, layers: int) -> int:
    """Prompt tuning trains N × hidden numbers (one vector per virtual token, at the input); prefix tuning
    without its projection N × layers × 2 × hidden (a key and a value vector per token at every layer)."""
    return tokens * hidden * (1 if kind == "prompt" else 2 * layers)


def lora_added(d_in: int, d_out: int, rank: int) -> int:
    """Exercise B6: LoRA replaces the update of a d_out × d_in weight by B·A with A: r × d_in and
    B: d_out × r, so it trains r·(d_in + d_out) numbers instead of d_in·d_out."""
    return rank * (d_in + d_out)


@functools.lru_cache(maxsize=64)  # counting builds the model; every visitor's page asks on load
def param_summary(model_name: str, strategy: str, lora_targets: str = "query, value") -> dict:
    """Trainable / total parameters for a strategy, counted on the real model before any run."""
    model, _ = models.load_for_classification(model_name, 2)
    try:
        model = apply_strategy(model, strategy, lora_targets)
        trainable, total = count_params(model)
        return {"trainable": trainable, "total": total, "percent": 100 * trainable / total}
    finally:
        del model
        gc.collect()
