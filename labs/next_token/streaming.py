"""Next token, streaming and batching generate(): token collectors that a reader decodes while the
model runs, and greedy generations that arrive together run as one batch.

A batch is left-padded, so that every prompt ends where its new tokens begin (position ids come
from the attention mask). Each row's tokens go to that row's collector; a row stops at its own
length, at its end-of-text token or when its student presses Stop, and the batch goes on for the
others. Greedy decoding is deterministic, so a batched row gives the same text as a run alone.
Sampling runs alone: its seed must give the same text however many students sample at once."""

from __future__ import annotations

import threading
import time
from functools import partial

from labs.core.models import models
from labs.core.work.batching import Batcher
from labs.core.work.padding import pad_rows

STREAM_GAP = 0.04  # seconds between updates: tokens arrive in small batches, so the reader wakes less often
MAX_SECONDS = 60  # a safety net: the limits on tokens and beams keep a generation far shorter
alone = threading.Semaphore(2)  # sampling and beam search run alone, at most two at once


class TokenCollector:
    """The new token ids of one generation, as they arrive (no decoding where the model runs). It is
    generate()'s streamer for a run of its own, and is fed row by row when the run is a batch."""

    def __init__(self, max_new_tokens: int, eos_token_id: int | None, stop: threading.Event | None = None):
        self.max_new_tokens, self.eos_token_id = max_new_tokens, eos_token_id
        self.stop = stop or threading.Event()  # Stop pressed, or the page left
        self.ids: list[int] = []
        self.done = False
        self.error: Exception | None = None
        self.wake = threading.Event()
        self.deadline = time.monotonic() + MAX_SECONDS  # set again when its generation starts
        self._prompt_seen = False

    @property
    def finished(self) -> bool:
        """No more tokens wanted: its own length reached, its end-of-text token produced, stopped, or
        out of time."""
        return (self.done or self.stop.is_set() or len(self.ids) >= self.max_new_tokens
                or (bool(self.ids) and self.ids[-1] == self.eos_token_id) or time.monotonic() > self.deadline)

    def add(self, token: int) -> None:
        if not self.finished:
            self.ids.append(token)
            self.wake.set()

    def put(self, value) -> None:
        if not self._prompt_seen:  # generate() first sends the prompt
            self._prompt_seen = True
            return
        for token in value.view(-1).tolist():
            self.add(token)

    def end(self) -> None:
        self.done = True
        self.wake.set()


class RowStreamer:
    """generate()'s streamer for a batch: each row's new token goes to that row's collector."""

    def __init__(self, collectors: list[TokenCollector]):
        self.collectors, self._prompt_seen = collectors, False

    def put(self, value) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        for collector, token in zip(self.collectors, value.view(-1).tolist()):
            collector.add(token)

    def end(self) -> None:
        """Each collector is ended by the batch, once generate() has returned."""


class RowsFinished:
    """A StoppingCriteria: a row is done when its collector wants no more tokens; generate() ends
    when every row is done."""

    def __init__(self, collectors: list[TokenCollector]):
        self.collectors = collectors

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        return torch.tensor([c.finished for c in self.collectors], dtype=torch.bool, device=input_ids.device)


def read(tokenizer, collector: TokenCollector):
    """The text so far, each time new tokens have arrived; the collector's error at the end."""
    text = ""
    while True:
        collector.wake.wait()
        collector.wake.clear()
        finished = collector.done
        current = tokenizer.decode(collector.ids[:], skip_special_tokens=True)
        if not finished:
            current = current.rstrip("\ufffd")  # half of a multi-byte character: wait for the rest
        if current != text:
            text = current
            yield text
        if finished:
            break
        time.sleep(STREAM_GAP)
    if collector.error is not None:
        raise collector.error


def start_alone(run, collector: TokenCollector) -> threading.Thread:
    """run() (a generate() streaming into `collector`) in a thread of its own, two at most at once."""
    def alone_run():
        import torch

        try:
            with alone, torch.no_grad():
                collector.deadline = time.monotonic() + MAX_SECONDS
                run()
        except Exception as exc:  # re-raised in the reader, which the UI turns into a message
            collector.error = exc
        finally:
            collector.end()

    thread = threading.Thread(target=alone_run, daemon=True)
    thread.start()
    return thread


_batchers: dict[str, Batcher] = {}
_batchers_lock = threading.Lock()


def start_greedy(loaded: models.LoadedModel, ids: list[int], collector: TokenCollector) -> None:
    """Queue a greedy generation; its tokens arrive in `collector` while its batch runs. Two
    batches may run at once, so a long generation does not hold everybody else's. A failed batch is
    retried row by row (the batcher's rule), so a failure reaches only its own student."""
    batcher = _batchers.get(loaded.name)
    if batcher is None:
        with _batchers_lock:
            batcher = _batchers.setdefault(loaded.name, Batcher(
                f"{loaded.name}/greedy", partial(run_greedy, loaded), max_batch=32, max_cost=16384, workers=2))
    batcher.start((ids, collector), cost=len(ids) + collector.max_new_tokens).add_done_callback(
        partial(_finished, collector))


def _finished(collector: TokenCollector, future) -> None:
    """Its batch is over (retries included): the reader learns the row's error, if any, and stops waiting."""
    collector.error = future.exception()
    collector.end()


def run_greedy(loaded: models.LoadedModel, rows: list[tuple[list[int], TokenCollector]]) -> list[None]:
    """One generate() for every queued greedy request still wanted (a student who pressed Stop while it
    waited has left); it raises if the batch fails."""
    live = [(ids, c) for ids, c in rows if not c.stop.is_set()]
    if live:
        generate_rows(loaded, live)
    return [None] * len(rows)


def generate_rows(loaded: models.LoadedModel, rows: list[tuple[list[int], TokenCollector]]) -> None:
    import torch

    pad = loaded.tokenizer.pad_token_id
    batch = pad_rows([ids for ids, _ in rows], pad, side="left", device=loaded.device)
    collectors = [c for _, c in rows]
    for collector in collectors:
        collector.ids.clear()  # a row run again alone, after its batch failed, starts over
        collector.deadline = time.monotonic() + MAX_SECONDS
    with torch.no_grad():
        loaded.model.generate(**batch, do_sample=False, pad_token_id=pad,
                              max_new_tokens=max(c.max_new_tokens for c in collectors),
                              streamer=RowStreamer(collectors), stopping_criteria=[RowsFinished(collectors)])
