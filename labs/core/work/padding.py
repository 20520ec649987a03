"""One way to put rows of token ids of different lengths into one batch, for every forward pass,
generation and training step in LM Lab.

Right padding (the default) keeps every real token at its own position: an encoder ignores the
padded keys (their attention weight is exactly 0) and a causal LM's real tokens never see the
padding after them. Left padding is for generation: every prompt then ends where its new tokens
begin. Segment ids (BERT's token_type_ids: 0 for sentence A, 1 for sentence B) are padded with 0."""

from __future__ import annotations


def pad_rows(rows: list, pad_id: int | None, *, side: str = "right", segments: list | None = None,
             device: str = "cpu") -> dict:
    """{"input_ids", "attention_mask"[, "token_type_ids"]}: [batch, longest row] long tensors on
    `device`. `segments` holds one list of segment ids per row (None for a row without: all 0)."""
    import torch

    if side not in ("right", "left"):
        raise ValueError(f"side must be 'right' or 'left', not {side!r}")
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id if pad_id is not None else 0, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long) if segments is not None else None
    for b, row in enumerate(rows):
        cols = slice(0, len(row)) if side == "right" else slice(width - len(row), width)
        ids[b, cols] = torch.tensor(list(row), dtype=torch.long)
        mask[b, cols] = 1
        if types is not None and segments[b] is not None:
            types[b, cols] = torch.tensor(list(segments[b]), dtype=torch.long)
    batch = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
    if types is not None:
        batch["token_type_ids"] = types.to(device)
    return batch
