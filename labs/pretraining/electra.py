"""Pre-training, ELECTRA's replaced-token detection (Clark et al. 2020; textbook 20.12.2): a small generator fills
BERT's chosen positions, and a discriminator says, for every token, original or replaced. The generator (a masked
LM) sees BERT's 15 % of chosen positions, all as [MASK], and fills them with tokens it samples from its own
distribution; the discriminator then reads the whole corrupted text. A sample equal to the original token is
labelled original (Clark et al. 2020, section 2), so the label is (sampled != original).

preprocess (the chosen positions: the same DataCollatorForLanguageModeling draw as BERT's example) →
forward (the shared "mlm" pass for the generator's logits at the masked positions, then the registered
"rtd" pass: ElectraForPreTraining's one logit per token, > 0 = replaced) → postprocess (sigmoid,
labels, accuracy)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.ui import course_quotes
from labs.core.work import lm
from labs.pretraining import masking

GENERATOR, DISCRIMINATOR = "google/electra-small-generator", "google/electra-small-discriminator"
EXAMPLE = "The night train leaves before midnight. Passengers find their cabins and unfold the narrow beds."
MAX_TOKENS = 256
NEEDS_GENERATOR = ("Generator: not measured here: needs a masked LM from the Hub (google/electra-small-generator, or "
                   "bert-base-uncased); while online, run ./lab download once.")
NEEDS_DISCRIMINATOR = ("Discriminator: not measured here: needs google/electra-small-discriminator from the Hub "
                       "(while online: ./lab download google/electra-small-discriminator, then "
                       "LAB_EXTRA_MODELS=google/electra-small-discriminator).")
TOKENS_NOTE = ("The tokens are all-MiniLM-L6-v2's uncased WordPiece, the vocabulary ELECTRA and bert-base-uncased "
               "use.")
# The textbook's words: course_quotes' entries, as (document file's prefix, where, text).
COURSE = tuple(("003", "Textbook 20.12.2", course_quotes.text(f"electra_{k}")) for k in range(3))


def architectures(choice: models.ModelChoice) -> list[str]:
    """The config's architectures: a local folder's, or a Hub model's from the local Hugging Face cache."""
    path = Path(choice.location) / "config.json"
    if choice.source == "hub":
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(choice.location, "config.json")
        path = Path(cached) if isinstance(cached, str) else None
    try:
        return list(json.loads(path.read_text()).get("architectures") or []) if path else []
    except (OSError, ValueError):
        return []


def is_discriminator(choice: models.ModelChoice) -> bool:
    return choice.name == DISCRIMINATOR or "ElectraForPreTraining" in architectures(choice)


def is_generator(choice: models.ModelChoice) -> bool:
    return choice.name == GENERATOR or "ElectraForMaskedLM" in architectures(choice)


def discriminator_names() -> list[str]:
    return [c.name for c in models.choices("encoder") if is_discriminator(c)]


def load_discriminator(name) -> models.LoadedModel:
    choice = models.get_choice(name.name if isinstance(name, models.LoadedModel) else name)
    if not is_discriminator(choice):
        raise BadInput(f"'{choice.name}' is not an ELECTRA discriminator (ElectraForPreTraining); pick "
                       f"{DISCRIMINATOR}.")
    loaded = models.load(name, "encoder", head="pretraining")
    if not hasattr(loaded.model, "discriminator_predictions") or not loaded.head_trained:
        raise models.ModelUnavailable(f"'{loaded.name}' has no trained discriminator head (original / replaced).")
    return loaded


def load_generator(name) -> models.LoadedModel:
    loaded = models.load(name, "masked")
    if not loaded.head_trained:
        raise models.ModelUnavailable(f"'{loaded.name}' has no trained masked-LM head, so it cannot be a generator.")
    return loaded


@lm.register_pass("rtd", max_batch=32, max_cost=8192)
def run_discriminator(loaded: models.LoadedModel, items: list[tuple]) -> list[np.ndarray]:
    """items: ids. ElectraForPreTraining's logit per token ([n]; > 0 means "replaced")."""
    import torch

    inputs = lm.padded(loaded, list(items))
    with torch.inference_mode():
        logits = loaded.model(**inputs).logits.float().cpu().numpy()  # [batch, n]
    out = []
    for row, ids in zip(logits, items):
        row = np.array(row[:len(ids)], copy=True)
        row.setflags(write=False)
        out.append(row)
    return out


def sample(generator: models.LoadedModel, masked_ids: list[int], positions: list[int], seed: int) -> list[int]:
    """One sample per masked position from the generator's softmax (temperature 1), drawn by
    torch.multinomial on a torch.Generator seeded with `seed`."""
    import torch

    if not positions:
        return []
    logits = torch.from_numpy(np.array(lm.mlm_logits(generator, masked_ids, positions)))  # [positions, vocab]
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(seed))[:, 0].tolist()


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


@dataclass
class Detection:
    generator: str | None
    discriminator: str | None
    tokens: list[str]
    ids: list[int]
    positions: list[int]
    generator_input: list[str]
    sampled_ids: list[int] | None = None
    sampled: list[str] | None = None
    labels: list[int] | None = None
    p_replaced: list[float] | None = None
    notes: list[str] = field(default_factory=list)
    candidates: int = 0

    def accuracy(self) -> dict | None:
        if self.p_replaced is None or self.labels is None:
            return None
        said = [p > 0.5 for p in self.p_replaced]
        replaced = [i for i, y in enumerate(self.labels) if y]
        return {"accuracy": float(np.mean([s == bool(y) for s, y in zip(said, self.labels)])),
                "replaced_caught": sum(said[i] for i in replaced), "replaced": len(replaced),
                "originals_kept": sum(not said[i] for i, y in enumerate(self.labels) if not y),
                "originals": len(self.labels) - len(replaced)}

    def to_json(self) -> dict:
        n = len(self.ids)
        return {"generator": self.generator, "discriminator": self.discriminator, "tokens": self.tokens,
                "ids": self.ids, "positions": self.positions, "generator_input_tokens": self.generator_input,
                "sampled_tokens": self.sampled, "sampled_ids": self.sampled_ids, "labels": self.labels,
                "p_replaced": self.p_replaced, "discriminator_accuracy": self.accuracy(), "notes": self.notes,
                "signal": {"positions": n, "of": n, "fraction": 1.0, "masked_lm_positions": len(self.positions),
                           "masked_lm_of": self.candidates,
                           "masked_lm_fraction": len(self.positions) / max(self.candidates, 1)},
                "course": [{"document": d, "where": w, "quote": q} for d, w, q in COURSE]}


def detect(text, generator: models.LoadedModel | None, discriminator: models.LoadedModel | None, seed=0,
           tokenizer=None, notes: tuple[str, ...] = ()) -> Detection:
    """The generator's samples at BERT's chosen positions and the discriminator's P(replaced) at every
    token. Without a generator the draw alone is shown (tokens of `tokenizer`); without a discriminator
    the labels are shown without its predictions."""
    seed = check_int(seed, "The seed", 0, 2**32 - 1)
    text = check_text(text, EXAMPLE, what="paragraph")
    notes = list(notes)
    models_here = [m for m in (generator, discriminator) if m is not None]
    tokenizer = models_here[0].tokenizer if models_here else tokenizer
    if generator is not None and discriminator is not None and \
            generator.tokenizer.get_vocab() != discriminator.tokenizer.get_vocab():
        raise BadInput(f"'{generator.name}' and '{discriminator.name}' do not share one vocabulary, so the "
                       "discriminator cannot read the generator's tokens; pick a generator with its vocabulary.")
    limit = min([MAX_TOKENS, tokenizer.model_max_length] + [m.max_tokens for m in models_here])
    ids = lm.check_length(tokenizer(text)["input_ids"], limit)
    positions = masking.draw(tokenizer, ids, seed).positions
    masked = [tokenizer.mask_token_id if i in positions else t for i, t in enumerate(ids)]
    special = tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
    names = models.readable_tokens
    found = Detection(generator.name if generator else None, discriminator.name if discriminator else None,
                      names(tokenizer, ids), ids, positions, names(tokenizer, masked), notes=notes,
                      candidates=len(ids) - sum(special))
    if generator is None:
        found.notes += [NEEDS_GENERATOR] + ([] if discriminator is None else [
            "The discriminator needs the generator's replacements to judge, so it is not run either."])
        if discriminator is None:
            found.notes.append(NEEDS_DISCRIMINATOR)
        return found
    corrupted = list(ids)
    for p, token in zip(positions, sample(generator, masked, positions, seed)):
        corrupted[p] = token
    found.sampled_ids, found.sampled = corrupted, names(tokenizer, corrupted)
    found.labels = [int(c != o) for c, o in zip(corrupted, ids)]
    if discriminator is None:
        found.notes.append(NEEDS_DISCRIMINATOR)
    else:
        logits = lm.submit(discriminator, "rtd", tuple(corrupted), len(corrupted))
        found.p_replaced = [float(p) for p in sigmoid(logits)]
    return found


def resolve(model_generator="", model_discriminator="", fallback=None) -> tuple:
    """(generator, discriminator), each None where none is offered: the named models, else an ELECTRA
    generator if offered, else `fallback` (a name or a loaded model) when it is a masked LM; an ELECTRA
    discriminator if offered."""
    if not model_generator:
        electras = [c.name for c in models.choices("masked") if is_generator(c)]
        if electras:
            model_generator = electras[0]
        elif fallback:
            choice = fallback.choice if isinstance(fallback, models.LoadedModel) else models.get_choice(fallback)
            model_generator = fallback if choice.family == "masked" else ""
    generator = load_generator(model_generator) if model_generator else None
    name = model_discriminator or next(iter(discriminator_names()), None)
    return generator, load_discriminator(name) if name else None


def replaced_token_detection_json(text: str, model_generator: str = "", model_discriminator: str = "",
                                  seed: int = 0) -> dict:
    """The `replaced_token_detection` API: the chosen positions, the generator's samples, the labels
    (1 = replaced) and the discriminator's P(replaced) per token, or null where not measured here."""
    check_int(seed, "The seed", 0, 2**32 - 1)
    generator, discriminator = resolve(model_generator, model_discriminator, models.default_name("masked"))
    if generator or discriminator:
        return detect(text, generator, discriminator, seed).to_json()
    return detect(text, None, None, seed, models.load_tokenizer(models.MINILM_NAME), (TOKENS_NOTE,)).to_json()
