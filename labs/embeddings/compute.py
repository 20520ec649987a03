"""Embeddings: the same word, different vectors. A word's vector in several sentences, at every
layer, from one padded forward pass (labs.core.work.lm.hidden_states); its static vector (the word's own row
of the input embedding matrix: word2vec's view); their cosine similarities, a 2-D PCA map, and
mean-pooled sentence vectors.

Every family serves: an encoder (masked LM or not) and an encoder-decoder's encoder (T5) read both
sides of the word; a causal LM reads its left only. A handler or the API resolves the model once
(`check_model`) and passes the loaded model to `run`."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from labs.core.errors import BadInput, check_int, check_text
from labs.core.models import models
from labs.core.work import lm

EXAMPLE = """We sat on the river bank and watched the boats. | river
The bank was flooded after the heavy rain. | river
I made a deposit at the bank this morning. | money
The bank approved my loan yesterday. | money"""
CAUSAL_EXAMPLE = "The bank was flooded.\nThe bank was robbed."
MIN_SENTENCES, MAX_SENTENCES = 2, 10
MAX_TOKENS = 128  # per sentence: a long sentence is plenty to see senses separate
# Every family serves, those that read both sides of the word first (the dropdown's order).
FAMILIES = ("masked", "encoder", "seq2seq", "causal")
BOTH_SIDES = ("masked", "encoder", "seq2seq")
LEFT_ONLY = ("causal",)
# Which stack the vectors come from: an encoder-decoder gives its encoder's, a causal LM its decoder's.
VECTORS_FROM = {"masked": "encoder", "encoder": "encoder", "seq2seq": "encoder", "causal": "decoder"}
# Left out when the shared word is found for the student: "the" is shared but says nothing.
STOPWORDS = frozenset("a an the and or but of to in on at by for with from is was were be been are it its this "
                      "that i you he she we they my your his her our their".split())


@dataclass
class Sentence:
    text: str
    label: str
    tokens: list[str]
    positions: list[int]  # the word's pieces in `tokens`


@dataclass
class EmbeddingsRun:
    model: str
    source: str
    family: str  # models.FAMILIES: an encoder-decoder's vectors are its encoder's
    word: str
    word_pieces: list[str]
    sentences: list[Sentence]
    static: np.ndarray  # [n, hidden]: the same row(s) of the input embedding matrix for every sentence
    by_layer: np.ndarray  # [layers + 1, n, hidden]: the word's vector at every layer (0 = embeddings)
    pooled: np.ndarray  # [n, hidden]: mean over each sentence's tokens at the last layer

    @property
    def num_layers(self) -> int:
        return self.by_layer.shape[0] - 1

    @property
    def vectors_from(self) -> str:
        """"encoder" (an encoder, or an encoder-decoder's encoder) or "decoder" (a causal LM)."""
        return VECTORS_FROM[self.family]

    @property
    def layer0_is_static(self) -> bool:
        """Is layer 0 the static vector itself in every sentence? Yes where no position vector is added
        to the token's embedding (T5's relative positions, Llama's rotary ones act inside attention)."""
        return bool(np.allclose(self.by_layer[0], self.static, rtol=1e-5, atol=1e-6))

    @property
    def reads(self) -> str:
        """What a word's vector can depend on: "both sides" of it, or its "left only"."""
        return "left only" if self.family in LEFT_ONLY else "both sides"


def parse_sentences(text) -> list[tuple[str, str]]:
    """One sentence per line, optionally followed by " | label"."""
    text = check_text(text, "one sentence per line, e.g. We sat on the river bank. | river", what="sentences")
    found = []
    for line in text.splitlines():
        sentence, _, label = line.partition("|")
        if sentence.strip():
            found.append((sentence.strip(), label.strip()))
    if not MIN_SENTENCES <= len(found) <= MAX_SENTENCES:
        raise BadInput(f"Type {MIN_SENTENCES} to {MAX_SENTENCES} sentences, one per line; you typed {len(found)}.")
    return found


def words_of(sentence: str) -> list[str]:
    return re.findall(r"\w+", sentence.lower())


def shared_word(sentences: list[str]) -> str:
    """The first word of the first sentence that every sentence has (not a stop word)."""
    shared = set.intersection(*(set(words_of(s)) for s in sentences)) - STOPWORDS
    for word in words_of(sentences[0]):
        if word in shared:
            return word
    raise BadInput("No word is shared by all the sentences. Type the word to compare, or make every sentence use it.")


def word_span(sentence: str, word: str, number: int) -> tuple[int, int]:
    match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", sentence, flags=re.IGNORECASE)
    if match is None:
        raise BadInput(f"Sentence {number} ({sentence[:60]!r}) does not contain the word {word!r}.")
    return match.span()


def tokenize_with_word(loaded: models.LoadedModel, sentence: str, word: str, number: int):
    """The sentence's ids and the positions of the pieces that make up the word's first occurrence."""
    start, end = word_span(sentence, word, number)
    encoded = loaded.tokenizer(sentence, return_offsets_mapping=True)
    ids = lm.check_length(encoded["input_ids"], min(MAX_TOKENS, loaded.max_tokens), f"Sentence {number}")
    positions = [i for i, (a, b) in enumerate(encoded["offset_mapping"]) if b > a and a < end and b > start]
    return ids, positions


def as_mid_sentence(tokenizer, word: str) -> str:
    """The word as it is written in the middle of a sentence: with a leading space for byte-level BPE
    (GPT-2's "Ġ" marks it: " king" is one token, "king" another), as typed for WordPiece or SentencePiece."""
    return " " + word if "Ġ" in "".join(tokenizer.convert_ids_to_tokens(tokenizer(" a")["input_ids"])) else word


def static_vector(loaded: models.LoadedModel, word: str) -> np.ndarray:
    """The word's own row(s) of the input embedding matrix, averaged over its pieces: one vector for
    the word whatever the sentence (byte-level BPE: the word with a leading space, as mid-sentence)."""
    import torch

    ids = loaded.tokenizer(as_mid_sentence(loaded.tokenizer, word), add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        rows = loaded.model.get_input_embeddings().weight[ids]
    return rows.float().mean(dim=0).cpu().numpy()


def check_model(model, *families: str) -> models.LoadedModel:
    """Resolve a model name once, at the edge (a handler, the API), as one of `families` (default: every
    family this lab serves); a model of another family gets a one-sentence BadInput. A loaded model
    passes through without another look-up."""
    return models.load(model, *(families or FAMILIES))


def check_inputs(sentences_text, word="") -> tuple[list[tuple[str, str]], str]:
    """The (sentence, label) pairs and the word to compare (typed, or the one every sentence shares)."""
    pairs = parse_sentences(sentences_text)
    word = check_text(word, "bank", max_chars=50, what="word", allow_empty=True) or shared_word([s for s, _ in pairs])
    if len(word.split()) > 1:
        raise BadInput("Type one word to compare (no spaces), for example: bank")
    return pairs, word


def run(loaded: models.LoadedModel, sentences_text, word="") -> EmbeddingsRun:
    """The word's vectors in every sentence at every layer. `loaded`: what check_model returns; for an
    encoder-decoder, its encoder's hidden states (lm.hidden_states)."""
    pairs, word = check_inputs(sentences_text, word)
    loaded = check_model(loaded)
    texts = [s for s, _ in pairs]
    encoded = [tokenize_with_word(loaded, s, word, i + 1) for i, s in enumerate(texts)]
    states = lm.hidden_states(loaded, [ids for ids, _ in encoded])  # one padded forward pass
    by_layer = np.stack([s[:, positions].mean(axis=1) for s, (_, positions) in zip(states, encoded)], axis=1)
    pooled = np.stack([s[-1].mean(axis=0) for s in states])
    static = np.tile(static_vector(loaded, word), (len(texts), 1))
    first = encoded[0]
    word_pieces = models.readable_tokens(loaded.tokenizer, [first[0][p] for p in first[1]])
    sentences = [Sentence(t, label, models.readable_tokens(loaded.tokenizer, ids), positions)
                 for (t, label), (ids, positions) in zip(pairs, encoded)]
    return EmbeddingsRun(loaded.name, loaded.source, loaded.family, word, word_pieces, sentences, static, by_layer,
                         pooled)


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """Every pair's cosine similarity (float64, so identical vectors give 1.0)."""
    v = vectors.astype(np.float64)
    unit = v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)
    return np.clip(unit @ np.swapaxes(unit, -1, -2), -1.0, 1.0)


def projection(vectors: np.ndarray) -> np.ndarray:
    """The vectors on their first two principal components (PCA by SVD of the centred vectors); the
    sign of each axis is fixed so that the first point's coordinate is not negative."""
    centred = vectors.astype(np.float64) - vectors.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    coords = np.zeros((len(vectors), 2))
    k = min(2, len(s))
    coords[:, :k] = u[:, :k] * s[:k]
    signs = np.where(coords[0] < 0, -1.0, 1.0)
    return coords * signs


def sense_means(similarity: np.ndarray, labels: list[str]) -> tuple[float | None, float | None]:
    """Mean similarity of same-label pairs and of different-label pairs (None when there are none)."""
    same, different = [], []
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            if labels[i] and labels[j]:
                (same if labels[i] == labels[j] else different).append(similarity[i, j])
    return (float(np.mean(same)) if same else None, float(np.mean(different)) if different else None)


def check_layer(layer, num_layers: int) -> int:
    layer = check_int(layer, f"The layer (0 to {num_layers}, or -1 for the last)", -1, num_layers)
    return num_layers if layer == -1 else layer


def rounded(array: np.ndarray) -> list:
    return np.round(array, 6).tolist()


def to_json(r: EmbeddingsRun, layer: int) -> dict:
    """A run as the `embeddings` API returns it, with the map at `layer` (checked; -1 = the last)."""
    layer = check_layer(layer, r.num_layers)
    return {"model": r.model, "source": r.source, "family": r.family, "vectors_from": r.vectors_from,
            "reads": r.reads, "word": r.word, "num_layers": r.num_layers, "layer": layer,
            "sentences": [{"text": s.text, "label": s.label, "tokens": s.tokens, "positions": s.positions}
                          for s in r.sentences],
            "static_similarity": rounded(cosine_matrix(r.static)),
            "similarity_by_layer": rounded(cosine_matrix(r.by_layer)),
            "projection": rounded(projection(r.by_layer[layer])),
            "sentence_similarity": rounded(cosine_matrix(r.pooled))}


def embeddings_json(sentences: str, word: str = "", model: str = "", layer: int = -1) -> dict:
    """The `embeddings` API: the word's vectors compared across sentences, at every layer (an
    encoder-decoder's: its encoder's). Typed input is checked before the model is looked up, once."""
    check_inputs(sentences, word)
    return to_json(run(check_model(model), sentences, word), layer)
