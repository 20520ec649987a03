// Next token lab: clicking a bar of the distribution chart appends that token.
// gr.Plot has no click event, so plotly's own plotly_click is forwarded to a hidden textbox
// (#nt-clicked) whose input event runs the Python handler. The value carries a time stamp so
// that clicking the same bar twice appends it twice.
(() => {
  function hook() {
    const plot = document.querySelector("#nt-chart .js-plotly-plot");
    if (!plot || plot.__labClickHooked || typeof plot.on !== "function") return;
    plot.__labClickHooked = true;
    plot.on("plotly_click", (event) => {
      const point = event.points && event.points[0];
      const box = document.querySelector("#nt-clicked textarea, #nt-clicked input");
      if (!point || point.customdata === undefined || !box) return;
      box.value = `${point.customdata}:${Date.now()}`;
      box.dispatchEvent(new Event("input", { bubbles: true }));
    });
  }
  new MutationObserver(hook).observe(document.documentElement, { childList: true, subtree: true });
})();
