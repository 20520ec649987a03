"""The encoder that cheats (Masks lab): the causal model's logits against a change of later characters, the attention
on the next position against Q and K read with a forward hook and a softmax by hand, every reported loss against
torch's cross_entropy recomputed on the model's logits (the future cut off one prefix at a time), the unigram
baseline by hand, greedy generation against one teacher-forced pass, the behaviour (the cheater's training loss far
below, its honest loss far above), bad input, the endpoint and the panel's handlers. A tiny config, trained once."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
import torch
import torch.nn.functional as F

from labs.core.errors import BadInput
from labs.masks import cheating, endpoints, tab_cheating

TINY = dict(d=32, heads=2, layers=2, block=24)
STEPS, SEED, PROMPT = 150, 0, "The food was"


@pytest.fixture(scope="module")
def result():
    return cheating.run(PROMPT, "everyday", STEPS, SEED, 20, **TINY)


@pytest.fixture(scope="module")
def r(result):
    return result.to_json()


def held_windows(result):
    block = TINY["block"]
    ids = result.trained.data.held_ids
    n = (len(ids) - 1) // (block + 1)
    return ids[: n * (block + 1)].view(n, block + 1)


def test_the_causal_models_logits_ignore_later_characters_and_the_cheaters_do_not(result, r):
    data, t = result.trained.data, 10
    ids = torch.tensor([data.encode("The cat ate the cake.")])
    changed = ids.clone()
    changed[0, t + 1:] = torch.tensor(data.encode("x" * (ids.shape[1] - t - 1)))
    with torch.inference_mode():
        for name, causal in cheating.CAUSAL.items():
            model = result.trained.models[name]
            a, b = model(ids, causal)[0][0, : t + 1], model(changed, causal)[0][0, : t + 1]
            if causal:
                assert torch.allclose(a, b, atol=1e-6)
            else:
                assert (a - b).abs().max() > 1e-2
    assert r["models"]["masked"]["future_change"] == pytest.approx(0, abs=1e-6)
    assert r["models"]["cheater"]["future_change"] > 1e-2


def by_hand_weights(model, ids, causal):
    """Every layer's attention weights from Q and K as the qkv projection outputs them (a forward hook), the softmax
    and the mask written out here."""
    seen = []
    hooks = [block.attn.qkv.register_forward_hook(lambda _m, _i, out: seen.append(out.detach()))
             for block in model.blocks]
    try:
        with torch.inference_mode():
            model(ids, causal)
    finally:
        for h in hooks:
            h.remove()
    heads, d = model.blocks[0].attn.heads, model.tok.embedding_dim
    found = []
    for out in seen:
        b, t, _ = out.shape
        q = out[..., :d].reshape(b, t, heads, d // heads).permute(0, 2, 1, 3)
        k = out[..., d: 2 * d].reshape(b, t, heads, d // heads).permute(0, 2, 1, 3)
        scores = torch.einsum("bhqe,bhke->bhqk", q, k) / math.sqrt(d // heads)
        if causal:
            scores = scores + torch.full((t, t), -1e9).triu(1)
        e = (scores - scores.max(-1, keepdim=True).values).exp()
        found.append(e / e.sum(-1, keepdim=True))
    return found


def test_the_attention_on_the_next_position_is_the_weights_from_q_and_k_by_hand(result, r):
    w = held_windows(result)[:, :-1]
    for name, causal in cheating.CAUSAL.items():
        weights = by_hand_weights(result.trained.models[name], w, causal)
        for layer, (hand, reported) in enumerate(zip(weights, r["models"][name]["attention"])):
            for head, shares in enumerate(reported):
                n = hand.shape[-1]
                nxt = sum(hand[:, head, i, i + 1].mean().item() for i in range(n - 1)) / (n - 1)
                future = sum(hand[:, head, i, i + 1:].sum(-1).mean().item() for i in range(n - 1)) / (n - 1)
                assert shares["next"] == pytest.approx(nxt, abs=1e-5)
                assert shares["future"] == pytest.approx(future, abs=1e-5)
                if causal:
                    assert shares["future"] == 0
        prompt = torch.tensor([result.trained.data.encode(PROMPT)])
        on_prompt = by_hand_weights(result.trained.models[name], prompt, causal)
        for layer, hand in enumerate(on_prompt):
            assert torch.allclose(torch.tensor(r["models"][name]["prompt_attention"][layer]), hand[0], atol=1e-5)


def test_every_reported_loss_is_cross_entropy_recomputed_on_the_models_logits(result, r):
    w = held_windows(result)
    for name, causal in cheating.CAUSAL.items():
        model, held = result.trained.models[name], r["models"][name]["held_out"]
        with torch.inference_mode():
            for key, mask in (("as_trained", causal), ("causal_mask", True)):
                logits = model(w[:, :-1], mask)[0]
                assert held[key] == pytest.approx(F.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten()).item(),
                                                  abs=1e-5)
            # the future cut off: each window, each position, run on its own prefix (batch of one)
            total = [F.cross_entropy(model(window[None, : t + 1], causal)[0][0, -1:], window[t + 1: t + 2]).item()
                     for window in w[:4] for t in range(w.shape[1] - 1)]
        first = cheating.loss_future_cut(model, w[:4], causal)
        assert first == pytest.approx(sum(total) / len(total), abs=1e-5)
        if causal:  # under the causal mask, the future cut off and the mask are the same thing
            assert held["future_cut"] == pytest.approx(held["causal_mask"], abs=1e-4)


def test_the_first_training_loss_is_the_fresh_models_on_the_first_batch_and_both_start_alike(result, r):
    data = result.trained.data
    x, y = next(cheating.batches(data, 1, SEED, block=TINY["block"]))
    initial = {name: cheating.train(data, causal, 0, SEED, **TINY)[0] for name, causal in cheating.CAUSAL.items()}
    assert all(torch.equal(a, b) for a, b in zip(initial["masked"].state_dict().values(),
                                                 initial["cheater"].state_dict().values()))
    for name, causal in cheating.CAUSAL.items():
        with torch.no_grad():
            logits = initial[name](x, causal)[0]
        expected = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()
        assert r["models"][name]["train_losses"][0] == pytest.approx(expected, abs=1e-5)
        assert len(r["models"][name]["train_losses"]) == STEPS


def test_the_unigram_baseline_by_hand(result, r):
    data = result.trained.data
    counts = Counter(data.train_ids.tolist())
    total = sum(counts.values()) + len(data.chars)
    held = data.held_ids.tolist()
    by_hand = -sum(math.log((counts[i] + 1) / total) for i in held) / len(held)
    assert r["unigram_loss"] == pytest.approx(by_hand, abs=1e-9)
    assert r["uniform_loss"] == pytest.approx(math.log(len(data.chars)))


def test_the_cheater_learns_to_copy_and_fails_the_honest_test(r):
    m, c = r["models"]["masked"], r["models"]["cheater"]
    assert c["train"] < 0.5 * m["train"]  # training: far below
    assert c["held_out"]["as_trained"] < 0.5 * m["held_out"]["as_trained"]
    assert c["held_out"]["future_cut"] > m["held_out"]["future_cut"] + 1.0  # honest: far above
    assert c["held_out"]["causal_mask"] > m["held_out"]["causal_mask"] + 1.0
    assert m["held_out"]["future_cut"] < r["unigram_loss"]  # the causal model learned something real
    assert max(h["next"] for layer in c["attention"] for h in layer) > 0.5  # it looks at the answer


def test_greedy_generation_is_what_one_teacher_forced_pass_of_the_causal_model_picks(result, r):
    data, model = result.trained.data, result.trained.models["masked"]
    text = PROMPT + r["models"]["masked"]["generation"]
    ids = torch.tensor([data.encode(text)[: TINY["block"]]])
    with torch.inference_mode():
        picks = model(ids, True)[0][0].argmax(-1).tolist()
    start = len(PROMPT)
    assert data.decode(picks[start - 1: ids.shape[1] - 1]) == text[start: ids.shape[1]]
    assert len(r["models"]["cheater"]["generation"]) == 20


def test_the_same_settings_train_once_and_training_is_deterministic(result):
    again = cheating.trained("everyday", STEPS, SEED, **TINY)
    assert again is result.trained
    data = result.trained.data
    assert cheating.train(data, False, 3, 3, **TINY)[1] == cheating.train(data, False, 3, 3, **TINY)[1]


@pytest.mark.parametrize("args", [
    dict(prompt="Crème brûlée"), dict(prompt=""), dict(prompt=5), dict(corpus="wiki"), dict(steps=10),
    dict(steps="many"), dict(seed=-1), dict(new_chars=0), dict(new_chars=10_000)])
def test_bad_input_is_refused_with_a_message(result, args):
    settings = dict(prompt=PROMPT, corpus="everyday", steps=STEPS, seed=SEED, new_chars=5, **TINY) | args
    with pytest.raises(BadInput) as e:
        cheating.run(**settings)
    assert str(e.value)


def test_bad_input_trains_nothing(result):
    before = set(cheating._trained)
    for args in (dict(prompt=5), dict(prompt="   "), dict(new_chars=0), dict(steps=10)):
        settings = dict(prompt=PROMPT, corpus="everyday", steps=STEPS, seed=7, new_chars=5, **TINY) | args
        with pytest.raises(BadInput):
            cheating.run(**settings)
    assert set(cheating._trained) == before
    assert cheating.check_prompt("  Maria ", result.trained.data) == "Maria "  # a trailing space is a character


def test_the_endpoint_and_the_panels_handlers(result, r):
    declared = {e.name: e for e in endpoints.ENDPOINTS}
    assert declared["cheating"].fn is cheating.cheating_json
    assert json.loads(json.dumps(r)) == r
    rows = tab_cheating.loss_table(r)
    assert rows[2][1:] == [round(r["models"][n]["held_out"]["future_cut"], 3) for n in ("masked", "cheater")]
    assert "**" in tab_cheating.findings(r) and PROMPT in tab_cheating.generations(r)
    cheat_map, masked_map = tab_cheating.attention_figures(r, 1, 1)
    assert cheat_map.data[0].z.tolist() == [[round(x, 3) for x in row]
                                           for row in r["models"]["cheater"]["prompt_attention"][1][1]]
    assert len(tab_cheating.share_table(r)) == 2 * TINY["layers"] * TINY["heads"]
    assert tab_cheating.loss_figure(r).data[0].y == tuple(r["models"]["masked"]["train_losses"])
