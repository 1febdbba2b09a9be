"""Running an assignment's pytest files against one submission, in the grader's process.

The tests, their assertions and the reference run here; the student's code runs in
the sandboxed child behind the `student` fixture. A plugin provides the fixtures
(`student`, `reference`, `support`, `device`, `feedback`) and turns each test's outcome
into plain data (`TestOutcome`). `support` is the assignment's support module, imported
here from the assignment's folder, like the reference.

One pytest session serves every submission a process grades (`TestRunner`): pytest's
configuration and collection, and the import of the test files, are paid once, and
the collected items are run again for each submission, the way pytest's own loop runs
them, so every fixture is torn down after each submission's last test. The session
runs in its own thread because `pytest.main` only returns at the end.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import re
import sys
import threading
import zlib
from collections.abc import Generator
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from grader.errors import AssignmentError, GraderError, InternalError, SandboxFailure, SubmissionError
from grader.figures import FigureBatch
from grader.results import Evidence, EvidenceKind, Figure, Outcome, TestOutcome
from grader.sandbox.inside.seeding import seed_all
from grader.testing import GradingFailure
from grader.testing.student import (
    Connection,
    MissingName,
    Student,
    StudentCrashed,
    StudentRaised,
    StudentTimeout,
)


class Feedback:
    """The `feedback` fixture: pictures and notes attached to the running test."""

    def __init__(self) -> None:
        self.evidence: list[Evidence] = []
        self.shown: list[Figure] = []

    def heatmaps(self, title: str, panels: list[dict[str, Any]]) -> None:
        self.evidence.append(Evidence(EvidenceKind.HEATMAPS, {"title": title, "panels": panels}))

    def note(self, text: str) -> None:
        self.evidence.append(Evidence(EvidenceKind.NOTE, {"text": text}))

    def figures(self, batch: FigureBatch) -> None:
        """Show the student's own figures (`student.figures()`) under this test."""
        self.shown.extend(batch.figures)
        for why in batch.left_out:
            self.note(why)


class GraderPlugin:
    def __init__(self, reference: ModuleType | None, device: str, seed: int,
                 support: ModuleType | None = None) -> None:
        self.connection: Connection | None = None
        self.reference_module = reference
        self.support_module = support
        self.device_name = device
        self.seed = seed
        self.outcomes: list[TestOutcome] = []
        self.collect_errors: list[str] = []
        self.internal_errors: list[GraderError] = []
        self._feedback: dict[str, Feedback] = {}
        self.jobs: queue.Queue[tuple[Connection, queue.Queue[Any]] | None] = queue.Queue()
        self.collected: queue.Queue[str] = queue.Queue()

    def pytest_configure(self, config: pytest.Config) -> None:
        # We never read pytest's failure reports, and building its long tracebacks is
        # most of a buggy submission's grading time (--tb is gone with no:terminal).
        config.option.tbstyle = "native"

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        """Instead of running the items once: run them for each submission sent."""
        self.collected.put("; ".join(self.collect_errors))
        if self.collect_errors:
            return True
        while (job := self.jobs.get()) is not None:
            connection, reply = job
            try:
                reply.put(self._run_items(session.items, connection))
            except BaseException as exc:
                # Something escaped pytest's own protocol: which fixtures are still set
                # up is unknown, so this session ends; the runner starts a new one.
                reply.put(exc)
                return True
        return True

    def _run_items(self, items: list[pytest.Item],
                   connection: Connection) -> tuple[list[TestOutcome], list[GraderError]]:
        self.connection, self.outcomes, self.internal_errors = connection, [], []
        self._feedback.clear()
        for i, item in enumerate(items):
            item._report_sections = []  # captured output of the previous submission's run
            item.user_properties = []
            # nextitem=None after the last item tears down every fixture, of every scope.
            nextitem = items[i + 1] if i + 1 < len(items) else None
            item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        return self.outcomes, self.internal_errors

    @pytest.fixture
    def student(self) -> Student:
        assert self.connection is not None
        return Student(self.connection)

    @pytest.fixture
    def reference(self) -> ModuleType:
        if self.reference_module is None:
            pytest.fail("this test needs the reference, which is not available here")
        return self.reference_module

    @pytest.fixture
    def support(self) -> ModuleType:
        """The assignment's support module (`support:` in its YAML): helpers its tests share."""
        if self.support_module is None:
            raise AssignmentError("a test asks for the `support` fixture, but the assignment "
                                  "declares no support module (`support:` in its YAML)")
        return self.support_module

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
        seed_all(seed)
        assert self.connection is not None
        self.connection.begin_test(seed)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
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
        if exc is not None and graders_fault(exc):
            self.internal_errors.append(as_grader_error(exc))
        outcome, message, evidence = classify(exc, report.outcome)
        return TestOutcome(
            nodeid=item.nodeid, file=_resolved(str(item.fspath)),
            function=getattr(item, "originalname", item.name), name=_plain_name(item),
            outcome=outcome, message=message, evidence=tuple(fb.evidence) + evidence,
            duration_s=round(call.duration, 4), figures=tuple(fb.shown),
        )


@lru_cache(maxsize=256)
def _resolved(path: str) -> Path:
    """A test file's real path, once per worker (resolving it for each test's outcome cost
    about 15 us of system calls a test)."""
    return Path(path).resolve()


def classify(exc: BaseException | None, pytest_outcome: str) -> tuple[Outcome, str, tuple[Evidence, ...]]:
    """Map what a test raised onto an outcome and a plain-words message."""
    if exc is None:
        return (Outcome.PASSED if pytest_outcome in ("passed", "skipped") else Outcome.FAILED), "", ()
    if isinstance(exc, pytest.skip.Exception):
        return Outcome.PASSED, "", ()
    if isinstance(exc, GradingFailure):
        return Outcome.FAILED, exc.message, exc.evidence
    if isinstance(exc, StudentTimeout):
        return Outcome.TIMEOUT, str(exc), ()
    if isinstance(exc, StudentCrashed):
        return Outcome.ERROR, str(exc), ()
    if isinstance(exc, MissingName):
        return Outcome.FAILED, str(exc), ()
    if isinstance(exc, StudentRaised) and exc.type_name == "NotImplementedError":
        return Outcome.ERROR, _not_implemented(exc), ()
    if isinstance(exc, StudentRaised):
        tb = (Evidence(EvidenceKind.TRACEBACK, {"title": "Your code raised", "text": exc.student_traceback}),)
        return Outcome.ERROR, f"your code raised {exc}", tb
    if isinstance(exc, AssertionError):
        return Outcome.FAILED, _assertion_text(exc), ()
    if graders_fault(exc):  # never the student's: `TestRunner.run` raises it instead
        return Outcome.ERROR, f"the grader failed in this test ({type(exc).__name__}: {exc}); not your code", ()
    return Outcome.FAILED, f"the test could not use what your code returned ({type(exc).__name__}: {exc})", ()


def graders_fault(exc: BaseException) -> bool:
    """What a test raised that no code of the student's can have caused: the grader's
    own errors, and I/O errors of its process (a socket to a dead sandbox). What the
    student's code raised arrives as a `StudentProblem`, whatever its type."""
    if isinstance(exc, SubmissionError):
        return False
    return isinstance(exc, (GraderError, OSError))


def as_grader_error(exc: BaseException) -> GraderError:
    if isinstance(exc, GraderError):
        return exc
    return InternalError(f"{type(exc).__name__} in the grader's process during a test: {exc}")


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _not_implemented(exc: StudentRaised) -> str:
    """A `raise NotImplementedError("TODO: ...")` still in the student's code: the TODO's
    text and where it is, without a traceback that would only point at the raise."""
    text = re.sub(r"^\s*TODO\b\s*:?\s*", "", str(exc.args[0] if exc.args else "")).strip()
    frames = _FRAME.findall(exc.student_traceback)
    where = ""
    if frames:
        file, line = frames[-1]
        cell = file.startswith("<ipython-input-")  # a notebook cell, named by IPython
        where = f" (notebook cell, line {line})" if cell else f" ({Path(file).name}, line {line})"
    return f"not implemented yet: {text or 'your code raises NotImplementedError'}{where}"


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


_PYTEST_ARGS = [
    "-p", "no:cacheprovider", "-p", "no:terminal", "--noconftest", "--assert=plain",
    # These two run gc.collect() five times per session (~1.4 s with torch loaded).
    "-p", "no:unraisableexception", "-p", "no:threadexception",
    # Nothing reads the logs; its handlers would stay on the root logger between runs.
    "-p", "no:logging",
    "--import-mode=importlib", "-c", os.devnull,
    "-W", "ignore::pytest.PytestAssertRewriteWarning", "--capture=sys",
]


class TestRunner:
    """Runs one set of test files against one submission after another, in one pytest
    session. Use as a context manager, or call `close()`."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(self, files: list[Path], reference: ModuleType | None, device: str,
                 seed: int, rootdir: Path, support: Path | None = None) -> None:
        self.files = files
        self._support = load_support(support) if files and support else None
        self._plugin = GraderPlugin(reference, device, seed, self._support)
        self._thread: threading.Thread | None = None
        self._modules_before = set(sys.modules)
        self._closed = False
        self._args = [str(f) for f in files] + _PYTEST_ARGS + [f"--rootdir={rootdir}"]
        if files:
            self._start()

    def _start(self) -> None:
        plugin = self._plugin
        plugin.collected, plugin.jobs, plugin.collect_errors = queue.Queue(), queue.Queue(), []
        self._thread = threading.Thread(target=self._session, args=(self._args,), daemon=True,
                                        name="grader-tests")
        self._thread.start()
        errors = self._plugin.collected.get()
        if errors:  # what the session imported must not stay for the next one to find
            self.close()
            raise AssignmentError(f"the assignment's tests could not be collected: {errors}")

    def _session(self, args: list[str]) -> None:
        code: object = None
        try:
            code = pytest.main(args, plugins=[self._plugin])
        finally:  # whatever ended the session early, a caller waiting on it must wake
            self._plugin.collected.put(f"pytest stopped before running them (exit code {code})")

    def run(self, connection: Connection) -> list[TestOutcome]:
        """Run every test against the submission behind `connection`."""
        if self._thread is None:
            return []
        if self._closed:
            raise InternalError("this test session was closed; it cannot run more tests")
        if not self._thread.is_alive():  # the last one ended on an error of its own
            self._start()
        reply: queue.Queue[Any] = queue.Queue()
        self._plugin.jobs.put((connection, reply))
        result = reply.get()
        if isinstance(result, BaseException):
            raise result
        outcomes, internal_errors = result
        if connection.fault is not None:  # also where a test caught it
            raise connection.fault
        if internal_errors:
            sandbox = [e for e in internal_errors if isinstance(e, SandboxFailure)]
            raise (sandbox or internal_errors)[0]
        return list(outcomes)

    def close(self) -> None:
        self._closed = True
        if self._thread is not None and self._thread.is_alive():
            self._plugin.jobs.put(None)
            self._thread.join()
        _forget_modules(set(sys.modules) - self._modules_before, {f.parent for f in self.files})
        if self._support is not None:
            sys.modules.pop(self._support.__name__, None)

    def __enter__(self) -> "TestRunner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _forget_modules(names: set[str], folders: set[Path]) -> None:
    """Drop the test modules a session imported. pytest names them by their path under
    the rootdir (`hidden.test_add`) and reuses a module already of that name, so a later
    session in this process (another assignment, or these files edited) would otherwise
    run these instead of its own files."""
    for name in names:
        module = sys.modules.get(name)
        where = [getattr(module, "__file__", None) or "", *getattr(module, "__path__", ())]
        if any(w and any(Path(w).is_relative_to(f) for f in folders) for w in where):
            del sys.modules[name]


def load_support(path: Path) -> ModuleType:
    """Import an assignment's support module, in the grader's process (never in the
    sandbox), afresh for each test session so that an edited file is seen."""
    name = f"grader_support_{zlib.crc32(str(path).encode()):x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise AssignmentError(f"cannot import the support module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up there
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise AssignmentError(f"the support module {path} fails to import: {exc}") from exc
    return module


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
