// Ask the class (labs/classroom). Before the page draws: a lecturer link's key leaves the address bar (so a
// projected browser never shows it) for this tab's sessionStorage, where the Class tab reads it once; a
// student's link (?class=CODE) puts the page in class mode (assets/lab.css: the question comes first).
(function () {
  const url = new URL(window.location);
  const key = url.searchParams.get("lecturer");
  if (key) {
    sessionStorage.setItem("lm-lab-lecturer-link", key);
    url.searchParams.delete("lecturer");
    window.history.replaceState(null, "", url);
  }
  if (url.searchParams.get("class")) {
    const on = () => document.body.classList.add("lab-in-class");
    if (document.body) on(); else document.addEventListener("DOMContentLoaded", on);
  }
})();

// A student's page in a class asks the server every few seconds whether the class moved on: a plain GET of
// /class/version (labs/classroom/poll_route.py), not a Gradio event. Only when the number changed does it press
// the panel's hidden refresh button, whose Gradio event redraws the panel. A phone with the page in the
// background does not ask; it asks at once when the student comes back. A code the server does not know (a
// mistyped link) stops the asking: each would count as a wrong code against the lecture hall's network.
(function () {
  const POLL_MS = 3000;
  const shown = {};  // the version each code was last seen at (a new page's first answer redraws once)
  const stopped = {};  // codes the server refused
  let asking = false;

  function root() {
    const config = window.gradio_config;
    return ((config && config.root) || window.location.origin).replace(/\/$/, "");
  }

  async function poll() {
    const code = new URL(window.location).searchParams.get("class");
    const refresh = document.getElementById("lab-class-refresh");
    if (!code || stopped[code] || asking || document.hidden || !refresh) return;
    asking = true;
    try {
      const response = await fetch(root() + "/class/version?code=" + encodeURIComponent(code),
                                   {cache: "no-store"});
      if (response.status >= 400 && response.status < 500) { stopped[code] = true; return; }
      if (!response.ok) return;  // the server is busy or its database is away: ask again next time
      const now = await response.json();
      const version = now.version + (now.closed ? ":closed" : "");
      if (shown[code] !== version) {
        shown[code] = version;
        refresh.click();
      }
      if (now.closed) stopped[code] = true;  // an ended class changes no more
    } catch (error) {
      // offline for a moment (a phone between networks): ask again next time
    } finally {
      asking = false;
    }
  }

  setInterval(poll, POLL_MS);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
})();

// The lecturer's timer (labs/classroom/timer.py): every page counts down on its own clock from the seconds left
// when it drew (labs/classroom/views.countdown_html), so no page depends on the server's clock or on a poll. At
// zero it says "time is up" and the student's Send button rests (the server refuses a late answer anyway); more
// time from the lecturer redraws the question with a new count, and the button wakes.
(function () {
  function clock(seconds) {
    const whole = Math.max(0, Math.ceil(seconds));
    return Math.floor(whole / 60) + ":" + String(whole % 60).padStart(2, "0");
  }

  function tick() {
    document.querySelectorAll(".lab-class-countdown[data-left]").forEach((element) => {
      if (!element.dataset.drawnAt) element.dataset.drawnAt = String(performance.now());
      const left = parseFloat(element.dataset.left) - (performance.now() - parseFloat(element.dataset.drawnAt)) / 1000;
      const text = left <= 0 ? "Time is up" : clock(left) + " left";
      if (element.textContent !== text) element.textContent = text;
      element.classList.toggle("lab-class-time-up", left <= 0);
      const send = element.closest("#lab-class-student") && document.querySelector("#lab-class-send");
      if (send && left <= 0 && !send.disabled) { send.disabled = true; send.dataset.timeUp = "1"; }
      if (send && left > 0 && send.dataset.timeUp) { send.disabled = false; delete send.dataset.timeUp; }
    });
  }

  setInterval(tick, 250);
})();
