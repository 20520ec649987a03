"""Choosing a model, distillation checked: a distilled student (DistilBERT) against its teacher (BERT) on the
same blanks. Per blank: each model's top word and probability, whether they agree, and the KL divergence
KL(teacher ‖ student) = Σ p_t (ln p_t − ln p_s), the quantity the student was trained to make small; and
how much faster the student reads the same sentences on this server. Both models must share one vocabulary
(bert-base-uncased and distilbert-base-uncased do), so that their distributions are over the same words."""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import asdict, dataclass

import cachetools
import numpy as np

from labs.core.errors import BadInput, check_name, check_text
from labs.core.models import models
from labs.core.work import lm
from labs.core.work.jobs import JOBS

FAMILIES = ("masked",)
TEACHER, STUDENT = "bert-base-uncased", "distilbert-base-uncased"
SENTENCES = (  # written for LM Lab: one blank each, a clear answer for most, an open one for some
    "The capital of France is [MASK].",
    "She poured milk into her [MASK] of coffee.",
    "The children went to [MASK] by bus every morning.",
    "He played the [MASK] in the school orchestra.",
    "It was raining, so we took an [MASK].",
    "The doctor gave him some [MASK] for the pain.",
    "Water freezes at zero degrees [MASK].",
    "My favourite season is [MASK].",
    "The [MASK] barked at the postman.",
    "They watched a [MASK] at the cinema last night.",
)
MAX_SENTENCES = 20
NEEDS_HUB = (f"Distillation needs a teacher and its student from the Hugging Face Hub ({TEACHER} and {STUDENT}); "
             "this server has no two masked LMs that share a vocabulary.")


@dataclass
class Blank:
    sentence: str
    teacher_word: str
    teacher_prob: float
    student_word: str
    student_prob: float
    agree: bool
    kl: float  # nats


@dataclass
class DistillationRun:
    teacher: str
    student: str
    blanks: list[Blank]
    teacher_params: int
    student_params: int
    teacher_layers: int
    student_layers: int
    teacher_ms: float  # median of 3 forward passes over all the sentences, after a warm-up
    student_ms: float

    @property
    def agreement(self) -> float:
        return sum(b.agree for b in self.blanks) / len(self.blanks)

    @property
    def mean_kl(self) -> float:
        return float(np.mean([b.kl for b in self.blanks]))

    def to_json(self) -> dict:
        return asdict(self) | {"agreement": self.agreement, "mean_kl": self.mean_kl,
                               "speedup": self.teacher_ms / self.student_ms,
                               "size_ratio": self.student_params / self.teacher_params}


def parse_sentences(text: str) -> list[str]:
    """One sentence per line, each with exactly one [MASK]; empty text: the built-in sentences."""
    if text is None or isinstance(text, str) and not text.strip():
        return list(SENTENCES)
    text = check_text(text, SENTENCES[0], what="sentences", max_chars=4000)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_SENTENCES:
        raise BadInput(f"Up to {MAX_SENTENCES} sentences, please; got {len(lines)}.")
    bad = [line for line in lines if line.count("[MASK]") != 1]
    if bad:
        raise BadInput(f"Each line needs exactly one [MASK]; this one has {bad[0].count('[MASK]')}: {bad[0][:80]}")
    return lines


def check_pair(teacher: models.LoadedModel, student: models.LoadedModel) -> None:
    if teacher.name == student.name:
        raise BadInput("Pick two different models: a teacher and its distilled student.")
    if teacher.tokenizer.get_vocab() != student.tokenizer.get_vocab():
        raise BadInput(f"{teacher.name} and {student.name} do not share a vocabulary, so their predictions are "
                       f"not over the same words: pick a teacher and its own student ({TEACHER} and {STUDENT}).")


def log_probs_at_blanks(loaded: models.LoadedModel, sentences: list[str]) -> list[np.ndarray]:
    """ln P(word) over the vocabulary at each sentence's blank, through the shared batched "mlm" pass."""
    rows, positions = [], []
    for sentence in sentences:
        ids = lm.check_length(loaded.tokenizer(sentence.replace("[MASK]", loaded.tokenizer.mask_token))["input_ids"],
                              loaded.max_tokens, "A sentence")
        rows.append(ids)
        positions.append(ids.index(loaded.tokenizer.mask_token_id))
    logits = lm.submit_many(loaded, "mlm", [(tuple(r), (p,)) for r, p in zip(rows, positions)],
                            [len(r) for r in rows])
    out = []
    for row in logits:
        z = row[0].astype(np.float64)
        out.append(z - z.max() - np.log(np.exp(z - z.max()).sum()))
    return out


def compare_blank(sentence: str, tokenizer, teacher_logp: np.ndarray, student_logp: np.ndarray) -> Blank:
    t, s = int(teacher_logp.argmax()), int(student_logp.argmax())
    kl = float(np.sum(np.exp(teacher_logp) * (teacher_logp - student_logp)))
    return Blank(sentence, tokenizer.convert_ids_to_tokens(t), float(np.exp(teacher_logp[t])),
                 tokenizer.convert_ids_to_tokens(s), float(np.exp(student_logp[s])), t == s, max(kl, 0.0))


MAX_TIMINGS = 32


@cachetools.cached(cachetools.LRUCache(MAX_TIMINGS), key=lambda loaded, sentences: (loaded.name, sentences),
                   lock=threading.Lock())
def forward_ms(loaded: models.LoadedModel, sentences: tuple[str, ...]) -> float:
    """The median time of 3 forward passes over all the sentences at once, after a warm-up. Measured once
    per model and sentences in a process (the latest 32 kept): a class asking the same does not load the CPU
    with timings."""
    return _time_forward(loaded, sentences)


def _time_forward(loaded: models.LoadedModel, sentences: tuple[str, ...]) -> float:
    import torch

    enc = loaded.tokenizer([s.replace("[MASK]", loaded.tokenizer.mask_token) for s in sentences], padding=True,
                           return_tensors="pt").to(loaded.device)
    times = []
    with torch.inference_mode():
        for i in range(4):
            start = time.perf_counter()
            loaded.model(**enc)
            if loaded.device.startswith("cuda"):
                torch.cuda.synchronize()  # a GPU returns before it has finished
            if i:
                times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def distill(teacher: models.LoadedModel, student: models.LoadedModel, text: str = "") -> DistillationRun:
    check_pair(teacher, student)
    sentences = parse_sentences(text)
    return JOBS.shared("distillation", (teacher.name, student.name, tuple(sentences)),
                       lambda: _distill(teacher, student, sentences))


def _distill(teacher: models.LoadedModel, student: models.LoadedModel, sentences: list[str]) -> DistillationRun:
    blanks = [compare_blank(s, teacher.tokenizer, t, st) for s, t, st in
              zip(sentences, log_probs_at_blanks(teacher, sentences), log_probs_at_blanks(student, sentences))]
    params = [sum(p.numel() for p in m.model.parameters()) for m in (teacher, student)]
    layers = [getattr(m.model.config, "num_hidden_layers", None) or m.model.config.n_layers for m in (teacher, student)]
    times = [forward_ms(m, tuple(sentences)) for m in (teacher, student)]
    return DistillationRun(teacher.name, student.name, blanks, *params, *layers, *times)


def distillation_api(text: str = "", teacher: str = TEACHER, student: str = STUDENT) -> dict:
    """The `/distillation` API."""
    parse_sentences(text)  # typed input is checked before any model is looked up
    teacher, student = check_name(teacher, "teacher model"), check_name(student, "student model")
    offered = {c.name for c in models.choices(*FAMILIES)}
    missing = {name for name in (teacher, student) if name not in offered}
    if missing and missing <= {TEACHER, STUDENT}:  # the defaults, offline: say what they need
        raise BadInput(NEEDS_HUB)
    return distill(models.load(teacher, *FAMILIES), models.load(student, *FAMILIES), text).to_json()
