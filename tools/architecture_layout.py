"""The "Layout" block of docs/architecture.md, written from the code's own docstrings: one entry per file or
folder, a module described by its docstring's first sentence, a package by its docstring's first paragraph, and
what has no docstring (the `lab` script, assets/, docs/, tests/, tools/) by the table below:

    python -m tools.architecture_layout            # rewrites the block in docs/architecture.md
    python -m tools.architecture_layout --check    # says whether the committed block is current (tests/test_docs.py)

The labs come in the tab bar's order (app.py's GROUPS), each under the title the app shows (its tab.py's TITLE).
A module whose docstring says it badly is fixed in its docstring, never here. Nothing is imported: the
docstrings, GROUPS and TITLE are read from the source, so this runs in a moment and needs neither torch nor Gradio.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

from tools import generated_block

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
LABS = ROOT / "labs"
BEGIN, END = "<!-- layout: python -m tools.architecture_layout -->", "<!-- end of the layout -->"
NAME_COLUMN, WIDTH = 24, 118  # the description starts at column 24; a line ends by column 118
CORE_ROOMS = ("models", "work", "serving", "ui")  # labs/core's rooms in the order labs/core/__init__.py gives them

# What no docstring says: the files and folders that are not Python packages or modules, in the block's order.
BEFORE_LABS = {
    "lab": "The two commands: ./lab run, ./lab test (and ./lab setup, ./lab download).",
}
AFTER_LABS = {
    "deploy/": "A KubeRay RayService (CPU and GPU workers, the passes' Serve config) and N Gradio front-ends with "
               "session affinity; the RayService CRD's schema (KubeRay v1.7.0, Apache-2.0) they are checked against; "
               "space-gpu.yml, the Space card's preload list for a Space with a GPU (docs/hosting.md).",
    "requirements-ray.txt": "ray[serve] for LAB_RAY_ADDRESS (./lab test installs it, ./lab run does not).",
    "assets/": "CSS, vendored JavaScript for bertviz (see assets/vendor/README.md), data.",
    "assets/sentiment.csv": "The Fine-tune lab's data: 352 short reviews written for LM Lab, balanced, with a fixed "
                            "train (264) / validation (88) split; each row names its domain: films (84), restaurants "
                            "(40), products (80), travel (34), other (114); the 38 film reviews after row 314 were "
                            "added so that a model trained on films alone can be compared on the other domains.",
    "assets/curation_corpus.jsonl": "The Pre-training lab's web-like corpus: 51 short documents written for LM Lab, "
                                    "each labelled with what it tests (prose, exact and near duplicates, boilerplate, "
                                    "non-English, spam, fragments).",
    "assets/nsp_passages.txt": "The Pre-training lab's passages: 14 short passages on different topics written for "
                               "LM Lab, 5 sentences each (70 sentences, 56 consecutive pairs).",
    "assets/everyday_sentences.txt": "The Tokens lab's word-level vocabulary: 400 everyday sentences written for LM "
                                     "Lab from ten templates (described in its # lines), 178 distinct words; "
                                     "\"runner\" left out on purpose.",
    "assets/few_shot.csv": "The Choosing a model lab's few-shot data: 56 one-line reviews written for LM Lab, "
                           "balanced, with a fixed split: a pool of 16 demonstrations (8 positive, 8 negative) and 40 "
                           "evaluation reviews (20 + 20).",
    "assets/bias_probe.csv": "The bias probe: 3 templates and 20 occupations written for LM Lab.",
    "assets/domains.txt": "Domain shift: 3 short texts each for news, conversation, legal, biomedical, code, social "
                          "media.",
    "assets/pairs.csv": "Sentence pairs for the Fine-tune lab's pair task: 320 pairs generated from templates (a "
                        "person, a verb, an object and a time, said in four word orders: \"Anna bought a car "
                        "yesterday.\" / \"Yesterday, Anna purchased a car.\" / \"A car was bought by Anna "
                        "yesterday.\"), labelled paraphrase (the same fact in two wordings) or different (one detail "
                        "changed: the person, the object, the time or the verb's opposite, or an unrelated fact), "
                        "balanced, with a fixed train (240) / validation (80) split.",
    "assets/ner.jsonl": "Named entities (BIO tags for PER, LOC, ORG) for the NER task: 320 sentences generated from "
                        "18 templates (\"{PER} works for {ORG} in {LOC} .\") with names, places and organisations "
                        "chosen for the lab (several split into word pieces: Okonkwo, Ljubljana, Zalando); one word "
                        "per token, punctuation separate; fixed train (240) / validation (80) split, and the "
                        "validation sentences use names, places and organisations that never occur in training.",
    "assets/qa.jsonl": "Extractive QA for the QA task: 320 questions on three-sentence biographies generated from "
                       "three templates (born where and when, works for whom as what, a brother who lives "
                       "somewhere), six question forms; each row has context, question, answer and answer_start "
                       "(checked: the answer is a span of the context); fixed train (240) / validation (80) split, "
                       "the validation people, cities, employers and jobs unseen in training.",
    "assets/paraphrases.tsv": "The Fine-tune lab's forgetting probe: 42 paraphrase pairs written for LM Lab (84 "
                              "sentences that no run trains on): is each sentence's nearest neighbour its paraphrase?",
    "assets/mlm_probes.tsv": "The forgetting probe for a masked LM: 30 sentences written for LM Lab with one [MASK] "
                             "and a one-word answer (\"Paris is the capital of [MASK].\" / france).",
    "assets/probes.tsv": "The Embeddings lab's probe set, written for LM Lab: sentences with one word labelled for its "
                         "part of speech, its sense (10 words with two senses each), or whether it is the subject and "
                         "the agent (60 sentences from 5 templates); each sentence is held out in one of four folds.",
    "assets/long_review.txt": "The Attention lab's long document: a holiday review written for LM Lab, longer than "
                              "BERT's 512 positions, that opens with praise and ends with its verdict: two stars, not "
                              "recommended.",
    "tests/": "pytest: unit, oracle, real-model, API, browser and structure tests; benchmarks; zerogpu_emulator.py "
              "(ZeroGPU's device API played for the `spaces` package's own code), hfmount_rules/ (a backup folder "
              "held to hf-mount's rules).",
    "docs/": "These pages: for lecturers, one per lab, architecture, serving, models, data, the API.",
    "tools/": "api_docs.py writes docs/api.md from the endpoints (with api_notes.md, api_examples.py); "
              "architecture_layout.py writes this block from the docstrings; costliest_tests.py the costliest test "
              "files below (both through generated_block.py); pictures.py makes the README's and docs' pictures from the running app "
              "(assets/screenshots/, its manifest.json); gpu_check.py measures the GPU path on a GPU machine; "
              "cpu_by_process.py sums a run's CPU by kind of process (Chromium, the app servers, Ray, pytest).",
}

_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bal)(?<!\bvs)(?<!\bcf)\.\s+(?=[A-Z\"“`(\[])")


def docstring(path: Path) -> str:
    text = ast.get_docstring(ast.parse(path.read_text()))
    if not text:
        raise SystemExit(f"{path.relative_to(ROOT)} has no docstring: the layout in docs/architecture.md is written "
                         f"from it (python -m tools.architecture_layout)")
    return text


def first_paragraph(text: str) -> str:
    return " ".join(text.split("\n\n")[0].split())


def first_sentence(text: str) -> str:
    """The first paragraph up to its first full stop outside brackets ("et al. 2020", "e.g." and "20.9.3" end none)."""
    paragraph, depth = first_paragraph(text), 0
    for at, char in enumerate(paragraph):
        depth = depth + 1 if char in "([{“" else max(depth - 1, 0) if char in ")]}”" else depth
        if char == "." and depth == 0 and _SENTENCE_END.match(paragraph, at):
            return paragraph[:at + 1]
    return paragraph


def lab_order() -> list[str]:
    """The labs' folder names in the tab bar's order: app.py's GROUPS, read from its source."""
    tree = ast.parse((ROOT / "app.py").read_text())
    module_of = {alias.asname or alias.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom)
                 and node.module and node.module.startswith("labs.") for alias in node.names}
    groups = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                  and any(isinstance(target, ast.Name) and target.id == "GROUPS" for target in node.targets))
    return [module_of[name.id].split(".")[1] for group in groups.elts for name in group.elts[2].elts]


def lab_title(folder: Path) -> str | None:
    """The title the app shows for the lab in `folder` (its tab.py's TITLE), or None for a folder that is no lab."""
    tab = folder / "tab.py"
    if not tab.exists():
        return None
    for node in ast.parse(tab.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "TITLE" for target in node.targets):
            return ast.literal_eval(node.value)
    return None


def module_order(path: Path) -> tuple[int, str]:
    """A lab in reading order (compute.py, its other modules, endpoints.py, tab.py, its panels); core A to Z."""
    name = path.name
    if lab_title(path.parent) is None:
        return 0, name
    rank = {"compute.py": 0, "endpoints.py": 2, "tab.py": 3}.get(name, 4 if name.startswith("tab_") else 1)
    return rank, name


def packages() -> list[Path]:
    """labs/core, its rooms, then every lab in the tab bar's order (a lab app.py leaves out comes last)."""
    core = LABS / "core"
    rooms = sorted((p for p in core.iterdir() if (p / "__init__.py").exists()),
                   key=lambda p: (CORE_ROOMS.index(p.name) if p.name in CORE_ROOMS else len(CORE_ROOMS), p.name))
    order = lab_order()
    labs = sorted((p for p in LABS.iterdir() if (p / "__init__.py").exists() and p != core),
                  key=lambda p: (order.index(p.name) if p.name in order else len(order), p.name))
    return [core, *rooms, *labs]


def description(path: Path) -> str:
    """What a module says of itself: its docstring's first sentence, less its lab's title ("Tokens, the tab: …")."""
    text = first_sentence(docstring(path))
    title = lab_title(path.parent)
    if title and text.startswith(f"{title}, "):
        text = text[len(title) + 2:]
        text = text[0].upper() + text[1:]
    return text


def entry(name: str, text: str) -> list[str]:
    first = name.ljust(NAME_COLUMN) if len(name) < NAME_COLUMN - 1 else f"{name}  "
    return textwrap.wrap(text, width=WIDTH, initial_indent=first, subsequent_indent=" " * NAME_COLUMN,
                         break_long_words=False, break_on_hyphens=False)


def entries() -> list[tuple[str, str]]:
    """(name as the block shows it, description), in the block's order; a module's name is indented under its
    package's line."""
    rows = [("app.py", first_sentence(docstring(ROOT / "app.py"))), *BEFORE_LABS.items(),
            ("labs/", first_paragraph(docstring(LABS / "__init__.py")))]
    for package in packages():
        rows.append((f"{package.relative_to(ROOT).as_posix()}/", first_paragraph(docstring(package / "__init__.py"))))
        modules = sorted((p for p in package.glob("*.py") if p.name != "__init__.py"), key=module_order)
        rows += [(f"  {module.name}", description(module)) for module in modules]
    return rows + list(AFTER_LABS.items())


def block() -> str:
    lines = [line for name, text in entries() for line in entry(name, text)]
    return "\n".join([BEGIN, "```", *lines, "```", END])


def named_files(text: str) -> set[str]:
    """The paths a layout block names: a package line names its folder's __init__.py, an indented line a module."""
    named, folder = set(), ""
    for line in text.splitlines():
        if line[:1] not in ("", " "):
            name = line.split()[0]
            folder = name if name.endswith("/") else folder
            named.add(f"{name}__init__.py" if name.endswith("/") else name)
        elif line.startswith("  ") and not line.startswith("   "):
            named.add(folder + line.split()[0])
    return named


def page_with(new_block: str) -> str:
    return generated_block.page_with(PAGE, BEGIN, END, new_block)


def main(argv: list[str]) -> int:
    return generated_block.main(argv, PAGE, page_with(block()), "docs/architecture.md's layout is out of date: "
                                "python -m tools.architecture_layout")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
