// A chart on a phone (under 600 px): plotly never wraps a title, so a long one ran off both sides of a chart
// 370 px wide. Here it is broken between words into lines that fit, with the top margin grown to hold them.
// Wider screens (the desktop, the presenter view) keep their charts exactly as the server drew them.
(() => {
  const narrow = window.matchMedia("(max-width: 600px)");
  let pending = false;

  function lines(words, perLine) {
    const out = [""];
    for (const word of words) {
      const last = out[out.length - 1];
      if (last && (last + " " + word).length > perLine) out.push(word);
      else out[out.length - 1] = last ? last + " " + word : word;
    }
    return out;
  }

  function fit(plot) {
    const layout = plot.layout;
    if (!layout || plot.__labFitted === layout || !plot._fullLayout || !window.Plotly) return;
    const title = layout.title && layout.title.text;
    const shown = plot.querySelector(".gtitle");
    if (title && !shown) return;  // not drawn yet
    plot.__labFitted = layout;  // once per figure: relayout keeps the same layout object
    // Titles with markup other than plain text and entities are left alone: a break inside a tag would show it.
    if (!title || /<(?!br\s*\/?>)/i.test(title)) return;
    const room = plot.clientWidth - 24;
    const width = shown.getBBox().width;
    if (width <= room) return;
    const plain = title.replace(/<br\s*\/?>/gi, " ");
    const perLine = Math.max(12, Math.floor(plain.length * room / width));
    const wrapped = lines(plain.split(/\s+/), perLine);
    const size = (plot._fullLayout.title.font || {}).size || 20;
    const top = (plot._fullLayout.margin || {}).t || 60;
    window.Plotly.relayout(plot, { "title.text": wrapped.join("<br>"), "margin.t": top + (wrapped.length - 1) * size * 1.25 });
  }

  function scan() {
    pending = false;
    if (narrow.matches) document.querySelectorAll(".js-plotly-plot").forEach(fit);
  }

  new MutationObserver(() => {
    if (!pending) {
      pending = true;
      requestAnimationFrame(scan);
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
