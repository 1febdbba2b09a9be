"""Manual grading: the instructor's overrides.yaml applied to stored results.

    students:
      alice:
        quiz.q3: {points: 1, comment: "right idea, other words"}     # a question
        causal_mask: {points: 12, comment: "fixed in office hours"}  # a whole exercise
        hidden/test_dropout.py::test_eval_is_deterministic: {points: 2, comment: "..."}

A key is an exercise id, a question id (`quiz.q3`, the test id `question:quiz.q3` also
works) or a test id from result.json. Points are capped at the item's maximum.

How an override is recorded, so that the original stays in result.json and applying the
same file twice gives the same result (every application starts from the originals):

- on a test or question: its score, passed and outcome change, its message becomes
  "overridden by the instructor: <comment>", a written answer's `needs_review` becomes
  false (a person has decided), and a `note` evidence holds the override and the
  original fields (`data["override"]`);
- on an exercise: a zero-point entry `override:<exercise id>` is added to its tests
  ("Instructor's grade for this exercise"), whose score is the difference between the
  instructor's points and the automatic ones; its note holds the override.

Both kinds keep the exercise's automatic score and status in their note. Nothing here
runs student code, or imports torch.

`grader report --overrides FILE` applies the file as the whole set (an override removed
from it is undone). `grader grade` keeps an overridden result while it is up to date; a
regraded submission starts fresh, so run `grader report --overrides` again after it.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grader import yamltext
from grader.errors import UsageError
from grader.results import (
    Evidence,
    EvidenceKind,
    ExerciseResult,
    Outcome,
    Status,
    SubmissionResult,
    TestResult,
    Visibility,
    exercise_status,
)

__all__ = ["Override", "OverridesError", "apply_overrides", "check_targets",
           "is_adjustment", "read_overrides", "strip_overrides"]

ADJUSTMENT_PREFIX = "override:"
ADJUSTMENT_NAME = "Instructor's grade for this exercise"
PREFIX = "overridden by the instructor"
EPS = 1e-9


class OverridesError(UsageError):
    """overrides.yaml is malformed, or names a student or item the results do not have."""


@dataclass(frozen=True)
class Override:
    student: str
    key: str
    """As written: an exercise id, a question id or a test id."""
    points: float
    comment: str = ""


# ------------------------------------------------------------------ reading


def read_overrides(path: Path) -> list[Override]:
    """Parse and check overrides.yaml; every error names the file and the key."""
    try:
        doc = yamltext.load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise OverridesError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise OverridesError(f"{path}: not valid YAML: {exc}") from None
    top = _mapping(path, "(top level)", {} if doc is None else doc)
    if set(top) - {"students"}:
        raise OverridesError(f"{path}: unknown top-level key(s) {sorted(set(top) - {'students'})}; "
                             "expected only `students`")
    students = _mapping(path, "students", top.get("students") or {})
    return [o for student, items in students.items()
            for o in _student_overrides(path, str(student), items)]


def _mapping(path: Path, where: str, value: Any) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise OverridesError(f"{path}: at `{where}`: expected a mapping, got "
                             f"{type(value).__name__} {value!r}")
    return value


def _student_overrides(path: Path, student: str, items: Any) -> list[Override]:
    found = []
    for key, spec in _mapping(path, f"students.{student}", items).items():
        where = f"students.{student}.{key}"
        spec = _mapping(path, where, spec)
        unknown = set(spec) - {"points", "comment"}
        if unknown:
            raise OverridesError(f"{path}: at `{where}`: unknown key(s) {sorted(unknown)}; "
                                 "expected points and comment")
        found.append(Override(student, str(key), _points(path, where, spec.get("points")),
                              str(spec.get("comment") or "")))
    return found


def _points(path: Path, where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise OverridesError(f"{path}: at `{where}.points`: expected a number, got {value!r}")
    if value < 0:
        raise OverridesError(f"{path}: at `{where}.points`: points cannot be negative ({value})")
    return float(value)


# ------------------------------------------------------------------ checking


def check_targets(results: Sequence[SubmissionResult], overrides: Iterable[Override],
                  source: Path) -> None:
    """Every student and key in the file must exist in the results (a typo is an error,
    never a silently ignored grade)."""
    by_student = {r.student: r for r in results}
    for o in overrides:
        result = by_student.get(o.student)
        if result is None:
            raise OverridesError(f"{source}: students.{o.student}: no result for {o.student!r} "
                                 "in the reports folder (a typo, or not graded yet?)")
        if not result.gradable:
            raise OverridesError(f"{source}: students.{o.student}: the grader failed on this "
                                 "submission; regrade it before overriding its scores")
        if _find(result, o.key) is None:
            raise OverridesError(f"{source}: students.{o.student}.{o.key}: {o.key!r} is not an "
                                 f"exercise, question or test id of {o.student}'s result "
                                 f"(exercises: {', '.join(ex.id for ex in result.exercises)})")


def _find(result: SubmissionResult, key: str) -> tuple[str, str | None] | None:
    """(exercise id, test id or None for the whole exercise) that `key` names."""
    for ex in result.exercises:
        if ex.id == key:
            return ex.id, None
    for ex in result.exercises:
        for t in ex.tests:
            if t.test_id and t.test_id in (key, f"question:{key}") and not is_adjustment(t):
                return ex.id, t.test_id
    return None


# ------------------------------------------------------------------ applying


def apply_overrides(result: SubmissionResult, overrides: Iterable[Override]) -> SubmissionResult:
    """`result` as graded (earlier overrides undone), with these overrides applied."""
    base = strip_overrides(result)
    mine = [o for o in overrides if o.student == result.student]
    if not mine:
        return base
    per_exercise: dict[str, dict[str | None, Override]] = defaultdict(dict)
    for o in mine:
        found = _find(base, o.key)
        if found is None:
            raise OverridesError(f"{result.student}: {o.key!r} is not in the result")
        per_exercise[found[0]][found[1]] = o
    exercises = tuple(_apply_exercise(ex, per_exercise[ex.id]) if ex.id in per_exercise else ex
                      for ex in base.exercises)
    return _with_exercises(base, exercises)


def _apply_exercise(ex: ExerciseResult, items: Mapping[str | None, Override]) -> ExerciseResult:
    automatic = {"score": float(ex.score), "status": Status(ex.status).value}
    tests = [_override_test(t, items[t.test_id], automatic) if t.test_id in items else t
             for t in ex.tests]
    score = round(sum(t.score for t in tests) + ex.score - sum(t.score for t in ex.tests), 6)
    whole = items.get(None)
    if whole is not None:
        target = float(min(whole.points, ex.max_score))
        tests.append(_adjustment(ex, whole, target, round(target - score, 6), automatic))
        score = target
    score = round(score, 3)
    return dataclasses.replace(ex, score=float(score), tests=tuple(tests),
                               status=exercise_status(score, ex.max_score, tests))


def _override_test(t: TestResult, o: Override, automatic: Mapping[str, Any]) -> TestResult:
    points = float(min(o.points, t.max_score))
    passed = points >= t.max_score - EPS
    outcome = Outcome.PASSED if passed else (Outcome.FAILED if t.outcome == Outcome.PASSED else t.outcome)
    original = {"score": float(t.score), "passed": t.passed, "outcome": str(t.outcome),
                "message": t.message}
    if t.needs_review is not None:  # a person has now decided: no longer waiting for review
        original["needs_review"] = t.needs_review
    record = {"key": o.key, "points": float(o.points), "applied": points, "comment": o.comment,
              "original": original, "exercise": dict(automatic)}
    was = f"automatic score {_pts(t.score)}/{_pts(t.max_score)}"
    text = f"{was}: {t.message}" if t.message else was
    return dataclasses.replace(
        t, score=round(points, 6), passed=passed, outcome=outcome, message=_message(o),
        needs_review=False if t.needs_review is not None else None,
        evidence=t.evidence + (Evidence(EvidenceKind.NOTE, {"text": text, "override": record}),))


def _adjustment(ex: ExerciseResult, o: Override, target: float, delta: float,
                automatic: Mapping[str, Any]) -> TestResult:
    record = {"key": o.key, "points": float(o.points), "applied": target, "comment": o.comment,
              "exercise": dict(automatic)}
    text = (f"exercise score set to {_pts(target)} of {_pts(ex.max_score)} by the instructor "
            f"(automatic score {_pts(float(automatic['score']))})")
    return TestResult(name=ADJUSTMENT_NAME, score=delta, max_score=0.0, passed=True,
                      message=_message(o), outcome=Outcome.PASSED, visibility=Visibility.VISIBLE,
                      test_id=f"{ADJUSTMENT_PREFIX}{ex.id}",
                      evidence=(Evidence(EvidenceKind.NOTE, {"text": text, "override": record}),))


def _message(o: Override) -> str:
    return f"{PREFIX}: {o.comment}" if o.comment else PREFIX


def _pts(x: float) -> str:
    return f"{round(float(x), 2):g}"


# ------------------------------------------------------------------ undoing


def is_adjustment(test: TestResult) -> bool:
    """The zero-point entry an exercise-level override adds (not a real test)."""
    return test.test_id.startswith(ADJUSTMENT_PREFIX)


def _record(test: TestResult) -> dict[str, Any] | None:
    for ev in test.evidence:
        record = ev.data.get("override") if ev.kind == EvidenceKind.NOTE and isinstance(ev.data, dict) else None
        if isinstance(record, dict):
            return record
    return None


def strip_overrides(result: SubmissionResult) -> SubmissionResult:
    """`result` as the grader wrote it: every recorded override undone."""
    if not any(_record(t) for ex in result.exercises for t in ex.tests):
        return result
    return _with_exercises(result, tuple(_strip_exercise(ex) for ex in result.exercises))


def _strip_exercise(ex: ExerciseResult) -> ExerciseResult:
    records = [r for t in ex.tests if (r := _record(t))]
    if not records:
        return ex
    tests = tuple(_restore_test(t) for t in ex.tests if not is_adjustment(t))
    automatic = records[0]["exercise"]
    return dataclasses.replace(ex, tests=tests, score=float(automatic["score"]),
                               status=Status(automatic["status"]))


def _restore_test(t: TestResult) -> TestResult:
    record = _record(t)
    if record is None:
        return t
    original = record["original"]
    evidence = tuple(ev for ev in t.evidence if not (ev.kind == EvidenceKind.NOTE and "override" in ev.data))
    return dataclasses.replace(t, score=float(original["score"]), passed=bool(original["passed"]),
                               outcome=Outcome.known(str(original["outcome"])), message=str(original["message"]),
                               needs_review=original.get("needs_review", t.needs_review),
                               evidence=evidence)


def _with_exercises(result: SubmissionResult,
                    exercises: tuple[ExerciseResult, ...]) -> SubmissionResult:
    return dataclasses.replace(result, exercises=exercises,
                               score=round(sum(ex.score for ex in exercises), 3))


