"""Choosing a model, the model card: for every model offered here, what its config and weights say, and the latency
of one forward pass, measured live once per process. The card gives the family, layers, hidden size, heads,
vocabulary and tokenizer kind, the parameters split into embeddings and the rest, and the pre-training objective.

Read from the loaded model (`models.load`), never from a published table: the counts are sum(p.numel())
of the weights in memory. Hub models that cannot be reached here get a row that says so."""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import asdict, dataclass

from labs.core.errors import BadInput, check_bool, check_name
from labs.core.models import models

LATENCY_TEXT = "The cat sat on the mat because it was warm and quiet there."  # one sentence, ~14 tokens
LATENCY_RUNS = 3  # timed passes after one warm-up; the median is reported
MAX_MODELS = 12
# The course's comparison variants: shown when the Hub (or its cache) has them, named as missing otherwise.
VARIANTS = ("roberta-base", "albert-base-v2", "google/electra-small-discriminator")

# What each kind of checkpoint was pre-trained to do (model_type, family) -> words; names override.
OBJECTIVES = {
    ("bert", "masked"): "masked LM (15 % of tokens) + next-sentence prediction",
    ("distilbert", "masked"): "masked LM, distilled from BERT (soft targets + cosine loss)",
    ("roberta", "masked"): "masked LM only (dynamic masking, no next-sentence prediction)",
    ("albert", "masked"): "masked LM + sentence-order prediction; parameters shared across layers",
    ("electra", "encoder"): "replaced-token detection (a discriminator against a small generator)",
    ("gpt2", "causal"): "next-token prediction (causal LM)",
    ("llama", "causal"): "next-token prediction (causal LM)",
    ("t5", "seq2seq"): "span corruption (encoder-decoder), then a multi-task mixture",
}
NAMED_OBJECTIVES = {
    models.SMOLLM2_NAME: "next-token prediction on 2T tokens, then instruction tuning (chat)",
    models.MINILM_NAME: "distilled from a larger encoder (MiniLM), then contrastive sentence-pair training",
}


@dataclass(frozen=True)
class ModelCard:
    name: str
    source: str  # hub / offline / local / "not here"
    family: str
    architecture: str | None = None
    model_type: str | None = None
    layers: int | None = None
    decoder_layers: int | None = None  # an encoder-decoder's second stack
    hidden_size: int | None = None
    heads: int | None = None
    vocab_size: int | None = None
    tokenizer: str | None = None  # WordPiece / byte-level BPE / Unigram ...
    params: int | None = None
    embedding_params: int | None = None
    other_params: int | None = None
    objective: str | None = None
    head_trained: bool | None = None
    latency_ms: float | None = None  # median of LATENCY_RUNS passes over LATENCY_TEXT; None until measured
    latency_tokens: int | None = None
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def tokenizer_kind(tokenizer) -> str:
    """WordPiece, BPE (byte-level or not), Unigram (SentencePiece-style), read from the fast tokenizer."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return type(tokenizer).__name__
    kind = type(backend.model).__name__
    if kind == "BPE" and "ByteLevel" in repr(backend.pre_tokenizer):
        return "byte-level BPE"
    return {"Unigram": "Unigram (SentencePiece)"}.get(kind, kind)


def param_split(model) -> tuple[int, int, int]:
    """(all, embeddings, the rest): every weight counted once (tied input and output embeddings are one
    tensor); "embeddings" are the lookup tables (token, position, segment: every nn.Embedding except T5's
    small relative-position biases, which belong to attention)."""
    import torch

    total = sum(p.numel() for p in model.parameters())  # deduplicated: a tied tensor appears once
    tables = {id(m.weight): m.weight.numel() for n, m in model.named_modules()
              if isinstance(m, torch.nn.Embedding) and "relative_attention_bias" not in n}
    embedding = sum(tables.values())
    return total, embedding, total - embedding


def objective(loaded: models.LoadedModel) -> str:
    if loaded.name in NAMED_OBJECTIVES:
        return NAMED_OBJECTIVES[loaded.name]
    config = loaded.model.config
    if loaded.source == "local":
        return f"not known from the config (a local {config.model_type} checkpoint: {loaded.family})"
    return OBJECTIVES.get((config.model_type, loaded.family), f"{loaded.family} pre-training")


def card(loaded: models.LoadedModel, latency: tuple[float, int] | None = None) -> ModelCard:
    """The card of a loaded model, read from its config and weights."""
    config = loaded.model.config
    total, embedding, other = param_split(loaded.model)
    seq2seq = loaded.family == "seq2seq"
    return ModelCard(
        name=loaded.name, source=loaded.source, family=loaded.family,
        architecture=type(loaded.model).__name__, model_type=config.model_type,
        layers=config.num_hidden_layers,  # GPT-2's n_layer, T5's num_layers: transformers maps the names
        decoder_layers=getattr(config, "num_decoder_layers", None) if seq2seq else None,
        hidden_size=config.hidden_size, heads=config.num_attention_heads, vocab_size=len(loaded.tokenizer),
        tokenizer=tokenizer_kind(loaded.tokenizer), params=total, embedding_params=embedding, other_params=other,
        objective=objective(loaded), head_trained=loaded.head_trained,
        latency_ms=latency[0] if latency else None, latency_tokens=latency[1] if latency else None,
        note="" if loaded.head_trained else "its LM head has random weights here")


def unreachable(name: str, family: str = "") -> ModelCard:
    return ModelCard(name=name, source="not here", family=family,
                     note="not measured here: the Hugging Face Hub cannot be reached and the model is not in the "
                          "local cache (run `./lab download " + name + "` while online)")


_latency: dict[str, tuple[float, int]] = {}  # model name -> (ms, tokens): measured once per process
_latency_lock = threading.Lock()  # one measurement at a time: two at once would slow each other down


def latency(loaded: models.LoadedModel) -> tuple[float, int]:
    """Milliseconds for one forward pass over LATENCY_TEXT (median of LATENCY_RUNS after a warm-up), once
    per process and shared: a class pressing the button at once waits for one measurement."""
    import torch

    with _latency_lock:
        if loaded.name not in _latency:
            ids = loaded.tokenizer(LATENCY_TEXT, return_tensors="pt")["input_ids"].to(loaded.device)  # [1, n]
            extra = {"decoder_input_ids": ids[:, :1]} if loaded.family == "seq2seq" else {}
            times = []
            with torch.inference_mode():
                for run in range(LATENCY_RUNS + 1):
                    started = time.perf_counter()
                    loaded.model(input_ids=ids, **extra)
                    if run:  # the first pass warms up
                        times.append((time.perf_counter() - started) * 1000)
            _latency[loaded.name] = (round(statistics.median(times), 1), int(ids.shape[1]))
        return _latency[loaded.name]


def names_asked(names) -> list[str]:
    """The models asked for: a list (or a comma-separated string) of names; empty = every model offered."""
    if names is None or names == "" or names == []:
        return [c.name for c in models.registry().values()]
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    if not isinstance(names, (list, tuple)):
        raise BadInput("The models must be a list of names (or empty for every model offered here).")
    if len(names) > MAX_MODELS:
        raise BadInput(f"Ask for at most {MAX_MODELS} models at once, not {len(names)}.")
    return [check_name(n) for n in names]


def not_loaded(choice: models.ModelChoice) -> ModelCard:
    return ModelCard(name=choice.name, source=choice.source, family=choice.family,
                     note="offered here and loaded on demand: not loaded yet (pick it in a lab, or ask /model_card "
                          "for it by name, to read its card)")


def model_cards(loaded_models: list, hub_missing: list[tuple[str, str]] = (), measure: bool = True) -> dict:
    """Cards for models already resolved (LoadedModel, a ModelChoice offered on demand and not loaded yet, or
    (name, message) for one that failed), the Hub's missing ones named, latency measured when asked (once per
    process per model)."""
    rows = []
    for item in loaded_models:
        if isinstance(item, tuple):  # (name, message): could not be loaded here
            rows.append(ModelCard(name=item[0], source="not here", family="", note=item[1]).to_json())
        elif isinstance(item, models.ModelChoice):
            rows.append(not_loaded(item).to_json())
        else:
            rows.append(card(item, latency(item) if measure else _latency.get(item.name)).to_json())
    rows += [unreachable(name, family).to_json() for name, family in hub_missing]
    return {"online": models.hub_online(), "latency_text": LATENCY_TEXT, "models": rows}


def missing_hub_models() -> list[tuple[str, str]]:
    """The course's Hub models (defaults and variants) that this server cannot offer."""
    offered = models.registry()
    wanted = {c.name: c.family for c in models.HUB_MODELS}
    wanted |= {v: "" for v in VARIANTS if v not in wanted}  # a variant may be a Hub default too
    return [(name, family) for name, family in wanted.items() if name not in offered]


def resolve(names) -> list:
    """Each name loaded once (its family's default head), or (name, message) where it cannot be. Asked for
    every model (names empty), a model offered on demand that no lab has loaded yet stays unloaded."""
    out = []
    asked_all = names is None or names == "" or names == []
    for name in names_asked(names):
        choice = models.registry().get(name)
        if asked_all and choice is not None and choice.on_demand and name not in models.loaded_names():
            out.append(choice)
            continue
        try:
            out.append(models.load(name))
        except models.ModelUnavailable as exc:
            out.append((name, str(exc)))
    return out


def model_card(names: list | None = None, measure: bool = True) -> dict:
    """API /model_card: {online, latency_text, models: [card]} for the named models (every model offered
    when empty), plus the course's Hub models that are not here ("not measured here")."""
    asked_all = names is None or names == "" or names == []
    return model_cards(resolve(names), missing_hub_models() if asked_all else [], check_bool(measure, "measure"))
