"""A warm process that imports torch once and forks a fresh child per submission.

Started by `sandbox` (inside bubblewrap, or as a plain process). It stays
single-threaded and never runs a torch op, so forking is safe and cheap (~10 ms instead
of ~1.3 s for a fresh interpreter). Each child gets a new session, a private empty
temp folder, its own namespaces where the kernel allows (pid, net, ipc, mount), hard
resource limits, and no state from any earlier child: the zygote itself never runs
student code.

Control protocol on the inherited Unix socket (frames from `wire`):
    {"op": "fork", "limits": {...}} + 2 fds (protocol, output) -> {"pid": n}
    {"op": "kill", "pid": n}  -> {"status": int}
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import socket
import sys
import tempfile
from typing import Any

import IPython.core.interactiveshell  # noqa: F401
import torch  # noqa: F401  (imported once here so every child starts warm)

# What torch imports lazily on the first meta-device op or comparison (~1 s): paid
# once here instead of once per student.
import sympy  # noqa: F401
import torch._decomp  # noqa: F401
import torch._dynamo  # noqa: F401
import torch._refs  # noqa: F401
import torch._subclasses.fake_tensor  # noqa: F401

from grader import child, wire

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
PR_SET_PDEATHSIG = 1
NOBODY = 65534


def main(control_fd: int) -> None:
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    tmp_root = tempfile.mkdtemp(prefix="grader-children-")
    os.chmod(tmp_root, 0o711)
    workdirs: dict[int, str] = {}
    wire.send_frame(control, {"ready": True, "pid": os.getpid()})
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(control, 1 << 16, 2)
        except (EOFError, ConnectionError):
            break
        if not msg:
            break
        request = _parse(msg)
        if request.get("op") == "fork" and len(fds) == 2:
            pid, workdirs[pid] = _fork_child(fds[0], fds[1], request.get("limits", {}), tmp_root)
            for fd in fds:
                os.close(fd)
            wire.send_frame(control, {"pid": pid})
        elif request.get("op") == "kill":
            pid = int(request["pid"])
            wire.send_frame(control, {"status": _kill(pid)})
            shutil.rmtree(workdirs.pop(pid, ""), ignore_errors=True)
        else:
            for fd in fds:
                os.close(fd)
            wire.send_frame(control, {"error": "bad request"})
    shutil.rmtree(tmp_root, ignore_errors=True)


def _parse(msg: bytes) -> dict[str, Any]:
    import json

    doc = json.loads(msg[4:].decode("utf-8"))
    return doc if isinstance(doc, dict) else {}


def _kill(pid: int) -> int:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return 0
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _fork_child(
    proto_fd: int, out_fd: int, limits: dict[str, Any], tmp_root: str
) -> tuple[int, str]:
    workdir = tempfile.mkdtemp(prefix="s-", dir=tmp_root)
    pid = os.fork()
    if pid:
        return pid, workdir
    code = 70
    try:
        os.setsid()
        _enter_child(proto_fd, out_fd, limits, workdir)
        code = 0
    except BaseException:  # the child must never return into the zygote's loop
        code = 71
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        os._exit(code)


def _enter_child(proto_fd: int, out_fd: int, limits: dict[str, Any], workdir: str) -> None:
    proto = socket.socket(fileno=proto_fd)
    _redirect_output(out_fd)
    _isolate(limits, workdir)
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update({"HOME": workdir, "TMPDIR": workdir, "PATH": "/usr/bin:/bin",
                       "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"})
    _apply_limits(limits)
    child.run(proto)


def _redirect_output(out_fd: int) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(devnull)
    os.close(out_fd)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stdin = open(0, "r", closefd=False)


def _isolate(limits: dict[str, Any], workdir: str) -> None:
    """New namespaces where the kernel lets us, then drop to an unprivileged user."""
    if limits.get("namespaces", True):
        _try_unshare(workdir)
    if os.getuid() == 0 and limits.get("drop_uid", True):
        os.chown(workdir, NOBODY, NOBODY)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


def _try_unshare(workdir: str) -> None:
    """Private net/ipc namespaces; a pid namespace so no process outlives the child."""
    libc = ctypes.CDLL(None, use_errno=True)
    flags = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID
    if os.getuid() != 0:
        flags |= CLONE_NEWUSER
    if libc.unshare(flags) != 0:
        return
    # The pid namespace applies to our next child: it becomes pid 1 there, and when
    # it dies the kernel kills every process the student left behind.
    pid = os.fork()
    if pid == 0:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        return
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


def _apply_limits(limits: dict[str, Any]) -> None:
    mb = 1024 * 1024
    current_vm = _vm_size()
    _set(resource.RLIMIT_AS, current_vm + int(limits.get("memory_mb", 2048)) * mb)
    _set(resource.RLIMIT_CPU, int(limits.get("cpu_s", 120)))
    _set(resource.RLIMIT_FSIZE, int(limits.get("file_size_mb", 16)) * mb)
    _set(resource.RLIMIT_NPROC, int(limits.get("processes", 256)))
    _set(resource.RLIMIT_CORE, 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _set(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        pass


def _vm_size() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


if __name__ == "__main__":
    main(int(sys.argv[1]))
