"""Pre-training, panel 1: one text, five objectives (GPT, BERT masked LM, BERT NSP, T5 span corruption,
ELECTRA replaced-token detection), each as the training example it makes, in the model's own tokens."""

from __future__ import annotations

import gradio as gr

from labs.core.errors import MAX_CHARS
from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.pretraining import electra, objectives

WORD, PIECE, SPECIAL, CHOSEN, SENTINEL, KEPT = "#dbeafe", "#ede9fe", "#e5e7eb", "#fecaca", "#fde68a", "#bbf7d0"
SEGMENTS = ("#bfdbfe", "#fed7aa")  # segment 0 (A) blue, segment 1 (B) orange
ACTIONS = {"mask": "→ [MASK]", "random": "→ random", "keep": "kept"}
CELL = "padding:2px 6px;border:1px solid #d1d5db;font-size:1.05em;white-space:pre;text-align:center"


def chip(token: str, colour: str, token_id=None, title: str = "") -> str:
    sub = f"<sub>{token_id}</sub>" if token_id is not None else ""
    return (f'<span class="lab-piece" style="background:{colour};font-size:1.1em" title="{ui.esc(title)}">'
            f"{ui.esc(token)}{sub}</span>")


def chips(tokens: list[str], colours: list[str], ids=None) -> str:
    ids = ids or [None] * len(tokens)
    return '<div class="lab-pieces">' + "".join(chip(t, c, i) for t, c, i in zip(tokens, colours, ids)) + "</div>"


def grid(rows: list[tuple[str, list[str], list[str]]]) -> str:
    """A table with one column per position: (row name, cells, cell colours)."""
    body = "".join(f'<tr><th style="{CELL};text-align:left">{ui.esc(name)}</th>'
                   + "".join(f'<td style="{CELL};background:{c}">{ui.esc(x)}</td>' for x, c in zip(cells, colours))
                   + "</tr>" for name, cells, colours in rows)
    # A keyboard can scroll a wide table only when its wrapper takes focus (WCAG: scrollable-region-focusable).
    return ('<div style="overflow-x:auto" tabindex="0" role="region" aria-label="The example, position by position">'
            f'<table style="border-collapse:collapse">{body}</table></div>')


def card(title: str, body: str, signal: str) -> str:
    return (f'<div style="border:2px solid #9ca3af;border-radius:10px;padding:10px 14px;margin:10px 0">'
            f'<div style="font-size:1.25em;font-weight:700">{title}</div>{body}'
            f'<div style="font-size:1.1em;margin-top:6px"><b>Training signal:</b> {signal}</div></div>')


def gpt_card(g: dict | None) -> str:
    if g is None:
        return card("GPT: next token", "<p>No causal LM is available here.</p>", "—")
    n = len(g["input_tokens"])
    body = grid([("input", g["input_tokens"], [WORD] * n), ("target", g["target_tokens"], [CHOSEN] * n)])
    return card(f"GPT: next token ({ui.esc(g['model'])})", body,
                f"every position: <b>{g['signal']['positions']} of {g['signal']['of']}</b> (100 %) predict the token "
                "after them; the target is the input shifted by one.")


def mlm_card(m: dict, names: dict) -> str:
    colours = [CHOSEN if a else WORD for a in m["actions"]]
    labels = [m["tokens"][i] if lab != -100 else "·" for i, lab in enumerate(m["labels"])]
    body = grid([("original", m["tokens"], [WORD] * len(colours)), ("model sees", m["input_tokens"], colours),
                 ("what happened", [ACTIONS.get(a, "") for a in m["actions"]], colours),
                 ("label (−100 = ·)", labels, colours)])
    s = m["signal"]
    return card(f"BERT: masked LM ({ui.esc(names['mlm'])})", body,
                f"<b>{s['positions']} of {s['of']}</b> tokens ({s['fraction']:.0%}; 15 % on average) are chosen: "
                "80 % become [MASK], 10 % a random token, 10 % stay; only they give a loss.")


def nsp_card(n: dict) -> str:
    colours = [SEGMENTS[s] for s in n["segment_ids"]]
    legend = f'{chip("segment 0: [CLS] A [SEP]", SEGMENTS[0])} {chip("segment 1: B [SEP]", SEGMENTS[1])}'
    label_colour = "#047857" if n["label"] == "IsNext" else "#b91c1c"
    body = (f'<div class="lab-legend">{legend}</div>{chips(n["tokens"], colours, n["segment_ids"])}'
            f'<p style="font-size:1.15em">Label: <b style="color:{label_colour}">{n["label"]}</b>'
            f'{" (B is the sentence after A)" if n["label"] == "IsNext" else " (B comes from another text)"}. '
            f'{ui.esc(n["note"])}</p>')
    return card(f"BERT: next-sentence prediction ({ui.esc(n['model'])})", body,
                "<b>one</b> label (IsNext / NotNext, 50/50) per pair, read from [CLS]; the number under each "
                "token is its segment id.")


def t5_card(t: dict) -> str:
    def colours(tokens):
        return [SENTINEL if tok.startswith("<extra_id_") else SPECIAL if tok == "</s>" else WORD for tok in tokens]
    s = t["signal"]
    body = (f'<p style="margin:4px 0"><b>Input</b> (encoder)</p>'
            f'{chips(t["input_tokens"], colours(t["input_tokens"]))}'
            f'<p style="margin:4px 0"><b>Target</b> (decoder)</p>'
            f'{chips(t["target_tokens"], colours(t["target_tokens"]))}')
    return card(f"T5: span corruption ({ui.esc(t['model'])})", body,
                f"<b>{s['noise_tokens']}</b> of {len(t['ids'])} tokens ({s['fraction']:.0%}) in <b>{s['spans']}</b> "
                f"span(s) become sentinels; input <b>{s['input_length']}</b> and target <b>{s['target_length']}</b> "
                f"tokens against the original <b>{s['original_length']}</b>: a short target, so training is cheap.")


def electra_card(e: dict) -> str:
    n, chosen = len(e["ids"]), set(e["positions"])
    colours = [CHOSEN if i in chosen else WORD for i in range(n)]
    rows = [("original", e["tokens"], [WORD] * n), ("generator sees", e["generator_input_tokens"], colours)]
    if e["labels"] is not None:
        label_colours = [CHOSEN if y else KEPT for y in e["labels"]]
        rows += [("generator's sample", [t if i in chosen else "·" for i, t in enumerate(e["sampled_tokens"])], colours),
                 ("discriminator reads", e["sampled_tokens"], label_colours),
                 ("label", ["replaced" if y else "original" for y in e["labels"]], label_colours)]
    if e["p_replaced"] is not None:
        rows.append(("P(replaced)", [f"{p:.2f}" for p in e["p_replaced"]],
                     [CHOSEN if p > 0.5 else KEPT for p in e["p_replaced"]]))
    notes = "".join(f'<p style="margin:4px 0">⚠️ {ui.esc(x)}</p>' for x in e["notes"])
    acc = e["discriminator_accuracy"]
    score = "" if acc is None else (
        f'<p style="font-size:1.1em;margin:4px 0">Discriminator ({ui.esc(e["discriminator"])}): <b>{acc["accuracy"]:.0%}'
        f'</b> of tokens right; replaced tokens caught <b>{acc["replaced_caught"]} of {acc["replaced"]}</b>, originals '
        f'called original <b>{acc["originals_kept"]} of {acc["originals"]}</b>.</p>')
    who = " · ".join(f"{k} {ui.esc(v)}" for k, v in (("generator", e["generator"]), ("discriminator", e["discriminator"]))
                     if v)
    s = e["signal"]
    return card(f"ELECTRA: replaced-token detection ({who or 'tokens only'})", notes + grid(rows) + score,
                f"<b>every token: {s['positions']} of {s['of']}</b> (100 %) gets a label, original or replaced, "
                f"against BERT's <b>{s['masked_lm_positions']} of {s['masked_lm_of']}</b> "
                f"({s['masked_lm_fraction']:.0%}). A sample equal to the original counts as original. "
                f"Textbook 20.12.2: “{ui.esc(electra.COURSE[0][2])}”")


def examples_html(result: dict) -> str:
    notes = "".join(f"<p>⚠️ {ui.esc(n)}</p>" for n in result["notes"])
    return (notes + gpt_card(result["gpt"]) + mlm_card(result["mlm"], {"mlm": result["mlm"]["model"]})
            + nsp_card(result["nsp"]) + t5_card(result["t5"]) + electra_card(result["electra"]))


def on_examples(text, text_b, masked_name, causal_name, seq2seq_name, seed):
    masked, causal, seq2seq, notes, rtd = objectives.resolve(masked_name, causal_name, seq2seq_name)  # once per click
    result = objectives.build(text, text_b, masked, causal, seq2seq, seed, notes, rtd).to_json()
    return examples_html(result), result


def build(ctx: Build) -> dict:
    gr.Markdown("## 1. One text, five objectives")
    with gr.Row():
        text = gr.Textbox(objectives.EXAMPLE, label="Your paragraph (two sentences or more)", lines=3, scale=3,
                          max_length=MAX_CHARS)
        text_b = gr.Textbox("", label="A second text (NotNext sentences; empty: a built-in passage)", lines=3,
                            scale=2, max_length=MAX_CHARS)
    with gr.Row():
        masked = ui.model_dropdown("masked", label="BERT (masked LM; empty: MiniLM's BERT tokens)")
        causal = ui.model_dropdown("causal", label="GPT (causal LM)")
        seq2seq = ui.model_dropdown("seq2seq", label="T5 (encoder-decoder)")
        seed = gr.Number(0, label="Seed (same seed, same example)", precision=0, minimum=0)
    button = gr.Button("Build the five training examples", variant="primary")
    out = gr.HTML()
    result = ui.result_json()
    ui.wire([button.click, text.submit], on_examples, [text, text_b, masked, causal, seq2seq, seed], [out, result])
    ctx.on_load(on_examples, [text, text_b, masked, causal, seq2seq, seed], [out, result])
    return {"text": text, "masked": masked, "causal": causal, "seq2seq": seq2seq, "seed": seed}
