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

// A student's page in a class asks the server every 2.5 seconds whether the class moved on: a plain GET of
// /class/version (labs/classroom/poll_route.py), not a Gradio event. Only when the number changed does it press
// the panel's hidden refresh button, whose Gradio event redraws the panel. A phone with the page in the
// background does not ask; it asks at once when the student comes back. A code the server does not know (a
// mistyped link) stops the asking: each would count as a wrong code against the lecture hall's network.
(function () {
  const POLL_MS = 2500;  // labs/classroom/poll_route.py: POLL_SECONDS
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

// A student's Send (and Enter in the answer box): one POST of JSON to /class/answer (labs/classroom/poll_route.py),
// not a Gradio event, which costs the server five times as much (a hall of 500 answers within seconds). The reply
// is the same as /class_answer's: stored before it comes; the status line says so, or says why not. Without the
// page's hidden marker (views.page_marker) the panel's own Gradio event sends the answer.
(function () {
  const LEVELS = ["guessing", "unsure", "fairly sure", "sure"];
  let sending = false;

  function root() {
    const config = window.gradio_config;
    return ((config && config.root) || window.location.origin).replace(/\/$/, "");
  }

  function say(text) {
    const status = document.querySelector("#lab-class-status");
    if (!status) return;
    let line = status.querySelector(".lab-class-status-line");
    if (!line) {
      line = document.createElement("p");
      line.className = "lab-class-status-line";
      line.setAttribute("role", "status");
      line.setAttribute("aria-live", "polite");
      (status.querySelector(".prose") || status).appendChild(line);
    }
    line.textContent = text;  // the student's own words: text, never HTML
  }

  function visible(element) { return element && element.offsetParent !== null; }

  async function send(me) {
    if (sending) return;
    const box = document.querySelector("#lab-class-answer input, #lab-class-answer textarea");
    const picked = document.querySelector("#lab-class-choice input:checked");
    const sure = document.querySelector("#lab-class-sure input:checked");
    const answer = visible(document.querySelector("#lab-class-choice")) ? (picked ? picked.value : "") :
      (box ? box.value : "");
    sending = true;
    try {
      const response = await fetch(root() + "/class/answer", {
        method: "POST", headers: {"Content-Type": "application/json"}, cache: "no-store",
        body: JSON.stringify({code: me.dataset.code, student_id: me.dataset.student, answer: answer,
                              confidence: sure ? sure.value : null, question_id: me.dataset.question || null}),
      });
      const got = await response.json().catch(() => ({error: "The server did not answer; press Send again."}));
      if (!response.ok) {
        say("⚠️ " + (got.error || "Not sent; press Send again."));
        const refresh = document.getElementById("lab-class-refresh");
        if (refresh && response.status < 500) refresh.click();  // the class may have moved on: show where it is
        return;
      }
      const level = got.confidence ? " (" + LEVELS[got.confidence - 1] + ")" : "";
      const again = got.replaced ? " It replaces your earlier answer." : "";
      say("✓ Received: “" + got.answer + "”" + level + "." + again +
          " You can change it until the lecturer reveals the answers.");
    } catch (error) {
      say("⚠️ Not sent: no connection just now. Press Send again.");
    } finally {
      sending = false;
    }
  }

  function marker() { return document.querySelector("#lab-class-student .lab-class-me"); }

  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("#lab-class-send");
    const me = button && marker();
    if (!me) return;
    event.preventDefault();
    event.stopImmediatePropagation();  // capture phase, at the document: Gradio's own click never runs
    send(me);
  }, true);
  document.addEventListener("keydown", (event) => {
    const box = event.key === "Enter" && event.target.closest && event.target.closest("#lab-class-answer");
    const me = box && marker();
    if (!me || event.isComposing) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    send(me);
  }, true);
})();
