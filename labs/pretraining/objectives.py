"""Pre-training, one text and five objectives: the student's paragraph as each objective turns it
into a training example, in the tokens the model really uses.

- GPT (next token): input = ids[:-1], target = ids[1:]; every position gives a loss.
- BERT (masked LM): 15 % of the non-special tokens chosen; of those 80 % → [MASK], 10 % → a random
  token, 10 % kept; the label is the original token at the chosen positions and -100 elsewhere. The
  draws are exactly DataCollatorForLanguageModeling(mlm_probability=0.15, seed=seed)'s (the same
  torch calls on a generator seeded the same way).
- BERT (NSP): [CLS] A [SEP] B [SEP] with segment ids; B is the next sentence of the paragraph
  (IsNext) or a sentence of the second text (NotNext), 50/50.
- T5 (span corruption): noise density 0.15, mean span length 3 (see span_corruption).
- ELECTRA (replaced-token detection): BERT's chosen positions filled by a generator's samples; every
  token labelled original or replaced (see electra).
The same seed gives the same example."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.work import lm
from labs.pretraining import electra, passages, span_corruption
from labs.pretraining.masking import mlm_draw

EXAMPLE = "The night train leaves before midnight. Passengers find their cabins and unfold the narrow beds."
EXAMPLE_B = "Coffee beans are really the seeds of a red fruit. Dark roasts taste bitter and smoky instead."
MAX_TOKENS = 256
T5_DENSITY, T5_SPAN = 0.15, 3.0
NEEDS_BERT = ("bert-base-uncased is not available here: the BERT examples use the uncased WordPiece tokens of "
              "all-MiniLM-L6-v2 (the same vocabulary as bert-base-uncased).")
NEEDS_T5 = ("t5-small is not available here: the T5 example is built with the BERT (WordPiece) tokens and "
            "sentinels written as <extra_id_N>; t5-small's own SentencePiece tokens and sentinel ids need "
            "t5-small (./lab download while online).")


def tokens(loaded: models.LoadedModel, ids: list[int]) -> list[str]:
    return models.readable_tokens(loaded.tokenizer, ids)


def gpt_example(causal: models.LoadedModel, text: str) -> dict:
    ids = lm.check_length(causal.tokenizer(text)["input_ids"], min(MAX_TOKENS, causal.max_tokens))
    if len(ids) < 2:
        raise BadInput("Your text is one token long; next-token prediction needs at least two. Type a sentence.")
    names = tokens(causal, ids)
    return {"model": causal.name, "tokens": names, "ids": ids, "input_tokens": names[:-1], "input_ids": ids[:-1],
            "target_tokens": names[1:], "target_ids": ids[1:], "positions": list(range(len(ids) - 1)),
            "signal": {"positions": len(ids) - 1, "of": len(ids) - 1, "fraction": 1.0}}


def mlm_example(masked: models.LoadedModel, text: str, seed: int) -> dict:
    tokenizer = masked.tokenizer
    if tokenizer.mask_token_id is None:
        raise BadInput(f"'{masked.name}' has no [MASK] token; pick a masked LM such as bert-base-uncased.")
    ids = lm.check_length(tokenizer(text)["input_ids"], min(MAX_TOKENS, masked.max_tokens))
    inputs, labels = mlm_draw(tokenizer, ids, seed)
    positions = [i for i, label in enumerate(labels) if label != -100]
    actions = ["" if label == -100 else "mask" if new == tokenizer.mask_token_id else "keep" if new == label
               else "random" for new, label in zip(inputs, labels)]
    candidates = len(ids) - sum(tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True))
    return {"model": masked.name, "tokens": tokens(masked, ids), "ids": ids, "input_tokens": tokens(masked, inputs),
            "input_ids": inputs, "labels": labels, "positions": positions, "actions": actions,
            "signal": {"positions": len(positions), "of": candidates, "fraction": len(positions) / max(candidates, 1)}}


def nsp_pair(text: str, text_b: str, seed: int) -> tuple[str, str, str, str]:
    """(A, B, label, note): a sentence of the paragraph and, 50/50, the next one (IsNext) or a sentence
    of the second text (NotNext; a built-in passage's when the second text is empty)."""
    rng = np.random.default_rng(seed)
    own = passages.split_sentences(text)
    if text_b.strip():
        others = passages.split_sentences(text_b)
    else:
        others = list(passages.passages()[int(rng.integers(len(passages.passages())))].sentences)
    if len(own) < 2:
        return own[0], others[int(rng.integers(len(others)))], "NotNext", (
            "Your text has one sentence, so only a NotNext pair can be built from it: add a second sentence.")
    i = int(rng.integers(len(own) - 1))
    if rng.random() < 0.5:
        return own[i], own[i + 1], "IsNext", ""
    return own[i], others[int(rng.integers(len(others)))], "NotNext", ""


def nsp_example(masked: models.LoadedModel, text: str, text_b: str, seed: int) -> dict:
    a, b, label, note = nsp_pair(text, text_b, seed)
    enc = masked.tokenizer(a, b)
    ids = lm.check_length(enc["input_ids"], min(MAX_TOKENS, masked.max_tokens), "The sentence pair")
    return {"model": masked.name, "sentence_a": a, "sentence_b": b, "tokens": tokens(masked, ids), "ids": ids,
            "segment_ids": list(enc["token_type_ids"]), "label": label, "note": note,
            "signal": {"positions": 1, "of": len(ids), "fraction": 1 / len(ids)}}


def t5_example(seq2seq: models.LoadedModel, text: str, seed: int) -> dict:
    c = span_corruption.corrupt_text(seq2seq, text, T5_DENSITY, T5_SPAN, seed)
    tokenizer = seq2seq.tokenizer
    names = span_corruption.token_names
    as_ids = [[None if i < 0 else i for i in ids] for ids in (c.input_ids, c.target_ids)]  # placeholders: no id
    eos = int(c.input_ids[-1] == tokenizer.eos_token_id and c.sentinels[0] >= 0)
    return {"model": seq2seq.name, "tokens": names(tokenizer, c.ids), "ids": c.ids,
            "input_tokens": names(tokenizer, c.input_ids), "input_ids": as_ids[0],
            "target_tokens": names(tokenizer, c.target_ids), "target_ids": as_ids[1],
            "spans": [{"start": s, "end": e, "sentinel": f"<extra_id_{k}>",
                       "text": tokenizer.decode(c.ids[s:e]).strip()} for k, (s, e) in enumerate(c.spans)],
            "positions": [i for i, noisy in enumerate(c.mask) if noisy],
            "signal": {"original_length": len(c.ids) + eos, "input_length": len(c.input_ids),
                       "target_length": len(c.target_ids), "noise_tokens": sum(c.mask), "spans": len(c.spans),
                       "fraction": sum(c.mask) / len(c.ids)}}


@dataclass
class Examples:
    seed: int
    gpt: dict | None
    mlm: dict
    nsp: dict
    t5: dict
    notes: list[str] = field(default_factory=list)
    electra: dict | None = None

    def to_json(self) -> dict:
        return {"seed": self.seed, "gpt": self.gpt, "mlm": self.mlm, "nsp": self.nsp, "t5": self.t5,
                "electra": self.electra, "notes": self.notes}


def build(text, text_b, masked: models.LoadedModel, causal: models.LoadedModel | None,
          seq2seq: models.LoadedModel | None, seed=0, notes: tuple[str, ...] = (), rtd: tuple = (None, None)) -> Examples:
    """The five examples. `masked`: a masked LM or an encoder with BERT's tokenizer; `seq2seq`: T5, or
    None for the WordPiece stand-in; `causal` None leaves GPT's example out (with a note); `rtd`:
    ELECTRA's (generator, discriminator), either None where not offered (see electra.resolve)."""
    seed = check_int(seed, "The seed", 0, 2**32 - 1)
    text = check_text(text, EXAMPLE, what="paragraph")
    text_b = check_text(text_b or "", EXAMPLE_B, allow_empty=True, what="second text")
    notes = list(notes)
    gpt = gpt_example(causal, text) if causal is not None else None
    if causal is None:
        notes.append("No causal LM is available here, so GPT's example is left out.")
    t5 = t5_example(seq2seq if seq2seq is not None else masked, text, seed)
    if seq2seq is None:
        notes.append(NEEDS_T5)
    rtd_example = electra.detect(text, *rtd, seed, tokenizer=masked.tokenizer).to_json()
    return Examples(seed, gpt, mlm_example(masked, text, seed), nsp_example(masked, text, text_b, seed), t5, notes,
                    rtd_example)


def resolve(model_masked, model_causal, model_seq2seq) -> tuple:
    """The models (loaded once, at the edge) for the examples, and notes for what had to stand in:
    no masked LM → MiniLM's tokenizer (BERT's uncased vocabulary); no T5 → None; no causal LM → None;
    last, ELECTRA's (generator, discriminator) (see electra.resolve)."""
    notes = []
    if model_masked:
        masked = models.load(model_masked, "masked", "encoder")
    else:
        masked = models.load(models.MINILM_NAME, "encoder")
        notes.append(NEEDS_BERT)
    name = model_causal or models.default_name("causal")
    causal = models.load(name, "causal") if name else None
    seq2seq = models.load(model_seq2seq, "seq2seq") if model_seq2seq else None
    return masked, causal, seq2seq, tuple(notes), electra.resolve(fallback=masked)


def pretraining_examples_json(text: str, text_b: str, model_masked: str, model_causal: str, model_seq2seq: str,
                              seed: int = 0) -> dict:
    """The `pretraining_examples` API: the five objectives' training examples for one text."""
    check_int(seed, "The seed", 0, 2**32 - 1)
    masked, causal, seq2seq, notes, rtd = resolve(model_masked, model_causal, model_seq2seq)
    return build(text, text_b, masked, causal, seq2seq, seed, notes, rtd).to_json()
