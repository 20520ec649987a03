"""Choosing a model: families and variants measured here, prompting without training, bias, tasks."""
