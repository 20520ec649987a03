"""Masks: causal and bidirectional attention masks for the student's own sentence, the masked softmax, padding and
encoder–decoder masks, and the proof on real models' attention weights."""
