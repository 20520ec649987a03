"""The shape every lab keeps: compute without gradio, labs that never import each other, tabs that
only lay out and wire, and modules small enough to read."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LABS = ROOT / "labs"
LAB_FOLDERS = sorted(p.parent.name for p in LABS.glob("*/__init__.py"))
GRADIO_MODULES = {"ui.py", "tab.py", "fast_sessions.py"}  # the only places that may import gradio


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def compute_modules() -> list[str]:
    return sorted(module_name(p) for p in LABS.rglob("*.py") if p.name not in GRADIO_MODULES | {"__init__.py"})


def test_every_lab_is_a_folder_with_a_tab():
    assert {"fill_mask", "next_token", "masks", "attention", "finetune"} <= set(LAB_FOLDERS)
    for lab in LAB_FOLDERS:
        assert (LABS / lab / "tab.py").exists(), lab


def test_compute_modules_never_import_gradio():
    modules = compute_modules()
    assert len(modules) >= 12
    code = f"import sys; import {', '.join(modules)}; sys.exit('gradio' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:] or "a compute module imported gradio"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


@pytest.mark.parametrize("lab", LAB_FOLDERS)
def test_a_lab_never_imports_another_lab(lab):
    others = set(LAB_FOLDERS) - {lab}
    for path in (LABS / lab).glob("*.py"):
        for name in imported_modules(path):
            parts = name.split(".")
            assert not (parts[0] == "labs" and len(parts) > 1 and parts[1] in others), f"{path.name} imports {name}"


def function_lengths(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    return [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_modules_and_functions_stay_small():
    for path in list(LABS.rglob("*.py")) + [ROOT / "app.py"]:
        assert len(path.read_text().splitlines()) <= 450, path
        limit = 80 if path.name == "tab.py" else 60
        long = [(name, n) for name, n in function_lengths(path) if n > limit]
        assert not long, f"{path.relative_to(ROOT)}: {long}"
