"""Numbers and text as people read them, shared by the HTML pages and the terminal.

Student text passes through `plain_text` before a terminal sees it: escape sequences and
control characters are dropped, so a message cannot move the cursor or retitle a window.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from grader.results import ExerciseResult, TestResult

__all__ = [
    "INSTRUCTOR_GRADED", "as_float", "awaits_instructor", "fmt_points", "fmt_value",
    "instructor_status", "json_text", "percent", "plain_text", "short_digest",
]  # fmt: skip

INSTRUCTOR_GRADED = "graded by your instructor"

ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def fmt_points(x: float) -> str:
    """8, 7.5, 2.33: points without noise."""
    return f"{round(float(x), 2):g}"


def fmt_value(v: Any) -> str:
    """A number (or the string a number became in JSON) as it reads best."""
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return str(v)


def percent(score: float, max_score: float) -> float:
    return 100.0 * score / max_score if max_score else 0.0


def plain_text(text: Any) -> str:
    """Traceback or output as plain text: lists joined, ANSI escape sequences and other
    control characters (a terminal would obey them) removed; newlines and tabs kept."""
    if isinstance(text, (list, tuple)):
        text = "\n".join(str(t) for t in text)
    text = ANSI.sub("", str(text or "")).replace("\r\n", "\n")
    return CONTROL.sub("", text)


def short_digest(digest: str) -> str:
    """`sha256:3f2a...` -> `3f2a9c01b7e4`: enough to tell two versions apart."""
    return digest.rpartition(":")[2][:12]


def json_text(data: Any) -> str:
    """Unknown evidence as indented JSON text (escaped by the template like any text)."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def as_float(value: Any) -> float:
    """A number from evidence data, which may hold None or "nan"/"inf" strings after JSON."""
    if isinstance(value, bool):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def awaits_instructor(test: TestResult) -> bool:
    """A written answer checked only for form (`grader check` has no answer key): it is
    worth 0/0 here and scored when the instructor grades."""
    return test.test_id.startswith("question:") and test.max_score == 0


def instructor_status(ex: ExerciseResult) -> str:
    """What to show instead of "0/0 passed" for an exercise made only of such answers:
    "graded by your instructor", or how many answers are missing or malformed; "" for
    any other exercise."""
    if not ex.tests or not all(awaits_instructor(t) for t in ex.tests):
        return ""
    to_fix = sum(not t.passed for t in ex.tests)
    return f"{to_fix} answer{'' if to_fix == 1 else 's'} to fix" if to_fix else INSTRUCTOR_GRADED
