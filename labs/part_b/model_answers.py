"""A short model answer for each open question and guess, shown after "Show the evidence" (never used to
mark). Where an answer says what the course says, the words are the course's own, quoted from course_quotes
(tests check every “…” passage against ../shared/course/); the rest is LM Lab's, and says so by not quoting."""

from __future__ import annotations

from labs.core.ui.course_quotes import text as course

MODEL_ANSWERS = {
    "A1": ("Word meanings, grammar and sentence structure, negation (not good), which words carry sentiment, "
           "sarcasm and context, named things (actors, films). No: the handout's own discovery is that "
           f"“{course('partb_a1')}” (Handout, A1); the evidence "
           "above measures it: the same encoder from random weights learns far less from the same reviews."),
    "A2.1": ("Typical answers: mat, store (or shop), food (or meal, cake), threw (or passed, kicked). The words "
             f"after the blank matter as much as those before it: “{course('partb_a2_milk')}” picks a shop."),
    "A3.1": ("Typical answers: time, sunny (or nice, cold), pizza (or chocolate), the freedom (or sleeping in). "
             "A causal LM ranks continuations the same way, from the words on the left only."),
    "A3.2": ("Continuing a sentence needs more creativity (many continuations are right, the model must choose "
             "one and go on); filling a blank needs more understanding of the whole sentence (both sides constrain "
             f"it). Hence the handout's “{course('partb_a3')}” (Handout, A3)."),
    "A4": ("General: grammar, sentiment words, “the” and “a”, sentence structure. Specific: movie genres, medical "
           "diagnosis terms. Most of it is general, which is why the lower layers of a pre-trained model can often "
           "be frozen. The linked Fine-tune run freezes the bottom 4 layers: run it, then full fine-tuning on the "
           "same data, and compare their accuracy (nothing on this page measures it for you)."),
    "B1.1b": ("With half the tokens hidden, too little context is left to predict them (and what is left is no "
              "longer natural text): accuracy per masked token falls, as the mask-rate curve shows. With too few "
              "masked, each sentence gives few predictions to learn from, so training takes longer. 15 % is a "
              "trade-off that worked for BERT, not a law: larger models have trained well with more."),
    "B2.2a": ("Greedy decoding is deterministic and safe, but it often repeats itself (loops such as the "
              "repeated phrases above) and never picks a good but less likely word, so the text is dull."),
    "B3.1b": ("A small rate nudges weights that are already good; a large one overwrites them: "
              f"“{course('partb_forgetting')}” (Textbook, 20.6.6). In the runs above, 1e-2 sends accuracy to chance and the encoder forgets how "
              "to find paraphrases."),
    "B3.2": ("A schedule that keeps what pre-training taught: an initial rate of 2e-5 to 5e-5, "
             f"“{course('partb_warmup')}” (Lecture, Week 6), linear decay to 0 (or layer-wise decay, which moves the lower layers least), "
             "and optionally the embeddings or bottom layers frozen. Compare your run's retrieval after training "
             "with the 1e-2 run's."),
    "B5.1": ("False (freeze the embeddings, as the comment says); 2e-5; 16 or 32; 3; about 10 % of the steps; 0.01. "
             "With learning_rate=1e-2 the loss jumps and the model forgets what it knew: accuracy falls to chance "
             "(the run above)."),
    "B5.2": ("do_sample=False (greedy is generate()'s default when do_sample is False and num_beams is 1); a "
             "temperature such as 0.7 (lower: safer, higher: more varied); num_beams=5 (beam search keeps the 5 "
             "best partial texts)."),
    "B7.1": ("For example: they reflect their training data's biases; they know nothing after their data was "
             "collected and can state falsehoods fluently; they do worse on text unlike what they were trained on "
             "(domain shift: the perplexities above); they are costly to train and run; an encoder "
             f"“{course('partb_encoder_limit')}” (Lecture, Pre-training Strategies)."),
    "B7.2": ("What the pre-training text over- or under-represents becomes the model's default associations "
             "(the probe above: occupations and pronouns), and fine-tuning on a small set rarely removes them: a "
             "CV screener or a sentiment model built on top inherits them, so bias must be measured on the "
             "downstream task itself."),
}
