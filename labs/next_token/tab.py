"""Next token, the tab: layout, wiring, and handlers that take values and return values."""

from __future__ import annotations

import math
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from labs import lm, plots, ui
from labs.errors import MAX_CHARS, BadInput, check_int
from labs.next_token import beam_tree, compute, generation, inside, inside_plots
from labs.next_token.compute import B2_LOGITS, B2_WORDS, EXAMPLE
from labs.switches import StopSwitches

TITLE = "Next token"
EXPLAINER = """**A causal LM predicts one token at a time, from the left context only.** Below is its
probability for every possible next token (the 20 most likely). Temperature sharpens or flattens the
distribution; top-k and top-p cut off the unlikely tail (greyed out). Decoding strategies turn these
distributions into text."""
TRY_THIS = (
    "B2: set temperature to 0.5, 1 and 2. How do the bars and the entropy change? Check your hand "
    "calculation with the calculator.",
    "Set top-k to 5, then top-p to 0.9: which tokens turn grey? Which knob adapts to how sure the model is?",
    "B5: generate with greedy, then compare all three. Does greedy repeat itself? Is beam search bland?",
    "Copy the code under Generate and run it yourself: you should get the same text.")
RECORD_HEADERS = ["step", "token", "probability", "how"]
GENERATING = 32  # generations in flight at once: greedy ones share batches; sampling and beams run two at a time
STOPS = StopSwitches()
BEAM_HEADERS = ["beam", "score (log-prob / length)", "text"]


def shown(token: str) -> str:
    """A token as the chart and the record show it: escapes visible (\\n), the empty string as ∅."""
    return repr(token)[1:-1] or "∅"


def distribution_figure(dist: compute.Distribution):
    colors = [plots.BLUE if e.kept else plots.GREY for e in dist.entries]
    hover = [f"id {e.token_id}, logit {e.logit:.2f}, {'kept' if e.kept else 'cut off'}" for e in dist.entries]
    last = dist.prompt_tokens[-1] if dist.prompt_tokens else ""
    fig = plots.bar_chart([shown(e.token) for e in dist.entries], [e.prob for e in dist.entries], colors=colors,
                          hover=hover, title=plots.safe(f"Next token after “…{last}” (grey = cut off by top-k / "
                                                        "top-p; click a bar to append it)"))
    fig.update_traces(customdata=[e.token_id for e in dist.entries])  # read by assets/js/bar_click.js
    return fig


def distribution_summary(dist: compute.Distribution, loaded) -> str:
    note = f"\n\n{ui.notice(dist.note)}" if dist.note else ""
    return f"Entropy: **{dist.entropy:.3f} nats**. {ui.model_badge(loaded)}{note}"


def on_show(prompt, model_name, t, k, p):
    loaded = compute.causal_lm(model_name)
    dist = compute.distribution(loaded, prompt, t, k, p)
    choices = [(f"{shown(e.token)} ({e.prob:.3f})", e.token_id) for e in dist.entries]
    return (distribution_summary(dist, loaded), distribution_figure(dist), dist.to_json(),
            gr.update(choices=choices, value=None))


def append(prompt, model_name, history, token_id: int, how: str, t, k, p):
    """The prompt with one more token, the record of chosen tokens, and the new distribution."""
    entry = compute.entry_for(model_name, prompt, token_id, t, k, p)
    history = history + [[len(history) + 1, shown(entry.token), round(entry.prob, 4), how]]
    new_prompt = prompt + entry.token
    return (new_prompt, history, pd.DataFrame(history, columns=RECORD_HEADERS),
            *on_show(new_prompt, model_name, t, k, p))


def on_take(prompt, model_name, history, t, k, p):
    return append(prompt, model_name, history, compute.greedy_token(model_name, prompt), "most likely", t, k, p)


def on_sample(prompt, model_name, history, t, k, p, seed):
    seed = check_int(seed, "Seed", 0, 2**32 - 1) + len(history)
    token_id = compute.sample_tokens(model_name, prompt, t, k, p, 1, seed)[0]
    return append(prompt, model_name, history, token_id, f"sampled (seed {seed})", t, k, p)


def on_pick(prompt, model_name, history, token_id, t, k, p):
    if token_id is None:
        return (gr.skip(),) * 7
    return append(prompt, model_name, history, int(token_id), "picked", t, k, p)


def on_bar_click(prompt, model_name, history, clicked, t, k, p):
    """`clicked` is "<token id>:<time>", set by assets/js/bar_click.js."""
    token_id = clicked.split(":", 1)[0] if clicked else ""
    if not token_id.isdigit():
        return (gr.skip(),) * 7
    return append(prompt, model_name, history, int(token_id), "clicked", t, k, p)


def samples_figure(labels: list[str], shares: list[float], probs: list[float]):
    fig = go.Figure([go.Bar(name="share of 100 draws", x=plots.unique_labels(labels), y=shares),
                     go.Bar(name="model probability", x=plots.unique_labels(labels), y=probs)])
    return plots.style(fig, "100 samples vs the model's probabilities", 420, barmode="group")


def on_draw(prompt, model_name, t, k, p, seed):
    """100 draws at these settings beside the model's probabilities: the 10 likeliest tokens and
    up to 5 more that were drawn."""
    loaded = compute.causal_lm(model_name)
    draws = compute.sample_tokens(loaded, prompt, t, k, p, 100, seed)
    _, logits, _ = compute.prompt_logits(loaded, prompt)
    probs, _ = compute.shape(logits, *compute.check_knobs(t, k, p))
    ids = [i for i, _ in lm.top_k(logits, 10)]  # the ten likeliest (probability follows the logit)
    ids += [i for i in dict.fromkeys(draws) if i not in ids][:5]
    counts = dict(zip(*np.unique(draws, return_counts=True)))
    labels = [shown(loaded.tokenizer.decode([i])) for i in ids]
    return samples_figure(labels, [counts.get(i, 0) / 100 for i in ids], [float(probs[i]) for i in ids])


def beam_rows(result: dict) -> pd.DataFrame:
    return pd.DataFrame([[i + 1, round(c["score"], 4) if c["score"] is not None else "", c["text"]]
                         for i, c in enumerate(result["completions"])], columns=BEAM_HEADERS)


def on_generate(prompt, model_name, strategy, n_new, t, k, p, n_beams, seed, request: gr.Request):
    """Streams greedy / sampled text; beam search arrives whole, all beams listed. Stop (this
    student's switch) ends the text at the next token."""
    settings = generation.check_generate(prompt, strategy, n_new, t, k, p, n_beams, seed)
    code = generation.generate_code(model_name, settings)
    if settings["strategy"] == "beam":
        result = generation.generate(model_name, **settings)
        yield result["completions"][0]["text"], beam_rows(result), result, code
        return
    stop, text = STOPS.arm(request.session_hash), ""
    try:
        for text in generation.stream(model_name, **settings, stop=stop):
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
    return tuple(generation.generate(model_name, prompt, s, n_new, t if s == "sample" else 1.0, k, p, n_beams,
                                     seed)["completions"][0]["text"] for s in generation.STRATEGIES)


def calc_inputs(table: pd.DataFrame, t) -> tuple[list[str], list[float], float]:
    try:
        return ([str(w) for w in table["word"].tolist()], [float(v) for v in table["logit"].tolist()], float(t))
    except (TypeError, ValueError):
        raise BadInput("Every logit and the temperature must be a number.") from None


def on_calc(table, t):
    words, logits, t = calc_inputs(table, t)
    r = compute.softmax_by_hand(logits, t)
    rows = "\n".join(f"| {ui.md(w)} | {z:g} | {z / t:.4f} | {e:.4f} | **{pr:.4f}** |"
                     for w, z, e, pr in zip(words, logits, r["exp"], r["probs"]))
    return (f"| word | logit z | z / T | exp(z / T) | probability |\n|---|---|---|---|---|\n{rows}\n\n"
            f"Sum of exps = **{r['sum']:.4f}**; each probability = exp(z / T) / sum.")


def on_answer(table, t, word, answer):
    words, logits, t = calc_inputs(table, t)
    if word not in words or answer is None:
        raise BadInput("Pick a word from the table and type your probability.")
    right = compute.softmax_by_hand(logits, t)["probs"][words.index(word)]
    if round(float(answer), 3) == round(right, 3):
        return f"✅ Right: P({ui.md(word)}) = {right:.3f}."
    return f"❌ Not quite: P({ui.md(word)}) is not {float(answer):.3f}. Divide exp(z / T) by the sum of all four."


# ---------------------------------------------------------------- inside a prediction

SCORE_EXPLAINER = """**The chain rule: P(sentence) = P(w1) · P(w2 | w1) · P(w3 | w1 w2) · …** The model scores every
token of a sentence in one forward pass, each from the tokens before it: this is exactly the pass training
uses (teacher forcing). Perplexity = exp(mean loss): how many tokens the model was, on average, choosing
between. Guess first: which sentence is more likely, and by how much?

*Try this:* "The cat sat on the mat." against "The cat sat on the hat.": which token makes the
difference?"""
LENS_EXPLAINER = """**The logit lens: stop the model after any layer and ask what it would predict.** Each layer's
hidden state goes through the model's own final norm and output head. Watch the answer appear, and where.
A causal LM is read at the end of the prompt; a masked LM at the first [MASK].

*Try this:* "The capital of France is", then "The capital of Germany is": does the answer appear at
the same layer?"""
TREE_EXPLAINER = """**Beam search keeps the B best partial texts at every step.** Blue: kept beams; grey: candidates
it weighed and pruned; green stars: finished; orange: the path greedy decoding takes. The scores at the end
are those `generate()` reports (log-probability / length).

*Try this:* 2 beams, then 8: does the best beam change? Does it ever leave the greedy path?"""
HOW_MUCH = ["about the same (under 10×)", "10× to 1,000×", "more than 1,000×"]


def how_much(log_ratio: float) -> str:
    """The guess's bucket for a likelihood ratio given as its natural log (a ratio can overflow)."""
    digits = log_ratio / math.log(10)
    return HOW_MUCH[0] if digits < 1 else HOW_MUCH[1] if digits <= 3 else HOW_MUCH[2]


def on_score(model_name, text_a, text_b, guess, guess_size):
    a, b = inside.score(model_name, text_a), inside.score(model_name, text_b)
    rows = "\n".join(f"| {name} | {len(s.tokens)} | {s.total_logprob:.2f} | "
                     f"{inside_plots.exp_readable(s.total_logprob)} | {s.mean_loss:.3f} | **{s.perplexity:,.1f}** |"
                     for name, s in (("A", a), ("B", b)))
    likelier, log_ratio = ("A", a.total_logprob - b.total_logprob) if a.total_logprob >= b.total_logprob else \
        ("B", b.total_logprob - a.total_logprob)
    size = how_much(log_ratio)
    right = guess == likelier and guess_size == size
    guessed = f"❌ You guessed {ui.md(guess)}, {ui.md(guess_size or '?')}. "
    verdict = "" if not guess else "✅ Right. " if right else guessed
    summary = ("| sentence | tokens | log P(sentence) | P(sentence) | mean loss | perplexity |\n"
               f"|---|---|---|---|---|---|\n{rows}\n\n{verdict}**{likelier}** is "
               f"{inside_plots.exp_readable(log_ratio)} times more "
               f"likely ({size}). Both were scored in one forward pass each: every position at once, as in "
               "training.")
    return summary, inside_plots.surprise_figure([("A", a), ("B", b)]), {"a": a.to_json(), "b": b.to_json()}


def on_lens(model_name, text, top_k):
    lens = inside.logit_lens(model_name, text, top_k)
    first = len(lens.layers) - 1
    while first > 0 and lens.layers[first - 1].final_token_rank == 1:  # the layer from which it stays on top
        first -= 1
    summary = (f"The final answer **{ui.md(lens.final_token)}** (p = {lens.layers[-1].final_token_prob:.3f}) "
               f"is the top guess from layer **{first}** of {len(lens.layers) - 1} on; at layer 0 it ranks "
               f"{lens.layers[0].final_token_rank:,}.")
    return summary, inside_plots.lens_grid(lens), inside_plots.lens_curve(lens), lens.to_json()


def on_tree(model_name, prompt, num_beams, max_new):
    tree = beam_tree.beam_tree(model_name, prompt, num_beams, max_new)
    rows = pd.DataFrame([[i + 1, round(b.score, 4), b.text] for i, b in enumerate(tree.beams)], columns=BEAM_HEADERS)
    note = f"Greedy (orange): “{ui.md(tree.greedy_text)}”. Length penalty {tree.length_penalty:g}."
    return inside_plots.tree_figure(tree), rows, note, tree.to_json()


def inside_sections(model) -> None:
    with gr.Accordion("Score a sentence: the chain rule and perplexity", open=False):
        ui.explainer(SCORE_EXPLAINER)
        with gr.Row():
            text_a = gr.Textbox(inside.SCORE_EXAMPLE, label="Sentence A", max_length=MAX_CHARS)
            text_b = gr.Textbox(inside.SCRAMBLED_EXAMPLE, label="Sentence B", max_length=MAX_CHARS)
        with gr.Row():
            guess = gr.Radio(["A", "B"], label="Your guess: more likely", value=None)
            guess_size = gr.Radio(HOW_MUCH, label="…by how much", value=None)
            score = gr.Button("Score both", variant="primary")
        score_md, score_plot, score_json = gr.Markdown(), gr.Plot(), ui.result_json()
    with gr.Accordion("Layer by layer: watch the guess form (logit lens)", open=False) as lens_box:
        ui.explainer(LENS_EXPLAINER)
        with gr.Row():
            lens_text = gr.Textbox(inside.LENS_EXAMPLE, label="Text (a masked LM needs a [MASK])", scale=3,
                                   max_length=MAX_CHARS)
            lens_model = ui.model_dropdown("causal", "masked", label="Model")
            lens_k = gr.Slider(*inside.LENS_TOP_K, value=5, step=1, label="Top-k per layer")
        lens_run = gr.Button("Look inside", variant="primary")
        lens_md = gr.Markdown()
        with gr.Row():
            lens_grid, lens_curve = gr.Plot(), gr.Plot()
        lens_json = ui.result_json()
    with gr.Accordion("Beam search as a tree", open=False) as tree_box:
        ui.explainer(TREE_EXPLAINER)
        with gr.Row():
            tree_prompt = gr.Textbox(beam_tree.EXAMPLE, label="Prompt", scale=3, max_length=MAX_CHARS)
            tree_beams = gr.Slider(*beam_tree.BEAMS_RANGE, value=3, step=1, label="Beams")
            tree_new = gr.Slider(*beam_tree.NEW_TOKENS_RANGE, value=5, step=1, label="New tokens")
        tree_run = gr.Button("Draw the tree", variant="primary")
        tree_plot, tree_note = gr.Plot(), gr.Markdown()
        tree_table, tree_json = ui.table(BEAM_HEADERS, "Final beams, as generate() scores them"), ui.result_json()
    # Not run on opening: the student guesses before the scores are revealed.
    ui.wire(score.click, on_score, [model, text_a, text_b, guess, guess_size],
            [score_md, score_plot, score_json])
    ui.wire([lens_run.click, lens_box.expand, lens_text.submit], on_lens, [lens_model, lens_text, lens_k],
            [lens_md, lens_grid, lens_curve, lens_json])
    ui.wire([tree_run.click, tree_box.expand], on_tree, [model, tree_prompt, tree_beams, tree_new],
            [tree_plot, tree_table, tree_note, tree_json], concurrency_id="generate")


def step_section() -> SimpleNamespace:
    with gr.Accordion("One token at a time", open=True):
        with gr.Row():
            take = gr.Button("Take the most likely")
            seed = gr.Number(0, label="Seed", precision=0)
            sample = gr.Button("Sample one")
            pick = gr.Dropdown(label="…or append this token", choices=[], value=None)
        record = ui.table(RECORD_HEADERS, "Tokens chosen so far")
    with gr.Accordion("Many samples: 100 draws at these settings", open=False):
        draw = gr.Button("Draw 100 next tokens")
        histogram = gr.Plot()
    return SimpleNamespace(take=take, seed=seed, sample=sample, pick=pick, record=record, history=gr.State([]),
                           draw=draw, histogram=histogram)


def generate_section() -> SimpleNamespace:
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


def softmax_section() -> SimpleNamespace:
    with gr.Accordion("Softmax and temperature by hand (exercise B2)", open=False):
        gr.Markdown("Context: *The cat* → which word next? Edit the logits and the temperature.")
        table = gr.Dataframe(pd.DataFrame({"word": B2_WORDS, "logit": B2_LOGITS}), interactive=True,
                             label="Words and logits", column_count=2)
        t = gr.Number(1.0, label="Temperature T")
        run = gr.Button("Compute")
        out = gr.Markdown()
        with gr.Row():
            word = gr.Dropdown(B2_WORDS, value="sat", label="Word")
            answer = gr.Number(None, label="Your probability (3 decimals)")
            check = gr.Button("Check")
        verdict = gr.Markdown()
    return SimpleNamespace(table=table, t=t, run=run, out=out, word=word, answer=answer, check=check, verdict=verdict)


def build(demo: gr.Blocks) -> None:
    ui.explainer(EXPLAINER)
    with gr.Row():
        prompt = gr.Textbox(EXAMPLE, label="Prompt", scale=3, max_lines=4, max_length=MAX_CHARS)
        model = ui.model_dropdown("causal", label="Causal LM")
    with gr.Row():
        temperature = gr.Slider(0, 2, value=1.0, step=0.05, label="Temperature (0 = greedy)")
        top_k = gr.Slider(0, 100, value=0, step=1, label="Top-k (0 = off)")
        top_p = gr.Slider(0.05, 1, value=1.0, step=0.05, label="Top-p (1 = off)")
    show = gr.Button("Show the next-token distribution", variant="primary")
    summary = gr.Markdown()
    chart = gr.Plot(label="Next-token distribution (click a bar to append that token)", elem_id="nt-chart")
    clicked = gr.Textbox(elem_id="nt-clicked", elem_classes=["lab-offscreen"], label="clicked token", container=False)
    dist_json = ui.result_json()
    step, gen, calc = step_section(), generate_section(), softmax_section()
    inside_sections(model)
    ui.try_this(*TRY_THIS)
    ui.link(__name__, prompt=prompt, model=model, temperature=temperature, top_k=top_k, top_p=top_p)

    knobs = [temperature, top_k, top_p]
    shown_outputs = [summary, chart, dist_json, step.pick]
    ui.wire([show.click, prompt.submit], on_show, [prompt, model, *knobs], shown_outputs)
    ui.on_load(demo, on_show, [prompt, model, *knobs], shown_outputs)
    ui.wire([s.release for s in knobs], on_show, [prompt, model, *knobs], shown_outputs, show_progress="hidden")
    step_outputs = [prompt, step.history, step.record, *shown_outputs]
    ui.wire(step.take.click, on_take, [prompt, model, step.history, *knobs], step_outputs)
    ui.wire(step.sample.click, on_sample, [prompt, model, step.history, *knobs, step.seed], step_outputs)
    ui.wire(step.pick.input, on_pick, [prompt, model, step.history, step.pick, *knobs], step_outputs)
    # .change, not .input: the value is set by assets/js/bar_click.js, never typed.
    ui.wire(clicked.change, on_bar_click, [prompt, model, step.history, clicked, *knobs], step_outputs)
    ui.wire(step.draw.click, on_draw, [prompt, model, *knobs, step.seed], step.histogram)
    gen_inputs = [prompt, model, gen.strategy, gen.max_new, *knobs, gen.beams, gen.seed]
    # Stop flips this student's switch (see labs/switches.py); a Generate clicked meanwhile runs next.
    ui.wire(gen.run.click, on_generate, gen_inputs, [gen.output, gen.beam_table, gen.result, gen.code],
            concurrency_id="generate", concurrency_limit=GENERATING, trigger_mode="always_last")
    ui.wire(gen.stop.click, on_stop, queue=False)
    ui.wire(gen.compare.click, on_compare, [prompt, model, gen.max_new, *knobs, gen.beams, gen.seed], gen.compared,
            concurrency_id="generate")
    ui.wire(calc.run.click, on_calc, [calc.table, calc.t], calc.out)
    ui.on_load(demo, on_calc, [calc.table, calc.t], calc.out)
    ui.wire(calc.check.click, on_answer, [calc.table, calc.t, calc.word, calc.answer], calc.verdict)
    # The API takes the full ranges (temperature up to 5), beyond the sliders' lecture range.
    ui.api(compute.next_token_json, "next_token",
           "next_token(prompt, model, temperature, top_k, top_p) -> {model, source, prompt_tokens, entropy, "
           "distribution: [{token, token_id, logit, prob, kept}]}")
    ui.api(generation.generate_json, "generate",
           "generate(prompt, model, strategy, max_new_tokens, temperature, top_k, top_p, num_beams, seed) -> "
           "{model, strategy, completions: [{text, score}], note}", concurrency_id="generate",
           concurrency_limit=GENERATING)
    ui.api(inside.score_json, "score", "score(text, model) -> {model, source, tokens, token_ids, logprobs, "
           "total_logprob, mean_loss, perplexity}")
    ui.api(inside.logit_lens_json, "logit_lens", "logit_lens(text, model, top_k) -> {model, source, tokens, "
           "position, layers: [{layer, top: [{token, token_id, prob}], final_token_prob, final_token_rank}]}")
    ui.api(beam_tree.beam_tree_json, "beam_tree", "beam_tree(prompt, model, num_beams, max_new_tokens) -> "
           "{model, nodes: [{id, parent, step, token, token_id, logprob, status}], beams: [{text, score}]}",
           concurrency_id="generate")
