"""Benchmarks: each lab against the bare library call a user would write instead, same process,
medians after a warm-up. Models are full-size (bert-base-uncased / gpt2 shapes) with random
weights, because latency does not depend on the weight values and the Hub is unreachable here.

    python -m tests.benchmarks
    python -m tests.benchmarks finetune finetune_tasks    # only the benches named
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests import fullsize
from tests.timing import interleaved_medians, median_seconds

os.environ.setdefault("HF_HUB_OFFLINE", "1")
WORK = Path(tempfile.mkdtemp(prefix="lmlab-bench-"))
atexit.register(shutil.rmtree, WORK, True)  # the full-size models in it take 0.8 GB a run
BERT, GPT2 = WORK / "bert-base-size", WORK / "gpt2-size"
os.environ["LAB_EXTRA_MODELS"] = f"{BERT},{GPT2}"


def bench_fill_mask(rows: list) -> None:
    from transformers import pipeline

    from labs.core.models import models
    from labs.core.work import lm
    from labs.fill_mask import compute as fill_mask

    loaded = models.load(BERT.name)
    pipe = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device="cpu")
    short = "The quick brown fox jumps over the [MASK] dog near the bank."
    long = " ".join(["the river bank was quiet that morning and"] * 14) + " the [MASK] sat on the mat."
    for label, text in (("12 tokens", short), ("128 tokens", long)):
        n = len(loaded.tokenizer(text)["input_ids"])
        ours = median_seconds(lambda: (lm.cache.clear(), fill_mask.predict(BERT.name, text, 5)))  # no cache hit
        theirs = median_seconds(lambda: pipe(text, top_k=5))
        rows.append((f"fill_mask, {label} (n={n})", "pipeline('fill-mask')", ours, theirs, "≤ 0.95×"))


def bench_next_token(rows: list) -> None:
    import torch

    from labs.core.models import models
    from labs.next_token import compute as next_token
    from labs.next_token import generation

    loaded = models.load(GPT2.name)
    prompt = "Once upon a time, there was a small village by the river"
    ids = loaded.tokenizer(prompt, return_tensors="pt")["input_ids"]

    def bare():
        with torch.no_grad():
            loaded.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=50, min_new_tokens=50,
                                  do_sample=False, pad_token_id=0)

    def ours():
        list(generation.stream(GPT2.name, prompt, "greedy", 50, 1.0, 0, 1.0, 1, 0))

    # min_new_tokens keeps the bare call at 50 tokens (random weights rarely pick EOS anyway).
    ours_s, bare_s = interleaved_medians(ours, bare, repeats=9)
    rows.append(("next_token, 50 greedy tokens streamed (s)", "model.generate", ours_s, bare_s, "≥ 0.9× speed"))

    def first_token():
        gen = generation.stream(GPT2.name, prompt, "greedy", 50, 1.0, 0, 1.0, 1, 0)
        next(gen)
        gen.close()

    rows.append(("next_token, time to first streamed token (s)", "", median_seconds(first_token, 5, 1), None,
                 "< 0.5 s"))
    next_token.distribution(GPT2.name, prompt)  # fill the logits cache, as the first chart does
    temps = iter([0.3 + 0.01 * i for i in range(1000)])
    rows.append(("next_token, re-shape on slider move (s)", "", median_seconds(
        lambda: next_token.distribution(GPT2.name, prompt, next(temps), 20, 0.9)), None, "< 0.05 s"))


def bench_attention(rows: list) -> None:
    """Request → every view ready (forward pass, entropy and pattern maps, both bertviz iframes, the
    download files, both heatmaps as JSON) against what a notebook user writes: the forward pass
    plus bertviz's own head_view and model_view HTML."""
    import torch
    from bertviz import head_view, model_view

    from labs.attention import tab
    from labs.core.models import models
    from labs.core.work import lm

    loaded = models.load(BERT.name)
    words = ("the river bank was quiet that morning so she sat down and watched the slow brown water "
             "carry leaves past the old bridge").split()
    text = " ".join((words * 2)[:30])  # 32 tokens with [CLS] and [SEP]
    n = len(loaded.tokenizer(text)["input_ids"])

    def ours():
        lm.cache.clear()  # a new text each time: the forward pass runs
        out = tab.on_show(text, "", BERT.name, 5, 3, False)
        out[8].to_json(), out[9].to_json()  # both heatmaps, as Gradio sends them
        return out

    def notebook():
        enc = loaded.tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            out = loaded.model(**enc, output_attentions=True)
        tokens = loaded.tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
        return (head_view(out.attentions, tokens, html_action="return").data,
                model_view(out.attentions, tokens, html_action="return").data)

    ours_s, theirs_s = median_seconds(ours, repeats=7, warmup=2), median_seconds(notebook, repeats=7, warmup=2)
    rows.append((f"attention, all views ready, n={n} (s)", "forward + bertviz views", ours_s, theirs_s, "< 1.5 s"))
    out = ours()
    sent = sum(len(frame.encode()) for frame in out[2:4]) / 1e6
    theirs_mb = sum(len(h.encode()) for h in notebook()) / 1e6
    rows.append((f"attention, HTML sent for both views, n={n} (MB)", "bertviz's own HTML", sent, theirs_mb,
                 "< 1.5 MB"))
    standalone = sum(Path(f).stat().st_size for f in out[4:6]) / 1e6
    rows.append((f"attention, both standalone downloads, n={n} (MB)", "", standalone, None, "(scripts inlined)"))


def bench_embeddings(rows: list) -> None:
    """8 sentences sharing "bank": the lab's whole compute (tokenise, find the word, one padded
    forward pass, every layer's vectors, static vector, pooled sentences, every cosine and the PCA)
    against the bare batched forward pass alone, on the encoder without its vocabulary head (what
    AutoModel gives a user who wants vectors; the head over every position would only add time)."""
    import torch

    from labs.core.models import models
    from labs.core.work import lm
    from labs.embeddings import compute

    loaded = models.load(BERT.name)
    sentences = [line.split("|")[0].strip() for line in compute.EXAMPLE.splitlines()]
    sentences += ["The bank of the canal was steep.", "She works at the bank downtown.",
                  "Fish hide under the bank in summer.", "The bank raised its interest rates again."]
    text = "\n".join(sentences)

    def ours():
        lm.cache.clear()  # the forward pass runs every time
        r = compute.run(loaded, text, "bank")
        return compute.cosine_matrix(r.by_layer), compute.projection(r.by_layer[-1]), compute.cosine_matrix(r.pooled)

    def bare():
        batch = loaded.tokenizer(sentences, padding=True, return_tensors="pt")
        with torch.inference_mode():
            return loaded.model.base_model(**batch, output_hidden_states=True).hidden_states

    ours_s, theirs_s = interleaved_medians(ours, bare, repeats=15, warmup=2)
    rows.append(("embeddings, 8 sentences, every layer (s)", "batched AutoModel pass", ours_s, theirs_s, "≤ 1.1×"))


def bench_inside(rows: list) -> None:
    """Inside a prediction on a gpt2-sized model: scoring a sentence and the logit lens against the
    one bare forward pass each needs; the beam tree against bare generate() with the same beams."""
    import torch

    from labs.core.models import models
    from labs.core.work import lm
    from labs.next_token import beam_tree, inside

    loaded = models.load(GPT2.name)
    text = "The river bank was quiet that morning, so she sat down and watched the slow brown water go by."
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])

    def bare(**kwargs):
        with torch.inference_mode():
            return loaded.model(ids, **kwargs).logits

    ours, theirs = interleaved_medians(lambda: (lm.cache.clear(), inside.score(loaded, text)), bare, repeats=15)
    rows.append((f"score a sentence, n={ids.shape[1]} (s)", "one forward pass", ours, theirs, "≤ 1.2×"))
    ours, theirs = interleaved_medians(lambda: (lm.cache.clear(), inside.logit_lens(loaded, text, 5)),
                                       lambda: bare(output_hidden_states=True), repeats=15)
    rows.append((f"logit lens, every layer, n={ids.shape[1]} (s)", "forward, hidden states", ours, theirs, "≤ 1.2×"))
    prompt = loaded.tokenizer("Once upon a time, there was a", return_tensors="pt")
    for beams, new in ((4, 8), (8, 12)):
        def generate(beams=beams, new=new):
            with torch.inference_mode():
                return loaded.model.generate(**prompt, num_beams=beams, num_return_sequences=beams, do_sample=False,
                                             max_new_tokens=new, pad_token_id=loaded.tokenizer.eos_token_id)

        ours, theirs = interleaved_medians(
            lambda: beam_tree.beam_tree(loaded, "Once upon a time, there was a", beams, new), generate, repeats=7)
        rows.append((f"beam tree, {beams} beams × {new} tokens (s)", "generate(num_beams)", ours, theirs, "≤ 1.5×"))


def train_seconds(events) -> tuple[float, int]:
    """Time spent in training steps only (evaluations and the forgetting probe left out), from a run's events."""
    from labs.finetune import training

    spent, steps, mark = 0.0, 0, None
    for e in events:
        if isinstance(e, training.Eval):
            mark = e.elapsed
        elif isinstance(e, training.Step):
            spent, mark, steps = spent + e.elapsed - mark, e.elapsed, steps + 1
    return spent, steps


def plain_loop(s, data) -> tuple[float, int]:
    """The same updates as a run, on the same batches, with nothing around them: (seconds, steps)."""
    from labs.finetune import training

    model, tokenizer, task = training.load_and_encode(s, data, False)
    train_set, _ = training.encoded_sets(task, tokenizer, s, data, "cpu")
    total = math.ceil(len(train_set) / s.batch_size) * s.epochs
    optimizer, scheduler = training.make_optimizer(model, s, total)
    model.train()
    started = time.perf_counter()
    for epoch in range(1, s.epochs + 1):
        for index in training.epoch_batches(len(train_set), s.batch_size, s.seed, epoch):
            model(**train_set.batch(index)).loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - started, total


def steps_per_second(s, data) -> tuple[float, float]:
    """(ours, plain loop): medians of 3 interleaved runs, so both see the same machine load."""
    import torch

    from labs.finetune import training

    torch.manual_seed(0)
    ours, plain = [], []
    for _ in range(3):
        seconds, steps = plain_loop(s, data)
        plain.append(steps / seconds)
        seconds, steps = train_seconds(training.train(s, data))
        ours.append(steps / seconds)
    return statistics.median(ours), statistics.median(plain)


def bench_finetune(rows: list) -> None:
    """The default run's wall time (real MiniLM, built-in data), with and without the from-scratch
    comparison, and training steps per second against a plain PyTorch loop over the same batches."""
    from labs.core.models import models
    from labs.finetune import data as finetune_data
    from labs.finetune import strategies, training

    data = finetune_data.builtin_data()
    s = strategies.check_settings(models.MINILM_NAME, **{k: strategies.DEFAULTS[k] for k in (
        "strategy", "learning_rate", "epochs", "batch_size", "train_examples", "seed")}, max_train=len(data.train))
    for compare in (False, True):
        started = time.perf_counter()
        result = training.finetune(s.model, s.strategy, s.learning_rate, s.epochs, s.batch_size, s.train_examples,
                                   s.seed, compare)
        scratch = f", scratch {result['scratch']['accuracy_after']:.1%}" if compare else ""
        rows.append((f"finetune, default run{' + from scratch' if compare else ''} (s); "
                     f"accuracy {result['accuracy_after']:.1%}{scratch}", "", time.perf_counter() - started, None,
                     "≤ 60 s" if compare else "≤ 30 s"))

    ours_rate, plain_rate = steps_per_second(s, data)
    rows.append(("finetune, training steps per second", "plain PyTorch loop", ours_rate, plain_rate, "≥ 0.95×"))


def bench_finetune_tasks(rows: list) -> None:
    """Each task's default run (real MiniLM, the lab's defaults for the task) beside its from-scratch twin:
    seconds and the task's metric; and training steps per second against a plain loop (1 epoch)."""
    from labs.core.models import models
    from labs.finetune import strategies, tasks, training
    from labs.finetune.tab_tasks import TASK_DEFAULTS

    for task in ("pair", "ner", "qa"):
        lr, epochs = TASK_DEFAULTS[task]
        data = tasks.task_data(task)
        started = time.perf_counter()
        r = training.finetune(models.MINILM_NAME, "full", lr, epochs, 16, strategies.DEFAULTS["train_examples"], 0,
                              True, task)
        name = r["metrics"]["name"]
        rows.append((f"{task}, default run + scratch (s); {name} {r['metrics']['before'][name]:.2f} → "
                     f"{r['metrics']['after'][name]:.2f}, scratch {r['metrics']['scratch_after'][name]:.2f}", "",
                     time.perf_counter() - started, None, "≤ 60 s"))
        s = strategies.check_settings(models.MINILM_NAME, "full", lr, 1, 16, strategies.DEFAULTS["train_examples"], 0,
                                      max_train=len(data.train), task=task)
        ours, plain = steps_per_second(s, data)
        rows.append((f"{task}, training steps per second", "plain PyTorch loop", ours, plain, "≥ 0.95×"))


def bench_lora_merge(rows: list) -> None:
    """One sentence's prediction at bert-base size (random weights, 2 classes): LoRA r8 (q, v) unmerged and merged
    with peft's merge_and_unload, and bottleneck adapters (m = 64), each against the plain model, timed alternately."""
    import torch

    from labs.core.models import models
    from labs.finetune import strategies

    plain, tokenizer = models.load_for_classification(BERT.name, 2, seed=0)
    plain.eval()
    batch = tokenizer("An absolutely wonderful evening, the best film of the year.", return_tensors="pt")

    def predict(model):
        def once():
            with torch.no_grad():
                model(**batch)
        return once

    lora = strategies.apply_strategy(models.load_for_classification(BERT.name, 2, seed=0)[0], "lora_r8").eval()
    for name, param in lora.named_parameters():  # as if trained: B no longer zero
        if "lora_B" in name:
            torch.nn.init.normal_(param, std=0.02)
    ours, theirs = interleaved_medians(predict(lora), predict(plain), repeats=15)
    rows.append(("LoRA r8 unmerged, one prediction (s)", "the plain model", ours, theirs, "≈ 1.0×"))
    merged = lora.merge_and_unload().eval()
    ours, theirs = interleaved_medians(predict(merged), predict(plain), repeats=15)
    rows.append(("LoRA r8 merged (merge_and_unload), one prediction (s)", "the plain model", ours, theirs, "1.00×"))
    adapters = strategies.apply_strategy(models.load_for_classification(BERT.name, 2, seed=0)[0], "adapter_64").eval()
    ours, theirs = interleaved_medians(predict(adapters), predict(plain), repeats=15)
    rows.append(("bottleneck adapters m=64, one prediction (s)", "the plain model", ours, theirs, "(extra layers)"))


def bench_data_efficiency(rows: list) -> None:
    """The default data-efficiency curve (real MiniLM, sentiment, 6 sizes × pre-trained and scratch) as the shared job
    three students follow at once: its wall time and the number of curves trained (1)."""
    import threading

    from labs.core.models import models
    from labs.core.work.jobs import JOBS
    from labs.finetune import data_efficiency as de

    plan, data = de.check(models.MINILM_NAME, "sentiment", None, 0)
    runs, seen, started = JOBS.stats["runs"], [[], [], []], time.perf_counter()
    threads = [threading.Thread(target=lambda s=s: s.extend(de.ticket(plan, data))) for s in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    result = de.curve_json(plan, data, [e for e in seen[0] if isinstance(e, de.RunResult)])
    points = ", ".join(f"{p['size']}: {p['pretrained']:.0%}/{p['scratch']:.0%}" for p in result["points"])
    rows.append((f"data_efficiency curve, 3 students, {JOBS.stats['runs'] - runs} job (s); pre/scratch {points}", "",
                 seconds, None, "one job; ≤ 3 min"))


def main() -> int:
    import torch

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    only = sys.argv[1:]  # e.g. `python -m tests.benchmarks finetune_tasks`: only the benches named
    fullsize.build(WORK)
    rows: list = []
    for bench in (bench_fill_mask, bench_next_token, bench_inside, bench_attention, bench_embeddings, bench_finetune,
                  bench_finetune_tasks, bench_lora_merge, bench_data_efficiency):
        if not only or bench.__name__.removeprefix("bench_") in only:
            bench(rows)
    print(f"\n| {'what':52} | {'baseline':22} | {'LM Lab':>9} | {'baseline':>9} | {'ratio':>6} | target |")
    print(f"|{'-' * 54}|{'-' * 24}|{'-' * 11}|{'-' * 11}|{'-' * 8}|--------|")
    for what, baseline, ours, theirs, target in rows:
        ratio = f"{ours / theirs:.2f}×" if theirs else ""
        theirs_s = f"{theirs:.4f}" if theirs else ""
        print(f"| {what:52} | {baseline:22} | {ours:9.4f} | {theirs_s:>9} | {ratio:>6} | {target} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
