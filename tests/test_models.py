"""The model layer: registry, families, loading once, friendly failures, the offline fallbacks."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from labs.core.models import models, offline_cache
from labs.core.models.models import ModelUnavailable
from labs.core.ui import status


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
    assert "offline" in status.status_line()


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
    with pytest.raises(ModelUnavailable, match=r"\./lab download"):
        models._load_uncached(models.ModelChoice("no-such-org/no-such-model", "masked", "hub",
                                                 "no-such-org/no-such-model", "test"), "mlm")


def test_broken_local_folder_gives_a_friendly_error(tmp_path):
    (tmp_path / "config.json").write_text('{"architectures": ["BertForMaskedLM"], "model_type": "bert"}')
    with pytest.raises(ModelUnavailable, match="could not be loaded"):
        models._load_uncached(models.ModelChoice("broken", "masked", "local", str(tmp_path), "test"), "mlm")


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


@pytest.mark.slow
def test_smollm2_is_converted_once_and_reloaded_from_safetensors():
    import torch

    loaded = models.load(models.SMOLLM2_NAME)
    assert (offline_cache.cache_dir() / "smollm2-135m-instruct" / "model.safetensors").exists()
    ids = loaded.tokenizer("Once upon a", return_tensors="pt")
    with torch.no_grad():
        out = loaded.model.generate(**ids, max_new_tokens=3, do_sample=False)
    continuation = loaded.tokenizer.decode(out[0, ids["input_ids"].shape[1]:])
    assert continuation.strip().lower().startswith("time")
    # A second process must load the cached copy (the GGUF path dequantises again: ~17 s on 2 cores, the copy ~2 s),
    # with no conversion.
    code = ("import logging; logging.basicConfig(level=logging.INFO); from labs.core.models import models; "
            "print('FROM', models.load(models.SMOLLM2_NAME).model.name_or_path)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=os.path.dirname(os.path.dirname(__file__)))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "converting" not in run.stderr
    loaded_from = run.stdout.split("FROM")[1].strip()
    assert Path(loaded_from) == offline_cache.cache_dir() / "smollm2-135m-instruct", loaded_from


# ------------------------------------------------------------ a cache that heals itself


def load_smollm2_in_a_new_process(env: dict) -> subprocess.CompletedProcess:
    code = ("import logging; logging.basicConfig(level=logging.INFO); from labs.core.models import models; from labs.core.ui import status; "
            "m = models.load(models.SMOLLM2_NAME); print('LOADED', m.name); print('STATUS', status.status_line())")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=os.path.dirname(os.path.dirname(__file__)), env=dict(os.environ, **env))


@pytest.mark.slow
def test_an_unwritable_cache_folder_is_replaced_once_and_the_status_line_says_so(tmp_path):
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("x")
    env = {"LAB_CACHE_DIR": str(not_a_folder), "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    first = load_smollm2_in_a_new_process(env)
    assert "LOADED" in first.stdout, first.stderr[-2000:]
    assert "cannot be written" in first.stdout and str(not_a_folder) in first.stdout
    assert (tmp_path / "tmp" / f"lm-lab-cache-{os.getuid()}" / "smollm2-135m-instruct" / "model.safetensors").exists()
    second = load_smollm2_in_a_new_process(env)
    assert "LOADED" in second.stdout and "converting" not in second.stderr  # the copy is reused


@pytest.mark.slow
def test_a_damaged_converted_copy_is_converted_again_once(tmp_path):
    import shutil

    models.load(models.SMOLLM2_NAME)  # makes sure a good copy exists to damage
    good = offline_cache.cache_dir() / offline_cache.FOLDER
    shutil.copytree(good, tmp_path / offline_cache.FOLDER)
    weights = tmp_path / offline_cache.FOLDER / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated, as by a full disk
    first = load_smollm2_in_a_new_process({"LAB_CACHE_DIR": str(tmp_path)})
    assert "LOADED" in first.stdout, first.stderr[-2000:]
    assert "was damaged" in first.stdout and "converting" in first.stderr
    second = load_smollm2_in_a_new_process({"LAB_CACHE_DIR": str(tmp_path)})
    assert "LOADED" in second.stdout and "converting" not in second.stderr and "damaged" not in second.stdout


def test_unfinished_conversions_of_dead_processes_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))
    offline_cache.reset()
    try:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        left_over = tmp_path / f"{offline_cache.FOLDER}.partial-{dead.stdout.strip()}"
        running = tmp_path / f"{offline_cache.FOLDER}.partial-{os.getpid()}"  # a conversion in progress
        for folder in (left_over, running):
            folder.mkdir()
            (folder / "model.safetensors").write_bytes(b"half")
        assert offline_cache.remove_partials() == [left_over]
        assert not left_over.exists() and running.exists()
    finally:
        monkeypatch.undo()
        offline_cache.reset()


def test_extra_models_that_cannot_be_used_are_left_out_and_named(monkeypatch, tmp_path, tiny_models):
    no_weights = tmp_path / "config-only"
    no_weights.mkdir()
    (no_weights / "config.json").write_text('{"architectures": ["BertForMaskedLM"], "model_type": "bert"}')
    monkeypatch.setenv("LAB_EXTRA_MODELS", f"{tmp_path / 'missing'},{no_weights},{os.environ['LAB_EXTRA_MODELS']}")
    models.reset_registry()
    try:
        assert "config-only" not in models.choice_names() and tiny_models["masked"] in models.choice_names()
        line = status.status_line()
        assert "missing: no such folder" in line
        assert "config-only: the folder has a config.json but no weights" in line
        assert "Repo id" not in line
    finally:
        monkeypatch.undo()
        models.reset_registry()
