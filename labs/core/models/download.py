"""Fetch the Hub models into the Hugging Face cache, for a lecture without internet.

    ./lab download            # the defaults: bert-base-uncased, gpt2, t5-small, distil*, task models
    ./lab download roberta-base ...   # or any Hub ids (the on-demand models: roberta-base, albert-base-v2,
                                      # facebook/bart-base)

Afterwards LM Lab offers them offline too (it checks the cache when the Hub is unreachable)."""

from __future__ import annotations

import sys

from labs.core.models.registry import PRELOADED

# Only what from_pretrained reads: weights as safetensors, config and tokenizer files.
WANTED_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "merges.txt"]


def download(repo_ids: list[str]) -> int:
    from huggingface_hub import snapshot_download

    failed = 0
    for repo_id in repo_ids:
        try:
            folder = snapshot_download(repo_id, allow_patterns=WANTED_FILES)
            print(f"ok      {repo_id} -> {folder}")
        except Exception as exc:  # keep going: one missing model should not stop the rest
            failed += 1
            print(f"FAILED  {repo_id}: {type(exc).__name__}: {str(exc)[:200]}")
    if failed:
        print(f"{failed} of {len(repo_ids)} downloads failed; are you online?")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    return download(argv or [c.location for c in PRELOADED])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
