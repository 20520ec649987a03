"""Fine-tune runs as shared jobs: a run followed by several students, joined late, or served from the store
equals the same run trained alone (metrics, curves and the trained model's predictions); the API streams
the queue's place; the tab shows it; Stop leaves a shared run without stopping it for the others."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from conftest import api_client, run_async
from gradio_client.exceptions import AppError

from labs.core.work.jobs import JOBS, Queued
from labs.finetune import data as datasets
from labs.finetune import shared_runs, strategies, training
from labs.finetune import tab_run as finetune_tab


def settings(tiny_models, seed: int, epochs: int = 1, lr: float = 1e-3):
    return strategies.check_settings(tiny_models["masked"], "full", lr, epochs, 8, 32, seed)


def comparable(result: dict) -> dict:
    """A run's JSON without what differs between two trainings of the same run (its id and timing)."""
    return {k: v for k, v in result.items() if k not in ("run_id", "seconds")}


def follow_in_threads(ticket_factory, n: int) -> list[list]:
    seen = [[] for _ in range(n)]
    tickets = [ticket_factory() for _ in range(n)]
    threads = [threading.Thread(target=lambda t=t, s=s: s.extend(t)) for t, s in zip(tickets, seen)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    return seen


def follow_past_its_first_step(ticket) -> tuple[threading.Thread, list]:
    """Follow a ticket in a thread of its own; returns (the thread, the events so far) once the first has come."""
    first_step, events = threading.Event(), []

    def follow():
        for event in ticket:
            events.append(event)
            first_step.set()
    thread = threading.Thread(target=follow)
    thread.start()
    assert first_step.wait(120)
    return thread, events


def test_a_shared_run_equals_the_same_run_trained_alone(tiny_models):
    s, data = settings(tiny_models, seed=101), datasets.builtin_data()
    runs_before = JOBS.stats["runs"]
    seen = follow_in_threads(lambda: shared_runs.run_ticket(s, data, True), 3)
    assert JOBS.stats["runs"] == runs_before + 1  # three students, one run
    shared = [[e for e in events if not isinstance(e, Queued)] for events in seen]
    assert shared[0] == shared[1] == shared[2]
    alone = list(training.run_experiment(s, data, True))
    shared_results = [e for e in shared[0] if isinstance(e, training.RunResult)]
    alone_results = [e for e in alone if isinstance(e, training.RunResult)]
    assert comparable(training.experiment_json(shared_results)) == comparable(training.experiment_json(alone_results))
    # The trained models answer alike: the shared one (every follower's run_id) and the one trained alone.
    sentence = "A dreadful, boring film."
    assert training.classify(shared_results[0].run_id, sentence) == pytest.approx(
        training.classify(alone_results[0].run_id, sentence), abs=1e-6)
    # Asked again after it finished: the kept result at once, no training.
    later = shared_runs.run_ticket(s, data, True)
    assert later.from_store and list(later) == shared[0] and JOBS.stats["runs"] == runs_before + 1


def test_a_kept_run_whose_model_was_freed_trains_again(tiny_models, monkeypatch):
    s, data = settings(tiny_models, seed=102), datasets.builtin_data()
    first = list(shared_runs.run_ticket(s, data, False))
    monkeypatch.setattr(training, "is_kept", lambda run_id: False)  # pushed out by other students' runs
    again = shared_runs.run_ticket(s, data, False)
    assert not again.from_store
    losses = lambda events: [e.loss for e in events if isinstance(e, training.Step)]  # noqa: E731
    assert losses(again) == losses(first)  # trained again, the same run


def test_stop_on_a_shared_run_leaves_it_for_the_others(tiny_models):
    s, data = settings(tiny_models, seed=103, epochs=3), datasets.builtin_data()
    mine, theirs = (shared_runs.run_ticket(s, data, False, owner=o) for o in ("me", "them"))
    thread, their_events = follow_past_its_first_step(theirs)
    assert finetune_tab.on_stop(SimpleNamespace(session_hash="me")).count(finetune_tab.LEFT[:20]) == 1
    thread.join(300)
    result = their_events[-1]
    assert isinstance(result, training.RunResult) and not result.stopped and len(result.eval) == 3
    assert mine.left


def test_the_tab_shows_the_place_in_the_queue(tiny_models):
    blocker, data = settings(tiny_models, seed=104, epochs=3), datasets.builtin_data()
    running = shared_runs.run_ticket(blocker, data, False, owner="someone else")
    follower = threading.Thread(target=lambda: list(running))
    follower.start()
    values = (tiny_models["masked"], "full", 4, "query, value", 1e-3, 1, 8, 32, 105, 0.1, 0.01, None, False, [])

    async def first_two_outputs():
        handler = finetune_tab.gathered(finetune_tab.on_run)(*values, request=SimpleNamespace(session_hash="student"))
        outputs = [await handler.__anext__()]
        await handler.aclose()  # the page closes: the waiting job leaves the queue
        return outputs

    (shown,) = run_async(first_two_outputs())
    assert set(shown) == {"progress"}  # the other outputs keep their values
    progress = shown["progress"]
    assert "1 run ahead of yours, about" in progress and "Stop leaves the queue" in progress
    follower.join(300)
    assert JOBS.waiting() == 0


def test_the_tabs_settings_are_the_apis_and_its_run_equals_the_same_api_run(tiny_models):
    """One settings object: the tab's values (tab_run.Form, as Gradio hands them to the handler) check into the
    Settings that the `finetune` API builds from the same flat arguments, LoRA's targets, warm-up and decay
    included; the run the tab follows equals the same run through the API's function, trained alone."""
    m = tiny_models["masked"]
    values = (m, "lora", 4, "query, key, value", 1e-3, 1, 8, 32, 108, 0.2, 0.05)
    s, data = finetune_tab.settings_from(finetune_tab.Form(*values), None)
    flat = (m, "lora_r4", 1e-3, 1, 8, 32, 108, False, "sentiment", "", 0.2, 0.05, "query, key, value")
    api, api_data, scratch = training.api_settings(*flat)
    assert s == api and not scratch and shared_runs.data_key(data) == shared_runs.data_key(api_data)
    assert (s.lora_targets, s.warmup_ratio, s.weight_decay) == ("query, key, value", 0.2, 0.05)
    assert training.api_settings(m)[0] == strategies.Settings(s.model)  # an old call's defaults: Settings' own

    async def the_tabs_outputs():
        run = finetune_tab.gathered(finetune_tab.on_run)(*values, None, False, [],
                                                         request=SimpleNamespace(session_hash="tab"))
        return [out async for out in run]

    *_, last = run_async(the_tabs_outputs())
    assert comparable(last["result"]) == comparable(training.finetune(*flat))
    assert last["runs"][-1]["after"] == last["result"]["accuracy_after"]


@pytest.fixture
def clients(app_server):
    """Three students: each gradio_client Client is its own session."""
    return [api_client(app_server["url"]) for _ in range(3)]


def test_the_api_streams_the_place_then_the_run_and_identical_calls_share_it(clients, tiny_models):
    m = tiny_models["masked"]
    first = clients[0].submit(m, "full", 1e-3, 3, 8, 32, 106, False, api_name="/finetune")
    while not any(o.get("status") == "running" for o in first.outputs()):
        first.status()  # wait for a state, not a time: the first run has trained a step
    same = [c.submit(m, "head_only", 1e-3, 1, 8, 32, 107, False, api_name="/finetune") for c in clients[1:]]
    results = [job.result(timeout=300) for job in same]
    assert results[0]["run_id"] == results[1]["run_id"]  # one run for both students
    assert results[0]["history"] == results[1]["history"]
    outputs = same[0].outputs()
    assert outputs[0]["status"] == "queued" and outputs[0]["ahead"] == 1 and outputs[0]["eta_s"] > 0
    statuses = [o.get("status") for o in outputs[:-1]]
    assert statuses.index("running") > statuses.index("queued")
    assert first.result(timeout=300)["run_id"] != results[0]["run_id"]


def test_an_api_client_has_one_waiting_job_a_newer_call_replaces_it(clients, tiny_models):
    m = tiny_models["masked"]
    blocker = clients[0].submit(m, "full", 1e-3, 3, 8, 32, 108, False, api_name="/finetune")
    while not any(o.get("status") == "running" for o in blocker.outputs()):
        blocker.status()
    older = clients[1].submit(m, "head_only", 1e-3, 1, 8, 32, 109, False, api_name="/finetune")
    while not older.outputs():  # its place in the queue: it waits
        older.status()
    newer = clients[1].submit(m, "head_only", 1e-3, 1, 8, 32, 110, False, api_name="/finetune")
    with pytest.raises(AppError, match="Replaced by your newer request"):
        older.result(timeout=300)
    assert newer.result(timeout=300)["history"] and blocker.result(timeout=300)["history"]


def test_every_stop_answers_on_a_line_no_run_writes():
    """Stop's answer (a queue=False event) races the run's last update: a Stop that wrote the run's progress line
    could leave its answer there over "Stopped." for good (CI once read it five minutes on). In the built Fine-tune
    tab, each of its six Stop buttons (the run's and five long panels') writes only a line that no streaming run
    writes."""
    import gradio as gr

    from labs.core.ui.build import Build
    from labs.finetune import tab as finetune_lab

    with gr.Blocks() as demo:
        finetune_lab.build(Build(demo))  # a build context of its own: nothing shared with an app built here
    stops = {block._id for block in demo.blocks.values() if isinstance(block, gr.Button) and block.value == "Stop"}
    streamed = {block._id for fn in demo.fns.values() if fn.types_generator for block in fn.outputs}
    stop_writes = [{block._id for block in fn.outputs} for fn in demo.fns.values()
                   if {target for target, _ in fn.targets} & stops]
    assert len(stops) == 6 and len(stop_writes) == 6
    assert all(written and not written & streamed for written in stop_writes), "a Stop writes a run's line"


def test_stop_on_a_long_panel_answers_what_it_did(tiny_models):
    """The long panels' Stop (data efficiency, adapters, ULMFiT): nothing running, then a run this student alone
    follows, which stops after its current step and says so."""
    from labs.finetune import tab_long_run

    me = SimpleNamespace(session_hash="long-panel student")
    assert tab_long_run.NOTHING_RUNNING in tab_long_run.on_stop(me)
    ticket = shared_runs.run_ticket(settings(tiny_models, seed=106, epochs=3), datasets.builtin_data(), False,
                                    owner=me.session_hash)
    thread, events = follow_past_its_first_step(ticket)
    assert tab_long_run.STOP_PRESSED in tab_long_run.on_stop(me)
    thread.join(300)
    assert isinstance(events[-1], training.RunResult) and events[-1].stopped
