"""Pre-training, why 80 / 10 / 10? The same chosen tokens shown to a trained masked LM as [MASK], as a random token
or kept, and a text with no [MASK] at all. The chosen tokens are BERT's 15 %, drawn exactly as
DataCollatorForLanguageModeling draws them; a text with no [MASK] is what the model reads at fine-tuning. At each
position: the MLM loss (−log P(original)) and whether the top-1 prediction is the original token.

preprocess (`drawn`: the draw per text, `condition_inputs`) → forward (the registered "mlm_target"
pass: the encoder, the vocabulary head at the asked positions only, log-softmax, top-1) → postprocess
(`score`: mean loss and accuracy per condition)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from labs.core.errors import check_int, check_text
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.core.work import lm
from labs.core.work.jobs import JOBS
from labs.pretraining import masking, passages

MAX_TOKENS = 256
SEED_STRIDE = 1000  # text j of a run with seed s is drawn with seed s * SEED_STRIDE + j
CONDITIONS = {  # name: (short label, what the model sees)
    "mask": ("[MASK] (80 %)", "the chosen tokens shown as [MASK] (80 % of them in pre-training)"),
    "random": ("a random token (10 %)", "the chosen tokens replaced by a random token (10 %)"),
    "keep": ("kept (10 %)", "the chosen tokens kept unchanged, still predicted (10 %)"),
    "no_mask": ("no [MASK] at all (fine-tuning)",
                "every other token, in a text with no [MASK] at all (what fine-tuning looks like)")}
NEEDS_BERT = ("Not measured here: needs bert-base-uncased from the Hub (a masked LM with its trained MLM head; "
              "while online, run ./lab download once). The draws below use all-MiniLM-L6-v2's tokens, "
              "the same uncased vocabulary.")
# The course's words (document, where, text): course_quotes' entries, checked under their headings.
COURSE = tuple((q.file[:3], f"{q.document}, “{q.where}”" if q.document != course_quotes.TEXTBOOK
                else f"Textbook {q.where.split(' ', 1)[0]}", q.text)
               for q in map(course_quotes.get, ("why_80_10_10_0", "why_80_10_10_1", "why_80_10_10_2")))
WHY = ("A model that only ever saw [MASK] at the positions it is asked about never had to say anything useful "
       "about a real word it can see, yet at fine-tuning every token is real. The 10 % kept make it predict a word "
       "it sees (so its output at a real word carries that word); the 10 % random make it check what it sees "
       "against the context (a visible word may be wrong), so every position must stay contextual.")


def row_seed(seed: int, j: int) -> int:
    return seed * SEED_STRIDE + j


@lm.register_pass("mlm_target", max_batch=64, max_cost=8192)
def run_mlm_target(loaded: models.LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    """items: (ids, positions, target ids). Per item a [positions, 2] array: the top-1 id and
    −log P(target) at each position (the vocabulary head runs at the asked positions only)."""
    import torch

    inputs = lm.padded(loaded, [ids for ids, _, _ in items])
    device = inputs["input_ids"].device
    rows = torch.tensor([b for b, (_, pos, _) in enumerate(items) for _ in pos], device=device)
    cols = torch.tensor([p for _, pos, _ in items for p in pos], device=device)
    targets = torch.tensor([t for _, _, ts in items for t in ts], device=device)
    head = lm.mlm_head(loaded.model)
    with torch.inference_mode():
        if head is not None:
            logits = head(loaded.model.base_model(**inputs).last_hidden_state[rows, cols])  # [asked, vocab]
        else:
            logits = loaded.model(**inputs).logits[rows, cols]
        logp = torch.log_softmax(logits.float(), dim=-1)
        out = torch.stack([logits.argmax(dim=-1).double(), -logp[torch.arange(len(targets)), targets].double()], 1)
    out = out.cpu().numpy()  # [asked, 2]
    bounds = np.cumsum([0] + [len(pos) for _, pos, _ in items])
    return [frozen(out[a:b]) for a, b in itertools.pairwise(bounds)]


def frozen(array: np.ndarray) -> np.ndarray:
    array = np.array(array, copy=True)
    array.setflags(write=False)
    return array


def source_texts(text: str) -> tuple[list[str], str]:
    """The student's paragraph, or each built-in passage as one text."""
    text = check_text(text or "", "The cat sat on the mat. It was warm.", allow_empty=True, what="paragraph")
    if text.strip():
        return [text], "your text"
    return [" ".join(p.sentences) for p in passages.passages()], f"the {len(passages.passages())} built-in passages"


def drawn(tokenizer, texts: list[str], seed: int, limit: int) -> list[tuple[list[int], masking.Draw, list[int]]]:
    """(ids, the draw, the non-special positions) per text."""
    out = []
    for j, text in enumerate(texts):
        ids = lm.check_length(tokenizer(text)["input_ids"], limit)
        special = tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
        out.append((ids, masking.draw(tokenizer, ids, row_seed(seed, j)), [i for i, s in enumerate(special) if not s]))
    return out


def condition_inputs(ids: list[int], d: masking.Draw, mask_id: int) -> dict[str, list[int]]:
    """What the model sees in each condition: only the chosen positions differ."""
    return {"mask": [mask_id if c else i for i, c in zip(ids, d.chosen)],
            "random": [w if c else i for i, c, w in zip(ids, d.chosen, d.random_ids)],
            "keep": list(ids)}


@dataclass
class Why8010:
    model: str | None
    source: str
    seed: int
    texts: int
    tokens: int
    conditions: list[dict]
    example: dict
    notes: list[str]

    def to_json(self) -> dict:
        return {"model": self.model, "measured": self.model is not None, "source": self.source, "seed": self.seed,
                "texts": self.texts, "tokens": self.tokens, "chosen": self.conditions[0]["positions"],
                "conditions": self.conditions, "example": self.example, "notes": self.notes, "why": WHY,
                "course": [{"document": d, "where": w, "quote": q} for d, w, q in COURSE]}


def measure(loaded: models.LoadedModel | None, text: str = "", seed: int = 0, tokenizer=None) -> Why8010:
    """The four conditions on the texts; `loaded` None (no masked LM here) gives the draws with
    `tokenizer`'s tokens and no measurement."""
    seed = check_int(seed, "The seed", 0, 2**32 - 1)
    texts, source = source_texts(text)
    if loaded is None:
        return _measure(None, tokenizer, texts, source, seed)
    models.require_trained_head(loaded)
    return JOBS.shared("why_80_10_10", (loaded.name, loaded.head, tuple(texts), seed),
                       lambda: _measure(loaded, loaded.tokenizer, texts, source, seed))


def _measure(loaded, tokenizer, texts: list[str], source: str, seed: int) -> Why8010:
    limit = min(MAX_TOKENS, loaded.max_tokens if loaded else tokenizer.model_max_length)
    rows = drawn(tokenizer, texts, seed, limit)
    items, where = [], []  # where: (text index, condition) per item
    for j, (ids, d, candidates) in enumerate(rows):
        inputs = condition_inputs(ids, d, tokenizer.mask_token_id)
        if d.positions:
            for kind in ("mask", "random"):
                items.append((tuple(inputs[kind]), tuple(d.positions), tuple(ids[p] for p in d.positions)))
                where.append((j, kind))
        items.append((tuple(ids), tuple(candidates), tuple(ids[p] for p in candidates)))  # no [MASK] anywhere
        where.append((j, "plain"))
    results = lm.submit_many(loaded, "mlm_target", items, [len(i[0]) for i in items]) if loaded else None
    conditions = score(rows, where, results)
    notes = [] if loaded else [NEEDS_BERT]
    if not conditions[0]["positions"]:
        notes.append("No token was chosen with this seed (15 % of a short text can be none): try another seed.")
    return Why8010(loaded.name if loaded else None, source, seed, len(rows), sum(len(c) for _, _, c in rows),
                   conditions, example(tokenizer, rows[0], where, results), notes)


def read(rows, where, results) -> dict[str, list[tuple[int, int, int, float]]]:
    """Per condition: (text, position, top-1 id, loss) at every position it is scored on."""
    found = {kind: [] for kind in CONDITIONS}
    for (j, kind), out in zip(where, results):
        _, d, candidates = rows[j]
        positions = d.positions if kind != "plain" else candidates
        for p, (top, loss) in zip(positions, out):
            name = kind if kind != "plain" else "keep" if d.chosen[p] else "no_mask"
            found[name].append((j, p, int(top), float(loss)))
    return found


def score(rows, where, results) -> list[dict]:
    """Mean loss and top-1 accuracy (top-1 = the original token) per condition; for "random", how
    often the top-1 is the random token the model sees (it copied the input)."""
    counts = {"mask": 0, "random": 0, "keep": 0, "no_mask": 0}
    for ids, d, candidates in rows:
        counts["mask"] += len(d.positions)
        counts["no_mask"] += len(candidates) - len(d.positions)
    counts["random"] = counts["keep"] = counts["mask"]
    found = read(rows, where, results) if results is not None else {}
    out = []
    for kind, (label, what) in CONDITIONS.items():
        entry = {"name": kind, "label": label, "what": what, "positions": counts[kind], "loss": None, "accuracy": None}
        if found.get(kind):
            entry["loss"] = float(np.mean([loss for *_, loss in found[kind]]))
            entry["accuracy"] = float(np.mean([top == rows[j][0][p] for j, p, top, _ in found[kind]]))
            if kind == "random":
                entry["copies_input"] = float(np.mean([top == rows[j][1].random_ids[p] for j, p, top, _ in found[kind]]))
        out.append(entry)
    return out


def example(tokenizer, row, where, results) -> dict:
    """The first text, position by position: what each condition shows and the model's top-1."""
    ids, d, _ = row
    names = models.readable_tokens
    inputs = condition_inputs(ids, d, tokenizer.mask_token_id)
    top1 = {}
    if results is not None:
        for kind, rows in read([row], [w for w in where if w[0] == 0], results[:sum(w[0] == 0 for w in where)]).items():
            guess = [""] * len(ids)
            for _, p, top, _ in rows:
                guess[p] = names(tokenizer, [top])[0]
            top1[kind] = guess
    return {"tokens": names(tokenizer, ids), "ids": ids, "positions": d.positions,
            "inputs": {k: names(tokenizer, v) for k, v in inputs.items()}, "top1": top1}


def why_80_10_10_json(text: str = "", model: str = "", seed: int = 0) -> dict:
    """The `why_80_10_10` API: loss and top-1 accuracy in the four conditions (empty text: the built-in
    passages; empty model: the default masked LM, or the draws alone with "not measured here")."""
    check_int(seed, "The seed", 0, 2**32 - 1)
    name = model or models.default_name("masked")
    if not name:
        return measure(None, text, seed, models.load_tokenizer(models.MINILM_NAME)).to_json()
    return measure(models.load(name, "masked"), text, seed).to_json()
