"""Lab 4, "Attention": what attention heads actually do, on real models. bertviz's head and model
views (in a sandboxed iframe, with their JavaScript served locally), plotly heatmaps, and a
layers × heads map of each head's entropy and pattern."""

from __future__ import annotations

import functools
import hashlib
import html
import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labs import models, plots
from labs.errors import BadInput, check_int

TITLE = "Attention"
MAX_TOKENS = 128
MAX_CHARS = 5000  # tokenising megabytes only to keep 128 tokens would stall a worker
EXAMPLES = [
    ["I sat on the river bank and watched the water.", "I went to the bank to open an account."],
    ["The cat sat on the mat because it was tired.", ""],
    ["The keys to the cabinet are on the table.", ""],
]
VENDOR = Path(__file__).resolve().parent.parent / "assets" / "vendor"
HEAD_ZOOM = 1.4  # bertviz draws 15 px text; this reads from the back of a lecture hall
VENDORED_JS = ("jquery-2.2.4.min.js", "d3-5.7.0.min.js", "require-2.3.6.js")  # jquery and d3 before require.js

# The pattern labels, in the order the labeller tries them. "mixed": focused, but on no fixed position
# (often content: a verb looking at its subject).
PATTERNS = ("previous token", "next token", "self", "first token / [CLS]", "separator / end token", "broad", "mixed")
PATTERN_COLOURS = {"previous token": "#bfdbfe", "next token": "#ddd6fe", "self": "#fde68a",
                   "first token / [CLS]": "#fecaca", "separator / end token": "#fed7aa", "broad": "#e5e7eb",
                   "mixed": "#bbf7d0"}
SHORT = {"previous token": "prev", "next token": "next", "self": "self", "first token / [CLS]": "first",
         "separator / end token": "sep", "broad": "broad", "mixed": "mixed"}  # table cells stay narrow
FOCUSED = 0.5  # a head is "previous token" etc. when, on average, half its attention goes there
BROAD = 0.8  # ... and "broad" when its entropy is at least this share of the most it could be

# ---------------------------------------------------------------- compute


@dataclass(frozen=True)
class AttentionRun:
    """One forward pass: every layer's and head's attention for one text (or pair)."""

    model: str
    source: str
    family: str
    tokens: tuple[str, ...]  # readable (␣ for a leading space)
    segments: tuple[int, ...]  # 0 for sentence A, 1 for sentence B
    sentence_b_start: int | None
    special_positions: tuple[int, ...]  # [CLS], [SEP], <|endoftext|> ...
    weights: np.ndarray  # [layers, heads, n, n], float32, rows sum to 1
    note: str  # "your text was cut to 128 tokens" and the like

    @property
    def num_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def num_heads(self) -> int:
        return self.weights.shape[1]

    @property
    def causal(self) -> bool:
        return self.family == "causal"


def check_text(text) -> str:
    if not isinstance(text, str) or not text.strip():
        raise BadInput("Type a sentence first, for example: I sat on the river bank.")
    return text.strip()[:MAX_CHARS]


def encode(tokenizer, text: str, text_b: str):
    """Token ids, segment ids and where sentence B starts. Tokenizers with a separator (BERT) get
    `[CLS] A [SEP] B [SEP]`; the others (GPT-2, SmolLM2) read A and B as one running text."""
    if not text_b:
        ids = tokenizer(text)["input_ids"]
        return ids, [0] * len(ids), None
    if tokenizer.sep_token is not None:
        enc = tokenizer(text, text_b)
        ids = enc["input_ids"]
        segments = enc.get("token_type_ids") or [0] * len(ids)
        if 1 not in segments:  # a separator but no segment ids: B starts after the first separator
            first_sep = ids.index(tokenizer.sep_token_id) + 1
            segments = [0] * first_sep + [1] * (len(ids) - first_sep)
        return ids, segments, segments.index(1)
    ids_a = tokenizer(text)["input_ids"]
    ids_b = tokenizer(" " + text_b, add_special_tokens=False)["input_ids"]
    return ids_a + ids_b, [0] * len(ids_a) + [1] * len(ids_b), len(ids_a)


@functools.lru_cache(maxsize=8)  # a bert-base run at 128 tokens holds ~9 MB of weights
def run(model_name: str, text: str, text_b: str = "") -> AttentionRun:
    """One forward pass per (model, text, text_b) serves every view of this lab (and the Masks lab)."""
    import torch

    text, text_b = check_text(text), (text_b or "").strip()[:MAX_CHARS]
    loaded = models.load(model_name)
    ids, segments, b_start = encode(loaded.tokenizer, text, text_b)
    limit = min(MAX_TOKENS, loaded.max_tokens)
    note = ""
    if len(ids) > limit:
        note = f"Your text has {len(ids)} tokens; the views show the first {limit}."
        ids, segments = ids[:limit], segments[:limit]
        b_start = b_start if b_start is not None and b_start < limit else None  # B may be cut off entirely
    inputs = {"input_ids": torch.tensor([ids], device=loaded.device)}
    if b_start is not None and loaded.tokenizer.sep_token is not None and "token_type_ids" in \
            loaded.tokenizer.model_input_names:
        inputs["token_type_ids"] = torch.tensor([segments], device=loaded.device)
    with torch.no_grad():  # the base model: attention only, no vocabulary head over every position
        out = loaded.model.base_model(**inputs, output_attentions=True)
    weights = torch.stack([a[0] for a in out.attentions]).float().cpu().numpy()
    special = set(loaded.tokenizer.all_special_ids)
    return AttentionRun(model_name, loaded.source, loaded.choice.family,
                        tuple(models.readable_tokens(loaded.tokenizer, ids)), tuple(segments),
                        b_start, tuple(i for i, t in enumerate(ids) if t in special), weights, note)


def check_layer_head(r: AttentionRun, layer: int, head: int | None) -> None:
    if not isinstance(layer, (int, np.integer)) or not 0 <= layer < r.num_layers:
        raise BadInput(f"{r.model} has layers 0–{r.num_layers - 1}; layer {layer} does not exist.")
    if head is not None and (not isinstance(head, (int, np.integer)) or not 0 <= head < r.num_heads):
        raise BadInput(f"{r.model} has heads 0–{r.num_heads - 1}; head {head} does not exist.")


def head_weights(r: AttentionRun, layer: int, head: int | None) -> np.ndarray:
    """One head's n × n attention, or the average over the layer's heads when head is None."""
    check_layer_head(r, layer, head)
    return r.weights[layer].mean(axis=0) if head is None else r.weights[layer, head]


def row_entropy_bits(weights: np.ndarray) -> np.ndarray:
    """−Σ p log₂ p along the last axis (0 log 0 = 0)."""
    p = np.clip(weights.astype(np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(p), 0.0)
    return terms.sum(axis=-1)


def entropy_map(r: AttentionRun) -> np.ndarray:
    """Each head's attention entropy in bits, averaged over its query rows: layers × heads."""
    return row_entropy_bits(r.weights).mean(axis=-1)


def label_head(w: np.ndarray, special_positions=(), causal: bool = False) -> str:
    """Name what one head does from its n × n attention matrix (rows = queries).

    Row 0 is left out of every score: under a causal mask it can only attend to itself, which
    says nothing about the head. A fixed target that gets at least half the attention on average
    names the head; otherwise it is "broad" when its rows are close to uniform over what they may
    see, and "mixed" when it focuses on positions that change from row to row (content)."""
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[0]
    if n < 2:
        return "self"
    rows = np.arange(1, n)
    separators = [p for p in special_positions if p > 0]
    scores = {
        "previous token": w[rows, rows - 1].mean(),
        "next token": w[rows[:-1], rows[:-1] + 1].mean() if n > 2 else 0.0,
        "self": w[rows, rows].mean(),
        "first token / [CLS]": w[rows, 0].mean(),
        "separator / end token": w[1:, separators].sum(axis=1).mean() if separators else 0.0,
    }
    best = max(scores, key=scores.get)  # ties go to the earlier (simpler) pattern
    if scores[best] >= FOCUSED:
        return best
    allowed = rows + 1 if causal else np.full(n - 1, n)  # how many keys each row may attend to
    most = np.log2(allowed)
    spread = row_entropy_bits(w[1:]) / np.where(most > 0, most, 1)
    return "broad" if spread.mean() >= BROAD else "mixed"


def pattern_map(r: AttentionRun) -> list[list[str]]:
    return [[label_head(r.weights[layer, head], r.special_positions, r.causal) for head in range(r.num_heads)]
            for layer in range(r.num_layers)]


@functools.lru_cache(maxsize=8)
def summary(model_name: str, text: str, text_b: str = "") -> tuple[np.ndarray, list[list[str]]]:
    """Entropy and pattern maps, cached with the forward pass they come from."""
    r = run(model_name, text, text_b)
    return entropy_map(r), pattern_map(r)


def attention_result(text: str, model_name: str, text_b: str = "", layer: int = 0, head: int = 0) -> dict:
    """The `attention` API's JSON."""
    text_b = text_b or ""
    layer, head = check_int(layer, "The layer (counted from 0)"), check_int(head, "The head (counted from 0)")
    r = run(model_name, text, text_b)
    weights = head_weights(r, layer, head)
    entropy, patterns = summary(model_name, text, text_b)
    return {"model": r.model, "source": r.source, "tokens": list(r.tokens), "num_layers": r.num_layers,
            "num_heads": r.num_heads, "layer": layer, "head": head, "weights": weights.tolist(),
            "entropy": np.round(entropy, 4).tolist(), "patterns": patterns, "note": r.note}


# ---------------------------------------------------------------- bertviz views

_CONFIG_START = "require.config({"


def _bertviz_js(view: str) -> str:
    """bertviz's own view script, with its CDN `require.config` cut out: the modules are defined
    locally instead (see `view_document`)."""
    import bertviz

    source = (Path(bertviz.__file__).parent / f"{view}_view.js").read_text()
    start = source.index(_CONFIG_START)
    end = source.index("});", start) + len("});")
    return source[:start] + source[end:]


# Rebuilds bertviz's Python-side params in the page from a compact payload (weights as integer
# thousandths in one flat list): the same structure bertviz's head_view()/model_view() build,
# at about a third of the size.
EXPAND_JS = """
function labAttention(p) {
  const L = p.layers, H = p.heads, t = p.tokens, n = t.length, q = p.q, b = p.sentence_b_start;
  const full = [];
  for (let l = 0; l < L; l++) { const layer = [];
    for (let h = 0; h < H; h++) { const rows = [];
      for (let i = 0; i < n; i++) { const base = ((l * H + h) * n + i) * n, row = new Array(n);
        for (let j = 0; j < n; j++) row[j] = q[base + j] / 1000;
        rows.push(row); }
      layer.push(rows); }
    full.push(layer); }
  if (b === null) return [{name: null, attn: full, left_text: t, right_text: t}];
  const cut = (r0, r1, c0, c1) => full.map(ly => ly.map(hd => hd.slice(r0, r1).map(row => row.slice(c0, c1))));
  const A = [0, b], B = [b, n];
  return [{name: 'All', attn: full, left_text: t, right_text: t},
          {name: 'Sentence A -> Sentence A', attn: cut(...A, ...A), left_text: t.slice(...A), right_text: t.slice(...A)},
          {name: 'Sentence B -> Sentence B', attn: cut(...B, ...B), left_text: t.slice(...B), right_text: t.slice(...B)},
          {name: 'Sentence A -> Sentence B', attn: cut(...A, ...B), left_text: t.slice(...A), right_text: t.slice(...B)},
          {name: 'Sentence B -> Sentence A', attn: cut(...B, ...A), left_text: t.slice(...B), right_text: t.slice(...A)}];
}
"""

_FILTERS = ("All", "Sentence A -> Sentence A", "Sentence B -> Sentence B", "Sentence A -> Sentence B",
            "Sentence B -> Sentence A")


def safe_json(value) -> str:
    """JSON that can sit inside a <script> element: no "</script>", "<!--" or "&" can appear."""
    return (json.dumps(value, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def view_payload(r: AttentionRun) -> dict:
    return {"tokens": list(r.tokens), "sentence_b_start": r.sentence_b_start, "layers": r.num_layers,
            "heads": r.num_heads, "q": np.rint(r.weights * 1000).astype(np.int32).ravel().tolist()}


def view_height(r: AttentionRun, view: str) -> int:
    """Pixels the view needs (from bertviz's own layout constants), so the iframe does not scroll."""
    n = len(r.tokens)
    if view == "head":
        return int(HEAD_ZOOM * (100 + 22.5 * n))
    thumbnail = n * 7 * 12 / r.num_heads + 10
    return int(max(r.num_layers * thumbnail + 38, n * 18 + 55) + 90)


def view_document(r: AttentionRun, view: str, scripts: str = "inline") -> str:
    """A complete HTML page with bertviz's head or model view of this run.

    scripts="inline" puts require.js, d3 and jquery in the page (a standalone file that works
    offline); scripts="served" points at this server's copy (`gradio_api/file=...`, relative to
    the app's page), which the browser fetches once and caches instead of receiving ~400 KB per view."""
    if view not in ("head", "model"):
        raise BadInput("The view is 'head' or 'model'.")
    if scripts == "inline":
        libs = "".join(f"<script>{(VENDOR / name).read_text()}</script>\n" for name in VENDORED_JS)
    else:
        libs = "".join(f'<script src="gradio_api/file={html.escape(str(VENDOR / name))}"></script>\n'
                       for name in VENDORED_JS)
    root = f"bertviz-{view}"
    layers, heads = list(range(r.num_layers)), list(range(r.num_heads))
    if view == "head":
        params = (f"{{attention: labAttention(LAB_DATA), default_filter: '0', root_div_id: '{root}', layer: null, "
                  f"heads: null, include_layers: {layers}}}")
        controls = 'Layer: <select id="layer"></select>'
    else:
        params = (f"{{attention: labAttention(LAB_DATA), default_filter: '0', display_mode: 'light', "
                  f"root_div_id: '{root}', include_layers: {layers}, include_heads: {heads}, "
                  f"total_heads: {r.num_heads}}}")
        controls = ""
    if r.sentence_b_start is not None:
        options = "".join(f'<option value="{i}">{name}</option>' for i, name in enumerate(_FILTERS))
        controls += f' Attention: <select id="filter">{options}</select>'
    script = _bertviz_js(view).replace("PYTHON_PARAMS", params)
    title = f"bertviz {view} view: {r.model}"
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body {{ font-family: Helvetica, Arial, sans-serif; font-size: 17px; margin: 8px; }}
#bertviz-head {{ zoom: {HEAD_ZOOM}; }}
select {{ font-size: 16px; }}</style>
{libs}<script>define('jquery', [], () => window.jQuery); define('d3', [], () => window.d3);</script>
</head><body>
<div id="{root}"><span style="user-select:none">{controls}</span><div id="vis"></div></div>
<script>const LAB_DATA = {safe_json(view_payload(r))};
{EXPAND_JS}</script>
<script>
{script}
</script>
</body></html>"""


def iframe(document: str, height: int, title: str) -> str:
    """A sandboxed iframe: its scripts run, but in an opaque origin that cannot touch the app."""
    return (f'<iframe class="lab-bertviz" sandbox="allow-scripts" title="{html.escape(title)}" '
            f'style="width:100%;height:{height}px;border:1px solid #d1d5db;border-radius:8px;background:white" '
            f'srcdoc="{html.escape(document, quote=True)}"></iframe>')


@functools.lru_cache(maxsize=4)  # at 128 tokens a bert-base view is several MB of HTML
def views(model_name: str, text: str, text_b: str = "") -> dict[str, str]:
    """Both views as iframes for the app page (cached per text, like the forward pass)."""
    r = run(model_name, text, text_b)
    return {view: iframe(view_document(r, view, scripts="served"), view_height(r, view),
                         f"bertviz {view} view of {r.model}") for view in ("head", "model")}


_DOWNLOADS = Path(tempfile.mkdtemp(prefix="lmlab-bertviz-"))


@functools.lru_cache(maxsize=8)
def standalone_files(model_name: str, text: str, text_b: str = "") -> dict[str, str]:
    """Both views as standalone HTML files (scripts inlined, so they open offline), for download."""
    r = run(model_name, text, text_b)
    key = hashlib.sha256(repr((model_name, text, text_b)).encode()).hexdigest()[:16]
    paths = {}
    for view in ("head", "model"):
        path = _DOWNLOADS / key / f"bertviz-{view}-view.html"
        path.parent.mkdir(exist_ok=True)
        path.write_text(view_document(r, view, scripts="inline"), encoding="utf-8")
        paths[view] = str(path)
    return paths


# ---------------------------------------------------------------- figures


def head_figure(r: AttentionRun, layer: int, head: int | None):
    what = "average over heads" if head is None else f"head {head}"
    weights = head_weights(r, layer, head)
    return plots.heatmap(np.round(weights, 3), list(r.tokens), title=f"{r.model}: layer {layer}, {what}",
                         colorscale="Viridis", zmin=0, zmax=None,
                         text_format="%{z:.2f}" if len(r.tokens) <= 12 else None)


def layer_grid_figure(r: AttentionRun, layer: int, patterns: list[list[str]]):
    """All heads of one layer, small multiples, each titled with its pattern label."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    check_layer_head(r, layer, None)
    cols = 4 if r.num_heads > 4 else r.num_heads
    rows = math.ceil(r.num_heads / cols)
    fig = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.03, vertical_spacing=0.08,
                        subplot_titles=[f"head {h}: {patterns[layer][h]}" for h in range(r.num_heads)])
    labels = plots.unique_labels(list(r.tokens))
    for h in range(r.num_heads):
        fig.add_trace(go.Heatmap(z=np.round(r.weights[layer, h], 3), x=labels, y=labels, zmin=0, zmax=1,
                                 colorscale="Viridis", showscale=False,
                                 hovertemplate=f"head {h}: from %{{y}} to %{{x}}: %{{z}}<extra></extra>"),
                      row=h // cols + 1, col=h % cols + 1)
    fig.update_yaxes(autorange="reversed", showticklabels=False, type="category")
    fig.update_xaxes(showticklabels=False, type="category")
    fig.update_annotations(font_size=15)
    fig.update_layout(title=dict(text=f"{r.model}: every head of layer {layer}", font=dict(size=20)),
                      font=plots.FONT, height=60 + 230 * rows, margin=dict(l=10, r=10, t=80, b=10),
                      template="plotly_white")
    return fig


def head_map_rows(entropy: np.ndarray, patterns: list[list[str]]) -> list[list[str]]:
    """The layers × heads map as table rows: short pattern name and entropy in each cell."""
    return [[f"L{layer}"] + [f"{SHORT[patterns[layer][h]]} {entropy[layer, h]:.1f}" for h in range(entropy.shape[1])]
            for layer in range(entropy.shape[0])]


def pattern_legend(patterns: list[list[str]]) -> str:
    """Colour chips with each pattern's short name and how many heads have it (HTML, no user text)."""
    counts = pattern_counts(patterns)
    chips = "".join(f'<span class="lab-chip" style="background:{PATTERN_COLOURS[p]}">'
                    f"<b>{SHORT[p]}</b> = {html.escape(p)}: {c}</span> " for p, c in counts.items())
    return f'<div class="lab-legend">{chips}</div>'


def pattern_counts(patterns: list[list[str]]) -> dict[str, int]:
    flat = [p for row in patterns for p in row]
    return {p: flat.count(p) for p in PATTERNS if p in flat}


@dataclass
class AllViews:
    """Everything the tab shows for one request (the benchmark times exactly this)."""

    run: AttentionRun
    entropy: np.ndarray
    patterns: list[list[str]]
    iframes: dict[str, str]  # "head" / "model" -> sandboxed iframe HTML
    files: dict[str, str]  # "head" / "model" -> standalone HTML file
    head_figure: object
    grid_figure: object
    result: dict  # the API's JSON


def heatmap_figures(model_name: str, text: str, text_b: str, layer, head) -> tuple[int, int | None, object, object]:
    """The chosen head's heatmap (head None = the average) and the layer's grid, with layer and
    head clamped to what the model has (the sliders may still show another model's range)."""
    r = run(model_name, text, text_b)
    layer = min(max(check_int(layer, "The layer"), 0), r.num_layers - 1)
    head = None if head is None else min(max(check_int(head, "The head"), 0), r.num_heads - 1)
    _, patterns = summary(model_name, text, text_b)
    return layer, head, head_figure(r, layer, head), layer_grid_figure(r, layer, patterns)


def all_views(model_name: str, text: str, text_b: str = "", layer: int = 0, head: int | None = 0) -> AllViews:
    """Every view of the lab from one cached forward pass."""
    text_b = text_b or ""
    layer, head, head_fig, grid_fig = heatmap_figures(model_name, text, text_b, layer, head)
    entropy, patterns = summary(model_name, text, text_b)
    return AllViews(run(model_name, text, text_b), entropy, patterns, views(model_name, text, text_b),
                    standalone_files(model_name, text, text_b), head_fig, grid_fig,
                    attention_result(text, model_name, text_b, layer, 0 if head is None else head))


# ---------------------------------------------------------------- tab

EXPLAINER = """**Every head in every layer spreads each token's attention over the other tokens, and many heads
specialise**: one looks at the previous token, one at `[SEP]`, one links a pronoun to its noun. Type a
sentence (or a pair A/B for BERT-style models), then find those heads in the bertviz views, the heatmaps
and the map of all heads below. The example is the lecture's "bank" pair."""


def build_tab(demo) -> None:
    import gradio as gr
    import pandas as pd

    from labs import ui

    ui.explainer(EXPLAINER)
    with gr.Row():
        with gr.Column(scale=3):
            text = gr.Textbox(EXAMPLES[0][0], label="Sentence A", max_lines=3)
            text_b = gr.Textbox(EXAMPLES[0][1], label="Sentence B (optional; BERT reads [CLS] A [SEP] B [SEP])",
                                max_lines=3)
        with gr.Column(scale=2):
            model = ui.model_dropdown("masked", "encoder", "causal", family_order=True)
            show = gr.Button("Show attention", variant="primary")
    gr.Examples(EXAMPLES, inputs=[text, text_b], label="Examples")
    notice = gr.Markdown()
    segments = gr.HighlightedText(label="Tokens and segments (A / B; special tokens marked)",
                                  color_map={"A": "#bfdbfe", "B": "#bbf7d0", "special": "#fde68a"},
                                  combine_adjacent=False, show_legend=True)
    with gr.Tab("Head view (bertviz)"):
        gr.Markdown("Hover over a token to see where it attends; double-click a colour to show one head. "
                    "Each colour is a head; line thickness is the weight.")
        head_view = gr.HTML()
        head_download = gr.DownloadButton("Download this view (standalone HTML, works offline)")
    with gr.Tab("Model view (bertviz)"):
        gr.Markdown("Every layer (rows) and head (columns) at once; click a thumbnail to enlarge it.")
        model_view = gr.HTML()
        model_download = gr.DownloadButton("Download this view (standalone HTML, works offline)")
    gr.Markdown("### Heatmaps and what each head does")
    with gr.Row():
        layer = gr.Slider(0, 11, value=0, step=1, label="Layer")
        head = gr.Slider(0, 11, value=0, step=1, label="Head")
        average = gr.Checkbox(False, label="Average over heads")
    with gr.Row():
        with gr.Column(scale=1):
            head_plot = gr.Plot(label="The chosen head")
        with gr.Column(scale=1):
            grid_plot = gr.Plot(label="Every head of the chosen layer")
    counts = gr.Markdown()
    legend = gr.HTML()
    head_map = gr.Dataframe(label="Every layer × head: its pattern and attention entropy in bits "
                                  "(click a cell to open that head)", interactive=False)
    result_json = gr.JSON(label="Result (as the API returns it)", open=False)
    with gr.Accordion("Compare: an encoder and a causal LM on the same sentence", open=False):
        with gr.Row():
            compare_encoder = ui.model_dropdown("masked", "encoder", label="Encoder")
            compare_causal = ui.model_dropdown("causal", label="Causal LM")
        compare_btn = gr.Button("Compare (last layer, average over heads)")
        compare_note = gr.Markdown()
        with gr.Row():
            compare_left, compare_right = gr.Plot(), gr.Plot()
    ui.try_this(
        "The bank pair: in the head view, pick the filter Sentence B -> Sentence A and hover over \"bank\". "
        "Which layer links the two uses most?",
        "Find a previous-token head in the map (blue cells). Open it: where is the bright diagonal?",
        "Many BERT heads send most attention to [SEP]. Count the orange cells. Why might a head \"rest\" there?",
        "Compare: why is the causal LM's heatmap empty above the diagonal, and why does its first column glow?",
        "Switch to a causal model: which patterns disappear, and why can't a causal head be a next-token head?")

    def segment_chips(r: AttentionRun):
        special = set(r.special_positions)
        return [(f"{t} ", "special" if i in special else ("B" if r.segments[i] else "A"))
                for i, t in enumerate(r.tokens)]

    def map_table(r: AttentionRun, entropy, patterns):
        frame = pd.DataFrame(head_map_rows(entropy, patterns),
                             columns=["layer"] + [f"H{h}" for h in range(r.num_heads)])
        colours = [["background-color: #f9fafb"] + [f"background-color: {PATTERN_COLOURS[p]}" for p in row]
                   for row in patterns]
        return frame.style.apply(lambda _: pd.DataFrame(colours, columns=frame.columns), axis=None)

    @ui.friendly
    def on_show(text_in, text_b_in, model_name, layer_i, head_i, avg):
        v = all_views(model_name, text_in, text_b_in, layer_i, None if avg else head_i)
        r = v.run
        notes = [ui.model_badge(models.load(model_name))]
        if r.note:
            notes.append(ui.notice(ui.esc(r.note)))
        if text_b_in and r.causal:
            notes.append("A causal LM has no segments: sentence B simply follows A in one text.")
        return ("\n\n".join(notes), segment_chips(r), v.iframes["head"], v.iframes["model"], v.files["head"],
                v.files["model"], gr.update(maximum=r.num_layers - 1, value=v.result["layer"]),
                gr.update(maximum=r.num_heads - 1, value=v.result["head"]), v.head_figure, v.grid_figure,
                f"**{r.num_layers} layers × {r.num_heads} heads = {r.num_layers * r.num_heads} heads.** "
                "Low entropy = focused on few tokens; high = spread out.", pattern_legend(v.patterns),
                map_table(r, v.entropy, v.patterns), v.result)

    show_outputs = [notice, segments, head_view, model_view, head_download, model_download, layer, head, head_plot,
                    grid_plot, counts, legend, head_map, result_json]
    show_inputs = [text, text_b, model, layer, head, average]
    show.click(on_show, show_inputs, show_outputs, api_visibility="private")
    demo.load(on_show, show_inputs, show_outputs, api_visibility="private")

    @ui.friendly
    def on_heatmap(text_in, text_b_in, model_name, layer_i, head_i, avg):
        return heatmap_figures(model_name, text_in, text_b_in or "", layer_i, None if avg else head_i)[2:]

    for control in (layer, head):
        control.release(on_heatmap, show_inputs, [head_plot, grid_plot], api_visibility="private")
    average.change(on_heatmap, show_inputs, [head_plot, grid_plot], api_visibility="private")

    @ui.friendly
    def on_cell(text_in, text_b_in, model_name, evt: gr.SelectData):
        row, col = evt.index
        if col == 0:  # the layer-name column
            return gr.update(), gr.update(), gr.update(), gr.update(), gr.update()
        return (gr.update(value=row), gr.update(value=col - 1), gr.update(value=False),
                *on_heatmap(text_in, text_b_in, model_name, row, col - 1, False))

    head_map.select(on_cell, [text, text_b, model], [layer, head, average, head_plot, grid_plot],
                    api_visibility="private")

    def on_compare(text_in, encoder_name, causal_name):
        figures, notes = [], []
        for role, name in (("Encoder", encoder_name), ("Causal LM", causal_name)):
            try:
                r = run(name, text_in)
                last = r.num_layers - 1
                weights = head_weights(r, last, None)
                above = float(weights[np.triu_indices(len(r.tokens), k=1)].sum())
                _, patterns = summary(name, text_in)
                found = ", ".join(f"{p} {c}" for p, c in pattern_counts(patterns).items())
                figures.append(head_figure(r, last, None))
                notes.append(f"**{role}: {ui.esc(r.model)}** ({r.source}). Attention above the diagonal, "
                             f"last layer: **{above:.3f}**. Heads: {found}.")
            except Exception as exc:  # one side failing keeps the other
                figures.append(None)
                notes.append(f"**{role}**: {ui.esc(str(ui.to_gr_error(exc).message))}")
        return "\n\n".join(notes), *figures

    compare_btn.click(on_compare, [text, compare_encoder, compare_causal], [compare_note, compare_left, compare_right],
                      api_visibility="private")

    @ui.friendly
    def api_attention(text: str, model: str, text_b: str = "", layer: int = 0, head: int = 0) -> dict:
        return attention_result(text, model, text_b, layer, head)

    gr.api(api_attention, api_name="attention",
           api_description="Attention of one layer and head for a text (or pair), with every head's entropy and "
                           "pattern label.")
