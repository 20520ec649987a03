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
