"""Fine-tune, the same run outside the lab: the Trainer code for the current settings (exercise B5), with what the
handout's B5.1 code lacks (the TrainingArguments import; transformers 5's warm-up argument) put right and said."""

from __future__ import annotations

from labs.finetune.strategies import LORA_TARGETS, Settings, parse_strategy
from labs.finetune.training import MAX_LENGTH

LLRD_CODE = """# Layer-wise learning-rate decay: depth l learns at lr · ξ^(L − l)
# (the top layer and the head at lr, the embeddings at lr · ξ^L).
import torch
L, xi = model.config.num_hidden_layers, {xi}
def depth(name):
    if ".embeddings." in name:
        return 0
    if ".layer." in name:
        return int(name.split(".layer.")[1].split(".")[0]) + 1
    return L
groups = {{}}
for name, p in model.named_parameters():
    groups.setdefault(depth(name), []).append(p)
# (the lab also keeps biases and LayerNorm weights out of weight decay; left out here for brevity)
optimizer = torch.optim.AdamW([{{"params": ps, "lr": {lr:g} * xi ** (L - d)}} for d, ps in groups.items()],
                              weight_decay={decay:g})"""


B5_FIXES = ("The handout's B5.1 code calls `TrainingArguments(...)` without importing it; the code below imports it "
            "(`from transformers import ... TrainingArguments`). Its `warmup_steps=` is right for transformers 5, where "
            "warm-up is `warmup_steps` alone: a whole number of steps, or a float below 1 for a share of all the "
            "steps (the `warmup_ratio` argument of earlier versions is gone).")

B5_COMMENT = """# TrainingArguments is imported above: the handout's B5.1 code uses it without importing it. In transformers 5
# warm-up is warmup_steps alone: a whole number of steps, or a float below 1 for a share of all steps
# (warmup_ratio is gone)."""


def training_code(s: Settings, hub_id: str, num_labels: int = 2) -> str:
    """The Trainer code equivalent to the current settings (exercise B5)."""
    kind, n = parse_strategy(s.strategy)
    freeze = {
        "full": "# Full fine-tuning: every parameter is trained.",
        "freeze_embeddings": "for p in model.base_model.embeddings.parameters():\n    p.requires_grad = False",
        "freeze_bottom": (f"for p in model.base_model.embeddings.parameters():\n    p.requires_grad = False\n"
                          f"for layer in model.base_model.encoder.layer[:{n}]:\n"
                          f"    for p in layer.parameters():\n        p.requires_grad = False"),
        "features": ("for name, p in model.named_parameters():  # feature extraction: a linear head on frozen "
                     "features\n    p.requires_grad = name.startswith(\"classifier\")"),
        "head_only": ("for name, p in model.named_parameters():  # the head only: pooler and classifier\n"
                      "    p.requires_grad = name.startswith((\"classifier\", \"bert.pooler\"))"),
        "llrd": LLRD_CODE.format(xi=n, lr=s.learning_rate, decay=s.weight_decay),
        "lora": (f"from peft import LoraConfig, TaskType, get_peft_model\n"
                 f"model = get_peft_model(model, LoraConfig(task_type=TaskType.SEQ_CLS, r={n}, lora_alpha={2 * n},\n"
                 f"    target_modules={list(LORA_TARGETS[s.lora_targets])},\n"
                 f"    modules_to_save=[\"classifier\", \"pooler\"]))\n"
                 f"model.print_trainable_parameters()"),
        "adapter": (f"# Bottleneck adapters (m = {n}): no library here offers them beside transformers 5 (see LM Lab's\n"
                    f"# labs/finetune/bottleneck.py, which inserts them after each sub-layer's output projection)\n"
                    f"from labs.finetune import bottleneck\nmodel = bottleneck.insert(model, {n})"),
        "prompt": (f"from peft import PromptTuningConfig, TaskType, get_peft_model\n"
                   f"model = get_peft_model(model, PromptTuningConfig(task_type=TaskType.SEQ_CLS, "
                   f"num_virtual_tokens={n}))\nmodel.print_trainable_parameters()  # the soft prompt and the classifier"),
        "prefix": (f"from peft import PrefixTuningConfig, TaskType, get_peft_model\n"
                   f"model = get_peft_model(model, PrefixTuningConfig(task_type=TaskType.SEQ_CLS, "
                   f"num_virtual_tokens={n}))\nmodel.print_trainable_parameters()  # keys, values and the classifier"),
    }[kind]
    optimizers = ", optimizers=(optimizer, None)" if kind == "llrd" else ""  # Trainer adds the linear schedule
    return f'''from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

tokenizer = AutoTokenizer.from_pretrained("{hub_id}")
model = AutoModelForSequenceClassification.from_pretrained("{hub_id}", num_labels={num_labels})
{freeze}

{B5_COMMENT}
args = TrainingArguments(
    output_dir="finetune-out",
    learning_rate={s.learning_rate:g},
    num_train_epochs={s.epochs},
    per_device_train_batch_size={s.batch_size},
    per_device_eval_batch_size=64,
    warmup_steps={s.warmup_ratio:g},  # a float below 1 is a share of all steps (transformers 5)
    weight_decay={s.weight_decay:g},
    lr_scheduler_type="linear",
    eval_strategy="epoch",
    logging_steps=1,
    seed={s.seed},
    save_strategy="no",
    report_to="none",
    use_cpu=True,
)
# train_ds / val_ds: {s.train_examples} training sentences and the validation set, tokenised
# (max_length={MAX_LENGTH}), e.g. with datasets.Dataset.from_dict(...).map(tokenize, batched=True)
trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=val_ds,
                  processing_class=tokenizer, compute_metrics=accuracy{optimizers})
trainer.train()
'''
