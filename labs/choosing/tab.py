"""Choosing a model, the tab: the title, explainer and Try-this prompts, and the panels' layout and wiring
(each panel is a tab_<panel>.py module with its handlers)."""

from __future__ import annotations

from labs.choosing import (
    tab_architectures,
    tab_bias,
    tab_cards,
    tab_distillation,
    tab_features,
    tab_few_shot,
    tab_t5,
    tab_tasks,
    tab_temperature,
)
from labs.core.ui import ui
from labs.core.ui.build import Build

TITLE = "Choosing a model"
ID = "choosing"
EXPLAINER = """**Which pre-trained model, for which job?** The table reads every model offered here from its own
config and weights: family (encoder, decoder, encoder-decoder), size, tokenizer, pre-training objective and
speed. Below, a causal LM classifies reviews from examples in its prompt alone (no training), a probe shows a
bias it inherited from its pre-training text, and a task card asks you to pick the architecture and head."""
TRY_THIS = (
    "B4: in the table, compare an encoder (BERT, MiniLM), a decoder (GPT-2, SmolLM2) and an encoder-decoder (T5): "
    "which share of each model's parameters is the embedding table, and why is it so large for SmolLM2?",
    "B4: for each task card, pick an architecture and a head before checking. Which tasks could a decoder do by "
    "prompting alone, and what would you lose?",
    "Few-shot: with arbitrary labels (apple/banana) at 0 examples, why is the model at chance? How many examples "
    "does it need before the labels mean something? Does the order of the examples matter?",
    "B7: write your own template (\"The {occupation} was praised because [MASK] ...\"). Does the order of the "
    "occupations survive the new wording? What can and can't this probe tell you about the model?",
    "Domain shift: paste a paragraph from your own field. Is its perplexity nearer news or legal text?",
    "Distillation: on which blanks does DistilBERT disagree with BERT, and is the KL large there? Is half the "
    "layers worth the speed-up you measure here?",
    "Published architectures: ALBERT-base has about a tenth of BERT-base's parameters. Does a forward pass cost "
    "it a tenth of the compute? Count them and look at GFLOPs per token.",
    "Features: before you run it, guess which reads the reviews best for one classifier: MiniLM's mean, its [CLS], "
    "SmolLM2's last token or its mean? Why should a decoder's last token know more than its first?",
    "Distillation with temperature: guess the teacher's second word's probability at T = 5 before you look. Why "
    "does the loss multiply the KL by T², and what happens to L when you set β = 0?")


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    cards_panel = tab_cards.build()
    architectures_panel = tab_architectures.build()  # published sizes, counted on the meta device
    distill_panel = tab_distillation.build()
    temperature_panel = tab_temperature.build()  # distillation with temperature, beside it
    shots_panel = tab_few_shot.build()
    bias_panel = tab_bias.build()
    tasks_panel = tab_tasks.build()
    t5_panel = tab_t5.build()  # T5's text-to-text prefixes
    features_panel = tab_features.build()  # an encoder's and a decoder's features; the QA example, run
    ui.try_this(*TRY_THIS)
    ctx.link(__name__, model=shots_panel.model, shots=shots_panel.shots, bias_model=bias_panel.model,
            template=bias_panel.template, text=bias_panel.dtext, check=cards_panel.row,
            t5_task=t5_panel.task, t5_prefix=t5_panel.prefix, t5_text=t5_panel.text, temp_text=temperature_panel.text,
            temperatures=temperature_panel.temps, arch_group=architectures_panel.group,
            arch_tokens=architectures_panel.tokens, features_text=features_panel.text,
            qa_question=features_panel.question, qa_context=features_panel.context)
    tab_cards.wire(ctx, cards_panel)
    tab_architectures.wire(ctx, architectures_panel)
    tab_distillation.wire(distill_panel)
    tab_temperature.wire(ctx, temperature_panel)
    tab_few_shot.wire(ctx, shots_panel)
    tab_bias.wire(ctx, bias_panel)
    tab_tasks.wire(ctx, tasks_panel)
    tab_t5.wire(ctx, t5_panel)
    tab_features.wire(ctx, features_panel)
