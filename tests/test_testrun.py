"""One test session grades many submissions: each one must be graded as if it were alone."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from result_samples import without_timing

from grader import assignment
from grader.batch.pipeline import Grading, grade_submission
from grader.config import RunConfig
from grader.errors import AssignmentError, InternalError
from grader.intake.discover import discover
from grader.sandbox.host import Isolation, Sandbox

ROOT = Path(__file__).resolve().parent
TINY = ROOT / "fixtures" / "tiny"
ADVERSARIAL = ROOT / "fixtures" / "adversarial"

# Fixtures of every scope, each counting how often it was built. A session that kept
# them between submissions would show the second submission the first one's count.
SCOPED_TESTS = '''
import pytest

BUILT = {"session": 0, "module": 0}


@pytest.fixture(scope="session")
def per_session():
    BUILT["session"] += 1
    yield BUILT["session"]


@pytest.fixture(scope="module")
def per_module():
    BUILT["module"] += 1
    return BUILT["module"]


def test_fixtures_are_fresh(student, per_session, per_module, feedback):
    """builds its fixtures for this submission"""
    feedback.note(f"session #{per_session}, module #{per_module}")
    assert student.add(1, 1) == 2, "add(1, 1) is not 2"
'''


@pytest.fixture(scope="module")
def box(tiny: assignment.Assignment) -> Iterator[Sandbox]:
    with Sandbox(Isolation.AUTO, tiny.limits) as sb:
        yield sb


def _sub(name: str, tiny: assignment.Assignment):  # type: ignore[no-untyped-def]
    return discover(ADVERSARIAL / name, tiny)[0]


def test_a_shared_session_grades_like_a_fresh_one(tiny, box) -> None:
    order = ["honest", "wrong", "exit_mid_call", "honest", "wrong"]
    with Grading(tiny, box, RunConfig()) as grading:
        shared = [without_timing(grading.grade(_sub(name, tiny))) for name in order]
    alone = {name: without_timing(grade_submission(_sub(name, tiny), tiny, box, RunConfig()))
             for name in set(order)}
    for name, doc in zip(order, shared):
        assert doc == alone[name], name
    assert shared[0]["score"] == shared[0]["max_score"] and shared[1]["score"] < shared[1]["max_score"]


def _scoped_assignment(tmp_path: Path, tiny: assignment.Assignment) -> assignment.Assignment:
    root = tmp_path / "scoped"
    shutil.copytree(TINY, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "hidden" / "test_add.py").write_text(SCOPED_TESTS)
    return assignment.load(root / "assignment.yaml")


def test_every_fixture_scope_is_rebuilt_for_each_submission(tmp_path, tiny, box) -> None:
    scoped = _scoped_assignment(tmp_path, tiny)
    with Grading(scoped, box, RunConfig()) as grading:
        results = [grading.grade(_sub(name, scoped)) for name in ("honest", "wrong", "honest")]
    notes = [next(e.data["text"] for ex in r.exercises for t in ex.tests for e in t.evidence
                  if e.kind == "note") for r in results]
    assert notes == ["session #1, module #1", "session #2, module #2", "session #3, module #3"]
    add = [next(ex for ex in r.exercises if ex.id == "add") for r in results]
    assert [ex.score == ex.max_score for ex in add] == [True, False, True]


def test_tests_that_do_not_collect_stop_before_any_submission(tmp_path, tiny, box) -> None:
    broken = _scoped_assignment(tmp_path, tiny)
    (broken.root / "hidden" / "test_add.py").write_text("def test_x(:\n    pass\n")
    broken = assignment.load(broken.root / "assignment.yaml")
    with pytest.raises(AssignmentError, match="could not be collected"):
        Grading(broken, box, RunConfig())


def test_a_closed_session_refuses_work(tiny, box) -> None:
    grading = Grading(tiny, box, RunConfig())
    grading.close()
    with pytest.raises(InternalError, match="closed"):
        grading.grade(_sub("honest", tiny))


def test_a_session_broken_by_an_error_of_ours_is_replaced(tiny, box, monkeypatch) -> None:
    """An exception that escapes pytest's own protocol leaves fixtures in an unknown
    state: that submission fails as the grader's error, and the next one gets a new session."""
    from grader.testing import session as testrun

    honest = _sub("honest", tiny)
    real_outcome = testrun.GraderPlugin._outcome
    calls = {"n": 0}

    def outcome_failing_once(self, *args):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("a bug of ours")
        return real_outcome(self, *args)

    monkeypatch.setattr(testrun.GraderPlugin, "_outcome", outcome_failing_once)
    with Grading(tiny, box, RunConfig()) as grading:
        first_session = grading.tests._thread
        with pytest.raises(RuntimeError, match="a bug of ours"):
            grading.grade(honest)
        again = grading.grade(honest)
        assert grading.tests._thread is not first_session
    assert without_timing(again) == without_timing(grade_submission(honest, tiny, box, RunConfig()))
    assert again.score == again.max_score


SUPPORTED_TESTS = '''
def test_add_through_support(student, reference, support):
    """adds two small integers, checked by the support module"""
    support.expect_sum(student.add(2, 3), reference.add(2, 3))
'''
SUPPORT = '''
from grader.testing import fail

LOADED_IN = __name__


def expect_sum(got, want):
    if got != want:
        fail(f"add(2, 3) returned {got}, expected {want}.")
'''


def _supported_assignment(tmp_path: Path, support: str | None) -> assignment.Assignment:
    root = tmp_path / "supported"
    shutil.copytree(TINY, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "hidden" / "test_add.py").write_text(SUPPORTED_TESTS)
    if support is not None:
        (root / "support.py").write_text(support)
        yaml_path = root / "assignment.yaml"
        yaml_path.write_text(yaml_path.read_text().replace("reference: reference.py\n",
                                                           "reference: reference.py\nsupport: support.py\n"))
    return assignment.load(root / "assignment.yaml")


def test_tests_receive_the_assignments_support_module(tmp_path, box) -> None:
    supported = _supported_assignment(tmp_path, SUPPORT)
    assert supported.support == supported.root / "support.py"
    with Grading(supported, box, RunConfig()) as grading:
        honest, wrong = (grading.grade(_sub(name, supported)) for name in ("honest", "wrong"))
    add = [next(ex for ex in r.exercises if ex.id == "add") for r in (honest, wrong)]
    assert add[0].score == add[0].max_score
    assert add[1].score < add[1].max_score
    assert any("returned" in t.message and "expected 5" in t.message for t in add[1].tests)


def test_the_support_module_is_imported_afresh_by_each_session(tmp_path) -> None:
    from grader.testing.session import TestRunner

    supported = _supported_assignment(tmp_path, SUPPORT)
    files = [supported.exercises[0].hidden]
    with TestRunner(files, None, "cpu", 0, supported.root, support=supported.support) as first:
        assert first._support is not None and first._support.LOADED_IN.startswith("grader_support_")
    supported.support.write_text(SUPPORT + "\nEDITED = True\n")
    with TestRunner(files, None, "cpu", 0, supported.root, support=supported.support) as second:
        assert second._support is not None and second._support.EDITED


def test_a_test_asking_for_an_undeclared_support_module_is_the_graders_error(tmp_path, box) -> None:
    unsupported = _supported_assignment(tmp_path, None)
    with Grading(unsupported, box, RunConfig()) as grading, \
            pytest.raises(AssignmentError, match="declares no support module"):
        grading.grade(_sub("honest", unsupported))


def test_a_support_module_that_fails_to_import_is_the_assignments_error(tmp_path, box) -> None:
    broken = _supported_assignment(tmp_path, "raise RuntimeError('broken support')\n")
    with pytest.raises(AssignmentError, match="support module .* fails to import: broken support"):
        Grading(broken, box, RunConfig())
