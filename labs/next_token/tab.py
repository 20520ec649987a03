"""Next token, the tab: the title, the explainer and build(ctx), which lays out each panel in reading
order and then wires them. Each panel is a module with its handlers (values in, values out):
tab_distribution (prompt, knobs, chart), tab_step (one token at a time), tab_generate (exercise B5),
tab_softmax (exercise B2) and tab_inside (inside a prediction)."""

from __future__ import annotations

from labs.core.ui import ui
from labs.core.ui.build import Build
from labs.next_token import tab_distribution, tab_generate, tab_inside, tab_ngram, tab_softmax, tab_step

TITLE = "Next token"
ID = "next_token"  # the ?tab= link and the folder
EXPLAINER = """**A causal LM predicts one token at a time, from the left context only.** Below is its
probability for every possible next token (the 20 most likely). Temperature sharpens or flattens the
distribution; top-k and top-p cut off the unlikely tail (greyed out). Decoding strategies turn these
distributions into text."""
TRY_THIS = (
    "B2: set temperature to 0.5, 1 and 2. How do the bars and the entropy change? Check your hand "
    "calculation with the calculator.",
    "Set top-k to 5, then top-p to 0.9: which tokens turn grey? Which knob adapts to how sure the model is?",
    "B5: generate with greedy, then compare all three. Does greedy repeat itself? Is beam search bland?",
    "Copy the code under Generate and run it yourself: you should get the same text.")


def build(ctx: Build) -> None:
    ui.explainer(EXPLAINER)
    main = tab_distribution.build(ctx)
    step, gen, calc = tab_step.build(), tab_generate.build(), tab_softmax.build()
    tab_inside.wire(tab_inside.build(), main.model)
    tab_ngram.build(ctx)
    ui.course_links(("p_the", "P(the | The cat sat on) = 0.42"), ("hidden_index", "which hidden state predicts x_t"))
    ui.try_this(*TRY_THIS)
    ctx.link(__name__, prompt=main.prompt, model=main.model, temperature=main.temperature, top_k=main.top_k,
            top_p=main.top_p)
    tab_distribution.wire(ctx, main, step.pick)
    tab_step.wire(main, step)
    tab_generate.wire(main, gen)
    tab_softmax.wire(ctx, calc)
