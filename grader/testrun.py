"""Running an assignment's pytest files against one submission, in the grader's process.

The tests, their assertions and the reference run here; the student's code runs in
the sandboxed child behind the `student` fixture. One `pytest.main` call per
submission; a plugin provides the fixtures and turns each test's outcome into plain
data (`TestOutcome`).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

import pytest
import torch

from grader.errors import AssignmentError, InternalError
from grader.proxy import (
    Connection,
    MissingName,
    Student,
    StudentCrashed,
    StudentRaised,
    StudentTimeout,
)
from grader.results import Evidence
from grader.testing import GradingFailure


@dataclass(frozen=True)
class TestOutcome:
    nodeid: str
    file: Path
    function: str
    name: str
    outcome: str
    """passed | failed | error | timeout"""
    message: str
    evidence: tuple[Evidence, ...]
    duration_s: float


class Feedback:
    """The `feedback` fixture: pictures and notes attached to the running test."""

    def __init__(self) -> None:
        self.evidence: list[Evidence] = []

    def heatmaps(self, title: str, panels: list[dict[str, Any]]) -> None:
        self.evidence.append(Evidence("heatmaps", {"title": title, "panels": panels}))

    def note(self, text: str) -> None:
        self.evidence.append(Evidence("note", {"text": text}))


class GraderPlugin:
    def __init__(self, connection: Connection, reference: ModuleType | None,
                 device: str, seed: int) -> None:
        self.connection = connection
        self.reference_module = reference
        self.device_name = device
        self.seed = seed
        self.outcomes: list[TestOutcome] = []
        self.collect_errors: list[str] = []
        self.internal_errors: list[InternalError] = []
        self._feedback: dict[str, Feedback] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        # We never read pytest's failure reports, and building its long tracebacks is
        # most of a buggy submission's grading time (--tb is gone with no:terminal).
        config.option.tbstyle = "native"

    @pytest.fixture
    def student(self) -> Student:
        return Student(self.connection)

    @pytest.fixture
    def reference(self) -> ModuleType:
        if self.reference_module is None:
            pytest.fail("this test needs the reference, which is not available here")
        return self.reference_module

    @pytest.fixture
    def device(self) -> torch.device:
        return torch.device(self.device_name)

    @pytest.fixture
    def feedback(self, request: pytest.FixtureRequest) -> Feedback:
        return self._feedback.setdefault(request.node.nodeid, Feedback())

    def test_seed(self, nodeid: str) -> int:
        return (self.seed * 1_000_003 + zlib.crc32(nodeid.encode())) % (2**31)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        seed = self.test_seed(item.nodeid)
        torch.manual_seed(seed)
        self.connection.begin_test(seed)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        report = yield
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.outcomes.append(self._outcome(item, call, report))
        return report

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(f"{report.nodeid}: {report.longreprtext[-2000:]}")

    def _outcome(self, item: pytest.Item, call: pytest.CallInfo[None], report: Any) -> TestOutcome:
        fb = self._feedback.pop(item.nodeid, Feedback())
        exc = call.excinfo.value if call.excinfo else None
        if isinstance(exc, InternalError):
            self.internal_errors.append(exc)
        outcome, message, evidence = classify(exc, report.outcome)
        return TestOutcome(
            nodeid=item.nodeid, file=Path(str(item.fspath)).resolve(),
            function=getattr(item, "originalname", item.name), name=_plain_name(item),
            outcome=outcome, message=message, evidence=tuple(fb.evidence) + evidence,
            duration_s=round(call.duration, 4),
        )


def classify(exc: BaseException | None, pytest_outcome: str) -> tuple[str, str, tuple[Evidence, ...]]:
    """Map what a test raised onto an outcome and a plain-words message."""
    if exc is None:
        return ("passed" if pytest_outcome in ("passed", "skipped") else "failed"), "", ()
    if isinstance(exc, pytest.skip.Exception):
        return "passed", "", ()
    if isinstance(exc, GradingFailure):
        return "failed", exc.message, exc.evidence
    if isinstance(exc, StudentTimeout):
        return "timeout", str(exc), ()
    if isinstance(exc, StudentCrashed):
        return "error", str(exc), ()
    if isinstance(exc, MissingName):
        return "failed", str(exc), ()
    if isinstance(exc, StudentRaised):
        tb = (Evidence("traceback", {"title": "Your code raised", "text": exc.student_traceback}),)
        return "error", f"your code raised {exc}", tb
    if isinstance(exc, AssertionError):
        return "failed", _assertion_text(exc), ()
    return "failed", f"the test could not use what your code returned ({type(exc).__name__}: {exc})", ()


def _assertion_text(exc: AssertionError) -> str:
    # Asserts are not rewritten (--assert=plain): a bare `assert` must not show the
    # hidden test's expected values; `assert cond, "message"` shows the message.
    text = str(exc).strip()
    return text.splitlines()[0] if text else "a check did not hold"


def _plain_name(item: pytest.Item) -> str:
    fn = getattr(item, "function", None)
    doc = (fn.__doc__ or "").strip().splitlines() if fn else []
    name = doc[0].strip() if doc else getattr(item, "originalname", item.name).replace("_", " ")
    callspec = getattr(item, "callspec", None)
    return f"{name} [{callspec.id}]" if callspec else name


def run_tests(files: list[Path], connection: Connection, reference: ModuleType | None,
              device: str, seed: int, rootdir: Path) -> list[TestOutcome]:
    """Run the given test files against the submission behind `connection`."""
    if not files:
        return []
    plugin = GraderPlugin(connection, reference, device, seed)
    args = [str(f) for f in files] + [
        "-p", "no:cacheprovider", "-p", "no:terminal", "--noconftest", "--assert=plain",
        # These two run gc.collect() five times per session (~1.4 s with torch loaded).
        "-p", "no:unraisableexception", "-p", "no:threadexception",
        "--import-mode=importlib", f"--rootdir={rootdir}", "-c", os.devnull,
        "-W", "ignore::pytest.PytestAssertRewriteWarning", "--capture=sys",
    ]
    code = pytest.main(args, plugins=[plugin])
    if plugin.collect_errors or code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        detail = "; ".join(plugin.collect_errors) or f"pytest exit code {int(code)}"
        raise AssignmentError(f"the assignment's tests could not be collected: {detail}")
    if plugin.internal_errors:
        raise plugin.internal_errors[0]
    return plugin.outcomes


_REFERENCES: dict[Path, ModuleType] = {}


def load_reference(path: Path | None) -> ModuleType | None:
    """Import the reference implementation once per process (never in the sandbox)."""
    if path is None:
        return None
    if path not in _REFERENCES:
        name = f"grader_reference_{zlib.crc32(str(path).encode()):x}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise AssignmentError(f"cannot import the reference {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise AssignmentError(f"the reference {path} fails to import: {exc}") from exc
        _REFERENCES[path] = module
    return _REFERENCES[path]
