"""Choosing a model, which model for which task (exercise B4): a task card, the student's pick of an
architecture and a head, checked against the course's table, and the matching kind of model run on the
student's text where one is available here."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from labs.core.errors import BadInput, check_choice, check_text
from labs.core.models import models
from labs.core.work import lm

ARCHITECTURES = ("encoder", "decoder", "encoder-decoder")
HEADS = ("sentence classification head", "token classification head", "answer-span head (start/end)",
         "next-token LM head", "encoder-decoder LM head")
NEW_TOKENS = 12


@dataclass(frozen=True)
class Task:
    key: str
    card: str  # what the student reads
    architecture: str
    head: str
    why: str
    example: str
    family: str | None = None  # the family that runs it here (None: needs a fine-tuned task model)
    task_head: str | None = None  # a registry task model that runs it


TASKS = {t.key: t for t in (
    Task("classify", "Classify: is this product review positive or negative?", "encoder",
         "sentence classification head", "An encoder reads the whole review in both directions; a small head on "
         "[CLS] (or the mean of the tokens) outputs one label per text. (A decoder can classify by prompting, see "
         "section 4, but the course's pick is an encoder.)", "The battery dies before lunch."),
    Task("tag", "Tag entities: mark every person, place and organisation in a sentence.", "encoder",
         "token classification head", "One label per token needs every token to see its whole context: an encoder "
         "with a head on every token (BIO tags).", "Ada Lovelace worked with Charles Babbage in London.",
         task_head="token_classification"),
    Task("answer", "Answer from a passage: given a question and a paragraph, point at the answer.", "encoder",
         "answer-span head (start/end)", "Extractive QA reads question and passage together ([SEP] between them) "
         "and scores each token as the answer's start or end.", "What is the capital of France? | Paris is the "
         "capital of France.", task_head="question_answering"),
    Task("generate", "Generate: continue a story from its first words.", "decoder", "next-token LM head",
         "Generation is next-token prediction, one token at a time, each seeing only the past: a causal decoder.",
         "Once upon a time, in a small village,", family="causal"),
    Task("translate", "Translate or summarise: turn an English sentence into German, or a paragraph into one line.",
         "encoder-decoder", "encoder-decoder LM head", "The input is read whole by the encoder; the output is a new "
         "sequence written by a decoder that attends to it (T5, BART).", "translate English to German: The house is "
         "wonderful.", family="seq2seq"),
)}


@dataclass
class TaskResult:
    task: str
    card: str
    architecture: str
    head: str
    architecture_right: bool
    head_right: bool
    course_pick: dict
    why: str
    model: str | None = None
    output: str | None = None
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def greedy_causal(loaded: models.LoadedModel, text: str) -> str:
    """NEW_TOKENS greedy tokens through the shared next-token pass."""
    ids, _ = lm.causal_ids(loaded, text, 256)
    new = []
    for _ in range(NEW_TOKENS):
        token = int(np.argmax(lm.next_token_logits(loaded, ids + new)))
        if token == loaded.tokenizer.eos_token_id:
            break
        new.append(token)
    return loaded.tokenizer.decode(new)


def greedy_seq2seq(loaded: models.LoadedModel, text: str) -> str:
    """NEW_TOKENS greedy tokens from an encoder-decoder through the shared teacher-forced pass."""
    ids = lm.check_length(loaded.tokenizer(text)["input_ids"], 256, "Your text")
    target: list[int] = []
    for _ in range(NEW_TOKENS):
        decoder_ids = lm.decoder_input(loaded, target + [0])
        token = int(np.argmax(lm.seq2seq_logits(loaded, ids, decoder_ids)[-1]))
        if token == loaded.tokenizer.eos_token_id:
            break
        target.append(token)
    return loaded.tokenizer.decode(target, skip_special_tokens=True)


def runner_for(task: Task) -> models.LoadedModel | None:
    """The model that runs this task here (resolved once), or None."""
    names = models.choice_names(task.family) if task.family else models.choice_names(task=task.task_head)
    return models.load(names[0], task.family) if task.family and names else None


def check_pick(task_key, architecture, head, text: str = "", loaded: models.LoadedModel | None = None) -> TaskResult:
    """The pick checked against the course's table; the matching model's output on the text when given."""
    task = TASKS[check_choice(task_key, tuple(TASKS), "The task")]
    check_choice(architecture, ARCHITECTURES, "The architecture")
    check_choice(head, HEADS, "The head")
    text = check_text(text, task.example, allow_empty=True) or task.example
    result = TaskResult(task.key, task.card, architecture, head, architecture == task.architecture,
                        head == task.head, {"architecture": task.architecture, "head": task.head}, task.why)
    if loaded is None:
        wanted = ("a model fine-tuned for this task (" + ("dslim/bert-base-NER" if task.key == "tag" else
                  "distilbert-base-cased-distilled-squad" if task.key == "answer" else "train one in the Fine-tune tab")
                  + ")") if not task.family else f"{models.FAMILY_WORDS[task.family]} such as " \
                                                   f"{'gpt2' if task.family == 'causal' else 't5-small'}"
        result.note = f"Not run here: this needs {wanted}, which this server does not have."
        return result
    if loaded.family != task.family:
        raise BadInput(f"'{loaded.name}' is {models.FAMILY_WORDS[loaded.family]}; this task needs "
                       f"{models.FAMILY_WORDS[task.family]}.")
    result.model = loaded.name
    result.output = greedy_causal(loaded, text) if task.family == "causal" else greedy_seq2seq(loaded, text)
    result.note = f"{NEW_TOKENS} greedy tokens from {loaded.name} on: {text}"
    return result
