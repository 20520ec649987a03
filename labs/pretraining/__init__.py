"""Pre-training: how BERT, GPT, T5, ELECTRA and BART learn from raw text (the objectives on one text, NSP, span
corruption, why 15 % and 80 / 10 / 10, BART's denoising), curating the data, and the learning-rate recipe."""
