"""What `grader check` prints: the report's content as plain text, optional ANSI colors.

The same visibility rules as the HTML report: hidden tests only counted, message_only
tests show their message and nothing else.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

from grader.formatting import as_float, fmt_points, fmt_value, plain_text
from grader.results import (
    Evidence,
    ExerciseResult,
    Status,
    SubmissionResult,
    TestResult,
)

__all__ = ["format_check_table"]

COLORS = {
    "passed": "32", "partial": "33", "failed": "31", "error": "35", "timeout": "33",
    "bold": "1", "dim": "2",
}  # fmt: skip
SHADES = " .:-=+*#%@"
"""Darker to brighter, for text heatmaps; a masked cell shows `x`, one that got weight `!`."""
INDENT = "    "
WIDTH = 100


def _paint(text: str, style: str, color: bool) -> str:
    return f"\x1b[{COLORS[style]}m{text}\x1b[0m" if color and style in COLORS else text


def _indent(text: str, prefix: str = INDENT) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _wrap(text: str, prefix: str = INDENT) -> list[str]:
    """A message wrapped to WIDTH columns, its own line breaks kept."""
    return [
        wrapped
        for line in plain_text(text).splitlines() or [""]
        for wrapped in textwrap.wrap(line, WIDTH, initial_indent=prefix, subsequent_indent=prefix)
        or [prefix]
    ]


def _table(result: SubmissionResult, color: bool) -> list[str]:
    names = [plain_text(ex.title or ex.id) for ex in result.exercises]
    width = max([len("exercise"), *(len(n) for n in names)])
    scores = [f"{fmt_points(ex.score)}/{fmt_points(ex.max_score)}" for ex in result.exercises]
    sw = max([len("score"), *(len(s) for s in scores)])
    lines = [_paint(f"{'exercise':<{width}}  {'score':>{sw}}  status", "bold", color)]
    lines.append("-" * (width + sw + 12))
    for ex, name, score in zip(result.exercises, names, scores):
        status = Status(ex.status).value
        lines.append(f"{name:<{width}}  {score:>{sw}}  {_paint(status, status, color)}")
    lines.append("-" * (width + sw + 12))
    total = f"{fmt_points(result.score)}/{fmt_points(result.max_score)}"
    if not result.gradable:
        total = "not graded"
    lines.append(_paint(f"{'total':<{width}}  {total:>{sw}}", "bold", color))
    return lines


def _slice_rows(raw: Any) -> list[str]:
    rows = raw if isinstance(raw, list) and raw and isinstance(raw[0], list) else [raw]
    return [
        " ".join(f"{fmt_value(v):>8}" for v in (row if isinstance(row, list) else [row]))
        for row in rows
    ]


def _mismatch_lines(data: dict[str, Any]) -> list[str]:
    lines = [
        (
            f"{data.get('what', 'values')}: max abs error {fmt_value(data.get('max_abs_error'))}"
            f" at {fmt_value(data.get('index'))}"
        ),
        f"expected {fmt_value(data.get('expected'))}, got {fmt_value(data.get('got'))}",
    ]
    exp, got = _slice_rows(data.get("expected_slice")), _slice_rows(data.get("got_slice"))
    width = max(len(r) for r in exp + ["expected"])
    lines.append(f"{'expected':<{width}}  |  got")
    for i in range(max(len(exp), len(got))):
        left = exp[i] if i < len(exp) else ""
        lines.append(f"{left:<{width}}  |  {got[i] if i < len(got) else ''}")
    return lines


def _shade(v: float, masked: bool) -> str:
    if masked:
        return "x" if abs(v) <= 1e-6 else "!"
    if math.isnan(v):
        return "?"
    return SHADES[min(len(SHADES) - 1, max(0, int(v * len(SHADES))))]


def _heatmap_lines(data: dict[str, Any]) -> list[str]:
    """Panels side by side as characters; values are taken as weights in 0..1."""
    panels = [p for p in data.get("panels", []) if isinstance(p, dict)]
    grids = []
    for p in panels:
        matrix, masked = p.get("matrix") or [], p.get("masked") or []
        grid = []
        for r, row in enumerate(matrix):
            mrow = masked[r] if r < len(masked) else []
            grid.append("".join(_shade(as_float(v), bool(mrow[c]) if c < len(mrow) else False)
                                for c, v in enumerate(row)))  # fmt: skip
        grids.append((str(p.get("label", "")), grid))
    width = max([len(label) for label, _ in grids] + [len(g[0]) for _, g in grids if g] + [1])
    lines = [str(data.get("title", "heatmap"))]
    lines.append("   ".join(f"{label:<{width}}" for label, _ in grids))
    for i in range(max((len(g) for _, g in grids), default=0)):
        lines.append("   ".join(f"{(g[i] if i < len(g) else ''):<{width}}" for _, g in grids))
    lines.append(f"(brighter = more weight: '{SHADES[1:]}'; x masked, ! masked but got weight)")
    return lines


def _evidence_lines(ev: Evidence) -> list[str]:
    data = ev.data if isinstance(ev.data, dict) else {}
    if ev.kind == "mismatch":
        return _mismatch_lines(data)
    if ev.kind == "heatmaps":
        return _heatmap_lines(data)
    if ev.kind == "traceback":
        return [str(data.get("title", "traceback")), *plain_text(data.get("text", "")).splitlines()]
    if ev.kind == "note":
        return [str(data.get("text", ""))]
    return []


def _test_block(t: TestResult, color: bool) -> list[str]:
    visible = t.visibility != "message_only"
    name = plain_text(t.name) if visible else "a check whose details are withheld"
    outcome = f" [{t.outcome}]" if t.outcome in ("error", "timeout") else ""
    head = f"  {_paint('x', 'failed', color)} {name}  ({fmt_points(t.score)}/{fmt_points(t.max_score)}){outcome}"
    lines = [head]
    if t.message:
        lines += _wrap(t.message)
    if visible:
        for ev in t.evidence:
            lines += _indent(plain_text(_evidence_lines(ev))).splitlines()
    return lines


def _exercise_block(ex: ExerciseResult, color: bool) -> list[str]:
    shown = [t for t in ex.tests if t.visibility in ("visible", "message_only")]
    failing = [t for t in shown if not t.passed]
    hidden = [t for t in ex.tests if t not in shown]  # unknown visibility: hidden
    hidden_failed = any(not t.passed for t in hidden)
    if (
        not failing
        and not hidden_failed
        and not (ex.message and Status(ex.status) is not Status.PASSED)
    ):
        return []
    lines = [_paint(plain_text(f"{ex.title or ex.id} ({ex.id})"), "bold", color)]
    if ex.message:
        lines += _wrap(ex.message, "  ")
    for t in failing:
        lines += _test_block(t, color)
    if hidden:
        passed = sum(t.passed for t in hidden)
        lines.append(f"  hidden tests: {passed}/{len(hidden)} passed")
    return lines


def _load_lines(result: SubmissionResult, color: bool) -> list[str]:
    load = result.load
    lines = [f"note: {plain_text(n)}" for n in load.notices]
    for e in load.cell_errors:
        where = f"cell [{e['cell']}]" if e.get("cell") else str(e.get("where", "your code"))
        head = f"{where} raised {e.get('ename', 'an error')}"
        head = plain_text(f"{head}: {e.get('evalue', '')}".rstrip(": "))
        lines.append(_paint(head, "failed", color))
        lines += _indent(plain_text(e.get("traceback", ""))).splitlines()
    if load.stdout_truncated:
        lines.append("note: your code's printed output was long; output truncated in the report.")
    return lines


def format_check_table(result: SubmissionResult, color: bool) -> str:
    """The check verdict for a terminal: table of exercises, then what failed and why."""
    lines: list[str] = []
    if not result.gradable:
        lines.append(_paint("GRADER FAILURE, NOT A ZERO: the grader itself failed on this"
                            " submission; the numbers below say nothing about your work.",
                            "error", color))  # fmt: skip
    lines += _load_lines(result, color)
    if lines:
        lines.append("")
    lines += _table(result, color)
    blocks = [b for b in (_exercise_block(ex, color) for ex in result.exercises) if b]
    for block in blocks:
        lines += ["", *block]
    if not blocks and result.gradable:
        lines += ["", _paint("Every check shown here passed.", "passed", color)]
    return "\n".join(lines) + "\n"
