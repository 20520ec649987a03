"""Fine-tune, trying a task model on new input: a model trained here (by run id) or a fully fine-tuned
Hub task model (distilbert-base-cased-distilled-squad, dslim/bert-base-NER). Returns what the task
views draw: segment ids for pairs, word pieces with their labels for NER (continuation pieces marked),
start and end probabilities per context token and the chosen span for QA. Also the encoding of a
training example as the loss sees it (the `/predict_task` API)."""

from __future__ import annotations

from labs.core.errors import BadInput, check_text
from labs.core.models import models
from labs.finetune import tasks
from labs.finetune.training import kept_model

EXAMPLES = {"sentiment": ("An absolutely wonderful evening, I loved it.", ""),
            "pair": ("Anna bought a new car yesterday.", "Yesterday, Anna purchased a new car."),
            "ner": ("Maria Okonkwo flew from Washington to Ljubljana to meet Zalando.", ""),
            "qa": ("Where does Tomasz live?",
                   "Kwame was born in Oslo in 1957. Today Kwame works for Nokia as a pilot. Kwame's brother "
                   "Tomasz lives in Lisbon.")}


def resolve(task: str, run_id: str | None, model: str | None):
    """(model, tokenizer, labels, name) from a run of this task or a registry task model."""
    if model:
        loaded = models.require_trained_head(models.load(model, "encoder", "masked", head=tasks.HEADS[task]))
        config = loaded.model.config
        return loaded.model, loaded.tokenizer, [config.id2label[i] for i in range(len(config.id2label))], loaded.name
    trained, tokenizer, labels, trained_task = kept_model(run_id)
    if trained_task != task:
        raise BadInput(f"That run trained the {trained_task} task, not {task}: run {task} first or pick its task.")
    return trained, tokenizer, labels, "your fine-tuned model"


def predict_task(task: str = "ner", text: str = "", text_b: str = "", run_id: str = "", model: str = "") -> dict:
    """The `/predict_task` API: run a trained (run_id) or Hub task model (model) on new input. For pairs
    text and text_b are the two sentences; for QA text is the question and text_b the context."""
    import torch

    task = tasks.check_task(task)
    text = check_text(text, EXAMPLES[task][0], what="text")
    if task in ("pair", "qa"):
        text_b = check_text(text_b, EXAMPLES[task][1], what="second text" if task == "pair" else "context")
    net, tokenizer, labels, name = resolve(task, run_id, model)
    device = next(net.parameters()).device
    if task in ("sentiment", "pair"):
        enc = tokenizer(text, text_b or None, truncation=True, max_length=tasks.MAX_PAIR_LENGTH, return_tensors="pt")
        with torch.no_grad():
            probs = torch.softmax(net(**enc.to(device)).logits[0].float(), -1).tolist()
        segments = enc["token_type_ids"][0].tolist() if "token_type_ids" in enc else [0] * enc["input_ids"].shape[1]
        return {"task": task, "model": name, "tokens": models.readable_tokens(tokenizer, enc["input_ids"][0]),
                "segments": segments, "probs": dict(zip(labels, probs))}
    if task == "ner":
        return _ner(net, tokenizer, labels, text) | {"task": task, "model": name}
    return _qa(net, tokenizer, text, text_b) | {"task": task, "model": name}


def _ner(net, tokenizer, labels: list[str], text: str) -> dict:
    """Each word piece with its predicted label; a word's label is its first piece's (the pipeline's
    aggregation_strategy="first"); entities grouped from the word labels."""
    import torch

    enc = tokenizer(text, truncation=True, max_length=256, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    word_ids = enc.word_ids(0)
    with torch.no_grad():
        probs = torch.softmax(net(**enc.to(next(net.parameters()).device)).logits[0].float(), -1)
    tokens = models.readable_tokens(tokenizer, enc["input_ids"][0])
    pieces, words, previous = [], [], None
    for i, w in enumerate(word_ids):
        first = w is not None and w != previous
        label = labels[int(probs[i].argmax())]
        pieces.append({"token": tokens[i], "label": label if first else None, "first": first, "special": w is None,
                       "prob": float(probs[i].max())})
        if first:
            words.append({"word": text[offsets[i][0]:offsets[i][1]], "start": offsets[i][0], "end": offsets[i][1],
                          "label": label})
        elif w is not None:
            words[-1]["end"] = offsets[i][1]
            words[-1]["word"] = text[words[-1]["start"]:offsets[i][1]]
        previous = w
    entities = [{"entity_group": kind, "start": words[a]["start"], "end": words[b]["end"],
                 "word": text[words[a]["start"]:words[b]["end"]]}
                for kind, a, b in tasks.entity_spans([w["label"] for w in words])]
    return {"pieces": pieces, "words": words, "entities": entities}


def _qa(net, tokenizer, question: str, context: str) -> dict:
    """Start and end probabilities over the context's tokens and the best span (start ≤ end, at most
    MAX_ANSWER_TOKENS tokens)."""
    import torch

    enc = tokenizer(question, context, truncation="only_second", max_length=384, return_offsets_mapping=True,
                    return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    sequence_ids = enc.sequence_ids(0)
    with torch.no_grad():
        out = net(**enc.to(next(net.parameters()).device))
    start, end, score = tasks.best_span(out.start_logits[0], out.end_logits[0], sequence_ids)
    context_idx = [i for i, s in enumerate(sequence_ids) if s == 1]
    p_start = torch.softmax(out.start_logits[0, context_idx].float(), -1).tolist()
    p_end = torch.softmax(out.end_logits[0, context_idx].float(), -1).tolist()
    tokens = models.readable_tokens(tokenizer, enc["input_ids"][0])
    return {"tokens": [tokens[i] for i in context_idx], "start_probs": p_start, "end_probs": p_end,
            "start": context_idx.index(start), "end": context_idx.index(end), "score": score,
            "answer": context[offsets[start][0]:offsets[end][1]],
            "answer_start": offsets[start][0], "answer_end": offsets[end][1]}


def training_view(task: str, tokenizer, row) -> dict:
    """A training example as the loss sees it: pieces with segment ids (pair), labels with -100 on
    continuation pieces and special tokens (NER), or the answer's start and end tokens (QA)."""
    encoded = tasks.EncodedTaskRows(task, tokenizer, [row], "cpu")
    tokens = models.readable_tokens(tokenizer, encoded.ids[0])
    if task == "pair":
        return {"tokens": tokens, "segments": encoded.segments[0]}
    if task == "ner":
        return {"tokens": tokens, "labels": [y if y == tasks.IGNORE else tasks.NER_LABELS[y] for y in encoded.labels[0]]}
    return {"tokens": tokens, "start": encoded.labels[0][0], "end": encoded.labels[0][1],
            "sequence_ids": encoded.sequence_ids[0]}
