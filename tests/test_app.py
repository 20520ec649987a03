"""The app shell as a user and a script see it: the page, the tabs, the status line, the models API."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT, open_root, open_tab, screenshot, tab_groups
from playwright.sync_api import expect

from labs.core.models import models

TAB_GROUPS = [["Tokens", "Embeddings", "Attention", "Masks"], ["Fill in the blank", "Next token", "Pre-training"],
              ["Choosing a model", "Fine-tune", "Cost & scale"], ["Part A & B workbook"], ["Ask the class"]]
TAB_TITLES = [title for group in TAB_GROUPS for title in group]


def test_page_answers_quickly(app_server):
    # Generous bound for a noisy machine; the measured figure goes in the closing note.
    assert app_server["startup_seconds"] < 30


def test_models_endpoint_lists_the_offline_models(client, tiny_models):
    described = client.predict(api_name="/models")
    names = {m["name"]: m for m in described["models"]}
    assert described["online"] is False
    assert names[models.SMOLLM2_NAME]["family"] == "causal"
    assert names[tiny_models["masked"]]["source"] == "local"


def test_the_status_route_changes_its_fingerprint_only_when_the_status_line_changes(monkeypatch):
    """What every page asks every few seconds (assets/js/status.js) instead of a Gradio event."""
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from labs.core.serving import status_route
    from labs.core.ui import status

    client = TestClient(Starlette(routes=status_route.ROUTES))
    line = ["Device: cpu · offline · Loaded models: none yet (they load on first use)"]
    monkeypatch.setattr(status, "status_line", lambda: line[0])
    first = client.get(status_route.PATH)
    again = client.get(status_route.PATH).json()
    line[0] = "Device: cpu · offline · Loaded models: SmolLM2-135M-Instruct [local]"
    changed = client.get(status_route.PATH).json()
    assert first.status_code == 200 and "no-store" in first.headers["cache-control"]
    assert first.json() == again != changed


def test_every_tab_in_its_group_in_order_and_the_status_line_says_offline(page):
    from labs.core.serving import status_route

    with page.expect_request(lambda r: r.url.endswith(status_route.PATH)):  # the page asks, not a Gradio timer
        open_root(page)
    groups = tab_groups()
    assert [labs for _, labs in groups] == TAB_GROUPS and [lab for _, labs in groups for lab in labs] == TAB_TITLES
    visible = page.get_by_role("tab")  # hidden groups' tabs are not in the accessibility tree
    expect(visible).to_have_text([g for g, _ in groups] + groups[0][1])
    status = page.locator("#lab-status")
    status.get_by_text("offline").wait_for(timeout=20000)
    for group, labs in groups:
        page.get_by_role("tab", name=group, exact=True).click()
        expect(visible).to_have_text([g for g, _ in groups] + labs)
        for title in labs:
            open_tab(page, title)
            page.get_by_role("tab", name=title, exact=True).and_(page.locator("[aria-selected=true]")).wait_for()
            screenshot(page, f"tab-{title.lower().replace(' ', '-')}")
    assert page.outside_requests == []


def test_sessions_compute_component_configs_only_when_used_and_the_same_as_gradio():
    """labs.core.serving.fast_sessions: a new student's session no longer builds every component's configuration
    at once, and what it builds is what Gradio builds."""
    import app
    from labs.core.serving import fast_sessions

    demo = app.build_app()
    ours = fast_sessions.state_holder.SessionState(demo)
    theirs = fast_sessions.gradio_session(demo)
    assert set(vars(ours)) == set(vars(theirs))
    assert dict.__len__(ours.config_values) == 0  # nothing computed yet
    assert set(ours.config_values) == set(theirs.config_values)
    some = sorted(theirs.config_values)[::25]
    for key in some:
        assert ours.config_values[key] == theirs.config_values[key]
    assert dict.__len__(ours.config_values) == len(some)
    # an event's input value is recorded when its configuration is first computed, not before
    later = next(k for k in sorted(theirs.config_values)[1::25] if "props" in theirs.config_values[k])
    ours._update_value_in_config(later, "a value sent by the page")
    theirs._update_value_in_config(later, "a value sent by the page")
    assert dict.__len__(ours.config_values) == len(some)
    assert dict(ours.config_values.items()) == theirs.config_values


def test_skipped_outputs_are_postprocessed_as_gradio_does_and_the_session_ends_the_same():
    """labs.core.serving.fast_sessions: outputs a handler skips leave Gradio's postprocessing; what the page receives
    and the session's state and configurations afterwards are what Gradio's own code makes."""
    import asyncio
    import copy
    from concurrent.futures import ThreadPoolExecutor

    import gradio as gr
    import pandas as pd
    import plotly.graph_objects as go

    from labs.core.serving import fast_sessions

    with gr.Blocks() as demo:
        text, plot, frame, state = gr.Textbox(), gr.Plot(), gr.Dataframe(), gr.State(1)
        hidden = gr.Markdown()
        gr.Button().click(lambda: None, None, [text, plot, frame, state, hidden])
    fn = demo.fns[0]
    figure = go.Figure(go.Bar(x=["a"], y=[1]))
    cases = [
        [gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()],
        ["typed", gr.skip(), pd.DataFrame({"a": [1]}), 2, gr.skip()],
        [gr.skip(), figure, gr.skip(), gr.skip(), gr.update(visible=False)],
        [gr.skip(), gr.skip(), gr.skip(), 3, gr.skip()],
        [gr.update(value="x", visible=False), gr.skip(), gr.skip(), gr.skip(), "**shown**"],
    ]

    def run(postprocess) -> tuple[list, dict, dict]:
        session = fast_sessions.gradio_session(demo)
        # Gradio pops keys from update dicts: each run gets its own copy
        # (in a thread of its own: a browser test before this one leaves Playwright's event loop in this one)
        outputs = [ThreadPoolExecutor(1).submit(asyncio.run, postprocess(demo, fn, copy.deepcopy(case), session))
                   .result() for case in cases]
        ids = [b._id for b in fn.outputs]
        return outputs, {i: session.config_values[i] for i in ids}, {i: session.state_data.get(i) for i in ids}

    def without_values(configs: dict) -> dict:
        return {i: {**c, "props": {k: v for k, v in c["props"].items() if k != "value"}} for i, c in configs.items()}

    ours, gradios = run(fast_sessions._postprocess_without_skips), run(fast_sessions._gradio_postprocess)
    assert ours[0] == gradios[0]  # what the page receives
    # every output's configuration in the session (the hidden one stays hidden), but for the values Gradio
    # copies into it for its deep links (not used here): after a skip Gradio stops recording an output's
    # later values; here each output's last value is recorded, as Gradio records it when nothing was skipped
    assert without_values(ours[1]) == without_values(gradios[1])
    assert ours[1][text._id]["props"]["value"] == "x" and ours[1][frame._id]["props"]["value"]["data"] == [[1]]
    assert ours[2].keys() == gradios[2].keys() and ours[2][state._id] == gradios[2][state._id] == 3


def test_space_front_matter_preloads_every_hub_default():
    """A Space bakes these into its image; the list must follow the registry's Hub models (those loaded on
    demand are offered but never preloaded)."""
    import yaml

    front = yaml.safe_load(Path(ROOT / "README.md").read_text().split("---")[1])
    preloaded = [entry.split()[0] for entry in front["preload_from_hub"]]
    hub_ids = [c.location for c in models.HUB_MODELS if not c.on_demand]
    assert preloaded == hub_ids and len(preloaded) <= 10  # Spaces preload at most 10 repositories
    assert all(len(entry.split()) == 2 for entry in front["preload_from_hub"])  # explicit files: no GB of extras
    assert {c.location for c in models.HUB_MODELS} <= set(front["models"])
    assert front["sdk_version"] == __import__("gradio").__version__


def test_a_first_page_result_is_built_once_and_handed_out_fresh():
    from labs.core.ui import ui

    calls = []

    def handler(x):
        calls.append(x)
        return {"__type__": "update", "value": x}, [x]

    first = ui.first_page(handler)
    a = first(1)
    a[0].pop("value")  # what Gradio does to an update dict
    b = first(1)
    assert calls == [1] and b[0]["value"] == 1 and b[1] is a[1]
    first(2)
    assert calls == [1, 2]

    def failing(x):
        calls.append("failed")
        raise ValueError("no model")

    broken = ui.first_page(failing)
    for _ in range(2):
        with __import__("pytest").raises(ValueError):
            broken(1)
    assert calls.count("failed") == 2  # a failure is not kept


def test_a_group_opens_on_the_tab_last_open_in_it_with_its_first_result(page, app_server):
    """A link opens its lab inside its group; opening a group shows (and computes, the first time) the lab
    the student last had open there, without clicking the lab's own tab."""
    page.goto(app_server["url"] + "?tab=masks", wait_until="load")
    selected = page.locator("[role=tab][aria-selected=true]")
    page.get_by_role("tab", name="Masks", exact=True).and_(selected).wait_for(timeout=30000)
    page.get_by_role("tab", name="Inside a model", exact=True).and_(selected).wait_for()
    page.get_by_role("tab", name="Learning to predict", exact=True).click()
    page.get_by_role("tab", name="Fill in the blank", exact=True).and_(selected).wait_for()
    page.locator(".js-plotly-plot:visible").first.wait_for(timeout=60000)  # its first result, by the group's click
    open_tab(page, "Next token")
    page.locator("#nt-chart .js-plotly-plot:visible").wait_for(timeout=60000)
    page.get_by_role("tab", name="Using a model", exact=True).click()
    page.get_by_role("tab", name="Learning to predict", exact=True).click()
    page.get_by_role("tab", name="Next token", exact=True).and_(selected).wait_for()
    page.locator("#nt-chart .js-plotly-plot:visible").wait_for()
