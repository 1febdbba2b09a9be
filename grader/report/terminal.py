"""What `grader check` prints: the report's content as plain text, optional ANSI colors.

The same visibility rules as the HTML report: hidden tests only counted, message_only
tests show their message and nothing else.
"""

from __future__ import annotations

import math
from itertools import zip_longest
from typing import Any

from grader.report.formatting import (
    INSTRUCTOR_GRADED,
    as_float,
    awaits_instructor,
    fmt_points,
    fmt_value,
    instructor_status,
    plain_text,
)
from grader.report.layout import terminal_width, widest, wrap
from grader.report.visibility import WITHHELD, Seen, seen
from grader.results import (
    Evidence,
    EvidenceKind,
    ExerciseResult,
    Outcome,
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
"""The widest a message is wrapped, however wide the terminal; the table fits the terminal."""


def _paint(text: str, style: str, color: bool) -> str:
    return f"\x1b[{COLORS[style]}m{text}\x1b[0m" if color and style in COLORS else text


def _indent(text: str, prefix: str = INDENT) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _wrap(text: str, prefix: str = INDENT, width: int = WIDTH) -> list[str]:
    """A message wrapped at spaces to `width` columns, its own line breaks kept."""
    return [
        wrapped
        for line in plain_text(text).splitlines() or [""]
        for wrapped in wrap(line, width, prefix)
    ]


def _table(result: SubmissionResult, color: bool, width: int = WIDTH) -> list[str]:
    """Exercise, score, status; the exercise and status columns wrap at spaces so that
    the table fits `width` columns."""
    names = [plain_text(ex.title or ex.id) for ex in result.exercises]
    cells = [_exercise_cells(ex) for ex in result.exercises]
    total = f"{fmt_points(result.score)}/{fmt_points(result.max_score)}"
    if not result.gradable:
        total = "not graded"
    sw = max([len("score"), len(total), *(len(score) for score, _, _ in cells)])
    nw, stw = _shared_widths(["exercise", "total", *names], ["status", *(st for _, st, _ in cells)],
                             width - sw - 4)
    rule = "-" * (nw + sw + stw + 4)
    lines = [_paint(f"{'exercise':<{nw}}  {'score':>{sw}}  status", "bold", color), rule]
    for name, (score, status, style) in zip(names, cells):
        rows = zip_longest(wrap(name, nw), wrap(status, stw), fillvalue="")
        for i, (part, st) in enumerate(rows):
            painted = _paint(st, style, color) if st else ""
            lines.append(f"{part:<{nw}}  {score if i == 0 else '':>{sw}}  {painted}".rstrip())
    lines.append(rule)
    lines.append(_paint(f"{'total':<{nw}}  {total:>{sw}}", "bold", color))
    return lines


def _shared_widths(left: list[str], right: list[str], room: int) -> tuple[int, int]:
    """Widths of two wrapped columns that share `room` columns: where both do not fit,
    the right one gets at most two fifths, the left one the rest; neither goes below its
    longest word."""
    lw, rw = widest(left), widest(right)
    if lw + rw <= room:
        return lw, rw
    right_min = widest(w for text in right for w in text.split())
    right_share = min(rw, max(right_min, room * 2 // 5))
    lw = max(widest(w for text in left for w in text.split()), room - right_share)
    return lw, max(right_min, room - lw)


def _exercise_cells(ex: ExerciseResult) -> tuple[str, str, str]:
    """(score, status, style) of an exercise's row; written answers `check` cannot score
    say so instead of "0/0 passed"."""
    note = instructor_status(ex)
    if note:
        return "-", note, "dim" if note == INSTRUCTOR_GRADED else "failed"
    status = Status(ex.status).value
    return f"{fmt_points(ex.score)}/{fmt_points(ex.max_score)}", status, status


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
    if ev.kind == EvidenceKind.MISMATCH:
        return _mismatch_lines(data)
    if ev.kind == EvidenceKind.HEATMAPS:
        return _heatmap_lines(data)
    if ev.kind == EvidenceKind.TRACEBACK:
        return [str(data.get("title", "traceback")), *plain_text(data.get("text", "")).splitlines()]
    if ev.kind == EvidenceKind.NOTE:
        return [str(data.get("text", ""))]
    return []


def _test_block(t: TestResult, color: bool, width: int = WIDTH) -> list[str]:
    visible = seen(t) is Seen.ALL
    name = plain_text(t.name) if visible else WITHHELD
    outcome = f" [{t.outcome}]" if t.outcome in (Outcome.ERROR, Outcome.TIMEOUT) else ""
    points = INSTRUCTOR_GRADED if awaits_instructor(t) else f"{fmt_points(t.score)}/{fmt_points(t.max_score)}"
    head = wrap(f"x {name}  ({points}){outcome}", width, "  ", hang=INDENT)
    lines = [f"  {_paint('x', 'failed', color)}{head[0][3:]}", *head[1:]]
    if t.message:
        lines += _wrap(t.message, width=width)
    if visible:
        for ev in t.evidence:
            lines += _indent(plain_text(_evidence_lines(ev))).splitlines()
    return lines


def _exercise_block(ex: ExerciseResult, color: bool, width: int = WIDTH) -> list[str]:
    shown = [t for t in ex.tests if seen(t) is not Seen.COUNTED]
    failing = [t for t in shown if not t.passed]
    hidden = [t for t in ex.tests if seen(t) is Seen.COUNTED]
    hidden_failed = any(not t.passed for t in hidden)
    if (
        not failing
        and not hidden_failed
        and not (ex.message and Status(ex.status) is not Status.PASSED)
    ):
        return []
    title = plain_text(f"{ex.title or ex.id} ({ex.id})")
    lines = [_paint(line, "bold", color) for line in wrap(title, width)]
    if ex.message:
        lines += _wrap(ex.message, "  ", width)
    for t in failing:
        lines += _test_block(t, color, width)
    if hidden:
        passed = sum(t.passed for t in hidden)
        lines.append(f"  hidden tests: {passed}/{len(hidden)} passed")
    return lines


def _load_lines(result: SubmissionResult, color: bool, width: int = WIDTH) -> list[str]:
    load = result.load
    notes = [plain_text(n) for n in load.notices]
    if load.stdout_truncated:
        notes.append("your code's printed output was long; output truncated in the report.")
    lines = [line for n in notes for line in wrap(f"note: {n}", width, hang="      ")]
    for e in load.cell_errors:
        where = f"cell [{e['cell']}]" if e.get("cell") else str(e.get("where", "your code"))
        head = f"{where} raised {e.get('ename', 'an error')}"
        head = plain_text(f"{head}: {e.get('evalue', '')}".rstrip(": "))
        lines.append(_paint(head, "failed", color))
        lines += _indent(plain_text(e.get("traceback", ""))).splitlines()
    return lines


def format_check_table(result: SubmissionResult, color: bool, width: int | None = None) -> str:
    """The check verdict for a terminal: table of exercises, then what failed and why.
    The table fits `width` columns (default: the terminal's), messages at most WIDTH."""
    width = width or terminal_width()
    prose = min(width, WIDTH)
    lines: list[str] = []
    if not result.gradable:
        banner = ("GRADER FAILURE, NOT A ZERO: the grader itself failed on this submission;"
                  " the numbers below say nothing about your work.")
        lines += [_paint(line, "error", color) for line in wrap(banner, prose)]
    lines += _load_lines(result, color, prose)
    if lines:
        lines.append("")
    lines += _table(result, color, width)
    blocks = [b for b in (_exercise_block(ex, color, prose) for ex in result.exercises) if b]
    for block in blocks:
        lines += ["", *block]
    if not blocks and result.gradable:
        lines += ["", _paint("Every check shown here passed.", "passed", color)]
    return "\n".join(lines) + "\n"
