"""Pre-training, T5's objective: span corruption (Raffel et al. 2020, section 3.1.4), and T5 filling
its own blanks beside BERT's one-token blanks at the same places.

preprocess (`encode`: the text's ids, no special tokens) → corrupt (`noise_mask`, `corrupt`) →
forward (`model.generate` on the corrupted input) → postprocess (`read_fill`: the output cut at the
sentinels). The noise mask follows T5's `random_spans_noise_mask`: round(L × density) noise tokens
(at least 1, at most L − 1) in round(noise / mean span length) spans (at least 1), noise and
non-noise lengths drawn by random segmentation, the text starting with non-noise, so two spans never
touch. Each span becomes one sentinel <extra_id_i> in the input; the target lists every sentinel
with its span and ends with one more sentinel, then </s>."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labs.core.errors import BadInput, check_int, check_number, check_text
from labs.core.models import models
from labs.core.work import lm

EXAMPLE = ("Thank you for inviting me to your party last week. The music was great and "
           "everybody danced until midnight.")
DENSITY_RANGE = (0.0, 0.5)  # (0, 0.5]: above half, spans would have to touch
SPAN_RANGE = (1.0, 10.0)
NUM_SENTINELS = 100  # <extra_id_0> … <extra_id_99>
MAX_TOKENS = 256


@dataclass
class Corruption:
    ids: list[int]  # the original text's ids (no special tokens)
    mask: list[bool]  # noise or not, per token
    spans: list[tuple[int, int]]  # [start, end) of each noise span in `ids`
    input_ids: list[int]  # non-noise tokens, a sentinel per span, then </s> (when the tokenizer has one)
    target_ids: list[int]  # each sentinel and its span, one more sentinel, then </s>
    sentinels: list[int]  # the sentinel ids used, in order (len(spans) + 1)


def check_settings(noise_density, mean_span_length, seed) -> tuple[float, float, int]:
    density = check_number(noise_density, "The noise density", *DENSITY_RANGE, low_open=True,
                           hint=" (T5 used 0.15)")
    span = check_number(mean_span_length, "The mean span length", *SPAN_RANGE, hint=" (T5 used 3)")
    return density, span, check_int(seed, "The seed", 0, 2**32 - 1)


def segment(rng: np.random.Generator, items: int, segments: int) -> list[int]:
    """`items` split into `segments` random non-empty lengths (T5's _random_segmentation)."""
    first = np.zeros(items, dtype=bool)
    first[1 + rng.permutation(items - 1)[:segments - 1]] = True
    first[0] = True
    return np.bincount(np.cumsum(first) - 1, minlength=segments).tolist()


def span_counts(length: int, density: float, mean_span_length: float) -> tuple[int, int]:
    """(noise tokens, spans) for a text of `length` tokens. Spans are capped at the non-noise tokens,
    so that a non-noise token can stand between every two spans."""
    noise = min(max(int(np.round(length * density)), 1), length - 1)
    spans = max(int(np.round(noise / mean_span_length)), 1)
    return noise, min(spans, length - noise)


def noise_mask(length: int, density: float, mean_span_length: float, rng: np.random.Generator) -> list[bool]:
    if length < 2:
        raise BadInput("Span corruption needs at least two tokens of text; type a longer sentence.")
    noise, spans = span_counts(length, density, mean_span_length)
    noise_lengths, keep_lengths = segment(rng, noise, spans), segment(rng, length - noise, spans)
    mask: list[bool] = []
    for keep, drop in zip(keep_lengths, noise_lengths):
        mask += [False] * keep + [True] * drop
    return mask


def spans_of(mask: list[bool]) -> list[tuple[int, int]]:
    spans, start = [], None
    for i, noisy in enumerate(list(mask) + [False]):
        if noisy and start is None:
            start = i
        elif not noisy and start is not None:
            spans.append((start, i))
            start = None
    return spans


def sentinel_ids(tokenizer, count: int) -> list[int]:
    """The ids of <extra_id_0> … (T5's tokenizers); a tokenizer without them (the WordPiece fallback)
    gets placeholders -1, -2, … that no vocabulary uses."""
    if count > NUM_SENTINELS:
        raise BadInput(f"This needs {count} sentinels, and T5 has {NUM_SENTINELS}. Lower the noise density, raise "
                       "the mean span length, or shorten the text.")
    found = [tokenizer.convert_tokens_to_ids(f"<extra_id_{i}>") for i in range(count)]
    unk = tokenizer.unk_token_id
    if all(isinstance(i, int) and i != unk for i in found):
        return found
    return [-1 - i for i in range(count)]


def corrupt(tokenizer, ids: list[int], mask: list[bool]) -> Corruption:
    spans = spans_of(mask)
    sentinels = sentinel_ids(tokenizer, len(spans) + 1)
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None and sentinels[0] >= 0 else []
    inputs, target, previous = [], [], 0
    for k, (start, end) in enumerate(spans):
        inputs += ids[previous:start] + [sentinels[k]]
        target += [sentinels[k]] + ids[start:end]
        previous = end
    inputs += ids[previous:] + eos
    target += [sentinels[len(spans)]] + eos
    return Corruption(list(ids), list(mask), spans, inputs, target, sentinels)


def encode(loaded: models.LoadedModel, text) -> tuple[list[int], list[tuple[int, int]]]:
    """The text's ids without special tokens, and each token's character offsets."""
    text = check_text(text, EXAMPLE)
    enc = loaded.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    lm.check_length(enc["input_ids"], MAX_TOKENS - 1)
    return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]


def corrupt_text(loaded: models.LoadedModel, text, noise_density=0.15, mean_span_length=3.0, seed=0) -> Corruption:
    density, span, seed = check_settings(noise_density, mean_span_length, seed)
    ids, _ = encode(loaded, text)
    return corrupt(loaded.tokenizer, ids, noise_mask(len(ids), density, span, np.random.default_rng(seed)))


def token_names(tokenizer, ids: list[int]) -> list[str]:
    """Readable tokens; a placeholder sentinel shows as <extra_id_i>."""
    return [f"<extra_id_{-1 - i}>" if i < 0 else models.readable_tokens(tokenizer, [i])[0] for i in ids]


# ---------------------------------------------------------------- T5 fills its own blanks


def fill_budget(target_length: int) -> int:
    """How many tokens T5 may generate for a target of this length (room for a longer answer)."""
    return min(2 * target_length + 8, 128)


def generate(loaded: models.LoadedModel, input_ids: list[int], max_new_tokens: int) -> list[int]:
    """Greedy model.generate on the corrupted input: what T5 writes for the sentinels."""
    import torch

    with torch.inference_mode():
        out = loaded.model.generate(input_ids=torch.tensor([input_ids], device=loaded.device),
                                    max_new_tokens=max_new_tokens, do_sample=False, num_beams=1)
    return out[0].tolist()


def read_fill(tokenizer, output: list[int], sentinels: list[int]) -> list[str | None]:
    """The text T5 wrote after each sentinel (up to the next sentinel or </s>); None where the
    sentinel is missing from its output."""
    stops = set(sentinels) | {tokenizer.eos_token_id, tokenizer.pad_token_id}
    found = []
    for sentinel in sentinels[:-1]:
        if sentinel not in output:
            found.append(None)
            continue
        start = output.index(sentinel) + 1
        end = next((j for j in range(start, len(output)) if output[j] in stops), len(output))
        found.append(tokenizer.decode(output[start:end], skip_special_tokens=True).strip())
    return found


@dataclass
class SpanFill:
    t5: str
    bert: str | None
    corruption: Corruption
    output_ids: list[int]
    predicted: list[str | None]
    originals: list[str]
    bert_predicted: list[str] | None
    input_tokens: list[str] = field(default_factory=list)
    target_tokens: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        c = self.corruption
        spans = [{"start": s, "end": e, "text": t, "sentinel": f"<extra_id_{k}>"}
                 for k, ((s, e), t) in enumerate(zip(c.spans, self.originals))]
        filled = [{"sentinel": f"<extra_id_{k}>", "predicted": p, "original": t,
                   "bert": self.bert_predicted[k] if self.bert_predicted else None}
                  for k, (p, t) in enumerate(zip(self.predicted, self.originals))]
        return {"model": self.t5, "bert_model": self.bert, "input_tokens": self.input_tokens,
                "input_ids": c.input_ids, "target_tokens": self.target_tokens, "target_ids": c.target_ids,
                "spans": spans, "filled": filled, "output_ids": self.output_ids}


def char_spans(offsets: list[tuple[int, int]], spans: list[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    """Each token span's characters in the text, without surrounding spaces."""
    out = []
    for start, end in spans:
        a, b = offsets[start][0], offsets[end - 1][1]
        while a < b and text[a].isspace():
            a += 1
        out.append((a, b))
    return out


def bert_blanks(masked: models.LoadedModel, text: str, ranges: list[tuple[int, int]]) -> list[str]:
    """BERT's guesses where T5's spans were: each span becomes as many [MASK]s as BERT has tokens for
    it (BERT needs to be told the length), all predicted at once, the top token at each."""
    masked = models.load(masked, "masked", head="mlm")  # the same checkpoint with its masked-LM head
    tokenizer, pieces, previous = masked.tokenizer, [], 0
    counts = [max(len(tokenizer.tokenize(text[a:b])), 1) for a, b in ranges]
    for (a, b), n in zip(ranges, counts):
        pieces += [text[previous:a], " ".join([tokenizer.mask_token] * n)]
        previous = b
    ids = tokenizer(" ".join(p.strip() for p in pieces + [text[previous:]] if p.strip()),
                    truncation=True, max_length=min(MAX_TOKENS, masked.max_tokens))["input_ids"]
    blanks = [i for i, t in enumerate(ids) if t == tokenizer.mask_token_id]
    if not blanks:
        return [""] * len(ranges)
    best = lm.mlm_logits(masked, ids, blanks).argmax(axis=-1).tolist()
    out, k = [], 0
    for n in counts:
        out.append(tokenizer.decode(best[k:k + n]).strip())
        k += n
    return out


def fill(t5: models.LoadedModel, masked: models.LoadedModel | None, text, noise_density=0.15,
         mean_span_length=3.0, seed=0) -> SpanFill:
    """Corrupt the text, let T5 generate the spans, and (with a masked LM) BERT guess the same places."""
    density, span, seed = check_settings(noise_density, mean_span_length, seed)
    text = check_text(text, EXAMPLE)
    ids, offsets = encode(t5, text)
    corruption = corrupt(t5.tokenizer, ids, noise_mask(len(ids), density, span, np.random.default_rng(seed)))
    if corruption.sentinels[0] < 0:
        raise BadInput(f"'{t5.name}' has no <extra_id_0> sentinels, so it was not trained by span corruption.")
    output = generate(t5, corruption.input_ids, fill_budget(len(corruption.target_ids)))
    ranges = char_spans(offsets, corruption.spans, text)
    originals = [t5.tokenizer.decode(ids[s:e], skip_special_tokens=True).strip() for s, e in corruption.spans]
    bert = bert_blanks(masked, text, ranges) if masked is not None else None
    return SpanFill(t5.name, masked.name if masked else None, corruption, output,
                    read_fill(t5.tokenizer, output, corruption.sentinels), originals, bert,
                    token_names(t5.tokenizer, corruption.input_ids), token_names(t5.tokenizer, corruption.target_ids))


def default_masked() -> models.LoadedModel | None:
    """The masked LM for BERT's column, when one can be loaded here (the first offered)."""
    name = models.default_name("masked")
    if name is None:
        return None
    try:
        return models.load(name, "masked")
    except models.ModelUnavailable:
        return None


def span_corruption_json(text: str, model: str, noise_density: float = 0.15, mean_span_length: float = 3.0,
                         seed: int = 0) -> dict:
    """The `span_corruption` API: the corrupted input and target, the spans, T5's fill beside the
    originals (and the first masked LM's one-token guesses, when there is one)."""
    check_settings(noise_density, mean_span_length, seed)
    return fill(models.load(model, "seq2seq"), default_masked(), text, noise_density, mean_span_length,
                seed).to_json()
