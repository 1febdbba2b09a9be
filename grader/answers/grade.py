"""Scoring the written answers of answers.yaml against the instructor's key.

    load_answers(path)                  -> (answers | None, problems)   hostile input, read safely
    score_questions(qs, answers, key)   -> [TestResult], one per question
    score_questions(qs, answers, None, check_only=True)   present and well-formed, never right/wrong
    template_answers(qs)                -> an answers.yaml for students to fill in
    check_key(qs, key)                  -> what is wrong with the key itself (`grader validate`)

A question id is a dotted path into answers.yaml: `quiz.q3` is `answers["quiz"]["q3"]`
(a top-level key spelled `quiz.q3` is accepted too). What each type accepts:

numeric  a YAML number, or text holding one: "16", "16x", "x16", "16 times", "16 lần",
         "4,294,967,296", "4.294.967.296", "4 294 967 296", "4_294_967_296", "4.29e9",
         "~16", "2^32", "2**32", "(8192/2048)^2", "8*16*4096*4096*2", "8 x 16 x 2";
         byte units b, KiB, MiB, GiB, TiB (powers of 1024) and KB, MB, GB, TB (either
         powers of 1000 or of 1024: both readings are tried). In a sentence the number
         is the one after the last "=" (or "≈", "->", "→"), else the only number written
         with a unit ("tăng 16 lần vì ..."), else the only number. A comma with other than
         three digits after it is a decimal comma ("16,5"). Words ("sixteen") are not read.
         Key: `answer`, optional `tolerance` (absolute) and/or `rel_tolerance`.
exact    text compared ignoring case, accents, spaces, quotes and backticks; numbers by
         value (64 == 64.0); lists elementwise, given as a YAML list or as text:
         "[2, 5, 64]", "(2, 5, 64)", "torch.Size([2, 5, 64])", "2, 5, 64", "2 x 5 x 64".
         Key: `answer`, optional `accept: [...]` alternatives.
choice   one of the question's `choices` (same normalisation as exact). Key: `answer`.
text     free text (a number or a list of lines is read as text). Key: `rubric`, a list of
         items {points, concept, subject, accept, reject, topic, all}, one per key point,
         scored by `grader.answers.rubric`: an item scores when its point is said of its
         subject and not turned around by a negation or contradicted by a `reject` wording.
         Patterns match case- and accent-insensitively ("tương lai" matches "tuong lai").
         Every text result carries `needs_review` (True: the score is provisional, and the
         message says a person will review it) and a `Review` (concepts found and missed,
         reasons for the flag). An empty answer scores 0 and needs no review.
manual   collected as text, scored 0 until the instructor scores it.

A missing, empty or malformed answer scores 0 with a message that names the key to
add in answers.yaml or says what is wrong with the value.

Messages never contain the key's answers; they may show the key's `hint` and, for text,
the rubric's concept names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from grader.answers.patterns import check_rubric
from grader.answers.rubric import grade_text
from grader.answers.submitted import (
    load_answers,
    parse_answers,
    template_answers,
)
from grader.answers.values import (
    READERS,
    Canon,
    Malformed,
    canon,
    canon_scalar,
    fold_text,
    kind_of,
    read_number,
    show,
)
from grader.assignment import Question
from grader.errors import AssignmentError
from grader.intake.read import MAX_ANSWERS_BYTES
from grader.results import MAX_ANSWER_CHARS, Outcome, Review, TestResult, Visibility

__all__ = [
    "MAX_ANSWERS_BYTES",
    "QUESTION_TYPES",
    "AnswerKeyError",
    "check_key",
    "fold_text",
    "load_answers",
    "lookup",
    "parse_answers",
    "read_number",
    "score_questions",
    "template_answers",
]

QUESTION_TYPES = ("numeric", "exact", "choice", "text", "manual")
_MISSING: Any = object()
PROVISIONAL = "provisional: your instructor will review this answer."
_EPS = 1e-9


class AnswerKeyError(AssignmentError):
    """The answer key is missing or broken: a fault of the assignment, never the student's."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("answer key: " + "; ".join(problems))
        self.problems = tuple(problems)


# ------------------------------------------------------------------------ grading


def _grade_numeric(candidates: tuple[float, ...], entry: Mapping[str, Any], q: Question) -> bool:
    target = float(entry["answer"])
    allowed = max(float(entry.get("tolerance", 0)), float(entry.get("rel_tolerance", 0)) * abs(target),
                  _EPS * max(1.0, abs(target)))
    return any(abs(c - target) <= allowed for c in candidates)


def _grade_exact(given: Canon, entry: Mapping[str, Any], q: Question) -> bool:
    return given in {canon(a) for a in [entry["answer"], *entry.get("accept", ())]}


def _grade_choice(chosen: Canon, entry: Mapping[str, Any], q: Question) -> bool:
    return chosen in {canon_scalar(a) for a in [entry["answer"], *entry.get("accept", ())]}


def _grade_text(text: str, entry: Mapping[str, Any], q: Question) -> tuple[float, str, Review, bool]:
    grade = grade_text(text, entry, float(q.points), q.prompt)
    names = "; ".join(grade.found)
    if grade.copied:
        message = _with_hint("the answer repeats the question: write what you think the answer is.", entry)
    elif grade.score >= q.points - _EPS:
        message = f"covers the key points: {names}."
    else:
        said = f"covered: {names}. " if grade.found else "none of the key points found. "
        if grade.opposite:
            said += f"states the opposite of: {'; '.join(grade.opposite)}. "
        message = _with_hint(f"{said}missing: {'; '.join(grade.missed)}.", entry)
    if grade.reasons:
        message = f"{PROVISIONAL} {message}"
    review = Review(grade.found, grade.missed, grade.reasons, answer=text[:MAX_ANSWER_CHARS])
    return grade.score, message, review, bool(grade.reasons)


def _with_hint(message: str, entry: Mapping[str, Any]) -> str:
    hint = entry.get("hint")
    return f"{message} Hint: {hint}" if hint else message


_RIGHT_OR_WRONG: dict[str, Callable[[Any, Mapping[str, Any], Question], bool]] = {
    "numeric": _grade_numeric,
    "exact": _grade_exact,
    "choice": _grade_choice,
}


def _grade(q: Question, value: Any, parsed: Any, entry: Mapping[str, Any]
           ) -> tuple[float, str, Review | None, bool | None]:
    if q.type == "text":
        return _grade_text(parsed, entry, q)
    if _RIGHT_OR_WRONG[q.type](parsed, entry, q):
        return float(q.points), "correct.", None, None
    return 0.0, _with_hint(f"answered {show(value)}, which is not the expected answer.", entry), None, None


# ----------------------------------------------------------------------- scoring


def lookup(answers: Mapping[str, Any], question_id: str) -> Any:
    """The value at dotted path `question_id` (or at a top-level key spelled so), else a sentinel."""
    if question_id in answers:
        return answers[question_id]
    node: Any = answers
    for part in question_id.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _where_to_write(question_id: str) -> str:
    *parents, leaf = question_id.split(".")
    under = f" under `{'` > `'.join(p + ':' for p in parents)}`" if parents else " at the top level"
    return f"add `{leaf}: <your answer>`{under} in answers.yaml"


def _absence(question_id: str, answers: Mapping[str, Any] | None, value: Any) -> str:
    """Why there is no answer to score ('' when there is one)."""
    if answers is None:
        return (f"answers.yaml is missing or could not be read, so `{question_id}` has no answer: "
                f"{_where_to_write(question_id)}.")
    if value is _MISSING:
        parts = question_id.split(".")
        for depth in range(1, len(parts)):
            parent = lookup(answers, ".".join(parts[:depth]))
            if parent is not _MISSING and not isinstance(parent, Mapping):
                return (f"`{'.'.join(parts[:depth])}` in answers.yaml is {kind_of(parent)}, "
                        f"not a group of answers: {_where_to_write(question_id)}.")
        return f"answers.yaml has no `{question_id}`: {_where_to_write(question_id)}."
    if _is_blank(value):
        leaf = question_id.split(".")[-1]
        return f"`{question_id}` is empty in answers.yaml: write your answer after `{leaf}:`."
    return ""


def _is_blank(value: Any) -> bool:
    if isinstance(value, str):
        return not value.strip()
    return value is None or (isinstance(value, (list, tuple, Mapping)) and not value)


def _result(q: Question, score: float, passed: bool, message: str, check_only: bool,
            review: Review | None = None, needs_review: bool | None = None) -> TestResult:
    if q.type == "text" and not check_only and needs_review is None:
        needs_review = False
    return TestResult(
        name=q.prompt,
        score=0.0 if check_only else float(round(score, 4)),
        max_score=0.0 if check_only else float(q.points),
        passed=passed,
        message=message,
        outcome=Outcome.PASSED if passed else Outcome.FAILED,
        visibility=Visibility.known(q.visibility),
        test_id=f"question:{q.id}",
        needs_review=needs_review,
        review=review,
    )


def _score_one(q: Question, answers: Mapping[str, Any] | None, key: Mapping[str, Any] | None,
               check_only: bool) -> TestResult:
    value = _MISSING if answers is None else lookup(answers, q.id)
    absent = _absence(q.id, answers, value)
    # A written answer that is missing, empty or malformed: a certain 0, every concept missed.
    nothing = (Review(missed=tuple(str(i["concept"]) for i in key[q.id]["rubric"]))
               if q.type == "text" and not check_only and key is not None else None)
    if absent:
        return _result(q, 0.0, False, absent, check_only, nothing)
    try:
        parsed = READERS[q.type](value, q)
    except Malformed as exc:
        return _result(q, 0.0, False, f"`{q.id}`: {exc}", check_only, nothing)
    if check_only:
        return _result(q, 0.0, True, "present", check_only)
    if q.type == "manual":
        return _result(q, 0.0, False, "answer received; waiting for the instructor's score.", check_only)
    assert key is not None
    score, message, review, needs_review = _grade(q, value, parsed, key[q.id])
    return _result(q, score, score >= q.points - _EPS, message, check_only, review, needs_review)


def score_questions(
    questions: Sequence[Question],
    answers: Mapping[str, Any] | None,
    key: Mapping[str, Any] | None,
    *,
    check_only: bool = False,
) -> list[TestResult]:
    """One TestResult per question; raises AnswerKeyError when grading with a broken key.

    With `check_only` the key is never read: each result says whether the answer is
    present and well-formed (score and max_score 0), never whether it is right.
    """
    unknown = [f"question `{q.id}` has unknown type {q.type!r}"
               for q in questions if q.type not in QUESTION_TYPES]
    if unknown:
        raise AnswerKeyError(unknown)
    if not check_only and (problems := check_key(questions, key)):
        raise AnswerKeyError(problems)
    return [_score_one(q, answers, key, check_only) for q in questions]


# --------------------------------------------------------------------- key checks


def check_key(questions: Sequence[Question], key: Mapping[str, Any] | None) -> list[str]:
    """Problems of the answer key for these questions (empty when it can grade them all)."""
    graded = [q for q in questions if q.type != "manual"]
    if key is None or not isinstance(key, Mapping):
        return ["there is no answer key (or it is not a mapping of question ids)"] if graded else []
    problems: list[str] = []
    for q in graded:
        entry = key.get(q.id)
        if not isinstance(entry, Mapping):
            problems.append(f"`{q.id}`: no entry (a mapping) in the answer key")
            continue
        try:
            _check_entry(q, entry)
        except (ValueError, TypeError, KeyError, re.error) as exc:
            problems.append(f"`{q.id}`: {exc}")
    return problems


def _check_entry(q: Question, entry: Mapping[str, Any]) -> None:
    if q.type == "text":
        check_rubric(entry.get("rubric"), float(q.points), entry.get("full_with"))
        return
    if "answer" not in entry:
        raise ValueError("no `answer`")
    if q.type == "numeric":
        for name in ("answer", "tolerance", "rel_tolerance"):
            number = entry.get(name, 0)
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
                raise ValueError(f"`{name}` must be a number")
        if entry.get("tolerance", 0) < 0 or entry.get("rel_tolerance", 0) < 0:
            raise ValueError("tolerances must not be negative")
        return
    if not isinstance(entry.get("accept", []), list):
        raise ValueError("`accept` must be a list")
    accepted = [entry["answer"], *(entry.get("accept") or ())]
    if q.type == "exact":
        for a in accepted:
            canon(a)
    elif not q.choices or not {canon_scalar(a) for a in accepted} <= {canon_scalar(c) for c in q.choices}:
        raise ValueError("the answer must be one of the question's choices")
