"""The Run and Stop buttons of Fine-tune's long panels (data efficiency, adapters and LoRA, ULMFiT's stages), wired
the same way: Run writes "Starting…" and then follows its shared job on the panel's progress line; Stop answers on a
note line of its own. Stop's answer (a queue=False event) races the run's last update, and a late answer written on
the progress line would stay there over "Stopped." (the main run's Stop once did, on CI: labs/finetune/tab.py, whose
Stop answers with `stop_answer` too)."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from labs.core.ui import ui
from labs.core.work.jobs import JOBS

STOP_PRESSED = "Stop pressed: the run stops after its current step."
LEFT = "Stop pressed: you left this run. It goes on for the other students who follow it."
NOTHING_RUNNING = "Nothing is running for you."


def buttons(label: str) -> SimpleNamespace:
    """The panel's Run and Stop buttons, and Stop's note line under them."""
    with gr.Row():
        run = gr.Button(label, variant="primary", scale=3)
        stop = gr.Button("Stop", variant="stop", scale=1)
    return SimpleNamespace(run=run, stop=stop, note=gr.HTML(elem_classes=["ft-stop-note"]))


def stop_answer(session_hash: str, left: str = LEFT) -> str:
    """Stop for this student (JOBS.stop_owner) and its answer for the note line: a job they alone follow stops after
    its current step; a shared one goes on for the others (`left` says so); else nothing was running."""
    outcome = JOBS.stop_owner(session_hash)
    return ui.progress_html(None, STOP_PRESSED if outcome == "stopping" else left if outcome == "left" else
                            NOTHING_RUNNING)


def on_stop(request: gr.Request) -> str:
    return stop_answer(request.session_hash)


def wire(controls: SimpleNamespace, follow, inputs: list, outputs: dict, show_progress_on) -> None:
    """Run: "Starting…" at once (the note cleared), then `follow` (an async generator of {output name: value}, made
    friendly and by name) streams into `outputs`, whose "progress" is the panel's progress line. Stop: its note."""
    ui.wire(controls.run.click, lambda: (ui.progress_html(None, "Starting…"), ""), None,
            [outputs["progress"], controls.note], queue=False).then(
        ui.friendly(ui.by_name(follow, outputs)), inputs, list(outputs.values()), api_visibility="private",
        concurrency_id="finetune-follow", concurrency_limit=None, show_progress="minimal",
        show_progress_on=show_progress_on)
    ui.wire(controls.stop.click, on_stop, None, controls.note, queue=False)
