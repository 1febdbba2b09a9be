"""`--format jsonl`: one JSON line per student on stdout, as soon as each is graded.

Nothing else goes to stdout in this mode (progress and the summary go to stderr), so
`grader grade ... --format jsonl | jq ...` reads clean JSON lines. A line:

    {"student": "alice", "assignment": "attention", "score": 87.5, "max_score": 100,
     "gradable": true, "exercises": [{"id": "causal_mask", "score": 10, "max_score": 15,
     "status": "partial"}, ...], "result_json": "reports/alice/result.json",
     "report_html": "reports/alice/report.html"}

Results kept from an earlier run (up to date) are reported too, first. Test details
are in result.json.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from grader.report.writers import Context, Writer
from grader.results import Status, SubmissionResult

__all__ = ["JsonLinesWriter", "json_line"]


class JsonLinesWriter(Writer):
    name = "jsonl"
    stdout = "exclusive"

    def student(self, result: SubmissionResult, ctx: Context) -> list[Path]:
        ctx.stdout.write(json_line(result, ctx.out) + "\n")
        ctx.stdout.flush()
        return []


def _number(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def json_line(result: SubmissionResult, out: Path) -> str:
    doc: dict[str, Any] = {
        "student": result.student,
        "assignment": result.assignment,
        "score": _number(result.score),
        "max_score": _number(result.max_score),
        "gradable": result.gradable,
        "exercises": [{"id": ex.id, "score": _number(ex.score), "max_score": _number(ex.max_score),
                       "status": Status(ex.status).value} for ex in result.exercises],
        "result_json": str(out / result.student / "result.json"),
        "report_html": str(out / result.student / "report.html"),
    }
    return json.dumps(doc, ensure_ascii=True, allow_nan=False)  # one line for any splitter
