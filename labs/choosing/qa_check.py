"""Choosing a model, the summary sheet's question-answering example run on a real answer-span head: "Where is Paris?"
with "Paris is in France", the tokens and their indices beside the sheet's (start 5, end 8), and the model's start
and end indices, its answer and its score.

The answer is chosen as transformers' question-answering pipeline chooses it: the question's tokens and the
separators cannot be in the answer, [CLS] takes part in the two softmaxes but is never picked, the score of a span
is P(start) × P(end), the end is not before the start and the span is at most MAX_ANSWER_LEN tokens; the answer is
the context's characters from the start token's first to the end token's last (tests/test_choosing_qa.py checks it
against transformers' own span selection, select_starts_ends, on the same logits).

The model is the Hub's SQuAD model when this server offers it. Offline it is not here, and the stand-in is
all-MiniLM-L6-v2 (BERT's architecture and uncased vocabulary) with a new answer-span head initialised at random
(seed 0): the code path is the real one, but its span means nothing, and the result says so."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from labs.core.errors import BadInput, check_text
from labs.core.models import models

QUESTION, CONTEXT = "Where is Paris?", "Paris is in France"
SQUAD = "distilbert-base-cased-distilled-squad"
STAND_IN = models.MINILM_NAME
COURSE_START, COURSE_END = 5, 8  # the summary sheet's indices ("index 5: "Paris"", "index 8: "France"")
MAX_ANSWER_LEN, SEED, MAX_CHARS = 15, 0, 400
RANDOM_NOTE = ("The Hub's SQuAD model ({squad}) is not available here, so this is {stand_in} with a new answer-span "
               "head whose weights are random (seed {seed}): the indices, the span and the score below come from the "
               "real code path, but they mean nothing. The real answer needs the Hub model (run `./lab download` "
               "while online).")


@dataclass
class QAModel:
    name: str
    model: object
    tokenizer: object
    trained: bool  # False: the stand-in's random head

    @property
    def device(self):
        return next(self.model.parameters()).device


_lock = threading.Lock()


@lru_cache(maxsize=1)
def _stand_in() -> QAModel:
    model, tokenizer = models.load_for_task(STAND_IN, "question_answering", seed=SEED)
    return QAModel(STAND_IN, model.eval(), tokenizer, False)


def qa_model() -> QAModel:
    """The SQuAD model when offered here, else the stand-in (loaded once per process)."""
    if SQUAD in models.registry():
        loaded = models.load(SQUAD, head="question_answering")
        return QAModel(loaded.name, loaded.model, loaded.tokenizer, True)
    with _lock:
        return _stand_in()


@dataclass
class Answer:
    model: str
    trained: bool
    question: str
    context: str
    tokens: list[str]
    parts: list[str]  # "question", "passage" or "special" ([CLS], [SEP]), per token
    start_index: int  # in the tokenised pair, [CLS] = 0
    end_index: int
    start_char: int  # in the context
    end_char: int
    answer: str
    score: float  # P(start) × P(end)
    p_start: float
    p_end: float
    course_start: int = COURSE_START
    course_end: int = COURSE_END
    course_tokens: list[str] = field(default_factory=list)  # this tokenizer's tokens at the sheet's indices
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def span_logits(qa: QAModel, question: str, context: str):
    """(encoding with offsets, start logits, end logits) for the pair (question, context)."""
    import torch

    enc = qa.tokenizer(question, context, return_tensors="pt", return_offsets_mapping=True, truncation="only_second",
                       max_length=384)
    inputs = {k: v.to(qa.device) for k, v in enc.items() if k != "offset_mapping"}
    with torch.inference_mode():
        out = qa.model(**inputs)
    return enc, out.start_logits[0].float().cpu(), out.end_logits[0].float().cpu()


def allowed(sequence_ids, input_ids, cls_id) -> list[bool]:
    """Which tokens may take part: the context's, and [CLS] (the pipeline's p_mask, inverted)."""
    return [sid == 1 or (cls_id is not None and token == cls_id) for sid, token in zip(sequence_ids, input_ids)]


def best_span(start_logits, end_logits, usable: list[bool], context_mask: list[bool]):
    """(start, end, P(start), P(end)): the pipeline's choice, written out."""
    import torch

    keep = torch.tensor(usable)
    p_start = torch.softmax(torch.where(keep, start_logits.double(), torch.tensor(-10000.0, dtype=torch.double)), -1)
    p_end = torch.softmax(torch.where(keep, end_logits.double(), torch.tensor(-10000.0, dtype=torch.double)), -1)
    candidates = torch.outer(p_start, p_end)
    only = torch.tensor(context_mask, dtype=torch.bool)
    candidates = candidates * (only[:, None] & only[None, :])  # [CLS] and the question are never picked
    candidates = torch.tril(torch.triu(candidates), MAX_ANSWER_LEN - 1)
    start, end = divmod(int(candidates.argmax()), candidates.shape[1])
    return start, end, float(p_start[start]), float(p_end[end])


def answer(question: str = QUESTION, context: str = CONTEXT, qa: QAModel | None = None) -> Answer:
    question = check_text(question, QUESTION, max_chars=MAX_CHARS, what="question").strip()
    context = check_text(context, CONTEXT, max_chars=MAX_CHARS, what="passage").strip()
    if not question or not context:
        raise BadInput(f"Type a question and a passage that answers it, such as “{QUESTION}” and “{CONTEXT}”.")
    qa = qa or qa_model()
    enc, start_logits, end_logits = span_logits(qa, question, context)
    ids = enc["input_ids"][0].tolist()
    context_mask = [sid == 1 for sid in enc.sequence_ids(0)]
    usable = allowed(enc.sequence_ids(0), ids, qa.tokenizer.cls_token_id)
    start, end, p_start, p_end = best_span(start_logits, end_logits, usable, context_mask)
    offsets = enc["offset_mapping"][0].tolist()
    start_char, end_char = offsets[start][0], offsets[end][1]
    tokens = qa.tokenizer.convert_ids_to_tokens(ids)
    note = "" if qa.trained else RANDOM_NOTE.format(squad=SQUAD, stand_in=STAND_IN, seed=SEED)
    parts = ["special" if sid is None else "question" if sid == 0 else "passage" for sid in enc.sequence_ids(0)]
    return Answer(qa.name, qa.trained, question, context, tokens, parts, start, end, start_char, end_char,
                  context[start_char:end_char], p_start * p_end, p_start, p_end,
                  course_tokens=[tokens[i] if i < len(tokens) else "" for i in (COURSE_START, COURSE_END)], note=note)


def qa_api(question: str = QUESTION, context: str = CONTEXT) -> dict:
    """The `/qa_span` API."""
    return answer(question, context).to_json()
