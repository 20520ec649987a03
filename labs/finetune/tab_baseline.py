"""Fine-tune, panel "Would a simple model do?": a keyword rule and TF-IDF with a logistic regression beside the
fine-tuned encoder on the same reviews: accuracy, time per review (measured here) and size, under the lecture's
slide "When NOT to Use Pre-trained Models". The encoder is the lab's default run, a shared job (reused when
cached)."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build
from labs.finetune import baseline, tab_long_run
from labs.finetune.data import builtin_data
from labs.finetune.training import RunResult

TITLE = "Would a simple model do? A keyword rule and TF-IDF beside the fine-tuned encoder"
BUTTON = "Compare with simple baselines"
HEADERS = ["method", "validation accuracy", "time per review (measured here)", "parameters", "size"]


def course_markdown() -> str:
    first = course_quotes.get(baseline.QUOTE_IDS[0])
    quoted = "\n\n".join("\n".join(f"> {line}" if line else ">" for line in course_quotes.text(q).split("\n"))
                         for q in baseline.QUOTE_IDS)
    return f"**{ui.md(first.cite)}**, two of its four boxes:\n\n{quoted}"


def size_text(row: dict) -> str:
    return row["size"] + (f" ({row['size_bytes'] / 1e6:.2f} MB)" if row["size_bytes"] else "")


def ms_text(ms: float | None) -> str:
    return "not measured (the run's model was freed)" if ms is None else f"{ms:.3g} ms"


def table(result: dict) -> pd.DataFrame:
    return pd.DataFrame([[r["method"], f"{r['accuracy']:.1%}", ms_text(r["ms_per_review"]), f"{r['parameters']:,}",
                          size_text(r)] for r in result["rows"]], columns=HEADERS)


def summary(result: dict) -> str:
    keyword, tfidf, encoder = result["rows"]
    gap = 100 * (encoder["accuracy"] - tfidf["accuracy"])
    speed = (f"; one review takes it {encoder['ms_per_review'] / tfidf['ms_per_review']:.0f}× as long as TF-IDF's "
             "prediction" if encoder["ms_per_review"] and tfidf["ms_per_review"] else "")
    return (f"**On {result['validation']} validation reviews the fine-tuned encoder is {gap:+.1f} points from TF-IDF "
            f"({encoder['accuracy']:.1%} vs {tfidf['accuracy']:.1%}); the keyword rule reaches "
            f"{keyword['accuracy']:.1%}.** The encoder has {encoder['parameters']:,} parameters{speed}. TF-IDF and "
            f"the encoder learned from the same {result['train_examples']} training reviews; the keyword rule learned "
            f"nothing (LM Lab's own {len(result['keywords']['positive'])} positive and "
            f"{len(result['keywords']['negative'])} negative words; a review with as many of each, or none, is called "
            f"{ui.md(result['tie_label'])}, the training reviews' most frequent label). Times are measured "
            f"{result['measured']} ({result['timed']} reviews each, after one warm-up): another machine, or a class "
            "using this one, gives other figures. The encoder's run: the lab's defaults "
            f"({result['settings']['strategy']}, learning rate {result['settings']['learning_rate']:g}, "
            f"{result['settings']['epochs']} epochs, seed {result['settings']['seed']}), reused if a student made it.")


def keywords_markdown() -> str:
    return (f"The keyword rule's words (LM Lab's own): positive: {', '.join(baseline.POSITIVE)}; negative: "
            f"{', '.join(baseline.NEGATIVE)}.")


async def on_compare(model, examples, seed, request: gr.Request = None):
    _, data, ticket = baseline.events(model, seed, examples, owner=getattr(request, "session_hash", None), page=True)
    follow = ui.Follow(ticket, lambda step, events: (step.step / step.total_steps,
                                                     f"the encoder's run: step {step.step} of {step.total_steps}"))
    async for line in follow:
        yield {"progress": line}
    runs = [e for e in follow.events if isinstance(e, RunResult)]
    if follow.gone or not runs:
        yield {"progress": follow.gone_html() if follow.gone else ui.progress_html(None, "Stopped.")}
        return
    result = baseline.compare(runs[-1], data)
    yield {"progress": ui.DONE, "table": table(result), "words": summary(result), "result": result}


def build(ctx: Build, model) -> dict:
    """The panel (the model is the lab's encoder dropdown); returns the inputs a link may set."""
    with gr.Accordion(TITLE, open=False, elem_id="ft-baseline"):
        gr.Markdown("Before fine-tuning a transformer, try something simple. Below, a **keyword rule** and **TF-IDF "
                    "features with a logistic regression** (scikit-learn) classify the same validation reviews as the "
                    "fine-tuned encoder: how much accuracy does the big model add, and what does it cost per review?")
        gr.Markdown(course_markdown(), elem_classes=["lab-secondary"])
        gr.Markdown(keywords_markdown(), elem_classes=["lab-secondary"])
        with gr.Row():
            examples = gr.Slider(8, len(builtin_data().train), value=baseline.TRAIN_EXAMPLES, step=1,
                                 label="Training reviews (the same for TF-IDF and the encoder)")
            seed = gr.Number(0, label="Seed (the encoder's run and the training reviews)", precision=0, minimum=0)
        controls = tab_long_run.buttons(BUTTON)
        progress, words = gr.HTML(), gr.Markdown()
        table_out, result = ui.table(HEADERS, "Three classifiers on the same reviews", wrap=True), ui.result_json()
    outputs = dict(progress=progress, table=table_out, words=words, result=result)
    tab_long_run.wire(controls, on_compare, [model, examples, seed], outputs, [table_out])
    return {"baseline_examples": examples, "baseline_seed": seed}
