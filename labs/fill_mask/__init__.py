"""Fill in the blank: what a masked LM predicts for each blank and how sure it is, beside what a causal LM predicts
from the left context alone."""
