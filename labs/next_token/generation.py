"""Next token, generation: greedy, sampling and beam search with model.generate() (exercise B5),
whole or streamed token by token, and the exact generate() call as code."""

from __future__ import annotations

import threading

from labs.core.errors import BadInput, check_choice, check_int
from labs.core.models import models
from labs.core.work import lm
from labs.next_token import streaming
from labs.next_token.compute import (
    MAX_PROMPT_TOKENS,
    causal_lm,
    check_knobs,
    check_prompt,
)

STRATEGIES = ("greedy", "sample", "beam")
MAX_NEW_TOKENS = 200
MAX_BEAMS = 8
# Beam search keeps every beam going: beams × new tokens bounds its cost (8 × 40 or 4 × 80 take a few
# seconds on SmolLM2), so one student's search cannot hold the model for a minute.
BEAM_BUDGET = 320
# Generations in flight at once (the Generate button and /generate together): greedy ones share batches;
# sampling and beams run two at a time.
GENERATING = 32
ENDED_AT_ONCE = "The model ended the text at once (it produced its end-of-text token first)."


def generate_kwargs(strategy: str, max_new_tokens: int, temperature: float, top_k: int, top_p: float,
                    num_beams: int) -> dict:
    """The keyword arguments for model.generate() for these settings: exactly what exercise B5 writes."""
    if strategy == "greedy" or (strategy == "sample" and temperature == 0):
        return {"max_new_tokens": max_new_tokens, "do_sample": False}
    if strategy == "sample":
        return {"max_new_tokens": max_new_tokens, "do_sample": True, "temperature": temperature,
                "top_k": top_k, "top_p": top_p}
    return {"max_new_tokens": max_new_tokens, "do_sample": False, "num_beams": num_beams,
            "num_return_sequences": num_beams, "early_stopping": True}


def check_generate(prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed) -> dict:
    strategy = check_choice(strategy, STRATEGIES, "Strategy")
    temperature, top_k, top_p = check_knobs(temperature, top_k, top_p)
    settings = {"prompt": check_prompt(prompt), "strategy": strategy,
                "max_new_tokens": check_int(max_new_tokens, "Max new tokens", 1, MAX_NEW_TOKENS),
                "temperature": temperature, "top_k": top_k, "top_p": top_p,
                "num_beams": check_int(num_beams, "Beams", 1, MAX_BEAMS), "seed": check_int(seed, "Seed", 0, 2**32 - 1)}
    beams, new = settings["num_beams"], settings["max_new_tokens"]
    if strategy == "beam" and beams * new > BEAM_BUDGET:
        raise BadInput(f"Beam search with {beams} beams and {new} new tokens is {beams * new} beam-tokens; a shared "
                       f"server allows {BEAM_BUDGET}. Use fewer (for example {beams} beams and "
                       f"{BEAM_BUDGET // beams} tokens).")
    return settings


def generate_code(loaded: models.LoadedModel, settings: dict) -> str:
    """The same generate() call as a student would write it, for these settings."""
    kwargs = generate_kwargs(settings["strategy"], settings["max_new_tokens"], settings["temperature"],
                             settings["top_k"], settings["top_p"], settings["num_beams"])
    args = ",\n    ".join(f"{k}={v!r}" for k, v in kwargs.items())
    location = loaded.choice.location
    return (f"from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed\n\n"
            f"tokenizer = AutoTokenizer.from_pretrained({location!r})\n"
            f"model = AutoModelForCausalLM.from_pretrained({location!r})\n"
            f"inputs = tokenizer({settings['prompt']!r}, return_tensors=\"pt\")\n"
            f"set_seed({settings['seed']})\n"
            f"out = model.generate(\n    **inputs,\n    {args},\n    pad_token_id=tokenizer.eos_token_id,\n)\n"
            f"print(tokenizer.batch_decode(out[:, inputs[\"input_ids\"].shape[1]:], skip_special_tokens=True))\n")


def prepare(loaded: models.LoadedModel, settings: dict) -> tuple[dict, str]:
    """generate()'s inputs for these settings (one prompt), and a note when something was cut. The
    prompt and the new tokens together must fit the model's positions: the prompt keeps (the end of)
    its text, and the new tokens get the room that is left."""
    import torch

    ids, note = lm.causal_ids(loaded, settings["prompt"], MAX_PROMPT_TOKENS)
    new = min(settings["max_new_tokens"], loaded.max_tokens - len(ids))
    if new < settings["max_new_tokens"]:
        note = " ".join(filter(None, [note, f"{loaded.name} reads {loaded.max_tokens} tokens in all, so this "
                                            f"{len(ids)}-token prompt leaves room for {new} new tokens."]))
    input_ids = torch.tensor([ids], device=loaded.device)
    kwargs = generate_kwargs(settings["strategy"], new, settings["temperature"], settings["top_k"],
                             settings["top_p"], settings["num_beams"])
    kwargs.update(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                  pad_token_id=loaded.tokenizer.pad_token_id)
    return kwargs, note


def is_greedy(settings: dict) -> bool:
    """Greedy decoding (sampling at temperature 0 is greedy too): these requests are batched."""
    return settings["strategy"] != "beam" and not generate_kwargs(
        settings["strategy"], 1, settings["temperature"], 0, 1.0, 1)["do_sample"]


def start(loaded: models.LoadedModel, settings: dict, stop: threading.Event | None = None):
    """Start a greedy (batched) or sampled (alone) generation; returns the collector its tokens
    arrive in, and the thread of a generation that runs alone (None in a batch)."""
    from transformers import set_seed

    kwargs, _ = prepare(loaded, settings)
    collector = streaming.TokenCollector(kwargs["max_new_tokens"], loaded.tokenizer.eos_token_id, stop)
    if is_greedy(settings):
        streaming.start_greedy(loaded, kwargs["input_ids"][0].tolist(), collector)
        return collector, None

    def sample():
        set_seed(settings["seed"])
        loaded.model.generate(**kwargs, streamer=collector, stopping_criteria=[streaming.RowsFinished([collector])])

    return collector, streaming.start_alone(sample, collector)


def stream(loaded: models.LoadedModel, prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed,
           stop: threading.Event | None = None):
    """Greedy or sampled text as it is produced (yields the text so far). Closing the generator, or
    `stop`, ends this generation at the next token (a batch goes on for the others)."""
    settings = check_generate(prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed)
    loaded = causal_lm(loaded)
    collector, alone = start(loaded, settings, stop)
    try:
        yield from streaming.read(loaded.tokenizer, collector)
    finally:
        collector.stop.set()
        if alone is not None:
            alone.join(timeout=30)  # stops at its next token; a batch goes on for the others


def generate(loaded: models.LoadedModel, prompt, strategy="greedy", max_new_tokens=30, temperature=1.0, top_k=50,
             top_p=1.0, num_beams=4, seed=0) -> dict:
    """Run model.generate() with these settings; beam search returns every beam, best first. Greedy
    requests that arrive together share one batched generate()."""
    settings = check_generate(prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed)
    loaded = causal_lm(loaded)
    if is_greedy(settings):
        texts = [(list(streaming.read(loaded.tokenizer, start(loaded, settings)[0])) or [""])[-1]]
        scores, note = [None], prepare(loaded, settings)[1]
    else:
        texts, scores, note = generate_alone(loaded, settings)
    completions = sorted(({"text": t, "score": s} for t, s in zip(texts, scores)),
                         key=lambda c: -(c["score"] if c["score"] is not None else 0))
    if all(not t.strip() for t in texts):
        note = " ".join(filter(None, [note, ENDED_AT_ONCE]))
    return {"model": loaded.name, "strategy": settings["strategy"], "completions": completions, "note": note}


def generate_alone(loaded: models.LoadedModel, settings: dict) -> tuple[list[str], list, str]:
    """Sampling (its seed must give the same text however many students sample) or beam search."""
    import torch
    from transformers import set_seed

    kwargs, note = prepare(loaded, settings)
    beams = settings["strategy"] == "beam" and settings["num_beams"] > 1
    with streaming.alone, torch.no_grad():
        set_seed(settings["seed"])
        out = loaded.model.generate(**kwargs, return_dict_in_generate=True, output_scores=beams,
                                    max_time=streaming.MAX_SECONDS)
    texts = loaded.tokenizer.batch_decode(out.sequences[:, kwargs["input_ids"].shape[1]:], skip_special_tokens=True)
    return texts, out.sequences_scores.tolist() if beams else [None] * len(texts), note


def generate_json(prompt: str, model: str, strategy: str = "greedy", max_new_tokens: int = 30,
                  temperature: float = 1.0, top_k: int = 50, top_p: float = 1.0, num_beams: int = 4,
                  seed: int = 0) -> dict:
    """The `generate` API: the continuation(s) for these settings; beam search lists every beam. The
    model (a name from the client) is resolved once, here."""
    return generate(models.load(model, "causal"), prompt, strategy, max_new_tokens, temperature, top_k, top_p,
                    num_beams, seed)
