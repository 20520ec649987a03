"""Fine-tune, the task panel: the task choice, its training example as the loss sees it, and "Try the
model you trained" with each task's view (segment ids, word pieces with labels, start/end bars)."""

from __future__ import annotations

import html

import gradio as gr
import pandas as pd

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.ui import ui
from labs.finetune import predict, recipes, tasks
from labs.finetune.training import RunResult

TASK_DEFAULTS = tasks.TASK_DEFAULTS  # (lr, epochs) per task
SECOND = {"pair": "Sentence B", "qa": "Context (the answer is copied from here)"}
FIRST = {"sentiment": "Sentence", "pair": "Sentence A", "ner": "Sentence", "qa": "Question"}
CELL = ("display:inline-block;margin:2px;padding:4px 6px;border-radius:6px;text-align:center;"
        "font-size:16px;vertical-align:top;")
COLOURS = {"PER": "#dbeafe", "LOC": "#dcfce7", "ORG": "#fef3c7"}


def task_picker():
    return gr.Dropdown([(label, key) for key, label in tasks.TASKS.items()], value="sentiment", label="Task",
                       elem_id="ft-task")


def try_section():
    with gr.Row():
        text = gr.Textbox(predict.EXAMPLES["sentiment"][0], scale=3, max_length=2000,
                          label="Try the model you trained: sentence")
        text_b = gr.Textbox("", scale=3, max_length=4000, label="Sentence B", visible=False)
        button = gr.Button("Try the model you trained", scale=1)
        hub_button = gr.Button("Try a fully fine-tuned model", scale=1, elem_id="ft-try-hub")
    label = gr.Label(label="Prediction", num_top_classes=5)
    view = gr.HTML(elem_id="ft-task-view")
    return text, text_b, button, hub_button, label, view


def cell(top: str, bottom: str, colour: str = "#f3f4f6", title: str = "") -> str:
    return (f'<span style="{CELL}background:{colour}" title="{html.escape(title)}">{html.escape(top)}<br>'
            f'<small>{html.escape(bottom)}</small></span>')


def pair_html(tokens: list[str], segments: list[int]) -> str:
    cells = "".join(cell(t, f"segment {s}", "#e0f2fe" if s else "#f3f4f6") for t, s in zip(tokens, segments))
    return f"<p><b>[CLS] A [SEP] B [SEP]</b>: the segment id (token_type_ids) under each piece.</p><div>{cells}</div>"


def ner_html(pieces: list[dict]) -> str:
    cells = []
    for p in pieces:
        if p["special"] or not p["first"]:
            why = "special token" if p["special"] else "continuation piece: ignored in the loss"
            cells.append(cell(p["token"], "-100", "#f3f4f6", why))
        else:
            cells.append(cell(p["token"], p["label"], COLOURS.get(p["label"][2:], "#ffffff")))
    return ("<p>Each word's label sits on its <b>first piece</b>; continuation pieces (##…) and special tokens "
            "carry <b>-100</b> and are ignored in the loss: the textbook's way (20.6.4). The summary sheet trains "
            "every piece instead; both are used (<a href='?tab=choosing&check=ner_subwords'>Check the course</a>)."
            f"</p><div>{''.join(cells)}</div>")


def qa_html(result: dict) -> str:
    cells = []
    for i, token in enumerate(result["tokens"]):
        chosen = result["start"] <= i <= result["end"]
        bars = "".join(f'<div style="height:{4 + 60 * p:.0f}px;width:10px;background:{c};display:inline-block;'
                       f'margin:0 1px;vertical-align:bottom" title="{name} {p:.2f}"></div>'
                       for p, c, name in ((result["start_probs"][i], "#2563eb", "start"),
                                          (result["end_probs"][i], "#dc2626", "end")))
        cells.append(f'<span style="{CELL}background:{"#fde68a" if chosen else "#f3f4f6"}"><div style="height:64px">'
                     f'{bars}</div>{html.escape(token)}</span>')
    return (f"<p><b>Answer: {html.escape(result['answer'])}</b> (p = {result['score']:.2f}). Blue bars: start "
            "probability, red bars: end probability; the highlighted span is the best start ≤ end "
            f"(at most {tasks.MAX_ANSWER_TOKENS} tokens).</p><div>{''.join(cells)}</div>")


def example_html(task: str, model_name: str) -> str:
    """The first training example of the task, as the loss sees it."""
    if task == "sentiment" or not model_name:
        return ""
    tokenizer = models.load(model_name, "encoder", "masked").tokenizer
    row = tasks.task_data(task).train[0]
    view = predict.training_view(task, tokenizer, row)
    if task == "pair":
        return "<h4>A training example</h4>" + pair_html(view["tokens"], view["segments"])
    if task == "ner":
        pieces = [{"token": t, "label": y, "first": y != tasks.IGNORE, "special": t.startswith("[")}
                  for t, y in zip(view["tokens"], view["labels"])]
        return "<h4>A training example</h4>" + ner_html(pieces)
    cells = "".join(cell(t, "start" if i == view["start"] else "end" if i == view["end"] else "",
                         "#fde68a" if view["start"] <= i <= view["end"] else "#f3f4f6")
                    for i, t in enumerate(view["tokens"]))
    return ("<h4>A training example</h4><p>The labels are two token positions: where the answer starts and "
            f"where it ends.</p><div>{cells}</div>")


def on_task(task, model_name):
    """A task chosen: its learning rate and epochs, the boxes it needs, its example encoding."""
    lr, epochs = TASK_DEFAULTS[task]
    first, second = predict.EXAMPLES[task]
    return (lr, epochs, gr.update(value=first, label=f"Try the model you trained: {FIRST[task].lower()}"),
            gr.update(value=second, visible=task in SECOND, label=SECOND.get(task, "")),
            example_html(task, model_name))


def fully_finetuned(task: str) -> str:
    """The registry's fully fine-tuned model for a task (Hub: dslim/bert-base-NER, a SQuAD DistilBERT)."""
    head = tasks.HEADS[tasks.check_task(task)]
    hub = [c.name for c in models.HUB_MODELS if c.task == head]
    name = models.default_name("encoder", "masked", task=head) if head in models.TASK_HEADS else None
    if name:
        return name
    if hub:
        raise BadInput(f"{hub[0]} is a Hub model, and the Hugging Face Hub is not reachable from this server: "
                       "it needs the Hub (try the model you trained here instead).")
    raise BadInput(f"There is no fully fine-tuned {tasks.TASKS[task].split(' (')[0].lower()} model in the model "
                   "list: try the model you trained here.")


def on_try_hub(task, text, text_b):
    try:
        name = fully_finetuned(task)
    except BadInput as exc:  # offline or no such model: a note where the view goes, not an error
        return None, f'<div class="lab-notice">{html.escape(str(exc))}</div>'
    label, view = on_try(task, "", text, text_b, name)
    return label, f"<p><b>{html.escape(name)}</b></p>" + view


def on_try(task, run_id, text, text_b, model_name=""):
    """Try the model of the last run (or a fully fine-tuned task model) on new input: (class probabilities
    or None, the task's view)."""
    result = predict.predict_task(task, text, text_b, run_id or "", model_name)
    if task in ("sentiment", "pair"):
        view = pair_html(result["tokens"], result["segments"]) if task == "pair" else ""
        return result["probs"], view
    if task == "ner":
        entities = ", ".join(f"{e['word']} ({e['entity_group']})" for e in result["entities"]) or "none"
        return None, f"<p><b>Entities: {html.escape(entities)}</b></p>" + ner_html(result["pieces"])
    return None, qa_html(result)


def recipes_panel(task, model, seed) -> None:
    """The panel "Why not every task fine-tunes the same way": the course's recipe, this lab's default and why, per task;
    "Run both" trains the chosen task at each (the task, model and seed picked above)."""
    with gr.Accordion("Why not every task fine-tunes the same way: the course's recipes and this lab's defaults",
                      open=False):
        ui.table(recipes.HEADERS, wrap=True, value=pd.DataFrame(recipes.table_rows(), columns=recipes.HEADERS),
                 column_widths=["14%", "30%", "14%", "42%"])
        gr.Markdown(f"Quoted from the {recipes.LECTURE} deck: {recipes.APPENDIX}; {recipes.MECHANICS}. "
                    f"The appendix ends: “{recipes.START}”. "
                    "The evidence, measured here: both settings on the chosen task's data, same model and seed "
                    "(the course's setting at the top of its epoch range).")
        button = gr.Button("Run both: the course's recipe and this lab's default", elem_id="ft-recipes-run")
        progress = gr.HTML()
        table = ui.table(recipes.RUN_HEADERS, "Measured on this server", elem_id="ft-recipes-table")
    outputs = dict(progress=progress, table=table)
    ui.wire(button.click, ui.by_name(on_recipes, outputs), [model, task, seed], list(outputs.values()),
            api_visibility="private",
            concurrency_id="finetune-follow", concurrency_limit=None, show_progress="minimal")


async def on_recipes(model_name, task, seed, request: gr.Request = None):
    """Both runs, shared with identical requests: the queue's place, a progress line, then the table."""
    pair = recipes.settings_pair(model_name, task, seed)
    follow = ui.Follow(recipes.ticket(pair, owner=getattr(request, "session_hash", None)), recipe_words)
    async for line in follow:
        yield {"progress": line}
    if follow.gone:
        yield {"progress": follow.gone_html()}
        return
    finished = [e for e in follow.events if isinstance(e, RunResult)]
    yield {"progress": ui.DONE, "table": pd.DataFrame(recipes.run_rows(finished), columns=recipes.RUN_HEADERS)}


def recipe_words(step, events: list) -> tuple[float, str]:
    return step.step / step.total_steps, (f"Run {sum(isinstance(e, RunResult) for e in events) + 1} of 2 · step "
                                          f"{step.step} of {step.total_steps}")
