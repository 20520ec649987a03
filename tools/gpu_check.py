"""The GPU path measured in one run, for a short lease on a GPU machine (docs/serving.md, "On a GPU"):

    python -m tools.gpu_check --out DIR          # writes DIR/gpu_check.md and DIR/gpu_check.json

1. The card: its name and memory, torch and CUDA.
2. Equal: each shared pass of labs/core/work/lm.py (next-token logits, masked-LM logits, attention weights,
   hidden states, every token's log-probability) on models of the real sizes (bert-base, gpt2; random weights,
   seeded: the Hub is out of reach there too), computed on the CPU and on the GPU from the same weights: the
   largest difference, within TOLERANCE, and the top-10 next tokens the same.
3. Faster: one padded batch of 1, 16 and 64 requests through the same runners, CPU and GPU, medians of 5.
4. A fine-tune: the Fine-tune lab's default run (training.run_experiment) on a BERT-mini-sized model, once on the
   CPU and once on the GPU: its accuracy before and after, and its seconds.

It needs LM Lab's compute modules and what they import (transformers, peft, cachetools), not Gradio; the class's
load test (`python -m tests.loadtest`) needs the app's own packages and is run after it where they are. A
tokenizer is trained on the spot on the built-in reviews (the offline packages' vocabularies may be absent)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

TOLERANCE = 1e-3  # float32 on both; the GPU adds in another order (TF32 is off for matmuls by default)
DEVICES = ("cpu", "cuda")  # --devices cpu,cpu runs every step here, on the CPU twice (a rehearsal of the script)
ROOT = Path(__file__).resolve().parent.parent


def build_models(folder: Path) -> dict[str, Path]:
    """bert-base- and gpt2-sized models and a BERT-mini-sized encoder, one tokenizer trained on the reviews."""
    import csv

    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        BertModel,
        GPT2Config,
        GPT2LMHeadModel,
        PreTrainedTokenizerFast,
    )

    texts = [row["text"] for row in csv.DictReader((ROOT / "assets" / "sentiment.csv").open())]
    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(texts, vocab_size=3000)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=wordpiece._tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", model_max_length=512)
    made = {"bert-base-size": lambda: BertForMaskedLM(BertConfig()),
            "gpt2-size": lambda: GPT2LMHeadModel(GPT2Config()),
            "bert-mini-size": lambda: BertModel(BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                                           intermediate_size=1024))}
    folders = {}
    for name, make in made.items():
        torch.manual_seed(0)
        folders[name] = folder / name
        make().save_pretrained(folders[name])
        tokenizer.save_pretrained(folders[name])
    return folders


def on(copy: int, name: str):
    """The registry model `name` loaded on DEVICES[copy] (each device's copy under its own registry name)."""
    from labs.core.models import models

    os.environ["LAB_DEVICE"] = DEVICES[copy]
    return models.load(f"{name}-{copy}")


def passes(loaded) -> dict:
    """Each shared pass on one sentence (its outputs as numpy arrays)."""
    from labs.core.work import lm

    ids = loaded.tokenizer("The bank by the river was quiet on a warm evening.")["input_ids"]
    if loaded.family == "causal":
        return {"next-token logits": lm.next_token_logits(loaded, ids), "log-probabilities": lm.token_logprobs(loaded, ids),
                "attention": lm.attentions(loaded, ids), "hidden states": lm.hidden_states(loaded, [ids])[0]}
    masked = ids[:4] + [loaded.tokenizer.mask_token_id] + ids[5:]
    return {"masked-LM logits": lm.mlm_logits(loaded, masked, [4]), "attention": lm.attentions(loaded, ids),
            "hidden states": lm.hidden_states(loaded, [ids])[0]}


def equal(rows: list, report: dict) -> None:
    import numpy as np

    for name in ("bert-base-size", "gpt2-size"):
        cpu, gpu = passes(on(0, name)), passes(on(1, name))
        for kind in cpu:
            diff = float(np.max(np.abs(np.asarray(cpu[kind], dtype=np.float64) - np.asarray(gpu[kind], np.float64))))
            same_top = ""
            if kind == "next-token logits":
                same_top = str(list(np.argsort(-cpu[kind])[:10]) == list(np.argsort(-gpu[kind])[:10]))
            rows.append(f"| {name} | {kind} | {diff:.2e} | {'yes' if diff <= TOLERANCE else 'NO'} | {same_top} |")
            report.setdefault("equal", []).append({"model": name, "pass": kind, "max_abs_diff": diff})


def speed(rows: list, report: dict) -> None:
    import torch

    from labs.core.work import lm

    for name, kind in (("bert-base-size", "mlm"), ("gpt2-size", "next")):
        for batch in (1, 16, 64):
            row = []
            for copy, device in enumerate(DEVICES):
                loaded = on(copy, name)
                ids = loaded.tokenizer("The quick brown fox jumps over the lazy dog near the bank.")["input_ids"]
                items = [(tuple(ids[:-1] + [i % 50 + 100]), (3,)) if kind == "mlm" else tuple(ids[:-1] + [i % 50 + 100])
                         for i in range(batch)]
                run = lm.RUNNERS[kind]
                times = []
                for _ in range(6):
                    started = time.perf_counter()
                    run(loaded, items)
                    if device.startswith("cuda"):
                        torch.cuda.synchronize()
                    times.append(time.perf_counter() - started)
                row.append(statistics.median(times[1:]))
            rows.append(f"| {name} | {kind} | {batch} | {row[0] * 1000:.1f} | {row[1] * 1000:.1f} | {row[0] / row[1]:.1f}× |")
            report.setdefault("speed", []).append({"model": name, "batch": batch, "cpu_s": row[0], "gpu_s": row[1]})


def finetune(rows: list, report: dict) -> None:
    import threading

    from labs.finetune import data as datasets
    from labs.finetune import strategies, training

    for copy, device in enumerate(DEVICES):
        os.environ["LAB_DEVICE"] = device
        s = strategies.check_settings(f"bert-mini-size-{copy}", "full", 5e-5, 3, 16, 200, 0)
        started = time.perf_counter()
        [result] = [e for e in training.run_experiment(s, datasets.builtin_data(), False, threading.Event())
                    if isinstance(e, training.RunResult)]
        seconds = time.perf_counter() - started
        rows.append(f"| {device} | {result.accuracy_before:.1%} | {result.accuracy_after:.1%} | {seconds:.1f} |")
        report.setdefault("finetune", []).append({"device": device, "before": result.accuracy_before,
                                                  "after": result.accuracy_after, "seconds": seconds})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=".", help="the folder for gpu_check.md and gpu_check.json")
    parser.add_argument("--devices", default="cpu,cuda", help="the two devices compared (cpu,cpu: a rehearsal)")
    args = parser.parse_args()
    global DEVICES
    DEVICES = tuple(args.devices.split(","))
    import torch

    if "cuda" in DEVICES and not torch.cuda.is_available():
        print("No CUDA here: this check runs on a machine with a GPU (or rehearse it: --devices cpu,cpu).")
        return 2
    work = Path(tempfile.mkdtemp(prefix="lmlab-gpu-"))
    folders = build_models(work)
    copies = [work / f"{name}-{copy}" for name in folders for copy in (0, 1)]  # one registry name per device
    for name, folder in folders.items():
        for copy in (0, 1):
            (work / f"{name}-{copy}").symlink_to(folder)
    os.environ.update(HF_HUB_OFFLINE="1", LAB_EXTRA_MODELS=",".join(str(c) for c in copies))
    cuda = torch.cuda.is_available()
    card = {"gpu": torch.cuda.get_device_name(0) if cuda else "none (a rehearsal)", "torch": torch.__version__,
            "memory_gb": round(torch.cuda.mem_get_info()[1] / 1e9, 1) if cuda else 0, "cuda": torch.version.cuda}
    report, lines = {"card": card}, [f"GPU: {card['gpu']}, {card['memory_gb']} GB; torch {card['torch']}, CUDA "
                                     f"{card['cuda']}", "", "| model | pass | max abs diff | within 1e-3 | same top-10 |",
                                     "|---|---|---|---|---|"]
    equal(lines, report)
    lines += ["", "| model | pass | batch | CPU ms | GPU ms | GPU faster |", "|---|---|---|---|---|---|"]
    speed(lines, report)
    lines += ["", "| fine-tune (BERT-mini size, 3 epochs, 200 reviews) | before | after | seconds |", "|---|---|---|---|"]
    finetune(lines, report)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.md").write_text("\n".join(lines) + "\n")
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
