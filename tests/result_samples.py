"""SubmissionResult objects built by hand, named by behaviour, for the writer tests.

full_marks, buggy (mismatch + heatmaps + hidden + message_only), notebook_error (a cell
raised), unloadable (nothing could be imported), evil (student text that tries to be
markup), grader_failure (gradable=False). `without_timing` makes two real results
comparable.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from grader.results import (
    Evidence,
    ExerciseResult,
    LoadReport,
    Provenance,
    Status,
    SubmissionResult,
    TestResult,
    to_json_dict,
)

EXERCISES = (
    ("shape_reading", "Reading shapes", 10.0),
    ("attention_core", "Scaled dot-product and multi-head attention", 20.0),
    ("padding_mask", "Padding mask", 15.0),
    ("causal_mask", "Causal mask", 15.0),
    ("dropout", "Dropout", 10.0),
    ("sdpa_rewrite", "Rewrite with F.scaled_dot_product_attention", 10.0),
    ("complexity", "The O(n^2) cost", 10.0),
    ("quiz", "Quiz", 10.0),
)
EXERCISE_IDS = tuple(e[0] for e in EXERCISES)
SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'


def without_timing(result: SubmissionResult) -> dict[str, Any]:
    """A result as JSON data without what differs between two gradings of the same
    submission: provenance (times, CPU, date) and each test's duration."""
    doc = to_json_dict(replace(result, provenance=None))
    for ex in doc["exercises"]:
        for t in ex["tests"]:
            t["duration_s"] = 0
    return doc


def provenance(seed: int = 0) -> Provenance:
    return Provenance(
        grader_version="0.1.0",
        assignment="attention",
        assignment_version="1.0.0",
        assignment_digest="sha256:" + "a1" * 32,
        submission_digest="sha256:" + "b2" * 32,
        torch_version="2.13.0+cpu",
        python_version="3.11.9",
        device="cpu",
        seed=seed,
        sandbox="bwrap",
        graded_at="2026-03-02T10:15:00+00:00",
        duration_s=2.41,
    )


def softmax_rows(scores: list[list[float]], allowed: list[list[bool]] | None) -> list[list[float]]:
    out = []
    for r, row in enumerate(scores):
        ok = allowed[r] if allowed else [True] * len(row)
        exps = [math.exp(v) if a else 0.0 for v, a in zip(row, ok)]
        total = sum(exps) or 1.0
        out.append([round(e / total, 4) for e in exps])
    return out


def _scores(n: int) -> list[list[float]]:
    return [[math.sin(1.7 * r + 0.9 * c) for c in range(n)] for r in range(n)]


def padding_heatmaps() -> Evidence:
    n, real = 6, 4
    masked = [[c >= real for c in range(n)] for _ in range(n)]
    allowed = [[not m for m in row] for row in masked]
    return Evidence(
        "heatmaps",
        {
            "title": "Attention weights, batch 0, head 0 (PAD keys are columns 4-5)",
            "x_label": "key",
            "y_label": "query",
            "panels": [
                {
                    "label": "your weights",
                    "matrix": softmax_rows(_scores(n), None),
                    "masked": masked,
                },
                {
                    "label": "reference",
                    "matrix": softmax_rows(_scores(n), allowed),
                    "masked": masked,
                },
            ],
        },
    )


def causal_heatmaps(n: int = 12) -> Evidence:
    masked = [[c > r for c in range(n)] for r in range(n)]
    allowed = [[not m for m in row] for row in masked]
    leaky = [[c > r + 1 for c in range(n)] for r in range(n)]  # off by one: sees one future key
    return Evidence(
        "heatmaps",
        {
            "title": "Causal attention weights, batch 0, head 1",
            "panels": [
                {"label": "your weights", "matrix": softmax_rows(_scores(n), [[not m for m in row] for row in leaky]), "masked": masked},
                {"label": "reference", "matrix": softmax_rows(_scores(n), allowed), "masked": masked},
            ],
        },
    )  # fmt: skip


def mismatch() -> Evidence:
    return Evidence(
        "mismatch",
        {
            "what": "attention weights",
            "max_abs_error": 0.3125,
            "index": [0, 1, 2, 3],
            "expected": "0.25",
            "got": "0.5625",
            "slice_of": [0, 1],
            "expected_slice": [[0.25, 0.25, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4]],
            "got_slice": [[0.25, 0.25, 0.25, 0.25], [0.1, 0.2, 0.1375, 0.5625]],
        },
    )


def _passed_tests(ex_id: str, points: float, n: int = 2) -> tuple[TestResult, ...]:
    return tuple(
        TestResult(
            name=f"{ex_id.replace('_', ' ')} check {i + 1}",
            score=points / n,
            max_score=points / n,
            passed=True,
            test_id=f"test_{ex_id}.py::test_{i}",
        )
        for i in range(n)
    )


def _passed_exercise(ex_id: str, title: str, points: float) -> ExerciseResult:
    return ExerciseResult(ex_id, points, points, Status.PASSED, _passed_tests(ex_id, points), title)


def full_marks(student: str = "alice") -> SubmissionResult:
    exercises = tuple(_passed_exercise(*e) for e in EXERCISES)
    return SubmissionResult(
        student, "attention", 100.0, 100.0, exercises,
        load=LoadReport(kind="module", files=("attention.py", "answers.yaml")),
        provenance=provenance(),
    )  # fmt: skip


def _buggy_attention_core() -> ExerciseResult:
    tests = (
        TestResult("scaled_dot_product_attention matches the reference", 0, 8, False,
                   "attention weights: 3 of 64 values differ; max abs error 0.312 at [0, 1, 2, 3]"
                   " (expected 0.25, got 0.5625). Is the softmax taken over the key axis (dim=-1)?",
                   outcome="failed", evidence=(mismatch(),)),
        TestResult("bad arguments raise ValueError", 4, 4, True),
        TestResult("multi-head output matches", 0, 4, False,
                   "Check how heads are split and merged back.", visibility="message_only",
                   evidence=(mismatch(),)),
        TestResult("secret shape sweep", 4, 4, True, visibility="hidden"),
        TestResult("secret dtype sweep", 0, 0, False, "hidden failure", visibility="hidden"),
    )  # fmt: skip
    return ExerciseResult("attention_core", 8, 20, Status.PARTIAL, tests, EXERCISES[1][1])


def _buggy_padding() -> ExerciseResult:
    tests = (
        TestResult("weights on PAD keys are 0", 0, 10, False,
                   "padding_mask: PAD keys got weight 0.19 at [0, 0, 0, 4]. Are the masked"
                   " scores filled with -inf before the softmax, and where the mask is False?",
                   evidence=(padding_heatmaps(),)),
        TestResult("outputs match the reference with a padding mask", 0, 5, False,
                   "outputs differ; max abs error 0.41", evidence=(mismatch(),)),
    )  # fmt: skip
    return ExerciseResult("padding_mask", 0, 15, Status.FAILED, tests, EXERCISES[2][1])


def _buggy_causal() -> ExerciseResult:
    tests = (
        TestResult("causal_mask(4) is the lower triangle with the diagonal", 5, 5, True),
        TestResult("future positions get zero weight", 0, 5, False,
                   "query 0 gives weight 0.31 to key 1, a future position. Is the triangle"
                   " shifted by one (diagonal=1 vs 0)?", evidence=(causal_heatmaps(),)),
        TestResult("padding and causal masks combine", 5, 5, True, visibility="hidden"),
    )  # fmt: skip
    return ExerciseResult("causal_mask", 10, 15, Status.PARTIAL, tests, EXERCISES[3][1])


def buggy(student: str = "bob") -> SubmissionResult:
    replaced = {"attention_core": _buggy_attention_core(), "padding_mask": _buggy_padding(),
                "causal_mask": _buggy_causal()}  # fmt: skip
    exercises = tuple(replaced.get(e[0]) or _passed_exercise(*e) for e in EXERCISES)
    return SubmissionResult(
        student, "attention", sum(e.score for e in exercises), 100.0, exercises,
        load=LoadReport(kind="module", files=("attention.py",), stdout="debug: q.shape=[2, 4, 5, 16]\n" * 40,
                        stdout_truncated=True),
        provenance=provenance(),
    )  # fmt: skip


TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mNameError\x1b[0m                                 Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[5], line 3\x1b[0m\n      1 x = torch.randn(2, 5, 64)\n----> 3 out = mha(x)",
    "\x1b[0;31mNameError\x1b[0m: name 'mha' is not defined",
]


def notebook_error(student: str = "carol") -> SubmissionResult:
    missing = TestResult("MultiHeadSelfAttention matches", 0, 10, False,
                         "attention.ipynb does not define MultiHeadSelfAttention (cell [3] raised"
                         " before the class was defined).", outcome="error")  # fmt: skip
    exercises = tuple(
        ExerciseResult(e[0], 0, e[2], Status.ERROR, (missing,), e[1])
        if e[0] in ("attention_core", "dropout")
        else _passed_exercise(*e)
        for e in EXERCISES
    )
    return SubmissionResult(
        student, "attention", sum(e.score for e in exercises), 100.0, exercises,
        load=LoadReport(kind="notebook", files=("attention.ipynb", "attention.py"),
                        notices=("Both attention.py and attention.ipynb were handed in: the notebook was graded.",
                                 "Cell [3] raised NameError; the cells after it still ran."),
                        cell_errors=({"cell": 3, "index": 5, "ename": "NameError",
                                      "evalue": "name 'mha' is not defined", "traceback": TRACEBACK},)),
        provenance=provenance(),
    )  # fmt: skip


def unloadable(student: str = "dave") -> SubmissionResult:
    why = "attention.py could not be imported: SyntaxError: invalid syntax (line 12)."
    exercises = tuple(
        ExerciseResult(e[0], 0, e[2], Status.TIMEOUT if e[0] == "quiz" else Status.ERROR, (), e[1],
                       "answers.yaml took longer than 30 s to read." if e[0] == "quiz" else why)
        for e in EXERCISES
    )  # fmt: skip
    return SubmissionResult(
        student, "attention", 0, 100.0, exercises,
        load=LoadReport(kind="none", notices=(why,)), provenance=provenance(),
    )  # fmt: skip


def evil() -> SubmissionResult:
    """Every student-supplied string tries to be markup."""
    bad = TestResult(f"weights for {SCRIPT}", 0, 10, False, f"you returned {IMG} and {SCRIPT}",
                     evidence=(Evidence("note", {"text": IMG}),
                               Evidence("traceback", {"title": SCRIPT, "text": f"ValueError: {IMG}"}),
                               Evidence("heatmaps", {"title": SCRIPT, "panels": [
                                   {"label": IMG, "matrix": [[0.5, 0.5], [1.0, 0.0]], "masked": [[False, True], [False, True]]}]}),
                               Evidence("mismatch", {"what": IMG, "max_abs_error": float("inf"), "index": [0],
                                                     "expected": SCRIPT, "got": IMG,
                                                     "expected_slice": [SCRIPT], "got_slice": [IMG]}),
                               Evidence("unknown-kind", {"payload": SCRIPT})))  # fmt: skip
    exercises = tuple(
        ExerciseResult(e[0], 0, e[2], Status.FAILED, (bad,), e[1], message=IMG)
        if e[0] == "padding_mask"
        else _passed_exercise(*e)
        for e in EXERCISES
    )
    return SubmissionResult(
        SCRIPT, "attention", sum(e.score for e in exercises), 100.0, exercises,
        load=LoadReport(kind="notebook", files=(f"{IMG}.ipynb",), notices=(SCRIPT,),
                        cell_errors=({"cell": 1, "index": 0, "ename": SCRIPT, "evalue": IMG, "traceback": IMG},),
                        stdout=SCRIPT + IMG),
        provenance=provenance(),
    )  # fmt: skip


def grader_failure(student: str = "erin") -> SubmissionResult:
    why = "The grader crashed (InternalError: reference module failed to import); not your fault."
    exercises = tuple(ExerciseResult(e[0], 0, e[2], Status.ERROR, (), e[1], why) for e in EXERCISES)
    return SubmissionResult(student, "attention", 0, 100.0, exercises, gradable=False,
                            provenance=provenance())  # fmt: skip


def all_samples() -> list[SubmissionResult]:
    return [full_marks(), buggy(), notebook_error(), unloadable(), evil(), grader_failure()]
