"""Running student code isolated: a warm zygote under bubblewrap or as a plain process.

    Sandbox (one per grading worker; a batch's workers share one zygote: `launch_shared`)
      └─ zygote  (bwrap: no network, own pid/ipc/uts, read-only runtime, tmpfs /tmp)
           └─ child per submission (fresh fork: new session, namespaces, own uid,
              private workdir with a copy of the submission, rlimits)

`Sandbox.spawn()` returns a `Child`: a socket for `wire` frames, a drained and capped
output stream, what isolation it actually got (`Child.isolation`), and the means to
kill it (with everything it started). Levels:

- `bwrap`: the zygote runs under bubblewrap with only the system libraries, the Python
  runtime, its packages and the `grader` package bound read-only, a size-capped tmpfs
  /tmp and no network. Hidden tests, the reference, other submissions, reports/ and
  $HOME do not exist in there. As root, bubblewrap gets no user namespace and the
  zygote keeps only CAP_SETUID/SETGID/KILL, so each child runs as a uid of its own
  (the kernel never enforces RLIMIT_NPROC for uid 0, even in a user namespace).
- `process`: the zygote is a plain child process with a scrubbed environment. As root
  each child builds a private root filesystem in its own mount namespace (the same
  read-only view as bwrap) and runs as a uid of its own; otherwise it gets user, pid,
  net and ipc namespaces where the kernel allows, and rlimits everywhere. For laptops
  (macOS) and containers without bubblewrap. See SECURITY.md.

Here: the `Sandbox`. Its zygote's argv, read-only paths and the bwrap probe are in
`launch`, a child's handle in `handle`, the messages both sides send in `protocol`.
"""

from __future__ import annotations

import queue
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from grader.errors import SandboxFailure, SandboxLost, SandboxUnavailable
from grader.limits import Limits
from grader.sandbox import frames, protocol
from grader.sandbox.frames import recv_frame_until
from grader.sandbox.handle import CLOSED, MAX_CHILD_FRAME_BYTES, Child, OutputDrain
from grader.sandbox.launch import (
    SYSTEM_DIRS,
    Isolation,
    bwrap_works,
    clean_env,
    describe,
    gpu_device_nodes,
    readonly_paths,
    zygote_argv,
)
from grader.sandbox.protocol import MAX_REPLY_TEXT, checked_reply

_zygote_argv = zygote_argv  # the name tests and scripts know
HelloT = TypeVar("HelloT", protocol.Hello, protocol.ChildHello)


class Sandbox:
    """A warm zygote that forks isolated children; use as a context manager."""

    def __init__(self, isolation: Isolation = Isolation.AUTO, limits: Limits = Limits(),
                 prewarm: bool = True, spare: bool = True, hidden: tuple[Path, ...] = (),
                 warm_imports: tuple[str, ...] = ()):
        self.requested = Isolation(isolation)
        self.warm_imports = warm_imports
        """Plotting modules the zygote may import for its children (`warm_plots`)."""
        self._warm_asked = False
        self.hidden = hidden
        """Folders no read-only bind may show (the assignment, with its hidden tests)."""
        self.limits = limits
        self.prewarm = prewarm
        self.spare = spare
        """Keep one child forked ahead (see `spawn`)."""
        self._spare: Child | None = None
        self._spare_thread: threading.Thread | None = None
        self._to_kill: queue.Queue[int | None] = queue.Queue()
        self._killer: threading.Thread | None = None
        """Import what meta-device ops need in the zygote (~1 s once; saves it per child)."""
        self.level: Isolation | None = None
        self.strategy = ""
        """How the zygote isolates each child (see `zygote`): root-private,
        setuid-userns, userns or none."""
        self.facts: dict[str, Any] = {}
        """The isolation the latest child reported (namespaces, uid, filesystem, limits)."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._ready = False
        self._lock = threading.Lock()
        self._lost = ""
        """Why the zygote can fork no more children ("" while it can)."""

    def __enter__(self) -> "Sandbox":
        self.launch()  # `spawn` waits for the zygote to be ready
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def resolve_level(self) -> Isolation:
        """The level `start` will use: `auto` is bwrap where it works, else process;
        `bwrap` where it does not work raises SandboxUnavailable."""
        level = self.requested
        if level is Isolation.AUTO:
            return Isolation.BWRAP if bwrap_works() else Isolation.PROCESS
        if level is Isolation.BWRAP and not bwrap_works():
            raise SandboxUnavailable.bwrap_missing()
        return level

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the zygote without waiting for it (it imports torch: ~2 s), so the
        caller can do its own imports meanwhile; `wait_ready` (or `spawn`) waits."""
        self.attach(self.launch_shared(1)[0], self.resolve_level())

    def launch_shared(self, n: int) -> list[socket.socket]:
        """Start a zygote that serves `n` connections, one per grading worker, and
        return them, for each worker's sandbox to `attach`: a batch boots torch once.
        This object keeps only the process; `stop` waits for it once all are closed."""
        level = self.resolve_level()
        pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(n)]
        fds = [theirs.fileno() for _ours, theirs in pairs]
        argv = zygote_argv(level, fds, self.limits, self.prewarm, self.hidden, self.warm_imports)
        self._proc = subprocess.Popen(argv, pass_fds=fds, env=clean_env(level),
                                      stdin=subprocess.DEVNULL, cwd="/")
        for _ours, theirs in pairs:
            theirs.close()
        self.level = level
        return [ours for ours, _theirs in pairs]

    def attach(self, control: socket.socket, level: Isolation) -> None:
        """Use a zygote's connection (see `launch_shared`). Its hello is read by
        `wait_ready`; a `restart` starts a zygote of this sandbox's own."""
        self._control = control
        self.level = level
        self._ready = False
        self._lost = ""
        self._warm_asked = False  # a fresh zygote has imported nothing yet

    def wait_ready(self) -> None:
        if self._ready:
            return
        if self._control is None:
            raise SandboxFailure("the sandbox is not started")
        self._control.settimeout(180)
        try:
            hello = protocol.Hello.from_doc(frames.recv_frame(self._control))
        except (EOFError, OSError, frames.WireError):
            message = _zygote_died_message(self._proc)
            self.stop()
            raise SandboxUnavailable(message) from None
        self.strategy = _checked_hello(hello, self.stop).strategy
        self._ready = True

    def stop(self) -> None:
        spare = self._take_spare() if self._control is not None else None
        if spare is not None:
            spare.kill()
        self._drain_kills()
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def restart(self) -> None:
        """A fresh zygote in place of this one (after it died, or to rule it out)."""
        self.stop()
        self.start()

    def ready_or_restart(self) -> None:
        """`wait_ready`, giving a zygote that died while it started (killed, a host
        hiccup) one fresh start; SandboxUnavailable when that one fails too."""
        try:
            self.wait_ready()
        except SandboxUnavailable:
            self.restart()

    @property
    def healthy(self) -> bool:
        """Whether the zygote can still fork children (no control call needed)."""
        try:
            self.check()
        except SandboxFailure:
            return False
        return True

    def check(self) -> None:
        """Raise SandboxLost when the zygote is gone: it exited, or a control call
        failed. A child that died while this holds died of its own doing."""
        if self._control is None:
            raise SandboxLost("the sandbox is not running")
        code = self._proc.poll() if self._proc is not None else None
        if not self._lost and code is not None:
            self._lost = f"the sandbox's warm process exited (status {code})"
        if self._lost:
            raise SandboxLost(self._lost)

    def spawn(self) -> Child:
        """A fresh child for one submission (or a retry after a crash).

        With `spare`, the next child is forked in the background while this one is
        used, taking the fork off the grading's critical path. A spare has run no code
        and holds nothing of anyone: it is as fresh as one forked on demand."""
        self.wait_ready()
        # The previous child is gone, workdir and all, before the next one runs code:
        # its kill overlapped the grader's own work in between.
        self._to_kill.join()
        self.check()
        child = self._take_spare() or self._fork()
        if self.spare:
            self._spare_thread = threading.Thread(target=self._fork_spare, daemon=True)
            self._spare_thread.start()
        self.facts = child.isolation
        return child

    def _fork_spare(self) -> None:
        try:
            self._spare = self._fork()
        except (OSError, SandboxFailure, frames.WireError, EOFError):
            self._spare = None  # spawn forks on demand instead

    def _take_spare(self) -> Child | None:
        if self._spare_thread is not None:
            self._spare_thread.join()
            self._spare_thread = None
        spare, self._spare = self._spare, None
        return spare

    def _fork(self) -> Child:
        try:
            proto_ours, proto_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            out_ours, out_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError as exc:
            raise SandboxFailure(f"cannot make the sockets of a child: {exc}") from None
        frame = frames.pack(protocol.Fork(self.limits.for_child()).to_doc())
        try:
            reply = self._control_call(frame, [proto_theirs.fileno(), out_theirs.fileno()])
            try:
                pid = protocol.Forked.from_doc(reply).pid
            except frames.WireError as exc:
                raise self._lose(str(exc)) from None
        except SandboxFailure:
            proto_ours.close()
            out_ours.close()
            raise
        finally:
            proto_theirs.close()
            out_theirs.close()
        drain = OutputDrain(out_ours, self.limits.output_kb * 1024)
        child = Child(self, pid, proto_ours, drain)
        # The child's first frame, sent before any student code runs.
        try:
            first = recv_frame_until(proto_ours, time.monotonic() + max(self.limits.load_s, 30),
                                     1 << 20)
        except (EOFError, OSError, frames.WireError):
            child.isolation = {"error": "the child ended before reporting its isolation"}
            return child
        hello = protocol.ChildHello.from_doc(first)
        child.isolation = hello.isolation
        _checked_hello(hello, child.kill)
        return child

    @property
    def may_warm_plots(self) -> bool:
        """Whether `warm_plots` would still ask the zygote anything (so a caller need not
        look for plotting imports once it has)."""
        return bool(self.warm_imports) and not self._warm_asked

    def warm_plots(self) -> None:
        """A submission that plots is being graded: have the zygote import the plotting
        libraries it was started with (`warm_imports`), so the children forked after its
        answer do not each pay for them. Asked once per sandbox; a zygote started without
        them answers that there is nothing to do."""
        if not self.may_warm_plots:
            return
        self._warm_asked = True
        reply = self._control_call(frames.pack(protocol.Warm().to_doc()), [])
        try:
            protocol.Warmed.from_doc(reply)
        except frames.WireError as exc:
            raise self._lose(str(exc)) from None

    def describe(self) -> str:
        """One line for reports: the level, and what the latest child actually got."""
        return describe(self.level, self.facts)

    def kill_later(self, pid: int) -> None:
        """Kill and reap a child that was asked to exit, off the caller's path."""
        if self._killer is None:
            self._killer = threading.Thread(target=self._kill_queued, daemon=True)
            self._killer.start()
        self._to_kill.put(pid)

    def _kill_queued(self) -> None:
        while (pid := self._to_kill.get()) is not None:
            try:
                self.kill(pid)
            finally:
                self._to_kill.task_done()
        self._to_kill.task_done()

    def _drain_kills(self) -> None:
        if self._killer is not None:
            self._to_kill.put(None)
            self._killer.join()
            self._killer = None

    def kill(self, pid: int) -> tuple[int, float]:
        """Kill a child and all it started: (exit status, CPU seconds it used)."""
        try:
            reply = self._control_call(frames.pack(protocol.Kill(pid).to_doc()), [])
        except SandboxLost:
            return -1, 0.0  # `check` says why from now on
        try:
            killed = protocol.Killed.from_doc(reply)
        except frames.WireError as exc:
            self._lose(str(exc))
            return -1, 0.0
        return killed.status, killed.cpu_s

    def _control_call(self, frame: bytes, fds: list[int]) -> dict[str, Any]:
        """One request to the zygote and its answer. Any failure here is the sandbox's,
        never a student's: the zygote is marked lost and SandboxLost raised."""
        with self._lock:
            if self._lost or self._control is None:
                raise SandboxLost(self._lost or "the sandbox is not running")
            try:
                self._control.settimeout(60)
                socket.send_fds(self._control, [frame], fds)
                return frames.recv_frame(self._control)
            except (OSError, EOFError, frames.WireError) as exc:
                raise self._lose(_zygote_lost_message(self._proc, exc)) from None

    def _lose(self, why: str) -> SandboxLost:
        """Mark the zygote unusable (the first reason is kept) and say so."""
        self._lost = self._lost or why
        return SandboxLost(self._lost)


def _checked_hello(hello: HelloT, stop: Callable[[], object]) -> HelloT:
    """The other side's hello, if it speaks our version and can serve; else `stop` it
    and raise SandboxFailure (the grader's fault, never a student's)."""
    try:
        if isinstance(hello, protocol.Hello):
            hello.checked()
        else:
            protocol.check_version(hello.version, "a sandboxed child")
    except frames.WireError as exc:
        stop()
        raise SandboxFailure(f"the sandbox cannot be used: {exc}") from None
    return hello


def _zygote_died_message(proc: subprocess.Popen[bytes] | None) -> str:
    return f"the sandbox's warm process exited (status {_exit_status(proc)}); is torch importable?"


def _zygote_lost_message(proc: subprocess.Popen[bytes] | None, exc: BaseException) -> str:
    code = _exit_status(proc, wait_s=1.0)
    if code is not None:
        return f"the sandbox's warm process exited (status {code})"
    return f"the sandbox's warm process stopped answering ({type(exc).__name__}: {exc})"


def _exit_status(proc: subprocess.Popen[bytes] | None, wait_s: float = 5.0) -> int | None:
    """The process's exit status, or None while it still runs after `wait_s`."""
    if proc is None:
        return None
    try:
        return proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        return None


__all__ = ["CLOSED", "Child", "Isolation", "Limits", "MAX_CHILD_FRAME_BYTES", "MAX_REPLY_TEXT",
           "OutputDrain", "SYSTEM_DIRS", "Sandbox", "bwrap_works", "checked_reply", "describe",
           "gpu_device_nodes", "readonly_paths", "recv_frame_until"]
