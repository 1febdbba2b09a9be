"""Running student code isolated: a warm zygote under bubblewrap or as a plain process.

    Sandbox (one per grading worker)
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
"""

from __future__ import annotations

import enum
import json
import os
import queue
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from grader.sandbox import frames
from grader.sandbox import interpreter
from grader.errors import SandboxFailure, SandboxLost, SandboxUnavailable
from grader.limits import Limits

NOBODY = 65534
_GRADER_PKG = Path(__file__).resolve().parents[1]
MAX_CHILD_FRAME_BYTES = 64 * 1024 * 1024
"""A frame from a student's child larger than this ends it (the grader never buffers more)."""
MAX_REPLY_TEXT = 20_000
"""Strings in a child's exception and load reports are cut to this many characters."""
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib32", "/lib64", "/sbin", "/etc/alternatives",
               "/etc/ld.so.cache", "/etc/localtime", "/etc/fonts")
"""/etc/fonts: fontconfig's configuration, read when a student's matplotlib lists fonts."""


class Isolation(str, enum.Enum):
    AUTO = "auto"
    BWRAP = "bwrap"
    PROCESS = "process"


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
                chunk = self.sock.recv(1 << 20)
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


CLOSED = -2
"""`Child.exit_status` of a child asked to exit: the zygote reaps it in the background."""


class Child:
    """One student's process, as seen from the grader."""

    def __init__(self, sandbox: "Sandbox", pid: int, sock: socket.socket, drain: OutputDrain,
                 isolation: dict[str, Any] | None = None):
        self.sandbox = sandbox
        self.pid = pid
        self.sock = sock
        self.drain = drain
        self.exit_status: int | None = None
        self.cpu_s = 0.0
        """CPU seconds the child (and all it started) used, known once it is killed."""
        self.isolation: dict[str, Any] = isolation or {}
        """What the child reported about its isolation before any student code ran."""

    @property
    def alive(self) -> bool:
        return self.exit_status is None

    def request(self, doc: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send a request and wait for its answer; raise TimeoutError or EOFError.

        The answer comes from a process the student controls: it is read with one
        deadline for the whole frame (a trickle of bytes cannot hold the grader), at most
        `MAX_CHILD_FRAME_BYTES`, and checked for shape; anything else raises
        `frames.WireError` and the child is killed.
        """
        deadline = time.monotonic() + max(timeout_s, 0.001)
        try:
            self.sock.settimeout(max(timeout_s, 0.001))
            frames.send_frame(self.sock, doc)
            reply = recv_frame_until(self.sock, deadline, MAX_CHILD_FRAME_BYTES)
            return checked_reply(doc, reply)
        except frames.WireError:
            self.kill()
            raise
        except (socket.timeout, TimeoutError):
            self.kill()
            raise TimeoutError(f"no answer within {timeout_s:.0f} s") from None
        except (EOFError, OSError):
            self.kill()
            raise EOFError("the student's process ended") from None

    def close(self) -> None:
        """Ask the child to exit, then have the zygote kill and reap it in the background
        (~25 ms of the zygote's time that the grading need not wait for; the next
        `spawn` waits for it, so no two students' children ever overlap)."""
        if not self.alive:
            return
        try:
            frames.send_frame(self.sock, {"op": "exit"})
            reply = recv_frame_until(self.sock, time.monotonic() + 0.5, 1 << 16)
            self.cpu_s = float((reply.get("value") or {}).get("cpu_s", 0.0))
        except (OSError, EOFError, TimeoutError, ValueError, TypeError, AttributeError,
                frames.WireError):
            pass
        self.exit_status = CLOSED
        self.sock.close()
        self.sandbox.kill_later(self.pid)

    def kill(self) -> int:
        if self.exit_status is None:
            self.exit_status, self.cpu_s = self.sandbox.kill(self.pid)
            self.sock.close()
        return self.exit_status


class Sandbox:
    """A warm zygote that forks isolated children; use as a context manager."""

    def __init__(self, isolation: Isolation = Isolation.AUTO, limits: Limits = Limits(),
                 prewarm: bool = True, spare: bool = True, hidden: tuple[Path, ...] = ()):
        self.requested = Isolation(isolation)
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
        level = self.resolve_level()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = _zygote_argv(level, theirs.fileno(), self.limits, self.prewarm, self.hidden)
        self._proc = subprocess.Popen(
            argv, pass_fds=[theirs.fileno()], env=_clean_env(level),
            stdin=subprocess.DEVNULL, cwd="/",
        )
        theirs.close()
        self._control = ours
        self.level = level
        self._ready = False
        self._lost = ""

    def wait_ready(self) -> None:
        if self._ready:
            return
        if self._control is None:
            raise SandboxFailure("the sandbox is not started")
        self._control.settimeout(180)
        try:
            ready = frames.recv_frame(self._control)
        except (EOFError, OSError, frames.WireError):
            message = _zygote_died_message(self._proc)
            self.stop()
            raise SandboxUnavailable(message) from None
        self.strategy = str(ready.get("strategy", ""))
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
        frame = _frame({"op": "fork", "limits": self.limits.for_child()})
        try:
            reply = self._control_call(frame, [proto_theirs.fileno(), out_theirs.fileno()])
            pid = reply.get("pid")
            if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
                raise self._lose(f"the sandbox could not fork a child (it answered {str(reply)[:200]})")
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
            facts = first.get("isolation")
            child.isolation = facts if isinstance(facts, dict) else {}
        except (EOFError, OSError, frames.WireError):
            child.isolation = {"error": "the child ended before reporting its isolation"}
        return child

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
            reply = self._control_call(_frame({"op": "kill", "pid": pid}), [])
        except SandboxLost:
            return -1, 0.0  # `check` says why from now on
        try:
            return int(reply.get("status", -1)), float(reply.get("cpu_s", 0.0))
        except (TypeError, ValueError):
            self._lose(f"the sandbox answered a kill with {str(reply)[:200]}")
            return -1, 0.0

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


def _frame(doc: dict[str, Any]) -> bytes:
    body = json.dumps(doc).encode()
    return struct.pack(">I", len(body)) + body


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


# ---------------------------------------------------------------- reading a child


def recv_frame_until(sock: socket.socket, deadline: float, max_bytes: int) -> dict[str, Any]:
    """`frames.recv_frame` with one deadline for the whole frame (TimeoutError after it)."""
    (length,) = struct.unpack(">I", _recv_exact_until(sock, 4, deadline))
    if length > max_bytes:
        raise frames.WireError(f"a frame of {length} bytes exceeds the {max_bytes}-byte limit")
    body = _recv_exact_until(sock, length, deadline)
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise frames.WireError(f"frame is not JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict):
        raise frames.WireError("frame is not a JSON object")
    return doc


def _recv_exact_until(sock: socket.socket, n: int, deadline: float) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        sock.settimeout(left)
        chunk = sock.recv(min(n - len(chunks), 1 << 20))
        if not chunk:
            raise EOFError("peer closed the connection")
        chunks += chunk
    return bytes(chunks)


def checked_reply(request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """A child's answer in the shape `proxy` expects, or `frames.WireError`.

    The child runs the student's code, which can write to this socket itself: a forged
    answer must at worst be a wrong value, never a crash of the grader's side."""
    if "ok" in reply:
        if reply["ok"] is not True:
            raise frames.WireError("malformed answer: 'ok' is not true")
        value = reply.get("value")
        if request.get("op") == "load":
            value = _checked_load(value)
        return {"ok": True, "value": value}
    if "raised" in reply:
        return {"raised": _checked_error(reply["raised"])}
    if "missing" in reply and isinstance(reply["missing"], str):
        return {"missing": reply["missing"][:200]}
    if "protocol_error" in reply and isinstance(reply["protocol_error"], str):
        return {"protocol_error": reply["protocol_error"][:MAX_REPLY_TEXT]}
    raise frames.WireError(f"malformed answer with keys {sorted(map(str, reply))[:5]}")


def _checked_error(info: Any) -> dict[str, Any]:
    if not isinstance(info, dict):
        raise frames.WireError("malformed exception report")
    out: dict[str, Any] = {}
    for key in ("type", "message", "traceback", "where"):
        value = info.get(key, "")
        if not isinstance(value, str):
            raise frames.WireError(f"malformed exception report ({key})")
        out[key] = value[:MAX_REPLY_TEXT]
    builtin = info.get("builtin")
    if builtin is not None and not isinstance(builtin, str):
        raise frames.WireError("malformed exception report (builtin)")
    out["builtin"] = builtin[:100] if builtin else None
    if "cell" in info:
        if not isinstance(info["cell"], int) or isinstance(info["cell"], bool):
            raise frames.WireError("malformed exception report (cell)")
        out["cell"] = info["cell"]
    return out


def _checked_load(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise frames.WireError("malformed load report")
    error = value.get("error")
    cells = value.get("cell_errors", [])
    defined = value.get("defined", [])
    if not isinstance(cells, list) or not isinstance(defined, list):
        raise frames.WireError("malformed load report")
    if not all(isinstance(d, str) for d in defined):
        raise frames.WireError("malformed load report (defined)")
    checked_cells = [_checked_error(c) for c in cells[:1000]]
    if any("cell" not in c for c in checked_cells):
        raise frames.WireError("malformed load report (cell number)")
    return {"error": None if error is None else _checked_error(error),
            "cell_errors": checked_cells, "defined": [d[:200] for d in defined[:500]]}


# ---------------------------------------------------------------- launching


def gpu_device_nodes() -> list[str]:
    """NVIDIA device nodes, passed into the sandbox so `--device cuda` works there."""
    import glob

    return sorted(p for p in glob.glob("/dev/nvidia*") if not os.path.isdir(p))


def readonly_paths(hidden: tuple[Path, ...] = ()) -> list[str]:
    """What a child may read: system libraries and the Python runtime grader runs
    with (its venv, its packages); nothing else, and nothing that shows `hidden`."""
    return [p for p in SYSTEM_DIRS if os.path.lexists(p)] + interpreter.runtime_paths(hidden)


def _sandbox_import_path(binds: list[str]) -> list[str]:
    """Our import path, less what the sandbox does not show."""
    return [p for p in interpreter.import_path()
            if any(p == b or p.startswith(b.rstrip("/") + "/") for b in binds)]


def _tmp_size_bytes(limits: Limits) -> int:
    return max(64, 4 * limits.file_size_mb) * 1024 * 1024


def _zygote_argv(level: Isolation, fd: int, limits: Limits = Limits(),
                 prewarm: bool = True, hidden: tuple[Path, ...] = ()) -> list[str]:
    ro_paths = readonly_paths(hidden)
    path = _sandbox_import_path(ro_paths)
    if level is Isolation.PROCESS:
        config = {"level": "process", "private_root": True, "prewarm": prewarm,
                  "ro_paths": ro_paths, "devices": gpu_device_nodes()}
        return interpreter.boot_argv(_BOOT, [str(_GRADER_PKG.parent), *path],
                                     str(fd), json.dumps(config))
    argv = ["bwrap", *_bwrap_namespace_args(),
            "--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev",
            "--size", str(_tmp_size_bytes(limits)), "--tmpfs", "/tmp"]
    binds = _outermost(ro_paths)
    made = {"/", "/tmp", "/proc", "/dev"}
    for bind in binds:
        for parent in reversed(Path(bind).parents):
            p = str(parent)
            if p not in made and not any(p == b or p.startswith(b + "/") for b in binds):
                argv += ["--perms", "0755", "--dir", p]
                made.add(p)
        argv += ["--ro-bind", bind, bind]
    for node in gpu_device_nodes():
        argv += ["--dev-bind", node, node]
    if gpu_device_nodes():
        argv += ["--ro-bind-try", "/sys", "/sys"]  # the CUDA driver reads PCI topology
    argv += ["--perms", "0755", "--dir", "/opt/grader",
             "--ro-bind", str(_GRADER_PKG), "/opt/grader/grader", "--chdir", "/tmp"]
    config = {"level": "bwrap", "private_root": False, "prewarm": prewarm}
    return argv + interpreter.boot_argv(_BOOT, ["/opt/grader", *path], str(fd), json.dumps(config))


def _bwrap_namespace_args() -> list[str]:
    common = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
              "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() == 0:
        # No user namespace: uid 0 there would be uid 0 outside, for which the kernel
        # ignores RLIMIT_NPROC. The zygote keeps only what it needs to give each child
        # a uid of its own and to kill what that child leaves behind.
        return common + ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID",
                         "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL"]
    return common + ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]


def _outermost(paths: list[str]) -> list[str]:
    clean = sorted({os.path.normpath(p) for p in paths})
    out: list[str] = []
    for p in clean:
        if not any(p == o or p.startswith(o.rstrip("/") + "/") for o in out):
            out.append(p)
    return out


# -I ignores PYTHON* variables and user site-packages; the grader package and our
# import path are put on the path explicitly (`interpreter.boot_argv`), and nothing from
# the submission's folder is importable.
_BOOT = "from grader.sandbox.inside import zygote; zygote.main(int(sys.argv[2]), json.loads(sys.argv[3]))"


def _clean_env(level: Isolation) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


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
    argv = ["bwrap", *_bwrap_namespace_args(),
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


_STRATEGY_WORDS = {
    "root-private": "private root filesystem, own uid",
    "setuid-userns": "own uid",
    "userns": "user namespace",
    "none": "no namespaces",
}


def describe(level: Isolation | None, facts: dict[str, Any] | None = None) -> str:
    """What an isolation level gives, in words; with a child's facts, what it got."""
    base = {
        Isolation.BWRAP: "bubblewrap sandbox (no network, read-only runtime, private /tmp, rlimits)",
        Isolation.PROCESS: "plain child process (rlimits, private temp folder; no filesystem sandbox)",
    }.get(level, "none") if level else "none"
    if not facts or level is None:
        return base
    if level is Isolation.PROCESS and facts.get("filesystem") == "private-root":
        own_uid = ", own uid" if facts.get("strategy") == "root-private" else ""
        base = f"plain child process (rlimits, private root filesystem{own_uid})"
    parts = []
    if facts.get("namespaces"):
        parts.append("namespaces: " + ",".join(map(str, facts["namespaces"])))
    if facts.get("outside_uid") not in (None, 0):
        parts.append(f"uid {facts['outside_uid']}")
    elif facts.get("outside_uid") == 0:
        parts.append("uid 0 (no uid change)")
    for note in facts.get("notes", [])[:3]:
        parts.append(str(note))
    return base + (" [" + "; ".join(parts) + "]" if parts else "")


__all__ = ["Child", "Isolation", "Limits", "Sandbox", "bwrap_works", "describe"]
