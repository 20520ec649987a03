"""Lab 2, "Next token": compute.py (the distribution), generation.py (generate()), then tab.py."""
