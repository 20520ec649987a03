"""The house rules, checked with the suite: ruff's lint and import order (ruff.toml) on the whole tree, and
the test tiers (pytest.ini, tests/conftest.py, `./lab test --quick`) as CONTRIBUTING.md describes them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parent.parent
QUICK = "not browser and not app and not ray and not postgres and not slow"


def test_ruff_finds_nothing_on_the_tree():
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert "No module named ruff" not in run.stderr, "pip install -r requirements-dev.txt (ruff is a test tool)"
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:] + "\n(`ruff check --fix .` sorts the imports)"


def test_a_test_is_put_in_its_tier_by_what_it_uses():
    assert conftest.tier_markers(["tiny_models", "page", "browser", "app_server"], "test_fill_mask") == \
        {"browser", "app"}
    assert conftest.tier_markers(["tiny_models", "client", "app_server"], "test_tokens") == {"app"}
    assert conftest.tier_markers(["tiny_models"], "test_ray_equal") == {"ray"}
    assert conftest.tier_markers(["tiny_models", "monkeypatch"], "test_batching") == set()
    assert conftest.tier_markers(["postgres", "tiny_models"], "test_classroom_api") == {"postgres"}


def test_a_test_is_marked_with_the_labs_it_imports_and_is_named_after():
    from labs.core.work import lm
    from labs.fill_mask import compute as fill_mask
    from labs.next_token.streaming import TokenCollector

    found = conftest.labs_tested("test_batching", {"lm": lm, "fill_mask": fill_mask, "TokenCollector": TokenCollector,
                                                   "pytest": __import__("pytest"), "N": 3})
    assert found == {"fill_mask", "next_token"}  # labs.core is shared, not a lab
    assert conftest.labs_tested("test_finetune_tasks", {}) == {"finetune"}
    assert conftest.labs_tested("test_finetuned", {}) == set()  # a lab's name is a whole word of the file's


def test_every_marker_is_registered_and_every_lab_has_one(pytestconfig):
    registered = {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert {"browser", "app", "ray", "postgres", "slow"} <= registered
    labs = {p.parent.name for p in (ROOT / "labs").glob("*/__init__.py")} - {"core"}
    assert labs and labs <= registered and set(conftest.LABS) == labs


def test_the_quick_tier_leaves_out_the_browser_app_ray_and_slow_tests():
    script = (ROOT / "lab").read_text()
    assert f'QUICK="{QUICK}"' in script and 'pytest -m "$QUICK"' in script
    quick = script[script.index("setup_quick() {"):script.index("setup_tests() {")]
    assert "requirements-ray" not in quick and "chromium" not in quick.lower() and "postgresql" not in quick  # neither is installed
    assert QUICK in (ROOT / "CONTRIBUTING.md").read_text()
