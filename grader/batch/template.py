"""A warm template of a grading worker: the pool's workers are forks of it.

A worker's boot is mostly imports (torch, pytest, the grading pipeline: 2-2.5 s of CPU
on a small machine). The template pays them once, then forks one worker per request,
in milliseconds; each fork goes on exactly as a worker started on its own
(`workers.main`): it reads the run's config, loads the assignment and collects the tests
itself (the test session runs in a thread, which a fork would not carry over).

The pool sends each request on a SOCK_SEQPACKET socket, `{"level": ...}` with the
worker's channel and, if it has one, its connection to the shared zygote (SCM_RIGHTS);
the template answers `{"pid": N}`. The fork makes the channel its stdin and stdout.
Workers are reaped by the kernel (SIGCHLD ignored here); the pool kills one through a
pidfd, never by a pid that might have been reused. Where the template cannot start or
dies, the pool starts workers as processes of their own (`workers.Worker`).
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import subprocess
import threading
from typing import TextIO

from grader.sandbox import interpreter
from grader.sandbox.launch import Isolation

_BOOT = "import gc; gc.disable(); from grader.batch import template; template.main(int(sys.argv[2]))"
_START_S = 300.0
"""How long a fork may wait for the template's boot."""


class Forked:
    """A worker the template forked, as the pool uses it (what it used of a Popen)."""

    def __init__(self, stdin: int, stdout: int, pid: int) -> None:
        """`stdin`, `stdout`: our ends of the worker's two pipes."""
        self.pid = pid
        self._pidfd = _pidfd(pid)
        self.stdin: TextIO = os.fdopen(stdin, "w", buffering=1, encoding="utf-8")
        self.stdout: TextIO = os.fdopen(stdout, "r", encoding="utf-8")

    def kill(self) -> None:
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, OSError):
            pass

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the worker to end (its exit status is the template's to reap)."""
        if self._pidfd is None:
            return 0
        ready, _, _ = select.select([self._pidfd], [], [], timeout)
        if not ready:
            raise subprocess.TimeoutExpired("grading worker", timeout or 0)
        os.close(self._pidfd)
        self._pidfd = None
        return 0


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+; or it is gone already
        return None


class Template:
    """The pool's handle on the template process."""

    def __init__(self, env: dict[str, str], path: list[str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(interpreter.boot_argv(_BOOT, path, str(theirs.fileno())),
                                     pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL)
        theirs.close()
        self._control = ours
        self._lock = threading.Lock()
        self._gone = False

    def fork(self, zygote: socket.socket | None, level: Isolation | None, config: str = "") -> Forked | None:
        """A new worker, or None when the template cannot make one (the caller starts a
        worker of its own). `zygote` is handed over (and closed here) only on success.
        `config`: the batch's `RunConfig` as JSON; before its first fork the template
        compiles that assignment's answer key, for every worker it forks."""
        (in_r, in_w), (out_r, out_w) = os.pipe(), os.pipe()
        fds = [in_r, out_w] + ([zygote.fileno()] if zygote is not None else [])
        request = json.dumps({"level": level.value if level is not None and zygote is not None else "",
                              "config": config})
        with self._lock:
            reply = b""
            if not self._gone:
                try:
                    self._control.settimeout(_START_S)
                    socket.send_fds(self._control, [request.encode()], fds)
                    reply = self._control.recv(1 << 10)
                except OSError:
                    reply = b""
                self._gone = not reply
        os.close(in_r)
        os.close(out_w)
        try:
            pid = int(json.loads(reply)["pid"])
        except (ValueError, KeyError, TypeError):
            os.close(in_w)
            os.close(out_r)
            return None
        if zygote is not None:
            zygote.close()
        return Forked(in_w, out_r, pid)

    def stop(self) -> None:
        self._control.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main(control_fd: int) -> None:
    """The template process: import what every worker needs, then fork one per request."""
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the workers forked here
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the pool's to handle; it closes us
    try:
        from grader.batch import workers

        workers.warm_imports()
        import grader.batch.pipeline  # noqa: F401  (pytest and the testing stage)
    except Exception:  # the pool starts workers of their own, which say what is wrong
        os._exit(1)

    gc.freeze()  # what is loaded now lives on in every worker
    serve(control)
    os._exit(0)


def serve(control: socket.socket) -> None:
    """Fork one worker per request on `control`, until the pool closes it. The batch's answer
    key is compiled before the first fork (`workers.warm_key`, about 0.4 s of CPU), so every
    worker inherits it and none compiles it during its first submission."""
    from grader.batch import workers

    warmed = False
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(control, 1 << 20, 3)
        except OSError:
            return
        if not msg:
            return
        request = _request(msg)
        if not warmed:
            warmed = True
            workers.warm_key(str(request.get("config", "")))
        pid = os.fork()
        if pid == 0:
            _become_worker(control, fds, str(request.get("level", "")))
        for fd in fds:
            os.close(fd)
        try:
            control.send(json.dumps({"pid": pid}).encode())
        except OSError:
            return


def _request(msg: bytes) -> dict[str, object]:
    """A fork request: {"level", "config"}; anything unreadable is an empty one (the worker
    then starts a zygote of its own and reads its config from its stdin as always)."""
    try:
        doc = json.loads(msg)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _become_worker(control: socket.socket, fds: list[int], level: str) -> None:
    from grader.batch import workers

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a worker waits for its own zygote
    signal.signal(signal.SIGINT, signal.default_int_handler)
    control.close()
    os.dup2(fds[0], 0)
    os.dup2(fds[1], 1)
    os.close(fds[0])
    os.close(fds[1])
    shared = [str(fds[2]), level] if len(fds) > 2 and level else []
    code = 1
    try:
        workers.main(shared)
        code = 0
    finally:
        os._exit(code)
