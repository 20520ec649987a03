"""Fine-tune, panel "ULMFiT's middle stage": a language model goes on with its own objective on the reviews' text
(no labels), then learns the task from a few labelled reviews; the same fine-tune without the middle stage beside
it. One shared job."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build
from labs.finetune import tab_long_run, ulmfit
from labs.finetune.training import Step

TITLE = "ULMFiT's middle stage: language modelling on in-domain text before fine-tuning"
BUTTON = "Run the three stages"
HEADERS = ["", "without the middle stage", "with the middle stage"]


def stages_markdown() -> str:
    items = "<br>".join(f"{i}. “{ui.md(quote)}”" for i, (_, quote) in enumerate(ulmfit.STAGES, start=1))
    first = course_quotes.get(ulmfit.DOMAIN_QUOTES[0])
    shift = " ".join(f"“{ui.md(course_quotes.text(q))}”" for q in ulmfit.DOMAIN_QUOTES)
    return (f"**The three stages ({ulmfit.STRATEGIES}, slides “{ulmfit.SLIDE}”):**<br>{items}<br><br>"
            f"The middle stage is what the textbook calls domain-adaptive pre-training (**{ui.md(first.cite)}**): "
            f"{shift}")


def rows(r: dict) -> pd.DataFrame:
    loss = f"{r['lm_loss_before']:.3f} (perplexity {r['perplexity_before']:.1f})"
    after = f"{r['lm_loss_after']:.3f} (perplexity {r['perplexity_after']:.1f})"
    return pd.DataFrame([
        ["language-model loss on the validation reviews' text (in domain)", loss, after],
        [f"language-model loss on {r['ood_texts']} texts of other domains ({', '.join(r['ood_domains'])})",
         f"{r['ood_loss_before']:.3f} (perplexity {r['ood_perplexity_before']:.1f})",
         f"{r['ood_loss_after']:.3f} (perplexity {r['ood_perplexity_after']:.1f})"],
        [f"accuracy after fine-tuning on {r['labelled']} labelled reviews", f"{r['without']['accuracy']:.1%}",
         f"{r['with']['accuracy']:.1%}"],
        ["accuracy per epoch", " → ".join(f"{e['accuracy']:.0%}" for e in r["without"]["eval"]),
         " → ".join(f"{e['accuracy']:.0%}" for e in r["with"]["eval"])]], columns=HEADERS)


def summary(r: dict) -> str:
    gain = 100 * r["gain"]
    verdict = ("the middle stage helped here" if gain > 0 else "the middle stage did not help here" if gain < 0
               else "no difference here")
    return (f"**{ui.md(r['model'])}: {verdict} ({gain:+.1f} points on {r['validation']} validation reviews).** The "
            f"middle stage ({r['objective']}, {r['lm_epochs']} epoch over {r['unlabelled_texts']} reviews without their "
            f"labels, learning rate {r['lm_learning_rate']:g}) moved the language model's loss on unseen reviews "
            f"{r['lm_loss_before']:.3f} → {r['lm_loss_after']:.3f} (perplexity {r['perplexity_before']:.1f} → "
            f"{r['perplexity_after']:.1f}), and on {r['ood_texts']} short texts that are not reviews (LM Lab's own: "
            f"{', '.join(r['ood_domains'])}) {drift(r)}. Then each model got a new classification layer "
            f"(the same seed) and {r['epochs']} epochs on the same {r['labelled']} labelled reviews. One seed and "
            f"{r['validation']} reviews: a few points either way are within the noise. ULMFiT adapted an LSTM on a "
            f"whole in-domain corpus (IMDb); here the middle stage reads {r['unlabelled_texts']} short reviews, with a "
            "model whose pre-training text already holds many: whether that helps is what the table measures.")


def drift(r: dict) -> str:
    """What the middle stage did to the perplexity on the other domains, in words."""
    before, after = r["ood_perplexity_before"], r["ood_perplexity_after"]
    change = (after - before) / before
    verdict = "rose" if change > 0.01 else "fell" if change < -0.01 else "stayed within 1 %"
    own = (r["perplexity_after"] - r["perplexity_before"]) / r["perplexity_before"]
    why = ("; both fell: these texts are single short sentences too, and what the middle stage taught may be that "
           "format as much as the reviews' domain" if change < -0.01 and own < -0.01 else "")
    return f"the perplexity {verdict}: {before:.1f} → {after:.1f} ({change:+.1%}, against {own:+.1%} on the reviews{why})"


async def on_stages(model, labelled, lm_epochs, epochs, seed, request: gr.Request = None):
    plan = ulmfit.check_plan(model, labelled, lm_epochs, epochs, seed)
    follow = ui.Follow(ulmfit.ticket(plan, owner=getattr(request, "session_hash", None), page=True), step_words,
                       every=3)
    async for line in follow:
        yield {"progress": line}
    result = next((e.to_json() for e in follow.events if isinstance(e, ulmfit.Result)), None)
    if follow.gone or result is None:
        yield {"progress": follow.gone_html() if follow.gone else ui.progress_html(None, "Stopped.")}
        return
    yield {"progress": ui.DONE, "chart": ulmfit.loss_figure(result), "table": rows(result), "words": summary(result),
           "result": result}


def step_words(step: Step, events: list) -> tuple[float, str]:
    """The progress line: the stage (a third of the bar each), its step and loss."""
    stage = ulmfit.PHASES.index(step.phase)
    return ((stage + step.step / step.total_steps) / 3,
            f"{step.phase}: step {step.step} of {step.total_steps}, loss {step.loss:.3f}")


def build(ctx: Build) -> dict:
    with gr.Accordion(TITLE, open=False, elem_id="ft-ulmfit"):
        gr.Markdown("A pre-trained language model first keeps learning **its own objective on in-domain text without "
                    "labels** (the built-in reviews' text), then learns positive vs negative from a few labelled "
                    "reviews. The same fine-tune from the model without the middle stage is the control.")
        gr.Markdown(stages_markdown(), elem_classes=["lab-secondary"])
        with gr.Row():
            model = ui.model_dropdown(*ulmfit.FAMILIES, label="Language model (causal, or masked with its MLM head)")
            labelled = gr.Slider(*ulmfit.LIMITS["labelled"], value=ulmfit.DEFAULTS["labelled"], step=1,
                                 label="Labelled reviews for the fine-tune")
            lm_epochs = gr.Slider(*ulmfit.LIMITS["lm_epochs"], value=ulmfit.DEFAULTS["lm_epochs"], step=1,
                                  label="Middle-stage epochs")
            epochs = gr.Slider(*ulmfit.LIMITS["epochs"], value=ulmfit.DEFAULTS["epochs"], step=1,
                               label="Fine-tune epochs")
            seed = gr.Number(0, label="Seed", precision=0, minimum=0)
        controls = tab_long_run.buttons(BUTTON)
        progress, chart = gr.HTML(), gr.Plot(label="The three stages' losses")
        table, words, result = ui.table(HEADERS, "With and without the middle stage", wrap=True), gr.Markdown(), \
            ui.result_json()
    outputs = dict(progress=progress, chart=chart, table=table, words=words, result=result)
    tab_long_run.wire(controls, on_stages, [model, labelled, lm_epochs, epochs, seed], outputs, [chart])
    return {"ulmfit_model": model, "labelled": labelled, "lm_epochs": lm_epochs, "ulmfit_epochs": epochs}
