"""Attention, bertviz's head and model views: bertviz's own JavaScript with its libraries served
from this server (or inlined for a standalone download), in a sandboxed iframe. Nothing the student
types can leave the data's <script> element or run."""

from __future__ import annotations

import atexit
import hashlib
import html
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

import numpy as np

from labs.attention.compute import PARTS, AttentionRun
from labs.core.errors import BadInput

VENDOR = Path(__file__).resolve().parents[2] / "assets" / "vendor"
HEAD_ZOOM = 1.4  # bertviz draws 15 px text; this reads from the back of a lecture hall
VENDORED_JS = ("jquery-2.2.4.min.js", "d3-5.7.0.min.js", "require-2.3.6.js")  # jquery and d3 before require.js
VIEWS = ("head", "model")

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
# at about a third of the size. An encoder-decoder's payload has its decoder's tokens and two more
# lists (decoder, cross), which become bertviz's "Encoder", "Decoder" and "Cross" entries, as its
# head_view(encoder_attention=..., decoder_attention=..., cross_attention=...) builds them.
EXPAND_JS = """
function labExpand(q, L, H, left, right) {
  const n = left.length, m = right.length, full = [];
  for (let l = 0; l < L; l++) { const layer = [];
    for (let h = 0; h < H; h++) { const rows = [];
      for (let i = 0; i < n; i++) { const base = ((l * H + h) * n + i) * m, row = new Array(m);
        for (let j = 0; j < m; j++) row[j] = q[base + j] / 1000;
        rows.push(row); }
      layer.push(rows); }
    full.push(layer); }
  return full;
}
function labAttention(p) {
  const L = p.layers, H = p.heads, t = p.tokens, n = t.length, b = p.sentence_b_start;
  const full = labExpand(p.q, L, H, t, t);
  if (p.decoder_tokens) { const d = p.decoder_tokens;
    return [{name: 'Encoder', attn: full, left_text: t, right_text: t},
            {name: 'Decoder', attn: labExpand(p.dq, L, H, d, d), left_text: d, right_text: d},
            {name: 'Cross', attn: labExpand(p.cq, L, H, d, t), left_text: d, right_text: t}]; }
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
SEQ2SEQ_FILTERS = ("Encoder", "Decoder", "Cross")  # in the order of compute.PARTS


def safe_json(value) -> str:
    """JSON that can sit inside a <script> element: no "</script>", "<!--" or "&" can appear."""
    return (json.dumps(value, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _thousandths(weights: np.ndarray, layers: int, heads: int) -> list[int]:
    return np.rint(weights[:layers, :heads] * 1000).astype(np.int32).ravel().tolist()


def shown_layers_heads(r: AttentionRun) -> tuple[int, int]:
    """Layers and heads bertviz draws: every one, or for an encoder-decoder those all three kinds
    share (bertviz's layer menu is one for all three; T5's encoder and decoder are the same size)."""
    if not r.seq2seq:
        return r.num_layers, r.num_heads
    shapes = (r.weights.shape, r.decoder_weights.shape, r.cross_weights.shape)
    return min(s[0] for s in shapes), min(s[1] for s in shapes)


def view_payload(r: AttentionRun) -> dict:
    layers, heads = shown_layers_heads(r)
    payload = {"tokens": list(r.tokens), "sentence_b_start": r.sentence_b_start, "layers": layers,
               "heads": heads, "q": _thousandths(r.weights, layers, heads)}
    if r.seq2seq:
        payload.update(decoder_tokens=list(r.decoder_tokens), dq=_thousandths(r.decoder_weights, layers, heads),
                       cq=_thousandths(r.cross_weights, layers, heads))
    return payload


def view_height(r: AttentionRun, view: str) -> int:
    """Pixels the view needs (from bertviz's own layout constants), so the iframe does not scroll."""
    n = max(len(r.tokens), len(r.decoder_tokens))
    if view == "head":
        return int(HEAD_ZOOM * (100 + 22.5 * n))
    layers, heads = shown_layers_heads(r)
    thumbnail = n * 7 * 12 / heads + 10
    return int(max(layers * thumbnail + 38, n * 18 + 55) + 90)


def filter_controls(r: AttentionRun) -> str:
    """bertviz's "Attention:" menu: sentence A/B filters for a pair, the three kinds for an encoder-decoder."""
    names = SEQ2SEQ_FILTERS if r.seq2seq else _FILTERS if r.sentence_b_start is not None else ()
    if not names:
        return ""
    options = "".join(f'<option value="{i}">{name}</option>' for i, name in enumerate(names))
    return f' Attention: <select id="filter">{options}</select>'


def view_document(r: AttentionRun, view: str, scripts: str = "inline", part: str = "encoder") -> str:
    """A complete HTML page with bertviz's head or model view of this run.

    scripts="inline" puts require.js, d3 and jquery in the page (a standalone file that works
    offline); scripts="served" points at this server's copy (`gradio_api/file=...`, relative to
    the app's page), which the browser fetches once and caches instead of receiving ~400 KB per view.
    For an encoder-decoder, bertviz's menu offers encoder, decoder and cross-attention, `part` first."""
    if view not in ("head", "model"):
        raise BadInput("The view is 'head' or 'model'.")
    first = PARTS.index(part) if r.seq2seq and part in PARTS else 0
    if scripts == "inline":
        libs = "".join(f"<script>{(VENDOR / name).read_text()}</script>\n" for name in VENDORED_JS)
    else:
        libs = "".join(f'<script src="gradio_api/file={html.escape(str(VENDOR / name))}"></script>\n'
                       for name in VENDORED_JS)
    root = f"bertviz-{view}"
    num_layers, num_heads = shown_layers_heads(r)
    layers, heads = list(range(num_layers)), list(range(num_heads))
    if view == "head":
        params = (f"{{attention: labAttention(LAB_DATA), default_filter: '{first}', root_div_id: '{root}', "
                  f"layer: null, heads: null, include_layers: {layers}}}")
        controls = 'Layer: <select id="layer"></select>'
    else:
        params = (f"{{attention: labAttention(LAB_DATA), default_filter: '{first}', display_mode: 'light', "
                  f"root_div_id: '{root}', include_layers: {layers}, include_heads: {heads}, "
                  f"total_heads: {num_heads}}}")
        controls = ""
    controls += filter_controls(r).replace(f'value="{first}"', f'value="{first}" selected', 1)
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


def views(r: AttentionRun, part: str = "encoder") -> dict[str, str]:
    """Both views as iframes for the app page."""
    return {view: iframe(view_document(r, view, scripts="served", part=part), view_height(r, view),
                         f"bertviz {view} view of {r.model}") for view in VIEWS}


_DOWNLOADS: Path | None = None  # made on the first download: a process that offers none leaves no folder behind
_downloads_lock = threading.Lock()
KEPT_DOWNLOADS = 256  # texts whose two files (about 1 MB each) stay on disk; the oldest go first


def downloads_folder() -> Path:
    """The temporary folder of the standalone downloads, made on first use and removed at exit."""
    global _DOWNLOADS
    with _downloads_lock:
        if _DOWNLOADS is None:
            _DOWNLOADS = Path(tempfile.mkdtemp(prefix="lmlab-bertviz-"))
            atexit.register(shutil.rmtree, _DOWNLOADS, True)
        return _DOWNLOADS


def _keep_newest(folder: Path, keep: int) -> None:
    """Remove all but the `keep` most recently written runs, so a course's worth of texts cannot fill
    the disk (a removed run is written again if asked for)."""
    def written(run: Path) -> float:
        try:
            return run.stat().st_mtime
        except OSError:  # removed meanwhile by another student's request
            return 0.0

    for old in sorted(folder.iterdir(), key=written)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def standalone_files(r: AttentionRun, part: str = "encoder") -> dict[str, str]:
    """Both views as standalone HTML files (scripts inlined, so they open offline), for download.
    Named by a hash of the run: the same text is written once."""
    part = part if r.seq2seq else "encoder"
    digest = hashlib.sha256(repr((r.model, r.tokens, r.segments, part)).encode()).hexdigest()[:16]
    paths, folder = {}, downloads_folder()
    if not (folder / digest).exists():
        _keep_newest(folder, KEPT_DOWNLOADS - 1)
    for view in VIEWS:
        path = folder / digest / f"bertviz-{view}-view.html"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            # One partial file per writer: two students asking for the same new text at once each
            # write their own, and the atomic replace leaves one whole file (never half of one).
            partial = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.partial")
            partial.write_text(view_document(r, view, scripts="inline", part=part), encoding="utf-8")
            partial.replace(path)
        paths[view] = str(path)
    return paths
