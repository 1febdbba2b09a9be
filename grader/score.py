"""Scoring: test outcomes and answered questions -> exercise and submission results."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from grader.assignment import Assignment, Exercise
from grader.results import ExerciseResult, Outcome, TestOutcome, TestResult, Visibility, exercise_status


def exercise_results(assignment: Assignment, outcomes: Sequence[TestOutcome],
                     question_results: Sequence[TestResult], public: bool,
                     load_failure: str = "") -> tuple[ExerciseResult, ...]:
    by_file: dict[str, list[TestOutcome]] = defaultdict(list)
    for o in outcomes:
        by_file[str(o.file)].append(o)
    exercise_of = {f"question:{q.id}": q.exercise for q in assignment.questions}
    by_exercise: dict[str, list[TestResult]] = defaultdict(list)
    for q in question_results:
        by_exercise[exercise_of.get(q.test_id, "")].append(q)
    results = []
    for ex in assignment.exercises:
        test_file = ex.test_file(public)
        tests = _scored_tests(ex, by_file.get(str(test_file), [])) if test_file else []
        results.append(_exercise(ex, tests + by_exercise[ex.id], load_failure if tests else ""))
    return tuple(results)


def _scored_tests(ex: Exercise, outcomes: list[TestOutcome]) -> list[TestResult]:
    instances: dict[str, list[TestOutcome]] = defaultdict(list)
    for o in outcomes:
        instances[o.function].append(o)
    weights = _function_points(ex, list(instances))
    results = []
    for function, runs in instances.items():
        each = weights[function] / len(runs)
        spec = ex.tests.get(function)
        visibility = Visibility.known((spec.visibility if spec and spec.visibility else None)
                                      or ex.visibility)
        for o in runs:
            passed = o.outcome == Outcome.PASSED
            results.append(TestResult(
                name=o.name, score=round(each if passed else 0.0, 6), max_score=round(each, 6),
                passed=passed, message=o.message, outcome=o.outcome, visibility=visibility,
                test_id=o.nodeid, evidence=o.evidence, duration_s=o.duration_s,
                figures=o.figures))
    return results


def _function_points(ex: Exercise, functions: list[str]) -> dict[str, float]:
    fixed = {f: float(points) for f in functions
             if f in ex.tests and (points := ex.tests[f].points) is not None}
    rest = [f for f in functions if f not in fixed]
    share = max(ex.points - sum(fixed.values()), 0.0) / len(rest) if rest else 0.0
    return {**fixed, **{f: share for f in rest}}


def _exercise(ex: Exercise, tests: list[TestResult], message: str) -> ExerciseResult:
    score = round(sum(t.score for t in tests), 3)
    max_score = round(sum(t.max_score for t in tests), 3)
    return ExerciseResult(id=ex.id, title=ex.title, score=score, max_score=max_score,
                          status=exercise_status(score, max_score, tests),
                          tests=tuple(tests), message=message)


def totals(exercises: Sequence[ExerciseResult]) -> tuple[float, float]:
    return (round(sum(e.score for e in exercises), 3), round(sum(e.max_score for e in exercises), 3))
