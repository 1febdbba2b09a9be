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

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from grader import environment
from grader.errors import SandboxFailure
from grader.figures import MAX_FIGURES, FigureBatch, checked_batch
from grader.sandbox import protocol, wire
from grader.sandbox.host import Child, Limits, Sandbox
from grader.testing.load_messages import _import_failed_message
from grader.testing.student_errors import (
    MissingName,
    StudentCrashed,
    StudentProblem,
    StudentRaised,
    StudentTimeout,
    make_raised,
    raised_class,
)


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
        self.methods: set[tuple[str, str]] = set()
        """(type name, attribute) pairs seen to be methods: `RemoteObject` calls them in one
        round trip (`RemoteMethod`) instead of fetching the bound method first."""

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
                self.load = _load_outcome(protocol.reply_from_doc(reply, "load"))
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

    def request(self, request: protocol.Request | dict[str, Any]) -> Any:
        child = self._ensure_child()
        doc = request if isinstance(request, dict) else request.to_doc()
        # The seed goes with the request: no round trip of its own.
        doc, self.pending_seed = protocol.with_seed(doc, self.pending_seed), None
        try:
            reply = protocol.reply_from_doc(child.request(doc, self._time_left()), doc.get("op"))
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
        if isinstance(reply, protocol.Raised):
            raise make_raised(reply.error)
        if isinstance(reply, protocol.Missing):
            raise MissingName(self._missing_message(reply.name))
        if not isinstance(reply, protocol.Ok):
            raise StudentCrashed(f"unexpected answer from your process: {str(reply.to_doc())[:200]}")
        return reply.value

    def figures(self) -> FigureBatch:
        """The figures the submission showed since they were last asked for (its
        notebook's cells included), checked to be PNGs; at most MAX_FIGURES in all."""
        batch = checked_batch(self.request(protocol.Figures()), MAX_FIGURES - self.figures_taken)
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


def _load_outcome(reply: protocol.Reply) -> LoadOutcome:
    """What the first load reported (nothing, for an answer that is not a report)."""
    report = reply.value if isinstance(reply, protocol.Ok) else None
    if not isinstance(report, protocol.LoadReport):
        return LoadOutcome()
    return LoadOutcome(error=None if report.error is None else report.error.to_doc(),
                       cell_errors=[c.to_doc() for c in report.cell_errors],
                       defined=list(report.defined))


def _ended_message(child: Child, when: str) -> str:
    status = child.kill()
    reasons = {128 + 24: "it used up its CPU time limit", 128 + 9: "it was killed (memory or time limit?)",
               128 + 11: "it crashed (segmentation fault)", 128 + 6: "it aborted"}
    reason = reasons.get(status, f"exit status {status}: sys.exit() or os._exit() in your code?")
    return f"your process ended {when}: {reason}"


class Student:
    """What a test sees as `student`: the submission's names, called remotely."""

    _conn: Connection

    def __init__(self, connection: Connection) -> None:
        object.__setattr__(self, "_conn", connection)

    def __getattr__(self, name: str) -> "RemoteName":
        if name.startswith("__"):
            raise AttributeError(name)
        return RemoteName(self._conn, name)

    def __contains__(self, name: str) -> bool:
        return bool(self._conn.request(protocol.Has(name)))

    def seed(self, seed: int) -> None:
        self._conn.request(protocol.Seed(int(seed)))

    def figures(self) -> FigureBatch:
        """What the submission's code showed (plots) since the last call, as checked PNGs:
        attach them to the report with `feedback.figures(...)`."""
        return self._conn.figures()

    @contextmanager
    def spy(self, dotted: str) -> Iterator["SpyCount"]:
        counter = SpyCount()
        self._conn.request(protocol.SpyStart(dotted))
        try:
            yield counter
        finally:
            counter.count = int(self._conn.request(protocol.SpyStop(dotted)))


@dataclass
class SpyCount:
    count: int = 0


def _call(conn: Connection, target: protocol.Target, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> Any:
    call = protocol.Call(target, wire.encode(list(args), _handle_of), wire.encode(kwargs, _handle_of))
    return _wrap(conn, wire.decode(conn.request(call)))


def _handle_of(value: Any) -> wire.Handle:
    if isinstance(value, RemoteMethod):
        value = value.resolve()
    if isinstance(value, RemoteObject):
        handle: wire.Handle = value._handle
        return handle
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
        return _call(self._conn, protocol.Target(name=self._name), args, kwargs)

    def value(self) -> Any:
        raw = self._conn.request(protocol.GetAttr(protocol.Target(name=self._name)))
        return _wrap(self._conn, wire.decode(raw))


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
        kind = self._handle.type_name
        if (kind, name) in self._conn.methods:
            return RemoteMethod(self, name)
        value = _fetch_attr(self, name)
        if isinstance(value, RemoteObject) and value._handle.type_name in METHOD_TYPES:
            self._conn.methods.add((kind, name))
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._check()
        return _call(self._conn, protocol.Target(handle=self._handle.id), args, kwargs)

    def __repr__(self) -> str:
        return f"<student's {self._handle.type_name}>"


METHOD_TYPES = frozenset({"method", "builtin_function_or_method", "method-wrapper"})
"""Type names of the bound methods the child hands out."""


def _fetch_attr(owner: RemoteObject, name: str) -> Any:
    raw = owner._conn.request(protocol.GetAttr(protocol.Target(handle=owner._handle.id, attr=name)))
    return _wrap(owner._conn, wire.decode(raw))


class RemoteMethod:
    """`obj.name` where that name was a method of objects of this type before: calling it
    is one round trip (the child looks the method up and calls it); any other use fetches
    the bound method itself, as `RemoteObject.__getattr__` does."""

    def __init__(self, owner: RemoteObject, name: str) -> None:
        self._owner, self._name = owner, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        owner = self._owner
        owner._check()
        return _call(owner._conn, protocol.Target(handle=owner._handle.id, attr=self._name), args, kwargs)

    def resolve(self) -> Any:
        self._owner._check()
        return _fetch_attr(self._owner, self._name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.resolve(), name)

    def __repr__(self) -> str:
        return repr(self.resolve())


__all__ = ["Connection", "LoadOutcome", "MissingName", "RemoteObject", "Student",
           "StudentCrashed", "StudentProblem", "StudentRaised", "StudentTimeout",
           "make_raised", "raised_class"]

