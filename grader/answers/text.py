"""Reading a written answer: folded and cut into clauses (its negations: `grader.answers.negation`).

The words of English and Vietnamese that `grader.answers.rubric` reads are here: they are
language, not lesson (a lesson's words live in its answer key). A word is listed with its
diacritics; it also matches written without any, never with other ones ("chưa" is a
negation written "chưa" or "chua", and "chứa", "contains", is not).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from grader.answers.values import SUPERSCRIPTS, strip_accents

NEGATION_REACH = 3
"""A negation turns a match around when at most this many words lie between them: "does not
saturate" (none), "không bị bão hòa" (1), "does not let heads learn different ..." (3)."""
SHORT_REACH = {"without": 1}
"""Negations whose reach is shorter: "without" governs the word after it ("without scaling,
the scores ..."), not the clause."""

NEGATIONS = (
    "not", "never", "no", "none", "nothing", "neither", "nor", "without", "cannot", "n't",
    "isnt", "arent", "wasnt", "werent", "dont", "doesnt", "didnt", "cant", "couldnt", "wouldnt",
    "shouldnt", "wont", "hasnt", "havent",  # typed fast, without the apostrophe
    "không", "chẳng", "chả", "chưa", "ko", "k", "kg", "khg", "hông", "hổng", "chẳng hề", "không hề",
)
HEDGES = ("maybe", "perhaps", "probably", "i think", "i guess", "not sure", "có lẽ", "hình như",
          "chắc vậy", "chắc là", "hình như là", "không chắc", "ko chắc", "không rõ", "em nghĩ",
          "em đoán", "i believe", "i suppose", "dunno", "chưa rõ", "chưa hiểu", "chưa nắm",
          "somehow", "or something", "or whatever", "đại loại", "đại khái", "kiểu vậy",
          # a part the student says they have forgotten: points it earns may be a guess
          "em không nhớ", "mình không nhớ", "tôi không nhớ", "em quên", "mình quên", "tôi quên",
          "i don't remember", "i do not remember", "i can't remember", "i don't recall")
REPORTERS = ("some say", "some people say", "people say", "they say", "it is said", "supposedly", "the lesson says",
             "the teacher said", "the teacher says", "my friend said", "many people think", "thầy giảng", "thầy nói",
             "thầy bảo", "cô giảng", "cô nói", "người ta nói", "người ta bảo", "nghe nói", "sách nói", "slide nói",
             "theo sách", "theo slide", "theo thầy", "theo cô", "nhiều người nghĩ", "nhiều người nói", "bạn em nói")
CONTRASTS = ("but", "however", "nhưng", "thật ra", "thực ra", "thực tế", "actually", "in fact", "in reality")
"""A claim reported ("some say", "thầy giảng") then turned on ("but", "thật ra"): the student
may hold either, so an answer that earns points this way is a hedge."""
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
DENIED_AFTER = re.compile(
    r"\s*(?:\(\)\s*)?(?:(?:mode|thi|la|is|are|was|were|cung|also)\s+){0,2}"
    r"(?:(?:khong|chang|ko)\s+(?:can|quan trong|bat buoc)(?:\s+thiet)?|(?:not|never|\w*n't)\s+(?:needed|necessary|"
    r"required|important|a must)|unnecessary|unneeded|optional)(?!\w)")
"""A denial after a term, at the start of what follows it in its clause: "eval mode thì không
cần", "eval() is not needed", "dropout off is optional". The term is said not to matter."""
CONSEQUENCE_WORDS = ("then", "thì")
"""Words that open a condition's consequence: a negation in the condition ("nếu không chia thì
score rất lớn", "if we don't scale then ...") does not reach past them."""
DISTRIBUTIVES = ("the other", "the other one", "one of them", "the former", "the latter", "the first one",
                 "the second one", "the first", "the second", "một cái", "cái kia", "cái còn lại", "cái đầu",
                 "cái sau", "cái thứ nhất", "cái thứ hai", "một bên", "bên kia")
"""Clause openings that point at one of several things named before ("one handles PAD, the
other future tokens"): such a clause is not said of the last subject named. "one" opens
such a clause only where the answer also says "the other"."""
SHARED = ("both", "both of them", "they both", "each of them", "all of them", "cả hai", "cả 2", "hai cái đều")
"""Clause openings that say what follows of every subject named ("both block future tokens")."""
ALTERNATIVES = ("instead of", "rather than", "thay vì", "chứ không phải")
"""Clause openings that name what the answer sets aside ("multiple views instead of one
averaged view"): an opposite stated there is not the answer's claim."""


def _word_list(words: Iterable[str]) -> re.Pattern[str]:
    alternatives = sorted({strip_accents(w).lower() for w in words}, key=len, reverse=True)
    return re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(a) for a in alternatives) + r")(?!\w)")


SYMBOL_NEGATIONS = ("!=",)
"""Written as symbols ("≠" is read as "!="): "attention != explanation"."""
NEGATION = re.compile(_word_list(w for w in NEGATIONS if w != "n't").pattern + "|" + "|".join(
    re.escape(s) for s in SYMBOL_NEGATIONS))
NEGATION_SUFFIX = re.compile(r"\w(n't)\b")
NEGATION_FORMS = {strip_accents(w).lower(): w.lower() for w in NEGATIONS}
"""A negation's folded form -> as written with its diacritics."""
CLAUSE_WORD = _word_list(CLAUSE_WORDS)


def _accented(words: Iterable[str]) -> dict[str, str]:
    """Each word written with diacritics, by its folded form: what `_as_written` checks."""
    return {strip_accents(w): w for w in words if strip_accents(w) != w}


_CLAUSE_ACCENTED = _accented(CLAUSE_WORDS)
RETRACTIONS = ("but actually", "but in fact", "nhưng thật ra", "nhưng thực ra",
               # a slip corrected in the same breath: how far back it reaches is the reader's call
               "i mean", "i meant", "wait no", "wait, no", "no wait", "no, wait", "scratch that", "oops", "my bad",
               "that's backwards", "thats backwards", "actually no", "actually, no", "à nhầm", "à không,", "à không ý",
               "ý em là", "ý mình là", "ý tôi là", "nhầm rồi", "nói nhầm", "viết nhầm", "em nhầm", "mình nhầm")
"""An answer that turns on what it said before ("..., but actually those do not matter", "causal
blocks PAD, wait, no, ..."); not "but in reality", "nhưng thực tế" ("loss đẹp nhưng thực tế dở":
the claim itself). Matched folded, hence "à không," with its comma: "token A không chứng minh"."""
HEDGE = re.compile(r"(?<!chua )(?:" + _word_list(HEDGES + RETRACTIONS).pattern + r")|"
                   + _word_list(REPORTERS).pattern + ".*?" + _word_list(CONTRASTS).pattern, re.S)
"""A hedge, not after "chưa": "chưa chắc là nguyên nhân" is "not necessarily the cause", a claim;
a retraction; or a claim reported, then turned on (`REPORTERS`, `CONTRASTS`)."""
QUOTED = re.compile(r'"[^"]*"|“[^”]*”|\([^()]*\)')
"""A quotation or a bracket: a question mark in it is an example ("Query: 'tôi cần gì?'"), not doubt."""


TURNS = CONTRASTS + ("though", "although", "tuy nhiên", "ngược lại")
"""Words with which an answer turns on what it has said."""
TURN = _word_list(TURNS)
_TURN_ACCENTED = _accented(TURNS)


def turns(t: Text) -> bool:
    """Whether the answer turns on itself somewhere: "..., though actually it's just as sequential"."""
    return any(not t.accented or _as_written(t.original, m, _TURN_ACCENTED) for m in TURN.finditer(t.folded))


DOUBT = re.compile(r"\?[\s\"')\]]*$|\b(?:dung|phai) (?:khong|ko|k)(?: a)?\s*\?|\b(?:right|is it|isn't it)\s*\?")
"""A question of the student's own that asks: one that ends the answer ("... cho đủ độ dài?"),
or that asks the reader ("đúng không ạ?", "right?"). A question answered in the next breath
("Vì sao chia sqrt? Vì score ...") is rhetorical."""


def hedged(folded: str) -> bool:
    """Whether the answer hedges: a hedge word (`HEDGE`) or a question of its own (`DOUBT`)."""
    return bool(HEDGE.search(folded)) or bool(DOUBT.search(QUOTED.sub("", folded).strip()))


ANALOGY = _word_list(ANALOGIES)
LIKENESS = re.compile(ANALOGY.pattern + r"|\bgiong\b|\b(?:is|are|'s|acts|works|looks|just) like\b")
"""An analogy opened in a clause ("Q giống câu search user gõ vào", "K is like a label"):
what follows it in the clause is its picture, so an opposite's words there claim nothing."""
_FRAME = re.compile(r"\W*(?:" + _word_list(ANALOGIES + ("giống", "like", "just like", "kiểu như")).pattern + ")")
NO_BEFORE_VI = ("la", "co", "se", "da", "dang", "chi", "cung", "bi", "duoc", "van", "thi", "lam", "khong",
                "phai", "gay", "tinh", "nhin", "hoc", "sinh", "chua", "can", "rat", "that", "moi", "lai",
                "biet", "giup", "chay", "thay", "dung", "muon", "tao", "lay", "giu", "xu", "hieu", "nghi", "tra",
                "de", "nen", "ra", "phu", "dua", "giong", "khac", "tro")
"""Words after which "no" is Vietnamese "nó" (it) in a pattern's `{not}` or gap: "không có nghĩa
nó là causal" ("no la", never English). `negations` reads the answer as a whole instead."""


def _alternation(words: Iterable[str]) -> str:
    # one letter ("k") is "không" only between Vietnamese words, which `negations` tells apart
    escaped = sorted({re.escape(strip_accents(w)) for w in words if w != "n't" and len(w) > 1},
                     key=len, reverse=True)
    return "|".join(rf"no(?!\s(?:{'|'.join(NO_BEFORE_VI)})\b)" if w == "no" else w for w in escaped)


NEGATION_WORDS = "(?:" + _alternation(NEGATIONS + PREVENTIVES) + ")"
FUNCTION_WORD = _word_list(FUNCTION_WORDS + NEGATIONS)


def _written_forms(words: Iterable[str]) -> dict[str, set[str]]:
    """Each word, folded, and the spellings it has as written ("so": "so"; "ma": "mà")."""
    forms: dict[str, set[str]] = {}
    for w in words:
        forms.setdefault(strip_accents(w).lower(), set()).add(w.lower())
    return forms


_FUNCTION_FORMS = _written_forms(FUNCTION_WORDS + NEGATIONS)

NOT = r"(?:\b(?:" + _alternation(NEGATIONS) + r")\b|\b\w*n't\b|" + "|".join(
    re.escape(s) for s in SYMBOL_NEGATIONS) + ")"
"""`{not}` in a rubric pattern: any negation word."""
WORD = re.compile(r"\w+")
CONSEQUENCE = _word_list(CONSEQUENCE_WORDS)
_OPENING = r"^\W*(?:(?:and|va|con|while|but|nhung)\s+)?"
DISTRIBUTIVE = re.compile(_OPENING + r"(?:\w+\s+){0,2}?" + _word_list(DISTRIBUTIVES).pattern)
COMPARISON = _word_list(("vs", "versus", "so với", "compared to", "compared with"))
"""A clause that compares ("sequential ops O(1) vs O(n)") speaks of both sides, so it is
not said of the last subject named either."""
ALTERNATIVE = re.compile(_OPENING + _word_list(ALTERNATIVES).pattern)
COMPARED = re.compile(r"(?<!vi du )(?<!chang han )\b(?:nhu|giong|khac voi|like|unlike|as (?:in|with))\s+"
                      r"(?:(?:the|a|an|cac|mot|o|trong|in|with)\s+)?$")
"""The words before a subject named as the measure of a comparison ("... như RNN", "like an RNN",
"unlike an LSTM"): the answer speaks of something else, and it measures it against this one."""
SHARED_BY_ALL = re.compile(_OPENING + _word_list(SHARED).pattern)


def analogy_frames(t: Text) -> list[tuple[int, int]]:
    """Where a clause opens by naming an analogy up to a colon ("giống search engine: Query là
    ...", "think of a library:"): that names the picture, it claims nothing."""
    frames = []
    for a, b in t.clauses:
        colon = t.folded.find(":", a, b)
        if colon > a and _FRAME.match(t.folded, a):
            frames.append((a, colon))
    return frames


def compared(folded: str, start: int) -> bool:
    """Whether the word at `start` is the measure of a comparison (`COMPARED`)."""
    return bool(COMPARED.search(folded[max(0, start - 24):start]))


def distributive(clause: str, folded: str) -> bool:
    """Whether the clause opens on one of several things named before (`DISTRIBUTIVES`)."""
    return bool(DISTRIBUTIVE.match(clause) or COMPARISON.search(clause) or (
        re.match(_OPENING + r"one\b", clause) and re.search(r"\bthe other\b", folded)))


@dataclass(frozen=True)
class Text:
    folded: str
    original: str
    """As written (diacritics and case), aligned character by character with `folded`."""
    clauses: tuple[tuple[int, int], ...]
    marked: str = ""
    """Lower case with its diacritics, each word's tone mark on its last vowel (`canon_tones`),
    the marked letters coded (`code_marks`), aligned with `folded`: what patterns that write
    diacritics are matched on in an answer written with them."""
    accented: bool = False
    """Written with Vietnamese diacritics: then a word means what its diacritics say ("cho",
    for, is not "chờ", wait)."""


STRUCK = re.compile(r"~~[^~]*~~")
"""Words struck through ("~~quá khứ~~ tương lai"): crossed out by the student, not said."""


def read(text: str) -> Text:
    """Folded (accents dropped, lower case; "tương lai" -> "tuong lai") and cut into clauses at
    . ; ! ? , line breaks and arrows (never inside brackets) and before clause words. A minus
    sign is a hyphen ("t−1" is "t-1"); words struck through are left out."""
    text = unicodedata.normalize("NFC", STRUCK.sub(" ", text).translate(SUPERSCRIPTS)).replace("≠", "!=").replace(
        "\u2212", "-")
    original = re.sub(r"[^\S\n]+", " ", text)
    folded = "".join(map(_fold_char, original))
    marked = code_marks(canon_tones("".join(map(_lower_char, original))))
    accented = _written_with_marks(original)
    return Text(folded, original, tuple(_clauses(folded, original, accented)), marked, accented)


@lru_cache(maxsize=8192)  # bounded: an answer may hold any of Unicode's characters
def _fold_char(c: str) -> str:
    """One character folded to exactly one ("Ư" -> "u", "ß" -> "s"), so offsets stay those of the original."""
    return (strip_accents(c) or " ")[:1].lower()


@lru_cache(maxsize=8192)
def _lower_char(c: str) -> str:
    return (c.lower() or " ")[:1]


ALWAYS_MARKED = frozenset(
    "la cua khong duoc cac nhung mot voi nay roi se dang phai cung nhu bang vao hon thi va nen tuong".split())
"""Vietnamese words never written without their marks by someone typing with them: two of
these plain ("la", "khong") in an answer that has marks elsewhere means its writer types
marks only now and then, and it is read as if it had none."""


def _written_with_marks(original: str) -> bool:
    words = WORD.findall(original.lower())
    return bool(_VI_MARKS.search(original)) and sum(w in ALWAYS_MARKED for w in words) < 2


TONE_MARKS = frozenset("\u0300\u0301\u0303\u0309\u0323")
"""The five Vietnamese tone marks as combining characters (grave, acute, tilde, hook, dot)."""
VI_MARKS = TONE_MARKS | frozenset("\u0306\u0302\u031b")
"""Those and the vowel marks (breve, circumflex, horn): every combining mark Vietnamese uses."""
_VOWELS = set("aeiouy")


FORMS = {base: "".join(sorted(
    c for c in map(chr, range(0xC0, 0x1F00)) if c.islower() and len(unicodedata.normalize("NFD", c)) > 1
    and unicodedata.normalize("NFD", c)[0] == base and set(unicodedata.normalize("NFD", c)[1:]) <= VI_MARKS))
    for base in "aeiouy"} | {"d": "đ"}
"""Each plain letter's forms with Vietnamese diacritics: "o" -> "òóỏõọôồốổỗộơờớởỡợ"."""
_CODE = {form: chr(0xA000 + 32 * n + k) for n, forms in enumerate(FORMS.values()) for k, form in enumerate(forms)}
CODED_FORMS = {base: (_CODE[forms[0]], _CODE[forms[-1]]) for base, forms in FORMS.items()}
"""The first and last code of each letter's forms in `code_marks`: one run, so a regex class of
them all is one range (a class of the forms themselves costs `re` a 64K bitmap to compile)."""
_CODES = str.maketrans({**{c: "\ufffd" for c in map(chr, range(0xA000, 0xA000 + 32 * len(FORMS)))},
                        **_CODE, **{f.upper(): c for f, c in _CODE.items()}})


def code_marks(text: str) -> str:
    """Each Vietnamese letter with a diacritic written as a code, its letter's forms side by side
    (`CODED_FORMS`); every other character, and the length, unchanged. The codes are Yi
    syllables: letters to `re` ("\\w"), as the forms are, and not a script this quiz meets (Yi
    written in an answer reads as U+FFFD)."""
    return text.translate(_CODES)


def canon_tones(text: str) -> str:
    """Each word's tone mark moved onto its last vowel ("hóa" and "hoá", two spellings of one
    word, both become "hoá"), keeping every other character where it was."""
    def canon(m: re.Match[str]) -> str:
        word = unicodedata.normalize("NFD", m.group())
        tones = [c for c in word if c in TONE_MARKS]
        if not tones:
            return m.group()
        bare = [c for c in word if c not in TONE_MARKS]
        last = max((i for i, c in enumerate(bare) if c.lower() in _VOWELS), default=None)
        if last is None:
            return m.group()
        while last + 1 < len(bare) and unicodedata.combining(bare[last + 1]):
            last += 1
        moved = unicodedata.normalize("NFC", "".join(bare[:last + 1] + tones[:1] + bare[last + 1:]))
        return moved if len(moved) == len(m.group()) else m.group()
    return re.sub(r"[^\W\d_]+", canon, unicodedata.normalize("NFC", text))


def _clauses(folded: str, original: str, accented: bool) -> Iterable[tuple[int, int]]:
    cuts, depth = [0], 0
    for i, char in enumerate(folded):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char == "\n" or (depth == 0 and char in ",;!?" and folded[i:i + 2] != "!="
                               and not _between_digits(folded, i)) or (
                depth == 0 and char == "." and (i + 1 == len(folded) or folded[i + 1].isspace())):
            cuts += [i, i + 1]
    cuts += [m.start() for m in CLAUSE_WORD.finditer(folded) if (
        _as_written(original, m, _CLAUSE_ACCENTED) if accented else not _PLURAL_NHUNG.search(folded, 0, m.end()))
        and not _ADVERB_CON.search(folded, 0, m.end()) and not _CON_LAI.match(folded, m.start())]
    cuts += [i for m in re.finditer(r"\s(?:->|=>)\s|→", folded) for i in m.span()]
    cuts = sorted(set(cuts + [len(folded)]))
    return ((a, b) for a, b in zip(cuts, cuts[1:]) if folded[a:b].strip(" \t.,;!?-*"))


_PLURAL_NHUNG = re.compile(r"\b(?:ca|co|la|thay|nhin|voi|cua|cho|vao|tu|ve|cac) nhung\Z")
""""nhung" without diacritics right after one of these words is "những" (the plural: "thấy cả
những token sau"), not "nhưng" (but), which opens a clause."""
_ADVERB_CON = re.compile(r"\b(?:khong|chang|ko|van|het|chi|cung|da|se|dang|chua|neu) con\Z")
_CON_LAI = re.compile(r"con lai\b")
""""còn" after "không", "vẫn", "chưa"... is "still" ("không còn layer nào": no more layers), and
"còn lại" is "the rest": neither is "còn" (as for), which opens a clause."""


_VI_MARKS = re.compile(r"[ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹàáèéìíòóùúýõã]", re.I)


def _as_written(original: str, m: re.Match[str], accented: dict[str, str]) -> bool:
    """A word listed with diacritics ("còn", as for), in an answer written with diacritics
    (`Text.accented`), only as written with them: there "con" is another word ("con số")."""
    written = original[m.start():m.end()].lower()
    wanted = accented.get(m.group())
    return wanted is None or written == wanted


def _between_digits(text: str, i: int) -> bool:
    """A comma inside a number list ("cols 2,3,4") does not end a clause."""
    return text[i] == "," and 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()


SPACE_AFTER = re.compile(r"\s+gian\b")
"""After "không": "không gian" is a space ("không gian con", a subspace), not a negation."""


def function_words(t: Text, start: int = 0) -> Iterator[re.Match[str]]:
    """The function words of an answer from `start`. In one written with diacritics, only as
    written: there "ổn" is not "on", "số" not "so", and "ma trận" holds no "mà". A capital "K"
    is the Key, not "k" for "không"; "không gian" is a noun (a space)."""
    for m in FUNCTION_WORD.finditer(t.folded, start):
        if m.group() == "k" and t.original[m.start()] == "K":
            continue
        if m.group() == "khong" and SPACE_AFTER.match(t.folded, m.end()):
            continue
        if not t.accented or t.original[m.start():m.end()].lower() in _FUNCTION_FORMS.get(m.group(), ()):
            yield m
