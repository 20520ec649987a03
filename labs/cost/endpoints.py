"""Cost & scale's API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.cost import compute, memory, scaling

ENDPOINTS = (
    Endpoint("cost", compute.cost, "cost(params, tokens, device, devices, utilisation, price_per_hour, power_watts, "
             "pue, grid_g_per_kwh, precision) -> {flops, device_hours, days, cost, kwh, co2_kg, ...}"),
    Endpoint("memory", memory.memory, "memory(params, precision, optimizer, lora_rank, batch, length, "
             "model, lora_targets) -> bytes by part and in total: {training, lora, inference, bytes_per_param}"),
    Endpoint("chinchilla", scaling.chinchilla, "chinchilla(compute) -> {params, tokens, tokens_per_param, "
             "models}: the compute-optimal N and D (D = 20 N, C = 6 N D)"),
)
