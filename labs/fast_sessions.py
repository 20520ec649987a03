"""Gradio builds every new session's copy of every component's configuration at once (for deep links
and per-session updates). On this app (hundreds of components in seven tabs) that costs about 40 ms
of CPU per student, before the student's request runs: the largest cost of serving a class, and one
that grows with every lab. Here a session computes a component's configuration only when it is
first read or updated, which Gradio's SessionState already allows (it computes missing ones itself).

Written for gradio 6.31 (pinned in requirements.txt); tests/test_app.py checks that a session still
gets the same attributes and the same configurations as Gradio's own SessionState."""

from __future__ import annotations

import os
from copy import copy

from gradio import state_holder

_gradio_init = state_holder.SessionState.__init__


class LazyConfigValues(dict):
    """A session's component configurations, each computed the first time it is used."""

    def __init__(self, blocks_config, keys: set[int]):
        super().__init__()
        self._blocks_config, self._keys = blocks_config, keys

    def __missing__(self, key: int) -> dict:
        value = self._blocks_config.config_for_block(key, [], self._blocks_config.blocks[key])
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


def install() -> None:
    state_holder.SessionState.__init__ = _lazy_init


def gradio_session(blocks):
    """A SessionState built by Gradio's own code (for the test that compares the two)."""
    session = state_holder.SessionState.__new__(state_holder.SessionState)
    _gradio_init(session, blocks)
    return session
