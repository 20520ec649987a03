"""The larger models where a GPU is (registry.GPU_MODELS: SmolLM2-1.7B, Qwen2.5-1.5B, GPT-2 XL, BERT-large), tested
on tiny random models of the same architectures (Llama, Qwen2, GPT-2, BERT) added as GPU-only through
LAB_GPU_MODELS: offered only where a GPU is, after the other models; their memory checked before they load
(against the parameters of the model itself); refused with a sentence where no GPU is; and on ZeroGPU sent,
whole, to a GPU call, whose answer equals the one computed here."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, TINY_GPT2, WORK
from test_zerogpu import comparable, forked

from labs.core.models import fits, models, offered, registry
from labs.core.models.registry import ModelUnavailable
from labs.core.work import zerogpu

ARCHITECTURES = {"tiny-llama-gpu": "LlamaForCausalLM", "tiny-qwen2-gpu": "Qwen2ForCausalLM",
                 "tiny-gpt2-gpu": "GPT2LMHeadModel", "tiny-bert-large-gpu": "BertForMaskedLM"}


def build(name: str, architecture: str) -> Path:
    """A 2-layer model of this architecture with random weights; the causal ones with the tiny GPT-2's BPE."""
    import torch
    import transformers
    from transformers import AutoTokenizer

    folder = WORK / name
    if (folder / "config.json").exists():
        return folder
    torch.manual_seed(0)
    if architecture == "BertForMaskedLM":
        from conftest import build_tiny_bert

        build_tiny_bert(folder)
        return folder
    tokenizer = AutoTokenizer.from_pretrained(TINY_GPT2)
    sizes = dict(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=128, num_key_value_heads=2)
    config = {"LlamaForCausalLM": lambda: transformers.LlamaConfig(**sizes),
              "Qwen2ForCausalLM": lambda: transformers.Qwen2Config(**sizes),
              "GPT2LMHeadModel": lambda: transformers.GPT2Config(vocab_size=len(tokenizer), n_embd=64, n_layer=2,
                                                                 n_head=4, n_positions=128)}[architecture]()
    config.eos_token_id = config.bos_token_id = tokenizer.eos_token_id
    getattr(transformers, architecture)(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def gpu_folders(tiny_models):
    return {name: build(name, arch) for name, arch in ARCHITECTURES.items()}


@pytest.fixture
def gpu_offered(gpu_folders, monkeypatch):
    """This server as one with a GPU, LAB_GPU_MODELS naming the tiny models."""
    monkeypatch.setenv("LAB_GPU_MODELS", ",".join(str(f) for f in gpu_folders.values()))
    monkeypatch.setattr(offered, "gpu_here", lambda: True)
    models.reset_registry()
    yield gpu_folders
    monkeypatch.undo()
    models.reset_registry()


def test_the_larger_models_are_offered_only_where_a_gpu_is_after_the_others(gpu_folders, gpu_offered, monkeypatch):
    causal = models.choice_names("causal")
    assert causal[-3:] == ["tiny-llama-gpu", "tiny-qwen2-gpu", "tiny-gpt2-gpu"]
    assert models.choice_names("masked")[-1] == "tiny-bert-large-gpu"
    assert models.gpu_model_names() == set(ARCHITECTURES)
    assert all(models.get_choice(n).needs_gpu for n in ARCHITECTURES)
    assert not models.get_choice("tiny-gpt2").needs_gpu  # the same architecture, added as usual: the CPU's
    monkeypatch.setattr(offered, "gpu_here", lambda: False)
    models.reset_registry()
    assert not set(ARCHITECTURES) & set(models.registry()) and models.gpu_model_names() == set()


def test_the_curated_larger_models_are_real_published_checkpoints_of_these_architectures():
    assert [c.location for c in registry.GPU_MODELS] == [
        "HuggingFaceTB/SmolLM2-1.7B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "openai-community/gpt2-xl",
        "google-bert/bert-large-uncased"]
    assert all(c.needs_gpu and c.on_demand and c.source == "hub" for c in registry.GPU_MODELS)


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_the_memory_a_model_needs_is_its_parameters_counted_on_the_meta_device(name, gpu_folders):
    import transformers

    head = "AutoModelForMaskedLM" if "bert" in name else "AutoModelForCausalLM"
    real = getattr(transformers, head).from_pretrained(gpu_folders[name])
    assert fits.parameters(str(gpu_folders[name]), head, True) == sum(p.numel() for p in real.parameters())


def test_a_model_that_does_not_fit_is_refused_with_a_sentence(gpu_offered, monkeypatch):
    import torch

    choice = models.get_choice("tiny-llama-gpu")
    needed = fits.check(choice, "AutoModelForCausalLM", "cpu", True)
    params = fits.parameters(choice.location, "AutoModelForCausalLM", True)
    assert needed == int(params * 4 * fits.HEADROOM)  # float32 on the CPU
    assert fits.load_dtype(choice, "cuda") == torch.bfloat16 and fits.load_dtype(choice, "cpu") == torch.float32
    monkeypatch.setattr(fits, "free_bytes", lambda where: needed - 1)
    with pytest.raises(ModelUnavailable, match=r"needs about 0\.0 GB of memory and this server has"):
        fits.check(choice, "AutoModelForCausalLM", "cpu", True)


def test_a_larger_model_is_refused_where_no_gpu_is(gpu_offered, monkeypatch):
    monkeypatch.delenv("LAB_DEVICE", raising=False)
    with pytest.raises(ModelUnavailable, match="runs on a GPU only") as refused:
        models.load("tiny-qwen2-gpu")
    assert "used up" not in str(refused.value)
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")  # the app's side of ZeroGPU: only a GPU call may load it
    with pytest.raises(ModelUnavailable, match="GPU time for today may be used up"):
        models.load("tiny-qwen2-gpu")
    assert "tiny-qwen2-gpu" not in models.loaded_names()


def test_on_zero_gpu_a_request_naming_a_larger_model_runs_whole_in_a_gpu_call(gpu_offered, monkeypatch):
    from labs.next_token import compute

    monkeypatch.setenv("LAB_DEVICE", "cpu")  # no GPU here: the forked worker runs it on its CPU, on purpose
    monkeypatch.setattr(zerogpu, "_installed", True)
    calls = []

    def gpu_call(payload, seconds):
        calls.append(seconds)
        return next(forked(zerogpu._call_in_gpu, payload, seconds))

    monkeypatch.setattr(zerogpu, "_gpu_call", gpu_call)
    # An earlier test in this process may have loaded it here: start from a cache without it.
    monkeypatch.setattr(models, "_loaded", {k: v for k, v in models._loaded.items()
                                                   if k[0] != "tiny-llama-gpu"})
    endpoint = zerogpu.routed(compute.next_token_json)
    there = endpoint("The cat sat on the", "tiny-llama-gpu")
    assert len(calls) == 1 and "tiny-llama-gpu" not in models.loaded_names()  # loaded in the worker only
    small = endpoint("The cat sat on the", "tiny-gpt2")  # a model the CPU serves: no GPU call
    assert len(calls) == 1 and small["model"] == "tiny-gpt2"
    monkeypatch.setattr(zerogpu, "_installed", False)
    here = compute.next_token_json("The cat sat on the", "tiny-llama-gpu")  # the same request, computed here
    assert comparable(there) == comparable(here) and there["distribution"][0]["token"] == here["distribution"][0]["token"]


def test_a_gpu_space_preloads_the_larger_models_and_the_lectures_defaults():
    import yaml

    listed = [entry.split()[0] for entry in yaml.safe_load((ROOT / "deploy" / "space-gpu.yml").read_text())[
        "preload_from_hub"]]
    assert len(listed) <= 10  # Spaces preload at most 10 repositories (tests/test_app.py)
    assert {c.location for c in registry.GPU_MODELS} | {"bert-base-uncased", "gpt2", "t5-small"} <= set(listed)
    assert set(listed) <= {c.location for c in registry.GPU_MODELS + registry.PRELOADED}
