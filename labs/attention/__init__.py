"""Lab 4, "Attention": compute.py (weights, entropy, head patterns), views.py (bertviz), then tab.py."""
