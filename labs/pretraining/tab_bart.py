"""Pre-training, panel 6: BART's denoising. The student's text corrupted five ways in BART's own tokens
(masking, deletion, infilling, sentence permutation, rotation), and facebook/bart-base writing it back."""

from __future__ import annotations

import gradio as gr

from labs.core.errors import MAX_CHARS
from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.pretraining import bart_noise as bn
from labs.pretraining.tab_examples import CHOSEN, PIECE, SENTINEL, WORD, chips

COURSE = (f"**Textbook {bn.SECTION.split(' ', 1)[0]}:**\n\n> {bn.QUOTE}\n>\n"
          + "\n".join(f"> - {bn.QUOTE_ITEMS[t]}" for t in bn.TRANSFORMS)
          + "\n\nBelow, the five corruptions of BART's paper (Lewis et al. 2020, section 2.2) on your text, in BART's "
            f"tokens (␣ = a space). Masking and deletion take {bn.MASK_RATE * 100:.0f} % of the tokens (BERT's rate), "
            f"infilling {bn.INFILL_RATE * 100:.0f} % in spans whose lengths are drawn from Poisson(λ = 3); the seed "
            "fixes every draw.")
FATE_COLOURS = {"kept": WORD, "masked": SENTINEL, "deleted": CHOSEN, "in a span": SENTINEL, "moved": PIECE}


def summary(r: dict) -> str:
    n, d = len(r["original_tokens"]), r["details"]
    if r["transform"] == "mask":
        return f"{len(d['positions'])} of {n} tokens → {bn.MASK}: BART sees where a token is missing."
    if r["transform"] == "delete":
        return f"{len(d['positions'])} of {n} tokens deleted: nothing marks where; BART must find the gaps."
    if r["transform"] == "infill":
        lengths = ", ".join(str(s["length"]) for s in d["spans"])
        empty = " A 0-length span inserts a <mask> where nothing is missing." if 0 in d["lengths"] else ""
        return (f"{len(d['spans'])} spans of lengths {lengths} ({sum(d['lengths'])} of {n} tokens), each → ONE "
                f"{bn.MASK}: BART must also tell how many tokens each hides.{empty}")
    if r["transform"] == "permute":
        if len(d["sentences"]) < 2:
            return "One sentence: there is nothing to shuffle. Type two or more sentences."
        return f"{len(d['sentences'])} sentences, now in the order {', '.join(str(k + 1) for k in d['order'])}."
    start = d["start"]
    return (f"The document now starts at token {start + 1} ({r['original_tokens'][start]}): BART must find the true "
            "start.")


def card(r: dict, selected: bool) -> str:
    border = "#b45309" if selected else "#9ca3af"
    noised = [SENTINEL if t == bn.MASK else WORD for t in r["noised_tokens"]]
    return (f'<div style="border:2px solid {border};border-radius:10px;padding:8px 12px;margin:8px 0">'
            f'<div style="font-size:1.2em;font-weight:700">{ui.esc(r["name"])}</div>'
            f'<p style="margin:4px 0">{ui.esc(summary(r))}</p>'
            f'<div style="font-size:0.95em">original (yellow: masked or in a span, red: deleted, purple: moved)</div>'
            f'{chips(r["original_tokens"], [FATE_COLOURS[f] for f in r["fate"]])}'
            f'<div style="font-size:0.95em">BART\'s encoder reads</div>{chips(r["noised_tokens"], noised)}</div>')


def reconstruction(r: dict) -> str:
    rebuilt = r["reconstruction"]
    if rebuilt is None:
        return ui.notice(r["note"])
    verdict = "the original, exactly" if rebuilt["exact"] else "not exactly the original"
    return (f"**{ui.md(rebuilt['model'])} wrote back ({r['name'].lower()}):** {ui.md(rebuilt['text'])}\n\n"
            f"That is {verdict}. Its loss on the original, given the corrupted text (teacher forcing, BART's "
            f"training loss): **{rebuilt['loss']:.3f}** nats per token.")


def on_bart(text, transform, seed):
    bart = bn.offered_bart()  # resolved once per click: facebook/bart-base when offered, else None
    cards = bn.corruptions(bart, text, seed)
    chosen = bn.run(bart, text, transform, seed)
    html = "".join(card(r, r["transform"] == chosen["transform"]) for r in cards)
    tokens = f"Tokens: {ui.esc(chosen['tokenizer'])}."
    return f"<p>{tokens}</p>{html}", reconstruction(chosen), chosen


def build(ctx: Build) -> dict:
    gr.Markdown("## 6. BART: corrupt a document five ways, then write it back")
    gr.Markdown(COURSE)
    with gr.Row():
        text = gr.Textbox(bn.EXAMPLE, label="Your document (two or more sentences)", lines=3, scale=3,
                          max_length=MAX_CHARS)
        with gr.Column(scale=2):
            transform = gr.Radio([(bn.NAMES[t], t) for t in bn.TRANSFORMS], value="infill",
                                 label="BART reconstructs (and the API returns)")
            seed = gr.Number(0, label="Seed", precision=0, minimum=0)
    button = gr.Button("Corrupt and reconstruct", variant="primary")
    rebuilt = gr.Markdown()
    out = gr.HTML()
    result = ui.result_json()
    inputs, outputs = [text, transform, seed], [out, rebuilt, result]
    ui.wire([button.click, text.submit, transform.input], on_bart, inputs, outputs)
    ctx.on_load(on_bart, inputs, outputs)
    return {"bart_text": text, "bart_transform": transform, "bart_seed": seed}
