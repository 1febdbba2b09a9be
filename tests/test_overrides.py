"""Manual grading: overrides.yaml applied by `grader report`, without running student code."""

from __future__ import annotations

import csv
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from result_samples import buggy, full_marks, grader_failure, unloadable

from grader.report.files import (
    write_grades_csv,
    write_index_html,
    write_report_html,
    write_result_json,
)
from grader.report.html import render_report
from grader.report.overrides import (
    Override,
    OverridesError,
    apply_overrides,
    check_targets,
    read_overrides,
    strip_overrides,
)
from grader.results import (
    ExerciseResult,
    Status,
    SubmissionResult,
    from_json_dict,
    to_json_dict,
)
from grader.results import TestResult as Checked  # a name pytest does not collect


def _with_manual_question(result: SubmissionResult) -> SubmissionResult:
    """The quiz with a manual question, scored 0 until the instructor scores it."""
    manual = Checked("11. Explain attention to a friend.", 0.0, 2.0, False,
                     "your own words; the instructor scores this one", test_id="question:quiz.q11")
    exercises = tuple(
        dataclasses.replace(ex, tests=ex.tests + (manual,), max_score=ex.max_score + 2,
                            status=Status.PARTIAL) if ex.id == "quiz" else ex
        for ex in result.exercises)
    return dataclasses.replace(result, exercises=exercises, max_score=result.max_score + 2)


def _quiz(result: SubmissionResult) -> ExerciseResult:
    return result.exercise("quiz")


def test_a_question_override_sets_its_score_and_keeps_the_original():
    before = _with_manual_question(full_marks())
    after = apply_overrides(before, [Override("alice", "quiz.q11", 1.5, "clear, one gap")])
    q = _quiz(after).tests[-1]
    assert (q.score, q.passed, q.outcome) == (1.5, False, "failed")
    assert q.message == "overridden by the instructor: clear, one gap"
    record = q.evidence[-1].data["override"]
    assert record["original"]["score"] == 0.0 and record["comment"] == "clear, one gap"
    assert _quiz(after).score == 11.5 and _quiz(after).status is Status.PARTIAL
    assert after.score == before.score + 1.5
    html = render_report(after)
    assert "overridden by the instructor: clear, one gap" in html and "automatic score 0/2" in html


def test_an_exercise_override_sets_the_exercise_score_capped_at_its_maximum():
    before = buggy()
    after = apply_overrides(before, [Override("bob", "padding_mask", 99, "fixed in office hours")])
    ex = after.exercise("padding_mask")
    assert ex.score == 15 and ex.status is Status.PASSED
    entry = ex.tests[-1]
    assert entry.test_id == "override:padding_mask" and entry.max_score == 0 and entry.score == 15
    assert entry.message == "overridden by the instructor: fixed in office hours"
    assert after.score == before.score + 15
    lower = apply_overrides(before, [Override("bob", "causal_mask", 4, "")]).exercise("causal_mask")
    assert lower.score == 4 and lower.tests[-1].score == -6 and lower.status is Status.PARTIAL


def test_a_test_id_and_the_question_prefix_work_as_keys():
    result = buggy()
    by_test = apply_overrides(result, [Override("bob", "test_quiz.py::test_0", 0, "copied")])
    assert _quiz(by_test).score == 5 and _quiz(by_test).status is Status.PARTIAL
    manual = _with_manual_question(full_marks())
    by_prefix = apply_overrides(manual, [Override("alice", "question:quiz.q11", 2, "good")])
    assert _quiz(by_prefix).status is Status.PASSED


def test_an_exercise_that_never_ran_can_be_graded_by_hand():
    after = apply_overrides(unloadable(), [Override("dave", "attention_core", 12, "ran it by hand")])
    ex = after.exercise("attention_core")
    assert ex.score == 12 and ex.max_score == 20 and ex.status is Status.PARTIAL and after.score == 12


OVERRIDES = [Override("bob", "test_quiz.py::test_0", 0, "x"), Override("bob", "test_quiz.py::test_1", 2, "y"),
             Override("bob", "quiz", 7, "whole quiz"), Override("bob", "padding_mask", 3, "partial")]


def test_applying_twice_is_applying_once_and_stripping_restores_the_original():
    original = buggy()
    once = apply_overrides(original, OVERRIDES)
    again = apply_overrides(from_json_dict(json.loads(json.dumps(to_json_dict(once)))), OVERRIDES)
    assert again == once
    assert strip_overrides(once) == dataclasses.replace(original, score=round(original.score, 3))
    fewer = apply_overrides(once, OVERRIDES[3:])  # the file is the whole set: the rest is undone
    assert fewer.exercise("quiz") == original.exercise("quiz") and fewer.exercise("padding_mask").score == 3


def test_unknown_students_and_ids_are_named(tmp_path):
    results = [buggy(), grader_failure()]
    source = tmp_path / "overrides.yaml"
    with pytest.raises(OverridesError, match=r"students\.zed: no result for 'zed'"):
        check_targets(results, [Override("zed", "quiz", 1)], source)
    with pytest.raises(OverridesError, match=r"students\.bob\.quiz\.q99: 'quiz\.q99' is not an exercise"):
        check_targets(results, [Override("bob", "quiz.q99", 1)], source)
    with pytest.raises(OverridesError, match="the grader failed on this submission"):
        check_targets(results, [Override("erin", "quiz", 1)], source)


@pytest.mark.parametrize("text, message", [
    ("students: [alice]", "at `students`: expected a mapping"),
    ("students:\n  alice:\n    quiz: {points: ten}", r"students\.alice\.quiz\.points`: expected a number"),
    ("students:\n  alice:\n    quiz: {points: -1}", "cannot be negative"),
    ("students:\n  alice:\n    quiz: {points: 1, note: x}", r"unknown key\(s\) \['note'\]"),
    ("grades: {}", r"unknown top-level key\(s\) \['grades'\]"),
    ("students: {alice: {quiz: [1]}", "not valid YAML"),
])
def test_malformed_overrides_say_where(tmp_path, text, message):
    path = tmp_path / "overrides.yaml"
    path.write_text(text)
    with pytest.raises(OverridesError, match=message):
        read_overrides(path)


def test_overrides_yaml_is_read_with_ids_as_text(tmp_path):
    path = tmp_path / "overrides.yaml"
    path.write_text("students:\n  12345:\n    quiz.q3: {points: 1, comment: fine}\n    quiz: {points: 8}\n")
    assert read_overrides(path) == [Override("12345", "quiz.q3", 1.0, "fine"),
                                    Override("12345", "quiz", 8.0, "")]


# ------------------------------------------------------------------ grader report


RESTRICTED = """
import os, subprocess, sys, time
import grader.cli, grader.sandbox.host, grader.batch.workers

def refuse(*args, **kwargs):
    raise RuntimeError("grader report started a process")

grader.sandbox.host.Sandbox.start = refuse
grader.batch.workers.Worker.__init__ = refuse
subprocess.Popen.__init__ = refuse
os.fork = refuse
start = time.process_time()
try:
    grader.cli.main(sys.argv[1:], prog_name="grader")
finally:
    print(f"cpu_s={time.process_time() - start:.3f}", file=sys.stderr)
"""


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    """`grader report` where starting any process (sandbox, worker, fork) raises."""
    return subprocess.run([sys.executable, "-c", RESTRICTED, "report", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def _reports(tmp_path: Path) -> Path:
    out = tmp_path / "reports"
    results = [_with_manual_question(full_marks()), buggy(), unloadable()]
    for r in results:
        write_result_json(r, out / r.student / "result.json")
        write_report_html(r, out / r.student / "report.html")
    write_grades_csv(results, out / "grades.csv", [ex.id for ex in results[0].exercises])
    write_index_html(results, out / "index.html")
    return out


def test_grader_report_applies_overrides_without_running_student_code(tmp_path):
    out = _reports(tmp_path)
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(
        "students:\n"
        "  alice:\n    quiz.q11: {points: 2, comment: \"a clear explanation\"}\n"
        "  bob:\n    padding_mask: {points: 9, comment: \"-inf fill was right, mask inverted\"}\n")
    first = _report("--out", str(out), "--overrides", str(overrides))
    assert first.returncode == 0, first.stderr
    assert float(first.stderr.rsplit("cpu_s=", 1)[1]) < 1.0, first.stderr
    assert "bob: 68 -> 77 / 100" in first.stdout and "no student code was run" in first.stdout
    alice = json.loads((out / "alice" / "result.json").read_text())
    assert alice["score"] == 102 and alice["exercises"][-1]["status"] == "passed"
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert rows["bob"]["total"] == "77" and rows["bob"]["padding_mask"] == "9"
    html = (out / "bob" / "report.html").read_text()
    assert "overridden by the instructor: -inf fill was right, mask inverted" in html
    snapshot = {p: p.read_bytes() for p in out.rglob("result.json")}
    second = _report("--out", str(out), "--overrides", str(overrides))
    assert second.returncode == 0 and {p: p.read_bytes() for p in snapshot} == snapshot


def test_grader_report_names_an_unknown_id_and_changes_nothing(tmp_path):
    out = _reports(tmp_path)
    before = (out / "grades.csv").read_bytes()
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("students:\n  bob:\n    quizz: {points: 1}\n")
    done = _report("--out", str(out), "--overrides", str(overrides))
    assert done.returncode == 64 and "students.bob.quizz: 'quizz' is not an exercise" in done.stderr
    assert (out / "grades.csv").read_bytes() == before
    empty = _report("--out", str(tmp_path / "nothing"))
    assert empty.returncode == 64 and "run `grader grade` first" in empty.stderr
