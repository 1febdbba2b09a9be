"""`--format gradescope`: Gradescope's autograder results.json, so `grader` can run as a
Gradescope autograder (https://gradescope-autograders.readthedocs.io/en/latest/specs/).

Written to OUT/<student>/gradescope.json for every student; and, when the run is inside
Gradescope's autograder, also to results/results.json there: the folder named by
GRADESCOPE_RESULTS_DIR if set, else /autograder/results if it exists. Inside Gradescope
one submission is graded per run; more is an error.

The document: top-level `score` (the total; Gradescope uses it over the tests' sum),
`output` (the exercise table and the load notices, in plain text), `execution_time`,
`stdout_visibility: hidden` (the grader's own log is for the instructor), `extra_data`
(student, assignment, max_score, grader version), and one entry in `tests` per test
with `name` ("<exercise title>: <test name>"), `number` ("<exercise>.<test>"), `score`,
`max_score`, `output`, `tags` ([exercise id]), `visibility`:

    our visible       -> "visible": name, message and the traceback of the student's code
    our message_only  -> "visible", named "a check whose details are withheld", message
                         only (message_only limits what is shown, not when, so it is not
                         Gradescope's "after_due_date")
    our hidden        -> "hidden": Gradescope shows it to the instructor only, in full

A grader failure (not gradable) writes no results.json for Gradescope and raises an
InternalError (exit 2): Gradescope then reports a failed autograder run, which the
instructor sees and can rerun, instead of recording a zero.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grader import __version__
from grader.errors import InternalError, UsageError
from grader.report.files import write_text_atomic
from grader.report.formatting import fmt_points, plain_text
from grader.report.visibility import WITHHELD, adjustments, shown
from grader.report.writers import Context, Writer
from grader.results import EvidenceKind, ExerciseResult, Outcome, Status, SubmissionResult, TestResult

__all__ = ["GradescopeWriter", "gradescope_results", "results_dir"]

DEFAULT_RESULTS_DIR = Path("/autograder/results")


class GradescopeWriter(Writer):
    name = "gradescope"

    def student(self, result: SubmissionResult, ctx: Context) -> list[Path]:
        if not result.gradable:
            ctx.note(f"gradescope: {result.student} was not graded (grader failure): "
                     "no gradescope.json written")
            return []
        return [_write(gradescope_results(result), ctx.out / result.student / "gradescope.json")]

    def finish(self, results: Sequence[SubmissionResult], ctx: Context) -> list[Path]:
        folder = results_dir(ctx)
        if folder is None:
            return []
        if len(results) != 1:
            raise UsageError(f"inside Gradescope ({folder}) one submission is graded per run; "
                             f"this run graded {len(results)}")
        result = results[0]
        if not result.gradable:
            raise InternalError(f"the grader failed on {result.student}: no results.json written "
                                f"to {folder}, so Gradescope reports a failed run, not a zero")
        return [_write(gradescope_results(result), folder / "results.json")]


def results_dir(ctx: Context) -> Path | None:
    """Where Gradescope reads results.json, when this run is inside its autograder."""
    if ctx.env.get("GRADESCOPE_RESULTS_DIR"):
        return Path(ctx.env["GRADESCOPE_RESULTS_DIR"])
    return DEFAULT_RESULTS_DIR if DEFAULT_RESULTS_DIR.is_dir() else None


def _write(doc: dict[str, Any], path: Path) -> Path:
    return write_text_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def _points(x: float) -> float:
    return round(float(x), 4) if math.isfinite(x) else 0.0


def gradescope_results(result: SubmissionResult) -> dict[str, Any]:
    tests = [t for i, ex in enumerate(result.exercises, start=1) for t in _exercise_tests(i, ex)]
    doc: dict[str, Any] = {
        "score": _points(result.score),
        "output": _overview(result),
        "stdout_visibility": "hidden",
        "extra_data": {"student": result.student, "assignment": result.assignment,
                       "max_score": _points(result.max_score), "grader_version": __version__},
        "tests": tests,
    }
    if result.provenance is not None:
        doc["execution_time"] = round(result.provenance.duration_s, 3)
    return doc


def _exercise_tests(number: int, ex: ExerciseResult) -> list[dict[str, Any]]:
    label, view = ex.title or ex.id, shown(ex)
    entries = [_entry(f"{label}: {t.name or t.test_id}", t, _full_output(t), "visible") for t in view.visible]
    entries += [_entry(f"{label}: {WITHHELD}", t, t.message, "visible") for t in view.message_only]
    entries += [_entry(f"{label}: {t.name or t.test_id}", t, _full_output(t), "hidden") for t in view.hidden]
    entries += [_entry(f"{label}: {t.name}", t, _full_output(t), "visible") for t in adjustments(ex)]
    if not ex.tests:
        entries.append({"name": label, "score": _points(ex.score), "max_score": _points(ex.max_score),
                        "output": plain_text(ex.message or Status(ex.status).value),
                        "visibility": "visible"})
    for i, entry in enumerate(entries, start=1):
        entry["number"] = f"{number}.{i}"
        entry["tags"] = [ex.id]
    return entries


def _entry(name: str, t: TestResult, output: str, visibility: str) -> dict[str, Any]:
    return {"name": plain_text(name), "score": _points(t.score), "max_score": _points(t.max_score),
            "output": plain_text(output), "visibility": visibility}


def _full_output(t: TestResult) -> str:
    parts = [t.message] if t.message else []
    parts += [str(ev.data.get("text", "")) for ev in t.evidence
              if ev.kind in (EvidenceKind.TRACEBACK, EvidenceKind.NOTE)]
    if t.outcome in (Outcome.ERROR, Outcome.TIMEOUT):
        parts.insert(0, f"[{t.outcome}]")
    return "\n\n".join(p for p in parts if p)


def _overview(result: SubmissionResult) -> str:
    lines = [f"{result.assignment}: {fmt_points(result.score)} / {fmt_points(result.max_score)}", ""]
    width = max((len(ex.title or ex.id) for ex in result.exercises), default=8)
    for ex in result.exercises:
        view = shown(ex)
        hidden = f"  (hidden tests: {view.hidden_passed}/{len(view.hidden)} passed)" if view.hidden else ""
        lines.append(f"{(ex.title or ex.id):<{width}}  {fmt_points(ex.score):>6} / "
                     f"{fmt_points(ex.max_score):<4} {Status(ex.status).value}{hidden}")
    notes = [*result.load.notices, *(ex.message for ex in result.exercises if ex.message)]
    if notes:
        lines += ["", *dict.fromkeys(notes)]
    return plain_text("\n".join(lines))
