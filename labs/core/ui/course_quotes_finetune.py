"""The course as the panels of Fine-tune (#55: distance from the pre-trained weights, domain-adaptive pre-training, a simple baseline) quote it. Part of the one table of the course's words
(labs/core/ui/course_quotes.py adds these entries to QUOTES), kept apart only for size; tests/test_course_quotes.py
checks each verbatim under its heading."""

from __future__ import annotations

from labs.core.ui.course_documents import LECTURE, STRATEGIES, SUMMARY, TEXTBOOK, Quote  # noqa: F401

PAC_BAYES = "20.5.2 The PAC-Bayes Perspective on Transfer Learning"
DOMAIN_SHIFT = "20.5.3 Domain Shift and Pre-training Data"
NOT_PRETRAINED = "When NOT to Use Pre-trained Models"

QUOTES: tuple[Quote, ...] = (
    # labs/finetune/theta_distance.py: how far fine-tuning moves the weights
    Quote("theta_close", TEXTBOOK, PAC_BAYES,
          r"The key insight is that the bound is tight when $\boldsymbol{\theta}$ stays close to "
          r"$\boldsymbol{\theta}_0$. Pre-training provides an initialization that is already close to a good solution "
          "for many tasks, so fine-tuning only needs small updates."),
    Quote("theta_small_rates", TEXTBOOK, PAC_BAYES,
          r"Small learning rates are used for fine-tuning: Large learning rates would push $\boldsymbol{\theta}$ far "
          r"from $\boldsymbol{\theta}_0$, increasing the KL term."),
    Quote("theta_small_data", TEXTBOOK, PAC_BAYES,
          "Pre-training is especially valuable for small datasets: With small $N$, the KL term dominates, and starting "
          "close to a good solution is critical."),
    # labs/finetune/ulmfit.py: domain-adaptive pre-training, in-domain and out-of-domain perplexity
    Quote("domain_similar", TEXTBOOK, DOMAIN_SHIFT,
          "Transfer learning works best when the pre-training domain is similar to the downstream domain."),
    Quote("domain_adaptive", TEXTBOOK, DOMAIN_SHIFT,
          "These models either continue pre-training BERT on domain-specific text (domain-adaptive pre-training) or "
          "pre-train from scratch on domain-specific corpora. Research consistently shows that domain-adaptive "
          "pre-training improves downstream performance on in-domain tasks, sometimes by large margins."),
    # labs/finetune/baseline.py: a simple baseline beside the fine-tuned encoder
    Quote("not_pretrained_overkill", LECTURE, NOT_PRETRAINED,
          "Overkill Scenarios:\n\n- Simple regex suffices\n- Rule-based system works\n- N-grams are enough\n"
          "- Tiny dataset (< 50 examples)"),
    Quote("not_pretrained_resources", LECTURE, NOT_PRETRAINED,
          "Resource Constraints:\n\n- Limited memory (BERT needs 4GB+ GPU)\n- Strict latency requirements (< 10ms)\n"
          "- Edge deployment (phones, IoT)\n- Battery-powered devices"),
)
