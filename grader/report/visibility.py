"""What a student may see of each test, for every writer (the report's rules).

- visible: name, message, evidence;
- message_only: the message and nothing else (not even the name);
- hidden (or a visibility we do not know: never leak): only counted, per exercise.

The zero-point entry of an exercise-level override (`overrides.is_adjustment`) is not a
test: writers that list tests leave it out; its points are in the exercise's score.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from grader.report.overrides import is_adjustment
from grader.results import ExerciseResult, SubmissionResult, TestResult, Visibility

__all__ = ["WITHHELD", "Seen", "Shown", "adjustments", "hidden_counts", "seen", "shown"]

WITHHELD = "a check whose details are withheld"


class Seen(enum.Enum):
    """How much of one test a student is shown."""

    ALL = "all"  # name, message, evidence, figures
    MESSAGE = "message"  # the message only, under WITHHELD
    COUNTED = "counted"  # only counted in its exercise


def seen(t: TestResult) -> Seen:
    """The one visibility rule every writer follows. A visibility we do not know (a
    hand-edited result.json) is hidden: never leak."""
    if t.visibility == Visibility.VISIBLE:
        return Seen.ALL
    if t.visibility == Visibility.MESSAGE_ONLY:
        return Seen.MESSAGE
    return Seen.COUNTED


@dataclass(frozen=True)
class Shown:
    visible: tuple[TestResult, ...]
    message_only: tuple[TestResult, ...]
    hidden: tuple[TestResult, ...]

    @property
    def hidden_passed(self) -> int:
        return sum(t.passed for t in self.hidden)


def shown(ex: ExerciseResult) -> Shown:
    tests = [t for t in ex.tests if not is_adjustment(t)]
    return Shown(
        visible=tuple(t for t in tests if seen(t) is Seen.ALL),
        message_only=tuple(t for t in tests if seen(t) is Seen.MESSAGE),
        hidden=tuple(t for t in tests if seen(t) is Seen.COUNTED),
    )


def hidden_counts(result: SubmissionResult) -> tuple[int, int]:
    """(passed, total) hidden tests over the whole submission."""
    views = [shown(ex) for ex in result.exercises]
    return sum(v.hidden_passed for v in views), sum(len(v.hidden) for v in views)


def adjustments(ex: ExerciseResult) -> tuple[TestResult, ...]:
    """The exercise-level override entries (visible: the instructor wrote them)."""
    return tuple(t for t in ex.tests if is_adjustment(t))
