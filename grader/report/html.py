"""The student's report.html and the class's index.html: self-contained pages.

Jinja2 renders everything with autoescape on. The only text not escaped is our own: the
stylesheet (included from the templates) and the sort script, whose hash the page's
Content-Security-Policy names, so no other script can run even if escaping were
bypassed. Pictures are inline SVG drawn from numbers (`grader.report.charts`), and the
student's own figures `<img>`s whose `src` is a `data:image/png` URI of bytes checked to
be a PNG (`grader.figures`); a page makes no request of any kind.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from grader.report.charts import Heatmap, heatmap_view, histogram_bars
from grader.report.formatting import (
    INSTRUCTOR_GRADED,
    as_float,
    awaits_instructor,
    fmt_points,
    fmt_value,
    instructor_status,
    json_text,
    percent,
    plain_text,
    short_digest,
)
from grader.report.visibility import WITHHELD, Seen, seen
from grader.results import (
    Evidence,
    EvidenceKind,
    ExerciseResult,
    Figure,
    Status,
    SubmissionResult,
    TestResult,
)
from grader.similarity.summary import Summary

__all__ = ["render_index", "render_report", "review_queue"]

TEMPLATES = Path(__file__).with_name("templates")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)
TOP_FAILURES = 5


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pts=fmt_points, value=fmt_value, plain=plain_text, json=json_text, short_digest=short_digest
    )
    env.tests.update(awaits_instructor=awaits_instructor)
    env.globals.update(INSTRUCTOR_GRADED=INSTRUCTOR_GRADED, WITHHELD=WITHHELD)
    return env


ENV = _environment()


@functools.lru_cache(maxsize=256)
def heatmap_markup(h: Heatmap) -> Markup:
    """One heatmap drawn by the `heatmap` macro. A batch draws the same picture from the
    same numbers once: every correct submission shows the same ones, and drawing one is
    most of a report's rendering time (hundreds of SVG cells)."""
    return Markup(ENV.get_template("macros.html").module.heatmap(h))  # type: ignore[attr-defined]


ENV.globals.update(heatmap_markup=heatmap_markup)


# ---------------------------------------------------------------- report.html


@dataclass(frozen=True)
class MismatchView:
    data: dict[str, Any]
    expected_rows: list[list[tuple[str, bool]]]
    """Each cell: (text, differs from the other slice)."""
    got_rows: list[list[tuple[str, bool]]]


@dataclass(frozen=True)
class EvidenceView:
    kind: str
    data: dict[str, Any]
    heatmap: Heatmap | None = None
    mismatch: MismatchView | None = None


@dataclass(frozen=True)
class TestView:
    test: TestResult
    show_name: bool
    evidence: tuple[EvidenceView, ...]
    figures: tuple[Figure, ...] = ()
    """The student's own figures, shown as data: images (checked PNGs, see figures.py)."""


@dataclass(frozen=True)
class ExerciseView:
    ex: ExerciseResult
    status: str
    tests: tuple[TestView, ...]
    hidden_passed: int
    hidden_total: int
    hidden_score: float
    hidden_max: float
    note: str = ""
    """Shown instead of score and status for written answers this report cannot score
    (`grader check`): "graded by your instructor" or the answers still to fix."""


def _rows(raw: Any) -> list[list[Any]]:
    if isinstance(raw, list) and raw and all(isinstance(r, list) for r in raw):
        return raw
    return [raw] if isinstance(raw, list) else [[raw]]


def _mismatch_view(data: dict[str, Any]) -> MismatchView:
    exp, got = _rows(data.get("expected_slice")), _rows(data.get("got_slice"))

    def cells(mine: list[list[Any]], other: list[list[Any]]) -> list[list[tuple[str, bool]]]:
        out = []
        for r, row in enumerate(mine):
            theirs = other[r] if r < len(other) else []
            out.append([(fmt_value(v), _differs(v, theirs, c)) for c, v in enumerate(row)])
        return out

    return MismatchView(data, cells(exp, got), cells(got, exp))


def _differs(v: Any, row: list[Any], c: int) -> bool:
    if c >= len(row):
        return True
    a, b = as_float(v), as_float(row[c])
    if math.isnan(a) and math.isnan(b):
        return str(v) != str(row[c])
    return a != b


def _evidence_view(ev: Evidence, uids: Iterator[int]) -> EvidenceView:
    data = ev.data if isinstance(ev.data, dict) else {"text": str(ev.data)}
    if ev.kind == EvidenceKind.HEATMAPS:
        return EvidenceView(ev.kind, data, heatmap=heatmap_view(f"hm{next(uids)}", data))
    if ev.kind == EvidenceKind.MISMATCH:
        return EvidenceView(ev.kind, data, mismatch=_mismatch_view(data))
    return EvidenceView(ev.kind, data)


def _exercise_view(ex: ExerciseResult, uids: Iterator[int]) -> ExerciseView:
    shown, hidden = [], []
    for t in ex.tests:
        if seen(t) is Seen.ALL:
            evidence = tuple(_evidence_view(e, uids) for e in t.evidence)
            shown.append(TestView(t, show_name=True, evidence=evidence, figures=t.figures))
        elif seen(t) is Seen.MESSAGE:
            shown.append(TestView(t, show_name=False, evidence=()))
        else:
            hidden.append(t)
    return ExerciseView(
        ex=ex,
        status=Status(ex.status).value,
        tests=tuple(shown),
        hidden_passed=sum(t.passed for t in hidden),
        hidden_total=len(hidden),
        hidden_score=sum(t.score for t in hidden),
        hidden_max=sum(t.max_score for t in hidden),
        note=instructor_status(ex),
    )


def render_report(result: SubmissionResult) -> str:
    """One student's feedback page (report.html)."""
    uids = itertools.count(1)
    exercises = [_exercise_view(ex, uids) for ex in result.exercises]
    return ENV.get_template("report.html").render(
        r=result,
        exercises=exercises,
        pct=percent(result.score, result.max_score),
        script_src="'none'",
    )


# ----------------------------------------------------------------- index.html


LOAD_FAILURE = "(the code could not be loaded)"


@dataclass(frozen=True)
class Failure:
    test: str
    message: str
    students: int


@dataclass(frozen=True)
class ExerciseStats:
    id: str
    title: str
    passed: int
    graded: int
    mean_pct: float
    failures: tuple[Failure, ...]


@dataclass(frozen=True)
class StudentRow:
    result: SubmissionResult
    href: str
    pct: float
    cells: tuple[tuple[str, str, str], ...]
    """Per exercise: (score text, sort value, status)."""


def _exercise_ids(results: Sequence[SubmissionResult]) -> list[str]:
    return list(dict.fromkeys(ex.id for r in results for ex in r.exercises))


def _failures_of(ex: ExerciseResult) -> set[tuple[str, str, str]]:
    """(test, message pattern, message) for each failing test; numbers in the pattern
    are blanked so that "max abs error 0.31" and "... 0.27" count as one mistake."""
    found = {
        (t.name or t.test_id, NUMBER.sub("#", t.message), t.message)
        for t in ex.tests
        if not t.passed and not (ex.message and t.message == ex.message)
    }
    if ex.message and any(not t.passed and t.message == ex.message for t in ex.tests):
        # code that did not load fails every test with one message: one mistake, not n
        found.add((LOAD_FAILURE, NUMBER.sub("#", ex.message), ex.message))
    if not ex.tests and ex.message and Status(ex.status) is not Status.PASSED:
        found.add(("(whole exercise)", NUMBER.sub("#", ex.message), ex.message))
    return found


def _exercise_stats(ex_id: str, graded: Sequence[SubmissionResult]) -> ExerciseStats:
    mine = [ex for r in graded for ex in r.exercises if ex.id == ex_id]
    counts: Counter[tuple[str, str]] = Counter()
    example: dict[tuple[str, str], str] = {}
    for ex in mine:
        for test, pattern, message in sorted(_failures_of(ex)):
            counts[(test, pattern)] += 1
            example.setdefault((test, pattern), message)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_FAILURES]
    top = tuple(Failure(test, example[(test, pattern)], n) for (test, pattern), n in ranked)
    return ExerciseStats(
        id=ex_id,
        title=next((ex.title for ex in mine if ex.title), ex_id),
        passed=sum(Status(ex.status) is Status.PASSED for ex in mine),
        graded=len(mine),
        mean_pct=statistics.fmean(percent(e.score, e.max_score) for e in mine) if mine else 0.0,
        failures=top,
    )


def _student_row(r: SubmissionResult, ids: list[str], href: str) -> StudentRow:
    by_id = {ex.id: ex for ex in r.exercises}
    cells = []
    for ex_id in ids:
        ex = by_id.get(ex_id)
        if ex is None or not r.gradable:
            cells.append(("—", "", "none"))
        else:
            cells.append((fmt_points(ex.score), repr(float(ex.score)), Status(ex.status).value))
    return StudentRow(r, href, percent(r.score, r.max_score), tuple(cells))


def default_report_href(student: str) -> str:
    """`<student>/report.html`, relative to index.html (reports/ layout of the contract)."""
    return f"{quote(student, safe='')}/report.html"


def _sort_script() -> tuple[Markup, str]:
    """Our own script (a package file, never student data) and its CSP hash source."""
    text = (TEMPLATES / "sort_table.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    return Markup(text), f"'sha256-{digest}'"


def render_index(
    results: Sequence[SubmissionResult],
    report_href: Callable[[str], str] | None = None,
    similarity: Summary | None = None,
) -> str:
    """The class at a glance (index.html): histogram, pass rates, common failures, table,
    and similar submissions when `grader similar` has found them."""
    href = report_href or default_report_href
    ordered = sorted(results, key=lambda r: r.student)
    graded = [r for r in ordered if r.gradable]
    ids = _exercise_ids(ordered)
    percents = [percent(r.score, r.max_score) for r in graded]
    script, script_src = _sort_script()
    return ENV.get_template("index.html").render(
        assignment=next((r.assignment for r in ordered), ""),
        n_students=len(ordered),
        n_graded=len(graded),
        mean_pct=statistics.fmean(percents) if percents else None,
        median_pct=statistics.median(percents) if percents else None,
        bars=histogram_bars(percents),
        stats=[_exercise_stats(ex_id, graded) for ex_id in ids],
        exercise_ids=ids,
        rows=[_student_row(r, ids, href(r.student)) for r in ordered],
        script=script,
        script_src=script_src,
        review=review_queue(graded),
        similarity=similarity,
    )


# ------------------------------------------------------- written answers to review


@dataclass(frozen=True)
class QuestionQueue:
    id: str
    """The question id (`quiz.q3`), the test id without `question:`."""
    prompt: str
    waiting: int
    """Answers a person still has to review (`needs_review`)."""
    answers: int


@dataclass(frozen=True)
class ReviewQueue:
    waiting: int
    answers: int
    questions: tuple[QuestionQueue, ...]


def review_queue(results: Sequence[SubmissionResult]) -> ReviewQueue | None:
    """How many written answers wait for a person, in all and per question (`grader
    review` serves them); None when no result has a written answer (`needs_review` is
    set on those only)."""
    per: dict[str, list[TestResult]] = {}
    for r in results:
        for ex in r.exercises:
            for t in ex.tests:
                if t.needs_review is not None:
                    per.setdefault(t.test_id.removeprefix("question:"), []).append(t)
    if not per:
        return None
    questions = tuple(
        QuestionQueue(qid, tests[0].name, sum(bool(t.needs_review) for t in tests), len(tests))
        for qid, tests in per.items()
    )
    return ReviewQueue(sum(q.waiting for q in questions), sum(q.answers for q in questions), questions)
