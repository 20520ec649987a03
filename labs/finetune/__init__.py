"""Fine-tune: a real fine-tuning run (sentiment, sentence pairs, NER, QA) followed live and shared by the class, the
strategies side by side, the course's recipes, forgetting, data efficiency, adapters and LoRA, ULMFiT's middle
stage, gradient accumulation, and one gradient step by hand."""
