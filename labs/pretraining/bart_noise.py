"""Pre-training, BART's denoising (Lewis et al. 2020, section 2.2; Textbook 20.12.3): five ways to corrupt a
document, applied to the student's text in BART's own tokens, and facebook/bart-base writing the original back.

preprocess (`encode`: the text's byte-level BPE pieces; BART's tokenizer is GPT-2's byte-level BPE, so offline
GPT-2's real tokenizer gives the very same pieces, though not BART's ids: BART numbers them in its own
dictionary) → corrupt (`corrupt`, one transform, a seeded numpy generator) → forward (`reconstruct`: greedy
`model.generate` on <s> corrupted </s>, and the teacher-forced loss of the original) → postprocess (the text).

The transforms, as the paper describes them, on tokens (fairseq's implementation picks whole words; here the
pieces themselves are picked, as the textbook words it):
- mask: 15 % of the tokens (BERT's rate; the paper gives none) become <mask>;
- delete: 15 % of the tokens are removed, with nothing to mark where;
- infill: span lengths are drawn from Poisson(λ = 3) until they cover 30 % of the tokens (the rate of BART's
  final model, section 5.1), the last one cut to fit; each span, a 0-length one too, becomes ONE <mask>, so the
  model must also tell how many tokens are missing;
- permute: the sentences (ending in a token that ends with . ! or ?) are shuffled;
- rotate: a token chosen uniformly at random (not the first) becomes the document's start."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labs.core.errors import BadInput, check_choice, check_int, check_text
from labs.core.models import gpt2_offline, models
from labs.core.ui import course_quotes

TRANSFORMS = ("mask", "delete", "infill", "permute", "rotate")
NAMES = {"mask": "Token masking", "delete": "Token deletion", "infill": "Text infilling",
         "permute": "Sentence permutation", "rotate": "Document rotation"}
MASK_RATE, INFILL_RATE, POISSON_LAMBDA = 0.15, 0.30, 3.0
MASK = "<mask>"
BART = "facebook/bart-base"
MAX_TOKENS = 256
SENTENCE_ENDS = (".", "!", "?")
EXAMPLE = ("The storm reached the coast at night. Fishermen pulled their boats onto the sand. "
           "By morning the harbour was calm again.")
NOT_MEASURED = (f"BART's reconstruction: not measured here: needs {BART} from the Hugging Face Hub (while online, "
                f"run ./lab download {BART}). The corruptions above are exact: BART's tokenizer is GPT-2's "
                "byte-level BPE, whose real merges ship offline.")
IDS_NOTE = ("The pieces are BART's (GPT-2's byte-level BPE, read offline from openai-whisper's copy); BART numbers "
            "them in its own dictionary, so their ids are not shown without BART.")
# The course's words (Textbook 20.12.3): course_quotes' entries, checked under the section.
TEXTBOOK, SECTION = "003_4e137ff2e23b0b86.txt", "20.12.3 BART: Denoising Sequence-to-Sequence"
QUOTE = course_quotes.text("bart")
QUOTE_ITEMS = {k: course_quotes.text(f"bart_{k}") for k in ("mask", "delete", "infill", "permute", "rotate")}


@dataclass
class Corrupted:
    transform: str
    seed: int
    pieces: list[str]  # the original text's byte-level BPE pieces (no <s>, </s>)
    noised: list[str]  # what BART's encoder reads, between <s> and </s>
    fate: list[str]  # per original piece: kept / masked / deleted / in a span / moved
    details: dict = field(default_factory=dict)  # what was drawn: positions, span lengths, order, start


def readable(pieces: list[str]) -> list[str]:
    """Byte-level BPE's "Ġ" (a leading space) as "␣", "Ċ" (a newline) as "↵"."""
    return [p.replace("Ġ", "␣").replace("Ċ", "↵") for p in pieces]


def check_settings(transform, seed) -> tuple[str, int]:
    return check_choice(transform, TRANSFORMS, "The transform"), check_int(seed, "The seed", 0, 2**32 - 1)


def chosen(rng: np.random.Generator, n: int, rate: float) -> list[int]:
    """round(rate · n) positions (at least one), drawn without replacement, in order."""
    return sorted(rng.choice(n, size=max(1, round(rate * n)), replace=False).tolist())


def mask_tokens(pieces: list[str], rng) -> tuple[list[str], list[str], dict]:
    at = set(chosen(rng, len(pieces), MASK_RATE))
    return ([MASK if i in at else p for i, p in enumerate(pieces)], ["masked" if i in at else "kept"
            for i in range(len(pieces))], {"positions": sorted(at)})


def delete_tokens(pieces: list[str], rng) -> tuple[list[str], list[str], dict]:
    at = set(chosen(rng, len(pieces), MASK_RATE))
    return ([p for i, p in enumerate(pieces) if i not in at], ["deleted" if i in at else "kept"
            for i in range(len(pieces))], {"positions": sorted(at)})


def span_lengths(rng, budget: int) -> list[int]:
    """Poisson(λ) lengths until they sum to `budget` tokens, the last one cut to fit (0-length spans kept)."""
    lengths: list[int] = []
    while sum(lengths) < budget:
        lengths.append(int(rng.poisson(POISSON_LAMBDA)))
    lengths[-1] -= sum(lengths) - budget
    return lengths


def infill(pieces: list[str], rng) -> tuple[list[str], list[str], dict]:
    """The kept tokens and the spans interleaved at random: the spans' slots are drawn among all slots, so
    spans never overlap and each (even an empty one) leaves one <mask>."""
    n = len(pieces)
    budget = min(max(1, round(INFILL_RATE * n)), n - 1)
    lengths = span_lengths(rng, budget)
    slots = set(rng.choice(n - budget + len(lengths), size=len(lengths), replace=False).tolist())
    noised, fate, spans, at, k = [], [], [], 0, 0
    for slot in range(n - budget + len(lengths)):
        if slot in slots:
            spans.append({"start": at, "length": lengths[k], "tokens": readable(pieces[at:at + lengths[k]])})
            noised.append(MASK)
            fate += ["in a span"] * lengths[k]
            at, k = at + lengths[k], k + 1
        else:
            noised.append(pieces[at])
            fate.append("kept")
            at += 1
    return noised, fate, {"spans": spans, "lengths": lengths}


def sentences(pieces: list[str]) -> list[tuple[int, int]]:
    """[start, end) of each sentence: a piece that ends with . ! or ? ends one; the rest is the last."""
    bounds, start = [], 0
    for i, piece in enumerate(pieces):
        if piece.rstrip().endswith(SENTENCE_ENDS):
            bounds.append((start, i + 1))
            start = i + 1
    return bounds + ([(start, len(pieces))] if start < len(pieces) else [])


def permute(pieces: list[str], rng) -> tuple[list[str], list[str], dict]:
    bounds = sentences(pieces)
    order = rng.permutation(len(bounds)).tolist()
    noised = [p for k in order for p in pieces[slice(*bounds[k])]]
    fate = [("moved" if order[k] != k else "kept") for k, (a, b) in enumerate(bounds) for _ in range(a, b)]
    return noised, fate, {"sentences": [list(b) for b in bounds], "order": order}


def rotate(pieces: list[str], rng) -> tuple[list[str], list[str], dict]:
    start = int(rng.integers(1, len(pieces)))
    return pieces[start:] + pieces[:start], ["moved"] * len(pieces), {"start": start}


CORRUPT = {"mask": mask_tokens, "delete": delete_tokens, "infill": infill, "permute": permute, "rotate": rotate}


def corrupt(pieces: list[str], transform: str, seed: int) -> Corrupted:
    if len(pieces) < 2:
        raise BadInput("BART's corruptions need at least two tokens of text; type a longer sentence.")
    noised, fate, details = CORRUPT[transform](list(pieces), np.random.default_rng(seed))
    return Corrupted(transform, seed, list(pieces), noised, fate, details)


# ---------------------------------------------------------------- the tokenizer and BART itself


def offered_bart() -> models.LoadedModel | None:
    """facebook/bart-base when this server offers it (the Hub, or its cache); None otherwise."""
    return models.load(BART, "seq2seq") if BART in models.registry() else None


def tokenizer_for(bart: models.LoadedModel | None):
    """(tokenizer, its name): BART's own, or offline GPT-2's byte-level BPE (the same pieces)."""
    if bart is not None:
        return bart.tokenizer, bart.name
    if not gpt2_offline.available():
        raise models.ModelUnavailable(f"BART's tokenizer needs {BART} from the Hub, or GPT-2's byte-level BPE from "
                                      "openai-whisper (pip install --no-deps -r requirements-offline.txt).")
    return gpt2_offline.tokenizer(), gpt2_offline.NAME


def encode(tokenizer, text) -> list[str]:
    text = check_text(text, EXAMPLE)
    pieces = tokenizer.tokenize(text)
    if len(pieces) > MAX_TOKENS:
        raise BadInput(f"Your text is {len(pieces):,} tokens long; at most {MAX_TOKENS} are read here. Shorten it.")
    return pieces


def check_bart(loaded: models.LoadedModel) -> models.LoadedModel:
    tok = loaded.tokenizer
    if tok.mask_token != MASK or tok.bos_token_id is None or tok.eos_token_id is None:
        raise BadInput(f"'{loaded.name}' is not a BART model: its tokenizer has no {MASK} token between <s> and </s> "
                       f"(T5 uses sentinels instead). Pick {BART}.")
    return loaded


def with_specials(tokenizer, pieces: list[str]) -> list[int]:
    """<s> pieces </s> as BART reads (and writes) a document."""
    return [tokenizer.bos_token_id] + tokenizer.convert_tokens_to_ids(pieces) + [tokenizer.eos_token_id]


@dataclass
class Reconstruction:
    model: str
    output_ids: list[int]
    text: str
    loss: float  # mean cross-entropy per token of <s> original </s>, given the corrupted text (teacher forcing)
    exact: bool  # the generated text is the original, character for character


def reconstruct(bart: models.LoadedModel, c: Corrupted, original_text: str) -> Reconstruction:
    import torch

    bart = check_bart(bart)
    tok = bart.tokenizer
    source = torch.tensor([with_specials(tok, c.noised)], device=bart.device)
    target = torch.tensor([with_specials(tok, c.pieces)], device=bart.device)
    with torch.inference_mode():
        loss = float(bart.model(input_ids=source, labels=target).loss)
        out = bart.model.generate(input_ids=source, max_new_tokens=min(len(c.pieces) + 16, 2 * MAX_TOKENS),
                                  do_sample=False, num_beams=1)[0].tolist()
    text = tok.decode(out, skip_special_tokens=True).strip()
    return Reconstruction(bart.name, out, text, loss, text == original_text.strip())


def result_json(c: Corrupted, tokenizer, tokenizer_name: str, rebuilt: Reconstruction | None, own_ids: bool) -> dict:
    return {"transform": c.transform, "name": NAMES[c.transform], "seed": c.seed, "tokenizer": tokenizer_name,
            "original_tokens": readable(c.pieces), "noised_tokens": readable(c.noised),
            "original_ids": with_specials(tokenizer, c.pieces) if own_ids else None,
            "noised_ids": with_specials(tokenizer, c.noised) if own_ids else None,
            "noised_text": tokenizer.convert_tokens_to_string(c.noised), "fate": c.fate, "details": c.details,
            "rates": {"mask": MASK_RATE, "delete": MASK_RATE, "infill": INFILL_RATE, "poisson_lambda": POISSON_LAMBDA},
            "reconstruction": None if rebuilt is None else {
                "model": rebuilt.model, "text": rebuilt.text, "output_ids": rebuilt.output_ids, "loss": rebuilt.loss,
                "exact": rebuilt.exact},
            "note": "" if rebuilt is not None else NOT_MEASURED + ("" if own_ids else " " + IDS_NOTE)}


def run(bart: models.LoadedModel | None, text, transform: str = "mask", seed: int = 0) -> dict:
    """One transform of the text in BART's tokens, and (with a BART model) its reconstruction."""
    transform, seed = check_settings(transform, seed)
    tokenizer, name = tokenizer_for(check_bart(bart) if bart is not None else None)
    c = corrupt(encode(tokenizer, text), transform, seed)
    rebuilt = reconstruct(bart, c, check_text(text, EXAMPLE)) if bart is not None else None
    return result_json(c, tokenizer, name, rebuilt, own_ids=bart is not None)


def corruptions(bart: models.LoadedModel | None, text, seed: int = 0) -> list[dict]:
    """All five transforms of the text (no model pass): what the panel draws."""
    _, seed = check_settings("mask", seed)
    tokenizer, name = tokenizer_for(bart)
    pieces = encode(tokenizer, text)
    return [result_json(corrupt(pieces, t, seed), tokenizer, name, None, bart is not None) for t in TRANSFORMS]


def bart_noise(text: str = EXAMPLE, transform: str = "mask", seed: int = 0, model: str = "") -> dict:
    """The `/bart_noise` API: typed input checked first; `model` empty = facebook/bart-base when offered."""
    check_settings(transform, seed)
    check_text(text, EXAMPLE)
    bart = models.load(model, "seq2seq") if model else offered_bart()
    return run(bart, text, transform, seed)
