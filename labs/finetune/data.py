"""Fine-tune, the data: the built-in sentiment set, an uploaded CSV (checked before anything is used),
or a small slice of a public dataset through the Hub's dataset viewer (only when online)."""

from __future__ import annotations

import collections
import csv
import io
import itertools
import json
import random
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from labs.core.errors import BadInput
from labs.core.models import models

BUILTIN_CSV = Path(__file__).resolve().parents[2] / "assets" / "sentiment.csv"
MAX_CSV_BYTES = 5 * 1024 * 1024
MAX_CSV_ROWS = 5000
DOMAINS = ("films", "restaurants", "products", "travel", "other")  # the built-in set's `domain` column
HUB_DATASETS = {"SST-2 (stanfordnlp/sst2, a 400-sentence slice)": ("stanfordnlp/sst2", "sentence")}


@dataclass
class Dataset:
    name: str
    labels: list[str]  # class names; a label id is its index here
    train: list[tuple[str, int]]
    validation: list[tuple[str, int]]
    validation_domains: list[str] = field(default_factory=list)  # each validation row's domain, where known
    train_domain: str | None = None  # the one domain the training rows come from (None: every domain)

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


def number_parts(text) -> list[str]:
    """A page's box of numbers ("8, 16;32", "2e-5 1e-3") split at commas, semicolons and spaces."""
    return [p for p in str(text).replace(";", ",").replace(" ", ",").split(",") if p]


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


def builtin_data(train_domain: str | None = None) -> Dataset:
    """The lab's own sentiment set: short reviews written for LM Lab, balanced, fixed split, each from a
    domain (films, restaurants, ...). With train_domain, training uses that domain's reviews only and
    validation keeps every domain: how much a model loses on the domains it never saw is then measured."""
    if train_domain not in (None, *DOMAINS):
        raise BadInput(f"Unknown domain “{str(train_domain)[:40]}”. Choose one of: {', '.join(DOMAINS)}.")
    with BUILTIN_CSV.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    kept = [(r["text"], r["label"], r["split"]) for r in rows
            if train_domain is None or r["split"] != "train" or r["domain"] == train_domain]
    name = "built-in sentiment set" + (f", trained on {train_domain} only" if train_domain else "")
    dataset = rows_to_dataset(name, kept)
    domain_of = {r["text"]: r["domain"] for r in rows}
    dataset.validation_domains = [domain_of[text] for text, _ in dataset.validation]
    dataset.train_domain = train_domain
    return dataset


def accuracy_by_domain(data: Dataset, probs: list[list[float]]) -> dict[str, tuple[int, float]]:
    """{domain: (validation rows, accuracy)} of predictions (class probabilities, one row per validation
    sentence), in DOMAINS order; empty where the data names no domains."""
    hits: dict[str, list[bool]] = {}
    for (_, y), domain, p in zip(data.validation, data.validation_domains, probs):
        hits.setdefault(domain, []).append(max(range(len(p)), key=p.__getitem__) == y)
    return {d: (len(hits[d]), sum(hits[d]) / len(hits[d])) for d in DOMAINS if d in hits}


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
