"""A chaos run of the API: every endpoint the server lists (the labs', the workbook's, the course ideas': all of
them, read from the server's own API description, so a new endpoint is in it the day it is added), called with
each argument in turn given a value of the wrong type while the others are sensible. Every call must end in a
friendly sentence for the client, and the server must log no ERROR for it (an ERROR is a traceback the
student saw as "Something went wrong")."""

from __future__ import annotations

from conftest import WORK, api_client
from gradio_client.exceptions import AppError

from labs.core.errors import GENERIC_MESSAGE

TEXT = "The cat sat on the mat. It was warm."


def sensible(endpoint: str, tiny: dict) -> dict:
    """Arguments an endpoint accepts, where it has no default (models: the tiny ones of the right family)."""
    m, c, t5, nsp = tiny["masked"], tiny["causal"], tiny["seq2seq"], tiny["pretraining"]
    models = {"/masks": {"encoder_model": m, "causal_model": c},
              "/pretraining_examples": {"model_masked": m, "model_causal": c, "model_seq2seq": t5},
              "/nsp": {"model": nsp}, "/nsp_accuracy": {"model": nsp}, "/span_corruption": {"model": t5},
              "/t5_text_to_text": {"model": t5, "prefix": "summarize:"},
              "/gradient_step": {"features": [1.0, 2.0], "label": 1, "weights": [0.5, -0.5]},
              "/cost": {"params": 1.1e8, "tokens": 1.3e11}, "/memory": {"params": 1.1e8}, "/chinchilla": {"compute": 1e21},
              "/check_part_b": {"answers_json": {"B2.1": {"sat": "0.58"}}},
              # the trainers at their smallest: a real run, in seconds
              "/cheating": {"steps": 100}, "/theta_distance": {"model": m, "learning_rates": [0.0], "sizes": [8]},
              "/baseline": {"model": m, "train_examples": 8}}
    causal = ("/next_token", "/generate", "/score", "/logit_lens", "/beam_tree", "/few_shot", "/domain_shift")
    return {**({"model": c} if endpoint in causal else {"model": m}), **models.get(endpoint, {})}


def wrong_values(kind: str) -> list:
    """Values of the wrong type for a parameter of this (Python) type."""
    if kind.startswith("dict"):
        return [[[1]], 12345]
    if "list" in kind:
        return [{"a": 1}, 12345]
    return [{"a": 1}, [[1]]]


def arguments(parameters: list[dict], given: dict) -> list:
    out = []
    for p in parameters:
        name, kind = p["parameter_name"], p["python_type"]["type"]
        if name in given:
            out.append(given[name])
        elif p["parameter_has_default"]:
            out.append(p["parameter_default"])
        else:
            out.append(TEXT if kind == "str" else 1 if kind in ("int", "float") else None)
    return out


def errors_in(result) -> list[str]:
    """The per-part errors a result carries (/masks answers a bad model on one side in that side's "error")."""
    if isinstance(result, dict):
        own = [v for k, v in result.items() if k == "error" and isinstance(v, str)]
        return own + [e for v in result.values() for e in errors_in(v)]
    if isinstance(result, list):
        return [e for v in result for e in errors_in(v)]
    return []


def friendly(message: str) -> bool:
    return bool(message.strip()) and GENERIC_MESSAGE not in message and "Traceback" not in message


def test_every_endpoint_answers_a_wrongly_typed_argument_with_a_friendly_error(app_server, tiny_models):
    # From an address of its own (behind the loopback proxy the app trusts X-Forwarded-For): its hundreds of wrong
    # class codes and keys count against that address in Ask the class's rate limit, not the other tests'.
    client = api_client(app_server["url"], headers={"X-Forwarded-For": "198.51.100.23"})
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert {"/check_course", "/check_part_b", "/part_b_questions", "/analogy", "/pooling", "/why_80_10_10",
            "/replaced_token_detection", "/t5_text_to_text", "/finetune", "/models"} <= set(endpoints)
    log = WORK / "app.log"
    failures, calls = [], 0
    for endpoint, info in endpoints.items():
        good = arguments(info["parameters"], sensible(endpoint, tiny_models))
        for index, p in enumerate(info["parameters"]):
            for bad in wrong_values(p["python_type"]["type"]):
                args = list(good)
                args[index] = bad
                before = log.stat().st_size
                calls += 1
                try:
                    errors = errors_in(client.submit(*args, api_name=endpoint).result(timeout=300))
                    if not errors or not all(map(friendly, errors)):
                        failures.append((endpoint, p["parameter_name"], bad, f"accepted: {errors}"))
                except AppError as exc:
                    if not friendly(str(exc)):
                        failures.append((endpoint, p["parameter_name"], bad, str(exc)[:200]))
                with log.open() as f:
                    f.seek(before)
                    errors = [line for line in f.read().splitlines() if " ERROR " in line]
                if errors:
                    failures.append((endpoint, p["parameter_name"], bad, errors[0][:200]))
    assert calls > 150
    assert failures == [], "\n".join(map(str, failures))
