"""Pre-training, panel 2: next-sentence prediction with BERT's own NSP head, and the guess-then-reveal
measurement on the built-in passages (random sentences vs the same pair swapped)."""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from labs.core.errors import MAX_CHARS, LabError, message_for
from labs.core.models import models
from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.pretraining import nsp, passages
from labs.pretraining.tab_examples import SEGMENTS, chips

NEEDS_BERT = ("Next-sentence prediction needs BERT's own NSP head (BertForPreTraining, bert-base-uncased), which "
              "is not available here; MiniLM has no NSP head, and a random one would only show noise. While online, "
              "run `./lab download` once.")


def example_pairs() -> list[list[str]]:
    """Two true pairs, a random pair and a swapped pair from the built-in passages."""
    pairs = passages.consecutive_pairs()
    (_, a1, b1), (_, a2, b2), (_, a3, _) = pairs[8], pairs[0], pairs[20]
    return [[a1, b1], [a2, b2], [a1, a3], [b1, a1]]


def has_nsp_weights(choice: models.ModelChoice) -> bool:
    """bert-base-uncased (whose config says BertForMaskedLM, but whose checkpoint has the NSP head) or a
    local checkpoint saved as *ForPreTraining."""
    if choice.name == "bert-base-uncased":
        return True
    try:
        config = json.loads((Path(choice.location) / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return any("ForPreTraining" in a for a in config.get("architectures") or [])


def nsp_choices() -> list[str]:
    """The masked LMs, those with an NSP head first (the default must not be one without)."""
    found = models.choices("masked")
    return [c.name for c in found if has_nsp_weights(c)] + [c.name for c in found if not has_nsp_weights(c)]


def nsp_html(r: nsp.NspResult) -> str:
    colours = [SEGMENTS[s] for s in r.segment_ids]
    verdict = "IsNext" if r.p_is_next > 0.5 else "NotNext"
    return (f'<p style="font-size:1.4em">P(IsNext) = <b>{r.p_is_next:.3f}</b> → <b>{verdict}</b> '
            f'<span style="font-size:0.7em">(logits IsNext {r.logits[0]:.3f}, NotNext {r.logits[1]:.3f}; '
            f'model {ui.esc(r.model)})</span></p>{chips(r.tokens, colours, r.segment_ids)}')


def on_nsp(sentence_a, sentence_b, model_name):
    if not model_name and not models.choice_names("masked"):
        raise models.ModelUnavailable(NEEDS_BERT)
    result = nsp.predict(nsp.load(model_name), sentence_a, sentence_b)  # one look-up per click
    return nsp_html(result), result.to_json()


def on_nsp_first(sentence_a, sentence_b, model_name):
    """The first page: a model without an NSP head shows the reason in place of a result."""
    try:
        return on_nsp(sentence_a, sentence_b, model_name)
    except LabError as exc:
        return f"<p>⚠️ {ui.esc(message_for(exc))}</p>", None


def reveal_markdown(result: dict, guess_random, guess_swapped) -> str:
    rows = [("random sentence from another passage (what NSP was trained on)", guess_random,
             result["accuracy_random"], "BERT: 97–98 % on NSP (Devlin et al.)"),
            ("the same two sentences swapped (ALBERT's sentence order)", guess_swapped, result["accuracy_swapped"],
             "NSP-trained model: 52.0 % on sentence order (ALBERT, Table 5)")]
    table = "| Negative pairs | Your guess | Measured here | Published |\n|---|---|---|---|\n" + "\n".join(
        f"| {name} | {float(g or 0):.0f} % | **{acc:.1%}** | {pub} |" for name, g, acc, pub in rows)
    means = result["mean_p_is_next"]
    return (f"{table}\n\n{result['pairs']} true pairs from {len(passages.passages())} built-in passages, each beside "
            f"one negative of each kind (chance = 50 %). Mean P(IsNext): true pairs {means['next']:.3f}, random "
            f"{means['random']:.3f}, swapped {means['swapped']:.3f} (model: {ui.md(result['model'])}).\n\n"
            "A topic change gives a random sentence away; a swapped pair keeps the topic, so only the order is left "
            "to detect. **NSP is too easy: it detects topic.** ALBERT's sentence-order model scores 78.9 % on NSP; "
            "RoBERTa dropped NSP and matched or improved (Table 2).")


def on_reveal(model_name, guess_random, guess_swapped):
    if not model_name and not models.choice_names("masked"):
        raise models.ModelUnavailable(NEEDS_BERT)
    return reveal_markdown(nsp.accuracy(nsp.load(model_name)), guess_random, guess_swapped)


def build(ctx: Build) -> dict:
    gr.Markdown("## 2. Next-sentence prediction with BERT's own NSP head")
    names = nsp_choices()
    if not names:
        gr.Markdown(ui.notice(NEEDS_BERT))
    pairs = example_pairs()
    with gr.Row():
        a = gr.Textbox(nsp.EXAMPLE_A, label="Sentence A", max_length=MAX_CHARS, scale=2)
        b = gr.Textbox(nsp.EXAMPLE_B, label="Sentence B", max_length=MAX_CHARS, scale=2)
        model = gr.Dropdown(names, value=names[0] if names else None, label="BERT with its NSP head",
                            allow_custom_value=True, scale=1)
    gr.Examples(pairs, inputs=[a, b], label="Pairs from the built-in passages (true, true, random, swapped)",
                elem_id="pt-nsp-examples")
    button = gr.Button("P(IsNext)?", variant="primary")
    out = gr.HTML()
    result = ui.result_json()
    gr.Markdown("**Guess first**: on the built-in passages, how often is NSP right when the negative is a random "
                "sentence, and when it is the same pair swapped?")
    with gr.Row():
        guess_random = gr.Slider(0, 100, value=75, step=1, label="Your guess: accuracy vs random sentences (%)")
        guess_swapped = gr.Slider(0, 100, value=75, step=1, label="Your guess: accuracy vs swapped pairs (%)")
        reveal = gr.Button("Reveal: measure it live", variant="primary")
    revealed = gr.Markdown()
    ui.wire([button.click, b.submit], on_nsp, [a, b, model], [out, result])
    ui.wire(reveal.click, on_reveal, [model, guess_random, guess_swapped], revealed)
    if names:
        ctx.on_load(on_nsp_first, [a, b, model], [out, result])
    return {"sentence_a": a, "sentence_b": b, "nsp_model": model}
