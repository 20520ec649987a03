"""The course on words and tokens, as the labs quote it: static and contextual vectors, pooling and probes
(Embeddings), a word-level vocabulary, the unigram tokenizer and a model's own tokenizer (Tokens), n-grams against a
neural LM (Next token). Part of the one table of the course's words (labs/core/ui/course_quotes.py adds these
entries to QUOTES), kept apart only for size; tests/test_course_quotes.py checks each verbatim under its heading."""

from __future__ import annotations

from labs.core.ui.course_documents import LECTURE, STRATEGIES, TEXTBOOK, Quote

QUOTES = (
    # Embeddings: static vectors, pooling, probes
    Quote('static_analogy', TEXTBOOK, '20.1.1 Word2Vec and GloVe: A Brief Recap',
          'Both approaches learn embeddings by optimizing a prediction objective over a large unlabeled corpus. '
          'The resulting vectors capture remarkable semantic relationships---the famous example being:'),
    Quote('static_formula', TEXTBOOK, '20.1.1 Word2Vec and GloVe: A Brief Recap',
          '$$\\text{vec}(\\text{"king"}) - \\text{vec}(\\text{"man"}) + \\text{vec}(\\text{"woman"}) \\approx '
          '\\text{vec}(\\text{"queen"})$$'),
    Quote('static_static', TEXTBOOK, '20.1.1 Word2Vec and GloVe: A Brief Recap',
          'Both Word2Vec and GloVe produce a single fixed vector per word type. This is their fundamental '
          'limitation.'),
    Quote('static_bank_0', TEXTBOOK, '20.1.2 The Polysemy Problem',
          'I deposited money at the bank.'),
    Quote('static_bank_1', TEXTBOOK, '20.1.2 The Polysemy Problem',
          'We had a picnic on the river bank.'),
    Quote('elmo_layers', TEXTBOOK, '20.1.3 ELMo: Embeddings from Language Models',
          'syntax at lower layers, semantics at higher layers'),
    Quote('pooling_textbook', TEXTBOOK, '20.8.3 The [CLS] Token',
          'The [CLS] token representation is often used as a "sentence embedding." However, research (Reimers and '
          'Gurevych, 2019) has shown that the mean of all token embeddings sometimes produces better sentence '
          'representations, especially for tasks like semantic similarity.'),
    Quote('pooling_lecture', LECTURE, 'Special Tokens: Purpose and Usage',
          'Output of [CLS]: Sentence embedding for sentiment classification'),
    Quote('probes_0', TEXTBOOK, '20.8.1 What Do Different Layers Capture?',
          "Research (Jawahar et al., 2019; Tenney et al., 2019) has shown that BERT's layers encode a hierarchy of "
          'linguistic information:'),
    Quote('probes_1', TEXTBOOK, '20.8.1 What Do Different Layers Capture?',
          '- Lower layers (1--4): Surface-level features---part-of-speech tags, simple syntax.'),
    Quote('probes_2', TEXTBOOK, '20.8.1 What Do Different Layers Capture?',
          '- Middle layers (5--8): Syntactic structure---parse trees, dependency relations.'),
    Quote('probes_3', TEXTBOOK, '20.8.1 What Do Different Layers Capture?',
          '- Upper layers (9--12): Semantic features---coreference, entity types, semantic roles.'),
    # Tokens: why a word-level vocabulary fails (labs/tokens/word_level.py)
    Quote('word_level_novel', STRATEGIES, 'Word structure and subword models',
          'All *novel* words seen at test time are mapped to a single UNK.'),
    *(Quote(f'word_level_{word.lower()}', STRATEGIES, 'Word structure and subword models', word)
      for word in ('hat', 'learn', 'taaaaasty', 'laern', 'Transformerify')),
    Quote('word_level_explosion', TEXTBOOK, '20.3.1 Why Subword Tokenization?',
          '- Vocabulary explosion: Natural language has an enormous number of word forms (inflections, compounds, '
          'neologisms). A word-level vocabulary must be extremely large or suffer from many out-of-vocabulary (OOV) '
          'tokens.'),
    Quote('word_level_morphology', TEXTBOOK, '20.3.1 Why Subword Tokenization?',
          '- Morphological blindness: "run," "running," "runner," and "runs" are treated as completely unrelated '
          'tokens.'),
    Quote('unigram_viterbi', TEXTBOOK, '20.3.4 SentencePiece',
          'The unigram approach starts with a large vocabulary and iteratively removes tokens that least reduce the '
          'overall likelihood:\n$$\\mathcal{L} = \\sum_{i=1}^{|D|} \\log \\left( \\sum_{\\mathbf{x} \\in S(x_i)} '
          '\\prod_{j=1}^{|\\mathbf{x}|} p(x_j) \\right)$$\nwhere $S(x_i)$ is the set of all possible segmentations of '
          'sentence $x_i$.\nThe unigram approach is fundamentally different from BPE. While BPE is greedy (always merge '
          'the most frequent pair), the unigram model is probabilistic: it assigns a probability to each token and '
          'finds the most likely segmentation of a given sentence using the Viterbi algorithm.'),
    # Next token: n-grams against a neural LM (labs/next_token/ngram.py)
    Quote('ngram_vs_llm', STRATEGIES, 'Large language models', ' - Is trained on *counts computed from lots of text*\n'
          '- Large language models are similar and different:\n - Assigns probabilities to sequences of words\n'
          ' - Generate text by sampling possible next words\n - ***Are trained by learning to guess the next word***'),
    # Tokens: a model needs its own tokenizer (labs/tokens/mismatch.py)
    Quote('pitfall_title', LECTURE, 'Common Pitfalls in Fine-tuning', 'Pitfall 6: Forgetting Preprocessing'),
    Quote('pitfall_match', LECTURE, 'Common Pitfalls in Fine-tuning', '- Tokenization must match pre-training'),
    Quote('pitfall_solution', LECTURE, 'Common Pitfalls in Fine-tuning',
          "- **Solution:** Use model's own tokenizer"),
)
