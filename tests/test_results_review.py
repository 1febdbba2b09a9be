"""Written answers carry `needs_review` and a `Review` through result.json and back.

The contract: a test that scores a written answer carries `"needs_review": true | false`;
other tests do not carry the key at all.
"""

from __future__ import annotations

import json

from grader.results import (
    ExerciseResult,
    Review,
    Status,
    SubmissionResult,
    from_json_dict,
    needs_review_count,
    to_json_dict,
)
from grader.results import (
    TestResult as Outcome,
)


def _result() -> SubmissionResult:
    code = Outcome(name="future positions get zero weight", score=5.0, max_score=5.0, passed=True,
                      test_id="hidden/test_causal_mask.py::test_future")
    flagged = Outcome(
        name="1. How do Query, Key and Value differ?", score=0.67, max_score=1.0, passed=False,
        message="provisional: your instructor will review this answer.", outcome="failed",
        test_id="question:quiz.q1", needs_review=True,
        review=Review(found=("the Query ...", "the Value ..."), missed=("the Key ...",),
                      reasons=("a concept is stated next to a negation",)),
    )
    sure = Outcome(name="2. Why divide by sqrt(head_dim)?", score=1.0, max_score=1.0, passed=True,
                      test_id="question:quiz.q2", needs_review=False,
                      review=Review(found=("scale", "saturation"), missed=()))
    numeric = Outcome(name="7. How many times larger?", score=1.0, max_score=1.0, passed=True,
                         test_id="question:quiz.q7")
    return SubmissionResult(
        student="alice", assignment="attention", score=7.67, max_score=8.0,
        exercises=(
            ExerciseResult(id="causal_mask", score=5.0, max_score=5.0, status=Status.PASSED, tests=(code,)),
            ExerciseResult(id="quiz", score=2.67, max_score=3.0, status=Status.PARTIAL,
                           tests=(flagged, sure, numeric)),
        ),
    )


def test_review_round_trips_through_result_json() -> None:
    result = _result()
    doc = json.loads(json.dumps(to_json_dict(result)))
    back = from_json_dict(doc)
    assert back == result
    q1 = back.exercise("quiz").tests[0]
    assert q1.needs_review is True and isinstance(q1.review, Review)
    assert q1.review.missed == ("the Key ...",) and q1.review.reasons


def test_needs_review_is_written_only_for_written_answers() -> None:
    doc = json.loads(json.dumps(to_json_dict(_result())))
    code = doc["exercises"][0]["tests"][0]
    flagged, sure, numeric = doc["exercises"][1]["tests"]
    assert "needs_review" not in code and "review" not in code
    assert "needs_review" not in numeric and "review" not in numeric
    assert flagged["needs_review"] is True and sure["needs_review"] is False
    assert flagged["review"] == {"found": ["the Query ...", "the Value ..."], "missed": ["the Key ..."],
                                 "reasons": ["a concept is stated next to a negation"], "answer": ""}


def test_old_result_json_without_review_still_reads() -> None:
    doc = to_json_dict(_result())
    for test in doc["exercises"][1]["tests"]:
        test.pop("needs_review", None)
        test.pop("review", None)
    back = from_json_dict(doc)
    assert all(t.needs_review is None and t.review is None for t in back.exercise("quiz").tests)


def test_needs_review_count() -> None:
    result = _result()
    assert result.needs_review_count == 1 == needs_review_count(result)
