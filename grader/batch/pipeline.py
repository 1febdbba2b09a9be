"""The grading pipeline for one submission, in order:

    discover -> load (read files) -> run isolated (sandbox child) -> test against the
    reference (pytest, in this process) -> score -> result (then render and export)

Every stage lives in its own module; this one only names them in order.
"""

from __future__ import annotations

import datetime as dt
import platform
import time
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch
import yaml

from grader import __version__, yamltext
from grader.answers.grade import score_questions
from grader.answers.submitted import load_answers
from grader.assignment import Assignment, yaml_problem
from grader.batch.prepare import ATTEMPTS
from grader.config import RunConfig
from grader.environment import Environment, cell_notice, import_notices, imported_modules, request_sources
from grader.errors import AssignmentError, GraderError, SandboxFailure, one_line
from grader.intake.discover import Submission
from grader.intake.load import LoadedSubmission, read_submission
from grader.results import (
    LoadReport,
    Provenance,
    SubmissionResult,
)
from grader.sandbox.host import Sandbox
from grader.sandbox.inside.plotting import WARM_IMPORTS
from grader.score import exercise_results, totals
from grader.testing.session import TestRunner, load_reference
from grader.testing.student import Connection, LoadOutcome


class Grading:
    """What a process needs to grade submissions of one assignment one after another:
    the sandbox it runs them in and one test session for all of them.

    A grading the sandbox failed (`SandboxFailure`: its zygote died, a child could not
    be forked or isolated) is thrown away: the submission is graded again once in a
    fresh sandbox, and if that fails too, `grade` raises SandboxFailure (the callers
    record the submission as not gradable). A zygote found dead between two gradings
    is replaced before the next one."""

    ATTEMPTS = ATTEMPTS

    def __init__(self, assignment: Assignment, sandbox: Sandbox, config: RunConfig) -> None:
        self.assignment, self.sandbox, self.config = assignment, sandbox, config
        files = [f for ex in assignment.exercises if (f := ex.test_file(config.public))]
        reference = None if config.public else load_reference(assignment.reference)
        self.tests = TestRunner(files, reference, config.device, config.seed, assignment.root,
                                support=assignment.support)
        self.restarts = 0
        """How many times this grading replaced its sandbox's zygote."""
        self._stale = False

    def grade(self, sub: Submission) -> SubmissionResult:
        failures: list[SandboxFailure] = []
        for _ in range(self.ATTEMPTS):
            try:
                self._fresh_sandbox_if_needed()
                return self._grade_once(sub)
            except SandboxFailure as exc:
                failures.append(exc)
                self._stale = True  # the next attempt (or submission) gets a new zygote
        raise type(failures[-1])(_failed_twice(failures))

    def _fresh_sandbox_if_needed(self) -> None:
        if not self._stale and self.sandbox.healthy:
            return
        try:
            self.sandbox.restart()
        except (GraderError, OSError) as exc:
            raise SandboxFailure(f"the sandbox could not be restarted: {one_line(str(exc))}") from None
        self.restarts += 1
        self._stale = False

    def _grade_once(self, sub: Submission) -> SubmissionResult:
        started, cpu_started = time.monotonic(), time.process_time()
        assignment, config = self.assignment, self.config
        loaded = read_submission(sub)
        if self.sandbox.may_warm_plots and _plots(loaded.request):
            self.sandbox.warm_plots()  # for the children after this one (see `Sandbox.warm_plots`)
        connection = _connect(self.sandbox, loaded, assignment, sub)
        try:
            outcomes = self.tests.run(connection)
        finally:
            connection.close()
        answers, answer_problems = _answers(sub)
        key = None if config.public else answer_key(assignment.answer_key)
        questions = score_questions(assignment.questions, answers, key, check_only=config.public)
        load_report = _load_report(loaded, connection, answer_problems, assignment.environment)
        failure = _load_failure_message(connection.load)
        exercises = exercise_results(assignment, outcomes, questions, config.public, failure)
        score, max_score = totals(exercises)
        cpu_s = time.process_time() - cpu_started + connection.student_cpu_s
        return SubmissionResult(
            student=sub.id, assignment=assignment.id, score=score, max_score=max_score,
            exercises=exercises, load=load_report,
            provenance=provenance(assignment, sub, self.sandbox, config,
                                  time.monotonic() - started, cpu_s),
        )

    def close(self) -> None:
        self.tests.close()

    def __enter__(self) -> "Grading":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _failed_twice(failures: list[SandboxFailure]) -> str:
    reasons = list(dict.fromkeys(one_line(str(f)) for f in failures))
    return (f"the sandbox failed on this submission {len(failures)} times (restarted in "
            f"between): {'; then '.join(reasons)}")


def grade_submission(sub: Submission, assignment: Assignment, sandbox: Sandbox,
                     config: RunConfig) -> SubmissionResult:
    """Grade one submission (to grade many, keep one `Grading`)."""
    with Grading(assignment, sandbox, config) as grading:
        return grading.grade(sub)


def _connect(sandbox: Sandbox, loaded: LoadedSubmission, assignment: Assignment,
             sub: Submission) -> Connection:
    connection = Connection(sandbox, loaded.request or {}, assignment.limits, sub.label,
                            assignment.environment)
    if loaded.request is None:
        connection.load = LoadOutcome(failure=loaded.failure)
    return connection


def _plots(request: Mapping[str, Any] | None) -> bool:
    """Whether the submission imports a plotting library the zygote can load ahead."""
    sources, notebook = request_sources(request)
    return any(m in WARM_IMPORTS for m in imported_modules(sources, notebook))


def _answers(sub: Submission) -> tuple[dict[str, Any] | None, list[str]]:
    if sub.answers is None:
        return None, []
    return load_answers(sub.answers)


@lru_cache(maxsize=4)
def answer_key(path: Path | None) -> Mapping[str, Any] | None:
    if path is None:
        return None
    try:
        key = yamltext.load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise AssignmentError(f"{path}: the answer key is not valid YAML: {yaml_problem(exc)}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AssignmentError(f"{path}: cannot read the answer key: {one_line(str(exc))}") from None
    if not isinstance(key, dict):
        raise AssignmentError(f"{path}: the answer key must be a mapping of question ids")
    return key


def _load_failure_message(load: LoadOutcome | None) -> str:
    return load.failure if load is not None else ""


def _load_report(loaded: LoadedSubmission, connection: Connection,
                 answer_problems: list[str], env: Environment | None = None) -> LoadReport:
    load = connection.load or LoadOutcome()
    notices = list(loaded.notices) + list(answer_problems)
    if load.failure:
        notices.append(load.failure)
    notices += [cell_notice(err, env) for err in load.cell_errors]
    notices += import_notices(loaded.request, load.error, load.cell_errors, env)
    texts = [text for text, _ in connection.output]
    stdout = texts[0] if texts else ""
    truncated = any(cut for _, cut in connection.output)
    errors = list(load.cell_errors) + ([{**load.error, "cell": None}] if load.error else [])
    cell_errors = [_error_view(e, loaded) for e in errors]
    return LoadReport(kind=loaded.kind, files=loaded.files, notices=tuple(dict.fromkeys(notices)),
                      cell_errors=tuple(cell_errors), stdout=stdout, stdout_truncated=truncated)


def _error_view(err: dict[str, Any], loaded: LoadedSubmission) -> dict[str, Any]:
    """A cell's (or the module's) error as the report shows it."""
    return {"cell": err.get("cell"), "where": err.get("where") if err.get("cell") else
            (loaded.files[0] if loaded.files else "your code"),
            "ename": err.get("type", "Exception"), "evalue": err.get("message", ""),
            "traceback": err.get("traceback", "")}


def provenance(assignment: Assignment, sub: Submission, sandbox: Sandbox,
               config: RunConfig, duration_s: float, cpu_s: float) -> Provenance:
    return Provenance(
        grader_version=__version__, assignment=assignment.id,
        assignment_version=assignment.version,
        assignment_digest=assignment.digest(public=config.public),
        submission_digest=sub.digest(), torch_version=torch.__version__,
        python_version=platform.python_version(), device=config.device, seed=config.seed,
        sandbox=sandbox.level.value if sandbox.level else "none",
        graded_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        duration_s=round(duration_s, 3), isolation=sandbox.describe(), cpu_s=round(cpu_s, 3),
    )
