"""labs.core.serving.fast_sessions is held at arm's length: on a Gradio other than the one it was written
for, or whose replaced functions changed, it installs nothing, logs one line, and the app runs on
Gradio's own code."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from gradio import blocks, state_holder

from labs.core.serving import fast_sessions

ROOT = Path(__file__).resolve().parent.parent


def test_the_pinned_gradio_is_the_one_the_patches_were_written_for():
    assert fast_sessions.why_not(fast_sessions.gradio.__version__) is None


def test_another_version_installs_nothing_and_says_so_once(caplog):
    before = (state_holder.SessionState.__init__, blocks.Blocks.postprocess_data)
    with caplog.at_level(logging.WARNING, logger=fast_sessions.__name__):
        assert fast_sessions.install(version="6.32.0") is False
    assert (state_holder.SessionState.__init__, blocks.Blocks.postprocess_data) == before
    lines = [r.getMessage() for r in caplog.records if r.name == fast_sessions.__name__]
    assert len(lines) == 1 and "gradio 6.32.0 is installed" in lines[0]


def test_a_changed_function_installs_nothing():
    def stand_in(self, blocks):  # Gradio's __init__ as a later release might write it
        self.blocks_config = None
    stand_in.__qualname__ = "SessionState.__init__"
    reason = fast_sessions.why_not(fast_sessions.WRITTEN_FOR, (stand_in, fast_sessions._gradio_update_value,
                                                               fast_sessions._gradio_postprocess))
    assert reason and "SessionState.__init__" in reason


@pytest.mark.slow
def test_the_app_starts_on_gradios_own_code_under_another_version():
    code = ("import logging, gradio; logging.basicConfig(level=logging.INFO); gradio.__version__ = '6.99.0'\n"
            "from gradio import state_holder; original = state_holder.SessionState.__init__\n"
            "import app; demo = app.build_app()\n"
            "assert state_holder.SessionState.__init__ is original\n"
            "session = state_holder.SessionState(demo); assert len(dict.keys(session.config_values)) > 100\n"
            "print('started on gradio code')")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "started on gradio code" in run.stdout
    assert run.stderr.count("fast_sessions not installed") == 1
