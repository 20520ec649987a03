"""The build context: what one build of the app records while its labs lay out their tabs, handed by app.py
to every lab's build(ctx) and read back once every tab exists. Each lab records its link inputs (link),
its first results (on_load) and its "Ask the class" / "Share" buttons here; tab_bar.page_load wires the
links and loads, the class lab (labs/classroom/tab.py: connect) the buttons.

It replaces module-level lists that every build appended to and the last step had to clear: app.py makes
one per gr.Blocks, so a second app built in the same process (the tests build several) starts afresh, and
what a lab's build needs is in its argument, not in an import's side effects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gradio as gr
from gradio.context import Context

from labs.core.ui import links
from labs.core.ui.class_hooks import Hooks
from labs.core.ui.ui import wire

# Runs in the browser after the server has written the query string: the full link, copied.
COPY_LINK_JS = """(q) => { if (!q) return q;
  const url = window.location.origin + window.location.pathname + q
    + (document.body.classList.contains('lab-present') ? '&present=1' : '');
  if (navigator.clipboard) navigator.clipboard.writeText(url).catch(() => {});
  return url; }"""


@dataclass
class Build:
    demo: gr.Blocks  # the app's Blocks: a lab that needs demo.load wires it here (ctx.demo.load)
    loads: list[tuple] = field(default_factory=list)  # (fn, inputs, outputs, kwargs, tabs around): page_load wires them
    links: list[tuple[str, str, gr.components.Component]] = field(default_factory=list)  # (tab, parameter, input)
    class_hooks: Hooks = field(default_factory=Hooks)  # the class's browser states and the labs' class buttons
    # What the class lab's parts share (core never imports a lab, so these are typed loosely): the student's
    # panel (tab_student.Panel, built above the tab bar) and the lecturer's views (the Class tab's outputs,
    # which the labs' "Ask the class" buttons redraw).
    student_panel: Any = None
    lecturer_views: list = field(default_factory=list)

    def on_load(self, fn, inputs=None, outputs=None, **kwargs) -> None:
        """Run fn when its tab is first on screen on a page (the page's first tab, a link's, or one a student
        opens), after a link's values, if the link names the tab, are in the inputs; the result is shared by
        every page that opens with the same inputs. Call it inside the lab's tab, with no event settings."""
        block, tabs_around = Context.block, []
        while block is not None:  # every tab around this call, innermost first: page_load picks the lab's own
            if isinstance(block, gr.Tab):
                tabs_around.append(block)
            block = getattr(block, "parent", None)
        self.loads.append((fn, inputs, outputs, kwargs, tabs_around))

    def link(self, tab_module: str, **inputs: gr.components.Component) -> None:
        """Make these inputs part of the tab's link (parameter name = keyword), and add the tab's
        "Copy link" button. tab_module is the tab's __name__ (labs.<tab>.tab)."""
        tab = tab_module.split(".")[1]
        self.links.extend((tab, name, component) for name, component in inputs.items())
        with gr.Row(elem_classes=["lab-link-row"]):
            button = gr.Button("🔗 Copy a link to this example", size="sm", scale=0)
            box = gr.Textbox(show_label=False, container=False, interactive=False, buttons=["copy"], scale=4,
                             placeholder="A link that opens this tab with these inputs (for a slide or a classmate)")
        names = list(inputs)
        wire(button.click, lambda *values: links.query(tab, dict(zip(names, values))), list(inputs.values()), box,
             queue=False).then(None, box, box, js=COPY_LINK_JS, api_visibility="private")

    # The class hooks (labs.core.ui.class_hooks), recorded in this build's Hooks.
    def create_states(self) -> Hooks:
        """The class's two browser copies; made once, before the tabs (their buttons take them as inputs)."""
        return self.class_hooks.create_states()

    def ask_button(self, kind: str, label: str, **inputs: gr.components.Component) -> gr.Button:
        """A lab's "Ask the class" button (class_hooks.Hooks.ask_button)."""
        return self.class_hooks.ask_button(kind, label, **inputs)

    def share_button(self, workbook: gr.components.Component) -> gr.Button:
        """The workbook's "Share my results with the class" (class_hooks.Hooks.share_button)."""
        return self.class_hooks.share_button(workbook)
