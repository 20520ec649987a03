"""Beam search as a tree: transformers' beam search (generate(num_beams=B), do_sample=False), written
out step by step so that every candidate it weighed can be drawn: the beams it kept, the ones it
pruned, the ones that finished, and beside them the greedy path.

Each step follows generate()'s own rules (transformers 5): from the running beams' accumulated
log-probabilities, take the top K = max(2, 1 + number of EOS tokens) × B continuations; those that
end (EOS or the last step) and rank in the top B become finished hypotheses scored by
log-prob / new_tokens ** length_penalty; the best B that do not end run on. The search stops when no
running beam can beat the worst finished one (generate()'s default heuristic)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from labs.core.errors import check_int, check_text
from labs.core.models import models
from labs.core.work import lm
from labs.next_token.compute import resolved

EXAMPLE = "The best way to learn is"
BEAMS_RANGE = (2, 8)
NEW_TOKENS_RANGE = (1, 12)
MAX_PROMPT_TOKENS = 256


@dataclass(frozen=True)
class Node:
    id: int
    parent: int | None
    step: int
    token: str
    token_id: int | None
    token_logprob: float  # log P(this token | its parent's text)
    logprob: float  # the whole continuation's log-probability: the parent's plus token_logprob
    status: str  # "kept", "pruned" or "finished"
    greedy: bool  # on the path greedy decoding takes


@dataclass(frozen=True)
class Beam:
    text: str
    token_ids: tuple[int, ...]
    score: float  # as generate() reports it: log-prob / new_tokens ** length_penalty
    node: int  # the tree node where it ends


@dataclass(frozen=True)
class Tree:
    model: str
    prompt_tokens: list[str]
    nodes: list[Node]
    beams: list[Beam]
    greedy_text: str
    length_penalty: float

    def to_json(self) -> dict:
        return {"model": self.model,
                "nodes": [{"id": n.id, "parent": n.parent, "step": n.step, "token": n.token, "token_id": n.token_id,
                           "logprob": n.logprob, "token_logprob": n.token_logprob, "status": n.status,
                           "greedy": n.greedy} for n in self.nodes],
                "beams": [{"text": b.text, "score": b.score} for b in self.beams], "greedy": self.greedy_text}


def eos_ids(model) -> list[int]:
    eos = model.generation_config.eos_token_id
    return [] if eos is None else [eos] if isinstance(eos, int) else list(eos)


def search(loaded: models.LoadedModel, ids: list[int], num_beams: int, max_new: int) -> Tree:
    import torch

    model, tokenizer = loaded.model, loaded.tokenizer
    config = model.generation_config
    penalty = config.length_penalty if config.length_penalty is not None else 1.0
    eos = eos_ids(model)
    k = max(2, 1 + len(eos)) * num_beams
    nodes = [Node(0, None, 0, tokenizer.decode(ids), None, 0.0, 0.0, "kept", True)]
    # Rows 0..B-1 are the beams (generate() starts with B copies of the prompt, all but the first
    # at -1e9); row B follows greedy decoding in the same forward passes.
    scores = torch.full((num_beams,), -1e9)
    scores[0] = 0.0
    running = [(0, ())] * num_beams  # (node id, new token ids)
    greedy: list[int] = []
    finished: list[tuple[float, tuple[int, ...], int]] = []
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([ids] * (num_beams + 1), device=loaded.device), use_cache=True)
        for step in range(1, max_new + 1):
            logp = torch.log_softmax(out.logits[:, -1, :].float().cpu(), dim=-1)
            greedy.append(int(logp[num_beams].argmax()))
            vocab = logp.shape[-1]
            top_scores, top_index = torch.topk((logp[:num_beams] + scores[:, None]).reshape(-1), k)
            origin, tokens = (top_index // vocab).tolist(), (top_index % vocab).tolist()
            ends = torch.tensor([t in eos or step == max_new for t in tokens])
            kept = torch.topk(top_scores + ends.float() * -1e9, num_beams).indices.tolist()
            for r in range(k):
                parent, path = running[origin[r]]
                status = "finished" if ends[r] and r < num_beams else "kept" if r in kept and not ends[r] else "pruned"
                node = Node(len(nodes), parent, step, "", tokens[r], float(logp[origin[r], tokens[r]]),
                            float(top_scores[r]), status, list(path) + [tokens[r]] == greedy)
                nodes.append(node)
                if status == "finished":
                    finished.append((float(top_scores[r]) / step ** penalty, path + (tokens[r],), node.id))
            finished = sorted(finished, key=lambda f: -f[0])[:num_beams]
            scores = (top_scores + ends.float() * -1e9)[kept]
            running = [(nodes[len(nodes) - k + r].id, running[origin[r]][1] + (tokens[r],)) for r in kept]
            if bool(ends.all()) or (len(finished) == num_beams and scores[0] / step ** penalty <= finished[-1][0]):
                break
            out.past_key_values.reorder_cache(torch.tensor([origin[r] for r in kept] + [num_beams],
                                                           device=loaded.device))
            nxt = [tokens[r] for r in kept] + [greedy[-1]]
            out = model(input_ids=torch.tensor(nxt, device=loaded.device)[:, None], past_key_values=out.past_key_values,
                        use_cache=True)
    labels = models.readable_tokens(tokenizer, [n.token_id for n in nodes[1:]])  # one call, not one per node
    nodes = nodes[:1] + [replace(n, token=t) for n, t in zip(nodes[1:], labels)]
    beams = [Beam(tokenizer.decode(path), path, score, node) for score, path, node in finished]
    return Tree(loaded.name, models.readable_tokens(tokenizer, ids), nodes, beams, tokenizer.decode(greedy), penalty)


def beam_tree(loaded: models.LoadedModel, prompt, num_beams=4, max_new_tokens=6) -> Tree:
    prompt = check_text(prompt, EXAMPLE, what="prompt")
    num_beams = check_int(num_beams, "The number of beams", *BEAMS_RANGE)
    max_new_tokens = check_int(max_new_tokens, "New tokens", *NEW_TOKENS_RANGE)
    loaded = resolved(loaded, "causal")
    ids, _ = lm.causal_ids(loaded, prompt, MAX_PROMPT_TOKENS)
    ids = ids[-(loaded.max_tokens - max_new_tokens):]  # room for the new tokens in the model's positions
    return search(loaded, ids, num_beams, max_new_tokens)


def beam_tree_json(prompt: str, model: str, num_beams: int = 4, max_new_tokens: int = 6) -> dict:
    """The `beam_tree` API; the model (a name from the client) is resolved once, here."""
    return beam_tree(models.load(model, "causal"), prompt, num_beams, max_new_tokens).to_json()
