"""Rubric patterns compiled to regular expressions on folded text (see `grader.answers.rubric`).

    term(pattern) -> re.Pattern   accents removed, whole words, `A ... B` gaps, `{not}`
    reading(pattern, text)        that regex, or its diacritics-aware one, and the text it reads
    compile_key(key)              every pattern of a key compiled once, before forking graders
    check_rubric(rubric, points, full_with)  raises ValueError for a broken rubric
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from grader.answers.text import CODED_FORMS, NEGATION, NEGATION_WORDS, NOT, Text, canon_tones, code_marks
from grader.answers.values import SUPERSCRIPTS, strip_accents

_EPS = 1e-9
GAP_WORDS = 8
"""`A ... B`: at most this many words between A and B."""


@functools.lru_cache(maxsize=4096)
def term(pattern: str, marked: bool = False) -> re.Pattern[str]:
    """A rubric pattern as a regex on lower-case text: accents removed, whole words where a branch starts or
    ends with one, `A ... B` = A then at most GAP_WORDS words then B, `{not}` any negation,
    "not" also its contraction ("not real" is "aren't real").

    `marked`: for `Text.marked`, an answer written with diacritics. A letter the pattern writes
    with a diacritic must be written with it ("chờ" is not "cho"); one it writes without any
    matches it with any ("token", "khong")."""
    pattern = _by_letters(pattern.translate(SUPERSCRIPTS), str.lower)  # the texts read are lower case
    pattern = re.sub(r"(?<![\\\w{])not\b", r"(?:not|\\w*n't)", pattern)
    pattern = (code_marks(_by_letters(pattern, canon_tones)) if marked else strip_accents(pattern)).replace(
        "{not}", NOT)
    parts = [_whole_words(p.strip()) for p in pattern.split(" ... ")]
    gap = rf"(?:\W+(?!{NEGATION_WORDS}\b|\w*n't\b)\w+){{0,{GAP_WORDS}}}?\W*"
    regex = gap.join(f"(?:{p})" for p in parts)
    return re.compile(_any_marks(regex) if marked else regex)  # no IGNORECASE: it makes `re` compile
    # "[a-z]" through a 64K bitmap ("k" folds to the Kelvin sign), a third of the key's compile time


_LOOKAROUND = re.compile(r"\(\?<?[!=](?:[^()]|\([^()]*\))*\)")


@functools.cache
def writes_a_negation(pattern: str) -> bool:
    """Whether a pattern writes a negation of its own (`{not}`, "không", "can't"), outside its
    look-arounds: a negation inside its match is then its wording, not one its gap let in."""
    literal = strip_accents(_LOOKAROUND.sub("", pattern)).lower()
    return "{not}" in literal or "n't" in literal or "n''t" in literal or bool(NEGATION.search(literal))


def reading(pattern: str, t: Text) -> tuple[re.Pattern[str], str]:
    """The regex of a pattern and the text it reads. An answer written with diacritics
    (`Text.accented`) is read with them (`Text.marked`) by a pattern that writes some; a
    pattern that writes none reads the folded text, where each of its letters matches that
    letter with any mark: the same matches as `term(pattern, marked=True)` on Vietnamese,
    and nothing more to compile."""
    if t.accented and _writes_marks(pattern):
        return term(pattern, marked=True), t.marked
    return term(pattern), t.folded


PATTERN_FIELDS = ("subject", "accept", "any", "reject", "none", "topic", "all")


def compile_key(key: Mapping[str, Any]) -> int:
    """Compile every rubric pattern of an answer key, in each reading an answer can need,
    and return how many: a process that forks graders (`grader.batch.template`) pays the
    compilation (a second or two of CPU for the lesson's key) once for all of them."""
    patterns = {p for entry in key.values() if isinstance(entry, Mapping)
                for item in entry.get("rubric") or () if isinstance(item, Mapping)
                for name in PATTERN_FIELDS for p in item.get(name) or () if isinstance(p, str)}
    for pattern in patterns:
        _compile_readings(pattern)
    return len(patterns)


def _compile_readings(pattern: str) -> None:
    """Compile the pattern in each reading `reading` can ask for (raises re.error)."""
    term(pattern)
    if _writes_marks(pattern):
        term(pattern, marked=True)


@functools.lru_cache(maxsize=4096)
def _writes_marks(pattern: str) -> bool:
    plain = pattern.translate(SUPERSCRIPTS)
    return strip_accents(plain) != plain


def _by_letters(pattern: str, change: Callable[[str], str]) -> str:
    """Apply `change` to the runs of letters of a regex, leaving escapes ("\\w", "\\b") and
    extensions ("(?P<", "(?i") alone."""
    return re.sub(r"(?<!\\)(?<!\(\?)[^\W\d_]+", lambda m: change(m.group()), pattern)


def _any_marks(regex: str) -> str:
    """Each plain vowel (and "d") of a regex, outside escapes, also matches its forms with
    diacritics, as `code_marks` writes them."""
    out, i, in_class = [], 0, False
    while i < len(regex):
        char = regex[i]
        if char == "\\":
            out.append(regex[i:i + 2])
            i += 2
            continue
        ranged = regex[i + 1:i + 2] == "-" or regex[i - 1:i] == "-"
        if char.lower() in CODED_FORMS and not (in_class and ranged):
            first, last = CODED_FORMS[char.lower()]
            out.append(f"{char}{first}-{last}" if in_class else f"[{char}{first}-{last}]")
        else:
            out.append(char)
            in_class = (in_class and char != "]") or (not in_class and char == "[")
        i += 1
    return "".join(out)


def _whole_words(pattern: str) -> str:
    branches = []
    for branch in top_level_branches(pattern):
        starts_word = bool(re.match(r"\(?(\?:)?\w", branch))
        if starts_word:
            branch = r"\b" + branch
        if re.search(r"(?<!\\)\w$", branch):
            branch += r"\b"
        elif starts_word:
            branch += r"(?!\w)"  # "k(_\w+)?" is "k" or "k_j", never the start of "kind"
        branches.append(branch)
    return "|".join(branches)


def top_level_branches(pattern: str) -> list[str]:
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


def check_rubric(rubric: Any, points: float, full_with: Any = None) -> None:
    """Raise ValueError naming what is wrong with a text question's rubric (and its `full_with`)."""
    if not isinstance(rubric, list) or not rubric:
        raise ValueError("a text question needs a non-empty `rubric` list")
    if full_with is not None and (isinstance(full_with, bool) or not isinstance(full_with, int)
                                  or not 1 <= full_with <= len(rubric)):
        raise ValueError(f"`full_with` must be a whole number of key points, 1 to {len(rubric)}")
    total = 0.0
    for n, item in enumerate(rubric, 1):
        if not isinstance(item, Mapping) or not isinstance(item.get("concept"), str):
            raise ValueError(f"rubric item {n} needs a `concept` name")
        value = item.get("points")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"rubric item {n} needs positive `points`")
        if not (item.get("accept") or item.get("any") or item.get("all")):
            raise ValueError(f"rubric item {n} needs `accept` (or `any` or `all`) patterns")
        unknown = set(item) - {"points", "concept", *PATTERN_FIELDS}
        if unknown:
            raise ValueError(f"rubric item {n}: unknown field(s) {sorted(unknown)}")
        for name in PATTERN_FIELDS:
            patterns = item.get(name) or []
            if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
                raise ValueError(f"rubric item {n}: `{name}` must be a list of words or regexes")
            for p in patterns:
                try:
                    _compile_readings(p)
                except re.error as exc:
                    raise ValueError(f"rubric item {n}: {p!r} is not a valid regular expression "
                                     f"({exc})") from None
        total += value
    if full_with is None and total < points - _EPS:
        raise ValueError(f"the rubric's points add up to {total}, less than the question's {points}")
