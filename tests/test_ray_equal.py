"""The shared passes and the jobs through a local Ray (LAB_RAY_ADDRESS set) give what the embedded path
gives. The oracle tests of the labs are imported and run a second time here, with every pass sent to a
Ray Serve deployment (the lab's own comparison: pipeline("fill-mask"), the model's own logits, attentions
and hidden states), and a fine-tune run with a seed gives the same metrics and curve as the same run trained
in this process; "try your model" gives the same probabilities."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import ray_support
from conftest import run_async
from test_attention import (  # noqa: F401  (collected again here, through Ray)
    test_causal_model_pair_is_one_text_and_its_future_is_zero,
    test_sentence_pair_segments_and_b_start,
    test_weights_equal_the_models_own_output_attentions,
)
from test_embeddings import test_every_vector_equals_output_hidden_states  # noqa: F401
from test_fill_mask import (  # noqa: F401
    oracle,
    test_left_only_predictions_equal_the_causal_models_next_token,
    test_predictions_equal_the_fill_mask_pipeline,
)
from test_next_token import test_distribution_is_softmax_of_logits_over_t  # noqa: F401

from labs.core.work import lm, ray_passes
from labs.core.work.jobs import JOBS
from labs.finetune import shared_runs, strategies, training

PASS_TESTS = {"test_causal_model_pair_is_one_text_and_its_future_is_zero", "test_sentence_pair_segments_and_b_start",
              "test_weights_equal_the_models_own_output_attentions", "test_every_vector_equals_output_hidden_states",
              "test_left_only_predictions_equal_the_causal_models_next_token",
              "test_predictions_equal_the_fill_mask_pipeline", "test_distribution_is_softmax_of_logits_over_t"}


@pytest.fixture(scope="module")
def local_ray(tiny_models):
    slots = JOBS.slots, JOBS.cluster_slots  # with Ray, the shared jobs take the cluster's slots: given back after
    ray = ray_support.start_local(num_cpus=2)
    yield ray
    ray_support.shutdown()
    JOBS.slots, JOBS.cluster_slots = slots


@pytest.fixture(autouse=True)
def through_ray(local_ray, monkeypatch, request):
    """Every test here with LAB_RAY_ADDRESS set and an empty result cache; an imported oracle test must
    have sent its passes to Serve (or it proved nothing about Ray)."""
    monkeypatch.setenv("LAB_RAY_ADDRESS", "local")
    lm.cache.clear()
    before, embedded = ray_passes.stats["requests"], lm.forward_passes()
    yield
    if request.node.originalname in PASS_TESTS:
        assert ray_passes.stats["requests"] > before, "no pass went to Ray Serve"
        assert lm.forward_passes() == embedded, "a pass ran in the embedded batcher"


def test_identical_requests_share_one_ray_request(tiny_models):
    from labs.core.models import models

    loaded = models.load(tiny_models["masked"])
    before = ray_passes.stats["requests"]
    rows = [[101, 2023, 103, 102]] * 3 + [[101, 2008, 102]]
    first = lm.hidden_states(loaded, rows)
    again = lm.hidden_states(loaded, rows)
    assert ray_passes.stats["requests"] - before == 2  # two distinct rows; the rest shared or cached
    assert all(a is b for a, b in zip(first, again))
    info = ray_passes.replica_info(loaded.name, loaded.head)
    assert info["actor_name"].startswith("SERVE_REPLICA::lmlab-") and info["largest"] >= 2  # one batch


def test_a_bad_request_fails_alone_and_is_a_friendly_error(tiny_models):
    from labs.core.errors import BadInput
    from labs.fill_mask import compute as fill_mask

    with pytest.raises(BadInput):
        fill_mask.predict(tiny_models["masked"], "No blank here at all.", 5)
    assert fill_mask.predict(tiny_models["masked"], "The [MASK] sat.", 3).masks


def test_a_pass_called_from_an_event_loop_gets_its_result(tiny_models):
    from labs.core.models import models

    loaded = models.load(tiny_models["causal"])

    async def inside_a_loop():
        return lm.next_token_logits(loaded, [5, 6, 7])

    lm.cache.clear()
    got = run_async(inside_a_loop(), timeout=300)  # in a thread: Playwright may hold this one's loop
    lm.cache.clear()
    assert np.array_equal(got, lm.next_token_logits(loaded, [5, 6, 7]))


def run_events(ticket) -> list:
    return list(ticket)


def test_a_fine_tune_on_ray_equals_the_same_run_here(tiny_models, monkeypatch):
    """The same settings and seed: the same metrics, curve and schedule; the trained model comes back with the
    last event, so "try your model" answers here with the probabilities of the run trained here."""
    s = strategies.check_settings(tiny_models["masked"], "full", 1e-3, 1, 8, 32, 7)
    data = training.builtin_data()
    monkeypatch.delenv("LAB_RAY_ADDRESS")
    *_, here = training.train(s, data)
    monkeypatch.setenv("LAB_RAY_ADDRESS", "local")
    JOBS.clear()
    ticket = shared_runs.run_ticket(s, data, False, owner="ray-test")
    events = run_events(ticket)
    there = events[-1]
    assert ticket.job.where is not None and ticket.job.where.pid != os.getpid()
    assert there.metrics_after == pytest.approx(here.metrics_after, abs=1e-6)
    assert there.accuracy_before == here.accuracy_before and there.accuracy_after == here.accuracy_after
    np.testing.assert_allclose([h["loss"] for h in there.history], [h["loss"] for h in here.history], rtol=1e-4)
    assert there.schedule == here.schedule
    assert training.is_kept(there.run_id)
    sentence = "An absolutely wonderful evening."
    ours, theirs = training.classify(there.run_id, sentence), training.classify(here.run_id, sentence)
    assert list(ours) == list(theirs)
    np.testing.assert_allclose(list(ours.values()), list(theirs.values()), atol=1e-4)


def test_the_api_stream_on_ray_equals_the_embedded_one(tiny_models, monkeypatch):
    args = (tiny_models["masked"], "full", 1e-3, 1, 8, 24, 3)

    async def collect():
        return [e async for e in shared_runs.finetune_stream(*args)]

    JOBS.clear()
    on_ray = run_async(collect(), timeout=600)
    monkeypatch.delenv("LAB_RAY_ADDRESS")
    here = training.finetune(*args)
    assert [e["step"] for e in on_ray if e.get("status") == "running"] == list(range(1, len(here["history"]) + 1))
    final = on_ray[-1]
    assert final["metrics"] == here["metrics"]
    np.testing.assert_allclose([h["loss"] for h in final["history"]], [h["loss"] for h in here["history"]], rtol=1e-4)


def test_a_job_s_bad_input_reaches_the_student_as_it_is(tiny_models):
    from labs.core.errors import BadInput

    def work(control):
        yield 1
        raise BadInput("That setting cannot be used.")

    ticket = JOBS.submit("ray-test-bad", ("bad", 1), work, owner="ray-test-bad")
    with pytest.raises(BadInput, match="That setting cannot be used."):
        list(ticket)


def test_a_stopped_job_ends_with_where_it_got_to(tiny_models):
    """Stop: the run stops after its current step on the worker and its result still arrives."""
    s = strategies.check_settings(tiny_models["masked"], "full", 1e-3, 3, 8, 64, 11)
    ticket = shared_runs.run_ticket(s, training.builtin_data(), False, owner="ray-stopper")
    seen = []
    for event in ticket:
        seen.append(event)
        if isinstance(event, training.Step) and event.step == 2:
            assert JOBS.stop_owner("ray-stopper") == "stopping"
    result = seen[-1]
    assert isinstance(result, training.RunResult) and result.stopped
    assert len(result.history) < 3 * 8


def test_the_shipped_result_brings_the_trained_model_back(tiny_models):
    """ship_kept (on the worker) and receive_kept (here), through pickle as Ray sends it: the model is built
    again with the trained weights, kept under the run's id, and classifies as the trained one did."""
    s = strategies.check_settings(tiny_models["masked"], "full", 1e-3, 1, 8, 16, 5)
    *_, result = training.train(s, training.builtin_data())
    sentence = "The food was cold and the waiter rude."
    before = training.classify(result.run_id, sentence)
    shipped = shared_runs.ship_kept(result)
    assert isinstance(shipped, tuple) and not training.is_kept(result.run_id)
    back = shared_runs.receive_kept(pickle.loads(pickle.dumps(shipped)))
    assert back is not result and back.run_id == result.run_id and training.is_kept(result.run_id)
    after = training.classify(result.run_id, sentence)
    assert list(after) == list(before)
    np.testing.assert_allclose(list(after.values()), list(before.values()), atol=1e-6)
    step = training.Step("pre-trained", 1, 2, 0.5, 0.1)
    assert shared_runs.ship_kept(step) is step and shared_runs.receive_kept(step) is step
