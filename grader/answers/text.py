"""Reading a written answer: folded, cut into clauses, its negations found.

The words of English and Vietnamese that `grader.answers.rubric` reads are here: they are
language, not lesson (a lesson's words live in its answer key). A word is listed with its
diacritics; it also matches written without any, never with other ones ("chưa" is a
negation written "chưa" or "chua", and "chứa", "contains", is not).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from grader.answers.values import SUPERSCRIPTS, strip_accents

NEGATION_REACH = 3
"""A negation turns a match around when at most this many words lie between them: "does not
saturate" (none), "không bị bão hòa" (1), "does not let heads learn different ..." (3)."""
SHORT_REACH = {"without": 1}
"""Negations whose reach is shorter: "without" governs the word after it ("without scaling,
the scores ..."), not the clause."""

NEGATIONS = (
    "not", "never", "no", "none", "nothing", "neither", "nor", "without", "cannot", "n't",
    "không", "chẳng", "chả", "chưa", "ko", "k", "kg", "khg", "hông", "chẳng hề", "không hề",
)
HEDGES = ("maybe", "perhaps", "probably", "i think", "i guess", "not sure", "có lẽ", "hình như",
          "chắc vậy", "chắc là", "hình như là", "không chắc", "ko chắc", "không rõ", "em nghĩ",
          "em đoán", "i believe", "i suppose", "dunno")
ANALOGIES = ("like a", "like an", "think of", "imagine", "similar to", "as if", "analogy", "giống như", "ví như",
             "tưởng tượng", "hình dung", "như thể")
PREVENTIVES = ("prevent", "prevents", "avoid", "avoids", "stop", "stops", "keeps from", "tránh", "ngăn", "chống")
"""Words a gap in `A ... B` never crosses, like negations: "dividing prevents ... saturation"
is not "dividing ... saturation"."""
FUNCTION_WORDS = (
    "is", "are", "was", "were", "be", "been", "the", "a", "an", "of", "to", "in", "on", "for", "with",
    "by", "from", "that", "this", "it", "its", "so", "because", "since", "as", "if", "then", "than",
    "and", "or", "can", "must", "should", "will", "would", "does", "do", "has", "have", "which", "each",
    "every", "only", "into", "at", "they", "we", "you", "i",
    "là", "của", "và", "thì", "mà", "vì", "nên", "để", "được", "bị", "có", "các", "những", "một",
    "cho", "với", "trong", "khi", "nếu", "này", "đó", "rồi", "sẽ", "đã", "đang", "phải", "cần", "chỉ",
    "cũng", "như", "bằng", "từ", "theo", "về", "vào", "lại", "hơn", "mỗi",
)
CLAUSE_WORDS = (
    "but", "whereas", "while", "although", "though", "however", "unlike", "instead", "except",
    "nhưng", "trong khi", "tuy nhiên", "ngược lại", "thay vì", "còn",
)


def _word_list(words: Iterable[str]) -> re.Pattern[str]:
    alternatives = sorted({strip_accents(w).lower() for w in words}, key=len, reverse=True)
    return re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(a) for a in alternatives) + r")(?!\w)")


NEGATION = _word_list(w for w in NEGATIONS if w != "n't")
NEGATION_SUFFIX = re.compile(r"\w(n't)\b")
_ACCENTED = {strip_accents(w).lower(): w.lower() for w in NEGATIONS}
CLAUSE_WORD = _word_list(CLAUSE_WORDS)
HEDGE = re.compile(_word_list(HEDGES).pattern + r"|\?")
ANALOGY = _word_list(ANALOGIES)
NEGATION_WORDS = "(?:" + "|".join(sorted({re.escape(strip_accents(w)) for w in NEGATIONS + PREVENTIVES
                                           if w != "n't"}, key=len, reverse=True)) + ")"
FUNCTION_WORD = _word_list(FUNCTION_WORDS + NEGATIONS)
NOT = r"(?:\b(?:" + "|".join(sorted({re.escape(strip_accents(w)) for w in NEGATIONS if w != "n't"},
                                    key=len, reverse=True)) + r")\b|\b\w*n't\b)"
"""`{not}` in a rubric pattern: any negation word."""
WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Text:
    folded: str
    original: str
    """As written (diacritics and case), aligned character by character with `folded`."""
    clauses: tuple[tuple[int, int], ...]


def read(text: str) -> Text:
    """Folded (accents dropped, lower case; "tương lai" -> "tuong lai") and cut into clauses at
    . ; ! ? , line breaks and arrows (never inside brackets) and before clause words."""
    original = re.sub(r"[^\S\n]+", " ", unicodedata.normalize("NFC", text.translate(SUPERSCRIPTS)))
    folded = "".join((strip_accents(c) or " ")[:1].lower() for c in original)
    return Text(folded, original, tuple(_clauses(folded)))


def _clauses(folded: str) -> Iterable[tuple[int, int]]:
    cuts, depth = [0], 0
    for i, char in enumerate(folded):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char == "\n" or (depth == 0 and char in ",;!?") or (
                depth == 0 and char == "." and (i + 1 == len(folded) or folded[i + 1].isspace())):
            cuts += [i, i + 1]
    cuts += [m.start() for m in CLAUSE_WORD.finditer(folded)]
    cuts += [i for m in re.finditer(r"\s(?:->|=>)\s|→", folded) for i in m.span()]
    cuts = sorted(set(cuts + [len(folded)]))
    return ((a, b) for a, b in zip(cuts, cuts[1:]) if folded[a:b].strip(" \t.,;!?-*"))


def negations(t: Text) -> list[tuple[int, int]]:
    """Where the answer holds a negation word (spans of `t.folded`)."""
    found = []
    for m in NEGATION.finditer(t.folded):
        written = t.original[m.start():m.end()]
        if len(written) == 1 and (written.isupper() or not _between_spaces(t.folded, m.start(), m.end())):
            continue  # "K" or "Q/K/V" is the Key; "k" alone between words is "không"
        if m.group() in _VI_PLAIN_AMBIGUOUS and written.lower() == m.group() and not _plain_negation(t, m):
            continue  # "no" / "chua" without diacritics in Vietnamese: "nó" (it), "chứa" (holds)
        if written.lower() in (m.group(), _ACCENTED.get(m.group())):
            found.append(m.span())
    return found + [m.span(1) for m in NEGATION_SUFFIX.finditer(t.folded)]


VI_PLAIN_WORDS = frozenset((
    "la cua va thi ma vi nen de duoc bi co cac nhung mot cho voi trong khi neu nay do roi se "
    "da dang phai can chi cung nhu bang tu theo ve vao lai hon moi khong chua nhin thay biet "
    "token cau mo hinh model dung lam tinh hoc doan du nhung luc sau truoc tuong lai qua khu "
    "chan che an ra vao di den gi nao day kia ay minh em ta tat ca nhieu it rat qua"
).split())
"""Common Vietnamese words written without diacritics: next to one of them, "no" is "nó"."""
CHUA_NEXT = frozenset((
    "co duoc biet thay ton sinh xuat nhin chac phai the he tung den toi xong can dung hoc du "
    "ro hieu tinh xay hoan kip san bao ai gap"
).split())
"""Words that follow "chưa" (not yet) written "chua"; before other words it is "chứa" (holds)."""
_VI_PLAIN_AMBIGUOUS = ("no", "chua")
_VI_MARKS = re.compile(r"[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹàáèéìíòóùúýõã]", re.I)


def _plain_negation(t: Text, m: re.Match[str]) -> bool:
    """Whether "no" or "chua", written without diacritics, is a negation here.

    "chua" is "chưa" only before a word that follows it ("chua co", "chua biet"); else
    "chứa". "no" is English "no" unless the answer reads as Vietnamese (diacritics, or
    two common Vietnamese words) and a word next to it is Vietnamese ("vi no khong thay").
    """
    after = WORD.findall(t.folded[m.end():m.end() + 20])
    if m.group() == "chua":
        return bool(after) and after[0] in CHUA_NEXT
    words = WORD.findall(t.folded)
    vietnamese = bool(_VI_MARKS.search(t.original)) or sum(w in VI_PLAIN_WORDS for w in words) >= 2
    if not vietnamese:
        return True
    before = WORD.findall(t.folded[max(0, m.start() - 20):m.start()])
    neighbours = [w for w in (before[-1:] + after[:1])]
    return not any(w in VI_PLAIN_WORDS for w in neighbours)


def _between_spaces(text: str, start: int, end: int) -> bool:
    return (start == 0 or text[start - 1].isspace()) and (end == len(text) or text[end].isspace())
