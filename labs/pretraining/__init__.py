"""Pre-training: how BERT, GPT and T5 learn from raw text (four objectives, NSP, span corruption, mask rate)."""
