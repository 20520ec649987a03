"""How far fine-tuning moves the weights: the distance of each part equals ‖θ − θ₀‖ / ‖θ₀‖ recomputed by hand from
two state dicts (θ₀ loaded as a run loads it, θ after the lab's own run, training.train, with the same settings: the
panel's loop makes the same updates); at learning rate 0 nothing moves;
the runs are one shared job, kept for the next student; bad settings are refused; the panel's table, words and
chart come from the result."""

from __future__ import annotations

import re

import pytest

from labs.core.errors import BadInput
from labs.core.work.jobs import JOBS
from labs.finetune import tab_theta_distance, training
from labs.finetune import theta_distance as td


def by_hand(before: dict, after: dict) -> dict[str, float]:
    """{part: ‖θ − θ₀‖ / ‖θ₀‖}, each part's tensors flattened into one vector, from two state dicts."""
    import torch

    groups: dict[str, list[str]] = {}
    for key, tensor in before.items():
        if not tensor.is_floating_point():
            continue
        layer = re.search(r"encoder\.layer\.(\d+)\.", key)
        part = "embeddings" if ".embeddings." in key else f"layer {int(layer.group(1)) + 1}" if layer else "head"
        groups.setdefault(part, []).append(key)
    return {part: float(torch.linalg.vector_norm(torch.cat([(after[k] - before[k]).flatten() for k in keys]))
                        / torch.linalg.vector_norm(torch.cat([before[k].flatten() for k in keys])))
            for part, keys in groups.items()}


@pytest.fixture(scope="module")
def shared(tiny_models):
    """The runs at rates 0 and 1e-3 on 16 reviews, as a shared job; and the same job asked for again."""
    plan, data = td.check(tiny_models["masked"], [1e-3, 0], [16], 4)
    runs_before = JOBS.stats["runs"]
    events = list(td.ticket(plan, data))
    again = list(td.ticket(plan, data))
    return plan, data, events, again, JOBS.stats["runs"] - runs_before


def test_the_distances_are_the_norms_recomputed_from_two_state_dicts(shared):
    plan, data, events, _, _ = shared
    rows = [e for e in events if isinstance(e, dict)]
    s = next(p for p in plan if p.learning_rate == 1e-3)
    model, _, _ = training.load_and_encode(s, data, scratch=False)  # θ₀ as the run loads it
    before = {k: v.clone() for k, v in model.state_dict().items()}
    after = {}
    *_, result = training.train(s, data, keep_for_try=False, probe=False,
                                hand_over=lambda m, tok, val: after.update({k: v.clone() for k, v in
                                                                            m.state_dict().items()}))
    expected = by_hand(before, after)
    moved = next(r for r in rows if r["learning_rate"] == 1e-3)
    layers = sorted(int(p.split()[1]) for p in expected if p.startswith("layer "))
    assert [p["part"] for p in moved["parts"]] == ["embeddings", *(f"layer {i}" for i in layers), "head"]
    # float32 training: the two runs agree to a few ulps per update, not bit for bit
    assert {p["part"]: p["distance"] for p in moved["parts"]} == pytest.approx(expected, rel=1e-4)
    assert all(p["distance"] > 0 for p in moved["parts"]) and moved["accuracy"] == result.accuracy_after
    still = next(r for r in rows if r["learning_rate"] == 0)
    assert all(p["distance"] == 0 for p in still["parts"])  # lr = 0: AdamW's update and weight decay are both 0
    assert still["steps"] == moved["steps"] == 3  # 16 reviews, batch 16, 3 epochs


def test_a_class_asking_again_gets_the_kept_runs(shared):
    plan, _, events, again, runs = shared
    assert runs == 1  # the second request was served from the store: nothing trained twice
    assert [e for e in again if isinstance(e, dict)] == [e for e in events if isinstance(e, dict)]


def test_bad_settings_are_refused(tiny_models):
    plan, data = td.check(tiny_models["masked"], "1e-3, 2e-5", "64, 16, 9999", 0)
    assert [(s.learning_rate, s.train_examples) for s in plan] == [
        (2e-5, 16), (1e-3, 16), (2e-5, 64), (1e-3, 64), (2e-5, len(data.train)), (1e-3, len(data.train))]
    for rates, sizes, words in (("abc", None, "numbers"), ([1, 2, 3, 4, 5], None, "1 to 4"), ([0.5], None, "rate"),
                                (None, [4], "Each size"), (None, [8, 16, 32, 64], "1 to 3")):
        with pytest.raises(BadInput, match=words):
            td.check(tiny_models["masked"], rates, sizes, 0)
    with pytest.raises(BadInput, match="causal|encoder"):
        td.check(tiny_models["causal"])


def test_the_panels_table_words_and_chart_come_from_the_result(shared):
    plan, _, events, _, _ = shared
    result = td.result_json(plan, [e for e in events if isinstance(e, dict)])
    frame = tab_theta_distance.table(result)
    first = result["runs"][0]
    assert list(frame.columns)[4:] == [p["part"] for p in first["parts"]]
    assert frame.values[0][4:].tolist() == [f"{p['distance']:.2e}" for p in first["parts"]]
    assert "lr 0, 16 examples" in tab_theta_distance.summary(result)
    fig = td.figure(result)
    assert [t.name for t in fig.data] == [td.setting_name(r) for r in result["runs"]]
    assert len(fig.data[1].x) == len(first["parts"]) and len(fig.data[0].x) == 0  # lr 0: nothing on a log axis
    assert [c["text"] for c in result["course"]] == [td.course_quotes.text(q) for q in td.QUOTE_IDS]
