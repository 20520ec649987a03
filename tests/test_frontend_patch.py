"""labs/core/serving/frontend_patch.py: each replacement of Gradio's page core gives what Gradio's original gives,
run side by side in Chromium on LM Lab's own page (its configuration as the running app serves it), and the
app's page runs the patched core. How the bytes travel (every encoding, a range, a cross-origin request) is
tests/test_static_cache.py's."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import gradio as gr

from labs.core.serving import frontend_patch

ASSETS = Path(gr.__file__).parent / "templates" / "frontend" / "assets"

# Gradio's original and the replacement, each on its own copy of the page's tree; what each found, compared.
SIDE_BY_SIDE = """([config, fae, z]) => {
  const method = (text) => eval('({' + text + '})');
  const named = (text) => new Function(text + '; return Z;')();
  const [oldFae, newFae] = [method(fae[0]), method(fae[1])];
  const [oldZ, newZ] = [named(z[0]), named(z[1])];
  const tree = (node) => ({id: node.id, props: {shared_props: {}},
                           ...(node.children ? {children: node.children.map(tree)} : {})});
  const nodes = (node) => [node, ...(node.children || []).flatMap(nodes)];
  const differences = [];
  // find_attached_events, over every node of the page, then over a hand-made case: a dependency that targets
  // a node twice (its first target counts), an empty event name (dropped), two dependencies of one node.
  const attached = (deps, layout, walk = true) => {
    const [a, b] = [tree(layout), tree(layout)];
    const [na, nb] = [nodes(a), nodes(b)];
    if (walk) newFae.lm_lab_attached = null;  // as postprocess does before each walk
    na.forEach((n, i) => {
      oldFae.find_attached_events(n, deps);
      newFae.find_attached_events(nb[i], deps);
      const [x, y] = [n.props.shared_props.attached_events, nb[i].props.shared_props.attached_events];
      if (JSON.stringify(x) !== JSON.stringify(y)) differences.push(['attached', n.id, x, y]);
    });
    return na.filter(n => n.props.shared_props.attached_events.length).length;
  };
  const withEvents = attached(config.dependencies, config.layout);
  const made = [{targets: [[1, 'click'], [1, 'change'], [2, 'submit']]}, {targets: [[1, null], [3, '']]},
                {targets: [[3, 'load'], [1, 'blur']]}];
  const layout = {id: 0, children: [{id: 1}, {id: 2, children: [{id: 3}, {id: 4}]}]};
  attached(made, layout);
  // and when the dependencies changed within a walk: the index follows them
  attached(made.slice(1), layout, false);
  // Z: every id of the page and two that are not in it, the same node found; then after a part of the tree was
  // replaced (as a render does), again twice (learnt paths, then used).
  const root = tree(config.layout);
  const ids = [...config.components.map(c => c.id), -1, 1e9];
  const find = (label) => ids.forEach(id => {
    if (oldZ(root, id) !== newZ(root, id)) differences.push([label, id]);
  });
  find('Z'); find('Z again');
  const parent = nodes(root).filter(n => n.children && n.children.length > 1).at(-1);
  parent.children = [...parent.children].reverse().map(tree);
  parent.children.push({id: 'new', props: {shared_props: {}}});
  ids.push('new');
  find('Z after a change'); find('Z after a change, again');
  return {differences, withEvents, nodes: nodes(root).length, ids: ids.length};
}"""


def core_script() -> tuple[str, bytes]:
    [path] = ASSETS.glob("core-*.js")
    return f"/assets/{path.name}", path.read_bytes()


def test_gradios_core_is_the_build_the_replacements_were_written_for():
    path, shipped = core_script()
    served = frontend_patch.patched(path, shipped).decode()
    for r in frontend_patch.REPLACEMENTS:
        assert shipped.decode().count(r.original) == 1, r.name
        assert r.replacement in served and r.original not in served, r.name
    assert frontend_patch.patched(path, b"another build") == b"another build"  # served as it ships
    assert frontend_patch.patched("/assets/index-Abcdefgh.js", shipped) == shipped


def test_each_replacement_finds_what_gradios_original_finds_on_lm_labs_page(browser, app_server):
    url = app_server["url"]
    config = json.loads(urllib.request.urlopen(url + "config", timeout=60).read())
    fae = [frontend_patch.FIND_ATTACHED_EVENTS.original, frontend_patch.FIND_ATTACHED_EVENTS.replacement]
    z = [frontend_patch.FIND_NODE.original, frontend_patch.FIND_NODE.replacement]
    context = browser.new_context()
    try:
        page = context.new_page()
        result = page.evaluate(SIDE_BY_SIDE, [config, fae, z])
        # and LM Lab's own page runs the patched core: the script the browser loaded carries the replacements
        scripts = []
        page.on("response", lambda r: scripts.append(r) if "/assets/core-" in r.url and r.url.endswith(".js") else None)
        page.goto(url + "?tab=tokens", wait_until="load")
        page.locator(".lab-token-row").first.wait_for()
        loaded = scripts[0].text()
    finally:
        context.close()
    assert result["differences"] == []
    assert result["nodes"] > 1000 and result["withEvents"] > 200  # the whole page, its events found
    assert all(r.replacement in loaded for r in frontend_patch.REPLACEMENTS)
