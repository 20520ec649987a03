"""Two functions of Gradio's page script whose cost grows with the app's size squared, replaced as the
server sends the script by equivalents that index once: the same results, without the quadratic walks.
A student's phone runs these on every page open.

Gradio's page (gradio 6.31: `assets/core-*.js`, pinned in requirements.txt) walks its whole component tree
through Svelte's reactive proxies:
- `find_attached_events(node, dependencies)`, once per node of the layout when the page opens (twice: the
  page reloads its configuration once): every dependency's targets searched for the node's id. LM Lab's page
  has about 1,500 nodes and 330 events, half a million searches: 2.4 s of a desktop core per page open.
  Replaced by one index of the targets (an id's events, in the dependencies' order, each dependency's first
  target of that id; empty names dropped, as before), built once per walk of the tree.
- `Z(root, id)`, the node with this id, searched depth-first from the root for every loading status of every
  event (`update_state`, `get_state`): 2 s of a page open. Replaced by a remembered path of child positions
  per id, checked at each use (the node it leads to must have the id) and learnt again by the same search when
  the tree changed; an id not in the tree is searched as before.

Measured with `python -m tests.bench_page` (docs/measurements.md): what Chromium spends to open a lab's link.
Each replacement is applied only where its original occurs exactly once; a Gradio build without both is
served as it ships (and logged), so that an upgrade of Gradio never runs half a patch.
tests/test_frontend_patch.py runs the original and the replacement side by side on LM Lab's own configuration.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

CORE_SCRIPT = re.compile(r"^/assets/core-[A-Za-z0-9_-]{8}\.js$")  # Gradio's page core, by Vite's hashed name


@dataclass(frozen=True)
class Replacement:
    name: str
    original: str
    replacement: str


FIND_ATTACHED_EVENTS = Replacement(
    "find_attached_events",
    "find_attached_events(e,t){let n=t.filter(t=>t.targets.find(([t])=>t===e.id)).map(t=>{let n=t.targets.find("
    "([t])=>t===e.id);return n?n[1]:null}).filter(Boolean);return e.props.shared_props.attached_events=n,e}",
    # The index lives for one walk of the tree: postprocess (below) drops it before each walk.
    "find_attached_events(e,t){let c=this.lm_lab_attached;if(!c||c.deps!==t||c.size!==t.length){let m=new Map;"
    "for(let d of t){let seen=new Set;for(let[i,v]of d.targets){if(seen.has(i))continue;seen.add(i);"
    "if(!v)continue;let a=m.get(i);a?a.push(v):m.set(i,[v])}}c=this.lm_lab_attached={deps:t,size:t.length,m}}"
    "let n=(c.m.get(e.id)||[]).slice();return e.props.shared_props.attached_events=n,e}",
)
POSTPROCESS = Replacement(
    "postprocess",
    "postprocess(e){this.root=this.traverse(e,[",
    "postprocess(e){this.lm_lab_attached=null;this.root=this.traverse(e,[",
)
FIND_NODE = Replacement(
    "Z (a node by its id)",
    "function Z(e,t){if(e.id===t)return e;if(e.children)for(let n of e.children){let e=Z(n,t);if(e)return e}"
    "return null}",
    "function Z(e,t){let x=lm_lab_paths.get(e),p=x&&x.get(t);if(p){let n=e;for(let i of p)if(n=n.children&&"
    "n.children[i],!n)break;if(n&&n.id===t)return n}let r=lm_lab_search(e,t);if(r){let m=new Map,w=(n,q)=>{"
    "m.has(n.id)||m.set(n.id,q);if(n.children)n.children.forEach((c,i)=>w(c,[...q,i]))};w(e,[]);"
    "lm_lab_paths.set(e,m)}return r}var lm_lab_paths=new WeakMap;"
    "function lm_lab_search(e,t){if(e.id===t)return e;if(e.children)for(let n of e.children){"
    "let e=lm_lab_search(n,t);if(e)return e}return null}",
)
REPLACEMENTS = (FIND_ATTACHED_EVENTS, POSTPROCESS, FIND_NODE)
_warned: set[str] = set()


def applies_to(path: str) -> bool:
    """Whether the file at this path (under the app's root) is one the server patches."""
    return bool(CORE_SCRIPT.match(path))


def patched(path: str, body: bytes) -> bytes:
    """The file's bytes as the server sends them: Gradio's page core with every replacement made, when each
    original occurs in it exactly once; any other file, or another build of it, as it is."""
    if not applies_to(path):
        return body
    text = body.decode("utf-8")
    missing = [r.name for r in REPLACEMENTS if text.count(r.original) != 1]
    if missing:
        if path not in _warned:
            _warned.add(path)
            log.warning("%s is not the Gradio build these replacements were written for (no single %s): "
                        "served as it ships", path, ", ".join(missing))
        return body
    for r in REPLACEMENTS:
        text = text.replace(r.original, r.replacement)
    return text.encode("utf-8")
