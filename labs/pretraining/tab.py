"""Pre-training, the tab: how BERT, GPT, T5 and ELECTRA learn from raw text. Eight panels (tab_examples,
tab_nsp, tab_spans, tab_mask_rate, tab_why_mask, tab_bart, tab_curation, tab_recipe), each with its own handlers
and build."""

from __future__ import annotations

from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.pretraining import (
    tab_bart,
    tab_curation,
    tab_examples,
    tab_mask_rate,
    tab_nsp,
    tab_recipe,
    tab_spans,
    tab_why_mask,
)

TITLE = "Pre-training"
ID = "pretraining"
EXPLAINER = """**How BERT, GPT and T5 learn from raw text, on your own paragraph.** GPT predicts every next
token; BERT predicts 15 % of tokens it cannot see (masked LM) and whether sentence B follows sentence A
(next-sentence prediction); T5 writes back whole spans that were cut out (span corruption); ELECTRA's
discriminator says of every token whether a small generator replaced it. Below, the real pre-training heads
answer: BERT's NSP head, T5 filling its own blanks, BERT at mask rates from 5 to 80 %, why 80 / 10 / 10, and BART
corrupting a document five ways before writing it back. Then what goes in and how it is trained: a web-like corpus
deduplicated and filtered, and BERT's and GPT-3's learning-rate schedules."""
TRY_THIS = (
    ("B1: in section 1, change the seed a few times. How many BERT tokens give a loss each time, against GPT's "
     "100 %? Which of the chosen tokens became [MASK], a random token, or stayed (80 / 10 / 10), and why keep some?"),
    ("B1: in section 4, where does BERT's accuracy fall fastest? Why would masking 50 % make a worse pre-training "
     "task (too little context left), and why does 15 % cost so many training steps (few tokens per sentence)?"),
    ("Section 2: guess both accuracies before you reveal them. Why is NSP against random sentences easy (topic), "
     "and why did ALBERT replace it with sentence order?"),
    ("BERT vs GPT vs T5: compare the training signal in section 1. Which objective learns from every token, which "
     "sees both sides, and which can write a span of any length (section 3)?"),
    "Section 3: raise the mean span length to 10. Do T5's fills get worse, as Raffel et al.'s Table 5 suggests?",
    ("B1: in section 5, compare the [MASK] row with the kept and no-[MASK] rows. What would a model that never saw a "
     "real word at a predicted position do at fine-tuning, where there is no [MASK]? How often does BERT fall for the "
     "random token it sees?"),
    ("Section 1, ELECTRA: how many tokens give ELECTRA a training signal, against BERT's? Change the seed: when the "
     "generator samples the original word, is the token labelled replaced?"),
    ("Section 6, BART: which corruption hides the most from the encoder: deletion (where is the gap?), infilling "
     "(how long is the gap?) or rotation (where does it start)? Change the seed and count the <mask>s infilling leaves."),
    ("Section 7: which documents does the perplexity filter remove that you would keep? Raise its limit to 250: which "
     "non-English ones slip through, and what would a language classifier add? Lower the near-duplicate threshold: "
     "when is a document that is not a copy removed?"),
    ("Section 8: set BERT's warm-up to 0 and to 100,000 steps. What does warm-up protect against in the first steps "
     "(Adam's moment estimates are still poor)? Where do the linear and cosine schedules differ most?"))


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    first = tab_examples.build(ctx)
    second = tab_nsp.build(ctx)
    third = tab_spans.build(ctx)
    tab_mask_rate.build(ctx)
    fifth = tab_why_mask.build(ctx)
    sixth = tab_bart.build(ctx)
    seventh = tab_curation.build(ctx)
    eighth = tab_recipe.build(ctx)
    ui.course_links(("fifteen_percent", "is 15 % optimal?"), ("mask_five", "15 % of a 5-token sentence"),
                    ("mask_reason", "why 80 / 10 / 10"),
                    ("mask_fine_tune", "[MASK] at fine-tuning"), ("imagenet_labels", "ImageNet's labels"))
    ui.try_this(*TRY_THIS)
    ctx.link(__name__, text=first["text"], model_masked=first["masked"], model_causal=first["causal"],
            model_seq2seq=first["seq2seq"], seed=first["seed"], sentence_a=second["sentence_a"],
            sentence_b=second["sentence_b"], span_text=third["span_text"], noise_density=third["noise_density"],
            mean_span_length=third["mean_span_length"], **fifth, **sixth, **seventh, **eighth)
