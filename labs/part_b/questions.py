"""The workbook's entries: every exercise of the handout's Part A (the warm-up) and Part B in the handout's order
and words, what the student types, how the answer is judged, and where the handout itself is wrong. Each line is an
entry of the course's quote table (labs/core/ui/course_quotes_handout.py), which tests/test_course_quotes.py finds
verbatim under its section.

kinds: "check" (typed answers judged right or wrong against a live computation), "guess" (Part A: guess
first, then see the real model; never marked), "open" (the student writes; "Show the evidence" reveals a
measurement and a model answer; never marked), "run" (the student's own settings, run on the real model)."""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.ui.course_quotes import workbook as quote


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    hint: str = ""  # what the box shows while empty: the form the answer takes
    default: str = ""  # settings a run starts from (never an answer to judge)


@dataclass(frozen=True)
class Question:
    id: str
    section: str  # the handout's heading, as printed
    quote: tuple[str, ...]  # the handout's words, each line verbatim
    kind: str  # check | guess | open | run
    fields: tuple[Field, ...] = ()
    tolerance: str = ""
    lab: tuple[str, str] = ("", "")  # (?tab= query, what the link says)
    erratum: str = ""  # where the handout is wrong or ambiguous, and what is checked instead
    answer_type: str = "text"  # for /part_b_questions: number | numbers | text | choice | settings | open

    def to_json(self) -> dict:
        return {"id": self.id, "part": self.id[0], "section": self.section, "wording": "\n".join(self.quote),
                "kind": self.kind, "answer_type": self.answer_type,
                "fields": [{"key": f.key, "label": f.label, "hint": f.hint} for f in self.fields],
                "tolerance": self.tolerance, "lab": f"?{self.lab[0]}" if self.lab[0] else "",
                "erratum": self.erratum}


def _f(key, label, hint="", default=""):
    return Field(key, label, hint, default)


QUESTIONS: tuple[Question, ...] = (
    # ---- Part A: pre-class discovery --------------------------------------------------------------
    Question("A1", "A1: The Learning Problem", quote("A1"), "open",
        (_f("skills", "5 skills", "grammar, word meanings, …"), _f("scratch", "Should every company start from scratch?")),
        lab=("tab=finetune&scratch=true", "Fine-tune: pre-trained vs from scratch"), answer_type="open"),
    Question("A2.1", "A2: The Fill-in-the-Blank Game", quote("A2.1"), "guess",
        (_f("b1", "1. The cat sat on the ____"), _f("b2", "2. I went to the ____ to buy milk"),
         _f("b3", "3. The ____ was delicious but too expensive"), _f("b4", "4. She ____ the ball to her friend")),
        lab=("tab=fill_mask&text=I+went+to+the+%5BMASK%5D+to+buy+milk.", "Fill in the blank, sentence 2"),
        answer_type="open"),
    Question("A2.2", "A2: One-Way vs Two-Way Understanding", quote("A2.2"), "check",
        (_f("left", "Approach 1 (only “The ____”): possible answers"), _f("whole", "Approach 2: possible answers"),
         _f("better", "Which approach is more accurate?", "1 or 2")),
        tolerance="the approach's number; both lists are yours, shown beside the models' own guesses",
        lab=("tab=fill_mask&text=The+%5BMASK%5D+barked+loudly+at+the+mailman.", "Fill in the blank: left-only vs whole"),
        answer_type="choice"),
    Question("A3.1", "A3: The Prediction Game", quote("A3.1"), "guess",
        (_f("c1", "1. Once upon a ____"), _f("c2", "2. The weather today is ____"), _f("c3", "3. I love to eat ____"),
         _f("c4", "4. The best thing about weekends is ____")),
        lab=("tab=next_token&prompt=The+weather+today+is", "Next token: the distribution"), answer_type="open"),
    Question("A3.2", "A3: Generation vs Understanding", quote("A3.2"), "open",
        (_f("creativity", "Which requires more creativity?"), _f("understanding", "Which requires more understanding?")),
        lab=("tab=fill_mask", "Fill in the blank: both panels"), answer_type="open"),
    Question("A4", "A4: The Specialization Problem", quote("A4"), "open",
        (_f("general", "General", "grammar, …"), _f("specific", "Specific", "medical diagnosis terms, …"),
         _f("percent", "Your estimate: % general")),
        lab=("tab=finetune&strategy=freeze_bottom&n=4", "Fine-tune: freeze the general layers"), answer_type="open"),
    Question("A5", "A5: The Cost Problem", quote("A5"), "check",
        (_f("scratch_total", "Total cost, each from scratch ($)"), _f("shared_total", "Total cost, one general model ($)"),
         _f("saved", "Money saved ($)")),
        tolerance="exact to the dollar", lab=("tab=cost", "Cost & scale"), answer_type="numbers"),
    # ---- Part B: post-class application -----------------------------------------------------------
    Question("B1.1", "B1: Understanding MLM", quote("B1.1"), "check",
        (_f("expected", "On average, how many of the 5 tokens are chosen?", "a number"),),
        tolerance="± 0.05 tokens",
        lab=("tab=fill_mask", "Fill in the blank: the masking simulator"),
        erratum="The handout's “15% (1 token)” rounds: each token is chosen with probability 0.15, so a 5-token "
                "sentence has 0.75 chosen tokens on average, and often 0 or 2. The check asks for the "
                "average; the evidence draws with transformers' own DataCollatorForLanguageModeling.",
        answer_type="number"),
    Question("B1.1b", "B1: Understanding MLM", quote("B1.1b"), "open",
             (_f("answer", "Your answer"),),
             lab=("tab=pretraining", "Pre-training: BERT at mask rates from 5 to 80 %"), answer_type="open"),
    Question("B1.2", "B1: Bidirectional Attention", quote("B1.2"), "check",
        (_f("n", "n (the sequence length you count for)", "e.g. 6", default="6"), _f("bert", "BERT's connections"),
         _f("gpt", "GPT's connections")),
        tolerance="exact (whole connections); for n from 1 to 10,000",
        lab=("tab=masks", "Masks: count the connections"), answer_type="numbers"),
    Question("B2.1", "B2: Next Token Prediction", quote("B2.1"), "check",
        (_f("sat", "P(sat)"), _f("ran", "P(ran)"), _f("jumped", "P(jumped)"), _f("slept", "P(slept)")),
        tolerance="± 0.005 each",
        lab=("tab=next_token", "Next token: softmax by hand"),
        erratum="The handout's formula uses h_t, “the hidden state at position t”, to predict x_t; the state that "
                "predicts x_t is the one at t − 1, which has read x_1 … x_{t−1}. The numbers below do "
                "not depend on it.", answer_type="numbers"),
    Question("B2.2a", "B2: Generation Strategy", quote("B2.2a"),
             "open", (_f("answer", "Your answer"),),
             lab=("tab=next_token", "Next token: generate greedily"), answer_type="open"),
    Question("B2.2b", "B2: Generation Strategy", quote("B2.2b"), "check",
        (_f("t05", "Temperature = 0.5", "sharper / unchanged / flatter"), _f("t10", "Temperature = 1.0", "sharper / unchanged / flatter"),
         _f("t20", "Temperature = 2.0", "sharper / unchanged / flatter")),
        tolerance="sharper, unchanged or flatter than the model's own distribution (T = 1)",
        lab=("tab=next_token&temperature=2", "Next token at temperature 2"), answer_type="choice"),
    Question("B3.1", "B3: Transfer Learning", quote("B3.1"), "check",
        (_f("sign", "θ_new = θ_pretrained  ___  α · ∇θ L", "+ or −"),
         _f("theta", "One step: θ = 0.5, x = 2, y = 1, p = σ(θ·x), L = −log p, α = 0.1. θ_new = ?")),
        tolerance="the sign; θ_new ± 0.001",
        lab=("tab=finetune", "Fine-tune"),
        erratum="The handout adds the gradient; gradient descent subtracts it: θ_new = θ − α·∇θ L. "
                "The handout's + climbs the loss: the evidence takes both steps.", answer_type="numbers"),
    Question("B3.1b", "B3: Transfer Learning", quote("B3.1b"), "open",
        (_f("why", "Why 2e-5 for fine-tuning?"), _f("too_large", "What happens with too large a learning rate?")),
        lab=("tab=finetune&learning_rate=0.01", "Fine-tune at 1e-2"), answer_type="open"),
    Question("B3.2", "B3: Catastrophic Forgetting", quote("B3.2"), "run",
        (_f("lr", "1. Initial LR", default="2e-5"), _f("warmup", "2. Warmup steps", "steps (the run has 39)", default="4"),
         _f("decay", "3. Decay strategy", "linear or layer-wise", default="linear"),
         _f("freeze", "4. Freeze layers?", "no, embeddings, bottom N, or all but the head", default="embeddings")),
        tolerance="your schedule, run: accuracy and forgetting beside a too-high learning rate (1e-2)",
        lab=("tab=finetune", "Fine-tune: the forgetting line"), answer_type="settings"),
    Question("B4.1", "B4: Comparing Architectures", quote("B4.1"), "check",
        (_f("bert_best", "Best for: BERT"), _f("t5_best", "Best for: T5"), _f("gpt_objective", "Training objective: GPT"),
         _f("gpt_architecture", "Architecture: GPT"), _f("gpt_context", "Context: GPT"), _f("t5_context", "Context: T5")),
        tolerance="the cell's idea in your words (accepted words listed); the parameter row is checked on the configs",
        lab=("tab=choosing", "Choosing a model: the families"),
        erratum="The table's sizes are the largest of each family (BERT-large, GPT-2 XL, T5-11B); the handout's B6.1 "
                "uses 340M with BERT-base's width 768.", answer_type="text"),
    Question("B4.2", "B4: Task Matching", quote("B4.2"), "check",
        (_f("sentiment", "Sentiment analysis", "BERT, GPT or T5"), _f("generation", "Text generation", "BERT, GPT or T5"),
         _f("qa", "Question answering", "BERT, GPT or T5"), _f("translation", "Translation", "BERT, GPT or T5"),
         _f("summarization", "Summarization", "BERT, GPT or T5"), _f("ner", "Named entity recognition", "BERT, GPT or T5")),
        tolerance="the family of transformers' own default model for the task's pipeline",
        lab=("tab=choosing", "Choosing a model: which model for which task"), answer_type="choice"),
    Question("B5.1", "B5: Fine-tuning BERT", quote("B5.1"), "run",
        (_f("requires_grad", "requires_grad =", "True or False", default="False"),
         _f("lr", "learning_rate", default="2e-5"), _f("batch", "per_device_train_batch_size", default="16"),
         _f("epochs", "num_train_epochs", default="3"), _f("warmup", "warmup_steps", "steps (the run has 39)", default="4"),
         _f("decay", "weight_decay", default="0.01"), _f("high_lr", "What happens with learning_rate=1e-2?")),
        tolerance="each value inside the course's ranges (quoted below); then your run beside learning_rate=1e-2",
        lab=("tab=finetune&strategy=freeze_embeddings", "Fine-tune with frozen embeddings"),
        erratum="The code uses TrainingArguments without importing it: add `from transformers import "
                "TrainingArguments`.", answer_type="settings"),
    Question("B5.2", "B5: Using GPT for Generation", quote("B5.2"), "run",
        (_f("greedy", "Greedy: the parameter", "name=value", default="do_sample=False"),
         _f("temperature", "temperature", default="0.7"), _f("beams", "num_beams", default="5")),
        tolerance="greedy: do_sample=False (or num_beams=1); temperature > 0; beams ≥ 2; then the real text of each",
        lab=("tab=next_token&prompt=Once+upon+a+time", "Next token: generate"), answer_type="settings"),
    Question("B6.1", "B6: Efficient Fine-tuning", quote("B6.1"), "check",
        (_f("trainable", "Trainable parameters"), _f("percent", "Percentage of original (%)")),
        tolerance="the count exact; the percentage ± 2 % of its value, of the matrix or of the 340M model",
        lab=("tab=finetune&strategy=lora&n=16", "Fine-tune with LoRA r = 16"),
        erratum="340M is BERT-large, whose matrices are 1024 × 1024; 768 × 768 is BERT-base (110M). “Percentage "
                "of original” can mean of the matrix (4.17 %) or of the model: both are accepted.",
        answer_type="numbers"),
    Question("B6.2", "B6: Environmental Impact", quote("B6.2"), "check",
        (_f("co2", "CO2 (tons)"), _f("cost", "Cost ($)"), _f("savings", "Savings (%)")),
        tolerance="± 2 % of each value (CO2 and cost in proportion to the energy)",
        lab=("tab=cost", "Cost & scale"),
        erratum="The handout does not say how CO2 and cost scale; the check assumes both are proportional to the "
                "energy, as the same data centre and price would make them.", answer_type="numbers"),
    Question("B7.1", "B7: Critical Thinking", quote("B7.1"), "open",
             (_f("l1", "1."), _f("l2", "2."), _f("l3", "3.")),
             lab=("tab=choosing", "Choosing a model: domain shift and bias"), answer_type="open"),
    Question("B7.2", "B7: Critical Thinking", quote("B7.2"), "open",
             (_f("answer", "Your answer"),), lab=("tab=choosing", "Choosing a model: the bias probe"),
             answer_type="open"),
)

BY_ID = {q.id: q for q in QUESTIONS}


def ids() -> list[str]:
    return [q.id for q in QUESTIONS]


def part_b_questions() -> dict:
    """The `/part_b_questions` API: every entry, its wording (the handout's), answer type and tolerance."""
    return {"questions": [q.to_json() for q in QUESTIONS]}
