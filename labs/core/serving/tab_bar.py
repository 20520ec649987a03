"""The app's tab bar and what a page open computes: the labs grouped as the course is taught, a link's
tab opened inside its group, and each tab's first results computed when the tab first appears.

Gradio sends a tab's `select` event when the student clicks it and also when it first appears on the
page: at a page open for the first group and its first tab (before the link's values are in the inputs),
and for a group's shown tab the first time the group is opened. So the page's load event reads the link
and claims the tab the page opens on (the link's, or the first); the page-open event computes it with the
link's values; a select that reaches the server before the link is read computes nothing. A group's own
select computes the tab it shows (the one last open in it) only when its tabs were already on the page.
What a page has is kept on the server (`PageTabs`), not in a gr.State: these events run at the same time,
and a gr.State keeps the last writer's value, computed from what it held when that event started."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import cachetools
import gradio as gr
from gradio.context import LocalContext

from labs.core.ui import links
from labs.core.ui.ui import first_page, friendly, notice, registered_links, registered_loads, spec_of, wire

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
    started: bool = False  # the link is read: the page's own tab is claimed, selects may compute
    opened: set = field(default_factory=set)  # the tabs whose first results this page has (or is getting)
    shown: dict = field(default_factory=dict)  # group id -> the tab it shows, when not its first
    seen: set = field(default_factory=set)  # the groups whose tabs are on the page


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
    """True the first time a page asks for a tab's first results (this event computes them)."""
    if tab in page.opened:
        return False
    page.opened.add(tab)
    return True


def show(page: PageState, group_id: str, tab: str, claiming: bool = False) -> bool:
    """The group shows this tab now; with claiming, claim(page, tab)."""
    page.shown[group_id] = tab
    return claim(page, tab) if claiming else False


def page_load(demo: gr.Blocks, tabs: gr.Tabs, groups: list[TabGroup], notes_box: gr.Markdown,
              pages: PageTabs | None = None) -> None:
    """On every page open: read the link (if any) into the inputs and open its tab (and its group), then
    compute that tab's first results with what is in the inputs; every other tab computes its own when it
    first appears. Takes this app's registrations (ui.link, ui.on_load), so that a second app built in the
    same process starts afresh."""
    pages = pages or PageTabs()
    linked, loads = list(registered_links), list(registered_loads)
    registered_links.clear()
    registered_loads.clear()
    specs: dict[str, dict[str, links.Spec]] = {}
    for tab, name, component in linked:
        specs.setdefault(tab, {})[name] = spec_of(component)
    link_specs.clear()
    link_specs.update(specs)
    tab_ids = [lab for group in groups for lab in group.labs]
    group_of = {lab: group for group in groups for lab in group.labs}
    page_tab = gr.State(None)  # the tab the page opens on: the link's, or the first

    def start(page: PageState, tab: str) -> None:
        page.started = True
        page.seen.update({groups[0].id, group_of[tab].id})  # their tabs are on the page now
        show(page, group_of[tab].id, tab, claiming=True)

    def read_link(request: gr.Request):
        params = dict(request.query_params) if request is not None else {}
        tab, values, notes = links.read(params, tab_ids, specs)
        pages.update(lambda page: start(page, tab or tab_ids[0]))
        updates = [values.get((t, name), gr.skip()) for t, name, _ in linked]
        selected = [gr.Tabs(selected=tab) if tab in g.labs else gr.skip() for g in groups]
        return (gr.Tabs(selected=group_of[tab].id) if tab else gr.skip(), *selected,
                "\n\n".join(notice(n) for n in notes), tab or tab_ids[0], *updates)

    event = wire(demo.load, read_link, None,
                 [tabs, *(g.tabs for g in groups), notes_box, page_tab, *(c for _, _, c in linked)], queue=False)
    by_tab: dict = {}  # tab id (None: outside every tab) -> [(fn, inputs, outputs)], in registration order
    for fn, inputs, outputs, kwargs, tabs_around in loads:
        if kwargs:  # its own settings: its own event, on every page open (as before)
            event.then(friendly(first_page(fn)), inputs, outputs, api_visibility="private", **kwargs)
            continue
        key = next((t.id for t in tabs_around if t.id in group_of), None)
        by_tab.setdefault(key, []).append((friendly(first_page(fn)), _listed(inputs), _listed(outputs)))
    if not by_tab:
        return
    every_input, every_output = _inputs_outputs(by_tab, list(by_tab))

    def open_page(tab, *values):  # read_link claimed the tab: its first results come from here, with its values
        return _first_results(by_tab, [None, tab], values, every_input, every_output)

    event.then(open_page, [page_tab, *every_input], every_output, api_visibility="private")
    for group in groups:
        _first_results_on_select(group, by_tab, pages)


def _first_results_on_select(group: TabGroup, by_tab: dict, pages: PageTabs) -> None:
    """A tab computes its first results the first time it appears on this page: by its own select, or by
    its group's (the group shows the tab last open in it); never again after that."""
    default = next(iter(group.labs))

    def on_tab(key):
        inputs, outputs = _inputs_outputs(by_tab, [key])

        def open_tab(*values):
            first = pages.update(lambda page: show(page, group.id, key, claiming=page.started))
            return _first_results(by_tab, [key] if first else [], values, inputs, outputs)
        return open_tab, inputs, outputs

    for lab, tab in group.labs.items():
        open_tab, inputs, outputs = on_tab(lab)
        if outputs:
            tab.select(open_tab, inputs, outputs, api_visibility="private")
        else:  # nothing to compute: only remember that the group shows it
            tab.select(lambda lab=lab: pages.update(lambda page: show(page, group.id, lab)) and None, None, None,
                       api_visibility="private", queue=False)
    inputs, outputs = _inputs_outputs(by_tab, list(group.labs))
    if not outputs:
        return

    def open_group(*values):
        def shown_if_first(page: PageState):
            if not page.started:  # the page's own tab comes from the page-open event
                return None
            if group.id not in page.seen:  # its tabs appear now: the shown one sends its own select
                page.seen.add(group.id)
                return None
            tab = page.shown.get(group.id, default)
            return tab if claim(page, tab) else None
        tab = pages.update(shown_if_first)
        return _first_results(by_tab, [tab] if tab else [], values, inputs, outputs)

    group.tab.select(open_group, inputs, outputs, api_visibility="private")


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
