"""labs.core.ui's panel helpers: ui.Follow (a panel following a shared job: the queue's place, every k-th step, the
job's other events kept, Stop's message) gives what the panels' own loops gave, line for line; ui.by_name puts a
handler's named outputs in the event's order, leaving the others as they are, for plain, streaming and async
handlers; tab_run.gathered hands a handler the Fine-tune settings as one Form and keeps Gradio's gr.Request."""

from __future__ import annotations

import html
import inspect
from types import SimpleNamespace

import gradio as gr
import pytest
from conftest import run_async

from labs.core.ui import ui
from labs.core.work.jobs import LEFT, Job, JobGone, Queued
from labs.finetune import tab_run
from labs.finetune.training import Eval, Step


class ScriptedTicket:
    """A ticket that plays a list of events (an exception in the list is raised there); `behind` from a set."""

    def __init__(self, script: list, behind_at: frozenset = frozenset()):
        self.script, self.behind_at, self.position, self.left = script, behind_at, 0, 0
        self.job = Job("scripted", None, None, 1)  # where it ran: nothing to say (not on ZeroGPU)

    @property
    def behind(self) -> bool:
        return self.position in self.behind_at

    async def __aiter__(self):
        for self.position, event in enumerate(self.script):
            if isinstance(event, Exception):
                raise event
            yield event

    def leave(self):
        self.left += 1


def step(n: int, total: int = 12) -> Step:
    return Step("pre-trained", n, total, 1.0 / n, 0.1 * n)


def old_loop(script: list, behind_at: frozenset, every: int, words) -> tuple[list, list]:
    """The loop each panel had (tab_adapters, tab_ulmfit, tab_data_efficiency before ui.Follow), written out."""
    lines, kept = [], []
    for position, event in enumerate(script):
        if isinstance(event, JobGone):
            return lines + [ui.progress_html(None, html.escape(str(event)))], kept
        if isinstance(event, Queued):
            lines.append(ui.progress_html(None, html.escape(f"Waiting for the training slot: {event.words()}.")))
        elif isinstance(event, Step):
            if event.step % every == 1 and position not in behind_at:
                fraction, text = words(event, kept)
                lines.append(ui.progress_html(fraction, html.escape(text)))
        else:
            kept.append(event)
    return lines, kept


def follow(script: list, behind_at: frozenset, every: int, words):
    ticket = ScriptedTicket(script, behind_at)
    followed = ui.Follow(ticket, words, every)

    async def lines():
        return [line async for line in followed]

    shown = run_async(lines())
    return shown + ([followed.gone_html()] if followed.gone else []), followed, ticket


@pytest.mark.parametrize("every", [3, 5])
@pytest.mark.parametrize("gone", [False, True])
def test_follow_shows_what_the_panels_own_loops_showed(every, gone):
    script = [Queued(2, 40.0), Queued(1, 20.0), Eval("pre-trained", 0, 0.7, 0.5, 0.1),
              *(step(n) for n in range(1, 7)), {"result": 1}, *(step(n) for n in range(7, 13)), "the last event"]
    if gone:
        script.insert(10, JobGone(LEFT))
    behind = frozenset({4, 12})  # catching up there: no line for those steps

    def words(event, kept):
        return len(kept) / 3, f"<b>{len(kept)}</b> done: step {event.step} of {event.total_steps}"

    shown, followed, ticket = follow(script, behind, every, words)
    expected_lines, expected_kept = old_loop(script, behind, every, words)
    assert shown == expected_lines and followed.events == expected_kept
    assert sum("&lt;b&gt;" in line for line in shown) >= 2 and ticket.left == 1  # the words are escaped; the job is left once
    assert (followed.gone is not None) == gone


def test_by_name_orders_the_outputs_and_leaves_the_rest():
    outputs = {"progress": "p", "table": "t", "result": "r"}  # components stand for themselves here

    def plain(x, request: gr.Request = None):
        return {"result": x, "progress": "done"}

    def streaming(x):
        yield {"progress": "1"}
        yield {}

    async def following(x):
        yield {"table": x}

    assert ui.by_name(plain, outputs)(1) == ("done", gr.skip(), 1)
    assert list(ui.by_name(streaming, outputs)(1)) == [("1", gr.skip(), gr.skip()), (gr.skip(),) * 3]

    async def run():
        return [out async for out in ui.by_name(following, outputs)(2)]

    assert run_async(run()) == [(gr.skip(), 2, gr.skip())]
    assert inspect.isasyncgenfunction(ui.by_name(following, outputs))
    assert inspect.signature(ui.by_name(plain, outputs)) == inspect.signature(plain)  # Gradio still sees request
    with pytest.raises(KeyError, match="tabel"):
        ui.by_name(lambda: {"tabel": 1}, outputs)()


def test_gathered_hands_one_form_and_keeps_the_request():
    seen = []

    async def handler(form: tab_run.Form, chosen, request: gr.Request = None):
        seen.append((form, chosen, request.session_hash))
        yield {}

    values = ("model", "lora", 8, "query, value", 1e-4, 2, 16, 100, 3, 0.1, 0.01)
    wrapped = tab_run.gathered(handler)
    parameters = list(inspect.signature(wrapped).parameters)
    assert parameters == [f for f in tab_run.Form.__dataclass_fields__] + ["chosen", "request"]
    assert inspect.isasyncgenfunction(wrapped)

    async def run():
        return [out async for out in wrapped(*values, "data", request=SimpleNamespace(session_hash="s"))]

    run_async(run())
    form, chosen, session = seen[0]
    assert form == tab_run.Form(*values) and form.inputs() == list(values) and (chosen, session) == ("data", "s")
    assert (form.lora_targets, form.epochs, form.seed) == ("query, value", 2, 3)
