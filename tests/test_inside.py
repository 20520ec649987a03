"""Inside a prediction (Next token lab): sentence scores against the model's own loss, the logit
lens against the model's output and by hand, the beam tree against generate(), bad input, the API
and the browser."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work import lm
from labs.next_token import beam_tree, inside, tab_inside

SMOL = models.SMOLLM2_NAME


@pytest.mark.parametrize("which", ["causal", "smol"])
def test_score_is_the_models_own_loss_and_log_softmax(which, tiny_models):
    name = tiny_models["causal"] if which == "causal" else SMOL
    loaded = models.load(name)
    text = "The cat sat on the mat because it was warm."
    s = inside.score(name, text)
    ids = loaded.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        out = loaded.model(ids, labels=ids)
    assert s.mean_loss == pytest.approx(out.loss.item(), abs=1e-5)
    by_hand = torch.log_softmax(out.logits[0, :-1].double(), dim=-1).gather(1, ids[0, 1:, None])[:, 0]
    assert s.logprobs[0] is None
    np.testing.assert_allclose(s.logprobs[1:], by_hand.numpy(), atol=1e-4)
    assert s.perplexity == pytest.approx(np.exp(s.mean_loss))
    assert s.total_logprob == pytest.approx(-s.mean_loss * (len(s.tokens) - 1))


def test_a_sentence_beats_its_scramble_on_smollm2():
    ordered, scrambled = inside.score(SMOL, inside.SCORE_EXAMPLE), inside.score(SMOL, inside.SCRAMBLED_EXAMPLE)
    assert ordered.perplexity == pytest.approx(210, rel=0.02)  # measured when the issue was filed
    assert scrambled.perplexity == pytest.approx(18488, rel=0.02)


def test_score_and_lens_cost_one_forward_pass_each_and_batching_changes_nothing(tiny_models):
    name = tiny_models["causal"]
    lm.cache.clear()
    before = lm.forward_passes()
    inside.score(name, "One pass for every position.")
    inside.logit_lens(name, "One pass for every layer", 5)
    assert lm.forward_passes() - before == 2
    texts = [f"Sentence number {i} is a little longer than the one before it" * (i % 3 + 1) for i in range(6)]
    alone = []
    for t in texts:
        lm.cache.clear()
        alone.append(inside.score(name, t).logprobs)
    lm.cache.clear()
    together: dict[str, list] = {}
    threads = [threading.Thread(target=lambda t=t: together.update({t: inside.score(name, t).logprobs})) for t in texts]
    [t.start() for t in threads]
    [t.join() for t in threads]
    for t, one in zip(texts, alone):
        np.testing.assert_allclose(together[t][1:], one[1:], atol=1e-5)


def model_probs(loaded, ids, position):
    with torch.inference_mode():
        return torch.softmax(loaded.model(torch.tensor([ids])).logits[0, position].double(), -1).numpy()


@pytest.mark.parametrize("which, text", [("causal", "The capital of France is"), ("smol", "The capital of France is"),
                                         ("masked", "The capital of [MASK] is Paris.")])
def test_the_last_layer_of_the_lens_is_the_models_output(which, text, tiny_models):
    name = SMOL if which == "smol" else tiny_models[which]
    lens = inside.logit_lens(name, text, 10)
    loaded = models.load(name)
    ids = loaded.tokenizer(lm.with_mask_token(text, loaded.tokenizer.mask_token or ""))["input_ids"]
    expected = model_probs(loaded, ids, lens.position)
    last = lens.layers[-1]
    assert [i for i, _, _ in last.top] == list(np.argsort(-expected, kind="stable")[:10])
    np.testing.assert_allclose([p for _, _, p in last.top], np.sort(expected)[::-1][:10], atol=1e-5)
    assert last.final_token_rank == 1 and len(lens.layers) == loaded.model.config.num_hidden_layers + 1


@pytest.mark.parametrize("which", ["causal", "masked"])
def test_earlier_layers_go_through_the_same_norm_and_head_by_hand(which, tiny_models):
    name = tiny_models[which]
    loaded = models.load(name)
    text = "A short text" if which == "causal" else "A [MASK] text"
    lens = inside.logit_lens(name, text, 3)
    ids = loaded.tokenizer(text)["input_ids"]
    with torch.inference_mode():
        states = loaded.model(torch.tensor([ids]), output_hidden_states=True).hidden_states
        for layer in range(len(states) - 1):
            h = states[layer][0, lens.position]
            if which == "causal":
                logits = loaded.model.transformer.ln_f(h) @ loaded.model.lm_head.weight.T
            else:
                logits = loaded.model.cls(h)
            probs = torch.softmax(logits.double(), -1).numpy()
            got = lens.layers[layer]
            assert [i for i, _, _ in got.top] == list(np.argsort(-probs, kind="stable")[:3])
            np.testing.assert_allclose([p for _, _, p in got.top], np.sort(probs)[::-1][:3], atol=1e-5)


def test_paris_rises_only_in_the_last_layers_of_smollm2():
    lens = inside.logit_lens(SMOL, "The capital of France is", 5)
    assert lens.final_token == "␣Paris" and lens.layers[-1].final_token_prob > 0.2
    assert lens.layers[0].final_token_rank > 100 and lens.layers[len(lens.layers) // 2].final_token_rank > 10


def generate_beams(loaded, prompt, beams, new):
    ids = loaded.tokenizer(prompt, return_tensors="pt")
    with torch.inference_mode():
        out = loaded.model.generate(**ids, num_beams=beams, num_return_sequences=beams, max_new_tokens=new,
                                    do_sample=False, output_scores=True, return_dict_in_generate=True,
                                    pad_token_id=loaded.tokenizer.eos_token_id)
    n = ids["input_ids"].shape[1]
    return [row[n:].tolist() for row in out.sequences], out.sequences_scores.tolist()


@pytest.mark.parametrize("which, beams, new", [("causal", 2, 12), ("causal", 8, 12), ("causal", 3, 1),
                                               ("smol", 4, 6)])
def test_the_beam_tree_ends_where_generate_does(which, beams, new, tiny_models):
    name = SMOL if which == "smol" else tiny_models["causal"]
    loaded = models.load(name)
    prompt = "Once upon a time"
    tree = beam_tree.beam_tree(name, prompt, beams, new)
    sequences, scores = generate_beams(loaded, prompt, beams, new)
    assert len(tree.beams) == beams
    for beam, sequence, score in zip(tree.beams, sequences, scores):
        assert sequence[:len(beam.token_ids)] == list(beam.token_ids)
        assert beam.score == pytest.approx(score, abs=1e-4)
    nodes = {n.id: n for n in tree.nodes}
    for n in tree.nodes[1:]:
        assert n.logprob == pytest.approx(nodes[n.parent].logprob + n.token_logprob, abs=1e-3)
        assert nodes[n.parent].status == "kept"  # only running beams are extended
    with torch.inference_mode():
        greedy = loaded.model.generate(**loaded.tokenizer(prompt, return_tensors="pt"), max_new_tokens=new,
                                       do_sample=False, pad_token_id=loaded.tokenizer.eos_token_id)
    assert tree.greedy_text == loaded.tokenizer.decode(greedy[0, len(loaded.tokenizer(prompt)["input_ids"]):])
    assert [n.token_id for n in tree.nodes if n.greedy and n.step == 1] == [greedy[0, -new].item()]


@pytest.mark.parametrize("call, message", [
    (lambda m: inside.score(m, "a"), "nothing to score"),
    (lambda m: inside.score(m, ""), "Type"),
    (lambda m: inside.score(m, "word " * 400), "tokens long"),
    (lambda m: inside.score(models.MINILM_NAME, "A sentence to score."), "causal"),
    (lambda m: inside.logit_lens(models.MINILM_NAME, "A [MASK] here.", 5), "causal language model or a masked"),
    (lambda m: inside.logit_lens(m, "The capital is", 0), "Top-k"),
    (lambda m: inside.logit_lens(m, "The capital is", 21), "Top-k"),
    (lambda m: beam_tree.beam_tree(m, "Once", 1, 5), "beams"),
    (lambda m: beam_tree.beam_tree(m, "Once", 9, 5), "beams"),
    (lambda m: beam_tree.beam_tree(m, "Once", 3, 13), "New tokens"),
    (lambda m: beam_tree.beam_tree(m, "Once", 3, 0), "New tokens"),
])
def test_bad_input_is_named(call, message, tiny_models):
    with pytest.raises(BadInput, match=message):
        call(tiny_models["causal"])


def test_a_masked_lm_needs_a_blank(tiny_models):
    with pytest.raises(BadInput, match=r"\[MASK\]"):
        inside.logit_lens(tiny_models["masked"], "No blank here.", 5)
    assert inside.logit_lens(tiny_models["masked"], "A ___ here.", 5).tokens[2] == "[MASK]"


def test_score_lens_and_tree_take_a_loaded_model_and_look_nothing_up(tiny_models, lookups):
    causal, masked = tiny_models["causal"], tiny_models["masked"]
    by_name = (inside.score(causal, "The cat sat on the mat.").to_json(),
               inside.logit_lens(causal, "The capital is", 4).to_json(),
               inside.logit_lens(masked, "A [MASK] here.", 4).to_json(),
               beam_tree.beam_tree(causal, "Once upon a time", 3, 4).to_json())
    loaded_causal, loaded_masked = models.load(causal, "causal"), models.load(masked, "masked")
    lookups.clear()
    assert (inside.score(loaded_causal, "The cat sat on the mat.").to_json(),
            inside.logit_lens(loaded_causal, "The capital is", 4).to_json(),
            inside.logit_lens(loaded_masked, "A [MASK] here.", 4).to_json(),
            beam_tree.beam_tree(loaded_causal, "Once upon a time", 3, 4).to_json()) == by_name
    assert lookups == []
    with pytest.raises(BadInput, match="causal"):  # a model of another family is still refused
        inside.score(loaded_masked, "A sentence to score.")


def test_each_inside_click_resolves_the_model_once(tiny_models, lookups):
    causal, masked = tiny_models["causal"], tiny_models["masked"]
    clicks = {
        "score": (lambda: tab_inside.on_score(causal, "The cat sat.", "Sat the cat.", "A", tab_inside.HOW_MUCH[0]),
                  ("load", causal, ("causal",))),
        "lens": (lambda: tab_inside.on_lens(causal, "The capital is", 4), ("load", causal, ("causal", "masked"))),
        "lens, masked": (lambda: tab_inside.on_lens(masked, "A [MASK] here.", 4),
                         ("load", masked, ("causal", "masked"))),
        "tree": (lambda: tab_inside.on_tree(causal, "Once upon a time", 3, 4), ("load", causal, ("causal",))),
        "the same tree again": (lambda: tab_inside.on_tree(causal, "Once upon a time", 3, 4),
                                ("load", causal, ("causal",))),
    }
    out = {}
    for click, (run, expected) in clicks.items():
        lookups.clear()
        out[click] = run()
        assert lookups == [expected], click
    assert out["score"][2]["a"] == inside.score(causal, "The cat sat.").to_json()
    assert out["lens"][3] == inside.logit_lens(causal, "The capital is", 4).to_json()
    assert out["tree"][3] == out["the same tree again"][3] == beam_tree.beam_tree(causal, "Once upon a time", 3,
                                                                                    4).to_json()
    assert len(out["tree"][1]) == 3


def test_inside_apis(client, tiny_models):
    causal = tiny_models["causal"]
    out = client.predict("The cat sat on the mat.", causal, api_name="/score")
    assert out["logprobs"][0] is None and out["perplexity"] == pytest.approx(np.exp(out["mean_loss"]))
    lens = client.predict("The capital of France is", causal, 4, api_name="/logit_lens")
    assert len(lens["layers"]) == 3 and len(lens["layers"][0]["top"]) == 4
    assert lens["layers"][-1]["final_token_rank"] == 1
    tree = client.predict("Once upon a time", causal, 3, 4, api_name="/beam_tree")
    assert len(tree["beams"]) == 3 and {n["status"] for n in tree["nodes"]} <= {"kept", "pruned", "finished"}
    with pytest.raises(AppError, match="beams"):
        client.predict("Once", causal, 12, 4, api_name="/beam_tree")
    with pytest.raises(AppError, match="causal"):
        client.predict("<b>x</b> y", tiny_models["masked"], api_name="/score")


def test_each_section_draws_its_example(page):
    open_tab(page, "Next token")
    page.get_by_role("button", name="Score a sentence").click()
    page.get_by_role("radio", name="A", exact=True).check()
    page.get_by_role("radio", name="more than 1,000×").check()
    page.get_by_role("button", name="Score both").click()
    page.get_by_text("times more likely").first.wait_for(timeout=60000)
    page.get_by_role("button", name="Layer by layer").click()
    page.get_by_text("What each layer would predict").filter(visible=True).first.wait_for(timeout=60000)
    page.get_by_role("button", name="Beam search as a tree").click()
    page.get_by_text("Beam search as a tree (outlined").filter(visible=True).first.wait_for(timeout=60000)
    page.get_by_text("Greedy (orange)").first.wait_for()
    screenshot(page, "inside-a-prediction")
