"""Fine-tune, a run as the student watches it: live curves per phase, the progress line, the
before/after summary, and the history of a student's last runs for comparison."""

from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labs.core.ui import plots
from labs.finetune.tasks import METRIC, METRIC_WORDS
from labs.finetune.training import Eval, RunResult, Step

REDRAW_SECONDS = 1.0  # live curves: often enough to watch, rarely enough not to slow the run
KEEP_RUNS = 5  # a student's runs shown in the comparison


COLOURS = (plots.BLUE, plots.RED, plots.GREEN, plots.PURPLE, "#b45309", "#0891b2", "#be185d")  # 7 strategies


def curves_figure(results: list[RunResult | dict], title: str, metric: str = "accuracy"):
    """Training loss per step (left), the optimizer's learning rate per step (middle: linear warm-up,
    then linear decay) and the validation metric per epoch (right), one colour per run."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=("training loss (per step)", "learning rate (per step)",
                                                        f"validation {METRIC_WORDS[metric]} (per epoch)"),
                        horizontal_spacing=0.07)
    for i, r in enumerate(results):
        r = r if isinstance(r, dict) else curve_record(r)
        colour = COLOURS[i % len(COLOURS)]
        fig.add_trace(go.Scatter(x=[h["step"] for h in r["history"]], y=[h["loss"] for h in r["history"]],
                                 mode="lines", name=r["label"], line=dict(color=colour, width=3),
                                 legendgroup=r["label"]), row=1, col=1)
        fig.add_trace(go.Scatter(x=[e["epoch"] for e in r["eval"]], y=[e["accuracy"] for e in r["eval"]],
                                 mode="lines+markers", name=r["label"], line=dict(color=colour, width=3),
                                 marker=dict(size=10), legendgroup=r["label"], showlegend=False), row=1, col=3)
        fig.add_trace(go.Scatter(x=[h["step"] for h in r["history"]], y=[h.get("lr") for h in r["history"]],
                                 mode="lines", name=r["label"], line=dict(color=colour, width=3, dash="dot"),
                                 legendgroup=r["label"], showlegend=False), row=1, col=2)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=3)
    fig.update_yaxes(exponentformat="e", row=1, col=2)
    fig.update_xaxes(title="step", row=1, col=1)
    fig.update_xaxes(title="step", row=1, col=2)
    fig.update_xaxes(title="epoch (0 = before training)", dtick=1, row=1, col=3)
    fig.update_annotations(font_size=17)
    return plots.style(fig, title, 430, margin=dict(l=10, r=10, t=80, b=10),
                       legend=dict(orientation="h", y=-0.2, font=dict(size=15)))


def curve_record(r: RunResult) -> dict:
    """A run as the charts need it: label, loss per step, accuracy per epoch with epoch 0 = before."""
    s = r.settings
    label = f"{r.phase}: {s.strategy}, lr {s.learning_rate:g}, {s.epochs} ep → {r.accuracy_after:.0%}"
    history = [h | {"lr": lr} for h, lr in zip(r.history, r.schedule)]
    return {"label": label, "history": history, "eval": [{"epoch": 0, "accuracy": r.accuracy_before}] + r.eval}


class LiveRun:
    """Follows the events of one experiment (a pre-trained run, maybe its from-scratch twin)."""

    def __init__(self, phases: int):
        self.phases = phases
        self.finished: list[RunResult] = []
        self.live: dict[str, dict] = {}
        self.last: Step | Eval | None = None
        self._drawn = 0.0

    def add(self, event) -> bool:
        """Record an event; True when it is time to redraw (after every evaluation, else once a second
        of the run's own time: drawing must not slow training, and every student following the same run
        redraws at the same events, so they can share one figure)."""
        if isinstance(event, RunResult):
            self.finished.append(event)
            return False
        record = self.live.setdefault(event.phase, {"label": event.phase, "history": [], "eval": []})
        if isinstance(event, Step):
            record["history"].append({"step": event.step, "loss": event.loss, "lr": event.lr})
        else:
            record["eval"].append({"epoch": event.epoch, "accuracy": event.accuracy})
        self.last = event
        if isinstance(event, Eval) or event.elapsed - self._drawn > REDRAW_SECONDS:
            self._drawn = event.elapsed
            return True
        return False

    def progress(self, note: str = "") -> tuple[float, str]:
        """(share done, what is happening) for the progress line (escaped HTML), with a note after it."""
        e = self.last
        if isinstance(e, Step):
            done, what = e.step / e.total_steps, f"{e.phase}: step {e.step} of {e.total_steps}, loss {e.loss:.3f}"
        else:
            done, what = 0.0, f"{e.phase}: epoch {e.epoch}, validation {METRIC_WORDS[self.metric()]} {e.accuracy:.1%}"
        note = f" · {html.escape(note)}" if note else ""
        return done, f"Run {len(self.finished) + 1} of {self.phases} · {what} · {e.elapsed:.1f} s{note}"

    def live_figure(self):
        return curves_figure(list(self.live.values()), "Training…", self.metric())

    def metric(self) -> str:
        return METRIC[self.finished[0].task] if self.finished else getattr(self, "task_metric", "accuracy")

    def final_figure(self):
        records = [curve_record(r) for r in self.finished]
        return curves_figure(records, "Pre-trained vs from scratch" if len(records) > 1 else "Fine-tuning",
                             self.metric())

    def summary(self) -> str:
        main = self.finished[0]
        s = main.settings
        words = METRIC_WORDS[METRIC[main.task]]
        lines = [f"**Validation {words}: {main.accuracy_before:.1%} before → {main.accuracy_after:.1%} after** "
                 f"({main.phase}, {main.trainable_params:,} of {main.total_params:,} parameters trained, "
                 f"{main.seconds:.1f} s)."]
        if len(self.finished) > 1:
            scratch = self.finished[1]
            lines.append(f"From scratch, same data and settings: **{scratch.accuracy_after:.1%}** "
                         f"({scratch.seconds:.1f} s). Pre-training is worth "
                         f"**{main.accuracy_after - scratch.accuracy_after:+.1%}** here.")
        if main.train_domain and main.domains:
            lines.append(domain_shift_text(main))
        if main.forgetting:
            lines.append(forgetting_text(main.forgetting))
        if main.accuracy_after < 0.6 and s.learning_rate >= 1e-3:
            lines.append("The learning rate is very high: the updates overshoot and the pre-trained knowledge is "
                         "destroyed (catastrophic forgetting). Try 2e-5 or 5e-5.")
        return "\n\n".join(lines)

    def history_entries(self) -> list[dict]:
        """The finished runs as entries of the student's run history."""
        return [curve_record(r) | {"metric": METRIC[r.task], "strategy": r.settings.strategy,
                                   "lr": f"{r.settings.learning_rate:g}", "epochs": r.settings.epochs, "trainable": r.trainable_params,
                                   "before": r.accuracy_before, "after": r.accuracy_after, "seconds": r.seconds,
                                   "forgetting": forgetting_cell(r.forgetting)}
                for r in self.finished]


def domain_shift_text(result) -> str:
    """A run trained on one domain, measured on every domain: the accuracy it loses where it never trained."""
    seen = [d for d in result.domains if d["trained_on"]]
    unseen = [d for d in result.domains if not d["trained_on"]]
    if not seen or not unseen:
        return ""
    home = sum(d["accuracy_after"] * d["n"] for d in seen) / sum(d["n"] for d in seen)
    away = sum(d["accuracy_after"] * d["n"] for d in unseen) / sum(d["n"] for d in unseen)
    rows = "\n".join(f"| {d['domain']}{' (trained on)' if d['trained_on'] else ''} | {d['n']} | "
                     f"{d['accuracy_before']:.0%} | {d['accuracy_after']:.0%} |" for d in result.domains)
    return (f"**Domain shift:** trained on {result.train_domain} only, it is right on **{home:.0%}** of "
            f"{result.train_domain} and **{away:.0%}** of the {len(unseen)} domains it never saw "
            f"(**{100 * (away - home):+.0f} points**).\n\n| domain | validation reviews | before | after |\n"
            f"|---|---|---|---|\n{rows}")


def forgetting_text(f: dict) -> str:
    """What the run overwrote of what pre-training taught, in a sentence or two."""
    text = (f"**Forgetting:** paraphrase retrieval ({f['sentences']} sentences no run trains on: is each one's "
            f"nearest neighbour its paraphrase?) **{f['retrieval_before']:.0%} before → {f['retrieval_after']:.0%} "
            f"after**; their vectors drifted by **{f['drift']:.3f}** (mean 1 − cosine, 0 = unchanged).")
    if "mlm_top1_before" in f:
        text += (f" Masked words ({f['mlm_probes']} probes, the pre-trained MLM head on the fine-tuned encoder): "
                 f"top-1 **{f['mlm_top1_before']:.0%} → {f['mlm_top1_after']:.0%}**.")
    return text


def forgetting_cell(f: dict | None) -> str:
    if not f:
        return "–"
    return f"{f['retrieval_before']:.0%} → {f['retrieval_after']:.0%}, drift {f['drift']:.3f}"


def runs_metric(runs: list[dict]) -> str:
    """The metric the runs share (their validation curves' axis), or "metric" when their tasks differ."""
    metrics = {r.get("metric", "accuracy") for r in runs}
    return metrics.pop() if len(metrics) == 1 else "metric"


def with_history(runs: list[dict], live: LiveRun) -> list[dict]:
    return (runs + live.history_entries())[-KEEP_RUNS:]
