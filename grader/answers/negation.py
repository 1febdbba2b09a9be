"""Where an answer denies: its negation words, told apart from the same letters meaning
something else ("k" the Key, "no" for "nó", "chua" for "chứa", "hong" for "hỏng", "không gian").
"""

from __future__ import annotations

import re
from functools import lru_cache

from grader.answers.text import NEGATION, NEGATION_FORMS, NEGATION_SUFFIX, SPACE_AFTER, WORD, Text


def negations(t: Text) -> list[tuple[int, int]]:
    """Where the answer holds a negation word (spans of `t.folded`, in order)."""
    found = []
    for m in NEGATION.finditer(t.folded):
        written = t.original[m.start():m.end()]
        if len(written) == 1 and (written.isupper() or not _between_spaces(t.folded, m.start(), m.end())
                                  or not reads_vietnamese(t)
                                  or QUERY_BEFORE.search(t.folded, _back(m.start()), m.start())
                                  or DEFINED_AFTER.match(t.folded, m.end())):
            continue  # "K", "Q/K/V", "q và k" or "k là ..." is the Key; "k" alone between Vietnamese words is "không"
        if m.group() in _VI_PLAIN_AMBIGUOUS and written.lower() == m.group() and not _plain_negation(t, m):
            continue  # "no" / "chua" / "hong" without diacritics: "nó" (it), "chứa" (holds), "hỏng" (broken)
        if NOT_ONLY.match(t.folded, m.end()):
            continue  # "không chỉ do một lớp", "not only": a point is added, none denied
        if m.group() == "khong" and (SPACE_AFTER.match(t.folded, m.end()) or UNLIKE_AFTER.match(t.folded, m.end())):
            continue  # "không gian con": a subspace; "không giống RNN phải chờ ...": unlike an RNN, which must wait
        if CORRECTION_BEFORE.search(t.original, _back(m.start()), m.start()):
            continue  # "à không, ý là ...": the student corrects what they said, denies nothing
        if written.lower() in (m.group(), NEGATION_FORMS.get(m.group())):
            found.append(m.span())
    suffixes = [m.span(1) for m in NEGATION_SUFFIX.finditer(t.folded) if not NOT_ONLY.match(t.folded, m.end(1))]
    return sorted(found + suffixes)


DEFINED_AFTER = re.compile(r"\s*(?:(?:la|is)\b|[:=])")
"""Right after a lone "k": "k là ...", "k: ..." define the Key; "không là" is not how Vietnamese denies."""
QUERY_BEFORE = re.compile(r"\bq\s*(?:,|&|/|\bva\b|\band\b)?\s*\Z")
"""Right before a lone "k": "q và k", "q, k" name the Key, not "không"."""
CORRECTION_BEFORE = re.compile(r"(?<!\w)[àÀ]\s+\Z")
"""Right before "không": "à không, ý là ..." corrects what was said ("oh no, I mean")."""
UNLIKE_AFTER = re.compile(r"\s+giong\s+(?:nhu\s+|voi\s+)?(?!nhau\b|het\b|y\b)\w")
"""After "không": "không giống (như) X" is "unlike X"; what follows is said of X, not denied
("không giống nhau", not the same, still denies)."""
NOT_ONLY = re.compile(r"\s+(?:only|just|merely|simply|chi(?!\s+ra\b)|moi)\b")
"""After a negation: "not only", "không chỉ" (but not "không chỉ ra", does not point out)."""


VI_PLAIN_WORDS = frozenset((
    "la cua va thi ma vi nen de duoc bi co cac nhung mot cho voi trong khi neu nay do roi se "
    "da dang phai can chi cung nhu bang tu theo ve vao lai hon moi khong chua nhin thay biet "
    "token cau mo hinh model dung lam tinh hoc doan du nhung luc sau truoc tuong lai qua khu "
    "chan che an ra vao di den gi nao day kia ay minh em ta tat ca nhieu it rat qua thu cai"
).split())
"""Common Vietnamese words written without diacritics: next to one of them, "no" is "nó"."""
CHUA_NEXT = frozenset((
    "co duoc biet thay ton sinh xuat nhin chac phai the he tung den toi xong can dung hoc du "
    "ro hieu tinh xay hoan kip san bao ai gap"
).split())
"""Words that follow "chưa" (not yet) written "chua"; before other words it is "chứa" (holds)."""
_VI_PLAIN_AMBIGUOUS = ("no", "chua", "hong")
def _plain_negation(t: Text, m: re.Match[str]) -> bool:
    """Whether "no", "chua" or "hong", written without diacritics, is a negation here.

    "chua" is "chưa" only before a word that follows it ("chua co", "chua biet"); else
    "chứa". So is "hong" "hông" ("hong biet"); else "hỏng" ("bi hong"). "no" is
    English "no" unless the answer reads as Vietnamese (diacritics, or
    two common Vietnamese words) and a word next to it is Vietnamese ("vi no khong thay").
    """
    after = WORD.findall(t.folded[m.end():m.end() + 20])
    if m.group() in ("chua", "hong"):
        return bool(after) and after[0] in CHUA_NEXT
    if not reads_vietnamese(t):
        return True
    before = WORD.findall(t.folded[max(0, m.start() - 20):m.start()])
    neighbours = [w for w in (before[-1:] + after[:1])]
    return not any(w in VI_PLAIN_WORDS for w in neighbours)


def reads_vietnamese(t: Text) -> bool:
    """Written with Vietnamese diacritics, or holding two common Vietnamese words without them."""
    return t.accented or _vi_plain_words(t.folded) >= 2


@lru_cache(maxsize=64)
def _vi_plain_words(folded: str) -> int:
    """Asked once per answer, not once per negation word in it."""
    return sum(w in VI_PLAIN_WORDS for w in WORD.findall(folded))


LOOK_BACK = 200
"""How far before a word `QUERY_BEFORE` and `CORRECTION_BEFORE` look: a search from the start of
a long answer for every negation in it would be quadratic in its length."""


def _back(at: int) -> int:
    return max(0, at - LOOK_BACK)


def _between_spaces(text: str, start: int, end: int) -> bool:
    return (start == 0 or text[start - 1].isspace()) and (end == len(text) or text[end].isspace())
