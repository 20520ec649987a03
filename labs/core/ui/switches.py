"""Stop switches, one per student (per browser session): Stop ends that student's long run (a
fine-tune, a generation) at the next step, and the run then finishes normally, with what it got so
far and its worker freed. Gradio's own cancel is not used for running work: a cancelled event leaves
the page unable to start the next one for a while (the restart is dropped)."""

from __future__ import annotations

import threading

import cachetools


class StopSwitches:
    LIMIT = 1000  # sessions that asked for a run and never started one are forgotten, oldest first

    def __init__(self):
        self._switches = cachetools.LRUCache(self.LIMIT)  # session -> its switch
        self._lock = threading.Lock()

    def arm(self, key: str) -> threading.Event:
        """A fresh switch for the run this student just asked for (an older run keeps its own)."""
        with self._lock:
            switch = self._switches[key] = threading.Event()
            return switch

    def current(self, key: str) -> threading.Event:
        """The switch armed for this student's next run (a new one if none was armed)."""
        with self._lock:
            return self._switches.get(key) or self._switches.setdefault(key, threading.Event())

    def stop(self, key: str) -> None:
        with self._lock:
            switch = self._switches.get(key)
        if switch is not None:
            switch.set()

    def release(self, key: str, switch: threading.Event) -> None:
        """Forget the switch once its run has ended (unless a newer one replaced it)."""
        with self._lock:
            if self._switches.get(key) is switch:
                del self._switches[key]
