"""The class's written answers, grouped so that a person grades each kind of answer once
(`grader review`), and the decisions that person made, kept in overrides.yaml.

Grouping, per question:

1. *Identical* answers share a group: the same text after `normalise` (Unicode NFKD,
   combining marks dropped, đ -> d, case folded, runs of whitespace made one space).
2. *Near-duplicates* join a group when `difflib.SequenceMatcher(None, a, b).ratio()` of
   the normalised texts is at least `SIMILAR` (0.9) against the group's first answer,
   **and** the grader gave both the same provisional score and found the same concepts,
   **and** the words that differ hold no negation ("not", "never", "không", "chưa"...)
   and no digit. So "the mask hides future tokens" and "the mask hides no future tokens"
   or "grows 4 times" and "grows 16 times" never share a decision. Every distinct text of
   a group is listed on the page.

An answer whose text is unknown (see `answer_texts`) stays alone in its group.

Nothing here runs student code: results come from result.json, texts from the
students' answers.yaml read with the grader's safe loader.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grader import yamltext
from grader.report.files import write_text_atomic
from grader.report.overrides import Override, read_overrides, strip_overrides
from grader.results import SubmissionResult, TestResult

__all__ = ["SIMILAR", "Answer", "Decision", "Group", "answer_texts", "collect", "decisions",
           "group_answers", "normalise", "save_decision"]

SIMILAR = 0.9
QUESTION = "question:"
NO_ANSWER = ""
NEGATIONS = frozenset({
    "not", "no", "never", "none", "nothing", "neither", "nor", "without", "cannot", "cant",
    "dont", "doesnt", "isnt", "arent", "wont", "shouldnt", "t", "khong", "chang", "chua",
    "cha", "ko", "k",
})
WORD = re.compile(r"\w+")
HEADER = ("# The instructor's scores and comments (see grader/report/overrides.py).\n"
          "# `grader review` rewrites this file on every decision; comments in it are not kept.\n")


def normalise(text: str) -> str:
    """Case, accents and spacing removed: " Tương  LAI\\n" -> "tuong lai"."""
    text = text.replace("đ", "d").replace("Đ", "D")
    kept = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(kept.casefold().split())


@dataclass(frozen=True)
class Answer:
    """One student's written answer to one question, as the grader scored it."""

    student: str
    question: str
    """The question id (`quiz.q3`)."""
    prompt: str
    text: str | None
    """What the student wrote ("" for no answer); None when it is not known."""
    score: float
    """The grader's provisional score (overrides undone)."""
    max_score: float
    needs_review: bool
    found: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Group:
    id: str
    question: str
    answers: tuple[Answer, ...]

    @property
    def students(self) -> tuple[str, ...]:
        return tuple(a.student for a in self.answers)

    @property
    def prompt(self) -> str:
        return self.answers[0].prompt

    @property
    def max_score(self) -> float:
        return self.answers[0].max_score

    @property
    def flagged(self) -> bool:
        return any(a.needs_review for a in self.answers)

    @property
    def scores(self) -> tuple[float, ...]:
        """The distinct provisional scores, lowest first (one, unless texts are unknown)."""
        return tuple(sorted({a.score for a in self.answers}))

    @property
    def variants(self) -> tuple[tuple[str | None, int], ...]:
        """Each distinct text and how many students wrote it, most common first."""
        counts: dict[str | None, int] = {}
        for a in self.answers:
            counts[a.text] = counts.get(a.text, 0) + 1
        return tuple(sorted(counts.items(), key=lambda kv: -kv[1]))

    def _union(self, name: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(x for a in self.answers for x in getattr(a, name)))

    @property
    def found(self) -> tuple[str, ...]:
        return self._union("found")

    @property
    def missed(self) -> tuple[str, ...]:
        return self._union("missed")

    @property
    def reasons(self) -> tuple[str, ...]:
        return self._union("reasons")


# ------------------------------------------------------------------ collecting


def written(test: TestResult) -> bool:
    """A written (free-text) answer: the tests that carry `needs_review`."""
    return test.test_id.startswith(QUESTION) and test.needs_review is not None


def collect(results: Sequence[SubmissionResult],
            texts: Mapping[tuple[str, str], str | None]) -> list[Answer]:
    """Every written answer of every gradable result, with overrides undone. Results
    graded before `needs_review` existed carry it on no test: then every `question:`
    test counts as a written answer."""
    base = [strip_overrides(r) for r in results if r.gradable]
    tests = [(r, t) for r in base for ex in r.exercises for t in ex.tests
             if t.test_id.startswith(QUESTION)]
    marked = any(written(t) for _, t in tests)
    found = []
    for r, t in tests:
        if marked and not written(t):
            continue
        question = t.test_id[len(QUESTION):]
        review = t.review
        found.append(Answer(
            student=r.student, question=question, prompt=t.name,
            text=texts.get((r.student, question)), score=float(t.score),
            max_score=float(t.max_score), needs_review=bool(t.needs_review),
            found=review.found if review else (), missed=review.missed if review else (),
            reasons=review.reasons if review else ()))
    return found


def answer_texts(results: Sequence[SubmissionResult],
                 submissions: Path | None) -> dict[tuple[str, str], str | None]:
    """(student, question id) -> what the student wrote, read from
    SUBMISSIONS/<student>/answers.yaml (or SUBMISSIONS/answers.yaml when SUBMISSIONS is
    the one student's folder) with the grader's safe loader; "" when the answer is
    missing, None when there is no such file to read. result.json keeps the text a written
    answer was graded on (`Review.answer`): that comes first, the file only for results
    written before it did."""
    from grader.answers.grade import load_answers, lookup

    texts: dict[tuple[str, str], str | None] = {}
    for r in results:
        answers = None
        if submissions is not None:
            folder = submissions if submissions.name == r.student and \
                (submissions / "answers.yaml").is_file() else submissions / r.student
            if (folder / "answers.yaml").is_file():
                answers, _ = load_answers(folder / "answers.yaml")
        for ex in r.exercises:
            for t in ex.tests:
                if t.test_id.startswith(QUESTION):
                    q = t.test_id[len(QUESTION):]
                    if t.review is not None and t.review.answer:
                        texts[(r.student, q)] = t.review.answer.strip()
                    else:
                        texts[(r.student, q)] = None if answers is None else _as_text(lookup(answers, q))
    return texts


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        return "\n".join(_as_text(v) for v in value)
    if value is None or not isinstance(value, (int, float, bool)):
        return NO_ANSWER  # missing (lookup's sentinel), or a mapping: nothing to read
    return str(value)


# ------------------------------------------------------------------ grouping


def group_answers(answers: Sequence[Answer]) -> list[Group]:
    """The groups of each question (questions in the order first seen), flagged groups
    first, then the larger ones."""
    by_question: dict[str, list[Answer]] = {}
    for a in answers:
        by_question.setdefault(a.question, []).append(a)
    groups = []
    for question, mine in by_question.items():
        clusters = _clusters(mine)
        made = [Group(_group_id(question, c), question, tuple(c)) for c in clusters]
        made.sort(key=lambda g: (not g.flagged, -len(g.answers), normalise(g.variants[0][0] or "")))
        groups.extend(made)
    return groups


def _clusters(answers: Sequence[Answer]) -> list[list[Answer]]:
    exact: dict[str, list[Answer]] = {}
    alone: list[list[Answer]] = []
    for a in answers:
        if a.text is None:
            alone.append([a])
        else:
            exact.setdefault(normalise(a.text), []).append(a)
    ordered = sorted(exact.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    clusters: list[tuple[str, list[Answer]]] = []
    for norm, members in ordered:
        for head, cluster in clusters:
            if near_duplicate(head, cluster[0], norm, members[0]):
                cluster.extend(members)
                break
        else:
            clusters.append((norm, list(members)))
    return [c for _, c in clusters] + alone


def near_duplicate(a: str, first: Answer, b: str, other: Answer) -> bool:
    """The rule of the module docstring, on normalised texts `a` and `b`."""
    if not a or not b or first.score != other.score or set(first.found) != set(other.found):
        return False
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < SIMILAR or matcher.quick_ratio() < SIMILAR:
        return False
    if matcher.ratio() < SIMILAR:
        return False
    differ = set(WORD.findall(a)) ^ set(WORD.findall(b))
    return not any(w in NEGATIONS or any(c.isdigit() for c in w) for w in differ)


def _group_id(question: str, answers: Sequence[Answer]) -> str:
    key = "\0".join([question, *sorted(a.student for a in answers)])
    return "g" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


# ------------------------------------------------------------------ decisions


@dataclass(frozen=True)
class Decision:
    points: float
    comment: str
    decided: int
    """How many of the group's students have this decision."""
    mixed: bool = False
    """The group's students have different overrides (edited by hand?)."""


def decisions(groups: Sequence[Group], overrides: Sequence[Override]) -> dict[str, Decision]:
    """Group id -> the decision overrides.yaml holds for its students (absent: none)."""
    mine: dict[tuple[str, str], Override] = {}
    for o in overrides:
        key = o.key[len(QUESTION):] if o.key.startswith(QUESTION) else o.key
        mine[(o.student, key)] = o
    found = {}
    for g in groups:
        made = [m for s in g.students if (m := mine.get((s, g.question))) is not None]
        if not made:
            continue
        kinds = {(o.points, o.comment) for o in made}
        found[g.id] = Decision(made[0].points, made[0].comment, len(made),
                               mixed=len(kinds) > 1 or len(made) < len(g.students))
    return found


def read_decisions(path: Path) -> list[Override]:
    return read_overrides(path) if path.is_file() else []


def save_decision(path: Path, question: str, students: Sequence[str],
                  points: float | None, comment: str = "") -> Path:
    """Set (or with `points` None, remove) the override of `question` for each of
    `students` in overrides.yaml, keeping every other entry; written atomically (a
    temporary file, then os.replace), so a reader sees the old file or the new one."""
    doc: Any = yamltext.load(path.read_text(encoding="utf-8")) if path.is_file() else None
    doc = doc if isinstance(doc, dict) else {}
    table = doc.get("students")
    if not isinstance(table, dict):
        table = doc["students"] = {}
    for student in students:
        entry = table.get(student)
        if not isinstance(entry, dict):
            entry = table[student] = {}
        entry.pop(QUESTION + question, None)  # one spelling of the key only
        entry.pop(question, None)
        if points is not None:
            entry[question] = {"points": _number(points), **({"comment": comment} if comment else {})}
        if not entry:
            del table[student]
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=100)
    return write_text_atomic(path, HEADER + text)


def _number(points: float) -> float | int:
    if not math.isfinite(points) or points < 0:
        raise ValueError(f"points must be a number of at least 0, not {points!r}")
    return int(points) if float(points).is_integer() else float(points)
