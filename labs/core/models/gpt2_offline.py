"""GPT-2's real tokenizer without the Hub, built from a file the `openai-whisper` package ships. That package (MIT)
has GPT-2's byte-level BPE ranks as whisper/assets/gpt2.tiktoken; transformers' TikTokenConverter turns them into a
fast tokenizer (the merges follow from the ranks) with GPT-2's pre-tokenisation pattern and <|endoftext|> = 50256.
tests/test_course.py checks it against the ids the course and the GPT-2 paper's tokenizer give. The package is
installed without its dependencies (requirements-offline.txt) and never imported: only its file is read."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

NAME = "gpt2 tokenizer (offline, openai-whisper's copy)"
# GPT-2's own pre-tokeniser (its encoder.py): contractions, letters, digits, other symbols, spaces
PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
EOS, EOS_ID = "<|endoftext|>", 50256

_tokenizer = None
_lock = threading.Lock()


def ranks_file() -> Path | None:
    spec = importlib.util.find_spec("whisper")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "assets" / "gpt2.tiktoken"
    return path if path.exists() else None


def available() -> bool:
    return ranks_file() is not None and importlib.util.find_spec("tiktoken") is not None


def tokenizer():
    """GPT-2's tokenizer as a transformers PreTrainedTokenizerFast, built once per process (about 1 s)."""
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            from transformers import PreTrainedTokenizerFast
            from transformers.convert_slow_tokenizer import TikTokenConverter

            path = ranks_file()
            if path is None:
                raise FileNotFoundError("openai-whisper's gpt2.tiktoken is not installed "
                                        "(pip install --no-deps -r requirements-offline.txt)")
            converted = TikTokenConverter(vocab_file=str(path), pattern=PATTERN, extra_special_tokens=[EOS]).converted()
            _tokenizer = PreTrainedTokenizerFast(tokenizer_object=converted, eos_token=EOS, bos_token=EOS,
                                                 unk_token=EOS)
        return _tokenizer
