"""Fill in the blank, the tab: layout, wiring, and handlers that take values and return values."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.errors import MAX_CHARS, check_int
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build
from labs.fill_mask import compute
from labs.fill_mask.compute import DOWNLOAD_HINT, EXAMPLES, MAX_BLANKS

TITLE = "Fill in the blank"
ID = "fill_mask"  # the ?tab= link and the folder
EXPLAINER = """**A masked language model (BERT) fills a blank using the words on *both* sides.** Type a
sentence with `[MASK]` (or `___`) and see its guesses with their probabilities. Beside it, a causal LM
(GPT-style) guesses from the words on the left only: "a cup of …" could be coffee, but "… with lemon and
honey" is on the right, where only the masked LM can read it."""
TRY_THIS = (
    "The first example: the left-only panel sees \"Every morning I drink a cup of\". What does it guess, and "
    "what does BERT guess once it also reads \"with lemon and honey\"?",
    "The last example, \"The [MASK] sat on the mat.\": the causal LM sees only \"The\". Why is it so unsure, "
    "while BERT is not?",
    "The two \"bank\" sentences: does BERT's guess change with the words *after* the blank?",
    "B1: in the simulator, how many tokens were chosen? Resample a few times, then read the 1,000-draw "
    "frequencies: do they approach 15 % and 80 / 10 / 10?",
    "Type a long word in \"Check your guess\" (e.g. *unbelievable*): why can one [MASK] not predict it?")
PREDICTION_HEADERS = ["blank", "rank", "token", "token id", "probability"]
SIMULATION_HEADERS = ["position", "token", "chosen?", "what happened", "model sees", "−log P(original)"]
ACTIONS = {"mask": "→ [MASK] (80 %)", "random": "→ random token (10 %)", "keep": "kept as is (10 %)"}
# The Tokens lab's chips (assets/lab.css: .lab-piece, the id in <sub>; specials dashed), coloured by kind.
TOKENS_CAPTION = "The input as the model's tokens, each with its id:"
TOKEN_KINDS = {"": ("#dbeafe", "word"), "piece": ("#ddd6fe", "## word piece"), "blank": ("#fecaca", "blank"),
               "special": ("#e5e7eb", "special token")}


def prediction_figure(result: compute.FillResult):
    return plots.bars_side_by_side([(f"Blank {i + 1}", [p.token for p in b.predictions],
                                     [p.prob for p in b.predictions]) for i, b in enumerate(result.masks)])


def prediction_rows(result: compute.FillResult) -> pd.DataFrame:
    return pd.DataFrame([[b + 1, r + 1, p.token, p.token_id, round(p.prob, 5)]
                         for b, blank in enumerate(result.masks) for r, p in enumerate(blank.predictions)],
                        columns=PREDICTION_HEADERS)


def chip_html(token: str, token_id: int, kind: str) -> str:
    colour = TOKEN_KINDS[kind][0]
    special = " lab-piece-special" if kind == "special" else ""
    return (f'<span class="lab-piece{special}" style="background:{colour}" title="{TOKEN_KINDS[kind][1]}">'
            f'{ui.esc(token)}<sub>{token_id}</sub></span>')


def tokens_html(chips: list[tuple[str, int, str]]) -> str:
    """The input as the model's tokens: one chip per token with its id, a legend for the colours.
    Tokens are the student's text (and the tokenizer's): escaped."""
    legend = "".join(f'<span class="lab-chip" style="background:{colour}">{ui.esc(name)}</span>'
                     for colour, name in TOKEN_KINDS.values())
    pieces = "".join(chip_html(*chip) for chip in chips)
    return (f'<div class="lab-legend"><b>{TOKENS_CAPTION}</b> {legend}</div>'
            f'<div class="lab-pieces">{pieces}</div>')


def on_predict(text, model_name, top_k):
    if not model_name and not models.choice_names("masked"):  # otherwise: "No masked LM was chosen"
        raise models.ModelUnavailable(DOWNLOAD_HINT)
    loaded = compute.masked_lm(model_name)  # the one look-up of this click
    result = compute.predict(loaded, text, top_k)
    filled = f"**Best guesses filled in:** {ui.md(result.filled)}\n\n{ui.model_badge(loaded)}"
    chips = compute.token_chips(result.tokens, result.token_ids, result.special, result.mask_id)
    return filled, prediction_figure(result), prediction_rows(result), tokens_html(chips), result.to_json()


def on_tokens_only(model_name, text):
    """Offline, with no masked LM: the tokens view only."""
    return tokens_html(compute.tokens_only(model_name, text))


LEFT_TITLE_CHARS = 22  # the words that fit after "sees only" on a line of the narrow right-hand column


def left_figure(out: dict):
    """The causal LM's guesses, titled with what it sees: the model on one line, the words on the next (their end,
    where the blank is, when they are long: a title wider than its column is cut on both sides)."""
    context = out["context"] or "(nothing: the blank is the first word)"
    tail = context[-(LEFT_TITLE_CHARS - 1):]
    shown = context if len(context) <= LEFT_TITLE_CHARS else "…" + (tail.split(" ", 1)[-1] if " " in tail else tail)
    title = plots.safe(out["model"]) + "<br>" + plots.safe(f"sees only “{shown}”")
    return plots.bar_chart([p["token"] for p in out["predictions"]], [p["prob"] for p in out["predictions"]],
                           title=title, colors=plots.GREEN)


def on_left(text, causal_name, top_k):
    if not causal_name and not models.choice_names("causal"):
        raise models.ModelUnavailable("No causal LM is available here.")
    return left_figure(compute.left_only_predictions(compute.causal_lm(causal_name), text, top_k))


def guess_text(g: dict, number: int) -> str:
    head = (f"**{ui.md(g['word'])}** at blank {number}: probability **{g['prob']:.4f}**, "
            f"rank **{g['rank']:,}** of {g['vocab_size']:,} tokens.")
    if g["single_token"]:
        return head
    pieces = " + ".join(ui.md(p) for p in g["pieces"])
    return (f"**{ui.md(g['word'])}** is not one token: it is split into {pieces}. One [MASK] stands for "
            f"exactly one token, so the model cannot predict the whole word in one blank. The first piece, "
            f"{ui.md(g['pieces'][0])}, has probability {g['prob']:.4f} (rank {g['rank']:,}).")


def on_guess(text, model_name, number, word):
    if not model_name:
        raise models.ModelUnavailable(DOWNLOAD_HINT)
    g = compute.guess(compute.masked_lm(model_name), text, number, word)
    return guess_text(g, int(number))


def simulation_rows(sim: dict) -> pd.DataFrame:
    return pd.DataFrame([[e["position"], e["token"], "yes" if e["chosen"] else "", ACTIONS.get(e["action"], ""),
                          e["becomes"] if e["chosen"] else "", round(e["loss"], 3) if "loss" in e else ""]
                         for e in sim["entries"]], columns=SIMULATION_HEADERS)


def simulation_summary(sim: dict) -> str:
    f = sim["frequencies"]
    lines = [f"**Seed {sim['seed']}: {sum(e['chosen'] for e in sim['entries'])} token(s) chosen.**"]
    if sim["loss"] is not None:
        lines.append(f"MLM loss on the chosen positions, L = −Σ log P(original) = **{sim['loss']:.3f}** "
                     f"(model: {ui.md(sim['model'])}).")
    elif not sim["have_model"]:
        lines.append("The loss needs a masked LM, which is not available here (tokens use the uncased vocab).")
    else:
        lines.append("No token was chosen this time, so there is nothing to predict: resample.")
    lines.append(f"Over {f['draws']:,} draws: **{f['chosen_rate']:.1%}** of tokens chosen (target 15 %); of those "
                 f"**{f['mask']:.1%}** → [MASK], **{f['random']:.1%}** → random, **{f['keep']:.1%}** kept "
                 f"(target 80 / 10 / 10).")
    return "\n\n".join(lines)


def on_simulate(text, model_name, seed):
    sim = compute.simulate(model_name, text, seed)
    return simulation_rows(sim), simulation_summary(sim)


def next_seed(seed):
    return check_int(seed, "The seed") + 1 if seed is not None else 1


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    masked_names = models.choice_names("masked")
    if not masked_names:
        gr.Markdown(ui.notice(DOWNLOAD_HINT))
    with gr.Row():
        text = gr.Textbox(EXAMPLES[0], label="Your sentence (write [MASK] or ___ for a blank)", scale=3, max_lines=4,
                          max_length=MAX_CHARS)
        with gr.Column(scale=2):
            model = ui.model_dropdown("masked", label="Masked LM")
            top_k = gr.Slider(*compute.TOP_K_RANGE, value=5, step=1, label="Top-k guesses per blank")
    with gr.Row():
        predict_btn = gr.Button("Predict the blanks", variant="primary")
        ctx.ask_button("fill_mask", "🙋 Ask the class about this blank", text=text, model=model, top_k=top_k)
    gr.Examples([[e] for e in EXAMPLES], inputs=[text], label="Examples", elem_id="fm-examples")
    filled = gr.Markdown()
    with gr.Row():
        with gr.Column(scale=3):
            chart = gr.Plot(label="Both sides: the masked LM's guesses")
        with gr.Column(scale=2):
            causal = ui.model_dropdown("causal", label="Left only: causal LM")
            left_chart = gr.Plot(label="Left only: the causal LM's next-token guesses at the first blank")
    table = ui.table(PREDICTION_HEADERS, "Predictions")
    tokens = gr.HTML(label=TOKENS_CAPTION, container=True, padding=True)  # the caption is in its HTML
    result_json = ui.result_json()
    with gr.Accordion("Check your guess", open=True):
        with gr.Row():
            blank_no = gr.Number(1, label="Blank number", precision=0, minimum=1, maximum=MAX_BLANKS)
            word = gr.Textbox(label="Your word", placeholder="dog", max_length=100)
            guess_btn = gr.Button("How likely is it?")
        guess_out = gr.Markdown()
    with gr.Accordion("Masking simulator: BERT's 15 % with 80 / 10 / 10 (exercise B1)", open=False):
        with gr.Row():
            sim_text = gr.Textbox(compute.SIMULATOR_EXAMPLE, label="Sentence to corrupt", scale=3,
                                  max_length=MAX_CHARS)
            seed = gr.Number(0, label="Seed", precision=0)
        with gr.Row():
            sim_btn = gr.Button("Corrupt", variant="primary")
            resample = gr.Button("Resample (next seed)")
        sim_table = ui.table(SIMULATION_HEADERS, "One draw")
        sim_summary = gr.Markdown()
    ui.course_links(("p_cat", "P(cat) = 0.73"))
    ui.try_this(*TRY_THIS)
    ctx.link(__name__, text=text, model=model, top_k=top_k)

    predicted = [filled, chart, table, tokens, result_json]
    ui.wire([predict_btn.click, text.submit], on_left, [text, causal, top_k], left_chart)
    ctx.on_load(on_left, [text, causal, top_k], left_chart)
    if masked_names:
        ui.wire([predict_btn.click, text.submit], on_predict, [text, model, top_k], predicted)
        ctx.on_load(on_predict, [text, model, top_k], predicted)
    else:
        ui.wire(predict_btn.click, on_tokens_only, [model, text], tokens)
        ctx.on_load(on_tokens_only, [model, text], tokens)
    ui.wire(guess_btn.click, on_guess, [text, model, blank_no, word], guess_out)
    ui.wire(sim_btn.click, on_simulate, [sim_text, model, seed], [sim_table, sim_summary])
    ui.wire(resample.click, next_seed, seed, seed, queue=False).then(
        ui.friendly(on_simulate), [sim_text, model, seed], [sim_table, sim_summary], api_visibility="private")
