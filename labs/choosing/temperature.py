"""Choosing a model, distillation with temperature (Textbook 20.9.3): the teacher's softened distribution beside the
student's, and DistilBERT's loss on the real pair. The teacher's distribution over one blank is softened at T = 1,
2, 5, the student's goes beside it, and DistilBERT's loss has the textbook's terms,

    L = α · L_CE + β · L_distill + γ · L_cos,

computed on the real pair (bert-base-uncased teaching distilbert-base-uncased) for the student's sentence:
- L_CE = −ln p_student(true word), at T = 1 (the masked-LM loss with the true label);
- L_distill = T² · KL(p_teacher^T ‖ p_student^T), with p^T = softmax(z / T) over the whole vocabulary: the
  distiller of DistilBERT's training code (transformers' examples/research_projects/distillation) multiplies
  the KL by T², as Hinton et al. (2015) advise, so that its gradients keep their size as T grows;
- L_cos = the mean over the sentence's tokens of 1 − cos(h_student, h_teacher), the last hidden states.
The weights default to that code's README command (--alpha_ce 5.0 --alpha_mlm 2.0 --alpha_cos 1.0: its
"alpha_ce" weighs the soft-target term, the textbook's β; "alpha_mlm" the true-label term, the textbook's α).

preprocess (`parse`: one sentence with one [MASK] and its true word after a bar) → forward (the shared "mlm"
pass for the logits at the blank, the shared "hidden" pass for L_cos, both cached) → postprocess (softmax at
each T, KL, the loss). Offline there is no masked-LM pair: the softening itself is shown on a causal LM's
next-token distribution at the blank (the words before it), and the loss is "not measured here"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labs.choosing import distillation
from labs.core.errors import BadInput, check_name, check_number, check_text
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.core.work import lm

TEMPERATURES = (1.0, 2.0, 5.0)
ALPHA, BETA, GAMMA = 2.0, 5.0, 1.0  # DistilBERT's command: alpha_mlm, alpha_ce, alpha_cos
MAX_TEMPERATURES, T_RANGE = 6, (0.1, 20.0)
TOP_WORDS = 8
EXAMPLE = "She poured milk into her [MASK] of coffee. | cup"
NEEDS_HUB = (f"Not measured here: the teacher and its student ({distillation.TEACHER} and {distillation.STUDENT}) "
             "need the Hugging Face Hub, so neither their distributions nor the loss can be computed on this server. "
             "What can be shown honestly: temperature softening a real model's distribution, below on a causal LM "
             "that reads the words before the blank (not a teacher: it never sees the words after it).")
# The textbook's words (20.9.3): course_quotes' entries, checked under the section.
TEXTBOOK, SECTION = "003_4e137ff2e23b0b86.txt", "20.9.3 DistilBERT: Distilled BERT"
QUOTE_LOSS = course_quotes.text("distill_loss")
QUOTE_TERMS = tuple(course_quotes.text(f"distill_term_{k}") for k in range(3))
QUOTE_SOFTMAX = tuple(course_quotes.text(f"distill_softmax_{k}") for k in range(2))
QUOTE_SOFT = course_quotes.text("distill_soft")


def check_temperatures(temperatures) -> list[float]:
    """1 to 6 temperatures from 0.1 to 20: a list, or text such as "1, 2, 5"; empty gives 1, 2, 5."""
    if temperatures is None or temperatures == "" or temperatures == []:
        return list(TEMPERATURES)
    if isinstance(temperatures, str):
        temperatures = [t for t in temperatures.replace(";", ",").split(",") if t.strip()]
    if not isinstance(temperatures, (list, tuple)) or not 1 <= len(temperatures) <= MAX_TEMPERATURES:
        raise BadInput(f"Give 1 to {MAX_TEMPERATURES} temperatures, such as 1, 2, 5.")
    return [check_number(t, "Each temperature", *T_RANGE) for t in temperatures]


def parse(text) -> tuple[str, str]:
    """(sentence with one [MASK], its true word): "The capital of France is [MASK]. | paris"."""
    text = check_text(text, EXAMPLE, what="sentence")
    sentence, bar, answer = text.partition("|")
    sentence, answer = sentence.strip(), answer.strip()
    if lm.BLANK_PATTERN.sub("[MASK]", sentence).count("[MASK]") != 1:
        raise BadInput(f"Write one sentence with exactly one [MASK], then its true word after a bar: “{EXAMPLE}”.")
    if not bar or not answer or len(answer.split()) != 1:
        raise BadInput(f"After the sentence, write the blank's true word after a bar (the label L_CE needs): "
                       f"“{EXAMPLE}”.")
    return lm.BLANK_PATTERN.sub("[MASK]", sentence), answer


def log_softmax(z: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64) / temperature
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


def entropy(logp: np.ndarray) -> float:
    return float(-(np.exp(logp) * logp).sum())


@dataclass
class Side:
    """One model at the blank: its logits over the vocabulary and its last hidden states (every token)."""
    name: str
    logits: np.ndarray  # [vocab] float32
    hidden: np.ndarray | None  # [n, hidden]


def encode(loaded: models.LoadedModel, sentence: str) -> tuple[list[int], int]:
    tok = loaded.tokenizer
    ids = lm.check_length(tok(sentence.replace("[MASK]", tok.mask_token))["input_ids"], loaded.max_tokens)
    return ids, ids.index(tok.mask_token_id)


def answer_id(tokenizer, answer: str) -> int:
    pieces = tokenizer.tokenize(answer)
    if len(pieces) != 1:
        raise BadInput(f"“{answer[:40]}” is {len(pieces)} tokens here ({' '.join(pieces)}); a blank holds one: "
                       "pick a word that is one token.")
    return tokenizer.convert_tokens_to_ids(pieces[0])


def side(loaded: models.LoadedModel, sentence: str) -> Side:
    ids, blank = encode(loaded, sentence)
    logits = lm.mlm_logits(loaded, ids, [blank])[0]  # the shared batched pass, cached
    hidden = lm.hidden_states(loaded, [ids])[0][-1]  # [n, hidden]: the last layer
    return Side(loaded.name, logits, hidden)


def cosine_loss(teacher: np.ndarray, student: np.ndarray) -> float | None:
    """Mean over tokens of 1 − cos(h_s, h_t) (CosineEmbeddingLoss with target 1); None when sizes differ."""
    if teacher.shape != student.shape:
        return None
    t, s = teacher.astype(np.float64), student.astype(np.float64)
    cos = (t * s).sum(-1) / (np.linalg.norm(t, axis=-1) * np.linalg.norm(s, axis=-1))
    return float(np.mean(1 - cos))


def per_temperature(teacher: Side, student: Side, words: list[int], answer: int, t: float,
                    weights: tuple[float, float, float], ce: float, cos: float | None) -> dict:
    lt, ls = log_softmax(teacher.logits, t), log_softmax(student.logits, t)
    kl = max(float((np.exp(lt) * (lt - ls)).sum()), 0.0)
    alpha, beta, gamma = weights
    return {"T": t, "teacher": [float(np.exp(lt[w])) for w in words], "student": [float(np.exp(ls[w])) for w in words],
            "teacher_entropy": entropy(lt), "student_entropy": entropy(ls),
            "teacher_answer_prob": float(np.exp(lt[answer])), "student_answer_prob": float(np.exp(ls[answer])),
            "kl": kl, "distill": t * t * kl,
            "loss": alpha * ce + beta * t * t * kl + (gamma * cos if cos is not None else 0.0)}


def pair_result(teacher: models.LoadedModel, student: models.LoadedModel, text, temperatures, weights) -> dict:
    """The real pair: both distributions at every T and the loss's terms."""
    distillation.check_pair(teacher, student)
    sentence, answer = parse(text)
    temps = check_temperatures(temperatures)
    target = answer_id(teacher.tokenizer, answer)
    t, s = side(teacher, sentence), side(student, sentence)
    words = [i for i, _ in lm.top_k(t.logits, TOP_WORDS)]
    ce = -float(log_softmax(s.logits)[target])
    cos = cosine_loss(t.hidden, s.hidden)
    rows = [per_temperature(t, s, words, target, temp, weights, ce, cos) for temp in temps]
    return {"sentence": sentence, "answer": answer, "answer_id": target, "temperatures": temps,
            "weights": dict(zip(("alpha", "beta", "gamma"), weights)), "measured": True,
            "teacher": teacher.name, "student": student.name,
            "words": [{"token": teacher.tokenizer.convert_ids_to_tokens(w), "token_id": w} for w in words],
            "ce": ce, "cos": cos, "by_temperature": rows, "stand_in": None,
            "note": "" if cos is not None else "L_cos is not defined here: the two models' hidden sizes differ."}


def stand_in(causal: models.LoadedModel, sentence: str, temps: list[float]) -> dict:
    """A causal LM's next-token distribution after the words before the blank, softened at each T."""
    left = sentence.split("[MASK]", 1)[0].rstrip()
    ids, _ = lm.causal_ids(causal, left, 256)
    logits = lm.next_token_logits(causal, ids)
    words = [i for i, _ in lm.top_k(logits, TOP_WORDS)]
    rows = []
    for t in temps:
        logp = log_softmax(logits, t)
        rows.append({"T": t, "probs": [float(np.exp(logp[w])) for w in words], "entropy": entropy(logp)})
    return {"model": causal.name, "reads": left,
            "words": [{"token": models.readable_tokens(causal.tokenizer, [w])[0], "token_id": w} for w in words],
            "by_temperature": rows}


def offline_result(text, temperatures, weights) -> dict:
    sentence, answer = parse(text)
    temps = check_temperatures(temperatures)
    causal = models.default_name("causal")
    return {"sentence": sentence, "answer": answer, "answer_id": None, "temperatures": temps,
            "weights": dict(zip(("alpha", "beta", "gamma"), weights)), "measured": False, "teacher": None,
            "student": None, "words": [], "ce": None, "cos": None, "by_temperature": [],
            "stand_in": stand_in(models.load(causal, "causal"), sentence, temps) if causal else None,
            "note": NEEDS_HUB}


def check_weights(alpha, beta, gamma) -> tuple[float, float, float]:
    return tuple(check_number(w, f"The weight {name}", 0.0, 100.0) for w, name in
                 ((alpha, "α"), (beta, "β"), (gamma, "γ")))


def distill_temperature(text: str = EXAMPLE, temperatures: list[float] | None = None,
                        teacher: str = distillation.TEACHER, student: str = distillation.STUDENT,
                        alpha: float = ALPHA, beta: float = BETA, gamma: float = GAMMA) -> dict:
    """The `/distill_temperature` API. Typed input is checked before any model is looked up; the default
    pair, when this server cannot offer it, gives the offline result (measured: false) instead of an error."""
    parse(text)
    check_temperatures(temperatures)
    weights = check_weights(alpha, beta, gamma)
    teacher, student = check_name(teacher, "teacher model"), check_name(student, "student model")
    offered = {c.name for c in models.choices(*distillation.FAMILIES)}
    missing = {name for name in (teacher, student) if name not in offered}
    if missing and missing <= {distillation.TEACHER, distillation.STUDENT}:
        return offline_result(text, temperatures, weights)
    return pair_result(models.load(teacher, *distillation.FAMILIES), models.load(student, *distillation.FAMILIES),
                       text, temperatures, weights)
