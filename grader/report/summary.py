"""The class table `grader grade` prints last, fitted to the terminal; a word is never cut.

The first layout whose lines fit the width is printed:

1. a column per exercise, headed by the exercise's id;
2. the same, headed by short titles (the assignment's `short`, or whole words of the
   id), with a legend under the table naming each exercise;
3. one block per student: name and total on a line, then a line per exercise with its
   status in words (ids as labels where they fit, else the short titles and the legend).

In the table a cell is the points, as `fmt_points` writes them, followed by a mark for
the exercise's status (explained under the table); the "out of" row holds the maxima.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from grader.assignment import Assignment, Exercise
from grader.report.formatting import fmt_points, plain_text
from grader.report.layout import terminal_width, widest, wrap
from grader.results import ExerciseResult, Status, SubmissionResult

__all__ = ["MARKS", "NOT_GRADED", "short_titles", "summary"]

MARKS = {
    Status.PASSED: "", Status.PARTIAL: "~", Status.FAILED: "x", Status.ERROR: "!",
    Status.TIMEOUT: "T",
}  # fmt: skip
"""A table cell's status mark: full marks need none."""
NOT_GRADED = "-"
"""A cell of a submission the grader itself failed on (not a zero), or a missing result."""
GAP = "  "
INDENT = "  "

Labels = Mapping[str, str]
"""Exercise id -> what the table or block shows for it."""


def summary(results: Sequence[SubmissionResult], assignment: Assignment, out: Path,
            width: int | None = None) -> str:
    """The class's scores, a legend and where the reports are, in `width` columns (by
    default the terminal's)."""
    width = width or terminal_width()
    exercises = assignment.exercises
    ids = {ex.id: ex.id for ex in exercises}
    shorts = short_titles(exercises)
    layouts: list[Callable[[], list[str]]] = [
        lambda: [*_table(results, assignment, ids), "", *_marks_legend(results, width)],
        lambda: [*_table(results, assignment, shorts), "", *_titles_legend(exercises, shorts, width),
                 *_marks_legend(results, width)],
        lambda: _blocks(results, exercises, ids, width),
        lambda: [*_blocks(results, exercises, shorts, width), *_titles_legend(exercises, shorts, width)],
    ]
    tried = (make() for make in layouts)
    lines = next((ls for ls in tried if widest(ls) <= width), None) or layouts[-1]()
    footer = f"{len(results)} submission(s); reports in {out}/ (index.html, grades.csv)"
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join([*lines, "", *wrap(footer, width)])


def short_titles(exercises: Sequence[Exercise]) -> dict[str, str]:
    """Each exercise's short title: the declared `short`, else the first word of its id,
    else the id's initials, else the id; always whole words, never two alike."""
    taken = {ex.short for ex in exercises if ex.short}
    derived = [ex for ex in exercises if not ex.short]
    seen = Counter(c for ex in derived for c in set(_candidates(ex.id)))
    shorts: dict[str, str] = {}
    for ex in exercises:
        if ex.short:
            shorts[ex.id] = ex.short
            continue
        unique = (c for c in _candidates(ex.id) if seen[c] == 1 and c not in taken)
        shorts[ex.id] = next(unique, ex.id)
    return shorts


def _candidates(exercise_id: str) -> list[str]:
    words = [w for w in exercise_id.split("_") if w]
    if len(words) < 2:
        return [exercise_id]
    return [words[0], "".join(w[0] for w in words), exercise_id]


def _by_id(result: SubmissionResult) -> dict[str, ExerciseResult]:
    return {ex.id: ex for ex in result.exercises}


def _cell(points: str, mark: str = "") -> str:
    """Points and a one-character mark slot, so that the digits of a column line up."""
    return points + (mark or " ")


def _row(result: SubmissionResult, exercises: Sequence[Exercise]) -> list[str]:
    if not result.gradable:
        return [NOT_GRADED, *(_cell(NOT_GRADED) for _ in exercises)]
    done = _by_id(result)
    cells = [fmt_points(result.score)]
    for ex in exercises:
        er = done.get(ex.id)
        cells.append(_cell(NOT_GRADED) if er is None
                     else _cell(fmt_points(er.score), MARKS[Status(er.status)]))
    return cells


def _table(results: Sequence[SubmissionResult], assignment: Assignment, heads: Labels) -> list[str]:
    """Header, the "out of" row, a rule, a row per student: each column as wide as its
    widest cell, the student's name on the left and the numbers right-aligned."""
    exercises = assignment.exercises
    maxima = [_cell(fmt_points(ex.max_score)) for ex in exercises]
    rows = [["student", "total", *(heads[ex.id] for ex in exercises)],
            ["out of", fmt_points(assignment.max_score), *maxima]]
    rows += [[plain_text(r.student), *_row(r, exercises)] for r in results]
    widths = [widest(column) for column in zip(*rows)]
    lines = [
        GAP.join(cell.ljust(w) if i == 0 else cell.rjust(w)
                 for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
        for row in rows
    ]
    lines.insert(2, "-" * widest(lines))
    return lines


def _marks_legend(results: Sequence[SubmissionResult], width: int) -> list[str]:
    why = {Status.ERROR: " (the code could not run)"}
    marks = ", ".join(f"{mark} {status.value}{why.get(status, '')}"
                      for status, mark in MARKS.items() if mark)
    lines = wrap(f"marks: {marks}; no mark: passed", width, hang=" " * len("marks: "))
    failed = [plain_text(r.student) for r in results if not r.gradable]
    if failed:
        lines += wrap(f"{NOT_GRADED} not graded, the grader itself failed (not a zero): "
                      + ", ".join(failed), width)
    return lines


def _titles_legend(exercises: Sequence[Exercise], shorts: Labels, width: int) -> list[str]:
    """A line per exercise: its short title, then its id and title, wrapped under them."""
    w = widest(shorts.values())
    lines: list[str] = []
    for ex in exercises:
        title = plain_text(ex.title)
        named = ex.id if title in ("", ex.id) else f"{ex.id} ({title})"
        lines += wrap(f"{shorts[ex.id]:<{w}}{GAP}{named}", width, hang=" " * (w + len(GAP)))
    return lines


def _blocks(results: Sequence[SubmissionResult], exercises: Sequence[Exercise], labels: Labels,
            width: int) -> list[str]:
    """Per student: the name and total, then `label  points/max  status` per exercise."""
    lw = widest(labels[ex.id] for ex in exercises)
    scored = [_block_cells(r, exercises) if r.gradable else [] for r in results]
    sw = widest(points for cells in scored for points, _ in cells)
    lines: list[str] = []
    for r, cells in zip(results, scored):
        name = plain_text(r.student)
        if not r.gradable:
            lines += wrap(f"{name}{GAP}not graded: the grader itself failed on this submission "
                          "(not a zero)", width, hang=INDENT)
        else:
            lines += wrap(f"{name}{GAP}{fmt_points(r.score)}/{fmt_points(r.max_score)}", width, hang=INDENT)
            lines += [f"{INDENT}{labels[ex.id]:<{lw}}{GAP}{points:>{sw}}{GAP}{status}".rstrip()
                      for ex, (points, status) in zip(exercises, cells)]
        lines.append("")
    return lines


def _block_cells(result: SubmissionResult, exercises: Sequence[Exercise]) -> list[tuple[str, str]]:
    done = _by_id(result)
    cells: list[tuple[str, str]] = []
    for ex in exercises:
        er = done.get(ex.id)
        cells.append((NOT_GRADED, "no result") if er is None else
                     (f"{fmt_points(er.score)}/{fmt_points(er.max_score)}", Status(er.status).value))
    return cells
