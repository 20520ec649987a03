"""The API from Python: one call to every kind of endpoint, with gradio_client, against a running LM Lab
(`./lab run`). docs/api.md shows this file as it is (`python -m tools.api_docs` copies it in)."""

from gradio_client import Client

client = Client("http://127.0.0.1:7860/")
print(client.predict(api_name="/models"))   # every model offered here, its family and source

pieces = client.predict("unbelievable", [], api_name="/tokenize")           # every tokenizer offered here
merges = client.predict("low 5\nlower 2\nnewest 6\nwidest 3", 5, "lowest", api_name="/bpe")
result = client.predict("The [MASK] sat on the mat.", "bert-base-uncased", 5, api_name="/fill_mask")
dist = client.predict("Once upon a", "gpt2", 0.7, 50, 0.9, api_name="/next_token")
beams = client.predict("Once upon a", "gpt2", "beam", 30, 1.0, 0, 1.0, 4, 0, api_name="/generate")
ppl = client.predict("The cat sat on the mat.", "gpt2", api_name="/score")["perplexity"]
lens = client.predict("The capital of France is", "gpt2", 5, api_name="/logit_lens")
tree = client.predict("The best way to learn is", "gpt2", 3, 5, api_name="/beam_tree")
masks = client.predict("The cat sat on the mat", "bert-base-uncased", "gpt2", api_name="/masks")
bank = client.predict("I sat on the river bank. | river\nI opened a bank account. | money", "", "bert-base-uncased", -1,
                      api_name="/embeddings")
run = client.predict("all-MiniLM-L6-v2 (offline)", "lora_r8", 5e-5, 3, 16, 200, 0, True, api_name="/finetune")
heads = client.predict("I sat on the river bank.", "bert-base-uncased", "I opened a bank account.", 2, 0,
                       api_name="/attention")
steps = client.predict("The cat sat on the [MASK].", "all-MiniLM-L6-v2 (offline)", 2, 5, "", None,
                       api_name="/forward_steps")                     # steps["attention"] == /attention's weights
curve = client.predict("all-MiniLM-L6-v2 (offline)", api_name="/attention_cost")
long = client.predict("", "all-MiniLM-L6-v2 (offline)", "all", api_name="/long_document")
ner = client.predict("all-MiniLM-L6-v2 (offline)", "full", 3e-4, 5, 16, 200, 0, True, "ner", api_name="/finetune")
tags = client.predict("ner", "Maria Okonkwo flew to Ljubljana.", "", ner["run_id"], "", api_name="/predict_task")
cards = client.predict([], True, api_name="/model_card")                      # every model here, timed
curve = client.predict("SmolLM2-135M-Instruct (offline)", [0, 1, 2, 4, 8], "arbitrary", [0, 1, 2], api_name="/few_shot")
probe = client.predict("SmolLM2-135M-Instruct (offline)", "The {occupation} said that [MASK] would be late.",
                       api_name="/bias_probe")
shift = client.predict("SmolLM2-135M-Instruct (offline)", "Your own paragraph.", api_name="/domain_shift")
examples = client.predict("The night train leaves before midnight. Passengers find their cabins.", "",
                          "bert-base-uncased", "gpt2", "t5-small", 0, api_name="/pretraining_examples")
p = client.predict("To bake bread, you first mix flour.", "The dough is then kneaded.", "bert-base-uncased",
                   api_name="/nsp")["p_is_next"]
spans = client.predict("Thank you for inviting me to your party last week.", "t5-small", 0.15, 3, 0,
                       api_name="/span_corruption")
curve = client.predict("", "bert-base-uncased", "5, 10, 15, 20, 30, 40, 50, 80", True, 2, api_name="/mask_rate")
gpt3 = client.predict(175e9, 300e9, "V100", 1, 0.4, api_name="/cost")                 # 3.15e23 FLOPs, 1.75M V100-hours
mem = client.predict(7e9, "mixed", "adam", 8, 1, 2048, "LLaMA-2 7B", api_name="/memory")  # full vs LoRA r = 8
split = client.predict(3.15e23, api_name="/chinchilla")                                  # D / N = 20
king = client.predict("king", "man", "woman", "queen", "all-MiniLM-L6-v2 (offline)", 10, api_name="/analogy")
step = client.predict([0, 2], 0, [0.5, 0.5], 0, 0.5, api_name="/gradient_step")          # loss 1.313 → 0.363
t5 = client.predict("sst2 sentence:", "this movie is great", "t5-small", 32, api_name="/t5_text_to_text")
# A class, scripted: start, ask, let the class answer (here three students), reveal beside the model.
start = client.predict("Week 6", api_name="/class_start")                  # share start["join_url"] with the class
client.predict(lecturer_key=start["lecturer_key"], kind="fill_mask", text="The cat sat on the ____",
               model="bert-base-uncased", api_name="/class_ask")
for word in ("mat", "floor", "mat"):
    student = client.predict(start["code"], api_name="/class_join")["student_id"]
    client.predict(start["code"], student, word, api_name="/class_answer")
reveal = client.predict(start["lecturer_key"], api_name="/class_reveal")   # reveal["agreement"]["perplexity"]
# Peer instruction: the lecture's questions prepared ahead (CSV, Moodle GIFT or XML; "handout": Part A), asked in
# order, answered with how sure each student is, against a countdown, voted on twice; then the lecture's report.
# A whole lecture, runnable: python -m tools.prepared_lecture (tools/prepared_lecture.py).
key, code = start["lecturer_key"], start["code"]
client.predict(key, "handout", "", "", api_name="/class_plan")               # or a file's text, format "gift"
client.predict(key, api_name="/class_next")                                # the next prepared question, asked
client.predict(key, 60, "start", api_name="/class_timer")                  # answering closes in a minute
client.predict(code, student, "mat", 3, api_name="/class_answer")          # 3: "fairly sure"
client.predict(key, api_name="/class_round")                               # discuss, then vote again
client.predict(code, student, "floor", 4, api_name="/class_answer")
both = client.predict(key, api_name="/class_reveal")["rounds"]            # both["changed"], both["moved"]
page = client.predict(key, "html", api_name="/class_report")["text"]       # a standalone page with the charts
