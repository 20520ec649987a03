"""Fine-tune's API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them).

The long runs are shared jobs (labs.core.work.jobs): each is asked for per student (one waiting job each), and
following one costs no slot, so they share the concurrency id "finetune-follow" without a limit."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.finetune import (
    accumulation,
    adapters_lora,
    baseline,
    data_efficiency,
    gradient_step,
    predict,
    shared_runs,
    theta_distance,
    ulmfit,
)

FOLLOW = {"per_student": True, "concurrency_id": "finetune-follow", "concurrency_limit": None}

ENDPOINTS = (
    Endpoint("data_efficiency", data_efficiency.data_efficiency_stream,
             "Accuracy against the number of labelled examples, pre-trained vs from scratch (one shared job; streams "
             "the queue's place and the progress, then the curve).", **FOLLOW),
    Endpoint("adapters_lora", adapters_lora.adapters_lora_stream,
             "Bottleneck adapters and LoRA on the sentiment task: parameters, LoRA merged (same predictions), time per "
             "prediction and bytes per task (one shared job; streams the queue's place and the progress).", **FOLLOW),
    Endpoint("ulmfit", ulmfit.ulmfit_stream,
             "ULMFiT's three stages: the language-modelling objective on the reviews' text, then fine-tuning on a few "
             "labelled reviews, beside the same fine-tune without the middle stage (one shared job).", **FOLLOW),
    Endpoint("theta_distance", theta_distance.theta_distance_stream,
             "How far fine-tuning moves each part of an encoder: ‖θ − θ₀‖ / ‖θ₀‖ for the embeddings, each layer and "
             "the head, after runs at a few learning rates and numbers of reviews (one shared job; streams the "
             "queue's place and the progress, then {runs: [{learning_rate, examples, steps, accuracy, parts: [{part, "
             "distance, norm, params}]}]}).", **FOLLOW),
    Endpoint("baseline", baseline.baseline_stream,
             "A keyword rule and TF-IDF + logistic regression beside the fine-tuned encoder (the lab's default run, "
             "shared) on the same reviews: {rows: [{method, accuracy, ms_per_review, parameters, size_bytes}]}, "
             "times measured on this server (streams the queue's place and the run's progress first).", **FOLLOW),
    Endpoint("gradient_step", gradient_step.gradient_step_json,
             "gradient_step(features, label, weights, bias, learning_rate) -> {parameters: [{name, theta, input, grad, "
             "step, new, handout_new}], before, after, handout: {z, p_positive, loss}, rule, handout_rule}"),
    Endpoint("gradient_accumulation", accumulation.gradient_accumulation,
             "gradient_accumulation(model, task, batch_size, micro_batches, seed) -> the gradient of B examples as one "
             "batch and as k micro-batches of B/k with the loss / k: {gradient: {max_abs_difference, cosine}, adamw, "
             "memory: {full_batch_bytes, micro_batch_bytes}, seconds, full_batch, micro: [...]}"),
    Endpoint("compare_strategies", shared_runs.compare_stream,
             "Run feature extraction, partial and full fine-tuning, layer-wise lr decay, LoRA, prompt tuning (sentence "
             "tasks) and prefix tuning on a task's built-in data (shared with identical comparisons; streams the "
             "queue's place while it waits).", **FOLLOW),
    Endpoint("finetune", shared_runs.finetune_stream,
             "Fine-tune an encoder on the built-in sentiment set; streams the queue's place, the progress, then "
             "returns the curves and accuracies. Identical runs are trained once and shared.", **FOLLOW),
    Endpoint("predict_task", predict.predict_task,
             "Run a model trained here (run_id) or a Hub task model (model) on new input with a task's view."),
)
