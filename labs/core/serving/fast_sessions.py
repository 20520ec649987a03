"""Two per-student costs of Gradio that buy nothing here.

1. Gradio builds every new session's copy of every component's configuration at once (for deep links
and per-session updates). On this app (hundreds of components in ten tabs) that costs about 40 ms
of CPU per student, before the student's request runs: the largest cost of serving a class, and one
that grows with every lab. Here a session computes a component's configuration only when it is
first read or updated, which Gradio's SessionState already allows (it computes missing ones itself).

2. An output a handler skips (`gr.skip()`: it keeps what it shows) is, in Gradio's postprocessing, an
update with nothing in it, for which Gradio still builds a new component, its configuration and its
API schema for the session (the same as before: nothing changed). A tab's first results skip most of
their outputs (a page opens on one tab of ten), so this was half of a page open's CPU. Skipped
outputs now leave the postprocessing and get what Gradio gives them (`{"__type__": "update"}`, and
None for a gr.State); the other outputs are postprocessed by Gradio as before.

Written for gradio 6.31 (pinned in requirements.txt); tests/test_app.py checks that a session still
gets the same attributes and the same configurations as Gradio's own SessionState, and that a
handler's outputs, skipped or not, and the session after it are what Gradio's own code makes.

Held at arm's length: `install()` replaces nothing unless the installed Gradio is the version this was
written for and the three functions it replaces are, to the byte, the code it was written against (a
fingerprint of their source). Otherwise it logs one line and the app runs on Gradio's own code."""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
from copy import copy

import gradio
from gradio import blocks, state_holder

log = logging.getLogger(__name__)

_gradio_init = state_holder.SessionState.__init__
_gradio_postprocess = blocks.Blocks.postprocess_data
_gradio_update_value = state_holder.SessionState._update_value_in_config
SKIP = {"__type__": "update"}  # gr.skip()
WRITTEN_FOR = "6.31.0"
# sha256 of the source of each function replaced here, as gradio 6.31.0 writes it (first 16 hex digits)
FINGERPRINTS = {"SessionState.__init__": "1b2ea21dc42c45da",
                "SessionState._update_value_in_config": "7e5b61f747b0dce7",
                "Blocks.postprocess_data": "5f6a865a3446ba0b"}


class LazyConfigValues(dict):
    """A session's component configurations, each computed the first time it is used."""

    def __init__(self, blocks_config, keys: set[int]):
        super().__init__()
        self._blocks_config, self._keys = blocks_config, keys
        self.pending_values: dict[int, object] = {}  # values sent before the configuration was computed

    def __missing__(self, key: int) -> dict:
        value = self._blocks_config.config_for_block(key, [], self._blocks_config.blocks[key])
        if key in self.pending_values and "props" in value:
            value["props"]["value"] = self.pending_values.pop(key)
        self[key] = value
        return value

    def __contains__(self, key) -> bool:
        return key in self._keys or dict.__contains__(self, key)

    def __iter__(self):
        return iter(self._keys | set(dict.keys(self)))

    def __len__(self) -> int:
        return len(self._keys | set(dict.keys(self)))

    def keys(self):
        return list(iter(self))

    def items(self):
        return [(key, self[key]) for key in self]

    def values(self):
        return [self[key] for key in self]


def _lazy_init(self, blocks) -> None:
    """SessionState.__init__ of gradio 6.31, with the configurations left to LazyConfigValues."""
    self.blocks_config = copy(blocks.default_config)
    self.config_values = LazyConfigValues(self.blocks_config,
                                          {k for k in self.blocks_config.blocks if k in blocks.blocks})
    self.state_data = {}
    self._state_ttl = {}
    self.is_closed = False
    self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600


async def _postprocess_without_skips(self, block_fn, predictions, state):
    """Blocks.postprocess_data of gradio 6.31 for the outputs that are not skipped; Gradio's own result
    (an empty update, None for a State) for those that are."""
    if (not isinstance(predictions, (list, tuple)) or block_fn.batch or block_fn.is_validator_function
            or len(predictions) != len(block_fn.outputs) or len(predictions) < 2):
        return await _gradio_postprocess(self, block_fn, predictions, state)
    skipped = [isinstance(p, dict) and p == SKIP for p in predictions]  # (a DataFrame compares cell by cell)
    if not any(skipped):
        return await _gradio_postprocess(self, block_fn, predictions, state)
    rest = copy(block_fn)
    rest.outputs = [b for b, skip in zip(block_fn.outputs, skipped) if not skip]
    values = [p for p, skip in zip(predictions, skipped) if not skip]
    # Gradio reads a single output's prediction as the value itself (not a list of one)
    done = iter(await _gradio_postprocess(self, rest, values[0] if len(values) == 1 else values, state)
                if values else [])
    return [(None if b.stateful else dict(SKIP)) if skip else next(done)
            for b, skip in zip(block_fn.outputs, skipped)]


def _update_value_later(self, key: int, value) -> None:
    """SessionState._update_value_in_config, kept until the configuration is computed: every event
    copies each input's value into the session's configuration (for Gradio's deep links), which
    would otherwise compute the configuration of every input a page-open event reads."""
    values = self.config_values
    if isinstance(values, LazyConfigValues) and key in values._keys and not dict.__contains__(values, key):
        values.pending_values[key] = value
        return
    _gradio_update_value(self, key, value)


def fingerprint(fn) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]


def why_not(version: str, originals=(_gradio_init, _gradio_update_value, _gradio_postprocess)) -> str | None:
    """Why the patches must not be installed on this Gradio (None: they may)."""
    if version != WRITTEN_FOR:
        return f"gradio {version} is installed, these patches are for {WRITTEN_FOR}"
    changed = [fn.__qualname__ for fn in originals if FINGERPRINTS.get(fn.__qualname__) != fingerprint(fn)]
    return f"gradio's {', '.join(changed)} differ from the code these patches replace" if changed else None


def install(version: str | None = None, originals=None) -> bool:
    """Install the patches if this Gradio is the one they were written for; else one log line, and Gradio's
    own code runs. Returns whether they are installed."""
    reason = why_not(version or gradio.__version__, *([originals] if originals else []))
    if reason:
        log.warning("fast_sessions not installed: %s; the app runs on Gradio's own session code", reason)
        return False
    state_holder.SessionState.__init__ = _lazy_init
    state_holder.SessionState._update_value_in_config = _update_value_later
    blocks.Blocks.postprocess_data = _postprocess_without_skips
    return True


def gradio_session(blocks):
    """A SessionState built by Gradio's own code (for the test that compares the two)."""
    session = state_holder.SessionState.__new__(state_holder.SessionState)
    _gradio_init(session, blocks)
    return session
