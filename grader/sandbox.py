"""Running student code isolated: a warm zygote under bubblewrap or as a plain process.

    Sandbox (one per grading worker)
      └─ zygote  (bwrap: no network, own pid/ipc/uts, read-only runtime, tmpfs /tmp)
           └─ child per submission (fresh fork: new session, namespaces, rlimits, nobody)

`Sandbox.spawn()` returns a `Child`: a socket for `wire` frames, a drained and capped
output stream, and the means to kill it. Levels:

- `bwrap`: the zygote runs under bubblewrap with only the Python runtime, its packages
  and the `grader` package bound read-only. Hidden tests, the reference, other
  submissions, reports/ and $HOME do not exist in there.
- `process`: the zygote is a plain child process with a scrubbed environment; each
  child still gets rlimits, a private temp folder and, where the kernel lets it,
  namespaces and an unprivileged uid. For laptops (macOS) and containers without
  user namespaces.
"""

from __future__ import annotations

import enum
import os
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import wire
from grader.errors import SandboxUnavailable

NOBODY = 65534
_GRADER_PKG = Path(__file__).resolve().parent


class Isolation(str, enum.Enum):
    AUTO = "auto"
    BWRAP = "bwrap"
    PROCESS = "process"


@dataclass(frozen=True)
class Limits:
    load_s: float = 30.0
    per_test_s: float = 10.0
    per_submission_s: float = 180.0
    memory_mb: int = 2048
    cpu_s: int = 120
    processes: int = 256
    file_size_mb: int = 16
    output_kb: int = 256

    def for_child(self) -> dict[str, Any]:
        return {"memory_mb": self.memory_mb, "cpu_s": self.cpu_s,
                "processes": self.processes, "file_size_mb": self.file_size_mb,
                "drop_uid": runtime_readable_by_others()}


class OutputDrain:
    """Reads a child's stdout+stderr to the end, keeping only the first `limit` bytes."""

    def __init__(self, sock: socket.socket, limit: int) -> None:
        self.sock = sock
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                break
            if not chunk:
                break
            room = self.limit - len(self.kept)
            self.kept += chunk[: max(room, 0)]
            self.dropped += max(len(chunk) - max(room, 0), 0)
        self.sock.close()

    def text(self, wait_s: float = 0.5) -> tuple[str, bool]:
        self.thread.join(wait_s)
        return bytes(self.kept).decode("utf-8", errors="replace"), self.dropped > 0


class Child:
    """One student's process, as seen from the grader."""

    def __init__(self, sandbox: "Sandbox", pid: int, sock: socket.socket, drain: OutputDrain):
        self.sandbox = sandbox
        self.pid = pid
        self.sock = sock
        self.drain = drain
        self.exit_status: int | None = None

    @property
    def alive(self) -> bool:
        return self.exit_status is None

    def request(self, doc: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send a request and wait for its answer; raise TimeoutError or EOFError."""
        self.sock.settimeout(max(timeout_s, 0.001))
        try:
            wire.send_frame(self.sock, doc)
            return wire.recv_frame(self.sock)
        except socket.timeout:
            self.kill()
            raise TimeoutError(f"no answer within {timeout_s:.0f} s") from None
        except (BrokenPipeError, ConnectionResetError, EOFError):
            self.kill()
            raise EOFError("the student's process ended") from None
        except wire.WireError:
            self.kill()
            raise

    def close(self) -> None:
        if self.alive:
            try:
                self.sock.settimeout(0.2)
                wire.send_frame(self.sock, {"op": "exit"})
            except OSError:
                pass
        self.kill()

    def kill(self) -> int:
        if self.exit_status is None:
            self.exit_status = self.sandbox.kill(self.pid)
            self.sock.close()
        return self.exit_status


class Sandbox:
    """A warm zygote that forks isolated children; use as a context manager."""

    def __init__(self, isolation: Isolation = Isolation.AUTO, limits: Limits = Limits()):
        self.requested = Isolation(isolation)
        self.limits = limits
        self.level: Isolation | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> "Sandbox":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        level = self.requested
        if level is Isolation.AUTO:
            level = Isolation.BWRAP if bwrap_works() else Isolation.PROCESS
        elif level is Isolation.BWRAP and not bwrap_works():
            raise SandboxUnavailable.bwrap_missing()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = _zygote_argv(level, theirs.fileno())
        self._proc = subprocess.Popen(
            argv, pass_fds=[theirs.fileno()], env=_clean_env(level),
            stdin=subprocess.DEVNULL, cwd="/",
        )
        theirs.close()
        self._control = ours
        self.level = level
        ours.settimeout(180)
        try:
            wire.recv_frame(ours)
        except (EOFError, OSError, wire.WireError):
            self.stop()
            raise SandboxUnavailable(_zygote_died_message(self._proc)) from None

    def stop(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def spawn(self) -> Child:
        """Fork a fresh child for one submission (or a retry after a crash)."""
        proto_ours, proto_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_ours, out_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        frame = _frame({"op": "fork", "limits": self.limits.for_child()})
        reply = self._control_call(frame, [proto_theirs.fileno(), out_theirs.fileno()])
        proto_theirs.close()
        out_theirs.close()
        drain = OutputDrain(out_ours, self.limits.output_kb * 1024)
        return Child(self, int(reply["pid"]), proto_ours, drain)

    def kill(self, pid: int) -> int:
        try:
            reply = self._control_call(_frame({"op": "kill", "pid": pid}), [])
        except (OSError, EOFError, RuntimeError):
            return -1
        return int(reply.get("status", -1))

    def _control_call(self, frame: bytes, fds: list[int]) -> dict[str, Any]:
        if self._control is None:
            raise RuntimeError("sandbox is not started")
        with self._lock:
            self._control.settimeout(60)
            socket.send_fds(self._control, [frame], fds)
            try:
                return wire.recv_frame(self._control)
            except EOFError:
                raise RuntimeError(_zygote_died_message(self._proc)) from None


def _frame(doc: dict[str, Any]) -> bytes:
    import json
    import struct

    body = json.dumps(doc).encode()
    return struct.pack(">I", len(body)) + body


def _zygote_died_message(proc: subprocess.Popen[bytes] | None) -> str:
    code = proc.wait(5) if proc else None
    return f"the sandbox's warm process exited (status {code}); is torch importable?"


# ---------------------------------------------------------------- launching


def _python_paths() -> list[str]:
    """Everything the interpreter needs to import torch and IPython, read-only."""
    paths = {sys.base_prefix, sys.prefix, sys.exec_prefix}
    for entry in sys.path:
        if entry and ("site-packages" in entry or "dist-packages" in entry):
            paths.add(entry)
    return sorted(p for p in paths if os.path.isdir(p) and not _contains_grader_repo(p))


def _contains_grader_repo(path: str) -> bool:
    return Path(path).resolve() in _GRADER_PKG.parents and (Path(path) / "assignments").exists()


def _zygote_argv(level: Isolation, fd: int) -> list[str]:
    python = os.path.realpath(sys.executable)
    if level is Isolation.PROCESS:
        return [python, "-I", "-c", _BOOT, str(_GRADER_PKG.parent), str(fd)]
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--uid", str(NOBODY), "--gid", str(NOBODY), "--hostname", "sandbox",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for sys_dir in ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc/alternatives",
                    "/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(sys_dir):
            argv += ["--ro-bind", sys_dir, sys_dir]
    for path in _python_paths():
        argv += ["--ro-bind", path, path]
    argv += ["--ro-bind", str(_GRADER_PKG), "/opt/grader/grader", "--chdir", "/tmp"]
    return argv + [python, "-I", "-c", _BOOT, "/opt/grader", str(fd)]


# -I ignores PYTHON* variables and user site-packages; the grader package is put on
# the path explicitly, and nothing from the submission's folder is importable.
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grader import zygote; zygote.main(int(sys.argv[2]))"


def _clean_env(level: Isolation) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def runtime_readable_by_others() -> bool:
    """Whether `nobody` could import from this Python (pyenv under /root cannot)."""
    for top in {sys.base_prefix, sys.prefix}:
        path = Path(top).resolve()
        for part in [path, *path.parents]:
            if not os.stat(part).st_mode & 0o001:
                return False
    return True


_BWRAP_OK: bool | None = None


def bwrap_works() -> bool:
    """True where bubblewrap can start a sandbox here (cached)."""
    global _BWRAP_OK
    if _BWRAP_OK is None:
        _BWRAP_OK = _probe_bwrap()
    return _BWRAP_OK


def _probe_bwrap() -> bool:
    if sys.platform != "linux" or shutil.which("bwrap") is None:
        return False
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--uid", str(NOBODY),
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def describe(level: Isolation | None) -> str:
    return {
        Isolation.BWRAP: "bubblewrap sandbox (no network, read-only runtime, private /tmp, rlimits)",
        Isolation.PROCESS: "plain child process (rlimits, private temp folder; no filesystem sandbox)",
    }.get(level, "none") if level else "none"


__all__ = ["Child", "Isolation", "Limits", "Sandbox", "bwrap_works", "describe"]
