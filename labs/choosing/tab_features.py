"""Choosing a model, two panels: an encoder's and a decoder's frozen features read by the same classifier (the
lecture's closing hands-on lab), and the summary sheet's question-answering example run on an answer-span head."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from labs.choosing import features, qa_check
from labs.core.ui import course_quotes, ui
from labs.core.ui.build import Build

FEATURE_HEADERS = ["features", "model", "width", "cross-validated accuracy", "by fold", "verdict on your sentence",
                   "P(positive)"]
TOKEN_HEADERS = ["index", "token", "part", "the summary sheet", "the model"]
SHORT = {features.ENCODER: "MiniLM", features.DECODER: "SmolLM2"}


def quoted(quote_id: str) -> str:
    return "\n".join("> " + line for line in course_quotes.text(quote_id).split("\n"))


def features_intro() -> str:
    slide = course_quotes.get("features_lab_activities")
    return (
        f"**{slide.cite}**, among the lab activities:\n\n{quoted(slide.id)}\n\n"
        f"and, under “No Fine-tuning:”,\n\n{quoted('features_no_fine_tuning')}\n\n"
        f"Here both models are frozen. Each of the {len(features.reviews()[0])} short reviews that ship with LM Lab "
        "(`assets/sentiment.csv`, both splits) goes through the encoder **all-MiniLM-L6-v2** and the decoder "
        "**SmolLM2-135M-Instruct**; their last layer becomes a fixed vector in two ways each: the encoder's mean "
        "over the tokens and its first token ([CLS]), the decoder's last token and its mean. The same classifier "
        f"reads each vector: `{features.CLASSIFIER}`, and the accuracy is the mean over the 5 held-out folds, beside "
        "always answering the majority class. The first run reads every review through both models once (about "
        "half a minute on 2 cores); after that only your sentence is read, by the classifiers fitted on all the "
        "reviews.")


def pct(x: float) -> str:
    return f"{x:.1%}"


def feature_rows(r: dict) -> list[list]:
    rows = [[x["what"], SHORT.get(x["model"], x["model"]), x["width"], pct(x["accuracy"]),
             " ".join(f"{a:.0%}" for a in x["by_fold"]), x["verdict"], round(x["p_positive"], 3)] for x in r["rows"]]
    return rows + [["always the majority class (baseline)", "—", "—", pct(r["baseline"]), "", "", ""]]


def findings(r: dict) -> str:
    acc = {x["key"]: x["accuracy"] for x in r["rows"]}
    best = max(r["rows"], key=lambda x: x["accuracy"])
    enc, dec = r["sizes"]["encoder"], r["sizes"]["decoder"]
    found = [f"**Best: {best['what']} of {ui.md(SHORT.get(best['model'], best['model']))}, {pct(best['accuracy'])}** "
             f"of held-out reviews right; guessing the majority class gets {pct(r['baseline'])}."]
    last, mean = acc["decoder_last"], acc["decoder_mean"]
    if last > mean:
        found.append(f"**SmolLM2: its last token ({pct(last)}) beats its mean ({pct(mean)}).** A decoder's causal "
                     "mask lets each position read only the tokens before it: the last token's state is the only one "
                     "that has read the whole review. The mean also averages the first tokens' states, which have "
                     "read a word or two and know nothing of how the review ends.")
    else:
        found.append(f"**SmolLM2: its mean ({pct(mean)}) does as well as its last token ({pct(last)}) or better**, "
                     "although only the last token's state has read the whole review (the causal mask): averaging "
                     "keeps the states at the sentiment words themselves.")
    first, emean = acc["encoder_first"], acc["encoder_mean"]
    found.append(
        f"**MiniLM: mean {pct(emean)}, [CLS] {pct(first)}.** In an encoder every token has read the whole review in "
        "both directions, so no position is short of context. all-MiniLM-L6-v2 was fine-tuned as a sentence "
        "embedder whose sentence vector is the mean of its tokens (its pooling config says so): the mean is what it "
        "was trained to make useful, and nothing trained its [CLS] state alone to sum a sentence up.")
    found.append(
        f"The lecture's takeaways say of BERT “{course_quotes.text('features_bert_takeaway')}” and of GPT "
        f"“{course_quotes.text('features_gpt_takeaway')}”. These two models are no fair test of the architectures "
        f"alone: SmolLM2 has {dec['params'] / 1e6:.0f}M parameters to MiniLM's {enc['params'] / 1e6:.0f}M, "
        f"{dec['layers']} layers to {enc['layers']}, a {dec['width']}-wide state to {enc['width']}, and was "
        "pre-trained on far more text. What the table does show: which vector you take out of a model matters as "
        "much as which model, and for a decoder the one position that has read everything is the last.")
    return "\n\n".join(found)


def on_features(text):
    r = features.features_api(text)
    return feature_rows(r), findings(r), r


def qa_intro() -> str:
    quote = course_quotes.get("course_qa_indices")
    lines = [course_quotes.text(q) for q in ("course_qa_indices", "course_qa_start", "course_qa_end",
                                             "qa_two_classifiers")]
    return (f"**{quote.cite}**:\n\n" + "\n".join(f"> {line}  " for line in lines) + "\n\n"
            "Counted from 0 as a tokenizer counts, index 5 of that input is the first [SEP], not “Paris”: with "
            "bert-base-uncased's tokens “paris” is 6, “is” 7, “in” 8 and “france” 9. And “Where is Paris?” is "
            "answered by “France” alone (9 to 9), not by the whole of “Paris is in France”. Below, an answer-span "
            "head reads the same pair: its two classifiers give every token a start and an end score, and the "
            "answer is the context's span with the highest P(start) × P(end), chosen as transformers' "
            "question-answering pipeline chooses it.")


def qa_tokens(a: dict) -> list[list]:
    rows = []
    for i, (token, part) in enumerate(zip(a["tokens"], a["parts"])):
        sheet = {a["course_start"]: "start (index 5: “Paris”)", a["course_end"]: "end (index 8: “France”)"}.get(i, "")
        model = " and ".join(w for w, j in (("start", a["start_index"]), ("end", a["end_index"])) if j == i)
        rows.append([i, token, part, sheet, model])
    return rows


def qa_summary(a: dict) -> str:
    where = "" if a["trained"] else " (random head: the span means nothing)"
    return (f"**{ui.md(a['model'])}{where}: start index {a['start_index']} (“{ui.md(a['tokens'][a['start_index']])}”), "
            f"end index {a['end_index']} (“{ui.md(a['tokens'][a['end_index']])}”), answer “{ui.md(a['answer'])}”** "
            f"(characters {a['start_char']}–{a['end_char']} of the passage), score P(start) × P(end) = "
            f"{a['p_start']:.3f} × {a['p_end']:.3f} = {a['score']:.3f}. The summary sheet's indices "
            f"{a['course_start']} and {a['course_end']} are, in this tokenizer, “{ui.md(a['course_tokens'][0])}” and "
            f"“{ui.md(a['course_tokens'][1])}”.")


def on_qa(question, context):
    a = qa_check.qa_api(question, context)
    return ui.notice(a["note"]), qa_summary(a), qa_tokens(a), a


def build() -> SimpleNamespace:
    with gr.Accordion("An encoder's and a decoder's features, one classifier", open=False,
                      elem_id="choosing-features-panel"):
        gr.Markdown(features_intro())
        with gr.Row():
            text = gr.Textbox(features.EXAMPLE, label="Your sentence", scale=3, max_lines=2,
                              max_length=features.MAX_CHARS)
            button = gr.Button("Compare the features", variant="primary", scale=1)
        table = ui.table(FEATURE_HEADERS, "The same classifier on each model's features", wrap=True)
        found = gr.Markdown()
        result = ui.result_json()
    with gr.Accordion("Question answering: the summary sheet's example, run", open=False,
                      elem_id="choosing-qa-panel"):
        gr.Markdown(qa_intro())
        with gr.Row():
            question = gr.Textbox(qa_check.QUESTION, label="Question", max_lines=2, max_length=qa_check.MAX_CHARS)
            context = gr.Textbox(qa_check.CONTEXT, label="Passage", max_lines=4, max_length=qa_check.MAX_CHARS)
        qa_button = gr.Button("Find the answer span", variant="primary")
        notice = gr.Markdown()
        summary = gr.Markdown()
        tokens = ui.table(TOKEN_HEADERS, "The pair as the model reads it, with both sets of indices")
        qa_result = ui.result_json()
    return SimpleNamespace(text=text, button=button, table=table, found=found, result=result, question=question,
                           context=context, qa_button=qa_button, notice=notice, summary=summary, tokens=tokens,
                           qa_result=qa_result)


def wire(ctx: Build, p: SimpleNamespace) -> None:
    ui.wire([p.button.click, p.text.submit], on_features, [p.text], [p.table, p.found, p.result])
    qa_inputs, qa_outputs = [p.question, p.context], [p.notice, p.summary, p.tokens, p.qa_result]
    ui.wire([p.qa_button.click, p.question.submit, p.context.submit], on_qa, qa_inputs, qa_outputs)
    ctx.on_load(on_qa, qa_inputs, qa_outputs)
