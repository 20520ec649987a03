"""Batching: requests that arrive together share one padded forward pass, and each gets exactly what
it would have got alone. A gate holds the first batch so that the requests sent meanwhile queue up
and run as the second batch: the batch composition is fixed, not left to timing.

The batching core's rules (where a queue is cut, the claim of identical requests, a failed batch run
again one item at a time) are tested here once, on labs.core.work.batching itself: the embedded
batcher, the Ray Serve replicas and streaming generation all call it."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
import torch
from conftest import gate_first_batch, wait_until
from gradio_client.exceptions import AppError

from labs.attention import compute as attention
from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work import batching, lm
from labs.fill_mask import compute as fill_mask
from labs.next_token import compute as next_token
from labs.next_token import generation, streaming

SENTENCES = ["The [MASK] sat.", "Paris is the [MASK] of France, and [MASK] is the capital of Italy.",
             "[MASK] [MASK] [MASK] went to the bank to get some money for the [MASK].", "A [MASK]."]
PROMPTS = ["The cat", "Once upon a time, there was a small village by the river where", "A", "The dog ran in the"]


@pytest.fixture
def fresh(monkeypatch):
    """New batchers (so a patched runner is used) and an empty cache."""
    monkeypatch.setattr(lm, "_batchers", {})
    monkeypatch.setattr(streaming, "_batchers", {})
    lm.cache.clear()
    yield
    lm.cache.clear()


def in_threads(fns) -> list:
    results = [None] * len(fns)

    def run(i):
        try:
            results[i] = fns[i]()
        except Exception as exc:  # collected and asserted on by the caller
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    return threads, results


def batcher_of(model: str, kind: str) -> batching.Batcher:
    return next(b for (name, _, k), b in list(lm._batchers.items()) if (name, k) == (model, kind))


def batched(monkeypatch, kind: str, model: str, first, calls):
    """Run `first` (it holds the worker), then every call concurrently: they form one batch."""
    gate, sizes = gate_first_batch(monkeypatch, lm.RUNNERS, kind)
    monkeypatch.setattr(lm, "_batchers", {})  # batchers made before the gate still run the old runner
    blocker, _ = in_threads([first])
    wait_until(lambda: sizes == [1])
    threads, results = in_threads(calls)
    wait_until(lambda: len(batcher_of(model, kind)._queue) == len(calls))
    gate.set()
    for t in blocker + threads:
        t.join(60)
    assert sizes == [1, len(calls)]
    return results


# ------------------------------------------------------------ the core's rules, written once


@pytest.mark.parametrize("costs, max_batch, max_cost, expected", [
    ([10] * 70, 64, 8192, [list(range(64)), list(range(64, 70))]),  # max_batch cuts
    ([4000, 4000, 300, 8000, 1, 1, 9000], 64, 8192, [[0, 1], [2], [3, 4, 5], [6]]),  # the budget cuts
    ([9000], 64, 8192, [[0]]),  # a request over the budget runs alone, never refused
    ([], 64, 8192, []),
    ([1, 2, 3, 4, 5], 2, 100, [[0, 1], [2, 3], [4]]),
])
def test_a_queue_is_cut_where_a_hand_count_cuts_it(costs, max_batch, max_cost, expected):
    assert batching.cut(costs, max_batch, max_cost) == expected
    assert batching.batch_size(iter(costs), max_batch, max_cost) == (len(expected[0]) if expected else 0)


def held(run):
    """run(items), whose first batch waits for the gate: what is submitted meanwhile queues as the next batch."""
    gate, sizes = threading.Event(), []

    def held_run(items):
        sizes.append(len(items))
        if len(sizes) == 1:
            gate.wait(10)
        return run(items)

    return held_run, gate, sizes


def second_batch(b: batching.Batcher, gate, sizes, first, calls, queued: int) -> list:
    """Run `first` (its batch holds the worker), then `calls` in threads; once `queued` requests wait, open the
    gate: they run as the next batches. The calls' results (or exceptions)."""
    blocker, _ = in_threads([first])
    wait_until(lambda: sizes == [1])
    threads, results = in_threads(calls)
    wait_until(lambda: len(b._queue) == queued)
    gate.set()
    for t in blocker + threads:
        t.join(10)
    return results


def test_the_batcher_cuts_its_queue_by_the_rule():
    run, gate, sizes = held(lambda items: items)
    costs = [4000, 4000, 300, 8000, 1, 1, 9000]
    b = batching.Batcher("test", run, batching.ResultCache(10**6), max_batch=64, max_cost=8192)
    # One student's rows, queued together in order (submit_many), then cut by the budget.
    results = second_batch(b, gate, sizes, lambda: b.submit("first", "first"),
                           [lambda: b.submit_many([(i, i, c) for i, c in enumerate(costs)])], len(costs))
    assert results == [list(range(len(costs)))]
    assert sizes[1:] == [len(group) for group in batching.cut(costs, 64, 8192)] == [2, 1, 3, 1]


def fussy_upper(items: list) -> list:
    """A pass in which one bad item spoils its whole batch, with a message meant for the student."""
    if "bad" in items:
        raise BadInput("The word 'bad' cannot be read here; try another word.")
    return [item.upper() for item in items]


def test_a_failing_item_fails_alone_with_its_friendly_message_and_the_others_succeed():
    outcomes = batching.run_alone_on_failure(fussy_upper, ["a", "bad", "c"])
    assert outcomes[0] == "A" and outcomes[2] == "C"
    assert isinstance(outcomes[1], BadInput)
    assert str(outcomes[1]) == "The word 'bad' cannot be read here; try another word."
    alone = batching.run_alone_on_failure(fussy_upper, ["bad"])
    assert len(alone) == 1 and str(alone[0]) == str(outcomes[1])


def test_batched_outcomes_equal_one_at_a_time():
    items = ["x", "bad", "y", "z", "bad"]
    batched = batching.run_alone_on_failure(fussy_upper, items)
    alone = [batching.run_alone_on_failure(fussy_upper, [item])[0] for item in items]
    assert [repr(o) for o in batched] == [repr(o) for o in alone]
    assert batching.run_alone_on_failure(fussy_upper, ["x", "y"]) == ["X", "Y"]


def test_a_batch_with_the_wrong_number_of_results_is_run_again_alone():
    outcomes = batching.run_alone_on_failure(lambda items: items[:1], ["a", "b"])
    assert outcomes == ["a", "b"]  # no request is left waiting for a result that never comes


def test_the_claim_shares_one_computation_and_caches_it_before_letting_go():
    cache = batching.ResultCache(10**6)
    claims = batching.InFlight(cache)
    value, mine = claims.claim("k")
    assert value is None and mine is not None
    shared, none = claims.claim("k")
    assert shared is mine and none is None  # an identical request waits on the owner's future
    claims.settle("k", mine, "result")
    assert shared.result() == "result" and cache.get("k") == "result"
    assert claims.claim("k") == ("result", None)  # later requests: the cached result
    _, failing = claims.claim("f")
    claims.settle("f", failing, BadInput("no"))
    with pytest.raises(BadInput):
        failing.result()
    assert cache.get("f") is None and claims.claim("f")[1] is not None  # a failure is not kept: asked again


def test_the_result_cache_drops_the_least_recently_used_by_bytes():
    cache = batching.ResultCache(3000)
    one, two = np.zeros(100, np.float64), np.zeros(150, np.float64)  # 800 and 1,200 bytes
    cache.put("a", one)
    cache.put("b", two)
    assert cache.nbytes == 2000
    assert cache.get("a") is one  # "a" is now the most recent
    cache.put("c", np.zeros(150, np.float64))
    assert cache.get("b") is None and cache.get("a") is one and cache.nbytes == 2000
    cache.put("huge", np.zeros(1000, np.float64))  # larger than the whole cache: not kept, nothing lost
    assert cache.get("huge") is None and cache.get("a") is one


# ------------------------------------------------------------ the batcher itself


def test_batcher_takes_everything_queued_and_keeps_each_result_with_its_request():
    double, gate, sizes = held(lambda items: [2 * x for x in items])
    b = batching.Batcher("test", double, batching.ResultCache(10**6))
    results = second_batch(b, gate, sizes, lambda: b.submit("k0", 0),
                           [lambda i=i: b.submit(f"k{i}", i) for i in range(1, 10)], 9)
    assert results == [2 * i for i in range(1, 10)] and sizes == [1, 9]
    assert b.submit("k3", 3) == 6 and b.stats["batches"] == 2  # the third call is a cache hit


def test_identical_requests_in_flight_share_one_run():
    gate, calls = threading.Event(), []

    def slow(items):
        calls.append(list(items))
        gate.wait(10)
        return [x.upper() for x in items]

    b = batching.Batcher("test", slow, batching.ResultCache(10**6))
    threads, results = in_threads([lambda: b.submit("same", "a") for _ in range(20)])
    wait_until(lambda: len(calls) == 1)
    time.sleep(0.1)  # let every thread reach submit(); none may start a second run
    gate.set()
    for t in threads:
        t.join(10)
    assert results == ["A"] * 20 and calls == [["a"]]


def test_the_batcher_runs_a_failing_batch_one_at_a_time():
    def double_but_bad(items):
        if "bad" in items:
            raise ValueError("bad item")
        return [x * 2 for x in items]

    fussy, gate, sizes = held(double_but_bad)
    b = batching.Batcher("test", fussy, batching.ResultCache(10**6))
    results = second_batch(b, gate, sizes, lambda: b.submit("first", "first"),
                           [lambda x=x: b.submit(x, x) for x in ("a", "bad", "c")], 3)
    assert sizes[:2] == [1, 3]  # the batch of three failed, then each ran alone
    assert results[0] == "aa" and results[2] == "cc" and isinstance(results[1], ValueError)


# ------------------------------------------------------------ the shared forward passes, batched = alone


def test_masked_lm_batch_equals_one_at_a_time(monkeypatch, fresh, tiny_models):
    name = tiny_models["masked"]
    loaded = models.load(name)
    alone = [fill_mask.predict(loaded, s, 5) for s in SENTENCES]
    lm.cache.clear()
    results = batched(monkeypatch, "mlm", name, lambda: fill_mask.predict(loaded, "The [MASK] was here.", 5),
                      [lambda s=s: fill_mask.predict(loaded, s, 5) for s in SENTENCES])
    for one, many in zip(alone, results):
        for a, b in zip(one.masks, many.masks):
            assert [p.token_id for p in a.predictions] == [p.token_id for p in b.predictions]
            np.testing.assert_allclose([p.prob for p in a.predictions], [p.prob for p in b.predictions], atol=1e-5)


@pytest.mark.parametrize("which", ["tiny", "smollm2"])
def test_causal_lm_batch_equals_one_at_a_time(monkeypatch, fresh, tiny_models, which):
    loaded = models.load(tiny_models["causal"] if which == "tiny" else models.SMOLLM2_NAME)
    alone = [next_token.distribution(loaded, p) for p in PROMPTS]
    lm.cache.clear()
    results = batched(monkeypatch, "next", loaded.name,
                      lambda: next_token.distribution(loaded, "Hello there"),
                      [lambda p=p: next_token.distribution(loaded, p) for p in PROMPTS])
    for one, many in zip(alone, results):
        assert [e.token_id for e in one.entries] == [e.token_id for e in many.entries]
        np.testing.assert_allclose([e.prob for e in one.entries], [e.prob for e in many.entries], atol=1e-5)


@pytest.mark.parametrize("which", ["tiny", "smollm2"])
def test_attention_batch_equals_one_at_a_time_and_the_models_own(monkeypatch, fresh, tiny_models, which):
    name = tiny_models["masked"] if which == "tiny" else models.SMOLLM2_NAME
    texts = [("The cat sat on the mat.", ""), ("I sat on the river bank.", "I opened a bank account today."),
             ("A", ""), ("Short one.", "And a much longer second sentence with many more words in it.")]
    loaded = models.load(name)
    results = batched(monkeypatch, "attn", name, lambda: attention.run(loaded, "Hold the worker."),
                      [lambda t=t: attention.run(loaded, *t) for t in texts])
    for (a, b), r in zip(texts, results):
        enc = loaded.tokenizer(a, b, return_tensors="pt") if b and loaded.tokenizer.sep_token else None
        if enc is None:
            ids = attention.encode(loaded.tokenizer, a, b)[0]
            enc = {"input_ids": torch.tensor([ids])}
        with torch.no_grad():
            own = torch.stack(loaded.model(**enc, output_attentions=True).attentions)[:, 0].numpy()
        np.testing.assert_allclose(r.weights, own, atol=1e-5)


def test_the_same_request_from_fifty_students_is_one_forward_pass(fresh, tiny_models):
    loaded = models.load(tiny_models["masked"])
    before = lm.forward_passes()
    threads, results = in_threads([lambda: fill_mask.predict(loaded, "The [MASK] sat on the mat.", 5)] * 50)
    for t in threads:
        t.join(60)
    assert lm.forward_passes() - before == 1
    assert all(r.to_json() == results[0].to_json() for r in results)


# ------------------------------------------------------------ greedy generation, batched = alone


def reference_greedy(loaded, prompt: str, n: int) -> str:
    ids = loaded.tokenizer(prompt, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        out = loaded.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False,
                                    pad_token_id=loaded.tokenizer.pad_token_id)
    return loaded.tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


def gated_greedy(monkeypatch, loaded) -> tuple[threading.Event, list[int]]:
    """One greedy worker whose first batch waits for the gate (the app runs two)."""
    gate, sizes = threading.Event(), []

    def gated(loaded_, rows):
        sizes.append(len(rows))
        if len(sizes) == 1:
            gate.wait(60)
        return streaming.run_greedy(loaded_, rows)

    streaming._batchers[loaded.name] = batching.Batcher("test/greedy", lambda rows: gated(loaded, rows), workers=1)
    return gate, sizes


@pytest.mark.parametrize("which", ["tiny", "smollm2"])
def test_batched_greedy_generation_equals_generate_one_at_a_time(monkeypatch, fresh, tiny_models, which):
    loaded = models.load(tiny_models["causal"] if which == "tiny" else models.SMOLLM2_NAME)
    lengths = [12, 5, 12, 8]
    gate, sizes = gated_greedy(monkeypatch, loaded)
    blocker, _ = in_threads([lambda: generation.generate(loaded, "Hold on", "greedy", 2)])
    wait_until(lambda: sizes == [1])
    threads, results = in_threads([lambda p=p, n=n: generation.generate(loaded, p, "greedy", n)
                                   for p, n in zip(PROMPTS, lengths)])
    wait_until(lambda: len(streaming._batchers[loaded.name]._queue) == len(PROMPTS))
    gate.set()
    for t in blocker + threads:
        t.join(120)
    assert sizes == [1, len(PROMPTS)]
    for prompt, n, result in zip(PROMPTS, lengths, results):
        assert result["completions"][0]["text"] == reference_greedy(loaded, prompt, n), prompt


def test_a_failing_greedy_batch_is_run_again_row_by_row(monkeypatch, fresh, tiny_models):
    loaded = models.load(tiny_models["causal"])
    gate, sizes = gated_greedy(monkeypatch, loaded)
    poisoned = loaded.tokenizer(PROMPTS[1])["input_ids"]
    real = streaming.generate_rows

    def generate_rows(loaded_, rows):
        if any(list(ids) == poisoned for ids, _ in rows):
            raise BadInput("This prompt cannot be continued; try another.")
        return real(loaded_, rows)

    monkeypatch.setattr(streaming, "generate_rows", generate_rows)
    blocker, _ = in_threads([lambda: generation.generate(loaded, "Hold on", "greedy", 2)])
    wait_until(lambda: sizes == [1])
    threads, results = in_threads([lambda p=p: generation.generate(loaded, p, "greedy", 8) for p in PROMPTS])
    wait_until(lambda: len(streaming._batchers[loaded.name]._queue) == len(PROMPTS))
    gate.set()
    for t in blocker + threads:
        t.join(120)
    assert sizes[:2] == [1, len(PROMPTS)] and sizes[2:] == [1] * len(PROMPTS)  # the batch, then each row alone
    assert isinstance(results[1], BadInput) and str(results[1]) == "This prompt cannot be continued; try another."
    for i in (0, 2, 3):
        assert results[i]["completions"][0]["text"] == reference_greedy(loaded, PROMPTS[i], 8), PROMPTS[i]


def test_a_generation_stopped_in_the_queue_leaves_its_batch(monkeypatch, fresh, tiny_models):
    loaded = models.load(tiny_models["causal"])
    gate, sizes = gated_greedy(monkeypatch, loaded)
    blocker, _ = in_threads([lambda: generation.generate(loaded, "Hold on", "greedy", 2)])
    wait_until(lambda: sizes == [1])
    stops = [threading.Event() for _ in PROMPTS]
    threads, results = in_threads([lambda p=p, s=s: list(generation.stream(loaded, p, "greedy", 20, 1.0, 0, 1.0,
                                                                           1, 0, stop=s))
                                   for p, s in zip(PROMPTS, stops)])
    wait_until(lambda: len(streaming._batchers[loaded.name]._queue) == len(PROMPTS))
    stops[1].set()  # this student pressed Stop while waiting
    gate.set()
    for t in blocker + threads:
        t.join(60)
    assert results[1] == []
    for i in (0, 2, 3):
        assert results[i][-1] == reference_greedy(loaded, PROMPTS[i], 20)


# ------------------------------------------------------------ through the app


def test_one_bad_request_among_many_fails_alone(client, tiny_models):
    jobs = [client.submit(f"The [MASK] number {i} sat.", tiny_models["masked"], 5, api_name="/fill_mask")
            for i in range(6)]
    bad = client.submit("The [MASK] sat.", "no-such-model", 5, api_name="/fill_mask")
    results = [job.result(timeout=120) for job in jobs]
    assert all(r["masks"][0]["predictions"] for r in results)
    with pytest.raises(AppError, match="no model called"):
        bad.result(timeout=120)


def thread_nice(thread_id: int) -> int:
    """A thread's niceness as Linux reports it (/proc: the 19th field of its stat line)."""
    with open(f"/proc/self/task/{thread_id}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[16])


@pytest.mark.skipif(not hasattr(os, "setpriority") or not os.path.isdir("/proc/self/task"), reason="Linux only")
def test_a_batch_runs_below_the_threads_that_answer_requests_and_gives_the_same_result():
    """A class's answers and polls (a millisecond each) go before a model's batch on shared cores: the batch worker,
    and the intra-op threads torch starts for it, run batching.COMPUTE_NICE steps lower; the caller keeps its own
    priority, and the batch's numbers are the same as the caller's own."""
    seen = {}

    def run(items):
        seen["thread"] = threading.get_native_id()
        return [torch.ones(200, 200).matmul(torch.full((200, 200), float(x))).sum().item() for x in items]

    b = batching.Batcher("nice", run, batching.ResultCache(10**6))
    mine = thread_nice(threading.get_native_id())
    assert b.submit(3, 3) == torch.ones(200, 200).matmul(torch.full((200, 200), 3.0)).sum().item()
    assert thread_nice(seen["thread"]) == min(19, mine + batching.COMPUTE_NICE)
    assert thread_nice(threading.get_native_id()) == mine
