// Every chart: plotly's modebar offers "Download plot as a PNG"; this adds SVG beside it.
(() => {
  function addSvgButton(bar) {
    if (bar.__labSvg || !window.Plotly) return;
    const plot = bar.closest(".js-plotly-plot");
    const group = bar.querySelector(".modebar-group");
    if (!plot || !group) return;
    bar.__labSvg = true;
    const button = document.createElement("a");
    button.className = "modebar-btn lab-svg-btn";
    button.setAttribute("data-title", "Download plot as SVG");
    button.setAttribute("rel", "tooltip");
    button.textContent = "SVG";
    button.addEventListener("click", () => window.Plotly.downloadImage(plot, { format: "svg", filename: "lm-lab-chart" }));
    group.appendChild(button);
  }
  new MutationObserver(() => document.querySelectorAll(".modebar").forEach(addSvgButton))
    .observe(document.documentElement, { childList: true, subtree: true });
})();
