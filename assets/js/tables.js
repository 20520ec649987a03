// "⬇ CSV" under every read-only table (labs/core/ui/table.py draws the button into the table's HTML): one
// listener for the page, not a Gradio event per table. The rows are the table's own cells, headers first.
(() => {
  const cell = (text) => (/[",\n]/.test(text) ? '"' + text.replaceAll('"', '""') + '"' : text);
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("button.lab-csv");
    const table = button && button.parentElement.parentElement.querySelector("table.lab-table");
    if (!table) return;
    const rows = [...table.querySelectorAll("tr")].map((row) => [...row.cells].map((c) => cell(c.textContent)));
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([rows.map((row) => row.join(",")).join("\n")], { type: "text/csv" }));
    link.download = "lm-lab-table.csv";
    link.click();
    URL.revokeObjectURL(link.href);
  });
})();
