"""The work that leaves a click: batched forward passes (lm, batching, padding) and long jobs (jobs)."""
