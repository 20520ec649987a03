// Presenter view (?present=1): a class on <body> that assets/lab.css styles for a lecture hall.
(function () {
  if (new URLSearchParams(window.location.search).get("present") === "1") {
    const on = () => document.body.classList.add("lab-present");
    if (document.body) on(); else document.addEventListener("DOMContentLoaded", on);
  }
})();
