"""A class at once: resume what is up to date, grade the rest in parallel, write reports.

Each student's result.json and report.html are written (atomically) the moment that
student is graded, so a batch killed midway loses nothing already graded; started
again, it regrades only submissions whose content, assignment or grader changed.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from grader import __version__
from grader.assignment import Assignment
from grader.batch.workers import grade_all
from grader.config import RunConfig
from grader.errors import OutputError
from grader.intake.discover import Submission
from grader.report import summary as class_table
from grader.report.files import (
    write_grades_csv,
    write_index_html,
    write_report_html,
    write_result_json,
)
from grader.results import SubmissionResult

Executor = Callable[[Sequence[Submission]], Iterator[SubmissionResult]]
"""Grades submissions and yields their results as they finish: local worker processes
(`workers.grade_all`) or a Dask cluster (`dask.grade_all`)."""


def local_executor(assignment: Assignment, config: RunConfig, jobs: int) -> Executor:
    return lambda subs: grade_all(subs, assignment, config, jobs)


def dask_executor(assignment: Assignment, config: RunConfig, scheduler: str) -> Executor:
    from grader.batch import dask

    return lambda subs: dask.grade_all(subs, assignment, config, scheduler)


def run(subs: Sequence[Submission], assignment: Assignment, config: RunConfig,
        executor: Executor, out: Path, *, force: bool = False, progress: bool = True,
        on_result: Callable[[SubmissionResult], object] | None = None) -> list[SubmissionResult]:
    """`on_result` hears of each result once it is on disk (kept ones first): the
    output-format writers' hook (`grader.report.writers`)."""
    _make_folder(out)
    results: dict[str, SubmissionResult] = {}
    todo = []
    for sub in subs:
        previous = None if force else up_to_date(sub, assignment, config, out)
        if previous is not None:
            results[sub.id] = previous
            if on_result is not None:
                on_result(previous)
        else:
            todo.append(sub)
    bar = Progress(len(todo), len(subs) - len(todo), enabled=progress)
    for result in executor(todo) if todo else ():
        write_student(result, out)
        results[result.student] = result
        bar.step(result)
        if on_result is not None:
            on_result(result)
    bar.close()
    ordered = [results[s.id] for s in subs]
    write_grades_csv(ordered, out / "grades.csv", [ex.id for ex in assignment.exercises])
    write_index_html(ordered, out / "index.html")
    return ordered


def write_student(result: SubmissionResult, out: Path) -> None:
    folder = out / result.student
    _make_folder(folder)
    write_report_html(result, folder / "report.html")
    write_result_json(result, folder / "result.json")


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError.writing(folder, exc) from None


def up_to_date(sub: Submission, assignment: Assignment, config: RunConfig,
               out: Path) -> SubmissionResult | None:
    """The stored result if nothing that decides it changed since it was written."""
    path = out / sub.id / "result.json"
    try:
        previous = SubmissionResult.from_json_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    p = previous.provenance
    if p is None or not previous.gradable:
        return None
    same = (p.grader_version == __version__ and p.submission_digest == sub.digest()
            and p.assignment_digest == assignment.digest() and p.device == config.device
            and p.seed == config.seed)
    return previous if same else None


class Progress:
    """done / total, rate and ETA on one terminal line (stderr)."""

    def __init__(self, total: int, skipped: int, enabled: bool) -> None:
        self.total, self.done, self.skipped = total, 0, skipped
        self.enabled = enabled and total > 0
        self.started = time.monotonic()
        if enabled and skipped:
            print(f"{skipped} result(s) up to date, kept (use --force to regrade)", file=sys.stderr)

    def step(self, result: SubmissionResult) -> None:
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed else 0.0
        eta = (self.total - self.done) / rate if rate else 0.0
        width = 24
        filled = int(width * self.done / self.total)
        line = (f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"{rate:.1f}/s ETA {eta:.0f}s  {result.student[:24]:<24}")
        sys.stderr.write(line)
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def summary(results: Sequence[SubmissionResult], assignment: Assignment, out: Path,
            width: int | None = None) -> str:
    """The class table fitted to the terminal (`grader.report.summary`)."""
    return class_table.summary(results, assignment, out, width)
