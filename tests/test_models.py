"""The model layer: registry, families, loading once, friendly failures, the offline fallbacks."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from labs import models
from labs.models import ModelUnavailable


def test_family_is_read_from_the_config_architectures():
    assert models.family_from_config({"architectures": ["BertForMaskedLM"]}) == "masked"
    assert models.family_from_config({"architectures": ["GPT2LMHeadModel"]}) == "causal"
    assert models.family_from_config({"architectures": ["LlamaForCausalLM"]}) == "causal"
    assert models.family_from_config({"architectures": ["BertModel"]}) == "encoder"


def test_extra_models_are_offered_in_their_family(tiny_models):
    assert tiny_models["masked"] in models.choice_names("masked")
    assert tiny_models["causal"] in models.choice_names("causal")
    assert tiny_models["masked"] not in models.choice_names("causal")
    assert models.get_choice(tiny_models["masked"]).source == "local"


def test_offline_fallbacks_are_registered_and_hub_models_are_not_when_offline():
    assert not models.hub_online()  # HF_HUB_OFFLINE=1 in the tests
    names = models.choice_names()
    assert models.SMOLLM2_NAME in names and models.MINILM_NAME in names
    assert "gpt2" not in names or models.in_hub_cache("gpt2")
    assert models.default_name("causal") == models.SMOLLM2_NAME or models.in_hub_cache("gpt2")
    assert "offline" in models.status_line()


def test_a_bad_extra_model_entry_is_skipped_not_fatal(monkeypatch, tmp_path, tiny_models):
    monkeypatch.setenv("LAB_EXTRA_MODELS", f"{tmp_path / 'missing'},{os.environ['LAB_EXTRA_MODELS']}")
    models.reset_registry()
    try:
        assert tiny_models["masked"] in models.choice_names("masked")
    finally:
        monkeypatch.undo()
        models.reset_registry()


def test_load_gives_an_eval_model_once_even_from_many_threads(tiny_models):
    results = []
    threads = [threading.Thread(target=lambda: results.append(models.load(tiny_models["causal"]))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(r.model) for r in results}) == 1
    loaded = results[0]
    assert not loaded.model.training
    assert loaded.model.config._attn_implementation == "eager"
    assert tiny_models["causal"] in models.loaded_names()


def test_unknown_model_gives_a_friendly_error():
    with pytest.raises(ModelUnavailable, match="no model called 'nope'"):
        models.load("nope")
    with pytest.raises(ModelUnavailable, match="Pick one"):
        models.load("")


def test_hub_model_offline_says_how_to_get_it():
    with pytest.raises(ModelUnavailable, match=r"python -m labs\.download"):
        models._load_uncached(models.ModelChoice("no-such-org/no-such-model", "masked", "hub",
                                                 "no-such-org/no-such-model", "test"))


def test_broken_local_folder_gives_a_friendly_error(tmp_path):
    (tmp_path / "config.json").write_text('{"architectures": ["BertForMaskedLM"], "model_type": "bert"}')
    with pytest.raises(ModelUnavailable, match="could not be loaded"):
        models._load_uncached(models.ModelChoice("broken", "masked", "local", str(tmp_path), "test"))


def test_device_override(monkeypatch):
    monkeypatch.setenv("LAB_DEVICE", "cpu")
    assert models.pick_device() == "cpu"
    monkeypatch.delenv("LAB_DEVICE")
    assert models.pick_device() in ("cuda", "mps", "cpu")


# ------------------------------------------------------------ the real offline models


def test_minilm_loads_as_a_bert_encoder():
    loaded = models.load(models.MINILM_NAME)
    assert loaded.source == "offline"
    assert loaded.model.config.num_hidden_layers == 6 and loaded.model.config.num_attention_heads == 12
    assert loaded.tokenizer.tokenize("unbelievable") == ["unbelievable"] or "##" in "".join(
        loaded.tokenizer.tokenize("unbelievably tokenised"))


def test_smollm2_is_converted_once_and_reloaded_from_safetensors():
    import torch

    loaded = models.load(models.SMOLLM2_NAME)
    assert (models.cache_dir() / "smollm2-135m-instruct" / "model.safetensors").exists()
    ids = loaded.tokenizer("Once upon a", return_tensors="pt")
    with torch.no_grad():
        out = loaded.model.generate(**ids, max_new_tokens=3, do_sample=False)
    continuation = loaded.tokenizer.decode(out[0, ids["input_ids"].shape[1]:])
    assert continuation.strip().lower().startswith("time")
    # A second process must load the cached copy: no conversion, and quickly.
    code = ("import logging,time; logging.basicConfig(level=logging.INFO); from labs import models; "
            "t=time.perf_counter(); models.load(models.SMOLLM2_NAME); print('SECONDS', time.perf_counter()-t)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(__file__)))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "converting" not in run.stderr
    seconds = float(run.stdout.split("SECONDS")[1])
    assert seconds < 15, seconds  # generous: the GGUF path takes ~17 s on 2 cores, the copy ~2 s
