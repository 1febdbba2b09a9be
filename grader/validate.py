"""`grader validate`: prove an assignment can tell right from wrong.

Every package of the assignment's `environment:` must import in the sandbox, the
reference graded as a submission must get full marks, an empty submission 0, each
starter (the module and notebook `grader kit` hands out) must load cleanly and score 0,
and every mutant (a small buggy variant of the reference, declared in the YAML with the
exercises it must lose points in) must lose points in exactly those exercises. A
surviving mutant means the hidden tests are too weak.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import yamltext
from grader.answers.agreement import check_labelled
from grader.answers.grade import check_key
from grader.assignment import Assignment
from grader.batch.pipeline import answer_key
from grader.batch.workers import grade_all
from grader.config import RunConfig
from grader.environment import PROBE_RESULT, probe_problems, probe_source
from grader.errors import AssignmentSchemaError
from grader.intake.discover import discover
from grader.results import SubmissionResult
from grader.sandbox.host import Isolation, Sandbox
from grader.testing.student import Connection, Student, StudentProblem

SOLUTION_ANSWERS = "solution/answers.yaml"


@dataclass(frozen=True)
class Mutant:
    name: str
    source: str
    """The mutant's code: the reference with its edits applied, or its own file."""
    loses: frozenset[str]
    answers: Path
    """The answers.yaml graded with it: the solution's unless the entry names another."""


@dataclass
class ValidationReport:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def load_mutants(a: Assignment) -> list[Mutant]:
    if a.mutants is None:
        return []
    doc = yamltext.load(a.mutants.read_text(encoding="utf-8")) or []
    entries = doc.get("mutants", []) if isinstance(doc, dict) else doc
    return [_mutant(a, i, entry) for i, entry in enumerate(entries)]


def _mutant(a: Assignment, i: int, entry: Any) -> Mutant:
    assert a.mutants is not None
    where = f"[{i}]"
    if not isinstance(entry, dict) or "loses" not in entry or not ({"file", "edits"} & set(entry)):
        raise AssignmentSchemaError(a.mutants, where, "expected {name, loses: [...], edits: [...]} or {file, loses}")
    unknown = set(entry["loses"]) - {ex.id for ex in a.exercises}
    if unknown:
        raise AssignmentSchemaError(a.mutants, f"{where}.loses", f"unknown exercises {sorted(unknown)}")
    if "file" in entry:
        path = (a.mutants.parent / entry["file"]).resolve()
        source, name = path.read_text(encoding="utf-8"), entry.get("name", path.stem)
    else:
        if a.reference is None:
            raise AssignmentSchemaError(a.mutants, where, "edits need the assignment's `reference`")
        source = _apply_edits(a.reference.read_text(encoding="utf-8"), entry["edits"], a.mutants, where)
        name = str(entry.get("name", f"mutant{i}"))
    answers = str(entry.get("answers", "correct"))
    answers_path = (a.root / SOLUTION_ANSWERS if answers == "correct"
                    else (a.mutants.parent / answers).resolve())
    if not answers_path.is_file():
        raise AssignmentSchemaError(a.mutants, f"{where}.answers", f"{answers_path} does not exist")
    return Mutant(name, source, frozenset(entry["loses"]), answers_path)


def _apply_edits(source: str, edits: list[dict[str, str]], path: Path, where: str) -> str:
    """Each `find` must occur exactly once: a reference change that breaks a mutant is
    an error to fix, never a mutant silently equal to the reference."""
    for j, edit in enumerate(edits):
        count = source.count(edit["find"])
        if count != 1:
            raise AssignmentSchemaError(path, f"{where}.edits[{j}].find",
                                        f"must occur exactly once in the reference, found {count}")
        source = source.replace(edit["find"], edit["replace"])
    return source


def validate_assignment(a: Assignment, isolation: Isolation, jobs: int,
                        answers_only: bool = False) -> ValidationReport:
    """With `answers_only`, only the schema, the answer key and the labelled answers."""
    report = ValidationReport()
    key = answer_key(a.answer_key)
    key_problems = check_key(a.questions, key)
    report.problems += [f"answer key: {p}" for p in key_problems]
    report.lines.append(f"schema and files: ok ({len(a.exercises)} exercises, {a.max_score:g} points)")
    if a.labelled_answers and not key_problems:
        lines, problems = check_labelled(a.labelled_answers, a.questions, key)
        report.lines += lines
        report.problems += problems
    if answers_only:
        return report
    _probe_environment(a, isolation, report)
    mutants = load_mutants(a)
    if a.reference is None:
        report.problems.append("no reference: set `reference:` in the YAML")
        return report
    with tempfile.TemporaryDirectory(prefix="grader-validate-") as tmp:
        root = Path(tmp)
        _make_submission(root / "reference", a.reference.read_text(encoding="utf-8"), a,
                         a.root / SOLUTION_ANSWERS)
        _make_submission(root / "empty", "", a, None)
        starters = _make_starters(root, a)
        for m in mutants:
            _make_submission(root / f"mutant-{m.name}", m.source, a, m.answers)
        subs = discover(root, a)
        config = RunConfig(assignment=a.path, isolation=Isolation(isolation).value)
        results = {r.student: r for r in grade_all(subs, a, config, jobs)}
    _judge_reference(results["reference"], report)
    _judge_empty(results["empty"], report)
    for name in starters:
        _judge_starter(name, results[name], report)
    for m in mutants:
        _judge_mutant(m, results[f"mutant-{m.name}"], report)
    return report


def _probe_environment(a: Assignment, isolation: Isolation, report: ValidationReport) -> None:
    """Every package the assignment declares must import where student code runs: in a
    child of the real sandbox (read-only runtime, no network), not in this process."""
    env = a.environment
    if env is None:
        report.lines.append("environment: not declared (student code may import whatever "
                            "grader's Python has)")
        return
    name = "environment_probe.py"
    request = {"op": "load", "kind": "module", "source": probe_source(env), "filename": name}
    found = None
    with Sandbox(isolation, a.limits, prewarm=False, spare=False, hidden=(a.root,)) as box:
        connection = Connection(box, request, a.limits, name, env)
        try:
            found = getattr(Student(connection), PROBE_RESULT).value()
        except StudentProblem as exc:
            report.problems.append(f"environment: the import check failed in the sandbox: {exc}")
        finally:
            connection.close()
    lines, problems = probe_problems(env, found)
    if lines:
        report.lines.append("environment, imported in the sandbox: " + ", ".join(lines))
    report.problems += problems


def _make_submission(folder: Path, source: str, a: Assignment, answers: Path | None) -> None:
    folder.mkdir()
    (folder / a.module_name).write_text(source, encoding="utf-8")
    if answers is not None and answers.is_file():
        shutil.copyfile(answers, folder / a.answers_name)


def _make_starters(root: Path, a: Assignment) -> list[str]:
    """A submission per starter module or notebook, without answers."""
    names = []
    for f in a.starter:
        if f.name in (a.module_name, a.notebook_name):
            name = f"starter-{f.suffix.lstrip('.')}"
            (root / name).mkdir()
            shutil.copyfile(f, root / name / f.name)
            names.append(name)
    return names


def _lost(result: SubmissionResult) -> set[str]:
    return {ex.id for ex in result.exercises if ex.score < ex.max_score - 1e-9}


def _judge_reference(r: SubmissionResult, report: ValidationReport) -> None:
    report.lines.append(f"reference: {r.score:g}/{r.max_score:g}")
    for ex in r.exercises:
        if ex.score < ex.max_score - 1e-9:
            failing = "; ".join(f"{t.name}: {t.message}" for t in ex.tests if not t.passed)
            report.problems.append(f"the reference loses points in {ex.id}: {failing[:400]}")


def _judge_empty(r: SubmissionResult, report: ValidationReport) -> None:
    report.lines.append(f"empty submission: {r.score:g}/{r.max_score:g}")
    if r.score > 0:
        report.problems.append(f"an empty submission scores {r.score:g}, expected 0")


def _judge_starter(name: str, r: SubmissionResult, report: ValidationReport) -> None:
    """A starter must import cleanly (so its tests fail on its TODOs, not on a crash)
    and leave every point to the student."""
    report.lines.append(f"{name}: {r.score:g}/{r.max_score:g}")
    errors = [f"{e.get('where')}: {e.get('ename')}: {e.get('evalue')}" for e in r.load.cell_errors]
    errors += [ex.message for ex in r.exercises if ex.message][:1]
    if errors:
        report.problems.append(f"the {name} does not load cleanly: {'; '.join(errors)[:400]}")
    if r.score > 0:
        report.problems.append(f"the {name} scores {r.score:g}, expected 0: a starter must "
                               "leave the work to the student")


def _judge_mutant(m: Mutant, r: SubmissionResult, report: ValidationReport) -> None:
    lost = _lost(r)
    status = "caught" if lost == m.loses else "WRONG"
    report.lines.append(f"mutant {m.name}: loses {sorted(lost)} ({status}; "
                        f"declared {sorted(m.loses)})")
    if m.loses - lost:
        report.problems.append(f"mutant {m.name} survives in {sorted(m.loses - lost)}: "
                               "the hidden tests there are too weak")
    if lost - m.loses:
        report.problems.append(f"mutant {m.name} also loses points in {sorted(lost - m.loses)}, "
                               "which its bug does not touch: a test there is unfair")


