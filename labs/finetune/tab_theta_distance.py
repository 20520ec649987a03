"""Fine-tune, panel "How far fine-tuning moves the weights": the relative distance ‖θ − θ₀‖ / ‖θ₀‖ of each part of
the model after runs at a few learning rates and numbers of examples, one line per run, beside the textbook's
PAC-Bayes view (20.5.2). One shared job."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build
from labs.finetune import tab_long_run
from labs.finetune import theta_distance as td
from labs.finetune.training import Step

TITLE = "How far fine-tuning moves the weights: distance from θ₀, layer by layer"
BUTTON = "Measure the distance from θ₀"
LATEX = [{"left": "$", "right": "$", "display": False}]
FIRST_HEADERS = ["learning rate", "labelled examples", "updates", "accuracy after"]


def course_markdown() -> str:
    first = course_quotes.get(td.QUOTE_IDS[0])
    lines = "<br>".join(f"“{course_quotes.text(q)}”" for q in td.QUOTE_IDS)  # the course's LaTeX, drawn
    return (f"**{ui.md(first.cite)}**, after its bound on the generalisation gap (with D_KL(θ‖θ₀), how far the "
            f"fine-tuned parameters deviate from the pre-trained ones):<blockquote>{lines}</blockquote>"
            "LM Lab measures the plainest form of “how far”: the Euclidean distance of each part's weights from where "
            "the run started, divided by their size (not the bound's KL term, which needs distributions over "
            "weights; for two Gaussians of equal spread it is the squared distance, scaled).")


def table(result: dict) -> pd.DataFrame:
    parts = [p["part"] for p in result["runs"][0]["parts"]] if result["runs"] else []
    rows = [[f"{r['learning_rate']:g}", r["examples"], r["steps"], f"{r['accuracy']:.1%}",
             *(f"{p['distance']:.2e}" for p in r["parts"])] for r in result["runs"]]
    return pd.DataFrame(rows, columns=FIRST_HEADERS + parts)


def summary(result: dict) -> str:
    runs = result["runs"]
    if not runs:
        return "No run finished."
    encoder = lambda r: [p["distance"] for p in r["parts"] if p["part"] != td.HEAD]  # noqa: E731
    near, far = min(runs, key=lambda r: max(encoder(r))), max(runs, key=lambda r: max(encoder(r)))
    lower = sum(r["parts"][0]["distance"] < encoder(r)[-1] for r in runs)
    head = sum(r["parts"][-1]["distance"] >= max(encoder(r)) for r in runs)
    s = result["settings"]
    return (f"**{ui.md(result['model'])}:** the run that moved the encoder least is **{ui.md(td.setting_name(near))}** "
            f"(at most {max(encoder(near)):.1e} of a part's size), the one that moved it most **"
            f"{ui.md(td.setting_name(far))}** ({max(encoder(far)):.1e}). In {lower} of {len(runs)} runs the embeddings "
            f"moved less than the top encoder layer; in {head} the head (its classifier starts from random weights) moved "
            "further than any part of the encoder. Every run: "
            f"full fine-tuning, {s['epochs']} epochs, batch {s['batch_size']}, warm-up {s['warmup_ratio']:g}, weight "
            f"decay {s['weight_decay']:g}, seed {result['seed']}, on the built-in reviews (the same θ₀ for all).")


async def on_measure(model, rates, sizes, seed, request: gr.Request = None):
    plan, data = td.check(model, rates, sizes, seed)
    follow = ui.Follow(td.ticket(plan, data, owner=getattr(request, "session_hash", None), page=True),
                       lambda step, events: step_words(plan, step, events), every=3)
    async for line in follow:
        yield {"progress": line}
    if follow.gone:
        yield {"progress": follow.gone_html()}
        return
    result = td.result_json(plan, [e for e in follow.events if isinstance(e, dict)])
    yield {"progress": ui.DONE, "chart": td.figure(result), "table": table(result), "words": summary(result),
           "result": result}


def step_words(plan: list, step: Step, events: list) -> tuple[float, str]:
    done = sum(isinstance(e, dict) for e in events)
    s = plan[min(done, len(plan) - 1)]
    return (done / len(plan), f"run {done + 1} of {len(plan)} (lr {s.learning_rate:g}, {s.train_examples} "
                              f"examples): step {step.step} of {step.total_steps}")


def build(ctx: Build, model) -> dict:
    """The panel (the model is the lab's encoder dropdown); returns the inputs a link may set."""
    with gr.Accordion(TITLE, open=False, elem_id="ft-theta-distance"):
        gr.Markdown("Each run starts from the same weights θ₀ (the pre-trained encoder and a new head) and fine-tunes "
                    "all of them. Afterwards, for every part of the model, **how far did its weights move**, relative "
                    "to their size? Small rates and few examples should stay near θ₀; the bottom of the network "
                    "should move least. (In the embedding table only the rows of tokens the training reviews use get "
                    "a gradient; the other rows move by weight decay alone, which keeps its distance small.)")
        gr.Markdown(course_markdown(), elem_classes=["lab-secondary"], latex_delimiters=LATEX)
        with gr.Row():
            rates = gr.Textbox(", ".join(f"{r:g}" for r in td.RATES), label="Learning rates", max_length=60)
            sizes = gr.Textbox(", ".join(map(str, td.SIZES)), label="Labelled examples", max_length=40)
            seed = gr.Number(0, label="Seed", precision=0, minimum=0)
        controls = tab_long_run.buttons(BUTTON)
        progress, chart = gr.HTML(), gr.Plot(label="Distance from θ₀ per part")
        words = gr.Markdown()
        table_out = ui.table(FIRST_HEADERS, "Each run: ‖θ − θ₀‖ / ‖θ₀‖ per part", wrap=True)
        result = ui.result_json()
    outputs = dict(progress=progress, chart=chart, table=table_out, words=words, result=result)
    tab_long_run.wire(controls, on_measure, [model, rates, sizes, seed], outputs, [chart])
    return {"theta_rates": rates, "theta_sizes": sizes, "theta_seed": seed}
