"""Walks over every lab as a student without a laptop, a mouse or sight of the chart would make them, in a
real Chromium: a phone (390×844, touch), the keyboard alone, a screen reader's view of the charts, axe-core's
audit. Each lab's page is drawn once for presenter view and the desktop (tests/test_keyboard.py: the header's
toggle turns presenter view off) and once on a phone (tests/test_phone.py), and every check of a view runs on
it. Run as a script, it prints the figures for an app that is already running (before and after a change):

    python -m tests.walks http://127.0.0.1:7860/ [--labs tokens,masks] [--keyboard]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
from collections import Counter
from dataclasses import dataclass

PHONE = dict(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, device_scale_factor=1)
DESKTOP = dict(viewport={"width": 1400, "height": 900})
PRESENTER = dict(viewport={"width": 1280, "height": 720})  # a projector; the page opens with ?present=1


@dataclass(frozen=True)
class Lab:
    """How a student uses a lab: its input (a label), its run button, and its main result (a selector)."""
    id: str
    title: str
    input: str
    run: str
    result: str
    first: str  # what the lab draws first when it opens (its default example)
    ran: str = ""  # where the run button's result is drawn, when it is not the main result
    done: str = ""  # what shows once a run that streams past Gradio's own progress has ended


LABS = (
    Lab("tokens", "Tokens", "Your text", "Split it", ".lab-token-row", ".lab-token-row"),
    Lab("embeddings", "Embeddings", "Sentences that share a word (one per line; optional | sense)",
        "Compare the vectors", ".js-plotly-plot", ".js-plotly-plot"),
    Lab("attention", "Attention", "Sentence A", "Show attention", ".js-plotly-plot", ".js-plotly-plot", "text=Answered by"),
    Lab("masks", "Masks", "Your sentence", "Show the masks", ".js-plotly-plot", ".js-plotly-plot"),
    Lab("fill_mask", "Fill in the blank", "Your sentence (write [MASK] or ___ for a blank)", "Predict the blanks",
        ".js-plotly-plot", ".js-plotly-plot"),
    Lab("next_token", "Next token", "Prompt", "Show the next-token distribution", "#nt-chart .js-plotly-plot",
        "#nt-chart .js-plotly-plot"),
    Lab("pretraining", "Pre-training", "Your paragraph (two sentences or more)", "Build the five training examples",
        "text=Training signal:", "text=Training signal:"),
    Lab("choosing", "Choosing a model", "Template: {occupation} once, [MASK] where the pronoun goes", "Probe",
        ".lab-cards table", "text=What this shows, and what it does not"),
    Lab("finetune", "Fine-tune", "Learning rate", "Fine-tune", "#ft-curves", "text=Trainable:",
        done="#ft-progress >> text=Done."),  # its Stop button shows until then, a tab stop that then goes
    Lab("cost", "Cost & scale", "N: parameters (110M, 7B, 7e9)", "Compute the cost", ".lab-cost-result",
        ".js-plotly-plot:visible >> nth=3"),
    Lab("part_b", "Part A & B workbook", "5 skills", "Show the evidence", "#lab-part-b-card h3", "#lab-part-b-card h3",
        "#lab-part-b-evidence"),
)
BY_ID = {lab.id: lab for lab in LABS}
# The class's tab: no model runs when it opens; the walks audit it in every view.
CLASS = Lab("classroom", "Ask the class", "", "", "text=Lecturer: start a class", "text=Lecturer: start a class")
PAGES = LABS + (CLASS,)

# Elements the Tab key stops at, as the browser decides (tabIndex >= 0, rendered, not disabled).
TABBABLE_JS = """(root) => [...(root || document).querySelectorAll(
  'a[href], button, input, select, textarea, summary, iframe, [tabindex], [contenteditable="true"]')]
  .filter(e => !e.disabled && e.tabIndex >= 0 && e.getClientRects().length
          && getComputedStyle(e).visibility !== 'hidden' && !e.closest('[inert]'))"""

PHONE_JS = """() => {
  const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const tabs = [...document.querySelectorAll('[role=tablist] button[role=tab]')].filter(shown);
  const menus = [...document.querySelectorAll('.overflow-menu')].filter(shown);
  const plot = [...document.querySelectorAll('.js-plotly-plot')].find(shown);
  return {height: document.documentElement.scrollHeight, overflow: document.documentElement.scrollWidth - innerWidth,
          first_chart_y: plot ? Math.round(plot.getBoundingClientRect().top + scrollY) : null,
          cut: tabs.filter(b => b.scrollWidth > b.clientWidth + 1).map(b => b.textContent.trim()),
          behind_menu: menus.flatMap(m => [...m.querySelectorAll('.overflow-dropdown button')].map(b => b.textContent.trim()))};
}"""

# What a screen reader has of each visible chart: its name, its description, a table of its numbers.
CHARTS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(e => e.getClientRects().length
    && e.getBoundingClientRect().height > 0).map(plot => {
  const described = (plot.getAttribute('aria-describedby') || '').split(' ').filter(Boolean)
    .map(id => document.getElementById(id)).filter(Boolean).map(e => e.textContent.trim()).join(' ');
  const box = plot.parentElement.querySelector(':scope > .lab-figure-text');
  const table = box && box.querySelector('table');
  return {role: plot.getAttribute('role'), name: plot.getAttribute('aria-label') || '', summary: described,
          control: box ? (box.querySelector('summary') || {}).textContent || '' : '',
          rows: table ? [...table.querySelectorAll('tr')].map(r => [...r.cells].map(c => c.textContent)) : []};
})"""


def lab_page(browser, url: str, lab: Lab, view: dict, query: str = ""):
    """A new page in this view with the lab opened by its link and its default example drawn; closed after."""
    return KeptPages(browser, url, view).walk(lab, query)


class KeptPages(dict):
    """A test file's pages by lab id: a view's walk keeps a lab's page open for the file's later checks of the same
    lab and view (checks that read the page, move the focus or open a fold), so that the page is drawn once, not
    once per test; a check whose walk did not keep its page (the walk failed, or ran alone) opens one."""

    def __init__(self, browser, url: str, view: dict):
        super().__init__()
        self.browser, self.url, self.view = browser, url, view

    @contextlib.contextmanager
    def walk(self, lab: Lab, query: str = "", view: dict | None = None, keep: bool = False):
        """A new page in `view` (this file's by default) with the lab opened by its link and its default example
        drawn; kept afterwards when asked and the walk passed, else closed."""
        context = self.browser.new_context(**(view or self.view))
        try:
            page = context.new_page()
            open_lab(page, self.url, lab, query)
            yield page
        except BaseException:
            context.close()
            raise
        if keep:
            self[lab.id] = page
        else:
            context.close()

    def page(self, lab: Lab):
        """The lab's kept page, or a new one opened by its link."""
        if lab.id not in self:
            with self.walk(lab, keep=True):
                pass
        return self[lab.id]

    def close(self) -> None:
        for page in self.values():
            page.context.close()


def open_lab(page, url: str, lab: Lab, query: str = "") -> None:
    """Open a lab by its link and wait until its default example is drawn."""
    page.goto(f"{url}?tab={lab.id}{query}", wait_until="load")
    page.get_by_role("tab").first.wait_for(timeout=90000)
    page.locator(lab.first).locator("visible=true").first.wait_for(timeout=180000)
    settle(page)


# Settled: no event running, and every chart on screen that carries a text alternative has it (figure_text.js
# describes a chart in the frame after plotly draws it).
SETTLED_JS = """() => !document.querySelector('.progress-text, .eta-bar')
  && [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.getClientRects().length)
       .every(p => p.getAttribute('role') === 'figure' || !(p.layout && p.layout.meta && p.layout.meta.lab_text))"""
TWO_FRAMES_JS = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def settle(page) -> None:
    """Wait until no event is running and the charts are drawn and described, then for two frames to be painted
    (plotly's last redraws at the new size): states, not a time."""
    page.wait_for_function(SETTLED_JS, timeout=180000)
    page.evaluate(TWO_FRAMES_JS)


def phone_figures(page, lab: Lab) -> dict:
    """Height, sideways overflow, the cut tab names, and where the first chart and the main result are."""
    figures = page.evaluate(PHONE_JS)
    main = page.locator(lab.result).locator("visible=true").first
    box = main.bounding_box() if main.count() else None
    scroll = page.evaluate("() => scrollY")
    figures["main_y"] = round(box["y"] + scroll) if box else None
    figures["screens"] = round(figures["height"] / page.viewport_size["height"], 1)
    return figures


def charts(page) -> list[dict]:
    return page.evaluate(CHARTS_JS)


def json_box_stops(page) -> list[int]:
    """The tab stops inside each visible "Result (as the API returns it)" box."""
    return page.evaluate(f"() => [...document.querySelectorAll('.lab-result-json')].filter(e => e.getClientRects()"
                         f".length).map(e => ({TABBABLE_JS})(e).length)")


def focusable_count(page) -> int:
    return page.evaluate(f"() => ({TABBABLE_JS})(document).length")


DESCRIBE_FOCUS = """() => { const e = document.activeElement; if (!e || e === document.body) return null;
  return {tag: e.tagName, text: (e.getAttribute('aria-label') || e.innerText || e.value || '').trim().slice(0, 60),
          label: e.labels && e.labels[0] ? e.labels[0].innerText.trim() : ''}; }"""


def press_until(page, key: str, test_js: str, arg=None, limit: int = 400) -> int | None:
    """Press a key until test_js(document.activeElement, arg) holds: the number of presses (None: never)."""
    for n in range(1, limit + 1):
        page.keyboard.press(key)
        if page.evaluate(f"(arg) => ({test_js})(document.activeElement, arg)", arg):
            return n
    return None


IS_INPUT = """(e, label) => !!e && ['INPUT', 'TEXTAREA'].includes(e.tagName)
  && ([...(e.labels || [])].some(l => l.innerText.trim() === label) || e.getAttribute('aria-label') === label)
  || !!e && !!e.closest && !!e.closest('label') && e.closest('label').innerText.trim().startsWith(label)"""
IS_BUTTON = "(e, name) => !!e && e.tagName === 'BUTTON' && e.innerText.trim() === name"
# At or past the result, in the order the page reads (the result itself may hold no focusable element).
AT_RESULT = """(e, r) => !!e && !!r && (r.contains(e) || !!(r.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING))"""


def keyboard_walk(page, lab: Lab) -> dict:
    """From the top of the page, with keys alone: reach the lab's input (Tab), change it (type), reach its run
    button (Tab), run it (Enter), reach its result (Tab). The number of key presses of each step."""
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    walk = {"to_input": press_until(page, "Tab", IS_INPUT, lab.input)}
    if walk["to_input"] is None:
        return walk
    focused = page.evaluate("() => document.activeElement.tagName")
    if focused in ("INPUT", "TEXTAREA") and page.evaluate("() => document.activeElement.getAttribute('role')") != "combobox":
        page.keyboard.press("End")
        page.keyboard.type(" ")
    walk["to_run"] = press_until(page, "Tab", IS_BUTTON, lab.run) if lab.run else 0
    if walk["to_run"] is None:
        return walk
    with page.expect_request(lambda r: "/gradio_api/queue/join" in r.url or "/gradio_api/run/" in r.url, timeout=30000):
        page.keyboard.press("Enter")
    settle(page)
    if lab.done:
        page.locator(lab.done).first.wait_for(timeout=180000)
    result = page.locator(lab.ran or lab.result).locator("visible=true").first.element_handle(timeout=180000)
    walk["to_result"] = press_until(page, "Tab", AT_RESULT, result, limit=60)
    return walk


# ---------------------------------------------------------------- axe-core (WCAG 2.1 A and AA)
#
# No serious or critical violation is allowed on any lab's page in any view: there is no allow-list. What Gradio's
# own markup lacked is mended by the app (assets/js/fold.js: a role for the empty output's placeholder, a tab
# stop on a box that scrolls; labs/core/ui/table.py: HTML tables instead of Dataframe grids). axe does not check
# that a chart has a text alternative (WCAG 1.1.1); the audit does, as a rule of its own,
# "chart-text-alternative": every visible plotly chart is a figure with a name, a summary it is described by and
# a "Show as table" control with its numbers (labs/core/ui/figure_text.py).

AXE_OPTIONS = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
               "resultTypes": ["violations"]}
SEVERE = ("serious", "critical")


def audit(page) -> list[tuple[str, str, str]]:
    """Serious and critical violations on the page as it is now: (rule, impact, selector + HTML) per node."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options=AXE_OPTIONS).response
    found = [(v["id"], v["impact"], " ".join(map(str, node["target"])) + " " + node["html"][:200])
             for v in results["violations"] if v["impact"] in SEVERE for node in v["nodes"]]
    return found + [("chart-text-alternative", "serious", f"{c['name'] or 'a chart'}: {c}") for c in charts(page)
                    if not (c["role"] == "figure" and c["name"] and c["summary"] and c["control"] == "Show as table"
                            and len(c["rows"]) > 1)]


def assert_accessible(page, lab: Lab) -> None:
    """axe's audit of the page as it is now (a lab's first result drawn): nothing serious or critical."""
    bad = audit(page)
    counts = Counter(rule for rule, _, _ in bad)
    assert bad == [], (f"{lab.title}: {len(bad)} " + ", ".join(f"{r}={n}" for r, n in counts.most_common())
                       + "\n" + "\n".join(node for _, _, node in bad[:5]))


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("--labs", default=",".join(BY_ID))
    parser.add_argument("--keyboard", action="store_true", help="also walk every lab with the keyboard (slow)")
    parser.add_argument("--screenshots", help="a folder for each lab's phone screenshot (its first two screens)")
    parser.add_argument("--result", action="append", default=[], metavar="LAB=SELECTOR",
                        help="another main result for a lab (an older version of the app names it differently)")
    args = parser.parse_args()
    for override in args.result:
        lab_id, selector = override.split("=", 1)
        BY_ID[lab_id] = dataclasses.replace(BY_ID[lab_id], result=selector)
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        for lab in (BY_ID[i] for i in args.labs.split(",")):
            with lab_page(browser, args.url, lab, PHONE) as page:
                row = {"phone": phone_figures(page, lab), "charts": charts(page)}
                if args.screenshots:  # the first two screens: where the main result must be
                    page.screenshot(path=f"{args.screenshots}/{lab.id}.png", full_page=True,
                                    clip={"x": 0, "y": 0, "width": 390, "height": 2 * 844})
            with lab_page(browser, args.url, lab, DESKTOP) as page:
                row["focusable"] = focusable_count(page)
                row["json_stops"] = json_box_stops(page)
                if args.keyboard:
                    row["keys"] = keyboard_walk(page, lab)
            labelled = sum(bool(c["name"] and c["summary"]) for c in row["charts"])
            print(json.dumps({lab.title: {**row, "charts": f"{labelled} of {len(row['charts'])} labelled"}}), flush=True)
            out[lab.id] = row
        browser.close()


if __name__ == "__main__":
    main()
