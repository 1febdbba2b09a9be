"""Plain data that leaves the grader: test, exercise and submission results.

These dataclasses are what `result.json` holds (see the attention contract), what the
HTML and CSV writers read, and what `grader report` re-reads to apply overrides. They
never hold live objects: only str, numbers, bools, lists and dicts.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any


class Status(str, enum.Enum):
    """An exercise's outcome (and a test's, where `passed`/`failed` say too little)."""

    PASSED = "passed"
    PARTIAL = "partial"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"


class _Value(str, enum.Enum):
    """A closed set of strings: equal to its value, and printed as it (in f-strings, HTML
    templates and CSV alike), so result.json and every report read as before."""

    def __str__(self) -> str:
        return str(self.value)

    @classmethod
    def known(cls, value: Any) -> Any:
        """`value` as a member where it is one; anything else as it is (a result.json from
        another version, a visibility no one knows: the reports treat those as before)."""
        try:
            return cls(value)
        except (ValueError, TypeError):
            return value


class Outcome(_Value):
    """A test's outcome: `error` is the student's code crashing or the child dying,
    `timeout` a limit reached, `failed` an assertion that did not hold."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"


class Visibility(_Value):
    """What the student sees of a test (see the assignment YAML); the reports treat a
    visibility they do not know as hidden."""

    VISIBLE = "visible"
    MESSAGE_ONLY = "message_only"
    HIDDEN = "hidden"


class EvidenceKind(_Value):
    """What an `Evidence` holds (its `data`'s keys are listed there)."""

    MISMATCH = "mismatch"
    HEATMAPS = "heatmaps"
    TRACEBACK = "traceback"
    NOTE = "note"


def _set_known(obj: object, name: str, kind: type[_Value]) -> None:
    """A frozen field's str value as its enum member (builders may pass either)."""
    object.__setattr__(obj, name, kind.known(getattr(obj, name)))


@dataclass(frozen=True)
class Evidence:
    """Numbers or pictures that show *why* a test failed, for the report.

    `kind` is one of:
    - "mismatch": data = {what, max_abs_error, index, expected, got, expected_slice, got_slice}
    - "heatmaps": data = {title, panels: [{label, matrix: [[float]], masked: [[bool]] | None}]}
    - "traceback": data = {title, text}
    - "note": data = {text}
    """

    kind: EvidenceKind
    data: dict[str, Any]

    def __post_init__(self) -> None:
        _set_known(self, "kind", EvidenceKind)


@dataclass(frozen=True)
class Figure:
    """A picture the student's own code drew (a notebook cell's plot, a `plot_*`
    function the test called), checked to be a PNG by `grader.figures`. result.json
    keeps its bytes as base64; report.html shows it as a data: image under its test."""

    png_base64: str
    width: int
    height: int
    source: str = ""
    """Where it was drawn: "cell 8", "attention.py", "plot_attention(...)"."""

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + self.png_base64


@dataclass(frozen=True)
class Review:
    """How sure the grader is of a written answer's score, and why not (see `needs_review`).

    `found` and `missed` name the rubric's concepts the answer did and did not state;
    `reasons` say in plain words why a person should look at it (empty when none);
    `answer` is what the student wrote (at most MAX_ANSWER_CHARS), so `grader review`
    needs no other file ("" when there was nothing to read)."""

    found: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    answer: str = ""


MAX_ANSWER_CHARS = 4000


@dataclass(frozen=True)
class TestResult:
    name: str
    """What was checked, in plain words (a test's docstring, or a question's prompt)."""
    score: float
    max_score: float
    passed: bool
    message: str = ""
    """What happened and, where it failed, the likely bug."""
    outcome: Outcome = Outcome.PASSED
    visibility: Visibility = Visibility.VISIBLE
    test_id: str = ""
    """Stable id: `file.py::function` for tests, `question:<id>` for answers."""
    evidence: tuple[Evidence, ...] = ()
    duration_s: float = 0.0
    figures: tuple[Figure, ...] = ()
    """The student's own figures this test showed (see `grader.figures`)."""
    needs_review: bool | None = None
    """Written answers (question type `text`) only, always True or False there: True when
    the grader is unsure and `score` is provisional until a person reviews it. None for
    every other test (and then absent from result.json)."""
    review: Review | None = None
    """Written answers only: the concepts found and missed and the reasons for a flag."""

    def __post_init__(self) -> None:
        _set_known(self, "outcome", Outcome)
        _set_known(self, "visibility", Visibility)


@dataclass(frozen=True)
class TestOutcome:
    """One test's outcome as the pytest session saw it, before scoring (plain data)."""

    nodeid: str
    file: Path
    function: str
    name: str
    outcome: Outcome
    message: str
    evidence: tuple[Evidence, ...]
    duration_s: float
    figures: tuple[Figure, ...] = ()

    def __post_init__(self) -> None:
        _set_known(self, "outcome", Outcome)


@dataclass(frozen=True)
class ExerciseResult:
    id: str
    score: float
    max_score: float
    status: Status
    tests: tuple[TestResult, ...]
    title: str = ""
    message: str = ""
    """Exercise-wide message, e.g. why nothing could run."""


@dataclass(frozen=True)
class Provenance:
    """What produced a result, so a regrade can be told apart and reproduced."""

    grader_version: str
    assignment: str
    assignment_version: str
    assignment_digest: str
    submission_digest: str
    torch_version: str
    python_version: str
    device: str
    seed: int
    sandbox: str
    graded_at: str
    duration_s: float
    isolation: str = ""
    """What the sandbox actually gave the child, in words."""
    cpu_s: float = 0.0
    """CPU seconds: the grader's process for this submission plus the student's."""


@dataclass(frozen=True)
class LoadReport:
    """How the submission was read and run before the tests."""

    kind: str
    """module | notebook | none"""
    files: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    """Plain-word notes for the student: both files present, a cell raised, ..."""
    cell_errors: tuple[dict[str, Any], ...] = ()
    """[{cell: 1-based code cell number or None for a module, where, ename, evalue, traceback}]"""
    stdout: str = ""
    stdout_truncated: bool = False


@dataclass(frozen=True)
class SubmissionResult:
    student: str
    assignment: str
    score: float
    max_score: float
    exercises: tuple[ExerciseResult, ...]
    load: LoadReport = field(default_factory=lambda: LoadReport(kind="none"))
    provenance: Provenance | None = None
    gradable: bool = True
    """False when the *grader* failed (a bug of ours, a broken assignment): such a
    result is not a zero for the student and is flagged in the overview."""

    @property
    def needs_review_count(self) -> int:
        """How many written answers wait for a person's review (see `TestResult.needs_review`)."""
        return needs_review_count(self)

    def exercise(self, exercise_id: str) -> ExerciseResult:
        for ex in self.exercises:
            if ex.id == exercise_id:
                return ex
        raise KeyError(exercise_id)

    def to_json_dict(self) -> dict[str, Any]:
        """The `result.json` document, of plain JSON types only (the contract's keys first,
        then ours). The one way a result leaves a process: written to disk, or sent back
        by a grading worker or a Dask task."""
        return _submission_doc(self)

    @classmethod
    def from_json_dict(cls, doc: dict[str, Any]) -> SubmissionResult:
        """Inverse of `to_json_dict`: `from_json_dict(to_json_dict(r)) == r`. Used by the
        grading pool, `grader report` and resumption; a malformed document raises
        KeyError, TypeError or ValueError."""
        return _submission_from(doc)


def exercise_status(score: float, max_score: float, tests: Sequence[TestResult]) -> Status:
    """passed (full marks), partial, or at zero: timeout, error (the code could not run)
    or failed."""
    if score >= max_score - 1e-9:
        return Status.PASSED
    if score > 0:
        return Status.PARTIAL
    lost = [t for t in tests if not t.passed]
    if any(t.outcome == Outcome.TIMEOUT for t in lost):
        return Status.TIMEOUT
    code_lost = [t for t in lost if not t.test_id.startswith("question:")]
    if code_lost and all(t.outcome == Outcome.ERROR for t in code_lost):
        return Status.ERROR
    return Status.FAILED


def to_json_dict(result: SubmissionResult) -> dict[str, Any]:
    """`SubmissionResult.to_json_dict`, as a function."""
    return result.to_json_dict()


def from_json_dict(doc: dict[str, Any]) -> SubmissionResult:
    """`SubmissionResult.from_json_dict`, as a function."""
    return SubmissionResult.from_json_dict(doc)


def needs_review_count(result: SubmissionResult) -> int:
    """How many of the submission's written answers wait for a person's review."""
    return sum(1 for ex in result.exercises for t in ex.tests if t.needs_review)


def _submission_doc(result: SubmissionResult) -> dict[str, Any]:
    doc = _plain(result)
    doc["exercises"] = [_exercise_doc(ex) for ex in doc["exercises"]]
    ordered = {k: doc[k] for k in ("student", "assignment", "score", "max_score", "exercises")}
    ordered.update({k: v for k, v in doc.items() if k not in ordered})
    return ordered


_ATOMS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """What `asdict` gives, with every enum member as its value (str for ours), built in one
    walk: `asdict` deep-copies every leaf, which cost more than the rest of writing a result."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, _ATOMS):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return copy.deepcopy(value)


def _exercise_doc(doc: dict[str, Any]) -> dict[str, Any]:
    for test in doc["tests"]:
        # The contract's `needs_review` belongs to written answers only: absent elsewhere.
        for key in ("needs_review", "review"):
            if test.get(key) is None:
                test.pop(key, None)
    return doc


def _submission_from(doc: dict[str, Any]) -> SubmissionResult:
    prov = doc.get("provenance")
    return SubmissionResult(
        student=doc["student"],
        assignment=doc["assignment"],
        score=doc["score"],
        max_score=doc["max_score"],
        exercises=tuple(_exercise_from(e) for e in doc["exercises"]),
        load=_load_from(doc.get("load") or {"kind": "none"}),
        provenance=Provenance(**prov) if prov else None,
        gradable=doc.get("gradable", True),
    )


def _exercise_from(doc: dict[str, Any]) -> ExerciseResult:
    return ExerciseResult(
        id=doc["id"],
        score=doc["score"],
        max_score=doc["max_score"],
        status=Status(doc["status"]),
        title=doc.get("title", ""),
        message=doc.get("message", ""),
        tests=tuple(_test_from(t) for t in doc["tests"]),
    )


def _test_from(doc: dict[str, Any]) -> TestResult:
    """Outcome and visibility become their enum members in `TestResult` itself."""
    return TestResult(
        **{k: v for k, v in doc.items() if k not in ("evidence", "figures", "review")},
        evidence=tuple(Evidence(**ev) for ev in doc.get("evidence", ())),
        figures=_figures(doc.get("figures", ())),
        review=_review(doc.get("review")),
    )


def _load_from(doc: dict[str, Any]) -> LoadReport:
    return LoadReport(**{
        **doc,
        "files": tuple(doc.get("files", ())),
        "notices": tuple(doc.get("notices", ())),
        "cell_errors": tuple(doc.get("cell_errors", ())),
    })


def _figures(docs: Any) -> tuple[Figure, ...]:
    """Figures as result.json stores them, each checked again (one that is no longer a
    PNG is dropped: the report shows nothing rather than something unchecked)."""
    from grader.figures import figure_from_doc

    found = (figure_from_doc(d) for d in (docs if isinstance(docs, list) else ()))
    return tuple(f for f in found if f is not None)


def _review(doc: Any) -> Review | None:
    """A written answer's review block as result.json stores it (None when absent)."""
    if not isinstance(doc, dict):
        return None
    answer = doc.get("answer")
    return Review(**{k: tuple(str(x) for x in doc.get(k) or ()) for k in ("found", "missed", "reasons")},
                  answer=answer[:MAX_ANSWER_CHARS] if isinstance(answer, str) else "")
