"""What the class's pages show, as HTML and plotly figures built from the endpoints' JSON: the join card (the
code in large type and its QR code), the question, the live count, the class beside the model, and a
student's own answer. Every answer is a student's text: escaped wherever it is shown. No gradio here."""

from __future__ import annotations

import segno

from labs.classroom.answers import CONFIDENCE_LEVELS
from labs.core.ui import plots
from labs.core.ui.escape import esc

KIND_WORDS = {"fill_mask": "Fill in the blank", "next_token": "The next word", "choice": "Multiple choice",
              "number": "A number"}
ANSWER_HINTS = {"fill_mask": "One word for the blank", "next_token": "The next word", "choice": "",
                "number": "A number, e.g. 12"}
BAR_ROWS = 10  # answers listed by name on a chart; the rest are "other"


def qr_svg(url: str, scale: int = 8) -> str:
    """The join link as a QR code (segno), inline SVG with a text alternative."""
    return segno.make(url, error="m").svg_inline(scale=scale, border=2, dark="#111827", light="#ffffff",
                                                 title="QR code of the class's join link", svgclass="lab-class-qr",
                                                 omitsize=True)  # sized by CSS (its viewBox scales)


def join_line(start: dict) -> str:
    """The join card folded to one line once answers arrive (late-comers still read the code): the room's eyes
    go to the question and the reveal."""
    return (f'<div class="lab-class-join-line">Join: <b class="lab-class-code-small" aria-label="Class code '
            f'{" ".join(start["shown_code"])}">{esc(start["shown_code"])}</b> at <a href="{esc(start["join_url"])}">'
            f'{esc(start["join_url"])}</a></div>')


def join_card(start: dict) -> str:
    """The projector's join card: the code in large type, the link, the QR code. Never the lecturer key."""
    title = f'<div class="lab-class-title">{esc(start["title"])}</div>' if start.get("title") else ""
    return (f'<div class="lab-class-join">{qr_svg(start["join_url"])}<div>{title}'
            f'<div class="lab-class-code-label">Join on your phone with the code</div>'
            f'<div class="lab-class-code" aria-label="Class code {" ".join(start["shown_code"])}">'
            f'{esc(start["shown_code"])}</div>'
            f'<div class="lab-class-link">or open <a href="{esc(start["join_url"])}">{esc(start["join_url"])}</a></div>'
            f'</div></div>')


def kind_words(question: dict) -> str:
    """The kind of question in words, and "second vote" for peer instruction's vote again on it."""
    return KIND_WORDS[question["kind"]] + (" · second vote" if question.get("round") == 2 else "")


def question_html(question: dict | None, *, waiting: str = "Waiting for the lecturer's question…") -> str:
    if not question:
        return f'<div class="lab-class-question lab-class-waiting">{esc(waiting)}</div>'
    options = ""
    if question["kind"] == "choice":
        items = "".join(f"<li>{esc(o)}</li>" for o in question["choices"])
        options = f'<ol class="lab-class-options" type="A">{items}</ol>'
    continues = ' <span class="lab-class-continues" aria-label="what comes next?">…</span>' \
        if question["kind"] == "next_token" else ""
    link = question.get("settings", {}).get("link")
    source = f' · <a href="{esc(link)}" target="_blank" rel="noopener">open it in the lab</a>' if link else ""
    return (f'<div class="lab-class-question">{countdown_html(question.get("closes_in"))}<div class="lab-class-kind">'
            f'Question {question["number"]} · {esc(kind_words(question))}{source}</div><div class="lab-class-text">'
            f'{esc(question["text"])}{continues}</div>{options}</div>')


def page_marker(page: dict | None, question: dict | None) -> str:
    """The student's own class code and id, and the question their page shows, hidden in the page for its Send
    (assets/js/classroom.js): the id is theirs (their browser keeps it), never shown, never sent to anyone else."""
    if not page:
        return ""
    return (f'<span hidden class="lab-class-me" data-code="{esc(page["code"])}" data-student="{esc(page["student"])}" '
            f'data-question="{(question or {}).get("id") or ""}"></span>')


def clock(seconds: float) -> str:
    whole = max(0, int(seconds + 0.999))
    return f"{whole // 60}:{whole % 60:02d}"


def countdown_html(seconds_left: float | None) -> str:
    """The lecturer's timer: the seconds left when the page drew; assets/js/classroom.js counts down from there
    (every page on its own clock, none on the server's) and says "time is up" at zero."""
    if seconds_left is None:
        return ""
    up = seconds_left <= 0
    return (f'<div class="lab-class-countdown{" lab-class-time-up" if up else ""}" role="timer" '
            f'data-left="{seconds_left:.1f}">{"Time is up" if up else clock(seconds_left) + " left"}</div>')


def sure_words(sent: dict) -> str:
    """How sure the student said they were, after their answer: " (sure)"; nothing when they did not say."""
    level = sent.get("confidence", sent.get("your_confidence"))
    return f" ({CONFIDENCE_LEVELS[level - 1]})" if level else ""


def count_html(answers: int, revealed: bool) -> str:
    what = "answer" if answers == 1 else "answers"
    state = "revealed" if revealed else "hidden until you reveal them"
    folded = " lab-class-count-revealed" if revealed else ""  # at the reveal the room looks at the chart
    return (f'<div class="lab-class-count{folded}" role="status" aria-live="polite"><span class="lab-class-number">'
            f'{answers}</span> {what} <span class="lab-class-note">({state})</span></div>')


def status_html(text: str) -> str:
    """A line a screen reader reads out when it changes (the student's "Received", the class's state)."""
    return f'<p class="lab-class-status-line" role="status" aria-live="polite">{text}</p>'


def percent(share: float | None) -> str:
    return "–" if share is None else f"{100 * share:.0f} %"


def probability(p: float | None) -> str:
    if p is None:
        return "–"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def bars_html(rows: list[tuple[str, int, str]], total: int, *, mine: str | None = None, caption: str = "",
              note_header: str = "") -> str:
    """Bars as HTML, drawn by CSS: readable on a phone and by a screen reader (a table with widths).
    rows: (label, count, note); the student's own answer is marked."""
    body = []
    for label, count, note in rows:
        width = 100 * count / total if total else 0
        own = ' class="lab-class-mine"' if mine is not None and label.casefold() == mine.casefold() else ""
        marker = ' <span class="lab-class-you">(you)</span>' if own else ""
        body.append(f'<tr{own}><th scope="row">{esc(label)}{marker}</th><td><div class="lab-class-bar" '
                    f'style="width:{0.7 * width:.1f}%"></div><span>{count}</span></td><td>{esc(note)}</td></tr>')
    caption = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (f'<table class="lab-class-bars">{caption}<thead><tr><th scope="col">Answer</th><th scope="col">Students'
            f'</th><th scope="col">{esc(note_header)}</th></tr></thead><tbody>{"".join(body)}</tbody></table>')


def class_rows(view: dict) -> list[tuple[str, int, str]]:
    """The class's answers as bar rows (at most BAR_ROWS named, then "other (n)"), with the model's probability."""
    word = view["question"]["kind"] in ("fill_mask", "next_token")
    rows = [(r["answer"], r["count"], probability(r["model_prob"]) if word else "")
            for r in view["class"] if not r.get("grouped")]
    other = dict(view["other"])
    for label, count, _ in rows[BAR_ROWS:]:
        other["answers"] += 1
        other["count"] += count
    rows = rows[:BAR_ROWS]
    if other["count"]:
        rows.append((f"other ({other['answers']})", other["count"], ""))
    if view.get("histogram"):
        correct = (view["question"].get("correct") or "").casefold()
        rows = [(h["label"], h["count"], "✓ right answer" if correct and h["label"].casefold() == correct else "")
                for h in view["histogram"]]
    return rows


def your_line(view: dict, your_answer: str | None, your_confidence: int | None = None) -> str:
    """Where the student's own answer stood: how many gave it, and the model's probability of it."""
    you = view.get("you")
    if not you:
        return "You did not answer this one." if not your_answer else ""
    others = you["count"] - 1
    company = "nobody else gave it" if others == 0 else f"{others} classmate{'s' if others > 1 else ''} gave it too"
    sure = sure_words({"confidence": your_confidence})
    line = f"Your answer “{esc(you['answer'])}”{sure}: {company} ({percent(you['share'])} of the class)."
    if you.get("model_prob") is not None:
        line += (f" The model's probability of it: <b>{probability(you['model_prob'])}</b> "
                 f"(rank {you['model_rank']:,}).")
    correct = view["question"].get("correct")
    if correct:
        line += " ✓ Right." if you["answer"].casefold() == correct.casefold() else f" The right answer: {esc(correct)}."
    return f'<p class="lab-class-yours">{line}</p>'


def rounds_line(view: dict) -> str:
    """A second vote's comparison in one sentence, for a phone: who changed, and where the class moved."""
    rounds = view.get("rounds")
    if not rounds:
        return ""
    one, two = rounds["first_figures"], rounds["second_figures"]
    target = "the model's favourite" if rounds["measured_by"] == "mean_logprob" else "the right answer"
    changed = rounds["changed"]
    return (f'<p class="lab-class-rounds-line">Second vote: {changed} of the {rounds["voted_twice"]} who voted twice '
            f'changed their answer; on {target}: {percent(one["share"])} in the first vote, {percent(two["share"])} '
            f'in the second.</p>')


def student_results(view: dict, your_answer: str | None, your_confidence: int | None = None) -> str:
    rows = class_rows(view)
    shown = sum(count for _, count, _ in rows)
    word = bool(view.get("model_top"))
    parts = [your_line(view, your_answer, your_confidence), rounds_line(view),
             bars_html(rows, shown, mine=your_answer, note_header="Model P" if word else "",
                       caption=f"The class's answers ({view['total']})")]
    if word:
        model = [(t.get("shown", t["answer"]), t["class_count"], probability(t["prob"])) for t in view["model_top"][:5]]
        parts.append(bars_html(model, max(view["total"], 1), mine=your_answer, note_header="Model P",
                               caption=f"The model's top {len(model)} ({view.get('model', '')}): how many of you "
                                       "gave each"))
    return "".join(parts)


def agreement_html(view: dict) -> str:
    """The comparison no other tool shows, as four large figures."""
    a = view.get("agreement") or {}
    if not a.get("answers"):
        return '<p class="lab-class-note">No answers to compare.</p>'
    if view["question"]["kind"] not in ("fill_mask", "next_token"):
        cards = [("answers", str(a["answers"]))]
        if a.get("correct"):
            cards.append((f"gave the right answer ({esc(a['correct'])})", percent(a.get("right_share"))))
        if a.get("median") is not None:
            cards.append(("the class's median", f"{a['median']:.4g}"))
        return _cards(cards)
    ppl = a.get("perplexity")
    cards = [
        (f"the model's rank of the class's favourite, “{esc(a['class_favourite'])}” "
         f"(p = {probability(a['class_favourite_model_prob'])})", f"#{a['class_favourite_model_rank']:,}"
         if a.get("class_favourite_model_rank") else "–"),
        (f"of the class gave the model's favourite, “{esc((a['model_favourite'] or '').strip())}”",
         percent(a.get("model_favourite_class_share"))),
        (f"the model's perplexity on the class (mean log-probability {a['mean_logprob']:.2f})"
         if a.get("mean_logprob") is not None else "the model's perplexity on the class",
         f"{ppl:,.1f}" if ppl is not None else "–"),
        ("of the class's top 5 are in the model's top 5" + (f": {', '.join(esc(w) for w in a['top5_both'])}"
                                                            if a.get("top5_both") else ""), f"{a['top5_overlap']} / 5")]
    return _cards(cards)


def rounds_html(rounds: dict) -> str:
    """Peer instruction's two votes as large figures: who changed their answer, the share on the right answer (or
    the model's favourite) in each vote, and for words the model's figures before and after."""
    one, two = rounds["first_figures"], rounds["second_figures"]
    word = rounds["measured_by"] == "mean_logprob"
    cards = [("of the students who voted twice changed their answer", f"{rounds['changed']} / {rounds['voted_twice']}"),
             ("on the model's favourite, first vote → second" if word else "gave the right answer, first vote → second",
              f"{percent(one['share'])} → {percent(two['share'])}")]
    if word:
        def logp(x):
            return "–" if x is None else f"{x:.2f}"

        def rank(x):
            return "–" if x is None else f"#{x:,}"

        cards += [("the model's mean log-probability of the class's answers", f"{logp(one['mean_logprob'])} → "
                   f"{logp(two['mean_logprob'])}"),
                  ("the model's rank of the class's favourite", f"{rank(one['class_favourite_model_rank'])} → "
                   f"{rank(two['class_favourite_model_rank'])}")]
    towards = "the model (its mean log-probability)" if word else "the right answer"
    cards.append((f"where the class moved: towards or away from {towards}", rounds["moved"] or "–"))
    return _cards(cards, "lab-class-rounds")


def confidence_label(mean: float | None) -> str:
    """A mean confidence (1 guessing … 4 sure) in words, with its figure: "fairly sure (3.2 / 4)"."""
    if mean is None:
        return "–"
    return f"{CONFIDENCE_LEVELS[min(3, max(0, round(mean) - 1))]} ({mean:.1f} / 4)"


def confidence_html(view: dict) -> str:
    """How sure the class was: per answer its students' mean confidence (beside the model's probability of it,
    for words: is the class calibrated? is the model?), and for a right answer how sure the right and the wrong
    were. Nothing when nobody said how sure they were."""
    summary = view.get("confidence") or {}
    if not summary.get("answered"):
        return ""
    word = view["question"]["kind"] in ("fill_mask", "next_token")
    rows = "".join(f'<tr><th scope="row">{esc(r["answer"])}</th><td>{r["count"]}</td>'
                   f'<td>{confidence_label(r.get("mean_confidence"))}</td>'
                   + (f'<td>{probability(r["model_prob"])}</td>' if word else "") + "</tr>"
                   for r in view["class"][:BAR_ROWS] if not r.get("grouped"))
    head = ('<tr><th scope="col">Answer</th><th scope="col">Students</th><th scope="col">How sure</th>'
            + ('<th scope="col">Model P</th>' if word else "") + "</tr>")
    line = f"{summary['answered']} of {view['total']} said how sure they were: on average {confidence_label(summary['mean'])}."
    if summary.get("mean_right") is not None or summary.get("mean_wrong") is not None:
        line += (f" Those right: {confidence_label(summary.get('mean_right'))}; those wrong: "
                 f"{confidence_label(summary.get('mean_wrong'))}.")
    return (f'<div class="lab-class-confidence"><p>{line}</p><table class="lab-class-sure"><thead>{head}</thead>'
            f'<tbody>{rows}</tbody></table></div>')


def _cards(cards: list[tuple[str, str]], kind: str = "") -> str:
    items = "".join(f'<div class="lab-class-card"><div class="lab-class-big">{value}</div><div>{label}</div></div>'
                    for label, value in cards)
    return f'<div class="lab-class-cards {kind}">{items}</div>'


def rounds_figure(view: dict):
    """A second vote's chart: the first vote's answers, the second's, and for words the model's probability of
    each, side by side (the answers of both votes, most given in the second first)."""
    first = view["rounds"]["first"]
    counts = [{label: count for label, count, _ in class_rows(v)} for v in (first, view)]
    labels = list(dict.fromkeys([*counts[1], *counts[0]]))
    panels = [(f"First vote ({first['total']})", labels, [counts[0].get(a, 0) for a in labels]),
              (f"Second vote ({view['total']})", labels, [counts[1].get(a, 0) for a in labels])]
    if view["question"]["kind"] in ("fill_mask", "next_token"):
        probs = {r["answer"]: r["model_prob"] for r in first["class"] + view["class"]}
        panels.append((f"The model ({view.get('model', '')}): P(word)", labels, [probs.get(a) or 0.0 for a in labels]))
    fig = plots.bars_side_by_side(panels, title=plots.safe("The class's two votes" + (
        " beside the model's probability of their answers" if len(panels) == 3 else "")))
    fig.update_xaxes(rangemode="tozero")
    return fig


def class_figure(view: dict):
    """The projector's chart: the class's answers (counts) beside the model's probability of the same words;
    for choices and numbers, the histogram with the right answer in green. A second vote: rounds_figure."""
    if view.get("rounds"):
        return rounds_figure(view)
    rows = class_rows(view)
    labels = [label for label, _, _ in rows]
    counts = [count for _, count, _ in rows]
    if view.get("histogram"):
        correct = (view["question"].get("correct") or "").casefold()
        colours = [plots.GREEN if correct and label.casefold() == correct else plots.BLUE for label in labels]
        return plots.bar_chart(labels, counts, title=plots.safe(f"The class's answers ({view['total']})"),
                               x_title="students", colors=colours)
    by_answer = {r["answer"]: r["model_prob"] for r in view["class"]}
    probs = [by_answer.get(label) or 0.0 for label in labels]
    fig = plots.bars_side_by_side([(f"The class: students ({view['total']})", labels, counts),
                                   (f"The model ({view.get('model', '')}): P(word)", labels, probs)],
                                  title=plots.safe("The class's answers beside the model's probability of them"))
    fig.update_xaxes(rangemode="tozero")
    return fig


def model_figure(view: dict):
    """The model's own top-k beside the class's share of each."""
    top = view.get("model_top") or []
    labels = [t.get("shown", t["answer"]) for t in top]
    fig = plots.bars_side_by_side([(f"The model's top {len(top)}: P(word)", labels, [t["prob"] for t in top]),
                                   ("The class's share of each", labels, [t["class_share"] for t in top])],
                                  title=plots.safe("The model's own guesses beside the class's"))
    fig.update_xaxes(rangemode="tozero")
    fig.update_xaxes(range=[0, 1], tickformat=".0%", row=1, col=2)  # a share, 0 to 100 %, even when nobody gave it
    return fig
