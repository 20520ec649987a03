"""Choosing a model, the summary sheet's QA example run on an answer-span head (labs/choosing/qa_check.py): the span,
its indices and score equal transformers' own span selection (the question-answering pipeline's select_starts_ends)
on the same logits, the logits equal what a forward hook on the head reads, and offline the page says the head is
random."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers.pipelines.document_question_answering import select_starts_ends

from labs.choosing import qa_check
from labs.core.errors import BadInput

PAIRS = [(qa_check.QUESTION, qa_check.CONTEXT),
         ("Who wrote the novel?", "The novel was written by Jane Austen in 1813, and it sold well in London.")]


@pytest.fixture(scope="module")
def qa():
    return qa_check.qa_model()


def pipeline_choice(qa, question, context):
    """What the pipeline's post-processing picks: p_mask 1 on the question and separators, 0 on the context and
    [CLS] (its rule), top_k=1, max_answer_len=15, then the context's characters by the offsets."""
    enc = qa.tokenizer(question, context, return_tensors="pt", return_offsets_mapping=True)
    offsets = enc.pop("offset_mapping")[0].tolist()
    ids = enc["input_ids"][0].tolist()
    p_mask = np.array([[0 if (sid == 1 or tok == qa.tokenizer.cls_token_id) else 1
                        for sid, tok in zip(enc.sequence_ids(0), ids)]])
    with torch.inference_mode():
        out = qa.model(**enc)
    starts, ends, scores, _ = select_starts_ends(out.start_logits.numpy(), out.end_logits.numpy(), p_mask,
                                                 enc["attention_mask"].numpy(), top_k=1, max_answer_len=15)
    s, e = int(starts[0]), int(ends[0])
    return s, e, float(scores[0]), context[offsets[s][0]:offsets[e][1]], ids


@pytest.mark.parametrize("question,context", PAIRS)
def test_the_span_is_the_pipelines(qa, question, context):
    got = qa_check.answer(question, context, qa)
    s, e, score, text, ids = pipeline_choice(qa, question, context)
    assert (got.start_index, got.end_index, got.answer) == (s, e, text)
    assert got.score == pytest.approx(score, rel=1e-4)
    assert got.tokens == qa.tokenizer.convert_ids_to_tokens(ids)
    # the answer's characters are the span's tokens (an uncased tokenizer lower-cases them)
    decoded = qa.tokenizer.decode(ids[s:e + 1]).replace(" ", "")
    assert decoded.lower() == got.answer.replace(" ", "").lower()


def test_the_logits_are_what_the_head_outputs(qa):
    seen = []
    hook = qa.model.qa_outputs.register_forward_hook(lambda module, args, out: seen.append(out.detach()))
    try:
        _, start, end = qa_check.span_logits(qa, qa_check.QUESTION, qa_check.CONTEXT)
    finally:
        hook.remove()
    assert torch.allclose(start, seen[0][0, :, 0]) and torch.allclose(end, seen[0][0, :, 1])


def test_the_course_indices_and_the_offline_note(qa):
    got = qa_check.answer(qa=qa)
    tokens = qa.tokenizer.convert_ids_to_tokens(qa.tokenizer(qa_check.QUESTION, qa_check.CONTEXT)["input_ids"])
    assert got.course_tokens == [tokens[5], tokens[8]]
    assert (got.course_start, got.course_end) == (5, 8)
    if not got.trained:
        assert "random" in got.note and "mean nothing" in got.note and qa_check.SQUAD in got.note
    else:
        assert got.note == ""


def test_bad_input():
    with pytest.raises(BadInput):
        qa_check.answer("", qa_check.CONTEXT)
    with pytest.raises(BadInput):
        qa_check.qa_api(qa_check.QUESTION, ["not", "text"])
