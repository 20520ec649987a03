"""Lab 0, "Tokens": compute.py (every tokenizer on one text), bpe.py (BPE step by step), train.py (train your own), then tab.py."""
