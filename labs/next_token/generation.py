"""Next token, generation: greedy, sampling and beam search with model.generate() (exercise B5),
whole or streamed token by token, and the exact generate() call as code."""

from __future__ import annotations

import threading
import time

from labs import lm, models
from labs.errors import check_choice, check_int
from labs.next_token.compute import causal_lm, check_knobs, check_prompt

STRATEGIES = ("greedy", "sample", "beam")
MAX_NEW_TOKENS = 200
MAX_BEAMS = 8
STREAM_GAP = 0.04  # seconds between updates: tokens arrive in small batches, so the reader wakes less often
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
    return {"prompt": check_prompt(prompt), "strategy": strategy,
            "max_new_tokens": check_int(max_new_tokens, "Max new tokens", 1, MAX_NEW_TOKENS),
            "temperature": temperature, "top_k": top_k, "top_p": top_p,
            "num_beams": check_int(num_beams, "Beams", 1, MAX_BEAMS), "seed": check_int(seed, "Seed", 0, 2**32 - 1)}


def generate_code(model_name: str, settings: dict) -> str:
    """The same generate() call as a student would write it, for these settings."""
    kwargs = generate_kwargs(settings["strategy"], settings["max_new_tokens"], settings["temperature"],
                             settings["top_k"], settings["top_p"], settings["num_beams"])
    args = ",\n    ".join(f"{k}={v!r}" for k, v in kwargs.items())
    location = models.get_choice(model_name).location
    return (f"from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed\n\n"
            f"tokenizer = AutoTokenizer.from_pretrained({location!r})\n"
            f"model = AutoModelForCausalLM.from_pretrained({location!r})\n"
            f"inputs = tokenizer({settings['prompt']!r}, return_tensors=\"pt\")\n"
            f"set_seed({settings['seed']})\n"
            f"out = model.generate(\n    **inputs,\n    {args},\n    pad_token_id=tokenizer.eos_token_id,\n)\n"
            f"print(tokenizer.batch_decode(out[:, inputs[\"input_ids\"].shape[1]:], skip_special_tokens=True))\n")


class StopFlag:
    """A StoppingCriteria that ends generate() when the student presses Stop (or leaves)."""

    def __init__(self):
        self.event = threading.Event()

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        return torch.full((input_ids.shape[0],), self.event.is_set(), dtype=torch.bool, device=input_ids.device)


def prepare(loaded: models.LoadedModel, settings: dict) -> tuple[dict, str]:
    """generate()'s inputs for these settings, and a note when the prompt was cut."""
    import torch

    ids, note = lm.causal_ids(loaded, settings["prompt"])
    input_ids = torch.tensor([ids], device=loaded.device)
    kwargs = generate_kwargs(settings["strategy"], settings["max_new_tokens"], settings["temperature"],
                             settings["top_k"], settings["top_p"], settings["num_beams"])
    kwargs.update(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                  pad_token_id=loaded.tokenizer.pad_token_id)
    return kwargs, note


def generate(model_name, prompt, strategy="greedy", max_new_tokens=30, temperature=1.0, top_k=50, top_p=1.0,
             num_beams=4, seed=0) -> dict:
    """Run model.generate() with these settings; beam search returns every beam, best first."""
    import torch
    from transformers import set_seed

    settings = check_generate(prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed)
    loaded = causal_lm(model_name)
    kwargs, note = prepare(loaded, settings)
    beams = settings["strategy"] == "beam" and settings["num_beams"] > 1
    set_seed(settings["seed"])
    with torch.no_grad():
        out = loaded.model.generate(**kwargs, return_dict_in_generate=True, output_scores=beams)
    start = kwargs["input_ids"].shape[1]
    texts = loaded.tokenizer.batch_decode(out.sequences[:, start:], skip_special_tokens=True)
    scores = out.sequences_scores.tolist() if beams else [None] * len(texts)
    completions = sorted(({"text": t, "score": s} for t, s in zip(texts, scores)),
                         key=lambda c: -(c["score"] if c["score"] is not None else 0))
    if all(not t.strip() for t in texts):
        note = " ".join(filter(None, [note, ENDED_AT_ONCE]))
    return {"model": loaded.name, "strategy": settings["strategy"], "completions": completions, "note": note}


def generate_json(prompt: str, model: str, strategy: str = "greedy", max_new_tokens: int = 30,
                  temperature: float = 1.0, top_k: int = 50, top_p: float = 1.0, num_beams: int = 4,
                  seed: int = 0) -> dict:
    """The `generate` API: the continuation(s) for these settings; beam search lists every beam."""
    return generate(model, prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed)


class TokenCollector:
    """A generate() streamer that only collects the new token ids (no decoding in the generation
    thread, unlike TextIteratorStreamer) and wakes the reader; the reader decodes what has arrived."""

    def __init__(self):
        self.ids: list[int] = []
        self.done = False
        self.error: Exception | None = None
        self.wake = threading.Event()
        self._prompt_seen = False

    def put(self, value) -> None:
        if not self._prompt_seen:  # generate() first sends the prompt
            self._prompt_seen = True
            return
        self.ids.extend(value.view(-1).tolist())
        self.wake.set()

    def end(self) -> None:
        self.done = True
        self.wake.set()


def stream(model_name, prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed):
    """Greedy or sampled text as it is produced (yields the text so far). Closing the generator
    (Stop in the UI) stops generate() at the next token and frees the worker."""
    from transformers import set_seed

    settings = check_generate(prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed)
    loaded = causal_lm(model_name)
    kwargs, _ = prepare(loaded, settings)
    collector, stop = TokenCollector(), StopFlag()

    def run():
        import torch

        try:
            set_seed(settings["seed"])
            with torch.no_grad():
                loaded.model.generate(**kwargs, streamer=collector, stopping_criteria=[stop])
        except Exception as exc:  # re-raised in the reader, which the UI turns into a message
            collector.error = exc
        finally:
            collector.end()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        yield from read_stream(loaded.tokenizer, collector)
    finally:
        stop.event.set()
        worker.join(timeout=30)


def read_stream(tokenizer, collector: TokenCollector):
    """The text so far, each time new tokens have arrived; the collector's error at the end."""
    text = ""
    while True:
        collector.wake.wait()
        collector.wake.clear()
        finished = collector.done
        current = tokenizer.decode(collector.ids[:], skip_special_tokens=True)
        if not finished:
            current = current.rstrip("\ufffd")  # half of a multi-byte character: wait for the rest
        if current != text:
            text = current
            yield text
        if finished:
            break
        time.sleep(STREAM_GAP)
    if collector.error is not None:
        raise collector.error
