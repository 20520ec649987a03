"""Attention: every layer's and head's attention weights (bertviz's views, head patterns, T5's three kinds), inside
the transformer step by step, and what attention costs against the input length, long documents included."""
