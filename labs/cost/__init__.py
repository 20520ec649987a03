"""Cost & scale: training compute (6·N·D), time, money, energy and carbon from published figures, memory for
training and inference, scaling laws, the course's figures checked, and this server's own training speed, measured."""
