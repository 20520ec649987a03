"""Choosing a model: model cards and published architectures counted, distillation, prompting without training, bias
and domain shift, which model for which task, T5's text-to-text prefixes, and the course's examples checked."""
