"""The lecture's record (`/class_report`): after the lecture, every question of a class in one download, both
votes of peer instruction's second vote, the students' confidence, the model's answer and the agreement
figures, as CSV (one row per question, vote and answer: the lecturer's full record) or as one standalone HTML
page with the charts (plotly.js inlined once: it renders offline, printed, or on a course page).

The page shows what the projector showed: answers the lecturer took off the projector are left out and answers
fewer than the class's minimum count gave are one "other (n)" row. The CSV has every answer, each marked as
shown, other or hidden. Every student-typed text is escaped on the page and never a spreadsheet formula in the
CSV. Compute only: no gradio here."""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass

from labs.classroom import results, sessions, views
from labs.classroom.answers import CONFIDENCE_LEVELS as LEVELS  # 1 … 4, as a student's page names them
from labs.classroom.records import csv_safe
from labs.core.errors import BadInput
from labs.core.ui import figure_text
from labs.core.ui.escape import esc

FORMATS = ("html", "csv")
HEADERS = ["question", "vote round", "kind", "question text", "model", "answer", "count", "share",
           "mean confidence", *(f"confidence {i} ({w})" for i, w in enumerate(LEVELS, 1)),
           "model probability", "model rank", "on the projector", "revealed", "answers", "question mean confidence",
           "class favourite", "model favourite", "model rank of the class favourite",
           "class share of the model favourite", "mean log-probability", "perplexity", "top-5 overlap",
           "right answer", "share right", "voted twice", "changed", "moved"]
ROUND_NAMES = {1: "First vote", 2: "Second vote"}


@dataclass
class Round:
    """One vote on a question: its row, every answer given (key, answer, count, the model's scores once
    revealed, confidence counts), and once revealed the projector's view of it (with both votes: `rounds`)."""
    row: object
    question: dict
    answers: list[dict]
    hidden: set
    view: dict | None


def class_report(lecturer_key: str, format: str = "html", request=None) -> dict:
    """`/class_report(lecturer_key, format)`: the lecture's record, every question with both votes, the
    students' confidence, the model's answer and the agreement figures; format "html" (a standalone page with
    the charts, for a course page) or "csv" (one row per question, vote and answer). Only the lecturer key
    gets it. -> {"code", "filename", "format", "text"}"""
    session = sessions.session_of_key(lecturer_key, request)
    kind = format.strip().lower() if isinstance(format, str) else None
    if kind not in FORMATS:
        raise BadInput("The report's format must be \"html\" (a page with the charts) or \"csv\" (a table for a "
                       "spreadsheet).")
    questions = gather(session)
    text = report_csv(session, questions) if kind == "csv" else report_html(session, questions)
    return {"code": session.code, "filename": f"lm-lab-class-{session.code}-report.{kind}", "format": kind,
            "text": text}


# ------------------------------------------------------------------ the data


def gather(session) -> list[list[Round]]:
    """The class's questions in order, each a list of its votes (one, or two with a second vote)."""
    by_number: dict[int, list[Round]] = {}
    for row in sessions.db().questions_of(session.id):
        by_number.setdefault(row.number, []).append(round_of(row, session.min_count))
    return list(by_number.values())


def round_of(row, min_count: int) -> Round:
    question = sessions.question_json(row)
    hidden = json.loads(row.hidden or "[]")
    if row.results:
        stored = json.loads(row.results)
        given = [dict(a) for a in stored["answers"]]
        view = results.view(question, stored, hidden, min_count)
        view["rounds"] = sessions.rounds_of(row, min_count)
    else:
        given = [{"key": k, "answer": form, "count": n} for k, form, n in sessions.db().tally(row.id)]
        view = None
    # The students' confidence: stored with the reveal's answers; counted now for a vote not revealed.
    levels = sessions.db().confidence_tally(row.id) if any(a.get("confidence") is None for a in given) else {}
    for a in given:
        if a.get("confidence") is None and a["key"] in levels:
            a["confidence"] = levels[a["key"]]
    return Round(row, question, given, set(hidden), view)


def question_confidence(r: Round) -> dict | None:
    """The vote's confidence: the view's own where the reveal stored it, else summed over the shown answers;
    None when nobody said how sure they were."""
    if r.view is not None and r.view.get("confidence"):
        found = r.view["confidence"]
    else:
        shown = [a["confidence"] for a in r.answers if a.get("confidence") and a["key"] not in r.hidden]
        levels = [sum(c[i] for c in shown) for i in range(4)]
        found = {"levels": levels, "mean": results.mean_confidence(levels), "answered": sum(levels)}
    return found if found.get("mean") is not None else None


def placing(r: Round, a: dict, min_count: int) -> str:
    if a["key"] in r.hidden:
        return "hidden"
    return "other" if a["count"] < min_count else "shown"


def revealed_at(row) -> str:
    if not row.results or row.revealed_at is None:
        return "not revealed"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(row.revealed_at))


def is_word(r: Round) -> bool:
    return r.question["kind"] in results.WORD_KINDS


# ------------------------------------------------------------------ CSV


def number(x, digits: int = 12) -> str:
    return "" if x is None else f"{x:.{digits}g}" if isinstance(x, float) else str(x)


def figures_cells(r: Round) -> list:
    """The vote's figures, repeated on each of its rows (blank where they do not apply or before the reveal)."""
    confidence = question_confidence(r) or {}
    cells = [sum(a["count"] for a in r.answers), number(confidence.get("mean"))]
    a = (r.view or {}).get("agreement") or {}
    favourite = a.get("class_favourite") or (r.view["class"][0]["answer"] if r.view and r.view["class"] else "")
    word = is_word(r) and r.view is not None
    cells += [csv_safe(favourite or ""), csv_safe((a.get("model_favourite") or "").strip()) if word else "",
              number(a.get("class_favourite_model_rank")) if word else "",
              number(a.get("model_favourite_class_share")) if word else "",
              number(a.get("mean_logprob")) if word else "", number(a.get("perplexity")) if word else "",
              number(a.get("top5_overlap")) if word else "",
              csv_safe(r.question.get("correct") or ""), number(a.get("right_share"))]
    rounds = (r.view or {}).get("rounds") or {}
    cells += [number(rounds.get("voted_twice")), number(rounds.get("changed")), rounds.get("moved") or ""]
    return cells


def report_csv(session, questions: list[list[Round]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(HEADERS)
    for votes in questions:
        for r in votes:
            q, total = r.question, sum(a["count"] for a in r.answers)
            start = [q["number"], q["round"], q["kind"], csv_safe(q["text"]), csv_safe(q["model"] or "")]
            end = [revealed_at(r.row), *figures_cells(r)]
            for a in r.answers or [{"key": "", "answer": "", "count": 0}]:  # no answers: one row all the same
                levels = a.get("confidence") or ([0] * 4 if a["key"] else [""] * 4)  # how many said each level
                writer.writerow([*start, csv_safe(a["answer"]), a["count"],
                                 number(a["count"] / total if total else None),
                                 number(results.mean_confidence(levels) if a["key"] else None),
                                 *levels, number(a.get("model_prob")),
                                 number(a.get("model_rank")), placing(r, a, session.min_count) if a["key"] else "",
                                 *end])
    return buffer.getvalue()


# ------------------------------------------------------------------ HTML

CSS = """
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111827;background:#fff;
max-width:1100px;margin:0 auto;padding:1.5rem}
h1{font-size:1.8rem;margin:0 0 .25rem}h2{font-size:1.4rem;margin:0 0 .5rem}h3{font-size:1.1rem;margin:1rem 0 .4rem}
header p,.note{color:#4b5563}
section.question{border-top:2px solid #e5e7eb;padding:1.25rem 0}
.text{font-size:1.2rem;font-weight:600}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d1d5db;padding:.3rem .6rem;text-align:left;vertical-align:top}
thead th{background:#f3f4f6}table.answers td{text-align:right;white-space:nowrap}
caption{text-align:left;font-weight:600;padding:.2rem 0}
.right{color:#047857;font-weight:600}
figure{margin:1rem 0}figcaption{color:#4b5563;font-size:.9rem}
nav ol{columns:2}
@media print{body{padding:0;max-width:none}nav{display:none}
h2,h3{break-after:avoid}table,figure,.round{break-inside:avoid}section.question{break-before:auto}}
"""


def percent(share) -> str:
    return views.percent(share)


def confidence_text(c: dict | None) -> str:
    if not c or c.get("mean") is None:
        return "–"
    said = c.get("answered", sum(c.get("levels") or []))
    return f"{c['mean']:.1f} of 4 ({said} student{'s' if said != 1 else ''} said)"


def answers_table(r: Round, min_count: int, name: str = "") -> str:
    """The vote's answers as the projector showed them: counts and shares, confidence where given, and the
    model's probability and rank of each word once revealed."""
    word, correct = is_word(r) and r.view is not None, (r.question.get("correct") or "").casefold()
    confidence = {a["answer"]: a.get("confidence") for a in r.answers}
    if r.view is not None:
        rows = [dict(x, confidence=x.get("confidence") or confidence.get(x["answer"])) for x in r.view["class"]]
        other, total = r.view["other"], r.view["total"]
    else:
        shown = [a for a in r.answers if a["key"] not in r.hidden]
        total = sum(a["count"] for a in shown)
        rows = [dict(a, share=a["count"] / total) for a in shown if a["count"] >= min_count]
        rare = [a for a in shown if a["count"] < min_count]
        other = {"answers": len(rare), "count": sum(a["count"] for a in rare)}
    if not rows and not other["count"]:
        return '<p class="note">No answers.</p>'
    sure = any(sum(x.get("confidence") or []) for x in rows)
    head = ["Answer", "Students", "Share"] + (["Mean confidence", *(f"{i} {w}" for i, w in enumerate(LEVELS, 1))]
                                               if sure else [])
    head += ["Model P", "Model rank"] if word else []
    body = []
    for x in rows:
        mark = ' <span class="right">✓ right answer</span>' if correct and x["answer"].casefold() == correct else ""
        cells = [f"{esc(x['answer'])}{mark}", x["count"], percent(x["share"])]
        if sure:
            levels = x.get("confidence") or []
            mean = results.mean_confidence(levels)
            cells += ["–" if mean is None else f"{mean:.1f}", *(levels if len(levels) == 4 else ["–"] * 4)]
        if word:
            rank = x.get("model_rank")
            cells += [views.probability(x.get("model_prob")), "–" if rank is None else f"#{rank:,}"]
        body.append(row_html(cells))
    if other["count"]:
        n = other["answers"]
        label = f"other ({n} answer{'s' if n != 1 else ''} given by fewer than {min_count} students)"
        body.append(row_html([label, other["count"], percent(other["count"] / total if total else None)]
                             + [""] * (len(head) - 3)))
    hidden = sum(a["count"] for a in r.answers if a["key"] in r.hidden)
    note = f'<p class="note">{hidden} answer{"s" if hidden != 1 else ""} taken off the projector.</p>' if hidden else ""
    heads = "".join(f'<th scope="col">{esc(h)}</th>' for h in head)
    caption = f"{name}: the class's answers" if name else "The class's answers"
    return (f'<table class="answers"><caption>{caption} ({total})</caption><thead><tr>{heads}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>{note}')


def row_html(cells: list) -> str:
    first, rest = cells[0], cells[1:]
    tds = "".join(f"<td>{c}</td>" for c in rest)
    return f'<tr><th scope="row">{first}</th>{tds}</tr>'


def figure_rows(r: Round) -> dict[str, str]:
    """One vote's figures (label -> value, already HTML), as views.agreement_html means them."""
    a = (r.view or {}).get("agreement") or {}
    out = {"Answers": str(sum(x["count"] for x in r.answers if x["key"] not in r.hidden))}
    if r.view is None:
        out["Revealed"] = "not revealed"
    elif a.get("answers"):
        rows = r.view["class"]
        out["The class's favourite"] = esc(rows[0]["answer"]) if rows else "–"
        if is_word(r):
            rank, ppl, logp = a.get("class_favourite_model_rank"), a.get("perplexity"), a.get("mean_logprob")
            both = f": {', '.join(esc(w) for w in a['top5_both'])}" if a.get("top5_both") else ""
            out.update({
                "The model's favourite": esc((a.get("model_favourite") or "–").strip()),
                "The model's rank of the class's favourite": "–" if rank is None else
                f"#{rank:,} (p = {views.probability(a.get('class_favourite_model_prob'))})",
                "Share of the class who gave the model's favourite": percent(a.get("model_favourite_class_share")),
                "The model's mean log-probability of the class's answers": "–" if logp is None else f"{logp:.2f}",
                "The model's perplexity on the class": "–" if ppl is None else f"{ppl:,.1f}",
                "The class's top 5 in the model's top 5": f"{a.get('top5_overlap', 0)} / 5{both}"})
        else:
            if a.get("correct"):
                out["Gave the right answer"] = f"{percent(a.get('right_share'))} ({a.get('right_count', 0)})"
            if a.get("median") is not None:
                out["The class's median"] = f"{a['median']:.4g}"
    if question_confidence(r):
        out["Mean confidence (1 guessing … 4 sure)"] = confidence_text(question_confidence(r))
    return out


def figures_table(votes: list[Round]) -> str:
    """Each vote's figures in a column; with a revealed second vote, who changed and where the class moved."""
    columns = [figure_rows(r) for r in votes]
    labels = list(dict.fromkeys(label for c in columns for label in c))
    rounds = (votes[-1].view or {}).get("rounds")
    extra = {}
    if rounds:
        target = "the model (its mean log-probability)" if rounds["measured_by"] == "mean_logprob" else \
            "the right answer"
        extra = {"Voted in both votes": str(rounds["voted_twice"]),
                 "Changed their answer": f"{rounds['changed']} of {rounds['voted_twice']}",
                 f"Where the class moved, towards or away from {target}": esc(rounds["moved"] or "–")}
    heads = "".join(f'<th scope="col">{ROUND_NAMES.get(r.question["round"], "Vote") if len(votes) > 1 else "The class"}'
                    '</th>' for r in votes)
    body = "".join(f'<tr><th scope="row">{esc(label)}</th>'
                   + "".join(f"<td>{c.get(label, '–')}</td>" for c in columns) + "</tr>" for label in labels)
    body += "".join(f'<tr><th scope="row">{esc(label)}</th><td colspan="{len(votes)}">{value}</td></tr>'
                    for label, value in extra.items())
    return (f'<table class="figures"><caption>The figures</caption><thead><tr><th scope="col">Figure</th>{heads}'
            f'</tr></thead><tbody>{body}</tbody></table>')


def charts(votes: list[Round]) -> list:
    """The projector's charts: both votes in one when the second vote is revealed (views.rounds_figure), the
    model's own top words beside the class's share of each for a word question."""
    last = next((r for r in reversed(votes) if r.view is not None), None)
    if last is None:
        return []
    shown = [last] if last.view.get("rounds") else [r for r in votes if r.view is not None]
    figures = [views.class_figure(r.view) for r in shown]
    if is_word(last) and last.view.get("model_top"):
        figures.append(views.model_figure(last.view))
    return figures


def chart_html(fig) -> str:
    text = figure_text.text_of(fig) or {}
    inner = fig.to_html(full_html=False, include_plotlyjs=False, default_width="100%",
                        config={"displaylogo": False, "responsive": True})
    return (f'<figure class="chart" role="group" aria-label="{esc(text.get("name", "Chart"))}">{inner}'
            f'<figcaption>{esc(text.get("summary", ""))}</figcaption></figure>')


def question_html(votes: list[Round], min_count: int) -> tuple[str, bool]:
    """A question's section, and whether it has charts."""
    q = votes[0].question
    options = ""
    if q["kind"] == "choice":
        correct = (q.get("correct") or "").casefold()
        right = ' <span class="right">✓ right answer</span>'
        options = '<ol class="options" type="A">' + "".join(
            f"<li>{esc(o)}{right if correct == o.casefold() else ''}</li>" for o in q["choices"]) + "</ol>"
    elif q.get("correct"):
        options = f'<p>The right answer: <span class="right">{esc(q["correct"])}</span></p>'
    model = f'<p class="note">The model: {esc(q["model"])}</p>' if q["model"] else ""
    two = " · two votes (peer instruction)" if len(votes) > 1 else ""
    names = [ROUND_NAMES.get(r.question["round"], "Vote") if len(votes) > 1 else "" for r in votes]
    rounds = "".join(
        f'<div class="round" data-round="{r.question["round"]}"><h3>{name or "The answers"}</h3><p class="note">'
        f'{"Revealed " + revealed_at(r.row) if r.view is not None else "Not revealed: the counts only."}</p>'
        f'{answers_table(r, min_count, name)}</div>' for r, name in zip(votes, names))
    figures = charts(votes)
    drawn = "".join(chart_html(f) for f in figures)
    number = q["number"]
    return (f'<section class="question" id="question-{number}" aria-labelledby="question-{number}-title">'
            f'<h2 id="question-{number}-title">Question {number} · {esc(views.KIND_WORDS[q["kind"]])}{two}</h2>'
            f'<p class="text">{esc(q["text"])}{" …" if q["kind"] == "next_token" else ""}</p>{options}{model}'
            f'{rounds}{figures_table(votes)}{drawn}</section>'), bool(figures)


def report_html(session, questions: list[list[Round]]) -> str:
    date = time.strftime("%Y-%m-%d", time.gmtime(session.created_at))
    title = session.title or "Ask the class"
    code = sessions.shown_code(session.code)
    grouped = f'; answers fewer than {session.min_count} students gave are shown as "other"' \
        if session.min_count > 1 else ""
    sections, any_chart = [], False
    for votes in questions:
        section, drawn = question_html(votes, session.min_count)
        sections.append(section)
        any_chart = any_chart or drawn
    script = ""
    if any_chart:  # plotly.js once, inline: the page needs nothing from the network
        import plotly.offline

        script = f'<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script>'
    contents = "".join(f'<li><a href="#question-{v[0].question["number"]}">Question {v[0].question["number"]}: '
                       f'{esc(v[0].question["text"])}</a></li>' for v in questions)
    nav = f'<nav aria-label="Questions"><ol>{contents}</ol></nav>' if questions else \
        '<p class="note">No questions were asked in this class.</p>'
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{esc(title)} · {date}</title><style>{CSS}</style>{script}</head><body>'
            f'<header><h1>{esc(title)}</h1><p>Ask the class · {date} · class {esc(code)} · {len(questions)} '
            f'question{"s" if len(questions) != 1 else ""}</p></header>{nav}<main>{"".join(sections)}</main>'
            f'<footer><p class="note">Made with LM Lab. Answers are anonymous{grouped}; answers taken off the '
            f'projector are left out. Confidence: {esc(", ".join(f"{i} {w}" for i, w in enumerate(LEVELS, 1)))}.</p>'
            f'</footer></body></html>\n')
