"""The handout's exercises as the Part A & B workbook and Ask the class's ready questions quote them: part of the
one table of the course's words, kept apart only for size. The workbook (labs/part_b/questions.py) and the ready
questions (labs/classroom/presets.py) take them from here; labs/core/ui/course_quotes.py adds these entries to
QUOTES, and tests/test_course_quotes.py checks each verbatim under its section. An exercise's lines are entries
`workbook_<id>_<n>`, in the handout's order; `lines(<id>)` gives them back."""

from __future__ import annotations

# {exercise id: (the handout's section heading, its lines as printed)}
WORKBOOK: dict[str, tuple[str, tuple[str, ...]]] = {
    'A1': ('1.1 Learning from Scratch vs Building on Knowledge', (
        'Q: If an AI needs to analyze movie reviews, what language skills would it need?',
        'Think: Should every company teach their AI what “the” means from scratch?',
    )),
    'A2.1': ('2.1 How We Understand Context', (
        'Exercise: Fill in the blanks using context clues:',
        '1. “The cat sat on the ____”',
        '2. “I went to the ____ to buy milk”',
        '3. “The ____ was delicious but too expensive”',
        '4. “She ____ the ball to her friend”',
    )),
    'A2.2': ('2.2 One-Way vs Two-Way Understanding', (
        '“The [BLANK] barked loudly at the mailman”',
        'Approach 1: Only see “The [BLANK]” Possible answers: _____',
        'Approach 2: See entire sentence Possible answers: _____',
        'Which approach is more accurate? Why?',
    )),
    'A3.1': ('3.1 Completing Sentences', (
        'Exercise: Complete these sentence beginnings:',
        '1. "Once upon a ____"',
        '2. "The weather today is ____"',
        '3. "I love to eat ____"',
        '4. "The best thing about weekends is ____"',
    )),
    'A3.2': ('3.2 Generation vs Understanding', (
        "Think: What's the difference between:",
        '1. Filling a blank in the middle of a sentence',
        '2. Continuing a sentence from where it stops',
        'Which requires more creativity? _____ Which requires more understanding? _____',
    )),
    'A4': ('4.1 General vs Specific Knowledge', (
        'Exercise: Categorize these AI tasks as General or Specific:',
        'Q: What percentage of language understanding is general vs task-specific?',
    )),
    'A5': ('5.1 Training Efficiency', (
        '5 companies each need sentiment analysis AI:',
        '- Each trains from scratch: \\$500,000',
        '- Train one general model: \\$1,000,000',
        '- Each company adapts it: \\$10,000',
        '- Money saved: -----',
    )),
    'B1.1': ('6.1 Understanding MLM', (
        'Exercise: Implement masking strategy:',
        'Given sentence: "The quick brown fox jumps" Token positions: [0, 1, 2, 3, 4]',
        'If we mask 15% (1 token), and choose position 2 ("brown"):',
    )),
    'B1.1b': ('6.1 Understanding MLM', (
        'Q: Why not mask 50% of tokens? What would happen?',
    )),
    'B1.2': ('6.2 Bidirectional Attention', (
        'Exercise: Calculate attention patterns:',
        'Q: How many connections does BERT have vs GPT for a sequence of length n?',
        'BERT: _____ connections GPT: _____ connections',
    )),
    'B2.1': ('7.1 Next Token Prediction', (
        'Exercise: Calculate probabilities:',
        'Given context: "The cat" Vocabulary: ["sat", "ran", "jumped", "slept"] Logits: [2.5, 1.0, 0.5, 1.5]',
        'After softmax:',
    )),
    'B2.2a': ('7.2 Generation Strategy', (
        'Q: What happens if we always pick the highest probability word?',
    )),
    'B2.2b': ('7.2 Generation Strategy', (
        'Q: How does temperature affect generation?',
        'Temperature = 0.5: _____ Temperature = 1.0: _____ Temperature = 2.0: _____',
    )),
    'B3.1': ('8.1 Transfer Learning', (
        '$$\\theta_{\\text{new}} = \\theta_{\\text{pretrained}} + \\alpha \\cdot \\nabla_{\\theta} L_{\\text{task}}$$',
        'where α is the learning rate (typically small: 2e-5)',
    )),
    'B3.1b': ('8.1 Transfer Learning', (
        'Exercise: Compare learning rates:',
        'Training Type\tTypical LR\tWhy?',
        'Fine-tuning\t2e-5\t-----',
        'Q: What happens with too large learning rate during fine-tuning?',
    )),
    'B3.2': ('8.2 Catastrophic Forgetting', (
        'Exercise: Design a fine-tuning schedule to prevent forgetting:',
        '1. Initial LR: -----',
        '2. Warmup steps: -----',
        '3. Decay strategy: -----',
        '4. Freeze layers? -----',
    )),
    'B4.1': ('9.1 Comparing Architectures', (
        'Exercise: Fill in the comparison table:',
        'Criterion\tBERT\tGPT\tT5',
        'Parameters\t340M\t1.5B\t11B',
        'Best for\t-----\tGeneration\t-----',
        'Training objective\tMLM\t-----\tSpan corruption',
        'Architecture\tEncoder\t-----\tEncoder-Decoder',
        'Context\tBidirectional\t-----\t-----',
    )),
    'B4.2': ('9.2 Task Matching', (
        'Exercise: Match models to tasks:',
        'Task\tBest Model',
    )),
    'B5.1': ('10.1 Fine-tuning BERT', (
        'param.requires_grad = # YOUR CODE: True or False?',
        'learning_rate=# YOUR CODE: appropriate LR,',
        'per_device_train_batch_size=# YOUR CODE: batch size,',
        'num_train_epochs=# YOUR CODE: epochs,',
        'warmup_steps=# YOUR CODE: warmup,',
        'weight_decay=# YOUR CODE: decay,',
        '# What happens if we set learning_rate=1e-2?',
    )),
    'B5.2': ('10.2 Using GPT for Generation', (
        '# YOUR CODE: what parameter for greedy?',
        'temperature=# YOUR CODE: temperature value',
        'num_beams=# YOUR CODE: beam size',
    )),
    'B6.1': ('11.1 Efficient Fine-tuning', (
        'Exercise: Calculate parameter savings with LoRA:',
        'Original model: 340M parameters LoRA rank r=16:',
        '- Trainable parameters: _____',
        '- Percentage of original: ___%',
    )),
    'B6.2': ('11.2 Environmental Impact', (
        'Exercise: Calculate carbon footprint:',
        'Training GPT-3:',
        '- Energy: 1,287 MWh',
        '- CO2: 552 tons',
        'Fine-tuning GPT-3 on your task:',
        '- Energy: 10 MWh',
        '- CO2: ___ tons',
        'Savings by fine-tuning vs training from scratch: ___%',
    )),
    'B7.1': ('12 B7: Critical Thinking (5 minutes)', (
        'Q: What are the limitations of pre-trained models?',
    )),
    'B7.2': ('12 B7: Critical Thinking (5 minutes)', (
        'Q: How might pre-training bias affect downstream tasks?',
    )),
}

# Ask the class's ready questions taken word for word from the handout: {preset id: (section, text)}
PRESETS: dict[str, tuple[str, str]] = {
    'preset_cat_sat': ('2.1 How We Understand Context', 'The cat sat on the ____'),
    'preset_buy_milk': ('2.1 How We Understand Context', 'I went to the ____ to buy milk'),
    'preset_delicious': ('2.1 How We Understand Context', 'The ____ was delicious but too expensive'),
    'preset_ball': ('2.1 How We Understand Context', 'She ____ the ball to her friend'),
    'preset_barked': ('2.2 One-Way vs Two-Way Understanding', 'The [BLANK] barked loudly at the mailman'),
    'preset_creativity': ('3.2 Generation vs Understanding', 'Which requires more creativity?'),
}
