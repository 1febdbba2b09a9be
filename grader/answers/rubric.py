r"""Written answers (question type `text`) scored by the claims they make, not by words.

    grade_text(text, entry, points, prompt) -> TextGrade   score, concepts found/missed, review reasons
    (a rubric's own checks: `grader.answers.patterns.check_rubric`)

A rubric is a list of items, one per key point, each with its `points` and `concept` and:

    subject: [patterns]   what the point must be said of (optional)
    accept:  [patterns]   wordings of the point (`any` is the old name)
    reject:  [patterns]   wordings of its opposite (`none` is the old name)
    topic:   [patterns]   words that show the answer talks about the point (optional)
    all:     [patterns]   each must occur somewhere in the answer (optional)

The key's entry may also list `prompts` (the question in other languages), `min_words`,
`max_words`, and `full_with` (a question that asks to name items: this many key points earn
the full points, fewer earn their own). The rubric's data knows the lesson; this code and
`grader.answers.text` know only language. How an answer is read:

1. Folded (lower case, accents dropped) and cut into clauses (`answers_text.read`).
2. A match of `accept` or `reject` is said of the nearest subject (of any item of the question)
   before it in its clause, else the nearest after it, else the last one named in an earlier clause
   (not when the clause opens on "the other", "một cái"...: see `answers_text.DISTRIBUTIVES`, nor one
   named as a comparison's measure: "like an RNN", "như RNN", `answers_text.COMPARED`); with
   none named before it, it is taken as said of its own subject ("Everything is one big matrix
   product" answers a question about attention). An item's point counts only when said of its own
   subject; an item without `subject` takes any. Another item's point said of this item's subject,
   in a clause that says nothing of this item's own and does not name the other's subject, is this
   item's opposite (swapped roles: "the Key is what the token is looking for").
3. A negation word at most NEGATION_REACH words before a match, in its clause, not across a colon,
   bracket or "then"/"thì" (a condition's negation: "nếu không chia thì score lớn"), and outside
   every matched pattern, turns the match around: a negated point is no point (and a flag). A
   pattern that holds its own negation ("not real", "không có") is read as written, and another item's
   wording inside it, starting in it after its negation, or right after it as its object, is part of
   it ("can't compute the steps at the same time", "không biết token sau", "never has the future
   tokens available"). A point denied and followed by its own subject as a
   comparison's measure is said of that subject ("attention không có phụ thuộc tuần tự như RNN": the
   RNN has it). Where an item's accept and reject matches overlap, one that holds the other is the
   reading (the longer); two that cross both stand, a conflict. An
   opposite in a clause opened by "instead of", "thay vì" (`answers_text.ALTERNATIVES`) is set aside,
   not claimed.
4. An item scores when its point is said and neither its opposite nor a negated point is. The score
   is the sum, capped at the question's points (all of them from `full_with` points on). An answer
   that repeats the question, or strings key words together without a sentence, scores 0.

Patterns are Python regular expressions matched on the folded text; a top-level `|` branch
that starts (or starts with a group that starts) with a letter or digit matches whole words
("pad" does not match "keypad"; "k(_\w+)?" does not match "kind"); `A ... B` is A, then at
most GAP_WORDS words, then B, within one clause and never across a negation or a word
such as "prevents" (`answers_text.PREVENTIVES`); `{not}` is any negation word.

The grade is unsure (`reasons`: a person should review it) when a point is matched next to a
negation; when a point and its opposite are both said; when it earns points and also states an
opposite; when the score is partial, unless `_sure_partial` holds (points clearly said, the others
untouched: see there), or for a question that asks to name items `_every_item_read` (each item
the answer names is a point it earned); when it earns points but hedges, or
answers a question that asks for a list with bare terms of a word or two; when key words strung
together (`listing`) hold a term that names a subject and says its point; when it misses points
and is long (LONG_WORDS), argues by analogy, or sets a subject equal to a picture no pattern reads
("padding mask = ...", DEFINED_WORDS words or more), unless it contradicts each point it misses;
when a full score comes from fewer than `min_words` words; when it has more than `max_words`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import inf
from typing import Any

from grader.answers.binding import (
    Cover,
    Match,
    find,
    inside_a_denial,
    is_negated,
    measured_by_own,
    said_of,
    search,
    subject_mentions,
    within,
)
from grader.answers.listing import (
    bare_items,
    bare_terms,
    every_item_read,
    keyword_list,
    labels_key_words,
    mostly_terms,
    terse_claim,
)
from grader.answers.negation import negations
from grader.answers.text import (
    ALTERNATIVE,
    ANALOGY,
    LIKENESS,
    SHARED_BY_ALL,
    WORD,
    Text,
    analogy_frames,
    hedged,
    read,
    turns,
)
from grader.answers.values import strip_accents

_EPS = 1e-9
MIN_WORDS, MAX_WORDS, LONG_WORDS = 6, 120, 30
SURE_WORDS = 8
"""A partial score goes unflagged only in an answer of at least this many words (`_sure_partial`)."""
DEFINED_WORDS = 5
"""A subject set equal ("X = ...") to at least this many words that no pattern reads is a picture."""
COPY_SHARE = 0.8
"""An answer whose words are at least this share of the question's is the question copied."""

REASONS = {
    "negation": "a key point is stated next to a negation (\"not\", \"không\"...), which may turn it around",
    "conflict": "the answer states a key point and also its opposite",
    "mixed": "the answer earns points but also states the opposite of a key point",
    "partial": "partial credit: only some key points were recognised, and the others may be said in other words",
    "keywords": "it reads as key words strung together (scored 0), but a term in it names a subject and its point",
    "terms": "it names bare terms, a word or two each, without saying what they are for",
    "hedge": "it earns points but hedges (\"maybe\", \"chắc là\", a question mark, \"some say ..., but\")"
             " or says a part is forgotten, or corrects itself (\"I mean\", \"à nhầm\")",
    "paraphrase": "a long answer, or one that argues by analogy or a picture, that the patterns do not give full marks",
    "short": "very short for full marks", "long": "unusually long",
}


@dataclass(frozen=True)
class TextGrade:
    score: float
    found: tuple[str, ...]
    missed: tuple[str, ...]
    opposite: tuple[str, ...]
    """Concepts whose opposite the answer states (a subset of `missed`)."""
    reasons: tuple[str, ...]
    """Why a person should review the score, in plain words; empty when the grader is sure."""
    copied: bool = False
    """The answer repeats the question (or one of the key's `prompts`)."""


# ------------------------------------------------------------------------ scoring


@dataclass
class _Evidence:
    said: bool = False
    negated: bool = False
    opposite: bool = False
    unbound: bool = False
    named: bool = False
    """Its subject or its `topic` was named: the answer talks about the point."""


def grade_text(text: str, entry: Mapping[str, Any], points: float, prompt: str = "") -> TextGrade:
    rubric: Sequence[Mapping[str, Any]] = entry["rubric"]
    t = read(text)
    subjects = subject_mentions(find(t, rubric, "subject", ("subject",)))
    frames = analogy_frames(t)
    said = find(t, rubric, "accept", ("accept", "any")) + find(t, rubric, "reject", ("reject", "none"))
    claims = [m for m in _claims(said) if not any(a <= m.start < b for a, b in frames)]
    found_negations = negations(t)
    denying = [o for o in claims if o.kind == "accept" and within(found_negations, o.start, o.end)]
    claims = [m for m in claims if not inside_a_denial(m, denying, found_negations, t.folded)]
    spans = subjects + claims
    cover = Cover((m.start, m.end) for m in spans)
    topic_matches = find(t, rubric, "topic", ("topic",))
    topics = {m.item for m in topic_matches}
    evidence = [_Evidence(named=n in topics or any(s.item == n for s in subjects)) for n in range(len(rubric))]
    has_subject = [bool(item.get("subject")) for item in rubric]
    swapped: list[tuple[int, tuple[int, int]]] = []
    own_in_clause: set[tuple[int, tuple[int, int]]] = set()
    asked = _words(prompt, *(entry.get("prompts") or ()))
    turned = turns(t)
    for m in claims:
        clause = _clause(t, m.start)
        about = said_of(m, subjects, clause, t.folded) if has_subject[m.item] else m.item
        if m.kind == "reject" and (ALTERNATIVE.match(t.folded[clause[0]:clause[1]])
                                   or LIKENESS.search(t.folded, clause[0], m.start)):
            continue  # "... instead of one averaged view": the opposite is set aside, not claimed;
            # "Q giống câu search user gõ vào": an analogy's picture, not a claim
        negated = is_negated(m, found_negations, cover, t, clause)
        if negated and m.kind == "accept" and measured_by_own(m, subjects, t, clause):
            about, negated = m.item, False  # "không có phụ thuộc tuần tự như RNN": RNN has it
        if has_subject[m.item] and SHARED_BY_ALL.match(t.folded[clause[0]:clause[1]]) and not any(
                clause[0] <= s.start < m.start for s in subjects):
            about = m.item  # "both block future tokens": said of each subject, its own included
            if m.kind == "accept" and not negated:
                swapped += [(n, clause) for n in range(len(rubric)) if has_subject[n] and n != m.item]
        ev = evidence[m.item if about is None else about]
        if about is None and m.kind == "accept" and not negated:
            ev.unbound = True  # said of nothing named: read as said of its own subject
            continue
        if about is None and m.kind == "accept" and sum(has_subject) == len(rubric) == 2:
            ev.unbound = ev.negated = True  # denied of nothing named where two subjects are set side
            continue  # by side: "no step-by-step chain: all at once" says it of the other one (flagged)
        if about is not None and about != m.item:
            # Another item's point said of this item's subject: swapped roles, unless this
            # item's own point is also said in that clause, or the clause names both (a
            # relation: "queries are compared with the key"), or says the points of two other
            # items (a relation between them: "how well its label fits my question"), or the
            # clause names no subject and the answer never turns on itself: "..., the better a
            # label matches, the more of that book you read" tells how the roles work together.
            names_one = any(clause[0] <= x.start < clause[1] for x in subjects)
            if m.kind == "accept" and not negated and (names_one or turned) and not any(
                    x.item == m.item and clause[0] <= x.start < clause[1] for x in subjects) and len(
                    {x.item for x in claims if clause[0] <= x.start < clause[1] and x.kind == "accept"}
                    - {about}) < 2:
                swapped.append((about, clause))
            continue
        if m.kind == "accept":
            if negated:
                ev.negated = ev.opposite = True
            else:
                ev.said = True
                own_in_clause.add((m.item, clause))
        elif negated:
            ev.negated = ev.negated or not _in_words(t.folded[m.start:m.end], asked)
            # denying the opposite in the question's own words ("không đủ làm bằng chứng")
            # restates the question: no point, and nothing for a person to look at
        else:
            ev.opposite = True
    for index, clause in swapped:
        if (index, clause) not in own_in_clause:
            evidence[index].opposite = True
    full_with = entry.get("full_with")
    asks_for_a_list = bool(full_with) or sum(float(i.get("points", 0)) for i in rubric) > points + _EPS
    items = bare_items(t, [(c.start, c.end) for c in claims])
    listing = keyword_list(t, items, asks_for_a_list, len({m.item for m in claims}))
    if _copies_question(t, [prompt, *(entry.get("prompts") or ())]):
        return TextGrade(0.0, (), tuple(str(i["concept"]) for i in rubric), (), (), copied=True)
    scored, reasons = [], set()
    for item, ev in zip(rubric, evidence):
        all_ok = all(search(p, t) for p in item.get("all") or ())
        credited = (ev.said or ev.unbound) and not ev.opposite and all_ok and not listing
        scored.append(credited)
        if ev.negated:
            reasons.add("negation")
        if (ev.said or ev.unbound) and ev.opposite:
            reasons.add("conflict")
    score = min(float(points), sum(float(i["points"]) for i, ok in zip(rubric, scored) if ok))
    if full_with and sum(scored) >= full_with:
        score = float(points)
    missed = [n for n, ok in enumerate(scored) if not ok]
    if score > _EPS and any(evidence[n].opposite for n in missed):
        reasons.add("mixed")
    words = len(WORD.findall(t.folded))
    if _EPS < score < points - _EPS and not listing and not (
            _every_item_read(t, rubric, scored, claims, asked) if asks_for_a_list else _sure_partial(
                t, rubric, scored, evidence, claims, cover, found_negations, words, topic_matches)):
        reasons.add("partial")  # where credit is split, a person decides how much
    if listing and terse_claim(t, [(s.start, m.end) for m in claims if m.kind == "accept"
                                   for s in subjects if s.item == m.item and s.start < m.start]):
        reasons.add("keywords")  # "RNN tuần tự, attention song song": short claims, not terms
    if score > _EPS and hedged(t.folded):
        reasons.add("hedge")
    if score > _EPS and (labels_key_words(t) or (bare_terms(items) if asks_for_a_list
                                                  else mostly_terms(t, [(c.start, c.end) for c in claims]))):
        reasons.add("terms")  # "masks, seq_len, eval, dtype", "Keywords: ...": named, nothing said of them
    refuted = all(evidence[n].opposite and not (evidence[n].said or evidence[n].unbound or evidence[n].negated)
                  for n in missed)  # each point missed is contradicted ("the Key is what the token is looking for")
    if score < points - _EPS and not listing and not refuted and (words >= LONG_WORDS or ANALOGY.search(t.folded)
                                                  or _defined_unread(t, subjects, claims, missed)):
        reasons.add("paraphrase")
    if score >= points - _EPS and words < int(entry.get("min_words", MIN_WORDS)):
        reasons.add("short")
    if words > int(entry.get("max_words", MAX_WORDS)):
        reasons.add("long")
    concept = [str(i["concept"]) for i in rubric]
    return TextGrade(
        score=score,
        found=tuple(concept[n] for n, ok in enumerate(scored) if ok),
        missed=tuple(concept[n] for n in missed),
        opposite=tuple(concept[n] for n in missed if evidence[n].opposite and not evidence[n].said),
        reasons=tuple(REASONS[r] for r in REASONS if r in reasons),
    )


def _sure_partial(t: Text, rubric: Sequence[Mapping[str, Any]], scored: Sequence[bool],
                  evidence: Sequence[_Evidence], claims: Sequence[Match], spans: Cover,
                  found_negations: Sequence[tuple[int, int]], words: int, topics: Sequence[Match]) -> bool:
    """A partial score the grader may stand by without a person: each point credited is
    said of what it is about (its subject named, or its `topic` in the clause that says it);
    each missed one has a `subject`
    or `topic` and is silent (not named, none of its wordings occurs, no other point is said
    of its subject); every negation lies inside a matched wording ("không bị saturated") or in
    a clause that states no point ("..., which it shouldn't be able to");
    SURE_WORDS to LONG_WORDS words, no analogy, no hedge."""
    if not 0 < sum(scored) < len(rubric) or not SURE_WORDS <= words < LONG_WORDS:
        return False
    for n, credited in enumerate(scored):
        ev = evidence[n]
        if credited:
            if not ev.named or not (rubric[n].get("subject") or _named_where_said(t, n, claims, topics)):
                return False  # the point said must be said of what it is about, not met in passing
            continue
        if not (rubric[n].get("subject") or rubric[n].get("topic")):
            return False  # silence about a point can be told only by the words that name it
        if ev.named or ev.said or ev.unbound or ev.negated or ev.opposite:
            return False
        if any(m.item == n for m in claims):
            return False
    if ANALOGY.search(t.folded) or hedged(t.folded):
        return False
    return all(spans.holds(a, b) or not _clause_claims(t, a, claims) for a, b in found_negations)


def _every_item_read(t: Text, rubric: Sequence[Mapping[str, Any]], scored: Sequence[bool],
                     claims: Sequence[Match], asked: set[str]) -> bool:
    """A partial score for a question that asks to name items, which the grader may stand by: each
    item the answer names holds a wording of a point it earned ("Cần test mask, giới hạn seq_len
    và gọi eval()": three of seven), so none can be another point in other words."""
    read = Cover((m.start, m.end) for m in [*claims, *find(t, rubric, "all", ("all",))]
                 if scored[m.item] and m.kind != "reject")
    return every_item_read(t, read, asked)


def _defined_unread(t: Text, subjects: Sequence[Match], claims: Sequence[Match], missed: Sequence[int]) -> bool:
    """Whether a missed point's subject is set equal to a picture no pattern reads: "padding mask =
    đừng nghe mấy cái ghế trống trong cuộc họp" may be an analogy without an analogy word."""
    for s in subjects:
        a, b = _clause(t, s.start)
        rest = t.folded[s.end:b]
        if s.item in missed and rest.lstrip().startswith("=") and len(WORD.findall(rest)) >= DEFINED_WORDS \
                and not any(a <= c.start < b for c in claims):
            return True
    return False


def _named_where_said(t: Text, n: int, claims: Sequence[Match], topics: Sequence[Match]) -> bool:
    """Whether a wording of item `n` is said in a clause that names its topic: "giúp đồng bộ
    gradient nhanh hơn" is fast, but not said of what the point is about."""
    return any(_clause(t, m.start) == _clause(t, x.start) for m in claims if m.item == n and m.kind == "accept"
               for x in topics if x.item == n)


def _clause(t: Text, at: int) -> tuple[int, int]:
    i = bisect_right(t.clauses, (at, inf)) - 1  # the last clause that starts at or before `at`
    if i >= 0 and at < t.clauses[i][1]:
        return t.clauses[i]
    return next(c for c in t.clauses if c[0] <= at < c[1])


def _clause_claims(t: Text, at: int, claims: Sequence[Match]) -> bool:
    """Whether the clause holding position `at` states any point or its opposite."""
    a, b = _clause(t, at)
    return any(a <= m.start < b for m in claims)


def _claims(matches: list[Match]) -> list[Match]:
    """Where an item's accept and reject overlap, one that holds the other is the reading, the
    longer (a tie goes to the reject): "without scaling, softmax saturates" is not "scaling ...
    saturates". Two that cross (each runs past the other) both stand, a conflict a person reads:
    in "vì gradient quá lớn sẽ làm softmax bị saturated", "gradient quá lớn" (large gradients,
    an opposite) and "lớn ... saturated" (large scores saturate, the point) share a word."""
    kept, by_start = [], sorted(matches, key=lambda o: o.start)
    starts = [o.start for o in by_start]
    longest = max((o.end - o.start for o in matches), default=0)
    for m in matches:  # a rival starts less than the longest match's length before m (linear, not quadratic)
        nearby = by_start[bisect_left(starts, m.start - longest):bisect_left(starts, m.end)]
        rivals = [o for o in nearby if o.item == m.item and o.kind != m.kind and m.start < o.end]
        if not any(_reads_over(o, m) for o in rivals):
            kept.append(m)
    return kept


def _reads_over(o: Match, m: Match) -> bool:
    """Whether `o`, an overlapping match of the other kind for the same item, is the reading
    where `m` is."""
    length, other = m.end - m.start, o.end - o.start
    if o.start <= m.start and m.end <= o.end:  # o holds m
        return other > length or (other == length and o.kind == "reject")
    return False  # m holds o, or they cross


def _words(*texts: str) -> set[str]:
    return {w for text in texts for w in WORD.findall(strip_accents(text).lower())}


def _in_words(text: str, words: set[str]) -> bool:
    return bool(words) and set(WORD.findall(text)) <= words


def _copies_question(t: Text, prompts: Sequence[str]) -> bool:
    words = set(WORD.findall(t.folded))
    for prompt in prompts:
        asked = _words(prompt)
        if len(words) >= 3 and len(words & asked) >= COPY_SHARE * len(words):
            return True
    return False
