"""Choosing a model, T5's text-to-text prefixes (textbook 20.10.1): one model for every task, the task named by
a text prefix. The student picks a prefix (or types one) and a text; T5 reads `prefix + " " + text` and writes
its answer as text.

preprocess (`input_text`: the prefix, one space, the text; `tokenizer(input_text)`, which closes with </s>) →
forward (`model.generate(input_ids, max_new_tokens=N, do_sample=False, num_beams=1)`: greedy, the same call for
every task) → postprocess (the output's tokens, and its text without special tokens). t5-small is on the Hub
only: offline, `resolve` says so ("not measured here") and the tab still shows the raw text T5 would read."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from labs.core.errors import check_int, check_text
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.core.work import lm

T5_SMALL = "t5-small"
TEXTBOOK = "Textbook 20.10.1 The Text-to-Text Framework"
# The textbook's words: course_quotes' entries (tests/test_course_quotes.py checks each under the section).
QUOTES = tuple(course_quotes.text(f"t5_{k}") for k in range(3))
MAX_NEW_TOKENS, MAX_INPUT_TOKENS, MAX_PREFIX_CHARS = 64, 512, 200
DEFAULT_NEW_TOKENS = 32
NEEDS_T5 = ("Not measured here: needs t5-small from the Hub (the Hugging Face Hub cannot be reached from this "
            "server, and t5-small is not in its cache). While online, run `./lab download` once. The raw text T5 "
            "would read is shown; its tokens and its answer need the model.")
NOT_T5 = "T5 was trained with these prefixes; '{}' is another encoder-decoder, so they may mean nothing to it."


@dataclass(frozen=True)
class Prefix:
    key: str
    label: str  # what the dropdown shows
    prefix: str  # exactly as the source writes it
    example: str  # the text after the prefix
    target: str  # what the source gives as the answer ("" when it gives none)
    source: str


PREFIXES = {p.key: p for p in (
    Prefix("sst2", "Sentiment (SST-2)", "sst2 sentence:", "this movie is great", "positive", TEXTBOOK),
    Prefix("translate_de", "Translation, English to German", "translate English to German:", "Hello", "Hallo",
           TEXTBOOK),
    Prefix("summarize", "Summarization", "summarize:",
           "The city council met on Tuesday to discuss the new bus lines. After three hours of debate, the members "
           "voted to add two routes to the university and to run buses every ten minutes at rush hour. The changes "
           "start in September and will cost about two million euros a year.", "[summary]", TEXTBOOK),
    Prefix("stsb", "Similarity (STS-B, 0 to 5)", "stsb sentence1:", "A cat sits. sentence2: A cat is sitting.", "5.0",
           TEXTBOOK),
    Prefix("cola", "Grammatical or not (CoLA; not in the course)", "cola sentence:", "The book were on the table.",
           "", "not in the course: T5's own prefix for CoLA, whose targets are “acceptable” and “unacceptable”"),
)}


def parts(prefix, text) -> tuple[str, str, str]:
    """(prefix, text, what T5 reads): the prefix, one space, the text (the text alone when the prefix is empty)."""
    prefix = check_text(prefix, "sst2 sentence:", max_chars=MAX_PREFIX_CHARS, allow_empty=True, what="prefix")
    text = check_text(text, PREFIXES["sst2"].example, what="text after the prefix")
    return prefix, text, f"{prefix} {text}" if prefix else text


def input_text(prefix, text) -> str:
    return parts(prefix, text)[2]


def resolve(model) -> models.LoadedModel:
    """The encoder-decoder to run, loaded once; t5-small when none is named. Offline without t5-small in the
    cache: ModelUnavailable saying plainly what is missing."""
    name = T5_SMALL if model is None or (isinstance(model, str) and not model.strip()) else model
    if isinstance(name, str) and name.strip() == T5_SMALL and T5_SMALL not in models.choice_names("seq2seq"):
        raise models.ModelUnavailable(NEEDS_T5)
    return models.load(name, "seq2seq")


def generate(loaded: models.LoadedModel, input_ids: list[int], max_new_tokens: int) -> list[int]:
    """Greedy `model.generate` on the input: the output ids, the decoder's start token first."""
    import torch

    with torch.inference_mode():
        out = loaded.model.generate(input_ids=torch.tensor([input_ids], device=loaded.device),
                                    attention_mask=torch.ones(1, len(input_ids), dtype=torch.long,
                                                              device=loaded.device),
                                    max_new_tokens=max_new_tokens, do_sample=False, num_beams=1)
    return out[0].tolist()


@dataclass
class TextToText:
    model: str
    source: str
    prefix: str
    text: str
    input_text: str
    input_ids: list[int]
    input_tokens: list[str]
    output_ids: list[int]
    output_tokens: list[str]
    output_text: str
    settings: dict
    stopped: str  # "eos" (it wrote </s>) or "max_new_tokens"
    note: str = ""
    call: str = field(default="")

    def to_json(self) -> dict:
        return asdict(self)


def text_to_text(loaded: models.LoadedModel, prefix, text, max_new_tokens=DEFAULT_NEW_TOKENS) -> TextToText:
    """The prefix prepended to the text, tokenized, and greedy generate's answer, raw in and raw out."""
    prefix, text, raw = parts(prefix, text)
    new = check_int(max_new_tokens, "max_new_tokens", 1, MAX_NEW_TOKENS)
    tokenizer = loaded.tokenizer
    ids = lm.check_length(tokenizer(raw)["input_ids"], MAX_INPUT_TOKENS, "The prefix and text")
    output = generate(loaded, ids, new)
    settings = {"max_new_tokens": new, "do_sample": False, "num_beams": 1}
    stopped = "eos" if tokenizer.eos_token_id in output[1:] else "max_new_tokens"
    note = "" if loaded.model.config.model_type in ("t5", "mt5") else NOT_T5.format(loaded.name)
    return TextToText(loaded.name, loaded.source, prefix, text, raw, ids,
                      models.readable_tokens(tokenizer, ids), output, models.readable_tokens(tokenizer, output),
                      tokenizer.decode(output, skip_special_tokens=True), settings, stopped, note,
                      f"model.generate(input_ids, max_new_tokens={new}, do_sample=False, num_beams=1)")


def every_prefix(loaded: models.LoadedModel, text, max_new_tokens=DEFAULT_NEW_TOKENS) -> list[TextToText]:
    """The same text under each of the prefixes above: one model, one call, only the prefix changes."""
    return [text_to_text(loaded, p.prefix, text, max_new_tokens) for p in PREFIXES.values()]


def t5_text_to_text(prefix: str, text: str, model: str = T5_SMALL, max_new_tokens: int = DEFAULT_NEW_TOKENS) -> dict:
    """The `t5_text_to_text` API: the raw text in (prefix + " " + text, its ids and tokens) and the raw text out of
    greedy generate (its ids, tokens and text)."""
    input_text(prefix, text)
    check_int(max_new_tokens, "max_new_tokens", 1, MAX_NEW_TOKENS)
    return text_to_text(resolve(model), prefix, text, max_new_tokens).to_json()
