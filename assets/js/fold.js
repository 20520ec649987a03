// A student's phone and keyboard (assets/lab.css, "Phone"): a "Skip to the lab" link first on the page, and
// disclosure buttons that fold the status line, each lab's explainer ("What is this?"), its examples and its
// notes on sources on a narrow screen.
// The buttons are shown only under 600 px; wider, what they fold is always open and they are not rendered.
(() => {
  let count = 0;

  // selector: the class the block was found by; Gradio 6 gives it to the Markdown's text inside too, which opens
  // and folds with its block.
  function foldButton(block, words, selector) {
    if (block.__labFold) return;
    block.__labFold = true;
    block.id = block.id || `lab-fold-${++count}`;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "lab-fold-toggle";
    button.textContent = words;
    button.setAttribute("aria-expanded", "false");
    button.setAttribute("aria-controls", block.id);
    button.addEventListener("click", () => {
      const open = block.classList.toggle("lab-open");
      if (selector) block.querySelectorAll(selector).forEach((inner) => inner.classList.toggle("lab-open", open));
      button.setAttribute("aria-expanded", String(open));
    });
    block.prepend(button);
  }

  // The open lab's own panel: the innermost tab panel on screen inside the tab bar.
  function labPanel() {
    const panels = [...document.querySelectorAll("#lab-groups [role=tabpanel]")].filter((p) => p.offsetParent);
    return panels.find((p) => !panels.some((q) => q !== p && p.contains(q))) || null;
  }

  function skipLink() {
    if (document.getElementById("lab-skip")) return;
    const link = document.createElement("a");
    link.id = "lab-skip";
    link.href = "#lab-groups";
    link.textContent = "Skip to the lab";
    link.addEventListener("click", (event) => {
      const panel = labPanel();
      if (!panel) return;  // the page is still opening: the link's own target will do
      event.preventDefault();
      panel.tabIndex = -1;
      panel.focus({ preventScroll: true });
      panel.scrollIntoView({ block: "start" });
    });
    document.body.prepend(link);
  }

  // A table or a formula that scrolls (sideways on a phone, assets/lab.css; a long table inside its own box)
  // must be reachable by the keyboard to be scrolled (axe: scrollable-region-focusable).
  function scrollable(table) {
    const scrolls = table.scrollWidth > table.clientWidth + 1 || table.scrollHeight > table.clientHeight + 1;
    if (scrolls && !table.hasAttribute("tabindex")) {
      table.tabIndex = 0;
      table.dataset.labScroll = "1";
    } else if (!scrolls && table.dataset.labScroll) {
      table.removeAttribute("tabindex");
      delete table.dataset.labScroll;
    }
  }

  // A lab's examples are one tab stop, not one per example: the arrow keys move between them (a toolbar, or
  // the grid Gradio draws for examples of several inputs), Enter or Space picks one.
  const EXAMPLE = "button.gallery-item, tbody tr[tabindex]";
  function rove(group) {
    const items = [...group.querySelectorAll(EXAMPLE)];
    if (!items.length) return;
    if (!group.__labRove) {
      group.__labRove = true;
      const gallery = items[0].parentElement;
      if (gallery.tagName === "DIV") {  // a gallery of buttons; a table of examples is a grid already
        gallery.setAttribute("role", "toolbar");
        gallery.setAttribute("aria-label", group.__labLabel);
      }
      group.addEventListener("focusin", (event) => {
        const item = event.target.closest(EXAMPLE);
        if (item) { group.__labCurrent = item; rove(group); }
      });
      group.addEventListener("keydown", (event) => {
        const all = [...group.querySelectorAll(EXAMPLE)];
        const at = all.indexOf(event.target.closest(EXAMPLE));
        const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
        const to = event.key === "Home" ? 0 : event.key === "End" ? all.length - 1 : step ? at + step : -1;
        if (at < 0 || to < 0 || to >= all.length) return;
        event.preventDefault();
        all[to].focus();
      });
    }
    const current = items.includes(group.__labCurrent) ? group.__labCurrent : items[0];
    items.forEach((item) => { item.tabIndex = item === current ? 0 : -1; });
  }

  // On a phone a lab's secondary settings (the accordions marked lab-secondary, which the presenter view
  // hides: the fine-tune's data and hyper-parameters) start folded, so that the run button and its result
  // come first. Once per page: a student who opens one keeps it open.
  const narrow = window.matchMedia("(max-width: 600px)");
  function foldSecondary(block) {
    const header = block.querySelector("button.label-wrap");
    if (!header || block.__labPhoneFolded || !narrow.matches) return;
    block.__labPhoneFolded = true;
    if (header.classList.contains("open")) header.click();
  }

  function scan() {
    document.querySelectorAll(".gradio-container .lab-secondary").forEach(foldSecondary);
    document.querySelectorAll(".gradio-container .prose table, .gradio-container .virtual-table-viewport, "
      + ".gradio-container .table-wrap, .lab-figure-table-scroll, .lab-table-scroll, "
      + ".gradio-container .prose .katex-display")
      .forEach(scrollable);
    // Gradio's placeholder for an output with no value yet (an empty chart, image or JSON) is a <div> with an
    // aria-label and no role, which a screen reader may not read (axe: aria-prohibited-attr). It shows an icon:
    // the role of a picture gives its label ("Empty value") a place.
    document.querySelectorAll('.gradio-container div.empty[aria-label]:not([role])')
      .forEach((placeholder) => placeholder.setAttribute("role", "img"));
    const status = document.getElementById("lab-status");
    if (status) foldButton(status, "Device and models");
    // Gradio 6 gives a Markdown's classes to its block and to its text as well: fold the outer one only.
    const outer = (selector) => [...document.querySelectorAll(selector)]
      .filter((block) => !block.parentElement.closest(selector));
    outer(".lab-explainer").forEach((block) => foldButton(block, "What is this?", ".lab-explainer"));
    // A lab's notes on where its figures come from (class lab-phone-fold).
    outer(".lab-phone-fold").forEach((block) => foldButton(block, "Where these numbers come from", ".lab-phone-fold"));
    // A lab's examples (gr.Examples with an elem_id ending in "-examples"), under their own label.
    document.querySelectorAll('.gradio-container [id$="-examples"]').forEach((block) => {
      const label = block.querySelector("label, .label");
      block.__labLabel = block.__labLabel || (label && label.textContent.trim()) || "Examples";
      foldButton(block, block.__labLabel);
      rove(block);
    });
  }

  let pending = false;
  const start = () => {
    skipLink();
    scan();
    new MutationObserver(() => {
      if (!pending) {
        pending = true;
        requestAnimationFrame(() => { pending = false; scan(); });
      }
    }).observe(document.body, { childList: true, subtree: true });
    window.addEventListener("resize", () => requestAnimationFrame(scan));
  };
  if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
})();
