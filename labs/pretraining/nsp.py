"""Pre-training, BERT's second objective: next-sentence prediction with BERT's own NSP head, and how well it does on
the built-in passages. The head is BertForPreTraining's seq_relationship (index 0 = IsNext); the negatives are
random sentences (what NSP was trained on) and the same two sentences swapped (ALBERT's sentence-order negatives).

preprocess (`encode`: [CLS] A [SEP] B [SEP], segment ids 0 for A with [CLS] and the first [SEP], 1
for B) → forward (the registered "nsp" pass: the encoder, then the NSP head on the pooled [CLS]) →
postprocess (softmax → P(IsNext))."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.work import lm
from labs.core.work.jobs import JOBS
from labs.pretraining import passages

EXAMPLE_A = "To bake bread, you first mix flour, water, salt and yeast."
EXAMPLE_B = "The dough is then kneaded until it feels smooth and stretchy."
MAX_TOKENS = 256
FAMILIES = ("masked", "encoder")
# Beside the live figures: what the papers measured.
PUBLISHED = (
    "BERT's NSP accuracy in pre-training: 97–98 % (Devlin et al. 2019, section 5.1).",
    "ALBERT, Table 5: a model pre-trained with NSP scores 52.0 % on sentence order (chance); one pre-trained "
    "with sentence-order prediction scores 78.9 % on NSP.",
    "RoBERTa, Table 2: removing NSP matched or improved the downstream results.")


def load(name) -> models.LoadedModel:
    """Resolve a name once, at the edge: BERT's checkpoint with its pre-training heads, refused when
    the NSP head would be random (a plain encoder, a masked LM saved without it)."""
    return models.require_trained_head(models.load(name, *FAMILIES, head="pretraining"))


@lm.register_pass("nsp", max_batch=32, max_cost=4096)
def run_nsp(loaded: models.LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    """items: (ids, segment ids). One forward pass for the batch; BERT's NSP head reads the pooled
    [CLS] only, so the masked-LM head (30,522 outputs per token) is not run."""
    import torch

    batch = lm.padded(loaded, [i for i, _ in items], [s for _, s in items])
    model = loaded.model
    with torch.inference_mode():
        if hasattr(model, "cls") and hasattr(model.cls, "seq_relationship"):
            pooled = model.base_model(**batch).pooler_output  # [batch, hidden]
            logits = model.cls.seq_relationship(pooled)  # [batch, 2]
        else:  # another *ForPreTraining (ALBERT's sentence order)
            out = model(**batch)
            logits = getattr(out, "seq_relationship_logits", None)
            logits = out.sop_logits if logits is None else logits
    logits = logits.float().cpu().numpy()
    return [frozen(row) for row in logits]


def frozen(row: np.ndarray) -> np.ndarray:
    """A result of its own, read-only: students share cached results."""
    row = np.array(row, copy=True)
    row.setflags(write=False)
    return row


def encode(loaded: models.LoadedModel, sentence_a, sentence_b) -> tuple[list[int], list[int]]:
    a = check_text(sentence_a, EXAMPLE_A, what="sentence A")
    if not isinstance(sentence_b, str) or not sentence_b.strip():
        raise BadInput("Next-sentence prediction reads two sentences: type sentence B too, for example "
                       f"“{EXAMPLE_B}”.")
    b = check_text(sentence_b, EXAMPLE_B, what="sentence B")
    enc = loaded.tokenizer(a, b)
    if "token_type_ids" not in enc:
        raise BadInput(f"'{loaded.name}' has no segment ids (token types), so it cannot read a sentence pair.")
    lm.check_length(enc["input_ids"], min(MAX_TOKENS, loaded.max_tokens), "The two sentences together")
    return list(enc["input_ids"]), list(enc["token_type_ids"])


@dataclass
class NspResult:
    model: str
    tokens: list[str]
    ids: list[int]
    segment_ids: list[int]
    logits: list[float]
    p_is_next: float

    def to_json(self) -> dict:
        return {"model": self.model, "tokens": self.tokens, "ids": self.ids, "segment_ids": self.segment_ids,
                "p_is_next": self.p_is_next, "logits": self.logits}


def predict(loaded: models.LoadedModel, sentence_a, sentence_b) -> NspResult:
    """P(IsNext) for sentence B after sentence A. `loaded`: what `load` returns."""
    ids, segments = encode(loaded, sentence_a, sentence_b)
    logits = lm.submit(loaded, "nsp", (tuple(ids), tuple(segments)), len(ids))
    return NspResult(loaded.name, models.readable_tokens(loaded.tokenizer, ids), ids, segments,
                     [float(x) for x in logits], float(lm.softmax(logits)[0]))


def nsp_json(sentence_a: str, sentence_b: str, model: str) -> dict:
    """The `nsp` API: {"tokens", "segment_ids", "p_is_next", "logits"} (index 0 = IsNext)."""
    return predict(load(model), sentence_a, sentence_b).to_json()


# ---------------------------------------------------------------- accuracy on the built-in passages


def test_pairs(seed: int) -> dict[str, list[tuple[str, str]]]:
    """Every consecutive pair of the built-in passages (IsNext), each first sentence with a random
    sentence from another passage (NotNext, as NSP was trained), and each pair swapped (NotNext, as
    ALBERT's sentence-order prediction is trained)."""
    rng = np.random.default_rng(seed)
    pairs = passages.consecutive_pairs()
    everything = [(p, s) for p, passage in enumerate(passages.passages()) for s in passage.sentences]
    random_b = []
    for p, _, _ in pairs:
        others = [s for q, s in everything if q != p]
        random_b.append(others[int(rng.integers(len(others)))])
    return {"next": [(a, b) for _, a, b in pairs], "random": [(a, r) for (_, a, _), r in zip(pairs, random_b)],
            "swapped": [(b, a) for _, a, b in pairs]}


def p_is_next_many(loaded: models.LoadedModel, pairs: list[tuple[str, str]]) -> list[float]:
    encoded = [encode(loaded, a, b) for a, b in pairs]
    logits = lm.submit_many(loaded, "nsp", [(tuple(i), tuple(s)) for i, s in encoded], [len(i) for i, _ in encoded])
    return [float(lm.softmax(row)[0]) for row in logits]


def accuracy(loaded: models.LoadedModel, seed=0) -> dict:
    """NSP's accuracy on the built-in passages: IsNext pairs against random sentences, and against the
    same pairs swapped (a pair counts as IsNext when P(IsNext) > 0.5)."""
    seed = check_int(seed, "The seed", 0, 2**32 - 1)
    return JOBS.shared("nsp_accuracy", (loaded.name, seed), lambda: _accuracy(loaded, seed))


def _accuracy(loaded: models.LoadedModel, seed: int) -> dict:
    sets = test_pairs(seed)
    probs = {kind: p_is_next_many(loaded, pairs) for kind, pairs in sets.items()}
    hits_next = [p > 0.5 for p in probs["next"]]
    result = {"model": loaded.name, "pairs": len(hits_next), "seed": seed,
              "mean_p_is_next": {k: float(np.mean(v)) for k, v in probs.items()}, "published": list(PUBLISHED)}
    for kind in ("random", "swapped"):
        hits = hits_next + [p <= 0.5 for p in probs[kind]]
        result[f"accuracy_{kind}"] = float(np.mean(hits))
    result["examples"] = [{"kind": k, "sentence_a": a, "sentence_b": b, "p_is_next": probs[k][i]}
                          for k in sets for i, (a, b) in enumerate(sets[k][:3])]
    return result


def nsp_accuracy_json(model: str, seed: int = 0) -> dict:
    """The `nsp_accuracy` API: accuracy against random sentences and against swapped pairs."""
    return accuracy(load(model), seed)
