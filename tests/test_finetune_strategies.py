"""Fine-tune, how to fine-tune and what it costs: feature extraction and layer-wise learning-rate decay,
the four strategies side by side, catastrophic forgetting measured (paraphrase retrieval, drift, the MLM
probe against transformers' own fill-mask pipeline), and the fully fine-tuned Hub models offline."""

from __future__ import annotations

import pytest
import torch
from gradio_client.exceptions import AppError

from labs.core.errors import BadInput
from labs.core.models import models
from labs.core.work import lm
from labs.finetune import (
    codegen,
    compare,
    forgetting,
    strategies,
    tab_tasks,
    tasks,
    training,
)


def settings(name, **changes):
    values = dict(strategy="full", learning_rate=1e-3, epochs=1, batch_size=8, train_examples=16, seed=0)
    return strategies.Settings(name, **(values | changes))


def run(s):
    return list(training.train(s, tasks.task_data(s.task)))[-1]


def test_paraphrase_and_probe_sets_are_what_the_readme_says():
    pairs = forgetting.paraphrase_pairs()
    assert len(pairs) >= 40 and all(a != b for a, b in pairs)
    assert len(set(forgetting.probe_sentences())) == 2 * len(pairs)
    sentiment = tasks.task_data("sentiment")
    training_texts = {t for t, _ in sentiment.train + sentiment.validation}
    training_texts |= {text for (a, b), _ in tasks.task_data("pair").train for text in (a, b)}
    training_texts |= {" ".join(row["tokens"]) for row in tasks.task_data("ner").train}
    qa_text = " ".join(row["context"] + " " + row["question"] for row in tasks.task_data("qa").train)
    held_out = forgetting.probe_sentences()
    assert not training_texts & set(held_out) and not any(s in qa_text for s in held_out)  # no run trains on them
    assert len(forgetting.mlm_probes()) >= 30 and all(s.count("[MASK]") == 1 for s, _ in forgetting.mlm_probes())


def test_llrd_groups_have_the_stated_rates(tiny_models):
    model, _ = models.load_for_classification(tiny_models["masked"], 2)
    s = settings(tiny_models["masked"], strategy="llrd_0.95", learning_rate=1e-3)
    optimizer, _ = training.make_optimizer(strategies.apply_strategy(model, s.strategy), s, 10)
    layers = model.config.num_hidden_layers
    names = {id(p): n for n, p in model.named_parameters()}
    seen = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            name = names[id(p)]
            depth = 0 if "embeddings" in name else (int(name.split(".layer.")[1].split(".")[0]) + 1
                                                    if ".layer." in name else layers)
            assert group["initial_lr"] == pytest.approx(1e-3 * 0.95 ** (layers - depth), rel=1e-12)
            seen.append(name)
    assert sorted(seen) == sorted(names.values())  # every parameter in exactly one group
    assert len({g["depth"] for g in optimizer.param_groups}) == layers + 1


def test_llrd_run_reports_one_rate_per_depth_and_the_schedule_scales_them_alike(tiny_models):
    result = run(settings(tiny_models["masked"], strategy="llrd_0.9", learning_rate=2e-3, epochs=2))
    assert [r["depth"] for r in result.layer_rates] == list(range(3))  # embeddings, layer 1, layer 2 + head
    assert [r["lr"] for r in result.layer_rates] == pytest.approx([2e-3 * 0.81, 2e-3 * 0.9, 2e-3])
    assert max(result.schedule) == pytest.approx(2e-3, rel=0.2)  # the head's rate, warmed up and decayed


def test_feature_extraction_trains_nothing_in_the_encoder(tiny_models):
    model, _ = models.load_for_classification(tiny_models["masked"], 2)
    strategies.apply_strategy(model, "features")
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable == ["classifier.weight", "classifier.bias"]
    result = run(settings(tiny_models["masked"], strategy="features", learning_rate=1e-2, epochs=2))
    kept, _, _, _ = training.kept_model(result.run_id)
    fresh, _ = models.load_for_classification(tiny_models["masked"], 2)
    for (name, after), (_, before) in zip(kept.named_parameters(), fresh.named_parameters()):
        if not name.startswith("classifier"):
            assert torch.equal(after, before), name  # bit-identical
    assert not torch.equal(kept.classifier.weight, fresh.classifier.weight)
    assert result.forgetting["drift"] == 0 and result.forgetting["retrieval_after"] == result.forgetting[
        "retrieval_before"]


def test_unknown_strategies_are_refused_with_the_list():
    for bad in ("llrd", "llrd_2", "llrd_-1", "features_3"):
        with pytest.raises(BadInput, match="llrd_0.95"):
            strategies.parse_strategy(bad)
    assert strategies.parse_strategy("llrd_0.95") == ("llrd", 0.95)


def test_codegen_covers_the_new_strategies(tiny_models):
    for strategy, needle in (("features", 'startswith("classifier")'), ("llrd_0.95", "optimizers=(optimizer, None)")):
        code = codegen.training_code(settings(tiny_models["masked"], strategy=strategy), "bert-base-uncased")
        compile(code, "<training code>", "exec")
        assert needle in code


# ------------------------------------------------------------ forgetting


def test_learning_rate_zero_forgets_nothing(tiny_models):
    result = run(settings(tiny_models["masked"], learning_rate=0.0))
    f = result.forgetting
    assert f["retrieval_after"] == f["retrieval_before"] and f["drift"] == 0
    assert f["mlm_top1_after"] == f["mlm_top1_before"] and f["mlm_probes"] > 0  # a masked LM gets the probe too
    assert f["sentences"] == 2 * len(forgetting.paraphrase_pairs())


def test_mlm_head_is_the_checkpoints_own_and_the_probe_equals_fill_mask(tiny_models):
    from transformers import pipeline

    loaded = models.load(tiny_models["masked"], "masked")
    head = lm.mlm_head(loaded.model)
    enc = loaded.tokenizer("The cat sat on the mat.", return_tensors="pt")
    with torch.no_grad():
        out = loaded.model(**enc, output_hidden_states=True)
        assert torch.allclose(head(out.hidden_states[-1]), out.logits, atol=1e-5)
    accuracy, used = forgetting.mlm_top1(loaded.model, loaded.tokenizer, head)
    fill = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, top_k=1)
    usable = [(s.replace("[MASK]", loaded.tokenizer.mask_token), a) for s, a in forgetting.mlm_probes()
              if len(loaded.tokenizer.tokenize(" " + a)) == 1]
    oracle = sum(fill(s)[0]["token"] == loaded.tokenizer.convert_tokens_to_ids(a) for s, a in usable) / len(usable)
    assert used == len(usable) and accuracy == pytest.approx(oracle)


def test_retrieval_counts_a_sentence_right_when_its_paraphrase_is_nearest():
    vectors = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.95, 0.05]]), dim=-1)
    # 0's nearest is 3 (wrong), 1's is 3 (wrong), 2's is 1 (wrong), 3's is 0 (wrong partner is 2) -> 0 %
    assert forgetting.retrieval_accuracy(vectors) == 0.0
    vectors = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]]), dim=-1)
    assert forgetting.retrieval_accuracy(vectors) == 1.0


@pytest.mark.slow
def test_minilm_forgets_more_at_1e_3_than_at_2e_5():
    gentle = training.finetune(models.MINILM_NAME, "full", 2e-5, 2, 16, 96, 0)["forgetting"]
    harsh = training.finetune(models.MINILM_NAME, "full", 1e-3, 2, 16, 96, 0)["forgetting"]
    assert gentle["retrieval_before"] >= 0.9  # MiniLM was trained for exactly this
    assert harsh["drift"] > 2 * gentle["drift"] and harsh["retrieval_after"] < gentle["retrieval_after"]


# ------------------------------------------------------------ four strategies, Hub models


def test_compare_strategies_runs_them_in_order(tiny_models):
    kept = list(training._finished)
    *progress, result = compare.compare_strategies(tiny_models["masked"], "sentiment", 1e-3, 1, 8, 16, 0)
    assert progress and progress[0]["status"] == "running"
    runs = result["runs"]
    assert [r["strategy"] for r in runs][:4] == ["features", "freeze_bottom_1", "full", "llrd_0.95"]
    assert runs[0]["learning_rate"] == compare.FEATURES_RATE and runs[2]["learning_rate"] == 1e-3
    assert runs[0]["trainable_params"] < runs[1]["trainable_params"] < runs[2]["trainable_params"]
    assert runs[2]["trainable_params"] == runs[3]["trainable_params"] == runs[3]["total_params"]
    assert runs[0]["drift"] == 0 and len(runs[3]["layer_rates"]) == 3
    assert len(compare.table_rows(runs)) == len(runs) == 7  # + LoRA, prompt and prefix tuning
    assert list(training._finished) == kept  # other students' trained models are not pushed out


def test_compare_strategies_api(client, tiny_models):
    result = client.predict(tiny_models["masked"], "sentiment", 1e-3, 1, 8, 16, 0, api_name="/compare_strategies")
    assert [r["strategy"] for r in result["runs"]][::3] == ["features", "llrd_0.95", "prefix_20"]
    with pytest.raises(AppError, match="causal"):
        client.predict(tiny_models["causal"], "sentiment", 1e-3, 1, 8, 16, 0, api_name="/compare_strategies")


def test_finetune_api_returns_forgetting_and_layer_rates(client, tiny_models):
    result = client.predict(tiny_models["masked"], "llrd_0.95", 1e-3, 1, 8, 16, 0, False, api_name="/finetune")
    assert set(result["forgetting"]) >= {"retrieval_before", "retrieval_after", "drift"}
    assert len(result["layer_rates"]) == 3


def test_fully_finetuned_models_say_offline_that_they_need_the_hub():
    with pytest.raises(BadInput, match="needs the Hub"):
        tab_tasks.fully_finetuned("ner")
    with pytest.raises(BadInput, match="dslim/bert-base-NER"):
        tab_tasks.fully_finetuned("ner")
    with pytest.raises(BadInput, match="no fully fine-tuned"):
        tab_tasks.fully_finetuned("pair")


def test_try_a_fully_finetuned_model_offline_says_so_where_the_view_goes():
    from labs.finetune import predict

    label, view = tab_tasks.on_try_hub("qa", *predict.EXAMPLES["qa"])
    assert label is None and "needs the Hub" in view and "distilbert-base-cased-distilled-squad" in view
    assert view.startswith('<div class="lab-notice">')


def test_the_run_history_names_the_metric_its_runs_share():
    from labs.finetune import report

    assert report.runs_metric([{"metric": "entity_f1"}, {"metric": "entity_f1"}]) == "entity_f1"
    assert report.runs_metric([{"metric": "entity_f1"}, {"metric": "accuracy"}]) == "metric"
    figure = report.curves_figure([], "Your last runs", "metric")
    assert "metric (each run's own)" in str(figure.layout.annotations)
