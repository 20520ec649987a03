// Every chart's text alternative (WCAG 1.1.1), from labs/core/ui/figure_text.py: the figure carries its name,
// a one-sentence summary and its numbers in layout.meta.lab_text. Here the chart becomes a figure named by
// its title and described by the summary (a visually hidden caption), and "Show as table" under it reveals
// the same numbers. Text only (textContent): nothing of it is read as HTML.
(() => {
  let count = 0;
  let pending = false;

  function cell(tag, text) {
    const element = document.createElement(tag);
    element.textContent = text;
    return element;
  }

  function table(t) {
    // A wide table scrolls inside itself; the keyboard can reach it (and scroll it) as a named region.
    const scroller = document.createElement("div");
    scroller.className = "lab-figure-table-scroll";
    scroller.tabIndex = 0;
    scroller.setAttribute("role", "region");
    scroller.setAttribute("aria-label", t.caption);
    const grid = document.createElement("table");
    grid.append(cell("caption", t.caption));
    const head = grid.createTHead().insertRow();
    for (const h of t.headers) head.append(Object.assign(cell("th", h), { scope: "col" }));
    const body = grid.createTBody();
    for (const values of t.rows) {
      const row = body.insertRow();
      values.forEach((v, i) => row.append(i === 0 ? Object.assign(cell("th", v), { scope: "row" }) : cell("td", v)));
    }
    scroller.append(grid);
    return scroller;
  }

  function describe(plot) {
    const text = plot.layout && plot.layout.meta && plot.layout.meta.lab_text;
    if (!text || plot.__labText === text) return;
    plot.__labText = text;
    plot.__labTextId = plot.__labTextId || `lab-figure-text-${++count}`;
    let box = plot.__labTextBox;
    if (!box || !box.isConnected) {
      box = document.createElement("div");
      box.className = "lab-figure-text";
      plot.after(box);
      plot.__labTextBox = box;
    }
    const wasOpen = !!(box.querySelector("details") || {}).open;
    const caption = cell("p", text.summary);
    caption.id = plot.__labTextId;
    caption.className = "lab-visually-hidden";
    box.replaceChildren(caption);
    if (text.tables && text.tables.length) {
      const details = document.createElement("details");
      details.className = "lab-figure-table";
      details.open = wasOpen;
      details.append(cell("summary", "Show as table"), ...text.tables.map(table));
      box.append(details);
    }
    plot.setAttribute("role", "figure");
    plot.setAttribute("aria-label", text.name);
    plot.setAttribute("aria-describedby", plot.__labTextId);
  }

  function scan() {
    pending = false;
    document.querySelectorAll(".js-plotly-plot").forEach(describe);
    // A chart Gradio took away leaves no text behind.
    document.querySelectorAll(".lab-figure-text").forEach((box) => {
      const before = box.previousElementSibling;
      if (!before || !before.classList.contains("js-plotly-plot")) box.remove();
    });
  }

  new MutationObserver(() => {
    if (!pending) {
      pending = true;
      requestAnimationFrame(scan);
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
