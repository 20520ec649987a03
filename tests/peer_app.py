"""The app a user would write instead of LM Lab's Fill in the blank, for the load test: a plain
gr.Blocks with pipeline("fill-mask") behind one event, batched by Gradio (batch=True).

    python tests/peer_app.py MODEL_FOLDER PORT
    python tests/peer_app.py - PORT     # no model: the plain one-tab page, for the page-open load test
"""

from __future__ import annotations

import sys

import gradio as gr
from transformers import pipeline

MAX_BATCH = 16


def main(folder: str, port: int) -> None:
    pipe = pipeline("fill-mask", model=folder, device="cpu") if folder != "-" else None

    def fill(texts: list[str]) -> tuple[list[list[dict]]]:
        out = pipe(list(texts), top_k=5, batch_size=MAX_BATCH)  # Gradio passes a tuple, the pipeline wants a list
        if len(texts) == 1:  # the pipeline returns a flat list for one text
            out = [out]
        return ([[{"token": p["token_str"], "token_id": p["token"], "prob": p["score"]} for p in preds]
                 for preds in out],)

    with gr.Blocks() as demo, gr.Tab("Fill in the blank"):
        text, result, button = gr.Textbox(), gr.JSON(), gr.Button()
        button.click(fill, text, result, batch=True, max_batch_size=MAX_BATCH, api_name="fill_mask")
    demo.queue().launch(server_name="127.0.0.1", server_port=port)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
