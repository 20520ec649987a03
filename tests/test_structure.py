"""The shape every lab keeps: compute without gradio, labs that never import each other, tabs that
only lay out and wire, and modules small enough to read."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import declared_endpoints

ROOT = Path(__file__).resolve().parent.parent
LABS = ROOT / "labs"
CORE = LABS / "core"  # what the labs share; every other folder of labs/ is a lab
LAB_FOLDERS = sorted(p.parent.name for p in LABS.glob("*/__init__.py") if p.parent != CORE)
ROOMS = {"models", "work", "serving", "ui"}  # labs/core's rooms (docs/architecture.md, "Layout")
GRADIO_MODULES = {"ui.py", "build.py", "table.py", "fast_sessions.py", "static_cache.py", "theme.py", "class_hooks.py"}  # with each lab's tab.py and tab_<panel>.py: the only gradio importers
CONTRACT = ("TITLE", "ID", "EXPLAINER", "TRY_THIS", "build")  # docs/architecture.md, "Adding a lab"
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()
API_DOCS = (ROOT / "docs" / "api.md").read_text()


def is_tab(path: Path) -> bool:
    return path.name == "tab.py" or path.name.startswith("tab_")


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def compute_modules() -> list[str]:
    return sorted(module_name(p) for p in LABS.rglob("*.py")
                  if p.name not in GRADIO_MODULES | {"__init__.py"} and not is_tab(p))


def test_every_lab_is_a_folder_with_a_tab():
    assert {"fill_mask", "next_token", "masks", "attention", "finetune"} <= set(LAB_FOLDERS)
    for lab in LAB_FOLDERS:
        assert (LABS / lab / "tab.py").exists(), lab


def test_labs_holds_the_labs_and_core_holds_what_they_share():
    """labs/ lists labs (and core/); core/ has its rooms, each a package, and errors.py; nothing else."""
    assert {p.name for p in LABS.iterdir() if p.name != "__pycache__"} == set(LAB_FOLDERS) | {"core", "__init__.py"}
    assert {p.name for p in CORE.iterdir() if p.is_dir() and p.name != "__pycache__"} == ROOMS
    assert {p.name for p in CORE.glob("*.py")} == {"__init__.py", "errors.py"}
    for room in ROOMS:
        assert (CORE / room / "__init__.py").exists(), room


def test_compute_modules_never_import_gradio():
    modules = compute_modules()
    assert len(modules) >= 12
    code = f"import sys; import {', '.join(modules)}; sys.exit('gradio' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:] or "a compute module imported gradio"


def imported_modules(path: Path) -> set[str]:
    """Every module the file imports: import statements, and importlib.import_module / __import__ calls by a
    name in the code (a string, a module-level constant's, or an f-string's up to its first {…} then "*":
    f"labs.{lab}.x" is "labs.*")."""
    tree = ast.parse(path.read_text())
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for target in node.targets if isinstance(target, ast.Name)}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif (isinstance(node, ast.Call) and node.args
              and getattr(node.func, "attr", getattr(node.func, "id", "")) in {"import_module", "__import__"}):
            names.add(named_module(node.args[0], constants))
    return names - {""}


def named_module(argument: ast.expr, constants: dict[str, str]) -> str:
    """The module an import_module call names: a string, a constant's, or an f-string's fixed start and "*"
    ("" when the name comes from elsewhere: data, not an arrow in the code)."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value
    if isinstance(argument, ast.Name):
        return constants.get(argument.id, "")
    if isinstance(argument, ast.JoinedStr) and argument.values and isinstance(argument.values[0], ast.Constant):
        return f"{argument.values[0].value}*"
    return ""


def test_core_never_imports_a_lab():
    """labs/core holds what the labs share: app.py hands it what it needs of them (their endpoints, their tabs)."""
    found = [f"{path.relative_to(ROOT)} imports {name}" for path in CORE.rglob("*.py") for name in imported_modules(path)
             if name.split(".")[0] == "labs" and name.split(".")[1:2] != ["core"]]
    assert found == []


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
    assert len((CORE / "models" / "models.py").read_text().splitlines()) <= 400
    for path in list(LABS.rglob("*.py")) + [ROOT / "app.py"]:
        assert len(path.read_text().splitlines()) <= (300 if is_tab(path) else 450), path
        limit = 80 if is_tab(path) else 60
        long = [(name, n) for name, n in function_lengths(path) if n > limit]
        assert not long, f"{path.relative_to(ROOT)}: {long}"


def test_the_registry_never_imports_the_loading_side():
    """The registry knows models by name and imports nothing of the model layer; extra_models reads the
    registry's types; offered assembles them; models loads them. Never the other way round."""
    layer = "labs.core.models"
    registry = {n for n in imported_modules(CORE / "models" / "registry.py") if n.startswith(layer)}
    assert not registry
    extra = {n for n in imported_modules(CORE / "models" / "extra_models.py") if n.startswith(layer)}
    assert extra and all(n.startswith(f"{layer}.registry") for n in extra)


def import_graph() -> dict[str, set[str]]:
    """Every module of labs/ and the labs modules it imports, at module level or inside a function."""
    modules = {module_name(p).removesuffix(".__init__"): p for p in LABS.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_modules(path):
            while imported and imported not in modules:  # "labs.core.ui.ui.wire" -> "labs.core.ui.ui"
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(imported + "."):  # (a package's __init__)
                targets.add(imported)
        graph[name] = targets
    return graph


def test_no_import_circle():
    graph, done, path = import_graph(), set(), []

    def visit(node):
        if node in path:
            raise AssertionError("import circle: " + " -> ".join(path[path.index(node):] + [node]))
        if node in done:
            return
        path.append(node)
        for target in sorted(graph.get(node, ())):
            visit(target)
        path.pop()
        done.add(node)

    assert len(graph) > 60
    for node in sorted(graph):
        visit(node)


def skeleton_names() -> list[str]:
    """The names the lab skeleton in docs/architecture.md defines at the top level, in order."""
    code = ARCHITECTURE.split("## Adding a lab", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    tree = ast.parse(code.replace("<id>", "lab_id"))
    names = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.FunctionDef):
            names.append(node.name)
    return names


def test_every_lab_keeps_the_contract_the_docs_write_down():
    import app

    assert set(CONTRACT) <= set(skeleton_names())
    tabs = {lab.ID: lab for lab in app.LABS}
    assert sorted(tabs) == LAB_FOLDERS and len(tabs) == len(app.LABS)  # every lab once, in app.py
    for lab_id, tab in tabs.items():
        missing = [name for name in CONTRACT if not hasattr(tab, name)]
        assert not missing, f"labs/{lab_id}/tab.py lacks {missing}"
        assert tab.__name__ == f"labs.{lab_id}.tab"
        assert isinstance(tab.TITLE, str) and isinstance(tab.EXPLAINER, str) and tab.TRY_THIS
        assert f"labs/{lab_id}/" in ARCHITECTURE.split("## Layout", 1)[1].split("\n## ", 1)[0]  # the layout names the folder


def test_every_endpoint_is_documented():
    """Every endpoint a lab declares has its section in docs/api.md (tests/test_docs.py checks the app's own list)."""
    declared = {e.name for lab in LAB_FOLDERS for e in declared_endpoints(lab)}
    assert len(declared) >= 12
    missing = sorted(e for e in declared if f"### `/{e}`" not in API_DOCS)
    assert not missing, f"not in docs/api.md (python -m tools.api_docs): {missing}"


@pytest.mark.parametrize("lab", LAB_FOLDERS)
def test_a_lab_declares_its_endpoints_in_one_place_with_its_own_compute(lab):
    """labs/<lab>/endpoints.py lists the lab's endpoints (app.py registers them): it imports the lab's compute and
    labs.core, never Gradio; its functions are the lab's own; no tab registers an endpoint itself."""
    from labs.core.work.endpoints import Endpoint

    path = LABS / lab / "endpoints.py"
    imported = imported_modules(path)
    assert not {n for n in imported if n.split(".")[0] == "gradio"}, f"{path.name} imports gradio"
    assert all(n.startswith(("__future__", "labs.core.", f"labs.{lab}.")) or n == f"labs.{lab}"
               for n in imported), imported
    declared = declared_endpoints(lab)
    assert declared and all(isinstance(e, Endpoint) and e.description for e in declared)
    assert all(e.fn.__module__.startswith(f"labs.{lab}.") for e in declared), [e.fn.__module__ for e in declared]
    for tab in (LABS / lab).glob("*.py"):
        if not is_tab(tab):
            continue
        calls = [node for node in ast.walk(ast.parse(tab.read_text())) if isinstance(node, ast.Call)
                 and getattr(node.func, "attr", "") in {"api", "register"}
                 and getattr(node.func.value, "id", "") in {"ui", "gr"}]
        assert not calls, f"{tab.relative_to(ROOT)} registers an endpoint: declare it in labs/{lab}/endpoints.py"
