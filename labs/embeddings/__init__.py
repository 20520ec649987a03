"""Embeddings: the same word's vectors across sentences and layers, static input embeddings (king − man + woman),
sentence vectors ([CLS], mean and max pooling), and what each layer knows (linear probes)."""
