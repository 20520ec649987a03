"""The sentences students and scripts read: grammatical for every input a lab names, plain text
for API clients, escaped for the browser's pop-up (which renders HTML)."""

from __future__ import annotations

import re

import gradio as gr
import pytest
from conftest import ROOT

from labs.core.errors import MAX_CHARS, BadInput, InputName, check_name, check_text
from labs.core.ui import ui


def messages(what: str) -> list[str]:
    out = []
    for value in (12345, "x" * (MAX_CHARS + 1), "   "):
        with pytest.raises(BadInput) as caught:
            check_text(value, "an example", what=what)
        out.append(str(caught.value))
    return out


@pytest.mark.parametrize("what, expected", [
    ("sentence", ["The sentence must be text", "Your sentence is 2,001 characters long; ", "Type a sentence first"]),
    ("sentences", ["The sentences must be text", "Your sentences are 2,001 characters long in all; ",
                   "Type some sentences first"]),
    ("words to split", ["The words to split must be text", "Your words to split are 2,001 characters long in all",
                        "Type some words to split first"]),
    ("sentence to classify", ["The sentence to classify must", "Your sentence to classify is", "Type a sentence to"]),
    ("sentence B", ["Sentence B must be text", "Sentence B is 2,001 characters long", "Type sentence B first"]),
    ("corpus", ["The corpus must", "Your corpus is", "Type a corpus first"]),
    ("text", ["The text must be text", "Your text is", "Type a text first"]),
    ("answer", ["The answer must", "Your answer is", "Type an answer first"]),
])
def test_check_text_speaks_of_each_input_grammatically(what, expected):
    got = messages(what)
    for message, start in zip(got, expected):
        assert message.startswith(start), message
    assert got[1].endswith("Shorten them." if InputName(what).plural else "Shorten it.")


def names_used_in_labs() -> set[str]:
    found = set()
    for path in (ROOT / "labs").rglob("*.py"):
        found |= set(re.findall(r'what="([^"]+)"', path.read_text()))
    return found


def test_every_name_a_lab_passes_reads_well():
    """Whatever `what=` a lab passes: no "sentences is", no "a sentences", "an" before a vowel."""
    used = names_used_in_labs()
    assert {"sentence", "sentences", "words to split", "prompt"} <= used
    for what in used:
        name = InputName(what)
        for message in messages(what):
            assert f"{what} is " not in message or not name.plural, message
            assert f"{what} are " not in message or name.plural, message
            assert not re.search(r"\ba [aeiouAEIOU]", message), message  # "a" as an article
            assert not re.search(r"\b(a|some) \w+ [A-Z0-9]\b", message), message  # "a sentence B"


def test_check_name_agrees_too():
    with pytest.raises(BadInput, match="No strategy was chosen"):
        check_name(" ", what="strategy")
    with pytest.raises(BadInput, match="No models were chosen"):
        check_name("", what="models")


TYPED = """<img src=x onerror=alert(1)> & "q" 'a'"""


def failing(*_):
    raise BadInput(f"There is no model called '{TYPED}' here.")


def failing_stream(*_):
    yield 1
    raise BadInput(f"There is no model called '{TYPED}' here.")


@pytest.mark.parametrize("fn", [failing, failing_stream])
def test_the_browser_gets_the_message_escaped_and_a_script_gets_it_plain(fn):
    """Gradio's toast renders an error's message as sanitised HTML (an <img src> survives the
    sanitizer), so browser events escape it; API endpoints (ui.register) send the text as it is."""
    def run(wrapped):
        with pytest.raises(gr.Error) as caught:
            out = wrapped("x")
            if fn is failing_stream:
                list(out)
        return caught.value.message

    assert run(ui.friendly(fn)) == ui.esc(f"There is no model called '{TYPED}' here.")
    assert "<img" not in run(ui.friendly(fn))
    assert run(ui.friendly(fn, for_browser=False)) == f"There is no model called '{TYPED}' here."


def test_an_unexpected_failure_is_one_plain_sentence_for_both():
    def broken(*_):
        raise RuntimeError("<b>internal</b>")

    for for_browser in (True, False):
        with pytest.raises(gr.Error) as caught:
            ui.friendly(broken, for_browser=for_browser)()
        assert "internal" not in caught.value.message and caught.value.message.endswith(".")
