// The status line (app.py, labs/core/serving/status_route.py): every few seconds the page asks the server
// for the status line's fingerprint with a plain GET, not a Gradio event, and presses the hidden refresh
// button (whose event redraws the line) only when the fingerprint changed. A page in the background does
// not ask; it asks at once when the reader comes back.
(function () {
  const POLL_MS = 5000;
  let shown = null;  // the fingerprint last drawn (the first answer redraws once: a model may have loaded)
  let asking = false;

  function root() {
    const config = window.gradio_config;
    return ((config && config.root) || window.location.origin).replace(/\/$/, "");
  }

  async function poll() {
    const refresh = document.getElementById("lab-status-refresh");
    if (asking || document.hidden || !refresh) return;
    asking = true;
    try {
      const response = await fetch(root() + "/lab/status-version", {cache: "no-store"});
      if (!response.ok) return;  // the server is busy: ask again next time
      const now = (await response.json()).version;
      if (shown !== now) {
        shown = now;
        refresh.click();
      }
    } catch (error) {
      // offline for a moment: ask again next time
    } finally {
      asking = false;
    }
  }

  setInterval(poll, POLL_MS);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
})();
