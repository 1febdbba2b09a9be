"""Scoring, in-process: test outcomes -> points per test and per exercise."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.assignment import Exercise
from grader.assignment import TestSpec as Spec
from grader.results import Outcome, Visibility
from grader.results import TestOutcome as Ran
from grader.score import _scored_tests

HIDDEN = Path("/assignment/hidden/test_ex.py")


def _outcome(function: str, outcome: Outcome = Outcome.PASSED, case: str = "") -> Ran:
    nodeid = f"test_ex.py::{function}{case}"
    return Ran(nodeid=nodeid, file=HIDDEN, function=function, name=function,
                       outcome=outcome, message="", evidence=(), duration_s=0.0)


def _exercise(tests: dict[str, Spec], points: float = 10.0) -> Exercise:
    return Exercise(id="ex", title="Ex", points=points, public=None, hidden=HIDDEN, tests=tests)


def _points(results) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in results:
        out[r.test_id] = r.max_score
    return out


def test_declared_points_are_kept_and_the_rest_share_what_is_left():
    ex = _exercise({"test_a": Spec(points=6)})
    results = _scored_tests(ex, [_outcome("test_a"), _outcome("test_b"), _outcome("test_c")])
    assert _points(results) == {"test_ex.py::test_a": 6.0, "test_ex.py::test_b": 2.0,
                                "test_ex.py::test_c": 2.0}
    assert sum(r.score for r in results) == pytest.approx(10.0)


def test_a_failed_test_loses_exactly_its_own_points():
    ex = _exercise({"test_a": Spec(points=7)})
    results = _scored_tests(ex, [_outcome("test_a", Outcome.FAILED), _outcome("test_b")])
    by_id = {r.test_id: r for r in results}
    assert by_id["test_ex.py::test_a"].score == 0.0
    assert by_id["test_ex.py::test_b"].score == pytest.approx(3.0)


def test_a_parametrized_function_splits_its_points_between_its_cases():
    ex = _exercise({"test_a": Spec(points=4)})
    runs = [_outcome("test_a", case="[1]"), _outcome("test_a", Outcome.FAILED, "[2]"),
            _outcome("test_b")]
    results = {r.test_id: r for r in _scored_tests(ex, runs)}
    assert results["test_ex.py::test_a[1]"].max_score == pytest.approx(2.0)
    assert results["test_ex.py::test_a[2]"].score == 0.0
    assert results["test_ex.py::test_b"].max_score == pytest.approx(6.0)


def test_per_test_visibility_overrides_the_exercises():
    ex = _exercise({"test_a": Spec(visibility="hidden")})
    results = {r.test_id: r for r in _scored_tests(ex, [_outcome("test_a"), _outcome("test_b")])}
    assert results["test_ex.py::test_a"].visibility == Visibility.HIDDEN
    assert results["test_ex.py::test_b"].visibility == Visibility.VISIBLE
