"""Next token: a causal LM's next-token distribution and the knobs generate() applies (temperature, top-k, top-p),
one token at a time, generation (greedy, sampling, beam search, streamed), softmax by hand, and inside a prediction
(sentence scores, the logit lens, the beam tree)."""
