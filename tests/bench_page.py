"""What a page costs the browser, benchmark: Chromium's CPU seconds (every Chromium process) to open a lab's link
until its first chart is drawn, and to keep the drawn page open and idle for 20 s; beside them the same for a
bare Gradio page with one plot (the floor a Gradio app cannot go under). A student's phone pays these seconds
on a core several times slower than this machine's.

    python -m tests.bench_page                  # starts `python app.py` on a free port
    python -m tests.bench_page URL              # a running LM Lab
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IDLE_S = 20
BARE_APP = """
import gradio as gr, plotly.graph_objects as go, sys
with gr.Blocks() as demo:
    plot = gr.Plot()
    demo.load(lambda: go.Figure(go.Bar(x=["a", "b"], y=[1, 2])), None, plot)
demo.launch(server_port=int(sys.argv[1]))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def started(command: list[str], port: int) -> subprocess.Popen:
    env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_ANALYTICS_ENABLED="False")
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            return process
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit(f"{command} did not start")


def chromium_cpu_seconds() -> float:
    import psutil

    total = 0.0
    for process in psutil.process_iter(["name"]):
        if "chrom" in (process.info["name"] or ""):
            try:
                times = process.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                pass
    return total


def measure(browser, url: str) -> tuple[float, float, float]:
    """(seconds to the first chart, CPU seconds for it, CPU seconds of IDLE_S idle), the median of 3 opens."""
    runs = []
    for _ in range(3):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        before, clock = chromium_cpu_seconds(), time.perf_counter()
        page.goto(url, wait_until="load")
        page.locator(".js-plotly-plot").first.wait_for(timeout=180000)
        opened, opened_cpu = time.perf_counter() - clock, chromium_cpu_seconds() - before
        time.sleep(2)  # the last answers drawn
        before = chromium_cpu_seconds()
        time.sleep(IDLE_S)
        runs.append((opened, opened_cpu, chromium_cpu_seconds() - before))
        context.close()
    return tuple(sorted(run[i] for run in runs)[1] for i in range(3))


def main() -> int:
    from playwright.sync_api import sync_playwright

    servers, url = [], sys.argv[1] if len(sys.argv) > 1 else None
    if url is None:
        port = free_port()
        servers.append(started([sys.executable, "app.py"], port))
        url = f"http://127.0.0.1:{port}/"
    bare_port = free_port()
    bare_file = Path(tempfile.mkdtemp()) / "bare.py"
    bare_file.write_text(BARE_APP)
    servers.append(started([sys.executable, str(bare_file), str(bare_port)], bare_port))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            rows = [("LM Lab, ?tab=cost", measure(browser, url.rstrip("/") + "/?tab=cost")),
                    ("LM Lab, ?tab=embeddings", measure(browser, url.rstrip("/") + "/?tab=embeddings")),
                    ("a bare Gradio page, one plot", measure(browser, f"http://127.0.0.1:{bare_port}/"))]
            browser.close()
    finally:
        for server in servers:
            server.terminate()
    print(f"\n| {'page':30} | first chart (s) | its CPU (s) | CPU idle {IDLE_S} s (s) |")
    print(f"|{'-' * 32}|-----------------|-------------|--------------------|")
    for name, (opened, cpu, idle) in rows:
        print(f"| {name:30} | {opened:15.1f} | {cpu:11.1f} | {idle:18.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
