"""Reading a student's answer as its question's type: text folded for comparison,
numbers out of text, lists and choices in canonical form. The formats are listed in
`grader.answers.grade`; a value that cannot be read raises `Malformed`.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, cast

from grader.assignment import Question
from grader.errors import SubmissionError


class Malformed(SubmissionError, ValueError):
    """An answer that is present but cannot be read as its question's type."""


# --------------------------------------------------------------------------- text


SUPERSCRIPTS = str.maketrans({"²": "^2", "³": "^3", "’": "'", "‘": "'"})


def fold_text(text: str) -> str:
    """Lower-case, drop accents (đ -> d), collapse whitespace: "Tương  Lai" -> "tuong lai"."""
    return " ".join(strip_accents(text.translate(SUPERSCRIPTS)).lower().split())


def strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    return kept.replace("đ", "d").replace("Đ", "D")


def show(value: Any) -> str:
    """The student's own answer, short, for a message."""
    if isinstance(value, (list, tuple)):
        text = "[" + ", ".join(show(v) for v in value) + "]"
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


def kind_of(value: Any) -> str:
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
    """Every value the answer may mean (several only for KB/MB/GB/TB); raises Malformed."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise Malformed(f"expected a number, found {kind_of(value)}")
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
        raise Malformed(f"{show(value)} is not a finite number of a sensible size")
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
        return float(cast(float, node.value))
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
    for need_unit in (True, False):  # a quantity with a unit first, then any
        values = {_quantity(q) for q, unit in quantities if unit or not need_unit} - {None}
        if len(values) == 1:
            return values.pop()  # type: ignore[return-value]
    if not quantities:
        raise Malformed(f"could not find a number in {show(original)}")
    distinct = list(dict.fromkeys(q for q, _ in quantities))
    if len(distinct) == 1:
        raise Malformed(f"could not read a number of sensible size in {show(original)}")
    shown = ", ".join(distinct)
    raise Malformed(f"found several numbers ({shown}) in {show(original)}: write only the one you mean")


# -------------------------------------------------------------------- exact/choice

Canon = Any  # str | float | tuple of those


def canon(value: Any) -> Canon:
    """A comparable form of an exact answer; raises Malformed."""
    if isinstance(value, (list, tuple)):
        return tuple(canon_scalar(v) for v in value)
    if isinstance(value, str):
        text = fold_text(value).strip("`'\" ").rstrip(".").strip("`'\" ")
        sized = re.fullmatch(r"torch\.size\((.*)\)", text)
        text = sized.group(1).strip() if sized else text
        if re.fullmatch(r"\[.*\]|\(.*\)", text):
            inner = text[1:-1].strip().rstrip(",")
            return tuple(canon_scalar(v) for v in inner.split(",")) if inner else ()
        if re.fullmatch(r"\d+(\s*[,x×]\s*\d+)+", text):
            return tuple(canon_scalar(v) for v in re.split(r"[,x×]", text))
        return canon_scalar(text)
    return canon_scalar(value)


def canon_scalar(value: Any) -> Canon:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return _finite(value)
    if not isinstance(value, str):
        raise Malformed(f"expected a value or a list of values, found {kind_of(value)}")
    text = re.sub(r"\s+", "", fold_text(value)).strip("`'\"").replace('"', "'")
    try:
        return float(text) if re.fullmatch(r"[+-]?\d+(\.\d*)?(e[+-]?\d+)?", text) else text
    except ValueError:
        return text


def _read_choice(value: Any, question: Question) -> Canon:
    chosen = canon_scalar(value) if not isinstance(value, (list, tuple)) else None
    if chosen not in {canon_scalar(c) for c in question.choices}:
        options = ", ".join(question.choices)
        raise Malformed(f"answered {show(value)}, which is not one of the choices: {options}")
    return chosen


def _read_text(value: Any, question: Question) -> str:
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return "\n".join(str(v) for v in value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise Malformed(f"expected text, found {kind_of(value)}")
    return str(value)


READERS: dict[str, Callable[[Any, Question], Any]] = {
    "numeric": lambda value, q: read_number(value),
    "exact": lambda value, q: canon(value),
    "choice": _read_choice,
    "text": _read_text,
    "manual": _read_text,
}


