"""The workbook's API endpoints (labs.core.work.endpoints: app.py registers them, docs/api.md is written from them)."""

from __future__ import annotations

from labs.core.work.endpoints import Endpoint
from labs.part_b import questions, workbook

ENDPOINTS = (
    Endpoint("part_b_questions", questions.part_b_questions,
             "part_b_questions() -> {questions: [{id, part, section, wording, kind, answer_type, fields: [{key, label, "
             "hint}], tolerance, lab, erratum}]}"),
    Endpoint("check_part_b", workbook.check_part_b,
             "check_part_b(answers: {id: {field: answer}}) -> {results: [{id, verdict: right | wrong | open | "
             "not measured here, expected, tolerance, evidence, fields}], versions}"),
)
