"""`grader validate`, written answers: the answer key against answers labelled by hand.

The assignment's `labelled_answers:` file is a YAML list of

    {id, question: quiz.q3, split: tune | heldout, lang: en | vi | vi-plain | mixed,
     label: full | partial | zero, points: 0.5 (partial only: the fraction it earns),
     answer: "...", reason: "..."}

Each answer is scored with the key, as a student's would be. An answer *agrees* when its
score is within `AGREE_WITHIN` of its label's (full 1, zero 0, partial its `points`, as
fractions of the question's points). The key fails validation when a `zero` answer gets
half the points or more, or a `full` answer loses points, without a review flag: those
are the grader being wrong about a student without knowing it. Agreement and flags are
printed by label and by language, the tuning and held-out halves apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grader import yamltext
from grader.answers.grade import score_questions
from grader.assignment import Question

AGREE_WITHIN = 0.1
SPLITS = ("tune", "heldout", "fresh", "blind", *(f"blind{n}" for n in range(2, 286)))
"""`tune`: what the key was tuned on; `heldout`: kept apart when it was written;
`fresh`: written later, by a labeller who saw neither the key nor the other answers;
`blind`, `blind2` ... `blind285`: each written after the key was last tuned, by a labeller who
saw neither it nor the other sets, and measured once before anything was changed knowing it
(the first figures are in its file's header); after that, it is no longer blind."""
LABELS = ("full", "partial", "zero")
LANGS = ("en", "vi", "vi-plain", "mixed")


@dataclass(frozen=True)
class Labelled:
    id: str
    question: str
    split: str
    lang: str
    label: str
    expected: float
    """The label as a fraction of the question's points."""
    answer: str


@dataclass(frozen=True)
class Scored:
    case: Labelled
    score: float
    """A fraction of the question's points."""
    flagged: bool

    @property
    def agrees(self) -> bool:
        return abs(self.score - self.case.expected) <= AGREE_WITHIN + 1e-9

    @property
    def unsafe(self) -> str:
        """Why this score is wrong about the student without a flag ('' when it is not)."""
        if self.flagged:
            return ""
        if self.case.label == "zero" and self.score >= 0.5 - 1e-9:
            return f"a `zero` answer gets {self.score:.2f} of the points without a review flag"
        if self.case.label == "full" and self.score < 1 - 1e-9:
            return f"a `full` answer loses {1 - self.score:.2f} of the points without a review flag"
        return ""


def load_labelled(path: Path, questions: Sequence[Question]) -> tuple[list[Labelled], list[str]]:
    """The labelled answers, and what is wrong with entries that cannot be used."""
    try:
        doc = yamltext.load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return [], [f"{path.name}: cannot be read: {' '.join(str(exc).split())}"]
    if not isinstance(doc, list):
        return [], [f"{path.name}: expected a list of labelled answers"]
    text = {q.id for q in questions if q.type == "text"}
    cases, problems = [], []
    for n, e in enumerate(doc):
        where = f"{path.name}[{n}]" + (f" ({e.get('id')})" if isinstance(e, dict) and e.get("id") else "")
        why = _entry_problem(e, text)
        if why:
            problems.append(f"{where}: {why}")
            continue
        expected = {"full": 1.0, "zero": 0.0}.get(e["label"], e.get("points"))
        cases.append(Labelled(str(e.get("id", n)), e["question"], e["split"], e["lang"], e["label"],
                              float(expected), str(e["answer"])))
    return cases, problems


def _choices(allowed: Sequence[str]) -> str:
    """The allowed values, short enough to read: "tune, heldout, fresh, blind, blind2 ... blind194"."""
    return ", ".join(allowed) if len(allowed) <= 8 else f"{', '.join(allowed[:5])} ... {allowed[-1]}"


def _entry_problem(e: Any, text_questions: set[str]) -> str:
    if not isinstance(e, dict):
        return "expected a mapping {id, question, split, lang, label, answer}"
    if e.get("question") not in text_questions:
        return f"`question` must be a written (text) question of the assignment, not {e.get('question')!r}"
    for key, allowed in (("split", SPLITS), ("label", LABELS), ("lang", LANGS)):
        if e.get(key) not in allowed:
            return f"`{key}` must be one of {_choices(allowed)}, not {e.get(key)!r}"
    points = e.get("points")
    if e["label"] == "partial" and (isinstance(points, bool) or not isinstance(points, (int, float))
                                    or not 0 < points < 1):
        return "a `partial` answer needs `points`, the fraction it earns, between 0 and 1"
    if not isinstance(e.get("answer"), (str, int, float)) or isinstance(e.get("answer"), bool):
        return "`answer` must be text"
    return ""


def score_labelled(cases: Sequence[Labelled], questions: Sequence[Question],
                   key: Mapping[str, Any]) -> list[Scored]:
    by_id = {q.id: q for q in questions}
    scored = []
    for case in cases:
        q = by_id[case.question]
        result = score_questions([q], {case.question: case.answer}, key)[0]
        scored.append(Scored(case, result.score / q.points, bool(result.needs_review)))
    return scored


def agreement_lines(scored: Sequence[Scored]) -> list[str]:
    """The tables: per split, a row per label and per language, then all of it."""
    lines = []
    for split in SPLITS:
        rows = [s for s in scored if s.case.split == split]
        if not rows:
            continue
        lines.append(f"labelled answers, {split} ({len(rows)}):  {'':<8} n  agree  flagged  "
                     "unflagged wrong  (zero>=0.5, full lost)")
        groups: dict[str, list[Scored]] = defaultdict(list)
        for s in rows:
            groups[f"label {s.case.label}"].append(s)
        for s in rows:
            groups[f"lang {s.case.lang}"].append(s)
        order = [f"label {x}" for x in LABELS] + [f"lang {x}" for x in LANGS] + ["all"]
        groups["all"] = rows
        lines += [_row(name, groups[name]) for name in order if groups.get(name)]
    return lines


def question_lines(scored: Sequence[Scored], order: Sequence[str]) -> list[str]:
    """All splits together, a row per question, with the answers that disagree with their label
    without a flag: where the key and its labellers read a question differently (a convention for
    the instructor to settle, such as how much each item of a list is worth)."""
    by_question: dict[str, list[Scored]] = defaultdict(list)
    for s in scored:
        by_question[s.case.question].append(s)
    lines = [f"labelled answers, all splits, by question ({len(scored)}):  {'':<8} n  agree  flagged  "
             "unflagged wrong  silent disagreements"]
    for question in (q for q in order if q in by_question):
        rows = by_question[question]
        silent = sum(not s.flagged and not s.agrees for s in rows)
        lines.append(f"{_row(question, rows)}  {silent:>3}")
    return lines


def _row(name: str, rows: Sequence[Scored]) -> str:
    n = len(rows)
    agree = sum(s.agrees for s in rows)
    flagged = sum(s.flagged for s in rows)
    unsafe = sum(bool(s.unsafe) for s in rows)
    return (f"  {name:<16} {n:>4}  {agree:>3} {100 * agree / n:>3.0f}%  {flagged:>3} {100 * flagged / n:>3.0f}%  "
            f"{unsafe:>3}")


def unsafe_problems(scored: Sequence[Scored]) -> list[str]:
    return [f"labelled answer {s.case.id} ({s.case.question}, {s.case.split}, {s.case.label}): {s.unsafe}"
            for s in scored if s.unsafe]


def check_labelled(paths: Sequence[Path], questions: Sequence[Question],
                   key: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """(lines to print, problems) for `grader validate`."""
    cases: list[Labelled] = []
    problems: list[str] = []
    for path in paths:
        more, wrong = load_labelled(path, questions)
        cases += more
        problems += wrong
    if key is None or not cases:
        names = ", ".join(p.name for p in paths)
        return [], problems or [f"{names}: no labelled answers to score"]
    scored = score_labelled(cases, questions, key)
    lines = agreement_lines(scored) + question_lines(scored, [q.id for q in questions])
    return lines, problems + unsafe_problems(scored)
