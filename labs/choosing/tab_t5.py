"""Choosing a model, panel: one model for every task, T5's text-to-text prefixes (textbook 20.10.1). The raw
text in (prefix + text, its tokens) and the raw text out of greedy generate; offline, what T5 would read."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pandas as pd

from labs.choosing import t5_prefixes as t5
from labs.core.errors import MAX_CHARS
from labs.core.models import models
from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build

OWN = "own"
HEADERS = ["Prefix", "Raw text in", "Raw text out"]
INTRO = (f"**{t5.TEXTBOOK}:** “{t5.QUOTES[0]}” … “{t5.QUOTES[2]}” … “{t5.QUOTES[1]}” Below, one checkpoint "
         "and one `generate` call for every task: only the text in front changes.")
TRY = ("**Try this.** Keep “this movie is great” and switch the task: does the same model now translate it, "
       "judge its grammar, score it against itself? Empty the prefix: what does T5 write when no task is named? Type "
       "a prefix T5 never saw in training (“classify sentiment:”): the textbook (20.10.7) says "
       f"“{course_quotes.text('t5_new_prefix')}” Does that hold without fine-tuning on it?")
SPECIAL, WORD = "#e5e7eb", "#dbeafe"


def chips(tokens: list[str], ids: list[int], special: set[int]) -> str:
    return '<div class="lab-pieces">' + "".join(
        f'<span class="lab-piece{" lab-piece-special" if i in special else ""}" '
        f'style="background:{SPECIAL if i in special else WORD}">{ui.esc(t)}<sub>{i}</sub></span>'
        for t, i in zip(tokens, ids)) + "</div>"


def result_html(r: dict, special: set[int]) -> str:
    note = f'<p class="lab-notice">{ui.esc(r["note"])}</p>' if r["note"] else ""
    stopped = "it wrote </s>" if r["stopped"] == "eos" else f"it reached max_new_tokens = {r['settings']['max_new_tokens']}"
    return (f'<p style="font-size:1.1em"><b>Raw text in</b> (what {ui.esc(r["model"])} reads: the prefix, one space, '
            f'the text): <code>{ui.esc(r["input_text"])}</code></p>'
            f'<p>Its {len(r["input_ids"])} tokens (id under each; tokenizer(text) closes with &lt;/s&gt;):</p>'
            f'{chips(r["input_tokens"], r["input_ids"], special)}'
            f'<p style="font-size:1.1em"><b>Raw text out</b>: <code style="font-size:1.15em">'
            f'{ui.esc(r["output_text"]) or "(empty)"}</code></p>'
            f'<p>Its tokens (the decoder starts from &lt;pad&gt;; it stopped because {ui.esc(stopped)}):</p>'
            f'{chips(r["output_tokens"], r["output_ids"], special)}'
            f'<p>Settings: <code>{ui.esc(r["call"])}</code> (greedy: the most probable token at every step).</p>{note}')


def offline_html(prefix, text, why: str) -> str:
    why = ui.esc(why).replace("`./lab download`", "<code>./lab download</code>")
    return (f'<p class="lab-notice">{why}</p><p style="font-size:1.1em"><b>Raw text in</b> (what T5 would '
            f'read): <code>{ui.esc(t5.input_text(prefix, text))}</code></p>')


def special_ids(loaded) -> set[int]:
    return set(loaded.tokenizer.all_special_ids)


def on_run(prefix, text, model_name, max_new):
    try:
        loaded = t5.resolve(model_name)  # once per click
    except models.ModelUnavailable as exc:
        return offline_html(prefix, text, str(exc)), {"input_text": t5.input_text(prefix, text), "note": str(exc)}
    r = t5.text_to_text(loaded, prefix, text, max_new).to_json()
    return result_html(r, special_ids(loaded)), r


def on_every(text, model_name, max_new):
    loaded = t5.resolve(model_name)
    rows = [[r.prefix, r.input_text, r.output_text] for r in t5.every_prefix(loaded, text, max_new)]
    return pd.DataFrame(rows, columns=HEADERS)


def on_task(key):
    """The prefix and the source's example text for a task; "your own" leaves both as they are."""
    if key not in t5.PREFIXES:
        return gr.update(), gr.update(), "Type your own prefix in the box (T5 knows only the prefixes it was trained on)."
    p = t5.PREFIXES[key]
    target = f"The source's target: “{ui.md(p.target)}”. " if p.target else ""
    return p.prefix, p.example, f"{target}Source: {ui.md(p.source)}."


def build() -> SimpleNamespace:
    gr.Markdown("## 6. One model, every task: T5's text-to-text prefixes")
    gr.Markdown(INTRO)
    names = models.choice_names("seq2seq")
    if names and t5.T5_SMALL not in names:  # (with none at all, the result itself says what is missing)
        gr.Markdown(ui.notice(t5.NEEDS_T5))
    first = t5.PREFIXES["sst2"]
    with gr.Row():
        task = gr.Dropdown([(p.label, k) for k, p in t5.PREFIXES.items()] + [("Your own prefix", OWN)], value="sst2",
                           label="T5 task (its prefix)", scale=2)
        prefix = gr.Textbox(first.prefix, label="Prefix (exactly what goes in front; edit it or type your own)",
                            scale=2, max_length=t5.MAX_PREFIX_CHARS)
        model = gr.Dropdown(names or [t5.T5_SMALL], value=t5.T5_SMALL if t5.T5_SMALL in names or not names else names[0],
                            label="Encoder-decoder", allow_custom_value=True, scale=1)
    source = gr.Markdown(on_task("sst2")[2])
    text = gr.Textbox(first.example, label="Text", lines=2, max_length=MAX_CHARS)
    with gr.Row():
        max_new = gr.Slider(1, t5.MAX_NEW_TOKENS, value=t5.DEFAULT_NEW_TOKENS, step=1, label="max_new_tokens", scale=2)
        run = gr.Button("Run T5 on prefix + text", variant="primary", scale=1)
        every = gr.Button("Same text, every prefix", scale=1)
    out = gr.HTML()
    table = ui.table(HEADERS, "The same text under each prefix: one model, one call", wrap=True)
    result = ui.result_json()
    gr.Markdown(TRY)
    return SimpleNamespace(task=task, prefix=prefix, model=model, source=source, text=text, max_new=max_new, run=run,
                           every=every, out=out, table=table, result=result)


def wire(ctx: Build, p: SimpleNamespace) -> None:
    inputs = [p.prefix, p.text, p.model, p.max_new]
    ui.wire(p.task.input, on_task, p.task, [p.prefix, p.text, p.source]).then(
        ui.friendly(on_run), inputs, [p.out, p.result], api_visibility="private")
    ui.wire([p.run.click, p.text.submit, p.prefix.submit], on_run, inputs, [p.out, p.result])
    ui.wire(p.every.click, on_every, [p.text, p.model, p.max_new], p.table)
    ctx.on_load(on_run, inputs, [p.out, p.result])
