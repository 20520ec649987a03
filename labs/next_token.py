"""Lab 2, "Next token": a causal LM's next-token distribution; temperature, top-k and top-p;
greedy vs sampling vs beam search with `generate()` (Part B exercises B2 and B5)."""

from __future__ import annotations

import functools
import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from labs import models
from labs.errors import BadInput, check_int

TITLE = "Next token"
TOP_N = 20
EXAMPLE = "Once upon a time, there was a"
STRATEGIES = ("greedy", "sample", "beam")

# ---------------------------------------------------------------- validation


def check_prompt(prompt, allow_empty: bool = False) -> str:
    if not isinstance(prompt, str) or (not prompt.strip() and not allow_empty):
        raise BadInput("Type a prompt first, for example: Once upon a time, there was a")
    return prompt


def check_knobs(temperature, top_k, top_p) -> tuple[float, int, float]:
    try:
        temperature, top_p = float(temperature), float(top_p)
        top_k_f = float(top_k)
    except (TypeError, ValueError):
        raise BadInput("Temperature, top-k and top-p must be numbers.") from None
    if not 0 <= temperature <= 5 or math.isnan(temperature):
        raise BadInput(f"Temperature must be between 0 (greedy) and 5, not {temperature}.")
    if not 0 < top_p <= 1:
        raise BadInput(f"Top-p must be above 0 and at most 1, not {top_p}.")
    if top_k_f < 0 or top_k_f != int(top_k_f):
        raise BadInput(f"Top-k must be a whole number, 0 (off) or more, not {top_k}.")
    return temperature, int(top_k_f), top_p


# ---------------------------------------------------------------- the distribution


def causal_lm(model_name: str) -> models.LoadedModel:
    loaded = models.load(model_name)
    if loaded.choice.family != "causal":
        raise BadInput(f"'{model_name}' is not a causal language model; pick one such as gpt2.")
    return loaded


def prompt_ids(loaded: models.LoadedModel, prompt: str) -> tuple[list[int], str]:
    """Token ids for the prompt; an empty prompt starts from the BOS token, and a prompt longer
    than the model's context keeps its end (and says so)."""
    tokenizer = loaded.tokenizer
    ids = tokenizer(prompt)["input_ids"] if prompt.strip() else []
    if not ids:
        start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        ids = [start]
    limit = loaded.max_tokens - 1  # room for the token it predicts
    if len(ids) > limit:
        return ids[-limit:], f"The prompt is {len(ids)} tokens; the model reads {limit}, so only the end was kept."
    return ids, ""


@functools.lru_cache(maxsize=64)
def next_logits(model_name: str, prompt: str):
    """One forward pass per (model, prompt): the logits for the next token, as float64 numpy.
    Cached, so moving a slider re-shapes the chart without running the model again."""
    import torch

    loaded = causal_lm(model_name)
    ids, note = prompt_ids(loaded, prompt)
    with torch.no_grad():
        logits = loaded.model(torch.tensor([ids], device=loaded.device)).logits[0, -1]
    return models.readable_tokens(loaded.tokenizer, ids), logits.double().cpu().numpy(), note


def shape(logits: np.ndarray, temperature: float, top_k: int, top_p: float) -> tuple[np.ndarray, np.ndarray]:
    """softmax(logits / T), and which tokens top-k and then top-p keep (as generate() applies them:
    temperature, then top-k, then top-p on what top-k left). T = 0 is greedy: all on the arg-max."""
    if temperature == 0:
        probs = np.zeros_like(logits)
        probs[int(np.argmax(logits))] = 1.0
        return probs, probs > 0
    scaled = logits / temperature
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    kept = np.ones(len(logits), dtype=bool)
    if 0 < top_k < len(logits):
        kept[np.argsort(-logits, kind="stable")[top_k:]] = False
    if top_p < 1:
        renormed = np.where(kept, probs, 0.0)
        renormed /= renormed.sum()
        order = np.argsort(-renormed, kind="stable")
        before = np.cumsum(renormed[order]) - renormed[order]  # mass of the more likely tokens
        drop = order[before >= top_p]
        kept[drop] = False
        kept[order[0]] = True  # never empty
    return probs, kept


@dataclass
class Entry:
    token: str
    token_id: int
    logit: float
    prob: float
    kept: bool


@dataclass
class Distribution:
    model: str
    source: str
    prompt_tokens: list[str]
    entropy: float  # nats, of the temperature-scaled distribution over the whole vocabulary
    entries: list[Entry]
    note: str = ""

    def to_json(self) -> dict:
        return {"model": self.model, "source": self.source, "prompt_tokens": self.prompt_tokens,
                "entropy": self.entropy, "distribution": [vars(e) for e in self.entries]}


def entropy(probs: np.ndarray) -> float:
    p = probs[probs > 0]
    return float(-(p * np.log(p)).sum())


def distribution(model_name: str, prompt: str, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                 top_n: int = TOP_N, allow_empty: bool = False) -> Distribution:
    """The top_n most likely next tokens after temperature, with logits, probabilities and kept flags."""
    temperature, top_k, top_p = check_knobs(temperature, top_k, top_p)
    prompt = check_prompt(prompt, allow_empty)
    tokens, logits, note = next_logits(model_name, prompt)
    probs, kept = shape(logits, temperature, top_k, top_p)
    order = np.lexsort((-logits, -probs))[:top_n]  # by probability, ties (T = 0) by logit
    tokenizer = models.load(model_name).tokenizer
    entries = [Entry(tokenizer.decode([int(i)]), int(i), float(logits[i]), float(probs[i]), bool(kept[i]))
               for i in order]
    return Distribution(model_name, models.get_choice(model_name).source, tokens, entropy(probs), entries, note)


def sample_tokens(model_name: str, prompt: str, temperature: float, top_k: int, top_p: float, n: int,
                  seed: int) -> list[int]:
    """n independent draws of the next token at these settings (seeded, so reproducible)."""
    temperature, top_k, top_p = check_knobs(temperature, top_k, top_p)
    _, logits, _ = next_logits(model_name, check_prompt(prompt))
    probs, kept = shape(logits, temperature, top_k, top_p)
    filtered = np.where(kept, probs, 0.0)
    filtered /= filtered.sum()
    return np.random.default_rng(seed).choice(len(filtered), size=n, p=filtered).tolist()


# ---------------------------------------------------------------- generate()


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
    if strategy not in STRATEGIES:
        raise BadInput(f"Strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}.")
    temperature, top_k, top_p = check_knobs(temperature, top_k, top_p)
    return {"prompt": check_prompt(prompt), "strategy": strategy,
            "max_new_tokens": check_int(max_new_tokens, "Max new tokens", 1, 200),
            "temperature": temperature, "top_k": top_k, "top_p": top_p,
            "num_beams": check_int(num_beams, "Beams", 1, 8), "seed": check_int(seed, "Seed", 0, 2**32 - 1)}


def generate_code(model_name: str, settings: dict) -> str:
    kwargs = generate_kwargs(settings["strategy"], settings["max_new_tokens"], settings["temperature"],
                             settings["top_k"], settings["top_p"], settings["num_beams"])
    args = ",\n    ".join(f"{k}={v!r}" for k, v in kwargs.items())
    location = models.get_choice(model_name).location if model_name in models.registry() else model_name
    return (f"from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed\n\n"
            f"tokenizer = AutoTokenizer.from_pretrained({location!r})\n"
            f"model = AutoModelForCausalLM.from_pretrained({location!r})\n"
            f"inputs = tokenizer({settings['prompt']!r}, return_tensors=\"pt\")\n"
            f"set_seed({settings['seed']})\n"
            f"out = model.generate(\n    **inputs,\n    {args},\n    pad_token_id=tokenizer.eos_token_id,\n)\n"
            f"print(tokenizer.batch_decode(out[:, inputs[\"input_ids\"].shape[1]:], skip_special_tokens=True))\n")


class _StopFlag:
    """A StoppingCriteria that ends generate() when the student presses Stop (or leaves)."""

    def __init__(self):
        self.event = threading.Event()

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        return torch.full((input_ids.shape[0],), self.event.is_set(), dtype=torch.bool, device=input_ids.device)


def _prepare(model_name: str, settings: dict):
    import torch

    loaded = causal_lm(model_name)
    ids, note = prompt_ids(loaded, settings["prompt"])
    input_ids = torch.tensor([ids], device=loaded.device)
    kwargs = generate_kwargs(settings["strategy"], settings["max_new_tokens"], settings["temperature"],
                             settings["top_k"], settings["top_p"], settings["num_beams"])
    kwargs.update(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                  pad_token_id=loaded.tokenizer.pad_token_id)
    return loaded, kwargs, note


def generate(model_name: str, prompt: str, strategy: str = "greedy", max_new_tokens: int = 30,
             temperature: float = 1.0, top_k: int = 50, top_p: float = 1.0, num_beams: int = 4,
             seed: int = 0) -> dict:
    """Run model.generate() with these settings; beam search returns every beam, best first."""
    import torch
    from transformers import set_seed

    settings = check_generate(prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed)
    loaded, kwargs, note = _prepare(model_name, settings)
    set_seed(settings["seed"])
    with torch.no_grad():
        out = loaded.model.generate(**kwargs, return_dict_in_generate=True, output_scores=strategy == "beam")
    start = kwargs["input_ids"].shape[1]
    texts = loaded.tokenizer.batch_decode(out.sequences[:, start:], skip_special_tokens=True)
    scores = out.sequences_scores.tolist() if strategy == "beam" and settings["num_beams"] > 1 else [None] * len(texts)
    completions = sorted(({"text": t, "score": s} for t, s in zip(texts, scores)),
                         key=lambda c: -(c["score"] if c["score"] is not None else 0))
    return {"model": loaded.name, "strategy": strategy, "completions": completions, "note": note,
            "ended_at_once": all(not t.strip() for t in texts)}


class _TokenCollector:
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


STREAM_GAP = 0.04  # seconds between updates: tokens arrive in small batches, so the reader wakes less often


def stream(model_name: str, prompt: str, strategy: str, max_new_tokens: int, temperature: float, top_k: int,
           top_p: float, num_beams: int, seed: int):
    """Greedy or sampled text as it is produced (yields the text so far). Closing the generator
    (Stop in the UI) stops generate() at the next token and frees the worker."""
    from transformers import set_seed

    settings = check_generate(prompt, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed)
    loaded, kwargs, note = _prepare(model_name, settings)
    collector = _TokenCollector()
    stop = _StopFlag()

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
    text = ""
    try:
        while True:
            collector.wake.wait()
            collector.wake.clear()
            finished = collector.done
            current = loaded.tokenizer.decode(collector.ids[:], skip_special_tokens=True)
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
    finally:
        stop.event.set()
        worker.join(timeout=30)


# ---------------------------------------------------------------- softmax by hand (B2)

B2_WORDS = ["sat", "ran", "jumped", "slept"]
B2_LOGITS = [2.5, 1.0, 0.5, 1.5]


def softmax_by_hand(logits: list[float], temperature: float) -> dict:
    """Each exp(z/T), their sum and each probability, as the exercise computes them."""
    if not 0 < float(temperature) <= 100:
        raise BadInput("For the calculation by hand, use a temperature above 0 (T = 0 is the arg-max).")
    z = np.asarray(logits, dtype=float) / float(temperature)
    exps = np.exp(z)
    return {"scaled": z.tolist(), "exp": exps.tolist(), "sum": float(exps.sum()),
            "probs": (exps / exps.sum()).tolist()}


# ---------------------------------------------------------------- figures


def distribution_figure(dist: Distribution):
    from labs import plots

    colors = ["#1d4ed8" if e.kept else "#d1d5db" for e in dist.entries]
    hover = [f"id {e.token_id}, logit {e.logit:.2f}, {'kept' if e.kept else 'cut off'}" for e in dist.entries]
    labels = [repr(e.token)[1:-1] or "∅" for e in dist.entries]
    fig = plots.bar_chart(labels, [e.prob for e in dist.entries], colors=colors, hover=hover,
                          title=f"Next token after “…{dist.prompt_tokens[-1] if dist.prompt_tokens else ''}” "
                                f"(grey = cut off by top-k / top-p; click a bar to append it)")
    fig.update_traces(customdata=[e.token_id for e in dist.entries])  # read by assets/js/bar_click.js
    return fig


# ---------------------------------------------------------------- tab

EXPLAINER = """**A causal LM predicts one token at a time, from the left context only.** Below is its
probability for every possible next token (the 20 most likely). Temperature sharpens or flattens the
distribution; top-k and top-p cut off the unlikely tail (greyed out). Decoding strategies turn these
distributions into text."""


def build_tab(demo) -> None:
    import gradio as gr
    import pandas as pd

    from labs import plots, ui

    ui.explainer(EXPLAINER)
    with gr.Row():
        prompt = gr.Textbox(EXAMPLE, label="Prompt", scale=3, max_lines=4)
        model = ui.model_dropdown("causal", label="Causal LM")
    with gr.Row():
        temperature = gr.Slider(0, 2, value=1.0, step=0.05, label="Temperature (0 = greedy)")
        top_k = gr.Slider(0, 100, value=0, step=1, label="Top-k (0 = off)")
        top_p = gr.Slider(0.05, 1, value=1.0, step=0.05, label="Top-p (1 = off)")
    show = gr.Button("Show the next-token distribution", variant="primary")
    summary = gr.Markdown()
    chart = gr.Plot(label="Next-token distribution (click a bar to append that token)", elem_id="nt-chart")
    clicked = gr.Textbox(elem_id="nt-clicked", elem_classes=["lab-offscreen"], label="clicked token", container=False)
    dist_json = gr.JSON(label="Result (as the API returns it)", open=False)
    with gr.Accordion("One token at a time", open=True):
        with gr.Row():
            take = gr.Button("Take the most likely")
            sample_seed = gr.Number(0, label="Seed", precision=0)
            sample_one = gr.Button("Sample one")
            pick = gr.Dropdown(label="…or append this token", choices=[], value=None)
        record = gr.Dataframe(headers=["step", "token", "probability", "how"], interactive=False,
                              label="Tokens chosen so far")
        history = gr.State([])
    with gr.Accordion("Many samples: 100 draws at these settings", open=False):
        draw = gr.Button("Draw 100 next tokens")
        hist_plot = gr.Plot()
    with gr.Accordion("Generate: greedy, sampling, beam search", open=True):
        with gr.Row():
            strategy = gr.Radio(list(STRATEGIES), value="greedy", label="Strategy")
            max_new = gr.Slider(1, 200, value=40, step=1, label="Max new tokens")
            beams = gr.Slider(1, 8, value=4, step=1, label="Beams (beam search)")
            gen_seed = gr.Number(42, label="Seed (sampling)", precision=0)
        with gr.Row():
            gen_btn = gr.Button("Generate", variant="primary")
            stop_btn = gr.Button("Stop", variant="stop")
            compare_btn = gr.Button("Compare all three")
        output = gr.Textbox(label="Continuation (streamed)", lines=5, buttons=["copy"], elem_id="generate-output")
        beam_table = gr.Dataframe(headers=["beam", "score (log-prob / length)", "text"], interactive=False,
                                  label="Beams, best first")
        gen_json = gr.JSON(label="Result (as the API returns it)", open=False)
        with gr.Row():
            cmp_greedy = gr.Textbox(label="Greedy", lines=6)
            cmp_sample = gr.Textbox(label="Sampling (at the temperature / top-k / top-p above)", lines=6)
            cmp_beam = gr.Textbox(label="Beam search (best beam)", lines=6)
        code = gr.Code(label="The same call in Python (exercise B5)", language="python")
    with gr.Accordion("Softmax and temperature by hand (exercise B2)", open=False):
        gr.Markdown("Context: *The cat* → which word next? Edit the logits and the temperature.")
        calc = gr.Dataframe(pd.DataFrame({"word": B2_WORDS, "logit": B2_LOGITS}), interactive=True,
                            label="Words and logits", column_count=2)
        calc_t = gr.Number(1.0, label="Temperature T")
        calc_btn = gr.Button("Compute")
        calc_out = gr.Markdown()
        with gr.Row():
            ans_word = gr.Dropdown(B2_WORDS, value="sat", label="Word")
            ans = gr.Number(None, label="Your probability (3 decimals)")
            ans_btn = gr.Button("Check")
        ans_out = gr.Markdown()
    ui.try_this(
        "B2: set temperature to 0.5, 1 and 2. How do the bars and the entropy change? Check your hand "
        "calculation with the calculator.",
        "Set top-k to 5, then top-p to 0.9: which tokens turn grey? Which knob adapts to how sure the model is?",
        "B5: generate with greedy, then compare all three. Does greedy repeat itself? Is beam search bland?",
        "Copy the code under Generate and run it yourself: you should get the same text.")

    @ui.friendly
    def on_show(prompt_in, model_name, t, k, p):
        if not model_name:
            raise models.ModelUnavailable("No causal LM is available here.")
        dist = distribution(model_name, prompt_in, t, k, p)
        summary_md = (f"Entropy: **{dist.entropy:.3f} nats**. {ui.model_badge(models.load(model_name))}"
                      + (f"\n\n{ui.notice(ui.esc(dist.note))}" if dist.note else ""))
        choices = [(f"{repr(e.token)[1:-1]} ({e.prob:.3f})", e.token_id) for e in dist.entries]
        return summary_md, distribution_figure(dist), dist.to_json(), gr.update(choices=choices, value=None)

    knobs = [prompt, model, temperature, top_k, top_p]
    dist_outputs = [summary, chart, dist_json, pick]
    show.click(on_show, knobs, dist_outputs, api_visibility="private")
    prompt.submit(on_show, knobs, dist_outputs, api_visibility="private")
    for slider in (temperature, top_k, top_p):
        slider.release(on_show, knobs, dist_outputs, api_visibility="private", show_progress="hidden")
    demo.load(on_show, knobs, dist_outputs, api_visibility="private")

    # The API takes the full ranges of the issue (temperature up to 5), beyond the sliders' lecture range.
    @ui.friendly
    def api_next_token(prompt_in: str, model_name: str, t: float, k: int, p: float) -> dict:
        return distribution(model_name, prompt_in, t, k, p).to_json()

    gr.api(api_next_token, api_name="next_token",
           api_description="next_token(prompt, model, temperature, top_k, top_p) -> {model, source, "
                           "prompt_tokens, entropy, distribution: [{token, token_id, logit, prob, kept}]}")

    def append(prompt_in, model_name, hist, token_id, how, t, k, p):
        dist = distribution(model_name, prompt_in, t, k, p, top_n=10**9)
        entry = next(e for e in dist.entries if e.token_id == token_id)
        hist = hist + [[len(hist) + 1, repr(entry.token)[1:-1], round(entry.prob, 4), how]]
        new_prompt = prompt_in + entry.token
        return (new_prompt, hist, pd.DataFrame(hist, columns=["step", "token", "probability", "how"]),
                *on_show(new_prompt, model_name, t, k, p))

    step_outputs = [prompt, history, record] + dist_outputs

    @ui.friendly
    def on_take(prompt_in, model_name, hist, t, k, p):
        _, logits, _ = next_logits(model_name, check_prompt(prompt_in))
        return append(prompt_in, model_name, hist, int(np.argmax(logits)), "most likely", t, k, p)

    @ui.friendly
    def on_sample(prompt_in, model_name, hist, t, k, p, seed_in):
        seed_value = check_int(seed_in, "Seed", 0, 2**32 - 1)
        token_id = sample_tokens(model_name, prompt_in, t, k, p, 1, seed_value + len(hist))[0]
        return append(prompt_in, model_name, hist, token_id, f"sampled (seed {seed_value + len(hist)})", t, k, p)

    @ui.friendly
    def on_pick(prompt_in, model_name, hist, token_id, t, k, p):
        if token_id is None:
            return (gr.skip(),) * len(step_outputs)
        return append(prompt_in, model_name, hist, int(token_id), "picked", t, k, p)

    take.click(on_take, [prompt, model, history, temperature, top_k, top_p], step_outputs, api_visibility="private")
    sample_one.click(on_sample, [prompt, model, history, temperature, top_k, top_p, sample_seed], step_outputs,
                     api_visibility="private")
    pick.input(on_pick, [prompt, model, history, pick, temperature, top_k, top_p], step_outputs,
               api_visibility="private")

    @ui.friendly
    def on_bar_click(prompt_in, model_name, hist, clicked_value, t, k, p):
        token_id = clicked_value.split(":", 1)[0] if clicked_value else ""
        if not token_id.isdigit():
            return (gr.skip(),) * len(step_outputs)
        return append(prompt_in, model_name, hist, int(token_id), "clicked", t, k, p)

    # .change, not .input: the value is set by assets/js/bar_click.js, never typed.
    clicked.change(on_bar_click, [prompt, model, history, clicked, temperature, top_k, top_p], step_outputs,
                   api_visibility="private")

    @ui.friendly
    def on_draw(prompt_in, model_name, t, k, p, seed_in):
        draws = sample_tokens(model_name, prompt_in, t, k, p, 100, check_int(seed_in, "Seed", 0, 2**32 - 1))
        dist = distribution(model_name, prompt_in, t, k, p)
        tokenizer = models.load(model_name).tokenizer
        ids = [e.token_id for e in dist.entries[:10]]
        ids += [i for i in dict.fromkeys(draws) if i not in ids][:5]
        probs = dict(zip(*np.unique(draws, return_counts=True)))
        _, logits, _ = next_logits(model_name, prompt_in)
        model_probs, _ = shape(logits, *check_knobs(t, k, p))
        import plotly.graph_objects as go

        labels = plots.unique_labels([repr(tokenizer.decode([i]))[1:-1] or "∅" for i in ids])
        fig = go.Figure([go.Bar(name="share of 100 draws", x=labels, y=[probs.get(i, 0) / 100 for i in ids]),
                         go.Bar(name="model probability", x=labels, y=[float(model_probs[i]) for i in ids])])
        fig.update_layout(barmode="group", font=plots.FONT, template="plotly_white", height=420,
                          title="100 samples vs the model's probabilities")
        return fig

    draw.click(on_draw, [prompt, model, temperature, top_k, top_p, sample_seed], hist_plot, api_visibility="private")

    gen_inputs = [prompt, model, strategy, max_new, temperature, top_k, top_p, beams, gen_seed]

    def on_generate(prompt_in, model_name, strat, n_new, t, k, p, n_beams, seed_in):
        """Streams greedy / sampled text; beam search arrives whole, all beams listed."""
        try:
            settings = check_generate(prompt_in, strat, n_new, t, k, p, n_beams, seed_in)
            code_text = generate_code(model_name, settings)
            if strat == "beam":
                result = generate(model_name, **{k_: v for k_, v in settings.items()})
                rows = [[i + 1, round(c["score"], 4) if c["score"] is not None else "", c["text"]]
                        for i, c in enumerate(result["completions"])]
                yield result["completions"][0]["text"], pd.DataFrame(rows, columns=beam_headers), result, code_text
                return
            text = ""
            for text in stream(model_name, **settings):
                yield text, gr.skip(), gr.skip(), code_text
            result = {"model": model_name, "strategy": strat, "completions": [{"text": text, "score": None}]}
            if not text.strip():
                gr.Warning("The model ended the text at once (it produced its end-of-text token first).")
            yield text, pd.DataFrame(columns=beam_headers), result, code_text
        except Exception as exc:
            raise ui.to_gr_error(exc) from None

    beam_headers = ["beam", "score (log-prob / length)", "text"]
    gen_event = gen_btn.click(on_generate, gen_inputs, [output, beam_table, gen_json, code],
                              api_visibility="private", concurrency_id="generate", concurrency_limit=2)
    stop_btn.click(None, cancels=[gen_event], api_visibility="private", queue=False)

    @ui.friendly
    def api_generate(prompt_in: str, model_name: str, strat: str, n_new: int, t: float, k: int, p: float,
                     n_beams: int, seed_in: int) -> dict:
        result = generate(model_name, prompt_in, strat, n_new, t, k, p, n_beams, seed_in)
        if result["ended_at_once"]:
            gr.Warning("The model ended the text at once (it produced its end-of-text token first).")
        result.pop("ended_at_once")
        return result

    gr.api(api_generate, api_name="generate", concurrency_id="generate", concurrency_limit=2,
           api_description="generate(prompt, model, strategy, max_new_tokens, temperature, top_k, top_p, "
                           "num_beams, seed) -> {model, strategy, completions: [{text, score}]}")

    @ui.friendly
    def on_compare(prompt_in, model_name, n_new, t, k, p, n_beams, seed_in):
        out = []
        for strat in STRATEGIES:
            result = generate(model_name, prompt_in, strat, n_new, t if strat == "sample" else 1.0, k, p,
                              n_beams, seed_in)
            out.append(result["completions"][0]["text"])
        return tuple(out)

    compare_btn.click(on_compare, [prompt, model, max_new, temperature, top_k, top_p, beams, gen_seed],
                      [cmp_greedy, cmp_sample, cmp_beam], api_visibility="private", concurrency_id="generate")

    @ui.friendly
    def on_calc(table, t):
        words = [str(w) for w in table["word"].tolist()]
        try:
            logits = [float(v) for v in table["logit"].tolist()]
            t = float(t)
        except (TypeError, ValueError):
            raise BadInput("Every logit and the temperature must be a number.") from None
        r = softmax_by_hand(logits, t)
        rows = "\n".join(f"| {ui.esc(w)} | {z:g} | {z / t:.4f} | {e:.4f} | **{pr:.4f}** |"
                         for w, z, e, pr in zip(words, logits, r["exp"], r["probs"]))
        return (f"| word | logit z | z / T | exp(z / T) | probability |\n|---|---|---|---|---|\n{rows}\n\n"
                f"Sum of exps = **{r['sum']:.4f}**; each probability = exp(z / T) / sum.")

    calc_btn.click(on_calc, [calc, calc_t], calc_out, api_visibility="private")
    demo.load(on_calc, [calc, calc_t], calc_out, api_visibility="private")

    @ui.friendly
    def on_answer(table, t, word_in, answer):
        words = [str(w) for w in table["word"].tolist()]
        if word_in not in words or answer is None:
            raise BadInput("Pick a word from the table and type your probability.")
        r = softmax_by_hand([float(v) for v in table["logit"].tolist()], float(t))
        right = r["probs"][words.index(word_in)]
        if round(float(answer), 3) == round(right, 3):
            return f"✅ Right: P({ui.esc(word_in)}) = {right:.3f}."
        return f"❌ Not quite: P({ui.esc(word_in)}) is not {float(answer):.3f}. Divide exp(z / T) by the sum of all four."

    ans_btn.click(on_answer, [calc, calc_t, ans_word, ans], ans_out, api_visibility="private")
