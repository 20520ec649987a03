"""The pictures a lecturer sees first, made by one command from the running app on real models:

    python -m tools.pictures [--out assets/screenshots] [--only LAB,...] [--url http://127.0.0.1:7860/]

It starts `python app.py` on a free 127.0.0.1 port, as a user would (a fresh GRADIO_TEMP_DIR and class
database; never LAB_EXTRA_MODELS: the Hub defaults when the Hub is reachable, else the two offline models), waits
until it answers, and opens every picture's `?tab=<lab>&…` link in headless Debian Chromium:

- app.png, the README's picture: the desktop (1280 px wide) of Next token on "The capital of France is";
- desktop/<lab>.png: each lab's desktop (1280 px wide, down to its main result), on docs/labs/<lab>.md;
- presenter/<lab>.png: its presenter view (`&present=1`), the first screen of a 1280×720 projector;
- phone/<lab>.png: a phone (390×844, Chromium's mobile mode), its first two screens.

Each waits for its result's state (a chart's SVG, the result's words), never for a fixed time, and fails
on an error or a spinner. Ask the class is shown on a class the tool starts through the API: a phone's question,
then the lecturer's reveal after twelve answers sent by the tool. manifest.json beside the pictures names
each one's file, lab (tab), title, group, view, the link it opened, the models that answered (read from the
picture's own part of the page, among those the app's /models API offers), what it shows, the date and the
commit; tests/test_pictures.py compares it with the app's tabs. `--only next_token,app` remakes some pictures
and keeps the others' entries; a full run deletes the PNGs it no longer makes. `--url` uses an app already
running (started without LAB_EXTRA_MODELS). A full run takes about 20 minutes on 2 shared cores: each page's load and
first result take 20 to 40 s."""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "assets" / "screenshots"
MANIFEST = "manifest.json"
README_PICTURE = "app.png"
VIEWS = ("desktop", "presenter", "phone")
CONTEXTS = {
    "desktop": dict(viewport={"width": 1280, "height": 800}, device_scale_factor=1),
    "presenter": dict(viewport={"width": 1280, "height": 720}, device_scale_factor=1),
    "phone": dict(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, device_scale_factor=1),
}
PHONE_SCREENS = 2  # a phone's picture: its first two screens, where every lab's main result starts
PRESENTER_LOW = 0.6  # a projector's picture scrolls to its main result when it starts below this share of the screen
DESKTOP_HEIGHT = (720, 1800)  # a desktop picture runs down to its main result, within these heights
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
START_LIMIT_S = 300  # the app's start on a busy machine
WAIT_MS = 300_000  # a state's wait: a first load of a model, a fine-tuning run, on 2 busy cores


@dataclass(frozen=True)
class Example:
    """One lab shown on one example: the link's parameters, the states that say it is drawn, what it shows."""
    lab: str
    params: dict
    ready: tuple  # Playwright selectors, each visible once the result is drawn (the first is the main result)
    shows: str  # the picture's caption, in a few words (the models are read from the page)
    press: str = ""  # a button to press once the page is drawn (a run that a link never starts by itself)
    pressed: tuple = ()  # the states after the press
    frame: str = ""  # an iframe whose SVG must be drawn (bertviz), on a desktop and a projector
    phone_ready: tuple = ()  # the states on a phone, where they differ (bertviz gives way to the heatmaps)
    bottom: str = ""  # where a desktop picture ends (default: the main result, the first state)
    height: int = DESKTOP_HEIGHT[1]  # a desktop picture's greatest height

    def link(self, view: str) -> str:
        params = {"tab": self.lab, **self.params}
        if view == "presenter":
            params["present"] = "1"
        return "?" + urlencode(params)


CHART = ".js-plotly-plot .main-svg"
README_EXAMPLE = Example(
    "next_token", {"prompt": "The capital of France is"},
    ("#nt-chart .js-plotly-plot .main-svg", "#nt-chart .js-plotly-plot text:text-is('Paris')"),
    "the next-token distribution after “The capital of France is”: “ Paris” first")
EXAMPLES = (
    Example("tokens", {"text": "The students were playing an unbelievable game."}, (".lab-token-row",),
            "one sentence split by every tokenizer offered here, with the token ids", bottom=".lab-token-rows"),
    Example("embeddings", {"word": "bank", "layer": "6"}, (CHART,),  # the tab's own four sentences: two senses
            "“bank” in four sentences, two senses: its vectors' cosine similarity at the last layer"),
    Example("attention", {"text": "The cat sat on the mat because it was tired.", "text_b": ""},
            ("iframe.lab-bertviz",), "bertviz's head view of “The cat sat on the mat because it was tired.” (the "
            "heatmaps on a phone)", frame="iframe[title^='bertviz head view']", phone_ready=(".lab-phone-note", CHART)),
    Example("masks", {"text": "The cat sat on the mat"}, (CHART,),
            "the bidirectional and causal masks of “The cat sat on the mat”, checked on two real models"),
    Example("fill_mask", {"text": "Every morning I drink a cup of [MASK] with lemon and honey."},
            (CHART, f"{CHART} text:text-is('coffee')"),
            "“Every morning I drink a cup of [MASK] with lemon and honey.”: the causal LM's left-only guesses "
            "(the masked LM's, where one is offered)"),
    Example("next_token", {"prompt": "I drink a cup of", "top_k": "3"},
            ("#nt-chart .js-plotly-plot .main-svg", "#nt-chart .js-plotly-plot text:text-is('coffee')"),
            "the next-token distribution after “I drink a cup of”, top-k 3 greying out the rest"),
    Example("pretraining", {"text": "The night train leaves before midnight. Passengers find their cabins and "
                                    "unfold the narrow beds.", "seed": "4"},
            ("text=Training signal:",), "one paragraph turned into each pre-training objective's example",
            bottom="text=Training signal: >> nth=1"),
    Example("choosing", {"check": "gpt2_ids"}, (".lab-cards table",),
            "every model offered here, read from its own config and weights"),
    Example("finetune", {"epochs": "2"}, ("#ft-run",),
            "a live fine-tuning run of the pre-trained encoder on the built-in reviews, 2 epochs",
            press="#ft-run", pressed=("#ft-curves .js-plotly-plot .main-svg", "text=/before → .* after/"),
            bottom="#ft-curves", height=2700),
    Example("cost", {"preset": "BERT-base", "device": "A100"}, (".lab-cost-result", CHART),
            "BERT-base's pre-training cost on A100s: 6·N·D as days, dollars and CO₂e (published figures)"),
    Example("part_b", {"q": "A3.1"}, ("#lab-part-b-card h3",),
            "the handout's exercise A3.1 (guess the next word), then “Show the evidence”: the causal LM's own guesses",
            press="button:has-text('Show the evidence')",
            pressed=("#lab-part-b-evidence >> text=/next token after each beginning/",), bottom="#lab-part-b-evidence"),
)
BY_LAB = {e.lab: e for e in EXAMPLES}
CLASS_QUESTION = "I drink a cup of"
CLASS_ANSWERS = {"coffee": 7, "tea": 4, "water": 1}  # what the tool's twelve phones answer


# ---------------------------------------------------------------------------------------------- the app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_environment(work: Path, port: int) -> dict:
    """The app's environment: a user's, with a fresh temporary folder and class database; real models only."""
    env = dict(os.environ, GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               GRADIO_TEMP_DIR=str(work / "gradio"), LAB_DATA_DIR=str(work / "data"), TMPDIR=str(work / "tmp"),
               GRADIO_ANALYTICS_ENABLED="False")
    for name in ("LAB_EXTRA_MODELS", "LAB_CLASS_DB", "LAB_PUBLIC_URL", "GRADIO_ROOT_PATH"):
        env.pop(name, None)
    for folder in ("gradio", "data", "tmp"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    return env


def start_app(work: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = open(work / "app.log", "w")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=app_environment(work, port), stdout=log,
                            stderr=subprocess.STDOUT)
    url, started = f"http://127.0.0.1:{port}/", time.monotonic()
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read(100)
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() - started > START_LIMIT_S:
                proc.kill()
                raise SystemExit(f"the app did not start; its log:\n{(work / 'app.log').read_text()[-3000:]}")
            time.sleep(0.3)


def stop_app(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def tab_bar(config: dict) -> list[dict]:
    """The tab bar as a running app's /config describes it: [{group, group_id, labs: [{id, title}]}]. A group is
    an outermost tab; a lab, a tab with an id right inside one (the tabs inside a lab, bertviz's views, are not)."""
    tabs = {c["id"]: c["props"] for c in config["components"] if c.get("type") == "tabitem"}
    groups: list[dict] = []

    def walk(node: dict, depth: int) -> None:
        props = tabs.get(node["id"])
        if props is not None:
            if depth == 0:
                groups.append({"group": props["label"], "group_id": props.get("id"), "labs": []})
            elif depth == 1 and props.get("id"):
                groups[-1]["labs"].append({"id": props["id"], "title": props["label"]})
            depth += 1
        for child in node.get("children", []):
            walk(child, depth)

    walk(config["layout"], 0)
    return groups


def read_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.load(answer)


# ---------------------------------------------------------------------------------------------- the browser

# Wait until no event is running and plotly has drawn every chart on the page (an SVG in each).
SETTLED_JS = """() => !document.querySelector('.progress-text, .eta-bar')
  && [...document.querySelectorAll('.js-plotly-plot')].filter(e => e.getClientRects().length)
       .every(e => e.querySelector('.main-svg'))"""
# Two frames after the last change: plotly and the fonts have painted.
PAINTED_JS = """() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() =>
  requestAnimationFrame(r))))"""
ERROR_JS = """() => [...document.querySelectorAll('.toast-body.error')].filter(e => e.getClientRects().length)
  .map(e => e.innerText.trim()).filter(Boolean)"""
# The words in a picture's part of the page (between two heights, inside one element; the header's status line, which
# lists every loaded model, left out): its visible text and the values of its inputs (a dropdown's model).
WORDS_JS = """([root, top, bottom]) => {
  const skip = (e) => !!e.closest('#lab-status, #lab-header, #lab-link-notes');
  const inside = (r) => r.width > 0 && r.height > 0 && r.bottom + scrollY > top && r.top + scrollY < bottom;
  const within = document.querySelector(root) || document.body;
  const words = [], walker = document.createTreeWalker(within, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const e = n.parentElement;
    if (!e || skip(e) || !n.textContent.trim() || getComputedStyle(e).visibility === 'hidden') continue;
    const range = document.createRange(); range.selectNodeContents(n);
    if (inside(range.getBoundingClientRect())) words.push(n.textContent);
  }
  for (const e of within.querySelectorAll('input, textarea'))
    if (!skip(e) && inside(e.getBoundingClientRect())) words.push(e.value);
  return words.join('\\n');
}"""


def models_named(words: str, offered: list[str]) -> list[str]:
    """The models this server offers that the picture's words name, in the server's order."""
    return [name for name in offered if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", words)]


def wait_drawn(page, ready, frame: str = "") -> None:
    for selector in ready:
        page.locator(selector).locator("visible=true").first.wait_for(timeout=WAIT_MS)
    if frame:
        page.frame_locator(frame).locator("svg line").first.wait_for(state="attached", timeout=WAIT_MS)
    page.wait_for_function(SETTLED_JS, timeout=WAIT_MS, polling=200)
    page.evaluate(PAINTED_JS)
    errors = page.evaluate(ERROR_JS)
    if errors:
        raise RuntimeError(f"{page.url}: the page shows an error: {errors}")


def top_of(page, selector: str) -> float:
    box = page.locator(selector).locator("visible=true").first.bounding_box()
    return box["y"] + page.evaluate("() => scrollY")


def bottom_of(page, selector: str) -> float:
    """Where the first match ends, or the matches beside it (two charts in a row: the taller one)."""
    boxes = [box for box in (m.bounding_box() for m in page.locator(selector).locator("visible=true").all()) if box]
    first = boxes[0]
    beside = [box for box in boxes if box["y"] < first["y"] + first["height"]]
    return max(box["y"] + box["height"] for box in beside) + page.evaluate("() => scrollY")


def save(png: bytes, path: Path) -> tuple[int, int]:
    """The PNG, with Pillow when it is installed: in 256 colours (a page's flat colours; a colour scale keeps its
    steps) and optimised, a third of its size. Its size in pixels."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        from PIL import Image
    except ImportError:
        path.write_bytes(png)
        width, height = struct.unpack(">II", png[16:24])
        return width, height
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(path, optimize=True)
    return image.size


@dataclass(frozen=True)
class Shot:
    """One picture: its file, lab and view, the link it opens, the states it waits for, what it shows."""
    file: str
    lab: str
    view: str
    link: str
    shows: str
    ready: tuple = ()
    frame: str = ""
    press: str = ""
    pressed: tuple = ()
    bottom: str = ""
    height: int = DESKTOP_HEIGHT[1]
    words: str = "body"  # where the models that answered are named (a phone's class panel: only there)
    shown_link: str = ""  # the link as the manifest writes it (a secret left out)


@dataclass
class Session:
    """One run: the app's address, the models it offers, the browser, and the pictures made so far."""
    url: str
    browser: object
    offered: list[str]
    out: Path
    tabs: dict  # lab id -> {title, group}
    stamp: dict  # date and commit
    pictures: list = field(default_factory=list)
    failed: list = field(default_factory=list)  # (file, why)

    def shoot(self, shot: Shot) -> None:
        """One picture; a failure is reported and the others are still made."""
        started = time.monotonic()
        try:
            png, models, scrolled = self.picture(shot)
        except Exception as why:  # a state that never came, an error on the page: said at the end
            self.failed.append((shot.file, f"{type(why).__name__}: {str(why).splitlines()[0]}"))
            print(f"{shot.file}: FAILED: {self.failed[-1][1]}", flush=True)
            return
        width, height = save(png, self.out / shot.file)
        self.pictures.append({"file": shot.file, "tab": shot.lab, "title": self.tabs[shot.lab]["title"],
                              "group": self.tabs[shot.lab]["group"], "view": shot.view,
                              "link": shot.shown_link or shot.link, "models": models, "shows": shot.shows,
                              "size": [width, height], **({"scrolled": scrolled} if scrolled else {}), **self.stamp})
        print(f"{shot.file}: {', '.join(models) or 'no model named'} ({time.monotonic() - started:.0f} s)", flush=True)

    def picture(self, shot: Shot) -> tuple[bytes, list[str], int]:
        """The PNG, the models it names, and how far the page was scrolled (a projector's main result)."""
        context = self.browser.new_context(**CONTEXTS[shot.view])
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        try:
            page.goto(self.url + shot.link, wait_until="load")
            page.get_by_role("tab").first.wait_for()
            if shot.view == "presenter":
                page.wait_for_function("() => document.body.classList.contains('lab-present')")
            wait_drawn(page, shot.ready, shot.frame)
            if shot.press:
                page.locator(shot.press).locator("visible=true").first.click()
                wait_drawn(page, shot.pressed)
            main = (shot.pressed or shot.ready or ("body",))[0]  # the main result: where it starts
            page.mouse.move(0, 0)  # no hover: a chart's toolbar, a pressed button's shade
            page.evaluate("() => window.scrollTo(0, 0)")
            size, scrolled = page.viewport_size, 0
            total = page.evaluate("() => document.documentElement.scrollHeight")
            if shot.view == "phone":  # the phone's own screen: its first screens, as they scroll
                height = min(total, PHONE_SCREENS * size["height"])
            elif shot.view == "presenter":  # the first screen, or the main result when it starts low on it
                height = size["height"]
                top, end = top_of(page, main), bottom_of(page, shot.bottom or main)
                if top > PRESENTER_LOW * height:
                    scrolled = max(0, round(min(top - 16, end - height + 16)))
                    page.evaluate(f"() => window.scrollTo(0, {scrolled})")
            else:  # down to the main result; the window grows to it, so that all of it is painted (iframes too)
                end = bottom_of(page, shot.bottom or main) + 12
                height = min(total, max(DESKTOP_HEIGHT[0], min(shot.height, round(end))))
                page.set_viewport_size({"width": size["width"], "height": height})
                wait_drawn(page, (), shot.frame)
            page.evaluate(PAINTED_JS)
            if shot.view == "phone":
                png = page.screenshot(full_page=True, clip={"x": 0, "y": 0, "width": size["width"], "height": height})
            else:
                png = page.screenshot()
            words = page.evaluate(WORDS_JS, [shot.words, scrolled, scrolled + height])
            return png, models_named(words, self.offered), scrolled
        finally:
            context.close()

    def lab(self, e: Example) -> None:
        for view in VIEWS:
            phone = view == "phone"
            self.shoot(Shot(f"{view}/{e.lab}.png", e.lab, view, e.link(view), e.shows,
                            (phone and e.phone_ready) or e.ready, "" if phone else e.frame, e.press, e.pressed,
                            e.bottom, e.height))

    def readme(self) -> None:
        e = README_EXAMPLE
        self.shoot(Shot(README_PICTURE, e.lab, "desktop", e.link("desktop"), e.shows, e.ready, bottom=e.ready[0]))

    def classroom(self) -> None:
        """A class started through the API: a phone's question; twelve answers on the projector; the reveal."""
        from gradio_client import Client

        client = Client(self.url, verbose=False)
        started = client.predict("Week 6: pre-trained language models", api_name="/class_start")
        key, code = started["lecturer_key"], started["code"]
        lecturer = {"tab": "classroom", "lecturer": key}
        hidden = "?tab=classroom&lecturer=<the lecturer key>"  # the manifest's link: the key is a secret
        question = f"the next-word question “{CLASS_QUESTION} …”"
        answers = ", ".join(f"{a} ×{n}" for a, n in CLASS_ANSWERS.items())
        try:
            client.predict(key, "next_token", CLASS_QUESTION, "", None, "", 5, api_name="/class_ask")
            self.shoot(Shot("phone/classroom.png", "classroom", "phone", "?" + urlencode({"class": code}),
                            f"a student's phone in a class: {question}, with its answer box",
                            ("#lab-class-student-question",), words="#lab-class-student",
                            shown_link="?class=<the class's code>"))
            for answer, count in CLASS_ANSWERS.items():
                for _ in range(count):
                    student_id = client.predict(code, api_name="/class_join")["student_id"]
                    client.predict(code, student_id, answer, api_name="/class_answer")
            self.shoot(Shot("presenter/classroom.png", "classroom", "presenter",
                            "?" + urlencode({**lecturer, "present": "1"}),
                            f"the projector during {question}: the join code and QR code, twelve answers in, "
                            f"hidden until the reveal", ("#lab-class-count >> text=/12/",),
                            shown_link=hidden + "&present=1"))
            client.predict(key, api_name="/class_reveal")
            self.shoot(Shot("desktop/classroom.png", "classroom", "desktop", "?" + urlencode(lecturer),
                            f"the lecturer's reveal of {question}: the class's answers ({answers}; sent by this tool "
                            f"as twelve phones) beside the model's probability of each",
                            ("#lab-class-plot .js-plotly-plot .main-svg",), shown_link=hidden))
        finally:
            client.predict(key, api_name="/class_delete")


# ---------------------------------------------------------------------------------------------- the manifest


def stamp() -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"date": datetime.date.today().isoformat(), "commit": commit}


def write_manifest(out: Path, pictures: list[dict], server: dict, full: bool) -> list[str]:
    """manifest.json: these pictures, and the entries of the others still there when only some were made (or some
    failed), in the app's order. After a full run that made every picture, the PNGs under out that no entry names
    are deleted. Returns the deleted files."""
    path = out / MANIFEST
    made = {p["file"] for p in pictures}
    old = json.loads(path.read_text())["pictures"] if path.exists() else []
    kept = [] if full else [p for p in old if p["file"] not in made and (out / p["file"]).exists()]
    order = {lab: i for i, lab in enumerate(server["labs"])}
    rank = {view: i for i, view in enumerate(VIEWS)}
    every = sorted(kept + pictures, key=lambda p: (p["file"] != README_PICTURE, order.get(p["tab"], len(order)),
                                                  rank.get(p["view"], len(rank))))
    manifest = {"made_by": "python -m tools.pictures", "online": server["online"], "device": server["device"],
                "pictures": every}
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    deleted = []
    if full:
        for png in sorted(out.rglob("*.png")):
            if str(png.relative_to(out)) not in made:
                png.unlink()
                deleted.append(str(png.relative_to(out)))
        for folder in sorted((d for d in out.rglob("*") if d.is_dir()), reverse=True):
            if not any(folder.iterdir()):
                folder.rmdir()
    return deleted


# ---------------------------------------------------------------------------------------------- the command


def make(url: str, out: Path, only: set[str] | None) -> Session:
    from gradio_client import Client
    from playwright.sync_api import sync_playwright

    bar = tab_bar(read_json(url + "config"))
    tabs = {lab["id"]: {"title": lab["title"], "group": g["group"]} for g in bar for lab in g["labs"]}
    missing = sorted(set(tabs) - set(BY_LAB) - {"classroom"})
    if missing:
        raise SystemExit(f"no example for the labs {missing}: add one to EXAMPLES in tools/pictures.py")
    wanted = list(tabs) + ["app"] if only is None else sorted(only)
    unknown = sorted(set(wanted) - set(tabs) - {"app"})
    if unknown:
        raise SystemExit(f"--only names what the app has no tab for: {unknown} (its labs: {', '.join(tabs)}; app)")
    server = Client(url, verbose=False).predict(api_name="/models")
    offered = [m["name"] for m in server["models"]]
    print(f"{url}: {'online' if server['online'] else 'offline'}, {server['device']}; offers {', '.join(offered)}",
          flush=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        session = Session(url, browser, offered, out, tabs, stamp())
        try:
            if "app" in wanted:
                session.readme()
            for lab in tabs:
                if lab not in wanted:
                    continue
                if lab == "classroom":
                    try:
                        session.classroom()
                    except Exception as why:  # the class API refused: said at the end
                        session.failed.append(("the class", f"{type(why).__name__}: {why}"))
                else:
                    session.lab(BY_LAB[lab])
        finally:
            browser.close()
    deleted = write_manifest(out, session.pictures, {"online": server["online"], "device": server["device"],
                                                     "labs": list(tabs)}, only is None and not session.failed)
    for file in deleted:
        print(f"deleted {file} (no longer made)")
    return session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="the folder of the pictures and manifest.json")
    parser.add_argument("--only", help="a comma-separated list of lab ids (and 'app', the README's picture)")
    parser.add_argument("--url", help="an app already running (started without LAB_EXTRA_MODELS)")
    args = parser.parse_args()
    only = {name.strip() for name in args.only.split(",") if name.strip()} if args.only else None
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="lmlab-pictures-"))
    proc = None
    try:
        if args.url:
            url = args.url.rstrip("/") + "/"
        else:
            proc, url = start_app(work)
            print(f"the app answered at {url} after {time.monotonic() - started:.0f} s", flush=True)
        session = make(url, args.out.resolve(), only)
    finally:
        if proc is not None:
            stop_app(proc)
            errors = [line for line in (work / "app.log").read_text().splitlines() if " ERROR " in line]
            if errors:
                print("the app logged errors:\n" + "\n".join(errors[:10]), file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(session.pictures)} pictures in {args.out} in {time.monotonic() - started:.0f} s")
    if session.failed:
        raise SystemExit("not made (the manifest keeps their last entries):\n" +
                         "\n".join(f"  {file}: {why}" for file, why in session.failed))


if __name__ == "__main__":
    main()
