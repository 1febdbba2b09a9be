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
text     free text (a number or a list of lines is read as text). Key: `rubric`, a list
         of {points, concept, any: [...], all: [...], none: [...]}: an item scores when
         one `any` term, every `all` term and no `none` term occurs. Terms are Python
         regular expressions matched case-insensitively on the answer with accents
         removed (NFD, combining marks dropped, đ -> d), so "tương lai" in the key
         matches "tuong lai" and "TƯƠNG LAI"; each top-level `|` branch that starts or
         ends with a letter or digit matches whole words there ("pad" does not match
         "keypad"; write "pad\\w*" for "padding"). The score is the sum of matched
         items, capped at the question's points. An empty answer scores 0.
manual   collected as text, scored 0 until the instructor scores it.

A missing, empty or malformed answer scores 0 with a message that names the key to
add in answers.yaml or says what is wrong with the value.

Messages never contain the key's answers; they may show the key's `hint` and, for text,
the rubric's concept names.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Callable, Mapping, Sequence

from grader.answer_values import (
    READERS,
    SUPERSCRIPTS,
    Canon,
    Malformed,
    canon,
    canon_scalar,
    fold_text,
    kind_of,
    read_number,
    show,
    strip_accents,
)
from grader.answers_file import (
    MAX_ANSWERS_BYTES,
    load_answers,
    parse_answers,
    template_answers,
)
from grader.assignment import Question
from grader.errors import AssignmentError
from grader.results import TestResult

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


@functools.lru_cache(maxsize=1024)
def _term(term: str) -> re.Pattern[str]:
    """A rubric term as a regex: accents removed, whole words where a branch starts/ends with one."""
    branches = []
    for branch in _top_level_branches(strip_accents(term.translate(SUPERSCRIPTS))):
        if re.match(r"\w", branch):
            branch = r"\b" + branch
        if re.search(r"(?<!\\)\w$", branch):
            branch += r"\b"
        branches.append(branch)
    return re.compile("|".join(branches), re.IGNORECASE)


def _top_level_branches(pattern: str) -> list[str]:
    """Split a regex at the `|`s outside groups and classes: "a|(b|c)" -> ["a", "(b|c)"]."""
    branches, depth, start, in_class, i = [], 0, 0, False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*branches, pattern[start:]]


def _item_matches(item: Mapping[str, Any], text: str) -> bool:
    found = lambda terms: [bool(_term(t).search(text)) for t in terms]  # noqa: E731
    any_terms, all_terms, none_terms = (item.get(k) or () for k in ("any", "all", "none"))
    return (not any_terms or any(found(any_terms))) and all(found(all_terms)) and not any(found(none_terms))


def _grade_text(text: str, entry: Mapping[str, Any], q: Question) -> tuple[float, str]:
    folded = fold_text(text)
    covered = [i for i in entry["rubric"] if _item_matches(i, folded)]
    missing = [i["concept"] for i in entry["rubric"] if i not in covered]
    score = min(float(q.points), sum((float(i["points"]) for i in covered), 0.0))
    names = "; ".join(i["concept"] for i in covered)
    if score >= q.points - _EPS:
        return score, f"covers the key points: {names}."
    said = f"covered: {names}. " if covered else "none of the key points found. "
    return score, _with_hint(f"{said}missing: {'; '.join(missing)}.", entry)


def _with_hint(message: str, entry: Mapping[str, Any]) -> str:
    hint = entry.get("hint")
    return f"{message} Hint: {hint}" if hint else message


_RIGHT_OR_WRONG: dict[str, Callable[[Any, Mapping[str, Any], Question], bool]] = {
    "numeric": _grade_numeric,
    "exact": _grade_exact,
    "choice": _grade_choice,
}


def _grade(q: Question, value: Any, parsed: Any, entry: Mapping[str, Any]) -> tuple[float, str]:
    if q.type == "text":
        return _grade_text(parsed, entry, q)
    if _RIGHT_OR_WRONG[q.type](parsed, entry, q):
        return float(q.points), "correct."
    return 0.0, _with_hint(f"answered {show(value)}, which is not the expected answer.", entry)


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


def _result(q: Question, score: float, passed: bool, message: str, check_only: bool) -> TestResult:
    return TestResult(
        name=q.prompt,
        score=0.0 if check_only else float(round(score, 4)),
        max_score=0.0 if check_only else float(q.points),
        passed=passed,
        message=message,
        outcome="passed" if passed else "failed",
        visibility=q.visibility,
        test_id=f"question:{q.id}",
    )


def _score_one(q: Question, answers: Mapping[str, Any] | None, key: Mapping[str, Any] | None,
               check_only: bool) -> TestResult:
    value = _MISSING if answers is None else lookup(answers, q.id)
    absent = _absence(q.id, answers, value)
    if absent:
        return _result(q, 0.0, False, absent, check_only)
    try:
        parsed = READERS[q.type](value, q)
    except Malformed as exc:
        return _result(q, 0.0, False, f"`{q.id}`: {exc}", check_only)
    if check_only:
        return _result(q, 0.0, True, "present", check_only)
    if q.type == "manual":
        return _result(q, 0.0, False, "answer received; waiting for the instructor's score.", check_only)
    assert key is not None
    score, message = _grade(q, value, parsed, key[q.id])
    return _result(q, score, score >= q.points - _EPS, message, check_only)


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
        _check_rubric(q, entry.get("rubric"))
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


def _check_rubric(q: Question, rubric: Any) -> None:
    if not isinstance(rubric, list) or not rubric:
        raise ValueError("a text question needs a non-empty `rubric` list")
    total = 0.0
    for n, item in enumerate(rubric, 1):
        if not isinstance(item, Mapping) or not isinstance(item.get("concept"), str):
            raise ValueError(f"rubric item {n} needs a `concept` name")
        points = item.get("points")
        if isinstance(points, bool) or not isinstance(points, (int, float)) or points <= 0:
            raise ValueError(f"rubric item {n} needs positive `points`")
        if not (item.get("any") or item.get("all")):
            raise ValueError(f"rubric item {n} needs `any` or `all` terms")
        for name in ("any", "all", "none"):
            terms = item.get(name) or []
            if not isinstance(terms, list) or not all(isinstance(t, str) and t for t in terms):
                raise ValueError(f"rubric item {n}: `{name}` must be a list of words or regexes")
            for t in terms:
                try:
                    _term(t)
                except re.error as exc:
                    raise ValueError(f"rubric item {n}: {t!r} is not a valid regular expression "
                                     f"({exc})") from None
        total += points
    if total < q.points - _EPS:
        raise ValueError(f"the rubric's points add up to {total}, less than the question's {q.points}")


