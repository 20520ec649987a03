"""Assembles LM Lab from the labs (one tab per lab in GROUPS, the API endpoints each lab declares) and launches it:
see how pre-trained language models work.

Run:  python app.py   (127.0.0.1:7860; GRADIO_SERVER_NAME / GRADIO_SERVER_PORT override, as on a Space)
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
import sys
import threading

# A web server shares its two cores with the threads that serve requests; PyTorch's OpenMP workers
# must sleep when idle instead of spinning (measured: 20 % less server CPU under a class's load).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Gradio rebuilds a pandas table of its last 10,000 events after every event, for the API page's
# statistics (3 to 11 ms each on these cores, 100 students' requests = up to a second): every 100 is enough.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "100")
# Gradio sets matplotlib's backend around every event, with `import matplotlib` in a try (gradio.utils.
# MatplotlibBackendMananger). Where matplotlib is not installed, each failed import searches every folder on
# sys.path again: twice an event, a tenth of the server's CPU while a class answers (py-spy). A None in
# sys.modules makes that import fail at once; an installed matplotlib is left alone.
if importlib.util.find_spec("matplotlib") is None:
    sys.modules.setdefault("matplotlib", None)

import gradio as gr  # noqa: E402

from labs.attention import endpoints as attention_endpoints  # noqa: E402
from labs.attention import tab as attention  # noqa: E402
from labs.choosing import endpoints as choosing_endpoints  # noqa: E402
from labs.choosing import tab as choosing  # noqa: E402
from labs.classroom import backup, poll_route  # noqa: E402
from labs.classroom import endpoints as classroom_endpoints  # noqa: E402
from labs.classroom import store as class_store  # noqa: E402
from labs.classroom import tab as classroom  # noqa: E402
from labs.core.models import offline_cache  # noqa: E402
from labs.core.serving import fast_sessions, lti_routes, static_cache, status_route, tab_bar
from labs.core.ui import status, theme, ui
from labs.core.ui.build import Build
from labs.core.work import ray_backend, ray_passes, services, zerogpu
from labs.core.work.endpoints import Endpoint
from labs.cost import endpoints as cost_endpoints  # noqa: E402
from labs.cost import tab as cost  # noqa: E402
from labs.embeddings import endpoints as embeddings_endpoints  # noqa: E402
from labs.embeddings import tab as embeddings  # noqa: E402
from labs.fill_mask import endpoints as fill_mask_endpoints  # noqa: E402
from labs.fill_mask import tab as fill_mask  # noqa: E402
from labs.finetune import endpoints as finetune_endpoints  # noqa: E402
from labs.finetune import tab as finetune  # noqa: E402
from labs.masks import endpoints as masks_endpoints  # noqa: E402
from labs.masks import tab as masks  # noqa: E402
from labs.next_token import endpoints as next_token_endpoints  # noqa: E402
from labs.next_token import tab as next_token  # noqa: E402
from labs.part_b import endpoints as part_b_endpoints  # noqa: E402
from labs.part_b import tab as part_b  # noqa: E402
from labs.pretraining import endpoints as pretraining_endpoints  # noqa: E402
from labs.pretraining import tab as pretraining  # noqa: E402
from labs.tokens import endpoints as tokens_endpoints  # noqa: E402
from labs.tokens import tab as tokens  # noqa: E402

# A new lab is a new folder with a tab.py (docs/architecture.md "Adding a lab": TITLE, ID, EXPLAINER, TRY_THIS, build)
# and an endpoints.py, plus its entries here (GROUPS, LAB_ENDPOINTS). The tab bar is grouped as the course is
# taught: what is inside a model (tokens first: every lab starts from tokens, and so does a lecture), how it
# learned by predicting tokens, how to use one.
# (title, id, labs); a group's id is never a lab's, so that every ?tab=<lab> link still names one lab.
GROUPS = (
    ("Inside a model", "inside", (tokens, embeddings, attention, masks)),
    ("Learning to predict", "predict", (fill_mask, next_token, pretraining)),
    ("Using a model", "using", (choosing, finetune, cost)),
    ("Handout", "handout", (part_b,)),  # the exercises after (and before) the lecture, checked
    ("Class", "class", (classroom,)),  # ask the room; the students' own panel sits above the tab bar
)
LABS = tuple(lab for _, _, labs in GROUPS for lab in labs)
# Each lab's API endpoints, declared in labs/<lab>/endpoints.py; app.py hands them to core (services, ui.register).
LAB_ENDPOINTS = {attention.ID: attention_endpoints.ENDPOINTS, choosing.ID: choosing_endpoints.ENDPOINTS,
                 classroom.ID: classroom_endpoints.ENDPOINTS, cost.ID: cost_endpoints.ENDPOINTS,
                 embeddings.ID: embeddings_endpoints.ENDPOINTS, fill_mask.ID: fill_mask_endpoints.ENDPOINTS,
                 finetune.ID: finetune_endpoints.ENDPOINTS, masks.ID: masks_endpoints.ENDPOINTS,
                 next_token.ID: next_token_endpoints.ENDPOINTS, part_b.ID: part_b_endpoints.ENDPOINTS,
                 pretraining.ID: pretraining_endpoints.ENDPOINTS, tokens.ID: tokens_endpoints.ENDPOINTS}
# The app's own endpoint (labs/core/work/endpoints.py: what an endpoint declares).
APP_ENDPOINTS = (Endpoint("models", status.describe_models,
                          "Every model this server offers, its family and source, and what is loaded."),)

CONCURRENT_EVENTS = 128  # per event: a class of 100 joins the same batches; a waiting thread costs little
HEADER = """# LM Lab
Pick a tab, type your own sentence, and watch a real pre-trained language model answer."""


# Presenter view is a class on <body> (assets/lab.css), kept in the URL so that a reload keeps it.
PRESENT_JS = """() => { const on = document.body.classList.toggle('lab-present');
  const url = new URL(window.location); if (on) url.searchParams.set('present', '1');
  else url.searchParams.delete('present'); window.history.replaceState(null, '', url); }"""


def status_markdown() -> str:
    """The status line (paths from the environment included) shown as plain text."""
    return "\n\n".join(ui.md(line) for line in status.status_line().split("\n\n"))


def declared_endpoints() -> dict[str, tuple[Endpoint, ...]]:
    """Every endpoint the app registers, in order, by the lab that declares it ("app": the app's own)."""
    return {**{lab.ID: LAB_ENDPOINTS[lab.ID] for lab in LABS}, "app": APP_ENDPOINTS}


def build_app() -> gr.Blocks:
    zerogpu.install()  # on ZeroGPU: the GPU calls, before the app launches (spaces reports them at start)
    declared = declared_endpoints()
    services.offer(endpoint for group in declared.values() for endpoint in group)  # the workbook calls them by name
    fast_sessions.install()
    static_cache.install()  # Gradio's own files are compressed once per server, not once per student
    # Every hour, Gradio's copies of files it served (Attention's downloads, uploaded CSVs) older than a
    # day are deleted: a course's worth of them would otherwise fill the disk.
    with gr.Blocks(title="LM Lab", analytics_enabled=False, delete_cache=(3600, 86400)) as demo:
        # This build's context, handed to every lab's build: what the tabs record while they are laid out (their
        # link inputs, first results, class buttons, the class lab's shared parts) is read back below. One per
        # gr.Blocks, so a second app built in this process starts afresh.
        ctx = Build(demo)
        with gr.Row(elem_id="lab-header"):
            gr.Markdown(HEADER)
            present = gr.Button("Presenter view", size="sm", scale=0, elem_id="lab-present-toggle")
        status_box = gr.Markdown("Checking device and models…", elem_id="lab-status")
        status_refresh = gr.Button("Refresh the status line", visible="hidden", elem_id="lab-status-refresh")
        if zerogpu.enabled():  # GPU time is a quota per visitor: signed in, a student has a share of their own
            with gr.Row(elem_id="lab-sign-in"):
                gr.Markdown(zerogpu.SIGN_IN_WORDS)
                if os.environ.get("OAUTH_CLIENT_ID"):  # the Space's card asks for Hugging Face sign-in (hf_oauth)
                    gr.LoginButton(size="sm", scale=0)
        link_notes = gr.Markdown(elem_id="lab-link-notes")
        classroom.build_student_panel(ctx)  # a student in a class (?class=CODE) sees the question first
        groups = []
        with gr.Tabs(elem_id="lab-groups", overflow_behavior="wrap") as tabs:  # a phone shows every name whole
            for title, group_id, labs in GROUPS:
                with gr.Tab(title, id=group_id, elem_id=f"lab-group-{group_id}", elem_classes=["lab-group"]) as group_tab:
                    with gr.Tabs(elem_classes=["lab-tabs"], overflow_behavior="wrap") as lab_tabs:
                        tab_of = {}
                        for lab in labs:
                            with gr.Tab(lab.TITLE, id=lab.ID) as tab_of[lab.ID]:
                                lab.build(ctx)
                groups.append(tab_bar.TabGroup(group_id, group_tab, lab_tabs, tab_of))
        classroom.connect(ctx)  # the labs' "Ask the class" buttons (ctx.class_hooks), now that every tab exists
        # A link opens its tab (in its group) with its inputs (ctx.links); each tab computes its first result when
        # shown (ctx.loads).
        tab_bar.page_load(demo, tabs, groups, link_notes, ctx.loads, ctx.links)
        present.click(None, js=PRESENT_JS)
        for group in declared.values():  # the API: every lab's declared endpoints, then the app's
            ui.register(group)
        # The status line fills in after the page is up (it may import torch), then follows loads: the page
        # presses the hidden button when the line changed (assets/js/status.js asks status_route).
        ui.wire([demo.load, status_refresh.click], status_markdown, outputs=status_box, queue=False,
                show_progress="hidden")
    # Nobody is turned away: the queue has no limit, and a waiting student sees their place. Many events
    # run at once so that concurrent requests meet in labs.core.work.lm's batches (one forward pass for all);
    # the fine-tune slot and generation set their own limits.
    demo.queue(max_size=None, default_concurrency_limit=CONCURRENT_EVENTS)
    return demo


def main() -> None:
    logging.basicConfig(level=os.environ.get("LAB_LOG_LEVEL", "INFO").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    offline_cache.remove_partials()  # a conversion killed last time left half a model behind
    if ray_backend.enabled():  # LAB_RAY_ADDRESS: Ray and Serve start now, not at the first student's click
        threading.Thread(target=ray_passes.start_serve, name="ray start", daemon=True).start()
    if backup.folder() is not None:  # LAB_BACKUP_DIR: a restarted Space's classes come back from the bucket now
        threading.Thread(target=class_store.get, name="class restore", daemon=True).start()
    demo = build_app()
    # The LMS connection (LTI 1.3, /lti/...): the class database, the data folder for its key, the labs a course links.
    lti_routes.configure(lambda: class_store.get().engine, class_store.data_dir(), [(lab.ID, lab.TITLE) for lab in LABS])
    gc.freeze()  # the app's own objects live until it stops: the garbage collector need not walk them
    demo.launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        theme=theme.lab_theme(),
        css=ui.load_css(),
        head=ui.load_head(),
        allowed_paths=[str(ui.ASSETS)],
        footer_links=["api"],
        show_error=True,
        max_threads=CONCURRENT_EVENTS * 2,
        # Plain HTTP routes, before Gradio's own: a student's page asks whether its class moved on
        # (labs/classroom/poll_route.py), and every page whether the status line changed, without a Gradio event.
        app_kwargs={"routes": [*poll_route.ROUTES, *status_route.ROUTES, *lti_routes.ROUTES]},
    )


if __name__ == "__main__":
    main()
