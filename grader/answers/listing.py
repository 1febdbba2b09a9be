"""Answers that list terms instead of making claims: "matmul, GPU, O(1)", "Keywords: mask, eval".

Read on the folded text (`answers.text.Text`), with the spans of what the rubric's patterns
matched (a function word inside a matched wording, "tuan tu", is part of a term).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence

from grader.answers.binding import Cover
from grader.answers.text import ALTERNATIVE, NEGATION, WORD, Text, function_words
from grader.answers.values import strip_accents

Span = tuple[int, int]
FORMULA = re.compile(r"[=:<>()\[\]/^*+]|->|→")
ITEM_WORD = re.compile(r"\w+(?:\([^()\s]*\))?")
"""A word of a listed term; a call or a big-O with its brackets is one ("O(1)", "O(n^2)")."""
LIST_ITEMS = re.compile(r"[,;/\n]+")
"""What separates the items of a list of terms ("mask, seq_len; eval/dtype")."""
COMPARATIVE = re.compile(r"(?<=\w )hon(?=\s*(?:[,;/\n]|\Z))")
""""hơn" closing a listed term: "nhanh hơn" is one term (faster), not a sentence."""
JOINS = re.compile(r"va|voi|and|or|hoac")
"""A word that joins two terms into one listed term ("SRAM với HBM"), as the folded text has it."""
ITEM_JOINS = re.compile(r"\b(?:va|voi|and|or|hoac|plus|also|with|cung nhu|as well as)\b|[&+]")
"""What joins two named items inside a clause ("test mask và giới hạn seq_len", "eval + rollback")."""
KEY_WORDS = r"key ?words?|(?:cac )?tu khoa"
"""What a student calls a list of key words ("Keywords:", "Các từ khóa:"), as the folded text has it."""
HEADING = re.compile(r"(?<![^\W\d_])\W*(?:y chinh|tom lai|tl;? ?dr|summary|in short|key ?points?|"
                     + KEY_WORDS + r"|point \d+|y \d+)\s*[:\-]\s*")
"""A heading inside a structured answer ("Ý chính:", "Tóm lại:", "TL;DR:", "Point 2 -"): it
structures a list, it is not one of its terms."""
LIST_LABEL = re.compile(r"^\W*\w+(?:[-\s]+\w+){0,2}\s*:(?!\S)")
"""A label of up to three words that opens a list ("keywords:", "các từ khóa:", "multi-head:"), not
one of its items."""


KEY_WORDS_LABEL = re.compile(r"(?<![^\W\d_])(?:" + KEY_WORDS + r")\s*:")
"""A student's own label on a list of key words ("Keywords: mask, seq_len, eval"), anywhere in
the answer: what follows it names terms rather than says anything of them."""


def labels_key_words(t: Text) -> bool:
    return bool(KEY_WORDS_LABEL.search(t.folded))


def bare_items(t: Text, matched: Sequence[Span]) -> list[list[str]] | None:
    """The answer's comma-separated items (their words), or None where it has a function word
    outside the matched wordings: a sentence, not a list of terms."""
    after = label.end() if (label := LIST_LABEL.match(t.folded)) else 0  # "keywords: mask, eval"
    bounds = [after, *(x for m in LIST_ITEMS.finditer(t.folded, after) for x in m.span()), len(t.folded)]
    spans = [s for s in (_after_heading(t, a, b) for a, b in zip(bounds[::2], bounds[1::2]))
             if WORD.search(t.folded, *s)]
    headings = [m.span() for m in HEADING.finditer(t.folded, after)]
    if any(not COMPARATIVE.match(t.folded, w.start()) and not (len(spans) >= 3 and _inside_a_short_term(t, w, spans))
           and not any(a <= w.start() < b for a, b in headings) for w in _outside(function_words(t, after), matched)):
        return None
    return [ITEM_WORD.findall(t.original[a:b].lower()) for a, b in spans]


def _after_heading(t: Text, a: int, b: int) -> Span:
    """An item without the heading that opens its line ("Tóm lại: multi-head attention")."""
    m = HEADING.match(t.folded, a, b)
    return (m.end(), b) if m else (a, b)


def _inside_a_short_term(t: Text, w: re.Match[str], spans: Sequence[Span]) -> bool:
    """Whether function word `w` sits in a listed term of two words (`spans`, the list's terms):
    "on dinh" is "ổn định" (stable), "do dai" "độ dài" (length); or joins the two words of a
    term of three ("SRAM với HBM", "read and write"). A negation still denies."""
    if NEGATION.fullmatch(w.group()):
        return False
    for a, b in spans:
        if a <= w.start() and w.end() <= b:
            words = WORD.findall(t.folded, a, b)
            return len(words) == 2 or (len(words) == 3 and words[1] == w.group() and bool(JOINS.fullmatch(w.group())))
    return False


def keyword_list(t: Text, items: list[list[str]] | None, asks_for_a_list: bool, points_touched: int) -> bool:
    """Key words strung together without a sentence, no function word: three or more
    comma-separated terms of at most three words ("matmul, GPU, O(1) sequential ops"), or four
    or more of at most four (Vietnamese writes a noun in syllables: "ma trận tam giác") where
    no term is a formula ("weight ≠ nguyên nhân" is a claim), unless the question asks to name
    items (q10); or one clause of four words or more, no formula, touching two key points or
    more. `items`: `bare_items`."""
    if items is None:
        return False
    longest = 4 if len(items) >= 4 and not FORMULA.search(t.folded) else 3  # "PAD, ma trận tam giác, softmax, -inf"
    if not asks_for_a_list and len(items) >= 3 and all(len(i) <= longest for i in items):
        return True
    return (len(WORD.findall(t.folded)) >= 4 and len(t.clauses) == 1 and not FORMULA.search(t.folded)
            and points_touched >= 2)


def mostly_terms(t: Text, matched: Sequence[Span]) -> bool:
    """Four or more bare terms in a row (at most three words, no function word outside `matched`)
    with at most a clause before and one after them: key words between thin sentences ("Memory,
    HBM, tiling, throughput, GPU, kernel; không có thì chậm", "liên quan tới HBM, SRAM, tiling,
    kernel, throughput. Nói chung là tối ưu"), not a claim made of each. Linear in the answer's
    length: an answer may be 256 KB of commas."""
    depth = _depths(t.folded)  # a bracketed list ("[True, False]") is one item
    cuts = [m.span() for m in LIST_ITEMS.finditer(t.folded) if depth[m.start()] == 0]
    bounds = [0, *(x for span in cuts for x in span), len(t.folded)]
    spans = [(a, b) for a, b in zip(bounds[::2], bounds[1::2]) if WORD.search(t.folded, a, b)]
    if len(spans) < 5:
        return False
    loose = [w.start() for w in _outside(function_words(t), matched)]
    bare = [len(WORD.findall(t.folded, a, b)) <= 3 and bisect_left(loose, a) == bisect_left(loose, b)
            for a, b in spans]
    return all(bare[1:-1]) and sum(bare) >= 4


def _depths(text: str) -> list[int]:
    """How many brackets are open at each position of `text`."""
    out, depth = [], 0
    for char in text:
        out.append(depth)
        depth = depth + 1 if char in "([{" else max(0, depth - 1) if char in ")]}" else depth
    return out


def _outside(words: Iterable[re.Match[str]], spans: Sequence[Span]) -> list[re.Match[str]]:
    """The words (found in order) that lie inside none of `spans`: a function word inside a
    matched wording ("tuan tu") is part of a term. One sweep, not a search per word."""
    ordered, reach, k, out = sorted(spans), -1, 0, []
    for w in words:
        while k < len(ordered) and ordered[k][0] <= w.start():
            reach = max(reach, ordered[k][1])
            k += 1
        if reach < w.end():
            out.append(w)
    return out


def bare_terms(items: list[list[str]] | None) -> bool:
    """Three or more terms of a word or two each ("mask tests, seq_len cap, eval"). Vietnamese
    writes a word in one or two syllables, so three syllables that all carry its marks are
    still a bare noun ("kiểu dữ liệu", "độ dài chuỗi"); "giới hạn seq_len" says what to do."""
    return items is not None and len(items) >= 3 and all(
        len(i) <= 2 or (len(i) == 3 and all(strip_accents(w) != w for w in i)) for i in items)


def terse_claim(t: Text, said_of: Sequence[Span]) -> bool:
    """Whether one listed term names a subject and says its point ("RNN tuần tự, attention song
    song"): a short claim, not a term. `said_of`: (subject's start, point's end) pairs."""
    bounds = [0, *(m.end() for m in LIST_ITEMS.finditer(t.folded)), len(t.folded)]
    return any(a <= start and end <= b for a, b in zip(bounds, bounds[1:]) for start, end in said_of)


def every_item_read(t: Text, read: Cover, asked: set[str]) -> bool:
    """Whether each item an answer names (its clauses, cut again where `ITEM_JOINS` joins two
    outside brackets) meets a wording in `read`, unless it only repeats the question's words
    (`asked`) or sets something aside ("thay vì tự viết loop"): nothing in it is left that could
    be an item said in other words."""
    depth = _depths(t.folded)
    for a, b in t.clauses:
        if ALTERNATIVE.match(t.folded[a:b]):
            continue
        cuts = [a, *(x for m in ITEM_JOINS.finditer(t.folded, a, b) if depth[m.start()] == 0 for x in m.span()), b]
        for x, y in zip(cuts[::2], cuts[1::2]):
            if any(w not in asked for w in WORD.findall(t.folded, x, y)) and not read.meets(x, y):
                return False
    return True
