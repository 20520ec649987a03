"""Check the course: every quote is the documents' own text, each measurement equals an independent one
(tiktoken for GPT-2's ids, the textbook's own code, DataCollatorForLanguageModeling's draws, fill-mask),
the Hub-only rows say "not measured here" offline, and the API returns the rows."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from labs.choosing import course
from labs.core.models import gpt2_offline

COURSE = Path(__file__).resolve().parents[2] / "shared" / "course"  # beside the clone, as in CI


@pytest.fixture(scope="module")
def rows() -> dict:
    return {r["id"]: r for r in course.check_course()["rows"]}


@pytest.mark.skipif(not COURSE.exists(), reason="the course's documents are in ../shared/course")
def test_every_quote_and_place_is_the_documents_own_text(rows):
    for row in rows.values():
        text = (COURSE / course.FILES[row["document"]]).read_text()
        assert row["quote"] in text, (row["id"], row["quote"])
        assert row["where"] in text, (row["id"], row["where"])


def test_every_row_has_an_id_a_lab_and_a_verdict(rows):
    import app

    assert list(rows) == course.row_ids()
    labs = {lab.ID for lab in app.LABS}
    for row in rows.values():
        assert row["lab"] in labs and row["verdict"] in (course.AGREES, course.DIFFERS, course.NOT_HERE)
        assert row["note"]


def test_gpt2_row_differs_and_the_offline_tokenizer_is_gpt2s_own(rows):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    row = rows["gpt2_ids"]
    assert row["verdict"] == course.DIFFERS and "The=464" in row["measured"] and "<|endoftext|>" in row["measured"]
    # The oracle: tiktoken itself on the same ranks, with GPT-2's pattern.
    reference = tiktoken.Encoding("gpt2", pat_str=gpt2_offline.PATTERN,
                                  mergeable_ranks=load_tiktoken_bpe(str(gpt2_offline.ranks_file())),
                                  special_tokens={gpt2_offline.EOS: gpt2_offline.EOS_ID})
    tok = gpt2_offline.tokenizer()
    for text in ("The cat sat on", "Hello world, unhappiness!", "  spaces\tand\nnew lines 12345", "naïve café"):
        assert tok(text)["input_ids"] == reference.encode(text)
    assert tok.convert_tokens_to_ids(gpt2_offline.EOS) == 50256 and len(tok) == 50257


def test_wordpiece_rows_measure_the_uncased_vocabulary(rows):
    from labs.core.models import models

    tok = models.load_tokenizer(models.MINILM_NAME)
    lecture = rows["wordpiece_lecture"]
    assert lecture["verdict"] == course.DIFFERS
    for word in ("playing", "unhappiness", "COVID"):
        assert f"“{word}” → {' '.join(tok.tokenize(word))}" in lecture["measured"]
    assert "“playing” → playing" in lecture["measured"]  # one token, not play ##ing


def test_the_summarys_qa_indices_count_from_zero(rows):
    row = rows["qa_indices"]
    assert row["verdict"] == course.DIFFERS
    assert "5: [SEP]" in row["measured"] and "6: paris" in row["measured"] and "9: france" in row["measured"]


def test_the_textbooks_code_run_gives_what_the_rows_say(rows):
    assert "layers 8–11 (4 layers), pooler and classifier train" in rows["frozen_layers"]["measured"]
    assert f"{2e-5 * 0.95:.3e}" in rows["llrd_code"]["measured"]  # the top layer: 0.95 × base, not base


def test_fifteen_percent_of_five_tokens_against_the_collator():
    """The binomial the row states, against DataCollatorForLanguageModeling's own draws."""
    from transformers import AutoTokenizer, DataCollatorForLanguageModeling

    from labs.core.models import models

    row = course.masking_expectation()
    tokenizer = AutoTokenizer.from_pretrained(models.get_choice(models.MINILM_NAME).location)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    torch.manual_seed(0)
    ids = tokenizer("The quick brown fox jumps", add_special_tokens=False)["input_ids"]
    assert len(ids) == 5
    batch = collator([{"input_ids": ids} for _ in range(4000)])
    chosen = (batch["labels"] != -100).sum(-1)
    share_none = float((chosen == 0).float().mean())
    assert f"P(0) = {0.85 ** 5:.3f}" in row.measured
    assert share_none == pytest.approx(0.85 ** 5, abs=0.03)
    assert float(chosen.float().mean()) == pytest.approx(0.75, abs=0.05)


def test_the_update_rule_sign_is_sgds():
    torch.manual_seed(0)
    theta = torch.nn.Parameter(torch.randn(3))
    loss = (theta ** 2).sum()
    loss.backward()
    by_hand = theta.detach() - 0.1 * theta.grad
    torch.optim.SGD([theta], lr=0.1).step()
    assert torch.allclose(theta.detach(), by_hand)
    assert "θ − α·∇θL" in course.update_rule().measured


def test_hub_rows_say_not_measured_here_offline(rows):
    for hub_only in ("p_cat", "p_the"):
        assert rows[hub_only]["verdict"] == course.NOT_HERE and rows[hub_only]["measured"] == ""


def test_a_probability_row_is_the_models_own_softmax(tiny_models):
    """_measured_p on a tiny masked LM equals pipeline("fill-mask")'s score for the same word."""
    from transformers import pipeline

    from labs.core.models import models

    loaded = models.load(tiny_models["masked"], "masked")
    row = course._measured_p(course.Row("p_cat", "", ""), loaded, "The [MASK] sat on the mat.", "cat", 0.73)
    fill = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer)
    expected = fill("The [MASK] sat on the mat.", targets=["cat"])[0]["score"]
    assert f"P(cat) = {expected:.2f}" in row.measured and row.verdict == course.DIFFERS


def test_the_api_returns_the_rows_and_one_row(client):
    from gradio_client.exceptions import AppError

    every = client.predict("", api_name="/check_course")
    assert [r["id"] for r in every["rows"]] == course.row_ids()
    one = client.predict("gpt2_ids", api_name="/check_course")
    assert [r["id"] for r in one["rows"]] == ["gpt2_ids"] and one["rows"][0]["verdict"] == "differs"
    with pytest.raises(AppError, match="No row called"):
        client.predict("<b>nope</b>", api_name="/check_course")


def test_the_state_at_t_minus_1_is_what_generate_reads(tiny_models):
    """next_token_states on a tiny GPT-2: generate()'s own first-step scores are the logits at t − 1, not at t."""
    from labs.core.models import models

    loaded = models.load(tiny_models["causal"], "causal")
    found = course.next_token_states(loaded, "The cat sat on the mat")
    prefix = loaded.tokenizer("The cat sat on the mat", return_tensors="pt")["input_ids"][:, :-1]
    out = loaded.model.generate(prefix, max_new_tokens=1, do_sample=False, output_logits=True,
                                return_dict_in_generate=True, pad_token_id=0)
    assert torch.allclose(out.logits[0][0].float(), found["prefix_logits"], atol=1e-4)
    assert found["gap"][0] < 1e-4 < found["gap"][1]


def test_the_hidden_index_row_measures_offline(rows):
    row = rows["hidden_index"]
    assert row["verdict"] == course.DIFFERS and "t − 1" in row["measured"] and "forward pass" in row["measured_with"]


def test_the_ner_rows_count_first_pieces_against_word_ids(rows):
    from labs.core.models import models

    tok = models.load_tokenizer(models.MINILM_NAME)
    word_ids = tok(["Hedwig", "lives", "in", "Reykjavik"], is_split_into_words=True).word_ids()
    pieces = sum(i is not None for i in word_ids)
    row = rows["ner_subwords"]
    assert f"every sub-word trains {pieces} labels, the first piece only 4" in row["measured"]
    assert pieces > 4 and "first subtoken" in row["note"]
    assert "fine-tuning" in rows["mask_fine_tune"]["quote"] and rows["mask_fine_tune"]["verdict"] == course.DIFFERS
