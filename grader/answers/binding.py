"""Which subject a matched wording is said of, and whether a negation turns it around.

The rules are steps 2 and 3 of `grader.answers.rubric`'s docstring; this module applies them to
the matches of one answer (`find`), and `rubric` weighs what they say into a score.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from math import inf
from typing import Any

from grader.answers.patterns import reading, writes_a_negation
from grader.answers.text import (
    CONSEQUENCE,
    DENIED_AFTER,
    NEGATION_REACH,
    SHORT_REACH,
    WORD,
    Text,
    compared,
    distributive,
)

OBJECT_GAP = 1
"""At most this many words between a denied wording and a wording that is its object ("never has the ...")."""
_OBJECT = re.compile(rf" (?:\w+ ){{0,{OBJECT_GAP}}}")
SHORT_GAP = 6
"""At most this many words between a point and the subject it is measured by ("... như RNN")."""


Span = tuple[int, int]


def within(spans: Sequence[Span], a: int, b: int) -> Sequence[Span]:
    """The spans of `spans` (sorted, as `negation.negations` gives them) that lie inside [a, b)."""
    return [(x, y) for x, y in spans[bisect_left(spans, (a, -1)):bisect_right(spans, (b, inf))] if y <= b]


class Cover:
    """Where a set of spans (an answer's matches) lies, asked in log time: a long answer has many."""

    def __init__(self, spans: Iterable[Span]) -> None:
        ordered = sorted(spans)
        self._starts = [a for a, _ in ordered]
        self._reach = list(accumulate((b for _, b in ordered), max))  # the furthest end so far

    def holds(self, a: int, b: int) -> bool:
        """Whether [a, b) lies inside one of the spans."""
        i = bisect_right(self._starts, a)  # the spans that start at or before a
        return i > 0 and self._reach[i - 1] >= b

    def meets(self, a: int, b: int) -> bool:
        """Whether one of the spans overlaps [a, b)."""
        i = bisect_left(self._starts, b)  # the spans that start before b
        return i > 0 and self._reach[i - 1] > a


@dataclass(frozen=True)
class Match:
    start: int
    end: int
    item: int
    kind: str
    """subject | accept | reject"""
    denies: bool = False
    """Its pattern writes a negation of its own (`patterns.writes_a_negation`)."""


def find(t: Text, rubric: Sequence[Mapping[str, Any]], kind: str, aliases: tuple[str, ...]) -> list[Match]:
    found = []
    for n, item in enumerate(rubric):
        for pattern in (p for key in aliases for p in item.get(key) or ()):
            regex, text = reading(pattern, t)
            denies = writes_a_negation(pattern)
            for a, b in t.clauses:
                found += [Match(a + m.start(), a + m.end(), n, kind, denies)
                          for m in regex.finditer(text[a:b]) if m.end() > m.start()]
    return found


def search(pattern: str, t: Text) -> bool:
    regex, text = reading(pattern, t)
    return regex.search(text) is not None


def subject_mentions(matches: list[Match]) -> list[Match]:
    """Subject mentions without overlaps: the longest wins, then the earliest item."""
    kept: list[Match] = []
    for m in sorted(matches, key=lambda m: (-(m.end - m.start), m.item, m.start)):
        if all(m.end <= k.start or m.start >= k.end for k in kept):
            kept.append(m)
    return sorted(kept, key=lambda m: m.start)


def said_of(m: Match, subjects: list[Match], clause: tuple[int, int], folded: str) -> int | None:
    """The item whose subject the match is said of (one its own wording names first), None if none."""
    a, b = clause
    named = [s for s in subjects if m.start <= s.start and s.end <= m.end]  # "rnn ... cũng song song"
    if named:
        return named[0].item
    before = [s for s in subjects if a <= s.start and s.end <= m.start]
    if before:
        return before[-1].item
    after = [s for s in subjects if s.start >= m.end and s.end <= b]
    if after:
        return after[0].item
    earlier = [s for s in subjects if s.end <= a and not compared(folded, s.start)]
    if not earlier or distributive(folded[a:b], folded):
        return None  # "..., the other hides future tokens": not said of the last one named
    return earlier[-1].item


def measured_by_own(m: Match, subjects: list[Match], t: Text, clause: tuple[int, int]) -> bool:
    """Whether a point is followed, in its clause, by its own subject as the measure of a comparison:
    "no step-by-step dependency like an RNN" denies it of one thing and says it of the RNN."""
    return any(s.item == m.item and m.end <= s.start < clause[1] and compared(t.folded, s.start)
               and len(WORD.findall(t.folded[m.end:s.start])) <= SHORT_GAP for s in subjects)


def is_negated(m: Match, negations: Sequence[Span], spans: Cover, t: Text, clause: tuple[int, int]) -> bool:
    """Whether a negation turns match `m` around (`negations` sorted, `spans` the answer's matches)."""
    if DENIED_AFTER.match(t.folded, m.end, clause[1]):
        return True  # "eval mode thì không cần": said, then denied
    if m.kind == "accept" and not m.denies and within(negations, m.start, m.end):
        return True  # a negation that the pattern's gap let in: "mỗi head ko học quan hệ khác nhau"
        # (an accept only: a reject that reads on past its claim, to outweigh an accept over the
        # same words, may take in a negation that belongs to the next claim)
    for start, end in within(negations, clause[0], m.start):
        if spans.holds(start, end):
            continue  # a pattern that holds its own negation, or a subject such as "k"
        between = t.folded[end:m.start]
        if re.search(r"[:()\[\]—–]", between) or CONSEQUENCE.search(between):
            continue  # "no recurrence: the whole sequence ..." - a colon or a bracket ends its reach,
            # and a condition's negation stops at its consequence: "nếu không chia thì score lớn"
        if len(WORD.findall(between)) <= SHORT_REACH.get(t.folded[start:end], NEGATION_REACH):
            return True
    return False


def inside_a_denial(m: Match, claims: Sequence[Match], found_negations: Sequence[tuple[int, int]],
                    folded: str) -> bool:
    """Whether the match lies inside a longer wording of another item that holds its own negation, or
    starts inside one after its negation, or is the object that follows one (OBJECT_GAP words at
    most): in "can't compute the steps at the same time", said of an RNN, "at the same time" is part
    of the RNN's point, not attention's; in "không biết token sau", "biết token sau" is part of
    "không biết", the inference point; in "it never has the future tokens available", so is
    "future tokens available"."""
    def denies(o: Match, before: int) -> bool:
        return bool(within(found_negations, o.start, min(o.end, before)))
    return any(o.item != m.item and o.kind == "accept" and o.start <= m.start and (
        (m.start < o.end and m.end <= o.end and o.end - o.start > m.end - m.start and denies(o, o.end))
        or (m.start < o.end < m.end and denies(o, m.start))
        or (o.end <= m.start and _OBJECT.fullmatch(folded, o.end, m.start) is not None and denies(o, o.end)))
        for o in claims)
