"""Lab 1, "Fill in the blank": what a masked LM predicts for each blank, how sure it is, and how
that compares with a causal LM that sees only the left context. Also BERT's pre-training
corruption (15 % chosen; 80 % [MASK], 10 % random, 10 % kept) with the real MLM loss (exercise B1)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from labs import models, next_token
from labs.errors import BadInput, check_int

TITLE = "Fill in the blank"
MAX_BLANKS = 10
TOP_K_RANGE = (1, 20)
BLANK_PATTERN = re.compile(r"\[MASK\]|\[BLANK\]|<mask>|_{3,}", re.IGNORECASE)
EXAMPLES = [
    "The [MASK] sat on the mat.",
    "I went to the bank to [MASK] some money.",
    "We sat on the river bank and watched the [MASK].",
    "Paris is the [MASK] of France.",
    "The doctor told the [MASK] that [MASK] needed rest.",
]
DOWNLOAD_HINT = ("No masked-LM weights (BERT) are available here, so predictions are off. While online, run "
                 "`python -m labs.download` once; the tokens, the masking simulator and the left-only "
                 "predictions below still work.")

# ---------------------------------------------------------------- compute


@dataclass
class Prediction:
    token: str
    token_id: int
    prob: float


@dataclass
class Blank:
    index: int  # position in `tokens`
    predictions: list[Prediction]


@dataclass
class FillResult:
    model: str
    source: str
    tokens: list[str]
    token_ids: list[int]
    special: list[bool]
    masks: list[Blank]
    filled: str
    logits_at_blanks: object = field(repr=False, default=None)  # torch tensor [blanks, vocab]

    def to_json(self) -> dict:
        return {"model": self.model, "source": self.source, "tokens": self.tokens,
                "masks": [{"index": b.index, "predictions": [vars(p) for p in b.predictions]} for b in self.masks]}


def check_text(text) -> str:
    if not isinstance(text, str) or not text.strip():
        raise BadInput("Type a sentence with a blank, for example: The [MASK] sat on the mat.")
    return text.strip()


def check_top_k(top_k) -> int:
    return check_int(top_k, "Top-k", *TOP_K_RANGE)


def with_mask_token(text: str, mask_token: str) -> str:
    """Every way of writing a blank ([MASK], <mask>, ___) becomes the model's own mask token."""
    return BLANK_PATTERN.sub(mask_token, text)


def masked_lm(model_name: str) -> models.LoadedModel:
    loaded = models.load(model_name)
    if loaded.choice.family != "masked" or loaded.tokenizer.mask_token_id is None:
        raise BadInput(f"'{model_name}' is not a masked language model; pick one such as bert-base-uncased.")
    return loaded


def encode(loaded: models.LoadedModel, text: str):
    """Tokenise with the blanks mapped to the mask token; refuse what the model cannot take."""
    import torch

    tokenizer = loaded.tokenizer
    enc = tokenizer(with_mask_token(check_text(text), tokenizer.mask_token), return_tensors="pt")
    limit = loaded.max_tokens
    n = enc["input_ids"].shape[1]
    if n > limit:
        raise BadInput(f"Your text is {n} tokens long; this model reads at most {limit}. "
                       f"Remove about {n - limit} tokens.")
    blanks = torch.nonzero(enc["input_ids"][0] == tokenizer.mask_token_id).flatten()
    if len(blanks) == 0:
        raise BadInput("There is no blank in your text. Write [MASK] (or ___) where a word is missing, "
                       "for example: The [MASK] sat on the mat.")
    if len(blanks) > MAX_BLANKS:
        raise BadInput(f"Your text has {len(blanks)} blanks; use at most {MAX_BLANKS}.")
    return enc, blanks


def logits_at(loaded: models.LoadedModel, enc, positions):
    """MLM logits at the given positions only. For BERT the vocabulary head (the costliest layer,
    30,522 outputs) runs on the blanks alone instead of on every token."""
    import torch

    model = loaded.model
    enc = {k: v.to(loaded.device) for k, v in enc.items()}
    with torch.no_grad():
        if hasattr(model, "bert") and hasattr(model, "cls"):
            hidden = model.bert(**enc).last_hidden_state[0, positions.to(loaded.device)]
            return model.cls(hidden).float().cpu()
        return model(**enc).logits[0, positions.to(loaded.device)].float().cpu()


def predict(model_name: str, text: str, top_k: int = 5) -> FillResult:
    """The top-k tokens and probabilities for every blank, and the sentence with the best guesses."""
    top_k = check_top_k(top_k)
    loaded = masked_lm(model_name)
    enc, blanks = encode(loaded, text)
    logits = logits_at(loaded, enc, blanks)
    probs = logits.softmax(dim=-1)
    values, ids = probs.topk(top_k, dim=-1)
    tokenizer = loaded.tokenizer
    result_blanks = [Blank(int(pos), [Prediction(tokenizer.decode([int(i)]).strip(), int(i), float(v))
                                      for v, i in zip(values[b].tolist(), ids[b].tolist())])
                     for b, pos in enumerate(blanks)]
    input_ids = enc["input_ids"][0].clone()
    input_ids[blanks] = ids[:, 0]
    return FillResult(loaded.name, loaded.source, models.readable_tokens(tokenizer, enc["input_ids"][0].tolist()),
                      enc["input_ids"][0].tolist(),
                      tokenizer.get_special_tokens_mask(enc["input_ids"][0].tolist(), already_has_special_tokens=True),
                      result_blanks, tokenizer.decode(input_ids, skip_special_tokens=True), logits)


def guess(model_name: str, text: str, blank_number: int, word: str) -> dict:
    """How likely the student's word is at blank number `blank_number` (1-based), and its rank."""
    word = (word or "").strip()
    if not word:
        raise BadInput("Type the word you would put in the blank.")
    result = predict(model_name, text, 1)
    if not 1 <= int(blank_number) <= len(result.masks):
        raise BadInput(f"Your text has {len(result.masks)} blank(s); choose a number from 1 to {len(result.masks)}.")
    tokenizer = models.load(model_name).tokenizer
    pieces = tokenizer.tokenize(word)
    probs = result.logits_at_blanks[int(blank_number) - 1].softmax(-1)
    first_id = tokenizer.convert_tokens_to_ids(pieces[0])
    rank = int((probs > probs[first_id]).sum()) + 1
    return {"word": word, "pieces": pieces, "single_token": len(pieces) == 1, "token_id": int(first_id),
            "prob": float(probs[first_id]), "rank": rank, "vocab_size": int(probs.shape[0])}


def left_context(text: str) -> str:
    """The words left of the first blank: all a causal LM would see."""
    match = BLANK_PATTERN.search(check_text(text))
    if match is None:
        raise BadInput("There is no blank in your text. Write [MASK] where a word is missing.")
    return text.strip()[:match.start()].rstrip()


def left_only_predictions(causal_model: str, text: str, top_k: int = 5) -> dict:
    """What a causal LM predicts at the first blank when it sees only the words to its left."""
    context = left_context(text)
    dist = next_token.distribution(causal_model, context, top_n=check_top_k(top_k), allow_empty=True)
    return {"context": context, "model": dist.model, "predictions": [
        {"token": e.token, "token_id": e.token_id, "prob": e.prob} for e in dist.entries]}


# -- the masking simulator (exercise B1)

MASK_RATE, REPLACE_WITH_MASK, REPLACE_WITH_RANDOM = 0.15, 0.8, 0.5  # the 0.5 is of the remaining 20 %


def corrupt(token_ids: list[int], special: list[bool], mask_id: int, vocab_size: int, seed: int) -> list[dict]:
    """BERT's corruption, as transformers' DataCollatorForLanguageModeling does it: each non-special
    token is chosen with probability 15 %; a chosen token becomes [MASK] with probability 80 %,
    a random token with 10 %, and stays itself with 10 %."""
    rng = np.random.default_rng(seed)
    out = []
    for pos, (tid, is_special) in enumerate(zip(token_ids, special)):
        entry = {"position": pos, "original": int(tid), "chosen": False, "action": "", "new": int(tid)}
        if not is_special and rng.random() < MASK_RATE:
            entry["chosen"] = True
            draw = rng.random()
            if draw < REPLACE_WITH_MASK:
                entry.update(action="mask", new=int(mask_id))
            elif draw < REPLACE_WITH_MASK + (1 - REPLACE_WITH_MASK) * REPLACE_WITH_RANDOM:
                entry.update(action="random", new=int(rng.integers(vocab_size)))
            else:
                entry.update(action="keep")
        out.append(entry)
    return out


def corruption_frequencies(token_ids, special, mask_id, vocab_size, seed: int, draws: int = 1000) -> dict:
    """Over many draws: the share of tokens chosen (→ 15 %), and of the chosen: mask / random / keep
    (→ 80 / 10 / 10)."""
    counts = {"tokens": 0, "chosen": 0, "mask": 0, "random": 0, "keep": 0}
    for d in range(draws):
        for e in corrupt(token_ids, special, mask_id, vocab_size, seed * 100_003 + d):
            if special[e["position"]]:
                continue
            counts["tokens"] += 1
            if e["chosen"]:
                counts["chosen"] += 1
                counts[e["action"]] += 1
    chosen = max(counts["chosen"], 1)
    return {"draws": draws, "chosen_rate": counts["chosen"] / max(counts["tokens"], 1),
            "mask": counts["mask"] / chosen, "random": counts["random"] / chosen, "keep": counts["keep"] / chosen,
            "counts": counts}


def tokenizer_for(model_name: str | None):
    """The masked LM's tokenizer, or the uncased WordPiece vocab of the offline MiniLM (the same
    vocabulary as bert-base-uncased) when no masked LM can be loaded."""
    if model_name:
        try:
            return masked_lm(model_name).tokenizer, True
        except (models.ModelUnavailable, BadInput):
            pass
    return models.load(models.MINILM_NAME).tokenizer, False


def simulate(model_name: str | None, text: str, seed: int) -> dict:
    """One corruption of the sentence, and the MLM loss −log P(original) at each chosen position
    (when a masked LM is available), summed as in the lecture's formula."""
    import torch

    tokenizer, have_model = tokenizer_for(model_name)
    ids = tokenizer(check_text(text), truncation=True, max_length=128)["input_ids"]
    special = [bool(s) for s in tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)]
    entries = corrupt(ids, special, tokenizer.mask_token_id, len(tokenizer), int(seed))
    chosen = [e for e in entries if e["chosen"]]
    names = models.readable_tokens(tokenizer, ids)
    for e in entries:
        e["token"] = names[e["position"]]
        e["becomes"] = tokenizer.convert_ids_to_tokens(e["new"])
    loss = None
    if have_model and chosen:
        loaded = masked_lm(model_name)
        corrupted = torch.tensor([[e["new"] for e in entries]])
        positions = torch.tensor([e["position"] for e in chosen])
        logits = logits_at(loaded, {"input_ids": corrupted, "attention_mask": torch.ones_like(corrupted)}, positions)
        log_probs = logits.log_softmax(-1)
        for e, row in zip(chosen, log_probs):
            e["loss"] = float(-row[e["original"]])
        loss = float(sum(e["loss"] for e in chosen))
    freqs = corruption_frequencies(ids, special, tokenizer.mask_token_id, len(tokenizer), int(seed))
    return {"entries": entries, "loss": loss, "have_model": have_model, "frequencies": freqs,
            "model": model_name if have_model else None}


def token_chips(tokens: list[str], ids: list[int], special: list, mask_id: int) -> list[tuple[str, str | None]]:
    """(token (id), kind) pairs for the tokens view: blanks, special tokens and ## word pieces marked."""
    return [(f"{t} ({i})", "blank" if i == mask_id else "special" if s else "piece" if t.startswith("##") else None)
            for t, i, s in zip(tokens, ids, special)]


# ---------------------------------------------------------------- figures


def prediction_figure(result: FillResult):
    from plotly.subplots import make_subplots
    import plotly.graph_objects as go

    from labs.plots import FONT, unique_labels

    n = len(result.masks)
    fig = make_subplots(rows=1, cols=n, subplot_titles=[f"Blank {i + 1}" for i in range(n)], horizontal_spacing=0.08)
    for i, blank in enumerate(result.masks):
        fig.add_trace(go.Bar(x=[p.prob for p in blank.predictions], y=unique_labels([p.token for p in blank.predictions]),
                             orientation="h", marker_color="#1d4ed8", text=[f"{p.prob:.3g}" for p in blank.predictions],
                             textposition="auto", textfont=dict(size=15), showlegend=False), row=1, col=i + 1)
        fig.update_yaxes(autorange="reversed", type="category", tickfont=dict(size=16), row=1, col=i + 1)
    fig.update_layout(font=FONT, template="plotly_white", margin=dict(l=10, r=10, t=50, b=10),
                      height=max(300, 90 + 36 * len(result.masks[0].predictions)))
    return fig


# ---------------------------------------------------------------- tab

EXPLAINER = """**A masked language model (BERT) fills a blank using the words on *both* sides.** Type a
sentence with `[MASK]` (or `___`) and see its guesses with their probabilities. Beside it, a causal LM
(GPT-style) guesses from the words on the left only: compare "The [MASK] …" with "The [MASK] sat on the mat"."""


def build_tab(demo) -> None:
    import gradio as gr
    import pandas as pd

    from labs import plots, ui

    ui.explainer(EXPLAINER)
    masked_names = models.choice_names("masked")
    if not masked_names:
        gr.Markdown(ui.notice(DOWNLOAD_HINT))
    with gr.Row():
        text = gr.Textbox(EXAMPLES[0], label="Your sentence (write [MASK] or ___ for a blank)", scale=3, max_lines=4)
        with gr.Column(scale=2):
            model = ui.model_dropdown("masked", label="Masked LM")
            top_k = gr.Slider(1, 20, value=5, step=1, label="Top-k guesses per blank")
    predict_btn = gr.Button("Predict the blanks", variant="primary")
    gr.Examples([[e] for e in EXAMPLES], inputs=[text], label="Examples from the lecture")
    filled = gr.Markdown()
    with gr.Row():
        with gr.Column(scale=3):
            chart = gr.Plot(label="Both sides: the masked LM's guesses")
        with gr.Column(scale=2):
            causal = ui.model_dropdown("causal", label="Left only: causal LM")
            left_chart = gr.Plot(label="Left only: the causal LM's next-token guesses at the first blank")
    table = gr.Dataframe(headers=["blank", "rank", "token", "token id", "probability"], interactive=False,
                         label="Predictions")
    tokens = gr.HighlightedText(label="The input as the model's tokens (id); ## marks a word piece",
                                color_map={"special": "#f59e0b", "blank": "#dc2626", "piece": "#7c3aed"},
                                combine_adjacent=False, show_legend=True)
    result_json = gr.JSON(label="Result (as the API returns it)", open=False)
    with gr.Accordion("Check your guess", open=True):
        with gr.Row():
            blank_no = gr.Number(1, label="Blank number", precision=0, minimum=1, maximum=MAX_BLANKS)
            word = gr.Textbox(label="Your word", placeholder="dog")
            guess_btn = gr.Button("How likely is it?")
        guess_out = gr.Markdown()
    with gr.Accordion("Masking simulator: BERT's 15 % with 80 / 10 / 10 (exercise B1)", open=False):
        with gr.Row():
            sim_text = gr.Textbox("The quick brown fox jumps over the lazy dog near the river bank today",
                                  label="Sentence to corrupt", scale=3)
            seed = gr.Number(0, label="Seed", precision=0)
        with gr.Row():
            sim_btn = gr.Button("Corrupt", variant="primary")
            resample = gr.Button("Resample (next seed)")
        sim_table = gr.Dataframe(headers=["position", "token", "chosen?", "what happened", "model sees",
                                          "−log P(original)"], interactive=False, label="One draw")
        sim_summary = gr.Markdown()
    ui.try_this(
        "Compare \"The [MASK] sat on the mat.\" with the left-only panel: why is the causal LM so unsure?",
        "The two \"bank\" sentences: does BERT's guess change with the words *after* the blank?",
        "B1: in the simulator, how many tokens were chosen? Resample a few times, then read the 1,000-draw "
        "frequencies: do they approach 15 % and 80 / 10 / 10?",
        "Type a long word in \"Check your guess\" (e.g. *unbelievable*): why can one [MASK] not predict it?")

    @ui.friendly
    def on_predict(text_in, model_name, k):
        if not model_name:
            raise models.ModelUnavailable(DOWNLOAD_HINT)
        result = predict(model_name, text_in, k)
        rows = [[b + 1, r + 1, p.token, p.token_id, round(p.prob, 5)]
                for b, blank in enumerate(result.masks) for r, p in enumerate(blank.predictions)]
        chips = token_chips(result.tokens, result.token_ids, result.special,
                            models.load(model_name).tokenizer.mask_token_id)
        filled_md = f"**Best guesses filled in:** {ui.esc(result.filled)}\n\n{ui.model_badge(models.load(model_name))}"
        return (filled_md, prediction_figure(result), pd.DataFrame(rows, columns=["blank", "rank", "token",
                                                                                  "token id", "probability"]),
                chips, result.to_json())

    predict_btn.click(on_predict, [text, model, top_k], [filled, chart, table, tokens, result_json],
                      api_name="fill_mask")

    @ui.friendly
    def on_tokens_only(text_in, model_name):
        """Offline: show the uncased WordPiece tokens even without a masked LM."""
        tokenizer, _ = tokenizer_for(model_name)
        ids = tokenizer(with_mask_token(check_text(text_in), tokenizer.mask_token))["input_ids"]
        special = tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
        return token_chips(models.readable_tokens(tokenizer, ids), ids, special, tokenizer.mask_token_id)

    @ui.friendly
    def on_left(text_in, causal_name, k):
        if not causal_name:
            raise models.ModelUnavailable("No causal LM is available here.")
        out = left_only_predictions(causal_name, text_in, k)
        context = out["context"] or "(nothing: the blank is the first word)"
        return plots.bar_chart([p["token"] for p in out["predictions"]], [p["prob"] for p in out["predictions"]],
                               title=f"{out['model']} sees only: “{context}”", colors="#047857")

    for trigger in (predict_btn.click, text.submit):
        trigger(on_left, [text, causal, top_k], left_chart, api_visibility="private")
    if masked_names:
        text.submit(on_predict, [text, model, top_k], [filled, chart, table, tokens, result_json],
                    api_visibility="private")
        demo.load(on_predict, [text, model, top_k], [filled, chart, table, tokens, result_json],
                  api_visibility="private")
    else:
        predict_btn.click(on_tokens_only, [text, model], tokens, api_visibility="private")
        demo.load(on_tokens_only, [text, model], tokens, api_visibility="private")
    demo.load(on_left, [text, causal, top_k], left_chart, api_visibility="private")

    @ui.friendly
    def on_guess(text_in, model_name, number, word_in):
        if not model_name:
            raise models.ModelUnavailable(DOWNLOAD_HINT)
        g = guess(model_name, text_in, int(number or 1), word_in)
        head = (f"**{ui.esc(g['word'])}** at blank {int(number)}: probability **{g['prob']:.4f}**, "
                f"rank **{g['rank']:,}** of {g['vocab_size']:,} tokens.")
        if g["single_token"]:
            return head
        pieces = " + ".join(ui.esc(p) for p in g["pieces"])
        return (f"**{ui.esc(g['word'])}** is not one token: it is split into {pieces}. One [MASK] stands for "
                f"exactly one token, so the model cannot predict the whole word in one blank. The first piece, "
                f"{ui.esc(g['pieces'][0])}, has probability {g['prob']:.4f} (rank {g['rank']:,}).")

    guess_btn.click(on_guess, [text, model, blank_no, word], guess_out, api_visibility="private")

    @ui.friendly
    def on_simulate(text_in, model_name, seed_in):
        try:
            seed_value = int(seed_in)
        except (TypeError, ValueError):
            raise BadInput("The seed must be a whole number.") from None
        sim = simulate(model_name, text_in, seed_value)
        actions = {"mask": "→ [MASK] (80 %)", "random": "→ random token (10 %)", "keep": "kept as is (10 %)"}
        rows = [[e["position"], e["token"], "yes" if e["chosen"] else "", actions.get(e["action"], ""),
                 e["becomes"] if e["chosen"] else "", round(e["loss"], 3) if "loss" in e else ""]
                for e in sim["entries"]]
        f = sim["frequencies"]
        n_chosen = sum(e["chosen"] for e in sim["entries"])
        lines = [f"**Seed {seed_value}: {n_chosen} token(s) chosen.**"]
        if sim["loss"] is not None:
            lines.append(f"MLM loss on the chosen positions, L = −Σ log P(original) = **{sim['loss']:.3f}** "
                         f"(model: {ui.esc(sim['model'])}).")
        elif not sim["have_model"]:
            lines.append("The loss needs a masked LM, which is not available here (tokens use the uncased vocab).")
        else:
            lines.append("No token was chosen this time, so there is nothing to predict: resample.")
        lines.append(f"Over {f['draws']:,} draws: **{f['chosen_rate']:.1%}** of tokens chosen (target 15 %); of those "
                     f"**{f['mask']:.1%}** → [MASK], **{f['random']:.1%}** → random, **{f['keep']:.1%}** kept "
                     f"(target 80 / 10 / 10).")
        return pd.DataFrame(rows, columns=["position", "token", "chosen?", "what happened", "model sees",
                                           "−log P(original)"]), "\n\n".join(lines)

    sim_btn.click(on_simulate, [sim_text, model, seed], [sim_table, sim_summary], api_visibility="private")
    resample.click(lambda s: int(s or 0) + 1, seed, seed, api_visibility="private", queue=False).then(
        on_simulate, [sim_text, model, seed], [sim_table, sim_summary], api_visibility="private")
