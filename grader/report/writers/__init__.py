"""Output formats as plug-ins: each is a `Writer`, chosen by name.

    reports      always: result.json + report.html per student, grades.csv, index.html
    github       GitHub Actions: a Markdown step summary and `::error` annotations
    gradescope   Gradescope's results.json, per student (and where Gradescope reads it)
    jsonl        one JSON line per student on stdout, as each is graded
    junit        JUnit XML (`--junit FILE`, or `--format junit` for OUT/junit.xml)

A writer is told about each result as soon as it is graded (`student`) and about the
whole class at the end (`finish`); both return the files they wrote. Everything a
writer needs from the outside (the environment, the working directory, the output
streams, where each submission's files are) comes in a `Context` built by the CLI, so
no writer reads `os.environ` or prints on its own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from grader.errors import GraderError, UsageError
from grader.results import SubmissionResult

if TYPE_CHECKING:  # discover imports torch (through assignment); writers need only its fields
    from grader.intake.discover import Submission

__all__ = ["Context", "Writer", "Writers", "create", "names", "select"]


@dataclass(frozen=True)
class Context:
    """What writers may know about the run, passed in by the CLI."""

    out: Path
    """The reports folder (`--out`)."""
    exercise_ids: tuple[str, ...]
    """The assignment's exercise ids, in order (grades.csv columns)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The process environment (GITHUB_STEP_SUMMARY, GITHUB_WORKSPACE, ...)."""
    cwd: Path = Path(".")
    submissions: Mapping[str, Submission] = field(default_factory=dict)
    """Student id -> where their files are (empty for `grader report`)."""
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)

    def note(self, text: str) -> None:
        print(text, file=self.stderr)


class Writer:
    """One output format. Subclasses override what they need; the defaults do nothing."""

    name: ClassVar[str] = ""
    stdout: ClassVar[str] = "unused"
    """unused | shared (prints lines among others) | exclusive (stdout is its alone)."""

    def student(self, result: SubmissionResult, ctx: Context) -> list[Path]:
        return []

    def finish(self, results: Sequence[SubmissionResult], ctx: Context) -> list[Path]:
        return []


def _factories() -> dict[str, Callable[..., Writer]]:
    from grader.report.writers.github import GitHubWriter
    from grader.report.writers.gradescope import GradescopeWriter
    from grader.report.writers.jsonl import JsonLinesWriter
    from grader.report.writers.junit import JUnitWriter

    return {w.name: w for w in (GitHubWriter, GradescopeWriter, JsonLinesWriter, JUnitWriter)}


def names() -> list[str]:
    """The formats `--format` accepts."""
    return sorted(_factories())


def create(name: str, **options: Any) -> Writer:
    factory = _factories().get(name)
    if factory is None:
        raise UsageError(f"unknown output format {name!r}: choose from {', '.join(names())}")
    return factory(**options)


class Writers(Writer):
    """Several writers as one: each hears every event; a failing one does not stop the
    others, and the first error is raised once all have run."""

    name = "all"

    def __init__(self, writers: Sequence[Writer]) -> None:
        self.writers = list(writers)

    @property
    def stdout_is_taken(self) -> bool:
        """True when nothing but the writers' own lines may go to stdout."""
        return any(w.stdout == "exclusive" for w in self.writers)

    def student(self, result: SubmissionResult, ctx: Context) -> list[Path]:
        return self._each(lambda w: w.student(result, ctx))

    def finish(self, results: Sequence[SubmissionResult], ctx: Context) -> list[Path]:
        return self._each(lambda w: w.finish(results, ctx))

    def _each(self, call: Callable[[Writer], list[Path]]) -> list[Path]:
        written: list[Path] = []
        errors: list[GraderError] = []
        for w in self.writers:
            try:
                written += call(w)
            except GraderError as exc:
                errors.append(exc)
            except OSError as exc:
                errors.append(UsageError(f"{w.name}: cannot write {exc.filename}: {exc.strerror}"))
        if errors:
            raise errors[0]
        return written


def select(formats: Sequence[str], junit: Path | None = None) -> Writers:
    """The writers for `--format` (repeatable) and `--junit FILE`."""
    chosen = list(dict.fromkeys(formats))
    if junit is not None and "junit" in chosen:
        chosen.remove("junit")
    writers = [create(n) for n in chosen]
    if junit is not None:
        writers.append(create("junit", path=junit))
    _check_stdout(writers)
    return Writers(writers)


def _check_stdout(writers: Sequence[Writer]) -> None:
    exclusive = [w.name for w in writers if w.stdout == "exclusive"]
    printing = [w.name for w in writers if w.stdout != "unused"]
    if exclusive and len(printing) > 1:
        others = ", ".join(n for n in printing if n != exclusive[0])
        raise UsageError(f"--format {exclusive[0]} keeps stdout for itself; it cannot be "
                         f"combined with --format {others}, which prints there too")
