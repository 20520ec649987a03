"""The course as the panels of Embeddings (#55: word2vec and GloVe trained live, ELMo in miniature) quote it. Part of the one table of the course's words
(labs/core/ui/course_quotes.py adds these entries to QUOTES), kept apart only for size; tests/test_course_quotes.py
checks each verbatim under its heading."""

from __future__ import annotations

from labs.core.ui.course_documents import LECTURE, STRATEGIES, SUMMARY, TEXTBOOK, Quote  # noqa: F401

W2V = '20.1.1 Word2Vec and GloVe: A Brief Recap'
ELMO = '20.1.3 ELMo: Embeddings from Language Models'
QUOTES: tuple[Quote, ...] = (
    Quote('w2v_cbow', TEXTBOOK, W2V, '- Continuous Bag-of-Words (CBOW): Predicts a target word from its surrounding '
          'context words.'),
    Quote('w2v_skipgram', TEXTBOOK, W2V, '- Skip-gram: Predicts surrounding context words from a target word.'),
    Quote('w2v_glove', TEXTBOOK, W2V, 'GloVe (Pennington et al., 2014) took a different approach, directly '
          'factorizing the global word-word co-occurrence matrix. The objective minimizes:'),
    Quote('w2v_objective', TEXTBOOK, W2V, '$$J = \\sum_{i,j=1}^{V} f(X_{ij}) \\left( \\mathbf{w}_i^T '
          '\\tilde{\\mathbf{w}}_j + b_i + \\tilde{b}_j - \\log X_{ij} \\right)^2$$'),
    Quote('elmo_bilstm', TEXTBOOK, ELMO, 'ELMo uses a two-layer bidirectional LSTM language model. The forward LSTM '
          'processes the sentence left-to-right, and the backward LSTM processes it right-to-left.'),
    Quote('elmo_formula', TEXTBOOK, ELMO, '$$\\mathbf{ELMo}_k^{task} = \\gamma^{task} \\sum_{j=0}^{L} s_j^{task} '
          '\\mathbf{h}_{k,j}$$'),
    Quote('elmo_concatenates', TEXTBOOK, '20.2.1 The Key Insight: Bidirectional Context',
          'Even ELMo, despite being "bidirectional," merely concatenates independently trained left-to-right and '
          'right-to-left models. BERT trains a single model that can attend to context on both sides '
          'simultaneously.'),
)
