"""`--format github`: a Markdown step summary and `::error` annotations for GitHub Actions.

- The summary is appended to the file GITHUB_STEP_SUMMARY names (OUT/summary.md when it
  is not set): for one submission its exercise table and what failed, for a class one
  row per student with each exercise's score and status.
- Each failing test becomes `::error file=...,line=...,title=...::message` on stdout:
  file is the student's file relative to the repository root (GITHUB_WORKSPACE, else
  the working directory), line the deepest line of the student's code its traceback
  points at (`locate.py`), else 1. Failures with the same place and message become one
  annotation ("3 tests: ...") — GitHub shows at most 10 error annotations per step.
- Visibility as in the report: hidden tests give one `::notice` per student
  ("hidden tests: n/m passed"), message_only tests their message only, at line 1.

Student text is escaped: in annotations per GitHub's workflow-command rules (%, CR, LF;
in properties also : and ,), in Markdown as literal text (HTML and Markdown characters
escaped in tables; failure messages in code fences longer than any backtick run).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.report.files import write_text_atomic
from grader.report.formatting import fmt_points, plain_text
from grader.report.visibility import WITHHELD, hidden_counts, shown
from grader.report.writers import Context, Writer
from grader.report.writers.locate import Location, locate_test, relative_to
from grader.results import ExerciseResult, Status, SubmissionResult

if TYPE_CHECKING:
    from grader.intake.discover import Submission

__all__ = ["Annotation", "GitHubWriter", "collect_annotations", "escape_data", "escape_property",
           "summary_markdown"]

ICONS = {"passed": "✅", "partial": "🟡", "failed": "❌", "error": "💥", "timeout": "⏱️"}
MAX_LISTED = 5
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")


class GitHubWriter(Writer):
    name = "github"
    stdout = "shared"

    def finish(self, results: Sequence[SubmissionResult], ctx: Context) -> list[Path]:
        path = self._write_summary(summary_markdown(results), ctx)
        root = Path(ctx.env.get("GITHUB_WORKSPACE") or ctx.cwd)
        for a in collect_annotations(results, ctx, root):
            print(a.command(), file=ctx.stdout)
        ctx.stdout.flush()
        return [path]

    @staticmethod
    def _write_summary(text: str, ctx: Context) -> Path:
        target = ctx.env.get("GITHUB_STEP_SUMMARY")
        if target:
            with open(target, "a", encoding="utf-8") as f:  # GitHub's file: appended to
                f.write(text)
            return Path(target)
        path = write_text_atomic(ctx.out / "summary.md", text)
        ctx.note(f"GITHUB_STEP_SUMMARY is not set: wrote the step summary to {path}")
        return path


# ------------------------------------------------------------------ annotations


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


@dataclass(frozen=True)
class Annotation:
    level: str
    """error | warning | notice"""
    title: str
    message: str
    file: str | None = None
    line: int | None = None

    def command(self) -> str:
        props = [f"file={escape_property(self.file)}"] if self.file else []
        if self.file and self.line:
            props.append(f"line={self.line}")
        props.append(f"title={escape_property(plain_text(self.title))}")
        return f"::{self.level} {','.join(props)}::{escape_data(plain_text(self.message))}"


def collect_annotations(results: Sequence[SubmissionResult], ctx: Context, root: Path) -> list[Annotation]:
    out: list[Annotation] = []
    for r in results:
        out += _student_annotations(r, ctx, root)
    return out


def _student_annotations(r: SubmissionResult, ctx: Context, root: Path) -> list[Annotation]:
    sub = ctx.submissions.get(r.student)
    if not r.gradable:
        return [Annotation("error", f"{r.student}: grader failure",
                           "the grader itself failed on this submission; this is not a score")]
    groups: dict[tuple[str | None, int, str], list[str]] = {}
    for ex in r.exercises:
        for title, message, where in _failures(r, ex, sub):
            file = relative_to(where.path, root) if where.path else None
            groups.setdefault((file, where.line, message), []).append(title)
    found = [_grouped(r.student, titles, key) for key, titles in groups.items()]
    passed, total = hidden_counts(r)
    if total:
        code = (sub.notebook or sub.module) if sub else None
        found.append(Annotation("notice", f"{r.student}: hidden tests",
                                f"hidden tests: {passed}/{total} passed",
                                relative_to(code, root) if code else None, 1 if code else None))
    return found


def _failures(r: SubmissionResult, ex: ExerciseResult,
              sub: Submission | None) -> list[tuple[str, str, Location]]:
    """(title, message, location) of each failing test a student may see."""
    view, label = shown(ex), ex.title or ex.id
    found = [(f"{label}: {t.name or t.test_id}", t.message or str(t.outcome), locate_test(r, t, sub))
             for t in view.visible if not t.passed]
    found += [(f"{label}: {WITHHELD}", t.message or str(t.outcome),
               locate_test(r, t, sub, use_evidence=False))
              for t in view.message_only if not t.passed]
    if not ex.tests and ex.message and Status(ex.status) is not Status.PASSED:
        found.append((label, ex.message, Location((sub.notebook or sub.module) if sub else None)))
    return found


def _grouped(student: str, titles: list[str], key: tuple[str | None, int, str]) -> Annotation:
    """One annotation for the failures with the same place and message."""
    file, line, message = key
    if len(titles) == 1:
        return Annotation("error", f"{student} · {titles[0]}", message, file, line if file else None)
    listed = "\n".join(f"- {t}" for t in titles[:MAX_LISTED])
    more = f"\n- ... and {len(titles) - MAX_LISTED} more" if len(titles) > MAX_LISTED else ""
    return Annotation("error", f"{student} · {len(titles)} failing tests",
                      f"{message}\n\nFailing:\n{listed}{more}", file, line if file else None)


# ------------------------------------------------------------------ summary


def md_text(text: object) -> str:
    """Student text as literal Markdown inline text (one line)."""
    flat = " ".join(plain_text(text).split()).replace("&", "&amp;")
    return MARKDOWN_SPECIAL.sub(r"\\\1", flat)


def fenced(text: str) -> str:
    """A code block no content can close: its fence is longer than any backtick run."""
    body = plain_text(text).rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def _status(ex: ExerciseResult) -> str:
    status = Status(ex.status).value
    return f"{ICONS.get(status, '')} {status}".strip()


def _score(score: float, max_score: float) -> str:
    return f"{fmt_points(score)} / {fmt_points(max_score)}"


def summary_markdown(results: Sequence[SubmissionResult]) -> str:
    if len(results) == 1:
        return _one_submission(results[0])
    return _class_table(results)


def _class_table(results: Sequence[SubmissionResult]) -> str:
    ids = list(dict.fromkeys(ex.id for r in results for ex in r.exercises))
    assignment = next((r.assignment for r in results), "")
    lines = [f"## {md_text(assignment)}: {len(results)} submission(s) graded", "",
             "| student | score | " + " | ".join(md_text(i) for i in ids) + " |",
             "|---|---:|" + "---|" * len(ids)]
    for r in results:
        by_id = {ex.id: ex for ex in r.exercises}
        if not r.gradable:
            cells = ["—"] * len(ids)
            score = "grader failure (not a zero)"
        else:
            cells = [f"{ICONS.get(Status(by_id[i].status).value, '')} {fmt_points(by_id[i].score)}"
                     if i in by_id else "—" for i in ids]
            score = _score(r.score, r.max_score)
        lines.append(f"| {md_text(r.student)} | {score} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n"


def _one_submission(r: SubmissionResult) -> str:
    if not r.gradable:
        return (f"## {md_text(r.student)}: grader failure\n\nThe grader itself failed on this "
                "submission; the numbers say nothing about the work. Not a zero.\n\n")
    lines = [f"## {md_text(r.student)}: {_score(r.score, r.max_score)} ({md_text(r.assignment)})",
             "", "| exercise | score | status |", "|---|---:|---|"]
    lines += [f"| {md_text(ex.title or ex.id)} | {_score(ex.score, ex.max_score)} | {_status(ex)} |"
              for ex in r.exercises]
    blocks = [_message_block(message, items) for message, items in _by_message(r).items()]
    hidden = [f"{md_text(ex.title or ex.id)} {v.hidden_passed}/{len(v.hidden)}"
              for ex in r.exercises if (v := shown(ex)).hidden and v.hidden_passed < len(v.hidden)]
    if hidden:
        blocks.append("_hidden tests passed: " + ", ".join(hidden) + "_")
    if blocks:
        lines += ["", "### What failed", "", *blocks]
    return "\n".join(lines) + "\n\n"


def _by_message(r: SubmissionResult) -> dict[str, list[str]]:
    """Failing tests a student may see, as Markdown items, grouped by their message (a
    module that does not import fails thirty tests with one message)."""
    groups: dict[str, list[str]] = {}
    for ex in r.exercises:
        label, view = md_text(ex.title or ex.id), shown(ex)
        failing = [(t.name or t.test_id, t) for t in view.visible if not t.passed]
        failing += [(WITHHELD, t) for t in view.message_only if not t.passed]
        for name, t in failing:
            item = f"{label} · {md_text(name)} ({_score(t.score, t.max_score)}, {md_text(str(t.outcome))})"
            groups.setdefault(t.message, []).append(item)
        if not ex.tests and ex.message and Status(ex.status) is not Status.PASSED:
            groups.setdefault(ex.message, []).append(f"{label} ({_status(ex)})")
    return groups


def _message_block(message: str, items: list[str]) -> str:
    shown_items = items if len(items) <= MAX_LISTED else items[:MAX_LISTED - 1]
    bullets = [f"- {item}" for item in shown_items]
    if len(shown_items) < len(items):
        bullets.append(f"- ... and {len(items) - len(shown_items)} more with the same message")
    return "\n".join(bullets) + ("\n\n" + fenced(message) if message else "") + "\n"
