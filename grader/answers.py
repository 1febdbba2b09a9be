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

import ast
import functools
import math
import operator
import os
import re
import stat
import textwrap
import unicodedata
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import yaml

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

MAX_ANSWERS_BYTES = 256 * 1024
QUESTION_TYPES = ("numeric", "exact", "choice", "text", "manual")
_MISSING: Any = object()
_EPS = 1e-9


class AnswerKeyError(AssignmentError):
    """The answer key is missing or broken: a fault of the assignment, never the student's."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("answer key: " + "; ".join(problems))
        self.problems = tuple(problems)


class _Malformed(ValueError):
    """An answer that is present but cannot be read as its question's type."""


# --------------------------------------------------------------------------- text


_SUPERSCRIPTS = str.maketrans({"²": "^2", "³": "^3", "’": "'", "‘": "'"})


def fold_text(text: str) -> str:
    """Lower-case, drop accents (đ -> d), collapse whitespace: "Tương  Lai" -> "tuong lai"."""
    return " ".join(_strip_accents(text.translate(_SUPERSCRIPTS)).lower().split())


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    return kept.replace("đ", "d").replace("Đ", "D")


def _show(value: Any) -> str:
    """The student's own answer, short, for a message."""
    if isinstance(value, (list, tuple)):
        text = "[" + ", ".join(_show(v) for v in value) + "]"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, str):
        text = '"' + " ".join(value.split()) + '"'
    else:
        try:
            text = str(value)
        except ValueError:  # an int too long to print
            text = "a very long number"
    if len(text) <= 60:
        return text
    return text[:56] + ('..."' if text.startswith('"') else "...")


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping (key: value pairs)"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    return f"a {type(value).__name__}"


# ------------------------------------------------------------------------ numbers

_UNIT_SCALES: dict[str, tuple[float, ...]] = {
    "": (1.0,), "x": (1.0,), "×": (1.0,), "times": (1.0,), "lan": (1.0,), "fold": (1.0,),
    "b": (1.0,), "byte": (1.0,), "bytes": (1.0,),
    **{f"{p}ib": (1024.0**i,) for i, p in enumerate("kmgt", 1)},
    **{f"{p}b": (1000.0**i, 1024.0**i) for i, p in enumerate("kmgt", 1)},
    **{f"{w}bytes": (1000.0**i, 1024.0**i) for i, w in enumerate(("kilo", "mega", "giga", "tera"), 1)},
}
_UNIT = r"(?:kilo|mega|giga|tera)bytes|bytes?|[kmgt]i?b|b|times|lan|-?fold|x|×"
_MULTIPLIER_UNIT = r"(?:times|lan|-?fold|x|×)"
_APPROX = re.compile(r"^(?:~|≈|about|approximately|approx\.?|around|roughly|khoang|xap xi|tang|gap|x|×)\s*")
_FREE_NUMBER = (r"(?<![a-wyz_0-9.])(?:\d{1,3}(?:,\d{3})+(?![\d,])|\d{1,3}(?:\.\d{3}){2,}(?![\d.])"
                r"|\d+(?:\.\d+)?(?:e[+-]?\d+)?)")
_FREE_QUANTITY = re.compile(rf"({_FREE_NUMBER})(?:\s*({_UNIT})(?![a-z]))?")
_EQUALS = re.compile(r"=>|->|=|≈|→")
_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow,
}


def read_number(value: Any) -> tuple[float, ...]:
    """Every value the answer may mean (several only for KB/MB/GB/TB); raises _Malformed."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _Malformed(f"expected a number, found {_kind(value)}")
    if isinstance(value, (int, float)):
        return (_finite(value),)
    text = fold_text(value)
    found = _quantity(text)
    if found is None:
        found = _number_in_sentence(text, value)
    return found


def _finite(value: int | float) -> float:
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise _Malformed(f"{_show(value)} is not a finite number of a sensible size")
    return number


def _quantity(text: str) -> tuple[float, ...] | None:
    """A string that is nothing but a number or small arithmetic, with an optional unit."""
    text = _APPROX.sub("", text.strip().rstrip(".!;:").strip())
    unit = re.search(rf"\s*({_UNIT})$", text)
    scales = _UNIT_SCALES[unit.group(1).lstrip("-")] if unit else (1.0,)
    expr = _canonical_numbers(text[: unit.start()] if unit else text)
    expr = re.sub(r"(?<=[\d)])\s*[x×]\s*(?=[\d(])", "*", expr).replace("^", "**")
    number = _safe_eval(expr)
    return None if number is None else tuple(number * s for s in scales)


def _canonical_numbers(text: str) -> str:
    text = re.sub(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])", lambda m: m.group().replace(",", ""), text)
    text = re.sub(r"(?<![\d.,])\d{1,3}(?:\.\d{3}){2,}(?![\d.])", lambda m: m.group().replace(".", ""), text)
    text = re.sub(r"(?<![\d.,])\d{1,3}(?:[ _]\d{3})+(?![\d])", lambda m: re.sub("[ _]", "", m.group()), text)
    return re.sub(r"(?<![\d.,])(\d+),(\d+)(?![\d,])", r"\1.\2", text)


def _safe_eval(expr: str) -> float | None:
    if not expr.strip() or len(expr) > 120 or not re.fullmatch(r"[\d\s.+\-*/()e]+", expr):
        return None
    try:
        result = _eval_node(ast.parse(expr.strip(), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None
    return result if isinstance(result, float) and math.isfinite(result) else None


def _eval_node(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        operand = _eval_node(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval_node(node.left), _eval_node(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
            raise ValueError("power too large")
        return _BINOPS[type(node.op)](left, right)
    raise ValueError("not arithmetic")


def _number_in_sentence(text: str, original: str) -> tuple[float, ...]:
    """The number a sentence states: after the last '=', else the only one with a unit, else the only one."""
    tails = _EQUALS.split(text)
    if len(tails) > 1:
        tail = tails[-1].strip().lstrip("~ ")
        leading = _FREE_QUANTITY.match(tail)
        value = _quantity(tail) or (_quantity(leading.group(0)) if leading else None)
        if value is not None:
            return value
    quantities = [(m.group(0), m.group(2)) for m in _FREE_QUANTITY.finditer(text)]
    for pick in (lambda unit: bool(unit), lambda unit: True):
        values = {_quantity(q) for q, unit in quantities if pick(unit)} - {None}
        if len(values) == 1:
            return values.pop()  # type: ignore[return-value]
    if not quantities:
        raise _Malformed(f"could not find a number in {_show(original)}")
    distinct = list(dict.fromkeys(q for q, _ in quantities))
    if len(distinct) == 1:
        raise _Malformed(f"could not read a number of sensible size in {_show(original)}")
    shown = ", ".join(distinct)
    raise _Malformed(f"found several numbers ({shown}) in {_show(original)}: write only the one you mean")


# -------------------------------------------------------------------- exact/choice

Canon = Any  # str | float | tuple of those


def _canon(value: Any) -> Canon:
    """A comparable form of an exact answer; raises _Malformed."""
    if isinstance(value, (list, tuple)):
        return tuple(_canon_scalar(v) for v in value)
    if isinstance(value, str):
        text = fold_text(value).strip("`'\" ").rstrip(".").strip("`'\" ")
        sized = re.fullmatch(r"torch\.size\((.*)\)", text)
        text = sized.group(1).strip() if sized else text
        if re.fullmatch(r"\[.*\]|\(.*\)", text):
            inner = text[1:-1].strip().rstrip(",")
            return tuple(_canon_scalar(v) for v in inner.split(",")) if inner else ()
        if re.fullmatch(r"\d+(\s*[,x×]\s*\d+)+", text):
            return tuple(_canon_scalar(v) for v in re.split(r"[,x×]", text))
        return _canon_scalar(text)
    return _canon_scalar(value)


def _canon_scalar(value: Any) -> Canon:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return _finite(value)
    if not isinstance(value, str):
        raise _Malformed(f"expected a value or a list of values, found {_kind(value)}")
    text = re.sub(r"\s+", "", fold_text(value)).strip("`'\"").replace('"', "'")
    try:
        return float(text) if re.fullmatch(r"[+-]?\d+(\.\d*)?(e[+-]?\d+)?", text) else text
    except ValueError:
        return text


def _read_choice(value: Any, question: Question) -> Canon:
    chosen = _canon_scalar(value) if not isinstance(value, (list, tuple)) else None
    if chosen not in {_canon_scalar(c) for c in question.choices}:
        options = ", ".join(question.choices)
        raise _Malformed(f"answered {_show(value)}, which is not one of the choices: {options}")
    return chosen


def _read_text(value: Any, question: Question) -> str:
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return "\n".join(str(v) for v in value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _Malformed(f"expected text, found {_kind(value)}")
    return str(value)


_READERS: dict[str, Callable[[Any, Question], Any]] = {
    "numeric": lambda value, q: read_number(value),
    "exact": lambda value, q: _canon(value),
    "choice": _read_choice,
    "text": _read_text,
    "manual": _read_text,
}


# ------------------------------------------------------------------------ grading


def _grade_numeric(candidates: tuple[float, ...], entry: Mapping[str, Any], q: Question) -> bool:
    target = float(entry["answer"])
    allowed = max(float(entry.get("tolerance", 0)), float(entry.get("rel_tolerance", 0)) * abs(target),
                  _EPS * max(1.0, abs(target)))
    return any(abs(c - target) <= allowed for c in candidates)


def _grade_exact(canon: Canon, entry: Mapping[str, Any], q: Question) -> bool:
    return canon in {_canon(a) for a in [entry["answer"], *entry.get("accept", ())]}


def _grade_choice(chosen: Canon, entry: Mapping[str, Any], q: Question) -> bool:
    return chosen in {_canon_scalar(a) for a in [entry["answer"], *entry.get("accept", ())]}


@functools.lru_cache(maxsize=1024)
def _term(term: str) -> re.Pattern[str]:
    """A rubric term as a regex: accents removed, whole words where a branch starts/ends with one."""
    branches = []
    for branch in _top_level_branches(_strip_accents(term.translate(_SUPERSCRIPTS))):
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
    return 0.0, _with_hint(f"answered {_show(value)}, which is not the expected answer.", entry)


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
                return (f"`{'.'.join(parts[:depth])}` in answers.yaml is {_kind(parent)}, "
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
        parsed = _READERS[q.type](value, q)
    except _Malformed as exc:
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
            _canon(a)
    elif not q.choices or not {_canon_scalar(a) for a in accepted} <= {_canon_scalar(c) for c in q.choices}:
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


# ------------------------------------------------------------------------ reading


class _AnswersLoader(yaml.SafeLoader):
    """safe_load without aliases (`*name`), so a small file cannot expand into a huge one."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed", mark)
        return super().compose_node(parent, index)


def load_answers(path: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, list[str]]:
    """Read a student's answers.yaml: (answers or None, problems in plain words)."""
    path = Path(path)
    name = path.name
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
            return None, [f"{name} is not a regular file (a link or a folder?); it was not read."]
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        with os.fdopen(os.open(path, flags), "rb") as fh:
            raw = fh.read(MAX_ANSWERS_BYTES + 1)
    except FileNotFoundError:
        return None, [f"there is no {name}; the written answers score 0 until you add it."]
    except OSError as exc:
        return None, [f"{name} could not be read ({exc.strerror})."]
    if len(raw) > MAX_ANSWERS_BYTES:
        return None, [f"{name} is larger than {MAX_ANSWERS_BYTES // 1024} KiB; it was not read."]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [f"{name} is not UTF-8 text (bad byte at position {exc.start}); "
                      "save it with UTF-8 encoding."]
    return parse_answers(text, name)


def parse_answers(text: str, name: str = "answers.yaml") -> tuple[dict[str, Any] | None, list[str]]:
    """Parse answers.yaml text (see `load_answers`)."""
    try:
        data = yaml.load(text, Loader=_AnswersLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        line = f"line {exc.problem_mark.line + 1}: " if exc.problem_mark else ""
        return None, [f"{name} is not valid YAML ({line}{exc.problem or exc.context}): check the indentation "
                      "(spaces, not tabs) and that every quote is closed."]
    except yaml.YAMLError as exc:
        return None, [f"{name} is not valid YAML ({exc})."]
    except RecursionError:
        return None, [f"{name} is nested too deeply to read."]
    except ValueError as exc:  # e.g. an integer with thousands of digits
        return None, [f"{name} holds a value that cannot be read ({exc})."]
    if data is None:
        return {}, [f"{name} holds no answers yet."]
    if not isinstance(data, dict):
        return None, [f"{name} must hold `key: value` pairs at the top level (like `quiz:`), "
                      f"but it holds {_kind(data)}."]
    return data, []


# ----------------------------------------------------------------------- template

_TYPE_HINTS = {
    "numeric": "a number",
    "exact": "a value, or a list like [1, 2]",
    "text": "your own words, English or Vietnamese; for several lines write | and indent them below",
    "manual": "your own words; the instructor scores this one",
}


def template_answers(questions: Sequence[Question]) -> str:
    """An answers.yaml with every question id and an empty value, prompts as comments."""
    tree: dict[str, Any] = {}
    for q in questions:
        *parents, leaf = q.id.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"question id `{q.id}` runs through another question's answer")
        if leaf in node:
            raise ValueError(f"question id `{q.id}` is used twice or also names a group")
        node[leaf] = q
    lines = ["# Your written answers. Fill in the value after each key; keep the keys as they are.",
             "# Text answers may be in English or Vietnamese. `grader check` tells you what is missing."]
    _emit(tree, 0, lines)
    return "\n".join(lines) + "\n"


def _emit(tree: Mapping[str, Any], indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for name, node in tree.items():
        if indent == 0:
            lines.append("")
        if isinstance(node, Question):
            hint = f"one of: {' | '.join(node.choices)}" if node.type == "choice" else _TYPE_HINTS[node.type]
            points = f"{node.points:g} point" + ("" if node.points == 1 else "s")
            lines.extend(f"{pad}# {row}" for row in textwrap.wrap(node.prompt, 86 - indent) or [""])
            lines.append(f"{pad}#   ({hint}; {points})")
            lines.append(f"{pad}{_yaml_key(name)}:")
        else:
            lines.append(f"{pad}{_yaml_key(name)}:")
            _emit(node, indent + 2, lines)


def _yaml_key(name: str) -> str:
    return yaml.safe_dump(name, default_flow_style=True).splitlines()[0]
