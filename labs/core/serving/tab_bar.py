"""The app's tab bar and what a page open computes: the labs grouped as the course is taught, a link's
tab opened inside its group, and each tab's first results computed when the tab first appears.

Gradio sends a tab's `select` event whenever the tab appears on the page: at a page open for the first
group and its first tab, for a tab a link selects (and its group), and when a student first opens one.
Every event carries the page's own query string, so each tab's first select reads the link itself: the
tab the link names gets the link's values in its inputs at once (an unqueued event), then computes its
first results with what its inputs hold; any other tab computes them with its defaults. Both happen once
per tab per page (`PageTabs`: its later selects compute nothing).

Why each tab has an event of its own, not one page-open event over every tab: Gradio's page keeps a
loading status for every output an event has had, and updates every one of them, searching the whole
component tree for each, on every status message of any event (gradio 6.31's LoadingStatus and
update_state). One event whose outputs were every tab's first results made every page open cost about
20 s of a core in the browser, and an idle page a third of a core (`python -m tests.bench_page`,
docs/measurements.md)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import cachetools
import gradio as gr
from gradio.context import LocalContext

from labs.core.ui import links
from labs.core.ui.ui import first_page, friendly, notice, spec_of, wire

# The last app's link parameters, {tab: {parameter: what it accepts}}: what the docs list (tools/api_docs.py)
link_specs: dict[str, dict[str, links.Spec]] = {}


@dataclass
class TabGroup:
    """One group of the tab bar: its tab, the tabs inside it, and each lab's tab by the lab's id."""
    id: str
    tab: gr.Tab
    tabs: gr.Tabs
    labs: dict[str, gr.Tab]


@dataclass
class PageState:
    opened: set = field(default_factory=set)  # the tabs this page has opened (their link values are in)
    computed: set = field(default_factory=set)  # the tabs whose first results this page has (or is getting)


class PageTabs:
    """PageState per page (Gradio's session hash: one per page open), for the latest `size` pages. A page
    older than that (10,000 page opens later) computes a tab's first results again when it opens it."""

    def __init__(self, size: int = 10_000) -> None:
        self._pages = cachetools.LRUCache(size)  # session -> PageState
        self._lock = threading.Lock()

    def update(self, change):
        """change(the current page's PageState) under the lock; its result."""
        request = LocalContext.request.get(None)
        session = getattr(request, "session_hash", None)
        with self._lock:
            page = self._pages.get(session) if session else None  # get() marks it used
            if page is None:
                page = PageState()
                if session:
                    self._pages[session] = page
            return change(page)


def claim(page: PageState, tab) -> bool:
    """True the first time a page opens a tab (this event puts the link's values in)."""
    if tab in page.opened:
        return False
    page.opened.add(tab)
    return True


def take(page: PageState, tab) -> bool:
    """True the first time an opened tab's first results are asked for (this event computes them)."""
    if tab not in page.opened or tab in page.computed:
        return False
    page.computed.add(tab)
    return True


def page_params() -> dict:
    """The page's query string (every event's request carries the page's own)."""
    request = LocalContext.request.get(None)
    return dict(request.query_params) if request is not None else {}


def page_load(demo: gr.Blocks, tabs: gr.Tabs, groups: list[TabGroup], notes_box: gr.Markdown,
              loads: list[tuple], linked: list[tuple], pages: PageTabs | None = None) -> None:
    """On every page open: select the link's tab (and its group) and say what in the link could not be
    used; each tab, when it first appears, puts the link's values in its inputs if the link names it and
    computes its first results. loads and linked are what this app's build recorded (labs.core.ui.build:
    Build.loads from ctx.on_load, Build.links from ctx.link), so that a second app built in the same process
    starts afresh."""
    pages = pages or PageTabs()
    specs: dict[str, dict[str, links.Spec]] = {}
    for tab, name, component in linked:
        specs.setdefault(tab, {})[name] = spec_of(component)
    link_specs.clear()
    link_specs.update(specs)
    tab_ids = [lab for group in groups for lab in group.labs]
    group_of = {lab: group for group in groups for lab in group.labs}

    def read_link(request: gr.Request):
        params = dict(request.query_params) if request is not None else {}
        tab, _, notes = links.read(params, tab_ids, specs)
        selected = [gr.Tabs(selected=tab) if tab in g.labs else gr.skip() for g in groups]
        return (gr.Tabs(selected=group_of[tab].id) if tab else gr.skip(), *selected,
                "\n\n".join(notice(n) for n in notes))

    wire(demo.load, read_link, None, [tabs, *(g.tabs for g in groups), notes_box], queue=False)
    by_tab: dict = {}  # tab id -> [(fn, inputs, outputs)], in registration order
    for fn, inputs, outputs, kwargs, tabs_around in loads:
        key = next((t.id for t in tabs_around if t.id in group_of), None)
        if kwargs or key is None:
            raise ValueError(f"ctx.on_load({fn.__name__}) must sit inside a lab's tab, with no event settings")
        by_tab.setdefault(key, []).append((friendly(first_page(fn)), _listed(inputs), _listed(outputs)))
    for lab, tab in ((lab, tab) for group in groups for lab, tab in group.labs.items()):
        lab_links = [(name, component) for t, name, component in linked if t == lab]
        inputs, outputs = _inputs_outputs(by_tab, [lab])
        link_outputs = [c for _, c in lab_links]
        event = tab.select(_first_select(lab, lab_links, pages, tab_ids, specs), None, link_outputs,
                           api_visibility="private", queue=False)
        if outputs:
            event.then(_first_results_once(lab, by_tab, inputs, outputs, pages), inputs, outputs,
                       api_visibility="private")


def _first_select(lab: str, lab_links: list, pages: PageTabs, tab_ids: list, specs: dict):
    """The tab's select, at once: the first time on this page, the link's values into its inputs if the
    link names this tab (the next step computes the first results with them); after that, nothing."""
    def open_tab():
        if not pages.update(lambda page: claim(page, lab)):
            return _returned([gr.skip()] * len(lab_links))
        _, linked_values, _ = links.read(page_params(), tab_ids, specs)  # read_link says what was wrong
        return _returned([linked_values.get((lab, name), gr.skip()) for name, _ in lab_links])
    return open_tab


def _first_results_once(lab: str, by_tab: dict, inputs: list, outputs: list, pages: PageTabs):
    """After the tab's select: its first results, computed once per page, with what is in its inputs."""
    def first_results(*values):
        if not pages.update(lambda page: take(page, lab)):
            return _returned([gr.skip()] * len(outputs))
        return _returned(_first_results(by_tab, [lab], values, inputs, outputs))
    return first_results


def _returned(values: list):
    """A handler's return for these outputs: Gradio takes whatever one output gets as that output's value, a
    list included (a list of one would be the value, not the list's item)."""
    return values[0] if len(values) == 1 else values


def _inputs_outputs(by_tab: dict, keys: list) -> tuple[list, list]:
    """Every input and every output of these tabs' first-result loads, each once."""
    loads = [load for key in keys for load in by_tab.get(key, [])]
    return _unique(c for _, i, _ in loads for c in i), _unique(c for _, _, o in loads for c in o)


def _first_results(by_tab: dict, keys, values, inputs, outputs) -> list:
    """Each first-result load of these tabs run on its inputs' values; gr.skip() for every other output."""
    value_of = {id(c): v for c, v in zip(inputs, values)}
    out = {id(c): gr.skip() for c in outputs}
    for key in keys:
        for fn, ins, outs in by_tab.get(key, []):
            try:
                result = fn(*(value_of[id(c)] for c in ins))
            except gr.Error as exc:  # the other results still arrive; this one says what went wrong
                gr.Warning(exc.message)
                continue
            result = result if isinstance(result, tuple) and len(outs) > 1 else (result,)
            out.update({id(c): r for c, r in zip(outs, result)})
    return [out[id(c)] for c in outputs]


def _listed(components) -> list:
    return [] if components is None else list(components) if isinstance(components, (list, tuple)) else [components]


def _unique(components) -> list:
    seen: dict = {}
    for c in components:
        seen.setdefault(id(c), c)
    return list(seen.values())
