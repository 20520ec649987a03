"""Everything LM Lab presents as the course's words, in one table: each entry names the document, the slide title or
section heading it stands under, and the text. The heading is a line of the document, as written, and the text is
exactly as written, character for character (LaTeX source and the lecture's "\\$" included). Every lab takes its
quotes from here by id; tests/test_course_quotes.py finds each entry verbatim in ../shared/course/, under its
heading.

A figure that is in none of the documents is never an entry: the app shows it as LM Lab's own computation."""

from __future__ import annotations

from labs.core.ui import course_quotes_choosing as choosing_more
from labs.core.ui import course_quotes_embeddings as embeddings_more
from labs.core.ui import course_quotes_finetune as finetune_more
from labs.core.ui import course_quotes_handout as handout
from labs.core.ui import course_quotes_masks as masks_more
from labs.core.ui import course_quotes_pretraining as pretraining_more
from labs.core.ui import course_quotes_words as words
from labs.core.ui.course_documents import (  # noqa: F401  (the table's names, as the labs and tests use them)
    COURSE_DIR,
    FILES,
    HANDOUT,
    LECTURE,
    STRATEGIES,
    SUMMARY,
    TEXTBOOK,
    Quote,
)

QUOTES = (
    # Choosing a model, "Check the course" (labs/choosing/course.py)
    Quote('course_gpt2_ids', LECTURE, 'Worked Example: Computing $P(\\text{next word})$',
          '[The=50256, cat=3797, sat=3332, on=319]'),
    Quote('course_wordpiece_lecture', LECTURE, 'WordPiece: Subword Units',
          '“unhappiness” → [“un”, “##happiness”]'),
    Quote('course_wordpiece_textbook', TEXTBOOK, '20.3.3 WordPiece',
          '"embeddings" -> ["embed", "##ding", "##s"]'),
    Quote('course_qa_indices', SUMMARY, 'Span Prediction (QA)',
          'Input: [CLS] Where is Paris? [SEP] Paris is in France [SEP]'),
    Quote('course_p_cat', LECTURE, 'Worked Example: Predicting Masked Tokens',
          '$P(\\text{cat}) = 0.73$'),
    Quote('course_p_the', LECTURE, 'Worked Example: Computing $P(\\text{next word})$',
          '$P(\\text{the}) = 0.42$ (highest!)'),
    Quote('course_fifteen_percent', LECTURE, 'Quick Quiz',
          '- 15%: Empirically optimal'),
    Quote('course_chinchilla', TEXTBOOK, '20.13.2 Scaling Laws for Pre-training Data',
          '$$N_{\\text{optimal}} \\approx 20 \\times D$$'),
    Quote('course_llrd_code', TEXTBOOK, '20.7.4 Layer-wise Learning Rate Decay (Discriminative Fine-tuning)',
          'lr = base_lr * (decay ** (num_layers - i))'),
    Quote('course_frozen_layers', TEXTBOOK, '20.7.3 Partial Fine-Tuning (Freezing Lower Layers)',
          '# Only layers 9-11 and the classifier head will be updated'),
    Quote('course_mixed_precision', TEXTBOOK, '20.11.3 Mixed Precision Training',
          'Mixed precision approximately halves memory usage'),
    Quote('course_bert_cost', LECTURE, 'The \\$1 Million Problem',
          'Training BERT from scratch: \\$1M+. Fine-tuning: \\$50-500. Game changer.'),
    Quote('course_bert_hardware', LECTURE, 'BERT Architecture: The Details',
          'Training BERT-base from scratch: 4 days on 64 TPUs'),
    Quote('course_gpt3_time', LECTURE, 'GPT Architecture: The Details',
          '- GPT-3: \\$4.6M (months on 10K GPUs)'),
    Quote('course_mask_five', HANDOUT, "B1: BERT's Masked Language Modeling",
          'If we mask 15% (1 token), and choose position 2 ("brown"):'),
    Quote('course_update_sign', HANDOUT, 'B3: Fine-tuning Mathematics',
          '$$\\theta_{\\text{new}} = \\theta_{\\text{pretrained}} + \\alpha \\cdot \\nabla_{\\theta} '
          'L_{\\text{task}}$$'),
    Quote('course_hidden_index', HANDOUT, "B2: GPT's Autoregressive Modeling",
          'where h_t is the hidden state at position t.'),
    Quote('course_lora_percent', HANDOUT, 'B6: Advanced Concepts',
          'Original model: 340M parameters LoRA rank r=16:'),
    Quote('course_imagenet_labels', LECTURE, 'The Transfer Learning Dream',
          '- Train on 1M images (unsupervised labels)'),
    Quote('course_mask_nan', LECTURE, 'Causal Masking: How It Works',
          '$$\\text{scores}_{\\text{masked}} = \\text{scores} + (1 - M) \\times (-\\infty)$$'),
    Quote('course_mask_reason', LECTURE, 'Masked Language Modeling: The Mathematics',
          'Prevents model from just memorizing [MASK] → word'),
    Quote('course_mask_fine_tune', LECTURE, 'Special Tokens: Purpose and Usage',
          '- Replaced with actual word during fine-tuning'),
    Quote('course_ner_subwords', SUMMARY, 'Token Classification (NER, POS)',
          '- Training: Expand labels to all subword tokens'),
    Quote('course_ner_subwords_eval', SUMMARY, 'Token Classification (NER, POS)',
          '- Evaluation: Use label of first subword'),
    Quote('course_ner_subwords_textbook', TEXTBOOK, '20.6.4 Token Classification (Named Entity Recognition)',
          'Only the first subtoken should receive the NER label; the continuation tokens are typically labeled with a '
          'special ignore index (-100 in PyTorch) so they do not contribute to the loss.'),
    Quote('course_lora_percentage', HANDOUT, 'B6: Advanced Concepts',
          '- Percentage of original: ___%'),
    Quote('course_qa_start', SUMMARY, 'Span Prediction (QA)',
          'Predict start position (index 5: "Paris")'),
    Quote('course_qa_end', SUMMARY, 'Span Prediction (QA)',
          'Predict end position (index 8: "France")'),
    Quote('course_tpu_v3', TEXTBOOK, '20.2.6 Pre-training Data and Compute',
          '16 TPU v3 chips'),
    Quote('prompt_tuning', SUMMARY, 'Fine-tuning Strategies',
          '| Prompt tuning | Soft prompts only | Very large models |'),
    Quote('course_wordpiece_playing', LECTURE, 'WordPiece: Subword Units',
          '- “playing” → [“play”, “##ing”]'),
    Quote('course_wordpiece_covid', LECTURE, 'WordPiece: Subword Units',
          '- “COVID” → [“CO”, “##VI”, “##D”]'),
    Quote('course_wordpiece_washington', TEXTBOOK, '20.6.4 Token Classification (Named Entity Recognition)',
          'the word "Washington" might be tokenized as ["Wash", "##ing", "##ton"]'),
    # Cost & scale, "The course's figures, checked" (labs/cost/course.py)
    Quote('cost_bert', LECTURE, "BERT's Two Pre-training Objectives",
          '- Cost: \\$7,000 compute'),
    Quote('cost_gpt3_cost', HANDOUT, '11.2 Environmental Impact',
          '- Cost: \\$4.6M'),
    Quote('cost_gpt3_energy', HANDOUT, '11.2 Environmental Impact',
          '- Energy: 1,287 MWh'),
    Quote('cost_gpt3_co2', HANDOUT, '11.2 Environmental Impact',
          '- CO2: 552 tons'),
    Quote('cost_finetune', LECTURE, 'Transfer Learning: Best Practices',
          '- Cost: \\$50-\\$500'),
    Quote('cost_bert_textbook', TEXTBOOK, '20.2.6 Pre-training Data and Compute',
          'pre-training BERT-Large cost roughly $7,000--$12,000 in cloud compute'),
    Quote('cost_bert_appendix_base', LECTURE, 'Appendix E: Training Cost Analysis', 'BERT-base\t\\$7K'),
    Quote('cost_bert_appendix_large', LECTURE, 'Appendix E: Training Cost Analysis', 'BERT-large\t\\$25K'),
    Quote('cost_tpu_pods', LECTURE, 'Appendix A: BERT Architecture Specifications', 'Hardware\t16 TPU pods\t64 TPU pods'),
    # Part B: the model answers and the facts they check against (labs/part_b)
    Quote('partb_a1', HANDOUT, 'A1: The Learning Problem',
          'Most language understanding is general and can be learned once and reused!'),
    Quote('partb_a2_milk', HANDOUT, '2.1 How We Understand Context',
          'to buy milk'),
    Quote('partb_a3', HANDOUT, 'A3: The Prediction Game',
          'BERT-style (fill blanks using all context) and GPT-style (predict what comes next)'),
    Quote('partb_forgetting', TEXTBOOK, '20.6.6 Fine-Tuning Hyperparameters',
          'Large learning rates would destroy the pre-trained representations---a phenomenon called catastrophic '
          'forgetting.'),
    Quote('partb_hyper_title', LECTURE, 'Fine-tuning: The Mechanics',
          'Hyperparameters:'),
    Quote('partb_batch', LECTURE, 'Fine-tuning: The Mechanics',
          'Batch size: 16 or 32'),
    Quote('partb_warmup', LECTURE, 'Fine-tuning: The Mechanics',
          'Warmup: 10% of steps'),
    Quote('partb_weight_decay', TEXTBOOK, '20.6.6 Fine-Tuning Hyperparameters',
          'Weight decay | 0.01'),
    Quote('partb_encoder_limit', STRATEGIES, 'Limitations of pretrained encoders',
          'Cannot generate long text naturally (no decoder).'),
    Quote('partb_use_bert_title', LECTURE, 'BERT vs GPT: When to Use Each',
          'Use BERT When:'),
    Quote('partb_use_bert', LECTURE, 'BERT vs GPT: When to Use Each',
          '**Task:** Classification, QA, NER'),
    Quote('partb_use_gpt_title', LECTURE, 'BERT vs GPT: When to Use Each',
          'Use GPT When:'),
    Quote('partb_use_gpt', LECTURE, 'BERT vs GPT: When to Use Each',
          '**Task:** Generation, completion, dialogue'),
    Quote('partb_bert_apps', LECTURE, 'BERT vs GPT: When to Use Each',
          'BERT Applications:'),
    Quote('partb_sentiment', LECTURE, 'BERT vs GPT: When to Use Each',
          'Sentiment analysis'),
    Quote('partb_gpt_summarization', LECTURE, 'BERT vs GPT: When to Use Each',
          'Text summarization (generative)'),
    Quote('partb_use_t5', TEXTBOOK, '20.10.7 T5 vs. BERT: When to Use Each',
          'Use T5 when: - Your task requires generating variable-length text output (summarization, translation, '
          'open-ended QA).'),
    Quote('partb_open_qa', TEXTBOOK, '20.10.7 T5 vs. BERT: When to Use Each',
          'open-ended QA'),
    Quote('t5_new_prefix', TEXTBOOK, '20.10.7 T5 vs. BERT: When to Use Each',
          'You want to frame new tasks flexibly --- just choose a new text prefix.'),
    # Attention: the forward steps, the cost of attention, long documents
    Quote('attention_steps_0', TEXTBOOK, '20.2.2 Architecture',
          'Segment embeddings: Distinguish between Sentence A and Sentence B (for sentence-pair tasks).'),
    Quote('attention_steps_1', TEXTBOOK, '20.2.2 Architecture',
          'Position embeddings: Learned absolute position embeddings (unlike the sinusoidal encodings we '
          'implemented in Chapter 18).'),
    Quote('attention_steps_2', TEXTBOOK, '20.2.5 BERT Architecture Walkthrough',
          'Multi-head self-attention (as we built in Chapter 18): Each token attends to every other token, '
          'producing a context-aware representation. BERT-Base uses 12 attention heads, each operating on 64 '
          'dimensions.'),
    Quote('attention_steps_3', TEXTBOOK, '20.2.5 BERT Architecture Walkthrough',
          'The masked positions feed into the MLM prediction head (a linear layer + GELU + LayerNorm + linear '
          'layer projecting to vocabulary size).'),
    Quote('attention_cost_0', SUMMARY, 'BERT Architecture',
          'Attention is O(n²) in sequence length'),
    Quote('attention_long_0', TEXTBOOK, '20.11.2 Handling Long Documents',
          'BERT and its variants are limited to 512 tokens. For longer documents:'),
    Quote('attention_long_1', TEXTBOOK, '20.11.2 Handling Long Documents',
          'Truncation: Simply cut the text at 512 tokens (loses information). Use head truncation for tasks where '
          'the beginning is most informative (news articles) or tail truncation for tasks where the end matters '
          '(reviews with a concluding sentence). Head+tail truncation (keeping the first 128 and last 384 tokens) '
          'often outperforms either alone.'),
    Quote('attention_long_2', TEXTBOOK, '20.11.2 Handling Long Documents',
          'Chunking: Split the document into overlapping chunks, process each separately, and aggregate '
          'predictions.'),
    Quote('attention_long_3', TEXTBOOK, '20.11.2 Handling Long Documents',
          'Practical tip: Before using a specialized long-document model, check whether simple truncation or '
          'chunking achieves acceptable performance. For many tasks (sentiment classification, intent detection), '
          'the first 512 tokens contain sufficient information, and the engineering complexity of long-range '
          'models is not warranted.'),
    # Fine-tune: adapters and LoRA, the gradient step, data efficiency, ULMFiT, recipes
    Quote('adapters_0', TEXTBOOK, '20.14.3 Adapters and Prefix Tuning',
          'With adapter dimension 64, this adds about 3.6% parameters to BERT-Base while achieving 97--99% of full '
          'fine-tuning performance.'),
    Quote('adapters_1', TEXTBOOK, '20.14.2 LoRA: Low-Rank Adaptation',
          'Same inference speed: At inference time, $\\mathbf{B}\\mathbf{A}$ is merged into $\\mathbf{W}$, adding '
          'zero latency.'),
    Quote('adapters_2', TEXTBOOK, '20.14.2 LoRA: Low-Rank Adaptation',
          'Tiny storage per task: Only the low-rank matrices need to be saved (typically < 1% of model size).'),
    Quote('step_rule', HANDOUT, 'B3: Fine-tuning Mathematics',
          '$$\\theta_{\\text{new}} = \\theta_{\\text{pretrained}} + \\alpha \\cdot \\nabla_{\\theta} '
          'L_{\\text{task}}$$'),
    Quote('step_alpha', HANDOUT, 'B3: Fine-tuning Mathematics',
          'where α is the learning rate (typically small: 2e-5)'),
    Quote('step_textbook', TEXTBOOK, '20.7.1 Fine-Tuning (Updating All Parameters)',
          "In fine-tuning, the pre-trained model's weights are updated during training on the downstream task."),
    Quote('data_efficiency_0', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          'Experiment: Sentiment classification on product reviews'),
    Quote('data_efficiency_1', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          'Approach A - Train from Scratch:'),
    Quote('data_efficiency_2', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          '- Architecture: LSTM (2 layers, 512 hidden)'),
    Quote('data_efficiency_3', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          '- Training data: 10,000 labeled reviews'),
    Quote('data_efficiency_4', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          '- Training time: 6 hours on GPU'),
    Quote('data_efficiency_5', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          '- Test accuracy: 78.3%'),
    Quote('data_efficiency_6', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          'Approach B - Fine-tune GPT-2:'),
    Quote('data_efficiency_7', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          '- Base model: GPT-2 (1.5B parameters, pre-trained)'),
    Quote('data_efficiency_8', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          '- Training data: 100 labeled reviews (100x less!)'),
    Quote('data_efficiency_9', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          '- Training time: 10 minutes on GPU'),
    Quote('data_efficiency_10', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          '- Test accuracy: 91.7%'),
    Quote('data_efficiency_11', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          'Result: 100 examples + GPT-2 $>$ 10,000 from scratch'),
    Quote('data_efficiency_12', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          '100x less data, 36x faster, 17% better accuracy'),
    Quote('data_efficiency_13', LECTURE, 'Worked Example: Data Efficiency of Pre-training',
          'This is the power of transfer learning - pre-training solves the data problem'),
    Quote('data_efficiency_ulmfit', STRATEGIES, 'ULMFiT',
          'with only 100 labeled examples, it matches the performance of training from scratch on 100 \\times more '
          'data.'),
    Quote('ulmfit_0', STRATEGIES, 'ULMFiT',
          'Pretraining : predict the next word based on the previous words. This task is referred to as language '
          'modeling. *no labeled data is required*, and one can make use of abundantly available text from sources '
          'such as Wikipedia.'),
    Quote('ulmfit_1', STRATEGIES, 'ULMFiT',
          'Domain adaptation Once the language model is pretrained on a large-scale corpus, the next step is to '
          'adapt it to the in-domain corpus (e.g., IMDB movie review corpus.). This stage still uses *language '
          'modeling*, but now the model has to predict the next word in the target corpus.'),
    Quote('ulmfit_2', STRATEGIES, 'ULMFiT',
          'Fine-tuning In this step, the language model is fine-tuned with a **classification layer for the target '
          'task**'),
    Quote('recipe_sentiment', LECTURE, 'Appendix D: Fine-tuning Recipes by Task',
          'Sentiment\t2e-5\t3-4\tFull fine-tuning'),
    Quote('recipe_rate', LECTURE, 'Fine-tuning: The Mechanics',
          'Learning rate: 2e-5, 3e-5, 5e-5'),
    Quote('recipe_epochs', LECTURE, 'Fine-tuning: The Mechanics',
          'Epochs: 2-4'),
    Quote('recipe_ner', LECTURE, 'Appendix D: Fine-tuning Recipes by Task',
          'Named Entities\t5e-5\t3\tFull fine-tuning'),
    Quote('recipe_qa', LECTURE, 'Appendix D: Fine-tuning Recipes by Task',
          'Custom QA\t5e-5\t3-4\tFull fine-tuning'),
    Quote('recipe_start', LECTURE, 'Appendix D: Fine-tuning Recipes by Task',
          'Start with these proven recipes, then experiment'),
    # Pre-training: ELECTRA, why 80 / 10 / 10, BART's noise
    Quote('electra_0', TEXTBOOK, '20.12.2 ELECTRA: A More Efficient Alternative',
          "ELECTRA's replaced token detection learns from all tokens: at every position, the model must decide "
          'whether the token is original or replaced.'),
    Quote('electra_1', TEXTBOOK, '20.12.2 ELECTRA: A More Efficient Alternative',
          'This 6.7x increase in training signal per sequence'),
    Quote('electra_2', TEXTBOOK, '20.12.2 ELECTRA: A More Efficient Alternative',
          'where $y_i = 1$ if token $i$ was replaced'),
    Quote('why_80_10_10_0', TEXTBOOK, '20.2.3 Pre-training Objective 1: Masked Language Modeling (MLM)',
          'If BERT only saw [MASK] tokens during pre-training, it would learn representations that are useful only '
          'when [MASK] is present --- but [MASK] never appears during fine-tuning. By sometimes using random '
          'tokens and sometimes keeping the original, BERT learns robust representations that work even without '
          'the [MASK] signal.'),
    Quote('why_80_10_10_1', STRATEGIES, 'BERT: Bidirectional Encoder Representations from Transformers',
          'Leave input word unchanged 10% of the time (but still predict it!)'),
    Quote('why_80_10_10_2', STRATEGIES, 'BERT: Bidirectional Encoder Representations from Transformers',
          '(No masks are seen at fine-tuning time!)'),
    Quote('bart', TEXTBOOK, '20.12.3 BART: Denoising Sequence-to-Sequence',
          "BART (Lewis et al., 2020) generalizes BERT's denoising approach with an encoder-decoder architecture. "
          'The encoder processes a corrupted document, and the decoder reconstructs the original.'),
    Quote('bart_mask', TEXTBOOK, '20.12.3 BART: Denoising Sequence-to-Sequence',
          'Token masking (like BERT)'),
    Quote('bart_delete', TEXTBOOK, '20.12.3 BART: Denoising Sequence-to-Sequence',
          'Token deletion (model must determine which positions are missing)'),
    Quote('bart_infill', TEXTBOOK, '20.12.3 BART: Denoising Sequence-to-Sequence',
          'Text infilling (replacing spans with a single\n[MASK], requiring the model to predict span length)'),
    Quote('bart_permute', TEXTBOOK, '20.12.3 BART: Denoising Sequence-to-Sequence',
          'Sentence permutation'),
    Quote('bart_rotate', TEXTBOOK, '20.12.3 BART: Denoising Sequence-to-Sequence',
          'Document rotation (model must find the true start)'),
    # Choosing a model: distillation's temperature, T5's prefixes
    Quote('distill_loss', TEXTBOOK, '20.9.3 DistilBERT: Distilled BERT',
          '$$\\mathcal{L} = \\alpha \\cdot \\mathcal{L}_{\\text{CE}} + \\beta \\cdot '
          '\\mathcal{L}_{\\text{distill}} + \\gamma \\cdot \\mathcal{L}_{\\text{cos}}$$'),
    Quote('distill_term_0', TEXTBOOK, '20.9.3 DistilBERT: Distilled BERT',
          '- $\\mathcal{L}_{\\text{CE}}$: Standard cross-entropy with true labels'),
    Quote('distill_term_1', TEXTBOOK, '20.9.3 DistilBERT: Distilled BERT',
          '- $\\mathcal{L}_{\\text{distill}}$: KL divergence between the student and teacher soft probability '
          'distributions (with temperature scaling)'),
    Quote('distill_term_2', TEXTBOOK, '20.9.3 DistilBERT: Distilled BERT',
          '- $\\mathcal{L}_{\\text{cos}}$: Cosine embedding loss between student and teacher hidden states'),
    Quote('distill_softmax_0', TEXTBOOK, '20.9.3 DistilBERT: Distilled BERT',
          'The soft probability distribution with temperature $T$ is:'),
    Quote('distill_softmax_1', TEXTBOOK, '20.9.3 DistilBERT: Distilled BERT',
          '$$p_i = \\frac{\\exp(z_i / T)}{\\sum_j \\exp(z_j / T)}$$'),
    Quote('distill_soft', TEXTBOOK, '20.9.3 DistilBERT: Distilled BERT',
          "Higher temperatures produce softer distributions, transferring more information about the teacher's "
          'internal knowledge (which tokens it considers similar).'),
    Quote('t5_0', TEXTBOOK, '20.10.1 The Text-to-Text Framework',
          'every NLP task is cast as a text-to-text problem.'),
    Quote('t5_1', TEXTBOOK, '20.10.1 The Text-to-Text Framework',
          'New tasks can be defined simply by choosing a new text prefix.'),
    Quote('t5_2', TEXTBOOK, '20.10.1 The Text-to-Text Framework',
          'The same model, same loss function, same training procedure works for every task.'),
    # Pre-training: curating the data, the recipe (learning-rate schedules)
    Quote('curation_dedup', TEXTBOOK, '20.13.1 The Importance of Data Quality',
          'Common deduplication approaches include exact deduplication (hash-based), MinHash locality-sensitive '
          'hashing for near-duplicates, and suffix array-based methods.'),
    Quote('curation_language', TEXTBOOK, '20.13.1 The Importance of Data Quality',
          '- Language identification: Remove non-target-language text using fastText or similar classifiers.'),
    Quote('curation_perplexity', TEXTBOOK, '20.13.1 The Importance of Data Quality',
          '- Perplexity filtering: Use a pre-trained language model to score text quality. Very high perplexity '
          'text (gibberish, OCR errors) and very low perplexity text (repetitive boilerplate) are removed.'),
    Quote('curation_heuristics', TEXTBOOK, '20.13.1 The Importance of Data Quality',
          '- Heuristic filters: Remove pages with too few sentences, too many special characters, too many '
          'duplicate lines, or insufficient natural language (e.g., code-heavy pages).'),
    Quote('curation_domains', TEXTBOOK, '20.13.1 The Importance of Data Quality',
          'Careful domain balancing ensures the model develops broad capabilities.'),
    Quote('recipe_bert_optimizer', LECTURE, 'Appendix C: Pre-training Hyperparameters',
          '- **Learning rate:** 1e-4\n- β_1, β_2 : 0.9, 0.999\n- **L2 weight decay:** 0.01\n'
          '- **Warmup steps:** 10,000\n- **LR schedule:** Linear decay'),
    Quote('recipe_bert_steps', LECTURE, 'Appendix C: Pre-training Hyperparameters',
          '- **Max steps:** 1,000,000'),
    Quote('recipe_gpt3_optimizer', LECTURE, 'Appendix C: Pre-training Hyperparameters',
          '- **Learning rate:** 6e-5 (peak)\n- β_1, β_2 : 0.9, 0.95\n- **Weight decay:** 0.1'),
    Quote('recipe_gpt3_schedule', LECTURE, 'Appendix C: Pre-training Hyperparameters',
          '- **LR schedule:** Cosine decay'),
    Quote('recipe_gpt3_tokens', LECTURE, 'Appendix C: Pre-training Hyperparameters',
          '- **Batch size:** 3.2M tokens\n- **Tokens:** 300B total'),
    Quote('recipe_bert_details', STRATEGIES, 'BERT Training Details',
          '- Training Time: 1M steps (~40 epochs)\n- Optimizer: AdamW, 1e-4 learning rate, linear decay'),
    # Fine-tune, gradient accumulation (labs/finetune/accumulation.py)
    Quote('accumulation_intro', TEXTBOOK, '20.11.4 Gradient Accumulation',
          'When GPU memory is limited, gradient accumulation simulates larger batch sizes:'),
    Quote('accumulation_batch', TEXTBOOK, '20.11.4 Gradient Accumulation', 'per_device_train_batch_size=4,'),
    Quote('accumulation_steps', TEXTBOOK, '20.11.4 Gradient Accumulation',
          'gradient_accumulation_steps=8, # Effective batch size = 4 * 8 = 32'),
    # Choosing a model: published architectures, counted on the meta device
    Quote('specs_gpt_params', LECTURE, 'Appendix B: GPT Architecture Specifications', 'Parameters\t117M\t1.5B\t175B'),
    Quote('specs_bert_params', LECTURE, 'Appendix A: BERT Architecture Specifications', 'Total Parameters\t110M\t340M'),
    Quote('specs_albert_base', TEXTBOOK, '20.9.2 ALBERT: A Lite BERT', '| ALBERT-Base | 12 | 768 | 12M |'),
    Quote('specs_albert_xxlarge', TEXTBOOK, '20.9.2 ALBERT: A Lite BERT', '| ALBERT-xxlarge | 12 | 4096 | 235M |'),
    Quote('specs_t5_small', TEXTBOOK, '20.10.5 T5 Sizes', '| T5-Small | 60M | 6 | 6 | 512 |'),
    Quote('specs_t5_base', TEXTBOOK, '20.10.5 T5 Sizes', '| T5-Base | 220M | 12 | 12 | 768 |'),
    Quote('specs_t5_large', TEXTBOOK, '20.10.5 T5 Sizes', '| T5-Large | 770M | 24 | 24 | 1024 |'),
    Quote('specs_t5_11b', TEXTBOOK, '20.10.5 T5 Sizes', '| T5-11B | 11B | 24 | 24 | 1024 |'),
    Quote('specs_albert_factorised', TEXTBOOK, '20.9.2 ALBERT: A Lite BERT',
          'With $V = 30{,}000$, $E = 128$, $H = 768$: BERT uses $30{,}000 \\times 768 = 23.0\\text{M}$ parameters, '
          'while ALBERT uses $30{,}000 \\times 128 + 128 \\times 768 = 3.9\\text{M}$.'),
    Quote('specs_albert_slower', TEXTBOOK, '20.9.4 Comparing the Variants',
          '*ALBERT-Base is slower despite fewer parameters because parameter sharing means the same weights are '
          'reused across layers, not that computation is reduced.'),
    Quote('specs_t5_relative', TEXTBOOK, '20.10.2 Architecture',
          '- Relative position embeddings: Instead of absolute position embeddings, T5 uses a simplified version of '
          'relative position biases that are shared across layers.'),
    Quote('specs_t5_prenorm', TEXTBOOK, '20.10.2 Architecture',
          '- Pre-norm: Layer normalization is applied before (not after) each sublayer.'),
    Quote('specs_t5_no_bias', TEXTBOOK, '20.10.2 Architecture', '- No bias terms: Linear layers omit bias for efficiency.'),
)
# The handout's exercises as the workbook and Ask the class quote them (in their own file for its size).
QUOTES += tuple(Quote(f"workbook_{exercise}_{n}", HANDOUT, where, line)
                for exercise, (where, lines) in handout.WORKBOOK.items() for n, line in enumerate(lines, 1))
QUOTES += tuple(Quote(preset, HANDOUT, where, line) for preset, (where, line) in handout.PRESETS.items())
QUOTES += words.QUOTES  # word vectors, tokenizers and n-grams (in their own file for its size)
# The panels of #55 (the course's last ideas), one file per lab
for _more in (embeddings_more, masks_more, pretraining_more, finetune_more, choosing_more):
    QUOTES += _more.QUOTES
BY_ID = {q.id: q for q in QUOTES}


def get(quote_id: str) -> Quote:
    return BY_ID[quote_id]


def text(quote_id: str) -> str:
    """The course's words for this id, exactly as the document writes them."""
    return BY_ID[quote_id].text


def workbook(exercise: str) -> tuple[str, ...]:
    """The handout's lines of a Part A or B exercise ("B1.1"), each exactly as printed, in its order."""
    return handout.WORKBOOK[exercise][1]
