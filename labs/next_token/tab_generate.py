"""Next token, the generate panel (exercise B5): greedy and sampled text streamed, beam search with
every beam, the three strategies side by side, Stop, and the same generate() call as code."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd

from labs.core.models import models
from labs.core.ui import ui
from labs.core.ui.switches import StopSwitches
from labs.next_token import generation
from labs.next_token.generation import GENERATING

STOPS = StopSwitches()
BEAM_HEADERS = ["beam", "score (log-prob / length)", "text"]


def beam_rows(result: dict) -> pd.DataFrame:
    return pd.DataFrame([[i + 1, round(c["score"], 4) if c["score"] is not None else "", c["text"]]
                         for i, c in enumerate(result["completions"])], columns=BEAM_HEADERS)


def on_generate(prompt, model_name, strategy, n_new, t, k, p, n_beams, seed, request: gr.Request):
    """Streams greedy / sampled text; beam search arrives whole, all beams listed. Stop (this
    student's switch) ends the text at the next token."""
    settings = generation.check_generate(prompt, strategy, n_new, t, k, p, n_beams, seed)
    loaded = models.load(model_name, "causal")
    code = generation.generate_code(loaded, settings)
    if settings["strategy"] == "beam":
        result = generation.generate(loaded, **settings)
        yield result["completions"][0]["text"], beam_rows(result), result, code
        return
    stop, text = STOPS.arm(request.session_hash), ""
    try:
        for text in generation.stream(loaded, **settings, stop=stop):
            yield text, gr.skip(), gr.skip(), code
    finally:
        STOPS.release(request.session_hash, stop)
    if not text.strip():
        gr.Warning(generation.ENDED_AT_ONCE)
    result = {"model": model_name, "strategy": settings["strategy"], "completions": [{"text": text, "score": None}]}
    yield text, pd.DataFrame(columns=BEAM_HEADERS), result, code


def on_stop(request: gr.Request):
    STOPS.stop(request.session_hash)


def on_compare(prompt, model_name, n_new, t, k, p, n_beams, seed):
    """The first completion of each strategy; sampling uses the temperature above, the others T = 1."""
    loaded = models.load(model_name, "causal")
    return tuple(generation.generate(loaded, prompt, s, n_new, t if s == "sample" else 1.0, k, p, n_beams,
                                     seed)["completions"][0]["text"] for s in generation.STRATEGIES)


def build() -> SimpleNamespace:
    with gr.Accordion("Generate: greedy, sampling, beam search", open=True):
        with gr.Row():
            strategy = gr.Radio(list(generation.STRATEGIES), value="greedy", label="Strategy")
            max_new = gr.Slider(1, generation.MAX_NEW_TOKENS, value=40, step=1, label="Max new tokens")
            beams = gr.Slider(1, generation.MAX_BEAMS, value=4, step=1, label="Beams (beam search)")
            seed = gr.Number(42, label="Seed (sampling)", precision=0)
        with gr.Row():
            run = gr.Button("Generate", variant="primary")
            stop = gr.Button("Stop", variant="stop")
            compare = gr.Button("Compare all three")
        output = gr.Textbox(label="Continuation (streamed)", lines=5, buttons=["copy"], elem_id="generate-output")
        beam_table = ui.table(BEAM_HEADERS, "Beams, best first")
        result = ui.result_json()
        with gr.Row():
            greedy = gr.Textbox(label="Greedy", lines=6)
            sampled = gr.Textbox(label="Sampling (at the temperature / top-k / top-p above)", lines=6)
            beam = gr.Textbox(label="Beam search (best beam)", lines=6)
        code = gr.Code(label="The same call in Python (exercise B5)", language="python")
    return SimpleNamespace(strategy=strategy, max_new=max_new, beams=beams, seed=seed, run=run, stop=stop,
                           compare=compare, output=output, beam_table=beam_table, result=result,
                           compared=[greedy, sampled, beam], code=code)


def wire(main: SimpleNamespace, gen: SimpleNamespace) -> None:
    inputs = [main.prompt, main.model, gen.strategy, gen.max_new, *main.knobs, gen.beams, gen.seed]
    # Stop flips this student's switch (see labs/core/ui/switches.py); a Generate clicked meanwhile runs next.
    ui.wire(gen.run.click, on_generate, inputs, [gen.output, gen.beam_table, gen.result, gen.code],
            concurrency_id="generate", concurrency_limit=GENERATING, trigger_mode="always_last")
    ui.wire(gen.stop.click, on_stop, queue=False)
    ui.wire(gen.compare.click, on_compare, [main.prompt, main.model, gen.max_new, *main.knobs, gen.beams, gen.seed],
            gen.compared, concurrency_id="generate")
