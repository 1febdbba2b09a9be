"""The grader's handle on a submission: the `student` fixture tests call into.

Every call is a `wire` request to the sandboxed child; results come back as plain
data (real tensors) or as `RemoteObject`s for things that stay in the child. A crash,
exit or time limit in the child becomes `StudentCrashed` / `StudentTimeout` for the
test that hit it; the next call gets a fresh child with the submission loaded again.
A child that ended because the sandbox itself failed (its zygote gone) is not the
student's doing: that raises `SandboxFailure`, and `Connection.fault` keeps it even
where a test caught it, so the submission is graded again in a fresh sandbox.
"""

from __future__ import annotations

import ast
import builtins
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from grader import environment
from grader.sandbox import wire
from grader.figures import MAX_FIGURES, FigureBatch, checked_batch
from grader.errors import SandboxFailure
from grader.sandbox.host import Child, Limits, Sandbox


class StudentProblem(Exception):
    """Base of what a student's code did to a test (as opposed to a wrong value)."""


class StudentRaised(StudentProblem):
    """The student's code raised; for builtin types the instance is also one of them."""

    type_name: str = "Exception"
    student_traceback: str = ""

    def __str__(self) -> str:
        return f"{self.type_name}: {self.args[0] if self.args else ''}"


class StudentCrashed(StudentProblem):
    """The child died, exited, or sent garbage."""


class StudentTimeout(StudentProblem):
    """A time limit was reached."""


class MissingName(StudentProblem):
    """The submission does not define a name a test uses."""


_RAISED_CLASSES: dict[str, type[StudentRaised]] = {}
_NOT_MIXED = {"BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit",
              "AssertionError", "StopIteration", "StopAsyncIteration"}


def raised_class(builtin_name: str | None) -> type[StudentRaised]:
    """A StudentRaised subclass that is also the named builtin exception type.

    Built from the builtin's *name* only: nothing the child sends is ever executed or
    unpickled. AssertionError is never mixed in, so a student's assert cannot pass for
    a test's verdict.
    """
    name = builtin_name if builtin_name and builtin_name not in _NOT_MIXED else None
    base = getattr(builtins, name, None) if name else None
    if not (isinstance(base, type) and issubclass(base, Exception)):
        return StudentRaised
    if name not in _RAISED_CLASSES:
        _RAISED_CLASSES[name] = type(f"Student{name}", (StudentRaised, base), {})
    return _RAISED_CLASSES[name]


def make_raised(info: dict[str, Any]) -> StudentRaised:
    exc = raised_class(info.get("builtin"))(str(info.get("message", "")))
    exc.type_name = str(info.get("type", "Exception"))[:100]
    exc.student_traceback = str(info.get("traceback", ""))
    return exc


@dataclass
class LoadOutcome:
    """What happened when the submission was loaded into its first child."""

    error: dict[str, Any] | None = None
    cell_errors: list[dict[str, Any]] = field(default_factory=list)
    defined: list[str] = field(default_factory=list)
    failure: str = ""
    """Set when loading itself crashed or timed out: nothing can be called then."""
    timed_out: bool = False


class Connection:
    """One submission's child process, respawned on demand, with time budgets."""

    STRIKE_TIMEOUT_S = 1.0
    """After one test timed out, later tests get this much: the tests' tensors are tiny,
    so correct code answers in milliseconds, and a hang in a shared method must not cost
    the whole submission's time budget."""

    def __init__(self, sandbox: Sandbox, load_request: dict[str, Any], limits: Limits,
                 label: str, env: environment.Environment | None = None) -> None:
        self.sandbox = sandbox
        self.load_request = load_request
        self.limits = limits
        self.label = label
        self.environment = env
        """What the submission may import (the assignment's `environment:`), for messages."""
        self.child: Child | None = None
        self.generation = 0
        self.load: LoadOutcome | None = None
        self.started = time.monotonic()
        self.test_deadline = float("inf")
        self.pending_seed: int | None = None
        self.output: list[tuple[str, bool]] = []
        self.timeouts = 0
        self.student_cpu_s = 0.0
        self.figures_taken = 0
        """Figures handed to tests so far: at most MAX_FIGURES per submission."""
        self.fault: SandboxFailure | None = None
        """The sandbox's own failure, if one happened: this grading does not count."""

    # -- lifecycle

    def begin_test(self, seed: int) -> None:
        self.test_deadline = time.monotonic() + self._per_test_s()
        self.pending_seed = seed

    def _per_test_s(self) -> float:
        if self.timeouts == 0:
            return self.limits.per_test_s
        return min(self.limits.per_test_s, self.STRIKE_TIMEOUT_S)

    def close(self) -> None:
        self._retire_child()

    def _retire_child(self) -> None:
        if self.child is not None:
            self.child.close()
            self.output.append(self.child.drain.text())
            self.student_cpu_s += self.child.cpu_s
            self.child = None

    def _ensure_child(self) -> Child:
        if self.fault is not None:
            raise self.fault
        if self.load is not None and self.load.failure:
            self._retire_child()
            self._raise_load_failure()
        if self.child is not None and self.child.alive:
            return self.child
        if self.child is not None:
            self._retire_child()
        if self._submission_time_left() <= 0:
            raise StudentTimeout(self._timeout_message())
        try:
            self.child = self.sandbox.spawn()
        except SandboxFailure as exc:
            raise self._fault(exc) from None
        if self.child.isolation.get("error"):
            self.child.kill()
            raise self._fault(SandboxFailure(f"sandbox: {self.child.isolation['error']}"))
        self.generation += 1
        self._load_into(self.child)
        # Loading has its own limit; the test's clock starts when it can call.
        self.test_deadline = max(self.test_deadline, time.monotonic() + self._per_test_s())
        return self.child

    def _load_into(self, child: Child) -> None:
        first = self.load is None
        try:
            reply = child.request(self.load_request, min(self.limits.load_s, self._submission_time_left()))
        except TimeoutError:
            self._blame_sandbox_if_lost()
            self._record_load_failure(f"loading your code did not finish within "
                                      f"{self.limits.load_s:.0f} s (an endless loop at top level?)", True)
        except (EOFError, wire.WireError):
            self._blame_sandbox_if_lost()
            self._record_load_failure(_ended_message(child, "while loading your code"), False)
        else:
            if first:
                value = reply.get("value") or {}
                self.load = LoadOutcome(error=value.get("error"),
                                        cell_errors=list(value.get("cell_errors", [])),
                                        defined=list(value.get("defined", [])))
                if self.load.error:
                    self.load.failure = _import_failed_message(
                        self.label, self.load.error, str(self.load_request.get("source", "")),
                        self.environment)
            if not self.load or not self.load.failure:
                return
        self._raise_load_failure()

    def _record_load_failure(self, message: str, timed_out: bool) -> None:
        if self.load is None or not self.load.failure:
            self.load = LoadOutcome(failure=message, timed_out=timed_out)

    def _raise_load_failure(self) -> None:
        assert self.load is not None
        cls = StudentTimeout if self.load.timed_out else StudentCrashed
        raise cls(self.load.failure)

    # -- requests

    def request(self, doc: dict[str, Any]) -> Any:
        child = self._ensure_child()
        if self.pending_seed is not None:  # sent with the request: no round trip of its own
            doc, self.pending_seed = {**doc, "seed": self.pending_seed}, None
        try:
            reply = child.request(doc, self._time_left())
        except TimeoutError:
            self._blame_sandbox_if_lost()
            self.timeouts += 1
            raise StudentTimeout(self._timeout_message()) from None
        except EOFError:
            self._blame_sandbox_if_lost()
            raise StudentCrashed(_ended_message(child, "during this test")) from None
        except wire.WireError as exc:
            self._blame_sandbox_if_lost()
            raise StudentCrashed(f"your process sent something that is not plain data ({exc})") from None
        if "raised" in reply:
            raise make_raised(reply["raised"])
        if "missing" in reply:
            raise MissingName(self._missing_message(str(reply["missing"])))
        if not reply.get("ok"):
            raise StudentCrashed(f"unexpected answer from your process: {str(reply)[:200]}")
        return reply.get("value")

    def figures(self) -> FigureBatch:
        """The figures the submission showed since they were last asked for (its
        notebook's cells included), checked to be PNGs; at most MAX_FIGURES in all."""
        batch = checked_batch(self.request({"op": "figures"}), MAX_FIGURES - self.figures_taken)
        self.figures_taken += len(batch.figures)
        return batch

    def _blame_sandbox_if_lost(self) -> None:
        """After a child failed (and was killed through the zygote): when the zygote is
        gone, the sandbox failed, not the student's code. A child killed by anything
        else cannot be told from a crash, and stays the student's."""
        try:
            self.sandbox.check()
        except SandboxFailure as exc:
            raise self._fault(exc) from None

    def _fault(self, exc: SandboxFailure) -> SandboxFailure:
        if self.fault is None:
            self.fault = exc
        return self.fault

    def _submission_time_left(self) -> float:
        return self.started + self.limits.per_submission_s - time.monotonic()

    def _time_left(self) -> float:
        return max(min(self.test_deadline - time.monotonic(), self._submission_time_left()), 0.0)

    def _timeout_message(self) -> str:
        if self._submission_time_left() <= 0:
            return (f"the whole submission used its {self.limits.per_submission_s:.0f} s; "
                    "remaining tests were not run")
        return (f"your code did not finish within {self._per_test_s():.0f} s "
                "(an endless loop, or far too much work?)")

    def _missing_message(self, name: str) -> str:
        message = f"{self.label} does not define `{name}`"
        errors = self.load.cell_errors if self.load else []
        if errors:
            cells = ", ".join(str(e["cell"]) for e in errors)
            message += f" (cell {cells} raised an error: was it meant to define it?)"
        return message


def _import_failed_message(label: str, error: dict[str, Any], source: str = "",
                           env: environment.Environment | None = None) -> str:
    """Why a module did not load, with the advice that fits what went wrong: a package
    outside the environment is named as such; "keep demo code under __main__" is said
    only where the failing line is code that runs on import (not an import, a def or a
    class, and not a syntax error)."""
    text = str(error.get("traceback", ""))
    line = _last_line_number(text, label)
    module = environment.missing_module(error)
    if module:
        return environment.missing_module_message(
            f"{label}{f' (line {line})' if line else ''}", module, env)
    where = f" at line {line}" if line else ""
    message = f"importing {label} raised {error.get('type')}{where}: {error.get('message')}"
    if _runs_on_import(source, _module_line(text, label)):
        message += (". A module must import without errors: keep demo code under "
                    "`if __name__ == \"__main__\":`")
    return message


def _module_line(traceback_text: str, label: str) -> int:
    """The line of the top-level statement that was running (the outermost frame of the
    student's file), or 0."""
    for ln in traceback_text.splitlines():
        if label in ln and "line " in ln and ln.rstrip().endswith("in <module>"):
            number = ln.split("line ", 1)[1].split(",", 1)[0].strip()
            return int(number) if number.isdigit() else 0
    return 0


def _runs_on_import(source: str, line: int) -> bool:
    """True when `line` is in a top-level statement that is demo code: not an import,
    a function or a class definition."""
    if not line:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for stmt in tree.body:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            return not isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                         ast.AsyncFunctionDef, ast.ClassDef))
    return False


def _last_line_number(traceback_text: str, label: str) -> str:
    found = ""
    for ln in traceback_text.splitlines():
        if label in ln and "line " in ln:
            found = ln.split("line ", 1)[1].split(",", 1)[0].strip()
    return found


def _ended_message(child: Child, when: str) -> str:
    status = child.kill()
    reasons = {128 + 24: "it used up its CPU time limit", 128 + 9: "it was killed (memory or time limit?)",
               128 + 11: "it crashed (segmentation fault)", 128 + 6: "it aborted"}
    reason = reasons.get(status, f"exit status {status}: sys.exit() or os._exit() in your code?")
    return f"your process ended {when}: {reason}"


class Student:
    """What a test sees as `student`: the submission's names, called remotely."""

    def __init__(self, connection: Connection) -> None:
        object.__setattr__(self, "_conn", connection)

    def __getattr__(self, name: str) -> "RemoteName":
        if name.startswith("__"):
            raise AttributeError(name)
        return RemoteName(self._conn, name)

    def __contains__(self, name: str) -> bool:
        return bool(self._conn.request({"op": "has", "name": name}))

    def seed(self, seed: int) -> None:
        self._conn.request({"op": "seed", "seed": int(seed)})

    def figures(self) -> FigureBatch:
        """What the submission's code showed (plots) since the last call, as checked PNGs:
        attach them to the report with `feedback.figures(...)`."""
        return self._conn.figures()

    @contextmanager
    def spy(self, dotted: str) -> Iterator["SpyCount"]:
        counter = SpyCount()
        self._conn.request({"op": "spy_start", "target": dotted})
        try:
            yield counter
        finally:
            counter.count = int(self._conn.request({"op": "spy_stop", "target": dotted}))


@dataclass
class SpyCount:
    count: int = 0


def _call(conn: Connection, target: dict[str, Any], args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> Any:
    doc = {"op": "call", **target, "args": wire.encode(list(args), _handle_of),
           "kwargs": wire.encode(kwargs, _handle_of)}
    return _wrap(conn, wire.decode(conn.request(doc)))


def _handle_of(value: Any) -> wire.Handle:
    if isinstance(value, RemoteObject):
        return value._handle
    raise wire.WireError(f"cannot send a {type(value).__name__} to the student's process")


def _wrap(conn: Connection, value: Any) -> Any:
    if isinstance(value, wire.Handle):
        return RemoteObject(conn, value)
    if isinstance(value, tuple):
        return tuple(_wrap(conn, v) for v in value)
    if isinstance(value, list):
        return [_wrap(conn, v) for v in value]
    if isinstance(value, dict):
        return {k: _wrap(conn, v) for k, v in value.items()}
    return value


class RemoteName:
    """A top-level name of the submission: call it, or read it with `.value()`."""

    def __init__(self, conn: Connection, name: str) -> None:
        self._conn, self._name = conn, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self._conn, {"name": self._name}, args, kwargs)

    def value(self) -> Any:
        return _wrap(self._conn, wire.decode(self._conn.request({"op": "getattr", "name": self._name})))


class RemoteObject:
    """An object that lives in the child (a module, a bound method...)."""

    def __init__(self, conn: Connection, handle: wire.Handle) -> None:
        object.__setattr__(self, "_conn", conn)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_generation", conn.generation)

    def _check(self) -> None:
        if self._generation != self._conn.generation:
            raise StudentCrashed("this object was lost when your process ended earlier")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._check()
        raw = self._conn.request({"op": "getattr", "handle": self._handle.id, "attr": name})
        return _wrap(self._conn, wire.decode(raw))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return _call(self._conn, {"handle": self._handle.id}, args, kwargs)

    def __repr__(self) -> str:
        return f"<student's {self._handle.type_name}>"


__all__ = ["Connection", "LoadOutcome", "MissingName", "RemoteObject", "Student",
           "StudentCrashed", "StudentProblem", "StudentRaised", "StudentTimeout"]

