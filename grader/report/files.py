"""Writing results to disk: result.json, grades.csv, report.html and index.html.

Every file is written atomically (a temporary file in the same folder, then
`os.replace`), so a reader never sees half a file and an interrupted batch leaves the
previous version in place.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grader.errors import OutputError
from grader.report.html import render_index, render_report
from grader.results import SubmissionResult, to_json_dict
from grader.similarity.summary import read_summary

__all__ = [
    "csv_safe",
    "write_grades_csv",
    "write_index_html",
    "write_report_html",
    "write_result_json",
]

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` (UTF-8) to `path` via a temporary file in the same folder.

    A file that cannot be written (a full disk, no permission) raises OutputError and
    leaves the previous version, if any, and no temporary file behind."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OutputError.writing(target, exc) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OutputError.writing(target, exc) from None
        raise
    return target


def _finite(value: Any) -> Any:
    """JSON has no NaN or Infinity: such floats (evidence can hold them) become strings
    ("nan", "inf", "-inf") that `float()` reads back."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def result_json_text(result: SubmissionResult) -> str:
    doc = _finite(to_json_dict(result))
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_result_json(result: SubmissionResult, path: str | os.PathLike[str]) -> Path:
    """`result.json` of the contract (results.to_json_dict), written atomically."""
    return write_text_atomic(path, result_json_text(result))


def csv_safe(text: str) -> str:
    """A cell a spreadsheet will not run: text starting with = + - @ (or a tab/CR) gets a
    leading apostrophe (OWASP's advice against CSV formula injection)."""
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def _points(x: float) -> str:
    return f"{round(float(x), 4):g}"


def _grade_row(result: SubmissionResult, exercise_ids: Sequence[str]) -> list[str]:
    """A row of grades.csv. A grader failure leaves the scores empty: not a zero."""
    if not result.gradable:
        return [
            csv_safe(result.student),
            "",
            _points(result.max_score),
            *("" for _ in exercise_ids),
        ]
    by_id = {ex.id: ex for ex in result.exercises}
    scores = [_points(by_id[i].score) if i in by_id else "" for i in exercise_ids]
    return [csv_safe(result.student), _points(result.score), _points(result.max_score), *scores]


def grades_csv_text(results: Sequence[SubmissionResult], exercise_ids: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["student", "total", "max", *(csv_safe(i) for i in exercise_ids)])
    for result in sorted(results, key=lambda r: r.student):
        writer.writerow(_grade_row(result, exercise_ids))
    return buf.getvalue()


def write_grades_csv(
    results: Sequence[SubmissionResult],
    path: str | os.PathLike[str],
    exercise_ids: Sequence[str],
) -> Path:
    """grades.csv: student, total, max, then one column per exercise id, one row per
    student (sorted by id)."""
    return write_text_atomic(path, grades_csv_text(results, exercise_ids))


def write_report_html(result: SubmissionResult, path: str | os.PathLike[str]) -> Path:
    return write_text_atomic(path, render_report(result))


def write_index_html(results: Sequence[SubmissionResult], path: str | os.PathLike[str]) -> Path:
    """index.html; links assume the contract's layout (`<student>/report.html` beside it).
    The similar submissions are those of `similarity.json` beside it, if any."""
    return write_text_atomic(path, render_index(results, similarity=read_summary(Path(path).parent)))
