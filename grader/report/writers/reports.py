"""The contract's files, as a writer: result.json and report.html per student, grades.csv
and index.html for the class (`grader report` rewrites them from stored results).

`grader grade` writes the same files itself as it goes (batch.py), so that a batch
stopped midway keeps what it graded; this writer is for re-rendering without grading.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from grader.errors import UsageError
from grader.report.files import (
    write_grades_csv,
    write_index_html,
    write_report_html,
    write_result_json,
)
from grader.report.overrides import Override
from grader.report.writers import Context, Writer
from grader.results import SubmissionResult, from_json_dict

__all__ = ["ReportsWriter", "exercise_ids", "read_reports"]


class ReportsWriter(Writer):
    name = "reports"

    def student(self, result: SubmissionResult, ctx: Context) -> list[Path]:
        folder = ctx.out / result.student
        return [write_result_json(result, folder / "result.json"),
                write_report_html(result, folder / "report.html")]

    def finish(self, results: Sequence[SubmissionResult], ctx: Context) -> list[Path]:
        return [write_grades_csv(results, ctx.out / "grades.csv", ctx.exercise_ids),
                write_index_html(results, ctx.out / "index.html")]


def read_reports(out: Path) -> list[SubmissionResult]:
    """Every OUT/<student>/result.json, sorted by student; a broken one is an error."""
    paths = sorted(out.glob("*/result.json"))
    if not paths:
        raise UsageError(f"no results in {out}/ (no <student>/result.json): run `grader grade` first")
    return [_read(p) for p in paths]


def _read(path: Path) -> SubmissionResult:
    try:
        result = from_json_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not a result.json the grader wrote ({type(exc).__name__}: {exc})") from None
    if result.student != path.parent.name:
        raise UsageError(f"{path}: holds student {result.student!r}, but its folder is "
                         f"{path.parent.name!r}")
    return result


def exercise_ids(results: Sequence[SubmissionResult]) -> tuple[str, ...]:
    """The exercise ids in the order the results list them."""
    return tuple(dict.fromkeys(ex.id for r in results for ex in r.exercises))


def rerender(out: Path, overrides: tuple[Path, Sequence[Override]] | None = None,
             only_changed: bool = False) -> tuple[list[SubmissionResult], list[SubmissionResult]]:
    """`grader report`: every result.json under `out` read back, the overrides (their
    file, and what it holds) checked and applied, result.json and report.html rewritten
    (with `only_changed`, only where a result changed), grades.csv and index.html
    always. Returns (before, after); runs no student code."""
    import os

    from grader.report import overrides as ov

    before = read_reports(out)
    results = before
    if overrides is not None:
        overrides_path, items = overrides
        ov.check_targets(before, items, overrides_path)
        results = [ov.apply_overrides(r, items) for r in before]
    ctx = Context(out=out, exercise_ids=exercise_ids(results), env=dict(os.environ), cwd=Path.cwd())
    writer = ReportsWriter()
    for old, new in zip(before, results):
        if not only_changed or old != new:
            writer.student(new, ctx)
    writer.finish(results, ctx)
    return before, results
