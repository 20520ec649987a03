"""Tokens lab: every tokenizer's ids against transformers' own, the step-by-step BPE against the
`tokenizers` library's BpeTrainer, WordPiece's score by hand, and three trained tokenizers."""

from __future__ import annotations

import json

import pytest
from conftest import open_tab, screenshot
from gradio_client.exceptions import AppError
from playwright.sync_api import expect
from tokenizers import Tokenizer, pre_tokenizers, trainers
from tokenizers import models as tokenizer_models
from transformers import AutoTokenizer

from labs.core.errors import BadInput
from labs.core.models import gpt2_offline, models
from labs.tokens import bpe, compute, train

COURSE = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
NO_EARLY_TIE = {"banana": 5, "bandana": 3, "band": 7, "ban": 2}
END = "\ue000"  # a one-character end-of-word for BpeTrainer, so that it is a symbol of its own, like </w>


def library_merges(counts: dict[str, int]) -> list[tuple[str, str]]:
    """The merges `tokenizers`' BpeTrainer learns from the same word counts, </w> as a symbol."""
    tokenizer = Tokenizer(tokenizer_models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=10_000, min_frequency=1, show_progress=False, special_tokens=[])
    tokenizer.train_from_iterator([word + END for word, n in counts.items() for _ in range(n)], trainer=trainer)
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [tuple(part.replace(END, bpe.END) for part in pair) for pair in merges]


def replayed_counts(counts: dict[str, int], pairs: list[tuple[str, str]]) -> list[int]:
    """Each merge's count when the merges are made in this order (to compare with the library's)."""
    state, found = bpe.start(counts), []
    for pair in pairs:
        found.append(bpe.pair_counts(state)[pair])
        state.words = [(bpe.merge_symbols(symbols, pair), n) for symbols, n in state.words]
    return found


def test_the_course_corpus_merges_as_the_textbook_says():
    state = bpe.learn(COURSE, 5)
    assert [(m.pair, m.count) for m in state.merges[:4]] == [
        (("e", "s"), 9), (("es", "t"), 9), (("est", "</w>"), 9), (("l", "o"), 7)]
    assert state.merges[3].token == "lo" and state.merges[2].token == "est</w>"
    assert bpe.split("lowest", state.merges) == ["low", "est</w>"]
    assert bpe.split("lowest", []) == ["l", "o", "w", "e", "s", "t", "</w>"]


@pytest.mark.parametrize("counts", [COURSE, NO_EARLY_TIE], ids=["course", "no-early-tie"])
def test_every_merge_count_equals_the_bpe_trainers(counts):
    ours = bpe.learn(counts, 200).merges
    theirs = library_merges(counts)
    assert len(ours) == len(theirs)  # both go on until every word is one symbol
    assert [m.count for m in ours] == replayed_counts(counts, theirs)
    first_tie = next((i for i, m in enumerate(ours) if m.tied), len(ours))
    assert [m.pair for m in ours[:first_tie]] == theirs[:first_tie]  # the same pairs until a tie
    if counts is NO_EARLY_TIE:
        assert first_tie >= 3


def test_wordpiece_scores_by_hand():
    state = bpe.start(COURSE)
    scores = {s.pair: s for s in bpe.wordpiece_scores(state)}
    # e occurs in lower (2), newest (2·6) and widest (3): 17; s in newest and widest: 9.
    assert (scores[("e", "s")].left, scores[("e", "s")].right) == (17, 9)
    assert scores[("e", "s")].score == pytest.approx(9 / (17 * 9))
    choice = bpe.wordpiece_choice(state)
    assert choice.pair == ("i", "d") and choice.score == pytest.approx(3 / (3 * 3))
    assert bpe.next_merge(state).pair == ("e", "s")  # BPE's choice differs


@pytest.mark.parametrize("corpus, message", [
    ("", "corpus is empty|Type a corpus"),
    ("low 5\nlow five", "line 2"),
    ("low 5\nlower -2", "line 2"),
    ("low 5 extra", "Line 1"),
    ("x" * 6000, "5,000"),
])
def test_bad_corpora_name_the_line(corpus, message):
    with pytest.raises(BadInput, match=message):
        bpe.bpe_json(corpus, 5, "lowest")


def test_bpe_json_and_bad_merges():
    out = bpe.bpe_json(bpe.COURSE_CORPUS, 5, "lowest")
    assert out["pieces"] == ["low", "est</w>"] and out["merges"][0] == {"step": 1, "pair": ["e", "s"], "count": 9,
                                                                       "token": "es"}
    assert out["vocab"][-5:] == ["es", "est", "est</w>", "lo", "low"]
    for merges in (-1, 201, "abc", 2.5):
        with pytest.raises(BadInput, match="merges"):
            bpe.bpe_json(bpe.COURSE_CORPUS, merges, "lowest")


def offered() -> list[str]:
    """Every model's tokenizer, and GPT-2's (openai-whisper's copy) when gpt2 itself is not offered."""
    gpt2 = [gpt2_offline.NAME] if gpt2_offline.available() and "gpt2" not in models.registry() else []
    return list(models.registry()) + gpt2


def gpt2_oracle():
    """tiktoken itself on openai-whisper's ranks: the oracle for the offline GPT-2 tokenizer."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    encoding = tiktoken.Encoding("gpt2", pat_str=gpt2_offline.PATTERN,
                                 mergeable_ranks=load_tiktoken_bpe(str(gpt2_offline.ranks_file())),
                                 special_tokens={gpt2_offline.EOS: gpt2_offline.EOS_ID})
    return lambda text: {"input_ids": encoding.encode(text)}


@pytest.mark.parametrize("text", [compute.EXAMPLES[0], compute.EXAMPLES[4], "Hello  world\n<b>x</b>"])
def test_ids_equal_each_models_own_tokenizer(text, tiny_models):
    rows = compute.tokenize(text)
    assert [r.model for r in rows] == offered()
    for row in rows:
        assert row.error is None, row.error
        if row.model == gpt2_offline.NAME:
            assert row.ids == gpt2_oracle()(text)["input_ids"] and row.vocab_size == 50257
            continue
        location = models.get_choice(row.model)
        oracle = models.load_tokenizer(row.model) if location.gguf_file else AutoTokenizer.from_pretrained(
            location.location)
        assert row.ids == oracle(text)["input_ids"]
        assert row.special == [i in oracle.all_special_ids for i in row.ids]
        assert row.vocab_size == len(oracle)


def test_decoding_the_ids_gives_the_text_back():
    text = compute.EXAMPLES[0]
    for row in compute.tokenize(text):
        tokenizer = gpt2_offline.tokenizer() if row.model == gpt2_offline.NAME else models.load_tokenizer(row.model)
        decoded = tokenizer.decode(row.ids, skip_special_tokens=True)
        assert decoded.strip().lower() == text.lower(), row.model  # uncased models lower-case


def test_pieces_are_shown_as_students_read_them():
    rows = {r.model: r for r in compute.tokenize("The students were playing an unbelievable game.")}
    minilm, smol = rows[models.MINILM_NAME], rows[models.SMOLLM2_NAME]
    assert minilm.algorithm == "WordPiece" and minilm.vocab_size == 30522
    assert minilm.tokens[0] == "[CLS]" and minilm.special[0] and minilm.special[-1]
    assert smol.algorithm == "byte-level BPE" and "␣students" in smol.tokens
    # Byte-level pieces: whole characters decoded, part of a character as its bytes; together they
    # are exactly the text's UTF-8 bytes.
    text = "Die Katze schläft. 🐱"
    smol = next(r for r in compute.tokenize(text, [models.SMOLLM2_NAME]))
    assert "ä" in "".join(smol.shown)
    rebuilt = b"".join(bytes.fromhex(p[1:-1]) if p.startswith("⟨") else p.replace("␣", " ").encode()
                       for p in smol.shown)
    assert rebuilt == text.encode()


def test_bad_tokenize_input():
    with pytest.raises(BadInput, match="Type a text"):
        compute.tokenize("   ")
    with pytest.raises(BadInput, match="5,000"):
        compute.tokenize("x" * 5001)
    with pytest.raises(models.ModelUnavailable, match="no model called"):
        compute.tokenize("hi", ["no-such-model"])
    with pytest.raises(BadInput, match="list of model names"):
        compute.tokenize("hi", [1, 2])


def test_three_trained_tokenizers_are_real_and_split_as_they_do():
    out = train.train_and_split("", 300, "unbelievable lowest")
    trained = train.trained(train.builtin_text(), 300)
    assert [r["algorithm"] for r in out["results"]] == ["BPE", "WordPiece", "Unigram"]
    for result in out["results"]:
        tokenizer = trained[result["algorithm"]]
        assert type(tokenizer.model).__name__ == result["algorithm"]
        reloaded = Tokenizer.from_str(tokenizer.to_str())  # what the saved model gives, independently
        assert [s["pieces"] for s in result["splits"]] == [reloaded.encode(w).tokens for w in ("unbelievable", "lowest")]
    assert out["results"][0]["vocab_size"] == 300 and out["results"][1]["vocab_size"] == 300
    assert out["results"][1]["splits"][0]["pieces"][1].startswith("##")  # WordPiece's continuation mark
    with pytest.raises(BadInput, match="vocabulary size"):
        train.train_and_split("", 10, "x")


def test_tokenize_and_bpe_apis(client, tiny_models):
    out = client.predict("playing", [], api_name="/tokenize")
    assert [t["model"] for t in out["tokenizers"]] == offered()
    one = client.predict("playing", [tiny_models["masked"]], api_name="/tokenize")["tokenizers"]
    assert len(one) == 1 and one[0]["tokens"] == ["[CLS]", "playing", "[SEP]"]
    assert client.predict(bpe.COURSE_CORPUS, 5, "lowest", api_name="/bpe")["pieces"] == ["low", "est</w>"]
    with pytest.raises(AppError, match="line 1"):
        client.predict("<b>low</b> many", 5, "lowest", api_name="/bpe")


def test_tokens_tab_draws_every_tokenizer_and_steps_bpe(page):
    open_tab(page, "Tokens")
    rows = page.locator(".lab-token-row")
    rows.nth(len(offered()) - 1).wait_for(timeout=60000)
    assert rows.count() == len(offered())
    page.get_by_label("Your text").fill("<img id=evil src=x> playing")
    page.get_by_role("button", name="Split it").click()
    page.locator(".lab-piece", has_text="<").first.wait_for()
    assert page.locator("#evil").count() == 0
    page.get_by_label("Your guess: the next merge (e.g. e s)").fill("e s")
    page.get_by_role("button", name="Check my guesses").click()
    page.get_by_text("Your merge e s: ✅ right").wait_for()
    page.get_by_role("button", name="Next merge").click()
    page.get_by_text("1 merge(s) learned").wait_for()
    screenshot(page, "tokens")
    merges = page.locator("table:visible", has_text="new token").last  # the table of merges so far
    expect(merges).to_contain_text("e + s")
