"""Lab 4, Attention: weights against the model's own output_attentions, the pattern labeller on
constructed matrices, the bertviz documents (local scripts only, nothing typed runs), API, browser."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError
from playwright.sync_api import expect
from walks import settle

from labs.attention import compute as attention
from labs.attention import views
from labs.core.errors import BadInput
from labs.core.models import models

PAIR = ("I sat on the river bank.", "I went to the bank to open an account.")
HOSTILE = "</script><script>alert('x')</script><img src=x onerror=alert(1)> <!-- bank &amp;"


def own_attentions(name: str, *texts: str) -> list[np.ndarray]:
    loaded = models.load(name)
    enc = loaded.tokenizer(*texts, return_tensors="pt")
    with torch.no_grad():
        out = loaded.model(**enc, output_attentions=True)
    return [a[0].numpy() for a in out.attentions]


@pytest.mark.parametrize("texts", [("The cat sat on the mat.",), PAIR])
def test_weights_equal_the_models_own_output_attentions(tiny_models, texts):
    name = tiny_models["masked"]
    expected = own_attentions(name, *texts)
    result = attention.attention_result(texts[0], name, texts[1] if len(texts) > 1 else "", layer=1, head=3)
    np.testing.assert_allclose(np.array(result["weights"]), expected[1][3], atol=1e-6)
    np.testing.assert_allclose(np.array(result["weights"]).sum(axis=1), 1.0, atol=1e-5)
    assert result["num_layers"] == 2 and result["num_heads"] == 4
    assert np.array(result["entropy"]).shape == (2, 4) and len(result["patterns"]) == 2


def test_sentence_pair_segments_and_b_start(tiny_models):
    r = attention.run(models.load(tiny_models["masked"]), *PAIR)
    tokenizer = models.load(tiny_models["masked"]).tokenizer
    enc = tokenizer(*PAIR)
    assert r.segments == tuple(enc["token_type_ids"])
    assert r.tokens[r.sentence_b_start - 1] == "[SEP]" and r.tokens[-1] == "[SEP]"
    assert r.tokens[0] == "[CLS]" and r.special_positions[0] == 0


def test_causal_model_pair_is_one_text_and_its_future_is_zero(tiny_models):
    r = attention.run(models.load(tiny_models["causal"]), *PAIR)
    assert r.causal and r.sentence_b_start is not None and set(r.segments) == {0, 1}
    above = np.triu(np.ones(r.weights.shape[-2:], dtype=bool), k=1)
    assert np.all(r.weights[..., above] == 0.0)


def previous_token_matrix(n: int) -> np.ndarray:
    w = np.zeros((n, n))
    w[0, 0] = 1.0
    w[np.arange(1, n), np.arange(n - 1)] = 0.9
    w[np.arange(1, n), np.arange(1, n)] = 0.1
    return w


def test_pattern_labeller_on_constructed_matrices():
    n = 8
    assert attention.label_head(previous_token_matrix(n)) == "previous token"
    assert attention.label_head(np.full((n, n), 1 / n)) == "broad"
    uniform_causal = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    assert attention.label_head(uniform_causal, causal=True) == "broad"
    assert attention.label_head(np.eye(n)) == "self"
    assert attention.label_head(np.eye(n, k=1) + np.eye(n, k=1 - n)) == "next token"
    first = np.zeros((n, n))
    first[:, 0] = 1.0
    assert attention.label_head(first) == "first token / [CLS]"
    sep = np.zeros((n, n))
    sep[:, n - 1] = 1.0
    assert attention.label_head(sep, special_positions=(0, n - 1)) == "separator / end token"
    # Focused on one content token per row that is none of the fixed positions: "mixed".
    content = np.zeros((n, n))
    content[np.arange(n), (np.arange(n) * 3 + 2) % n] = 1.0
    assert attention.label_head(content) == "mixed"


def test_entropy_in_bits_matches_hand_computation():
    n = 8
    assert attention.row_entropy_bits(np.full((2, n), 1 / n)).tolist() == pytest.approx([3.0, 3.0])
    assert attention.row_entropy_bits(np.eye(3)).tolist() == [0.0, 0.0, 0.0]
    p = np.array([0.5, 0.25, 0.25])
    assert attention.row_entropy_bits(p) == pytest.approx(1.5)


def test_bad_input(tiny_models):
    name = tiny_models["masked"]
    with pytest.raises(BadInput, match="Type a sentence"):
        attention.attention_result("  ", name)
    with pytest.raises(BadInput, match="layers 0–1"):
        attention.attention_result("The cat", name, layer=2)
    with pytest.raises(BadInput, match="heads 0–3"):
        attention.attention_result("The cat", name, head=-1)
    with pytest.raises(BadInput, match="whole number"):
        attention.attention_result("The cat", name, layer="one")
    with pytest.raises(models.ModelUnavailable):
        attention.attention_result("The cat", "no-such-model")


def test_long_text_keeps_the_first_128_tokens_and_says_so(tiny_models):
    r = attention.run(models.load(tiny_models["masked"]), " ".join(["word"] * 300))
    assert len(r.tokens) == 128 and r.weights.shape[-1] == 128
    assert "first 128" in r.note


def test_one_forward_pass_serves_every_view(tiny_models, monkeypatch):
    name = tiny_models["masked"]
    text = "A sentence seen only by this test."
    attention.attention_result(text, name, "", 0, 0)
    calls = []
    loaded = models.load(name)
    original = loaded.model.base_model.forward
    monkeypatch.setattr(loaded.model.base_model, "forward", lambda *a, **k: calls.append(1) or original(*a, **k))
    attention.attention_result(text, name, "", 1, 2)
    views.views(attention.run(models.load(name), text, ""))
    attention.summary(attention.run(models.load(name), text, ""))
    assert calls == []


def script_sources(document: str) -> list[str]:
    return re.findall(r"<script[^>]*\bsrc=\"([^\"]*)\"", document)


@pytest.mark.parametrize("scripts", ["inline", "served"])
def test_bertviz_documents_reference_only_local_scripts(tiny_models, scripts):
    r = attention.run(models.load(tiny_models["masked"]), *PAIR)
    for view in ("head", "model"):
        document = views.view_document(r, view, scripts=scripts)
        sources = script_sources(document)
        assert all(not s.startswith(("http:", "https:", "//")) for s in sources)
        assert "cdnjs" not in document and not re.search(r"require\.config\(\{\s*paths", document)
        if scripts == "inline":
            assert sources == [] and "jQuery" in document and "d3js.org" in document
        else:
            assert [s.rsplit("/", 1)[-1] for s in sources] == list(views.VENDORED_JS)


class TagCounter(HTMLParser):
    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def handle_starttag(self, tag, attrs):
        self.counts[tag] += 1


def test_typed_html_cannot_end_the_script_or_the_iframe(tiny_models):
    r = attention.run(models.load(tiny_models["masked"]), HOSTILE, "<b>B</b>")
    assert any("script" in t for t in r.tokens)
    document = views.view_document(r, "head")
    # Parsed as a browser would: only our own elements exist, and the data stays inside its script.
    tags = TagCounter()
    tags.feed(document)
    assert tags.counts["script"] == len(views.VENDORED_JS) + 3
    assert set(tags.counts) <= {"html", "head", "meta", "title", "style", "script", "body", "div", "span", "select",
                                "option"}
    data = document.split("const LAB_DATA = ", 1)[1].split("\n", 1)[0]
    assert "<" not in data and ">" not in data and "script" in data
    frame = views.iframe(document, 500, "t")
    srcdoc = frame.split('srcdoc="', 1)[1].rsplit('"', 1)[0]
    assert "<" not in srcdoc and '"' not in srcdoc
    assert 'sandbox="allow-scripts"' in frame and "allow-same-origin" not in frame


def test_payload_round_trips_to_three_decimals(tiny_models):
    r = attention.run(models.load(tiny_models["masked"]), "The cat sat on the mat.")
    payload = views.view_payload(r)
    q = np.array(payload["q"]).reshape(r.weights.shape) / 1000
    np.testing.assert_allclose(q, r.weights, atol=5e-4 + 1e-7)


# ------------------------------------------------------------ real models


def test_minilm_sentence_pair_gives_6_by_12_entropies_and_patterns():
    result = attention.attention_result(*PAIR[:1], models.MINILM_NAME, PAIR[1], layer=5, head=11)
    assert (result["num_layers"], result["num_heads"]) == (6, 12)
    assert np.array(result["entropy"]).shape == (6, 12)
    assert len(result["patterns"]) == 6 and all(len(row) == 12 for row in result["patterns"])
    assert {p for row in result["patterns"] for p in row} <= set(attention.PATTERNS)
    assert result["tokens"].count("[SEP]") == 2
    # A 6-layer BERT has at least one head that mostly looks at the previous token.
    assert any("previous token" in row for row in result["patterns"])


def test_smollm2_has_no_next_token_heads():
    r = attention.run(models.load(models.SMOLLM2_NAME), "The cat sat on the mat because it was tired.")
    _, patterns = attention.summary(r)
    assert r.causal and "next token" not in {p for row in patterns for p in row}


# ------------------------------------------------------------ API and browser


def test_attention_api(client, tiny_models):
    result = client.predict("The cat sat on the mat.", tiny_models["masked"], "", 1, 2, api_name="/attention")
    expected = own_attentions(tiny_models["masked"], "The cat sat on the mat.")[1][2]
    np.testing.assert_allclose(np.array(result["weights"]), expected, atol=1e-6)
    assert result["layer"] == 1 and result["head"] == 2 and result["tokens"][0] == "[CLS]"


def test_attention_api_bad_input(client, tiny_models):
    with pytest.raises(AppError, match="Type a sentence"):
        client.predict("", tiny_models["masked"], "", 0, 0, api_name="/attention")
    with pytest.raises(AppError, match="layers 0–1"):
        client.predict("The cat", tiny_models["masked"], "", 7, 0, api_name="/attention")
    with pytest.raises(AppError, match="no model called"):
        client.predict("The cat", "no-such-model", "", 0, 0, api_name="/attention")


def test_attention_tab_in_the_browser(page):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    open_tab(page, "Attention")
    head_frame = page.frame_locator('iframe[title^="bertviz head view"]')
    head_frame.locator("svg line").first.wait_for(state="attached", timeout=90000)
    assert head_frame.locator("svg line").count() > 50  # lines between tokens
    page.locator(".js-plotly-plot:visible").first.wait_for(timeout=30000)
    screenshot(page, "attention_head_view")
    page.get_by_role("tab", name="Model view (bertviz)", exact=True).click()
    model_frame = page.frame_locator('iframe[title^="bertviz model view"]')
    model_frame.locator("svg line").first.wait_for(state="attached", timeout=30000)
    assert model_frame.locator("svg line").count() > 100
    screenshot(page, "attention_model_view")
    # A click on a cell of the map of every head opens that head, as the layer and head sliders do.
    head_map = page.get_by_role("region", name="Every layer × head", exact=False)
    head_map.locator("tbody tr").nth(1).locator("td").nth(4).click()  # L1, H3 (the first column names the layer)
    expect(page.get_by_label("number input for Layer").first).to_have_value("1")
    expect(page.get_by_label("number input for Head").first).to_have_value("3")
    # Hostile text: the views still draw and nothing typed runs, in the page or in the iframe.
    page.get_by_label("Sentence A", exact=True).fill(HOSTILE)
    page.get_by_role("button", name="Show attention").click()
    page.get_by_role("tab", name="Head view (bertviz)", exact=True).click()
    head_frame.get_by_text("script", exact=True).first.wait_for(timeout=30000)
    assert head_frame.locator("svg line").count() > 50
    settle(page)  # the last outputs drawn before the picture
    screenshot(page, "attention_hostile_text")
    assert dialogs == [] and page.outside_requests == []


def test_downloaded_view_draws_offline_on_its_own(page, browser, tmp_path):
    open_tab(page, "Attention")
    head_frame = page.frame_locator('iframe[title^="bertviz head view"]')
    head_frame.locator("svg line").first.wait_for(state="attached", timeout=90000)
    with page.expect_download(timeout=60000) as download:
        page.get_by_role("button", name="Download this view").first.click()
    saved = tmp_path / "view.html"
    download.value.save_as(saved)
    offline = browser.new_context(offline=True)
    requests = []
    standalone = offline.new_page()
    standalone.on("request", lambda r: requests.append(r.url))
    standalone.goto(saved.as_uri())
    standalone.locator("svg line").first.wait_for(state="attached", timeout=30000)
    assert standalone.locator("svg line").count() > 50
    assert [u for u in requests if not u.startswith("file:")] == []
    offline.close()


def test_compare_encoder_and_causal_in_the_browser(page):
    open_tab(page, "Attention")
    page.get_by_text("Compare: an encoder and a causal LM").click()
    page.get_by_role("button", name="Compare (last layer, average over heads)").click()
    page.get_by_text("Causal LM:").first.wait_for(timeout=60000)
    notes = page.get_by_text("Attention above the diagonal").all_inner_texts()
    causal_note = next(n for n in notes if n.startswith("Causal LM"))
    assert "last layer: 0.000" in causal_note  # a causal LM never looks at the future


def test_students_downloading_the_same_new_view_at_once_all_get_the_whole_file(tiny_models):
    """Two page loads of the same new text wrote one shared partial file: the second rename failed."""
    import threading

    r = attention.run(models.load(tiny_models["masked"]), "A text nobody has downloaded before, for eight students.")
    results, errors = [], []

    def download():
        try:
            results.append(views.standalone_files(r))
        except Exception as exc:  # noqa: BLE001 - the test reports any failure
            errors.append(exc)

    threads = [threading.Thread(target=download) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == [] and len({tuple(sorted(p.items())) for p in results}) == 1
    for path in results[0].values():
        text = open(path, encoding="utf-8").read()
        assert text.rstrip().endswith("</html>")
    assert not list(Path(results[0]["head"]).parent.glob("*.partial"))


def test_downloads_on_disk_are_bounded_and_a_removed_one_comes_back(tiny_models, monkeypatch, tmp_path):
    """A course's worth of texts must not fill the disk: only the newest runs' files stay."""
    import os

    monkeypatch.setattr(views, "_DOWNLOADS", tmp_path)
    monkeypatch.setattr(views, "KEPT_DOWNLOADS", 3)
    loaded = models.load(tiny_models["masked"])
    runs = [attention.run(loaded, f"Sentence number {i} about a river bank.") for i in range(5)]
    paths = []
    for i, r in enumerate(runs):
        paths.append(views.standalone_files(r))
        os.utime(Path(paths[-1]["head"]).parent, (1000 + i, 1000 + i))  # written in this order
    assert len(list(tmp_path.iterdir())) == 3
    assert [Path(p["head"]).exists() for p in paths] == [False, False, True, True, True]
    again = views.standalone_files(runs[0])  # asked for once more: written again, whole
    assert again == paths[0] and open(again["model"], encoding="utf-8").read().rstrip().endswith("</html>")
    assert not Path(paths[2]["head"]).exists() and len(list(tmp_path.iterdir())) == 3
