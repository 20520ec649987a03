"""Models of the real sizes with random weights, for the benchmarks and the load test: latency does
not depend on the weight values, and the Hub (with the real weights) is unreachable here."""

from __future__ import annotations

from pathlib import Path


def build(folder: Path) -> tuple[Path, Path]:
    """A `bert-base-uncased`-sized masked LM (with the real uncased vocabulary) and a `gpt2`-sized
    causal LM in `folder`; returns their folders (whose names are their registry names)."""
    import torch
    from transformers import (
        AutoTokenizer,
        BertConfig,
        BertForMaskedLM,
        GPT2Config,
        GPT2LMHeadModel,
    )

    from labs.core.models.models import MINILM_NAME, offline_models

    bert, gpt2 = folder / "bert-base-size", folder / "gpt2-size"
    if (gpt2 / "config.json").exists():
        return bert, gpt2
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(next(c for c in offline_models() if c.name == MINILM_NAME).location)
    BertForMaskedLM(BertConfig()).save_pretrained(bert)  # bert-base-uncased's shape, 30,522-token vocab
    tokenizer.save_pretrained(bert)
    gpt_tok = AutoTokenizer.from_pretrained(bert)  # any tokenizer: only the ids' count matters here
    GPT2LMHeadModel(GPT2Config(vocab_size=len(gpt_tok))).save_pretrained(gpt2)
    gpt_tok.save_pretrained(gpt2)
    return bert, gpt2


def build_defaults(folder: Path) -> list[Path]:
    """Every Hub default at its real size (random weights): bert-base-uncased, distilbert-base-uncased,
    gpt2, distilgpt2 and BERT-mini (google/bert_uncased_L-4_H-256_A-4), for the memory measurement."""
    import torch
    from transformers import (
        AutoTokenizer,
        BertConfig,
        BertModel,
        DistilBertConfig,
        DistilBertForMaskedLM,
        GPT2Config,
        GPT2LMHeadModel,
    )

    bert, gpt2 = build(folder)
    more = {"distilbert-size": lambda n: DistilBertForMaskedLM(DistilBertConfig(vocab_size=n)),
            "distilgpt2-size": lambda n: GPT2LMHeadModel(GPT2Config(vocab_size=n, n_layer=6)),
            "bert-mini-size": lambda n: BertModel(BertConfig(vocab_size=n, hidden_size=256, num_hidden_layers=4,
                                                             num_attention_heads=4, intermediate_size=1024))}
    tokenizer = AutoTokenizer.from_pretrained(bert)
    torch.manual_seed(0)
    for name, make in more.items():
        if not (folder / name / "config.json").exists():
            make(len(tokenizer)).save_pretrained(folder / name)
            tokenizer.save_pretrained(folder / name)
    return [bert, folder / "distilbert-size", gpt2, folder / "distilgpt2-size", folder / "bert-mini-size"]
