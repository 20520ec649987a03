"""Attention, inside the transformer step by step: every intermediate of one layer and head, written out
on the model's weights (labs.attention.layers), against the model's own: forward hooks on its modules,
output_attentions, output_hidden_states, transformers' own rotary code and fill-mask pipeline. On tiny random
BERT, GPT-2 and Llama models and on the real offline MiniLM and SmolLM2. Then /forward_steps against
/attention, the course quotes against the documents, the API and the browser."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import TINY_GPT2, open_tab, screenshot
from gradio_client.exceptions import AppError

from labs.attention import compute, quotes, steps
from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.models.registry import ModelChoice
from labs.core.work import lm

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"
PAIR = ("The cat sat on the [MASK].", "It was tired.")


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    """A 2-layer Llama (grouped-query: 4 query heads, 2 key/value heads) with random weights and the tiny
    GPT-2's byte-level tokenizer, loaded as the registry loads every model (eager attention)."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(TINY_GPT2)
    tokenizer.pad_token = tokenizer.eos_token
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    folder = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(folder)
    model = LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    choice = ModelChoice("tiny-llama", "causal", "local", str(folder), "a tiny random Llama")
    return models.LoadedModel(choice, model, tokenizer, "cpu", 0.0, "causal")


def module(root, path: str):
    for name in path.split("."):
        root = root[int(name)] if name.isdigit() else getattr(root, name)
    return root


# Each step's key -> (module path with {L} for the layer, "in" or "out", how to cut the captured tensor).
def whole(t, head, d):
    return t


def head_slice(t, head, d):
    return t[:, head * d:(head + 1) * d]


BERT = {"token": ("embeddings.word_embeddings", "out", whole), "segment": ("embeddings.token_type_embeddings", "out", whole),
        "position": ("embeddings.position_embeddings", "out", whole), "sum": ("embeddings.LayerNorm", "in", whole),
        "embedded": ("embeddings", "out", whole), "x": ("encoder.layer.{L}", "in", whole),
        "q": ("encoder.layer.{L}.attention.self.query", "out", whole),
        "k": ("encoder.layer.{L}.attention.self.key", "out", whole),
        "v": ("encoder.layer.{L}.attention.self.value", "out", whole),
        "q_head": ("encoder.layer.{L}.attention.self.query", "out", head_slice),
        "k_head": ("encoder.layer.{L}.attention.self.key", "out", head_slice),
        "v_head": ("encoder.layer.{L}.attention.self.value", "out", head_slice),
        "context": ("encoder.layer.{L}.attention.self", "out", head_slice),
        "concat": ("encoder.layer.{L}.attention.self", "out", whole),
        "projected": ("encoder.layer.{L}.attention.output.dense", "out", whole),
        "attention_out": ("encoder.layer.{L}.attention", "out", whole),
        "ffn_inner": ("encoder.layer.{L}.intermediate", "out", whole),
        "ffn": ("encoder.layer.{L}.output.dense", "out", whole), "out": ("encoder.layer.{L}", "out", whole)}
GPT2 = {"token": ("wte", "out", whole), "position": ("wpe", "out", whole), "x": ("h.{L}", "in", whole),
        "normed": ("h.{L}.ln_1", "out", whole), "concat": ("h.{L}.attn.c_proj", "in", whole),
        "context": ("h.{L}.attn.c_proj", "in", head_slice), "projected": ("h.{L}.attn.c_proj", "out", whole),
        "attention_out": ("h.{L}.ln_2", "in", whole), "ffn_normed": ("h.{L}.ln_2", "out", whole),
        "ffn_inner": ("h.{L}.mlp.c_proj", "in", whole), "ffn": ("h.{L}.mlp", "out", whole),
        "out": ("h.{L}", "out", whole)}
LLAMA = {"embedded": ("embed_tokens", "out", whole), "x": ("layers.{L}", "in", whole),
         "normed": ("layers.{L}.input_layernorm", "out", whole), "q": ("layers.{L}.self_attn.q_proj", "out", whole),
         "k": ("layers.{L}.self_attn.k_proj", "out", whole), "v": ("layers.{L}.self_attn.v_proj", "out", whole),
         "q_head": ("layers.{L}.self_attn.q_proj", "out", head_slice),
         "concat": ("layers.{L}.self_attn.o_proj", "in", whole),
         "context": ("layers.{L}.self_attn.o_proj", "in", head_slice),
         "projected": ("layers.{L}.self_attn.o_proj", "out", whole),
         "attention_out": ("layers.{L}.post_attention_layernorm", "in", whole),
         "ffn_normed": ("layers.{L}.post_attention_layernorm", "out", whole),
         "ffn_gate": ("layers.{L}.mlp.gate_proj", "out", whole), "ffn_up": ("layers.{L}.mlp.up_proj", "out", whole),
         "ffn_inner": ("layers.{L}.mlp.down_proj", "in", whole), "ffn": ("layers.{L}.mlp", "out", whole),
         "out": ("layers.{L}", "out", whole)}
HOOKS = {"BERT": BERT, "GPT-2": GPT2, "Llama": LLAMA}


def models_own(loaded, r: steps.ForwardSteps) -> tuple[dict, object]:
    """The model's own tensors at every hooked step (its first output when a module returns a tuple), and
    its output with hidden states and attentions, from one plain forward pass of the whole model."""
    table = HOOKS[r.architecture]
    base = lm.encoder_of(loaded)
    captured, handles = {}, []
    for key, (path, side, _) in table.items():
        target = module(base, path.format(L=r.layer))

        def hook(mod, args, kwargs, out, key=key, side=side):
            value = (args[0] if args else next(iter(kwargs.values()))) if side == "in" else \
                (out[0] if isinstance(out, tuple) else out)
            captured[key] = value[0].detach().numpy()
        handles.append(target.register_forward_hook(hook, with_kwargs=True))
    inputs = {"input_ids": torch.tensor([r.ids])}
    if r.architecture == "BERT":
        inputs["token_type_ids"] = torch.tensor([r.segments])
    try:
        with torch.no_grad():
            out = loaded.model(**inputs, output_hidden_states=True, output_attentions=True)
    finally:
        for h in handles:
            h.remove()
    d = r.sizes["head_dim"]
    return {key: cut(captured[key], r.head, d) for key, (_, _, cut) in table.items()}, out


def assert_every_step_is_the_models_own(loaded, r: steps.ForwardSteps):
    own, out = models_own(loaded, r)
    scale = max(1.0, float(np.abs(out.hidden_states[r.layer].numpy()).max()))  # SmolLM2's states reach ~100
    for key, theirs in own.items():
        np.testing.assert_allclose(r.step(key).values, theirs, atol=1e-5 * scale, rtol=1e-4, err_msg=key)
    weights = out.attentions[r.layer][0, r.head].numpy()
    np.testing.assert_allclose(r.step("weights").values, weights, atol=1e-5, err_msg="weights")
    np.testing.assert_allclose(r.step("weights").values.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(r.step("embedded").values, out.hidden_states[0][0].numpy(), atol=1e-5)
    # The scores by hand from the model's own Q and K (after rotation for Llama): QKᵀ, ÷ √d_k, softmax.
    q, k = r.step("q_rotated" if r.architecture == "Llama" else "q_head").values, \
        r.step("k_rotated" if r.architecture == "Llama" else "k_head").values
    scores = q.astype(np.float64) @ k.T.astype(np.float64)
    np.testing.assert_allclose(r.step("scores").values, scores, rtol=1e-4, atol=1e-3 * max(1, np.abs(scores).max()))
    scaled = scores / np.sqrt(r.sizes["head_dim"])
    if r.family == "causal":
        scaled[np.triu_indices(len(r.ids), 1)] = -np.inf
        assert np.all(np.isneginf(r.step("masked").values[np.triu_indices(len(r.ids), 1)]))
    expected = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    np.testing.assert_allclose(r.step("weights").values, expected / expected.sum(axis=1, keepdims=True), atol=1e-4)
    unscaled = np.where(np.isneginf(scaled), -np.inf, scores)
    expected = np.exp(unscaled - unscaled.max(axis=1, keepdims=True))
    np.testing.assert_allclose(r.step("unscaled").values, expected / expected.sum(axis=1, keepdims=True), atol=1e-4)
    return out


@pytest.mark.parametrize("texts,layer,head", [((PAIR[0],), 1, 3), (PAIR, 0, 2)])
def test_tiny_bert_every_step_is_the_models_own(tiny_models, texts, layer, head):
    loaded = models.load(tiny_models["masked"], *steps.FAMILIES)
    r = steps.forward_steps(loaded, texts[0], layer, head, text_b=texts[1] if len(texts) > 1 else "")
    out = assert_every_step_is_the_models_own(loaded, r)
    assert r.architecture == "BERT" and r.tokens[r.position] == "[MASK]"
    assert (r.segments[-1] == 1) == (len(texts) > 1)  # sentence B reads segment row 1
    np.testing.assert_allclose(r.step("out").values, out.hidden_states[layer + 1][0].numpy(), atol=1e-5)
    assert all(s.check.max_abs_diff < 1e-4 for s in r.checks) and len(r.checks) == 3


def test_tiny_bert_mlm_head_equals_the_fill_mask_pipeline(tiny_models):
    from transformers import pipeline

    loaded = models.load(tiny_models["masked"], *steps.FAMILIES)
    r = steps.forward_steps(loaded, PAIR[0], 0, 0)
    fill = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device="cpu")(PAIR[0], top_k=5)
    assert [p["token_id"] for p in r.predictions] == [p["token"] for p in fill]
    np.testing.assert_allclose([p["prob"] for p in r.predictions], [p["score"] for p in fill], rtol=1e-4)
    assert r.prediction_check.max_abs_diff < 1e-4


@pytest.mark.parametrize("layer,head", [(0, 1), (1, 3)])
def test_tiny_gpt2_every_step_and_its_next_token(tiny_models, layer, head):
    loaded = models.load(tiny_models["causal"], *steps.FAMILIES)
    r = steps.forward_steps(loaded, "The cat sat on the mat", layer, head, position=3)
    out = assert_every_step_is_the_models_own(loaded, r)
    assert r.architecture == "GPT-2" and r.position == 3 and "segment" not in [s.key for s in r.steps]
    probs = torch.softmax(out.logits[0, 3], -1).numpy()
    assert [p["token_id"] for p in r.predictions] == list(np.argsort(-probs)[:5])
    assert r.prediction_check.max_abs_diff < 1e-4


@pytest.mark.parametrize("layer,head", [(0, 3), (1, 0)])
def test_tiny_llama_every_step_rotary_and_grouped_query_attention(tiny_llama, layer, head):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    r = steps.forward_steps(tiny_llama, "The dog ran in the park.", layer, head)
    out = assert_every_step_is_the_models_own(tiny_llama, r)
    assert r.architecture == "Llama" and r.sizes["kv_heads"] == 2 and f"key/value head {head // 2}" in \
        r.step("k_head").name
    # Rotation against transformers' own rotary code, on the model's own Q and K.
    q = torch.tensor(r.step("q").values).view(1, len(r.ids), -1, 16).transpose(1, 2)
    k = torch.tensor(r.step("k").values).view(1, len(r.ids), -1, 16).transpose(1, 2)
    cos, sin = tiny_llama.model.model.rotary_emb(q, torch.arange(len(r.ids))[None])
    q_rot, k_rot = apply_rotary_pos_emb(q, k, cos, sin)
    np.testing.assert_allclose(r.step("q_rotated").values, q_rot[0, head].numpy(), atol=1e-5)
    np.testing.assert_allclose(r.step("k_rotated").values, k_rot[0, head // 2].numpy(), atol=1e-5)
    probs = torch.softmax(out.logits[0, -1], -1).numpy()
    assert [p["token_id"] for p in r.predictions] == list(np.argsort(-probs)[:5])
    assert any("Rotary" in n for n in r.notes) and any("Grouped-query" in n for n in r.notes)


def test_minilm_every_step_is_the_models_own_and_its_missing_mlm_head_is_said():
    loaded = models.load(models.MINILM_NAME, *steps.FAMILIES)
    r = steps.forward_steps(loaded, PAIR[0], 3, 7, text_b=PAIR[1])
    assert_every_step_is_the_models_own(loaded, r)
    assert r.sizes["hidden"] == 384 and r.sizes["intermediate"] == 1536 and r.sizes["head_dim"] == 32
    assert r.step("ffn_inner").shape == [len(r.ids), 1536]
    assert r.predictions is None and "no masked-LM head" in r.prediction_note and "not measured here" in \
        r.prediction_note


@pytest.mark.parametrize("layer,head", [(3, 7), (29, 4)])
def test_smollm2_every_step_rotary_rmsnorm_gqa_and_its_next_token(layer, head):
    loaded = models.load(models.SMOLLM2_NAME, *steps.FAMILIES)
    r = steps.forward_steps(loaded, "The capital of France is", layer, head)
    assert_every_step_is_the_models_own(loaded, r)
    assert r.sizes["heads"] == 9 and r.sizes["kv_heads"] == 3 and r.sizes["max_positions"] == 8192
    assert [n.split(":")[0] for n in r.notes][:4] == ["Rotary positions (RoPE)", "RMSNorm, before each sublayer "
                                                      "(pre-norm)", "Grouped-query attention", "A causal mask"]
    assert r.predictions[0]["token"] == "␣Paris" and r.prediction_check.max_abs_diff < 1e-3
    assert r.step("out").check.max_abs_diff < 1e-3  # the last layer: after the model's final norm


@pytest.mark.parametrize("name,texts", [("masked", PAIR), ("minilm", PAIR), ("causal", ("The cat sat", ""))])
def test_the_softmax_is_attentions_own_and_the_embeddings_the_models(tiny_models, name, texts):
    """The acceptance: /forward_steps' attention equals /attention's for the same layer and head; its embedding
    sum equals the model's embeddings output."""
    model = models.MINILM_NAME if name == "minilm" else tiny_models[name]
    result = steps.forward_steps_json(texts[0], model, 1, 2, texts[1])
    shown = compute.attention_result(texts[0], model, texts[1], 1, 2)
    assert result["tokens"] == shown["tokens"] and result["attention"] == shown["weights"]
    loaded = models.load(model, *steps.FAMILIES)
    r = steps.forward_steps(loaded, texts[0], 1, 2, text_b=texts[1])
    own, out = models_own(loaded, r)
    np.testing.assert_allclose(r.step("embedded").values, out.hidden_states[0][0].numpy(), atol=1e-5)
    if "sum" in own:
        np.testing.assert_allclose(r.step("sum").values, own["sum"], atol=1e-6)


def test_batched_hidden_states_equal_one_at_a_time(tiny_models):
    loaded = models.load(tiny_models["masked"], *steps.FAMILIES)
    rows = [loaded.tokenizer(t)["input_ids"] for t in ("A short one.", "A much longer sentence than the first one.")]
    batched = lm.submit_many(loaded, "steps_hidden", [(tuple(r), None) for r in rows], [len(r) for r in rows])
    for r, states in zip(rows, batched):
        with torch.no_grad():
            alone = loaded.model.base_model(input_ids=torch.tensor([r]), output_hidden_states=True).hidden_states
        np.testing.assert_allclose(states, torch.stack(alone, 1)[0].numpy(), atol=1e-5)


def test_bad_input(tiny_models):
    name = tiny_models["masked"]
    with pytest.raises(BadInput, match="layers 0–1"):
        steps.forward_steps_json("The cat", name, 2, 0)
    with pytest.raises(BadInput, match="heads 0–3"):
        steps.forward_steps_json("The cat", name, 0, 4)
    with pytest.raises(BadInput, match="whole number"):
        steps.forward_steps_json("The cat", name, "one", 0)
    with pytest.raises(BadInput, match="position"):
        steps.forward_steps_json("The cat", name, 0, 0, "", 40)
    with pytest.raises(BadInput, match="at most 64"):
        steps.forward_steps_json(" ".join(["word"] * 80), name, 0, 0)
    with pytest.raises(BadInput, match="Type a sentence"):
        steps.forward_steps_json("  ", name, 0, 0)
    with pytest.raises(BadInput, match="not a masked language model or an encoder or a causal"):
        steps.forward_steps_json("The cat", tiny_models["seq2seq"], 0, 0)


def test_every_quote_is_an_entry_of_the_course_table():
    """The panels quote course_quotes' entries (tests/test_course_quotes.py checks those under their headings)."""
    from labs.core.ui import course_quotes

    assert len(quotes.ALL) == 9 and all(course_quotes.get(q.id) is q for q in quotes.ALL)
    assert quotes.to_json(quotes.COST) == [{"where": "Summary sheet, “BERT Architecture”",
                                            "text": "Attention is O(n²) in sequence length"}]


# ------------------------------------------------------------ API and browser


def test_forward_steps_api(client, tiny_models):
    result = client.predict("The cat sat on the [MASK].", tiny_models["masked"], 1, 2, "", None,
                            api_name="/forward_steps")
    shown = client.predict("The cat sat on the [MASK].", tiny_models["masked"], "", 1, 2, api_name="/attention")
    assert result["attention"] == shown["weights"] and result["tokens"][result["position"]] == "[MASK]"
    assert [s["key"] for s in result["steps"]][:5] == ["token", "segment", "position", "sum", "embedded"]
    with pytest.raises(AppError, match="layers 0–1"):
        client.predict("The cat", tiny_models["masked"], 5, 0, "", None, api_name="/forward_steps")


def test_steps_panel_draws_in_the_browser(patient_page):
    page = patient_page
    open_tab(page, "Attention")
    page.get_by_text("Tokens (following").first.wait_for(timeout=120000)
    # A table's rows are drawn when it is on screen.
    page.get_by_text("Every step of the chosen layer and head").first.scroll_into_view_if_needed()
    page.get_by_text("Residual + LayerNorm: the layer's output").first.wait_for(timeout=30000)
    assert page.get_by_text("✓ max |diff|").count() >= 1
    page.locator(".js-plotly-plot").filter(has_text="Softmax with ÷ √d_k").first.wait_for(timeout=30000)
    assert page.get_by_text("Without the division by √").count() >= 1  # the chart's text alternative says it too
    page.get_by_text("Inside the transformer, step by step").first.scroll_into_view_if_needed()
    screenshot(page, "attention_forward_steps")
    assert page.outside_requests == []


def test_the_panel_clamps_a_links_layer_and_head_to_the_models(tiny_models):
    from labs.attention import tab_steps

    out = tab_steps.on_steps("The cat sat on the [MASK].", "", tiny_models["masked"], 29, 9, "auto")
    result, rows = out[-1], out[1]
    assert (result["layer"], result["head"]) == (1, 3) and rows[-1][1] == "Residual + LayerNorm: the layer's output"
    assert "0.0" not in out[5] and "Without the division by √16" in out[5]
