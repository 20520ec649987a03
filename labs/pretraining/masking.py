"""Pre-training, BERT's masked-LM draw: which tokens are chosen (15 %) and what happens to each (80 % [MASK], 10 % a
random token, 10 % kept). The draw is exactly DataCollatorForLanguageModeling(mlm_probability=0.15, seed=seed)'s for
one row (the same torch calls, in the same order, on a generator seeded the same way). Section 1's BERT and ELECTRA
examples and "Why 80 / 10 / 10?" read it."""

from __future__ import annotations

from dataclasses import dataclass

MLM_PROBABILITY, MASK_REPLACE, RANDOM_REPLACE = 0.15, 0.8, 0.1


@dataclass(frozen=True)
class Draw:
    chosen: list[bool]  # [n]: the position gives a loss (its label is the original token)
    masked: list[bool]  # [n]: chosen and shown as [MASK] (80 %)
    randomised: list[bool]  # [n]: chosen and shown as a random token (10 %)
    random_ids: list[int]  # [n]: the collator's random token for every position (used where randomised)

    @property
    def positions(self) -> list[int]:
        return [i for i, c in enumerate(self.chosen) if c]


def draw(tokenizer, ids: list[int], seed: int) -> Draw:
    """The collator's draw for this one row: chosen with p = 0.15 among non-special tokens; of the
    chosen, [MASK] with p = 0.8, then a random token with p = 0.5 of the rest (0.1 of the chosen)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    row = torch.tensor([ids], dtype=torch.long)  # [1, n]
    special = torch.tensor([tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)], dtype=torch.bool)
    probability = torch.full(row.shape, MLM_PROBABILITY).masked_fill_(special, 0.0)
    chosen = torch.bernoulli(probability, generator=generator).bool()
    masked = torch.bernoulli(torch.full(row.shape, MASK_REPLACE), generator=generator).bool() & chosen
    scaled = RANDOM_REPLACE / (1 - MASK_REPLACE)
    randomised = torch.bernoulli(torch.full(row.shape, scaled), generator=generator).bool() & chosen & ~masked
    words = torch.randint(len(tokenizer), row.shape, dtype=torch.long, generator=generator)
    return Draw(chosen[0].tolist(), masked[0].tolist(), randomised[0].tolist(), words[0].tolist())


def mlm_draw(tokenizer, ids: list[int], seed: int) -> tuple[list[int], list[int]]:
    """(input ids, labels) as the collator returns them: labels -100 where not chosen."""
    d = draw(tokenizer, ids, seed)
    inputs = [tokenizer.mask_token_id if m else w if r else i
              for i, m, r, w in zip(ids, d.masked, d.randomised, d.random_ids)]
    labels = [i if c else -100 for i, c in zip(ids, d.chosen)]
    return inputs, labels
