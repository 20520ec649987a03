"""Fine-tune, catastrophic forgetting measured: what the encoder knew before a run, asked again after it.

- Paraphrase retrieval (assets/paraphrases.tsv, sentences no run trains on): is each sentence's nearest
  neighbour (cosine of mean-pooled last-layer vectors) its paraphrase? all-MiniLM-L6-v2 was trained for
  exactly this, so the share it gets right is what it knew; fine-tuning for sentiment can overwrite it.
- Drift: the mean 1 − cosine between each of those sentences' vectors before and after the run.
- For a masked LM (BERT): masked-word top-1 accuracy on assets/mlm_probes.tsv, with the checkpoint's own
  pre-trained MLM head applied to the fine-tuned encoder's last hidden states.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from labs.core.models import models
from labs.core.work import lm
from labs.finetune.tasks import ASSETS

BATCH = 32


@functools.cache
def paraphrase_pairs() -> tuple[tuple[str, str], ...]:
    return tuple(_tsv_rows("paraphrases.tsv"))


@functools.cache
def mlm_probes() -> tuple[tuple[str, str], ...]:
    return tuple(_tsv_rows("mlm_probes.tsv"))


def _tsv_rows(name: str) -> list[tuple[str, str]]:
    lines = (ASSETS / name).read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")) for line in lines if line.strip() and not line.startswith("#")]


def probe_sentences() -> list[str]:
    """Sentence 2i and 2i+1 are paraphrases of each other."""
    return [s for pair in paraphrase_pairs() for s in pair]


def last_hidden(model, tokenizer, texts: list[str]):
    """(last-layer states, attention mask) for texts, in eval mode, without gradients, on CPU. Any model
    with a transformer inside (a task model, LoRA-wrapped or not) returns them with output_hidden_states."""
    import torch

    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    states, masks = [], []
    try:
        with torch.no_grad():
            for start in range(0, len(texts), BATCH):
                enc = tokenizer(texts[start:start + BATCH], padding=True, truncation=True, max_length=64,
                                return_tensors="pt").to(device)
                out = model(**enc, output_hidden_states=True)
                states += list(out.hidden_states[-1].float().cpu())
                masks += list(enc["attention_mask"].cpu())
    finally:
        model.train(was_training)
    return states, masks


def sentence_vectors(model, tokenizer, texts: list[str]):
    """Mean-pooled last-layer vectors (all-MiniLM-L6-v2's own pooling), one row per text, unit length."""
    import torch

    states, masks = last_hidden(model, tokenizer, texts)
    pooled = torch.stack([(h * m[:len(h), None]).sum(0) / m.sum() for h, m in zip(states, masks)])
    return torch.nn.functional.normalize(pooled, dim=-1)


def retrieval_accuracy(vectors) -> float:
    """The share of sentences whose nearest other sentence is their paraphrase (rows 2i, 2i+1 pair up)."""
    import torch

    similarity = vectors @ vectors.T
    similarity.fill_diagonal_(-torch.inf)
    partner = torch.arange(len(vectors)) ^ 1  # 0<->1, 2<->3, ...
    return float((similarity.argmax(-1) == partner).float().mean())


def mlm_top1(model, tokenizer, head, device: str = "cpu") -> tuple[float, int]:
    """(top-1 accuracy, probes used) of `head` (on `device`) on `model`'s last hidden states at the masked
    position. Probes whose answer is not one token of this vocabulary are skipped."""
    import torch

    usable = [(s.replace("[MASK]", tokenizer.mask_token), a) for s, a in mlm_probes()
              if len(tokenizer.tokenize(" " + a)) == 1]
    if not usable:
        return 0.0, 0
    states, _ = last_hidden(model, tokenizer, [s for s, _ in usable])
    correct = 0
    with torch.no_grad():
        for (sentence, answer), h in zip(usable, states):
            ids = tokenizer(sentence, truncation=True, max_length=64)["input_ids"]
            position = ids.index(tokenizer.mask_token_id)
            predicted = int(head(h[position][None].to(device)).argmax(-1))
            correct += predicted == tokenizer.convert_tokens_to_ids(tokenizer.tokenize(" " + answer)[0])
    return correct / len(usable), len(usable)


@dataclass
class Snapshot:
    """What the encoder knew before the run."""
    vectors: object  # torch.Tensor, one unit row per probe sentence
    retrieval: float
    mlm_head: object = None  # the checkpoint's MLM head (masked LMs of a known architecture only)
    mlm_device: str = "cpu"  # where that shared model sits
    mlm_top1: float | None = None
    mlm_probes: int = 0


def snapshot(model, tokenizer, model_name: str) -> Snapshot:
    vectors = sentence_vectors(model, tokenizer, probe_sentences())
    snap = Snapshot(vectors, retrieval_accuracy(vectors))
    choice = models.get_choice(model_name)
    if choice.family == "masked":  # BERT online: the Fill in the blank model's head, shared, only read
        masked = models.load(choice.name, "masked")
        snap.mlm_head, snap.mlm_device = lm.mlm_head(masked.model), masked.device
    if snap.mlm_head is not None:
        snap.mlm_top1, snap.mlm_probes = mlm_top1(model, tokenizer, snap.mlm_head, snap.mlm_device)
    return snap


def compare(before: Snapshot, model, tokenizer) -> dict:
    """The `forgetting` JSON: retrieval before and after, the drift, and the MLM probe for masked LMs."""
    after = sentence_vectors(model, tokenizer, probe_sentences())
    result = {"retrieval_before": before.retrieval, "retrieval_after": retrieval_accuracy(after),
              "drift": round(float((1 - (before.vectors * after).sum(-1)).mean()), 6),  # float32 rounding: ±1e-7
              "sentences": len(after)}
    if before.mlm_head is not None:
        after_top1, _ = mlm_top1(model, tokenizer, before.mlm_head, before.mlm_device)
        result |= {"mlm_top1_before": before.mlm_top1, "mlm_top1_after": after_top1, "mlm_probes": before.mlm_probes}
    return result
