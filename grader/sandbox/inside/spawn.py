"""Forking one isolated child from the zygote: what runs between `fork()` and the
first line of student code (steps 1-4 of `grader.sandbox.inside.zygote`'s docstring).

The zygote calls `fork_child`; everything else here runs in the child, which never
returns into the zygote's loop: it ends in `child.run` or `os._exit`.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

from grader.sandbox import protocol, wire
from grader.sandbox.inside import child
from grader.sandbox.inside.isolation import (
    LINUX,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    apply_limits,
    drop_capabilities,
    libc,
    prctl,
    private_root,
    write_file,
)

if TYPE_CHECKING:
    from grader.sandbox.protocol import ZygoteConfig

__all__ = ["PROTOCOL_FD", "child_environment", "fork_child"]

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NOBODY = 65534
SANDBOX_HOSTNAME = "sandbox"


def fork_child(proto_fd: int, out_fd: int, limits: dict[str, Any], workdir: str,
                uid: int | None, strategy: str, cfg: ZygoteConfig) -> tuple[int, int | None]:
    """Fork one child; its pid, and the pid of its namespace's pid-1 process if any."""
    global _report_fd
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_end)
        return pid, _read_inner_pid(read_end)
    code = 70
    try:
        os.close(read_end)
        _report_fd = write_end
        _close_other_fds(proto_fd, out_fd, write_end)
        os.setsid()
        _enter_child(proto_fd, out_fd, limits, workdir, uid, strategy, cfg)
        code = 0
    except BaseException:  # the child must never return into the zygote's loop
        code = 71
    finally:
        os._exit(code)


_report_fd: int | None = None
"""In a child until its isolation is done: where to tell the zygote the inner pid."""


def _read_inner_pid(fd: int) -> int | None:
    data = b""
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                break
            chunk = os.read(fd, 32)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return int(data) if data.strip().isdigit() else None


def _close_report_fd() -> None:
    global _report_fd
    if _report_fd is not None:
        os.close(_report_fd)
        _report_fd = None


def _close_other_fds(*keep: int) -> None:
    """Only the protocol and output sockets survive into the child."""
    top = 1 << 16
    try:
        top = min(os.sysconf("SC_OPEN_MAX"), top)
    except (ValueError, OSError):
        pass
    low = 3
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = max(low, fd + 1)
    os.closerange(low, top)


PROTOCOL_FD = 3
"""Where a child finds its protocol socket, whatever the zygote's numbering."""


def _enter_child(proto_fd: int, out_fd: int, limits: dict[str, Any], workdir: str,
                 uid: int | None, strategy: str, cfg: ZygoteConfig) -> None:
    global _report_fd
    _redirect_output(out_fd)
    if proto_fd != PROTOCOL_FD:
        if _report_fd == PROTOCOL_FD:
            _report_fd = os.dup(PROTOCOL_FD)
        os.dup2(proto_fd, PROTOCOL_FD)
        os.close(proto_fd)
    proto = socket.socket(fileno=PROTOCOL_FD)
    facts = _isolate(limits, workdir, uid, strategy, cfg)
    os.chdir(workdir)
    os.environ.clear()
    os.environ.update(child_environment(workdir))
    facts["limits"] = apply_limits(limits, facts)
    wire.send_frame(proto, protocol.ChildHello(facts).to_doc())
    child.run(proto)


def child_environment(workdir: str) -> dict[str, str]:
    """The whole environment of student code: the same under check and grade."""
    return {"HOME": workdir, "TMPDIR": workdir, "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1",
            "USER": "student", "LOGNAME": "student"}


def _redirect_output(out_fd: int) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(devnull)
    os.close(out_fd)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stdin = open(0, closefd=False)


def _isolate(limits: dict[str, Any], workdir: str, uid: int | None, strategy: str,
             cfg: ZygoteConfig) -> dict[str, Any]:
    facts: dict[str, Any] = {"strategy": strategy, "namespaces": [], "filesystem": "shared",
                             "uid": os.getuid(), "notes": []}
    if cfg.level == "bwrap":
        facts["filesystem"] = "bwrap"
    size_mb = max(64, 4 * int(limits.get("file_size_mb", 16)))
    if strategy == "root-private" and uid is not None:
        _isolate_root_private(workdir, uid, cfg, size_mb, facts)
    elif strategy == "setuid-userns" and uid is not None:
        _become(uid)
        os.mkdir(workdir, 0o700)
        _isolate_userns(facts)
    else:
        os.makedirs(workdir, 0o700, exist_ok=True)
        if strategy == "userns":
            private = (workdir, cfg, size_mb) if cfg.private_root else None
            _isolate_userns(facts, private)
        else:
            facts["notes"].append("no namespaces on this system: rlimits only")
    facts["uid"] = os.getuid()
    facts["outside_uid"] = uid if uid is not None else facts.get("outside_uid", os.getuid())
    _close_report_fd()
    if LINUX:
        # setuid() clears the parent-death signal: set it again, last.
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        drop_capabilities()
    facts["workdir"] = workdir
    return facts


def _become(uid: int) -> None:
    """setuid to a fresh uid; keep /proc/self ours (setuid clears 'dumpable')."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    prctl(PR_SET_DUMPABLE, 1)


def _isolate_userns(facts: dict[str, Any],
                    private: tuple[str, ZygoteConfig, int] | None = None) -> None:
    """User, pid, net, ipc and uts namespaces (uid 65534 inside); with `private`
    (process mode, not root) also a mount namespace with a private root, built with
    the capabilities a new user namespace gives inside it, which are dropped later."""
    outside = os.getuid()
    outside_gid = os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if private is not None:
        flags |= CLONE_NEWNS
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        facts["notes"].append(f"unshare(user, pid, net, ipc) failed: {os.strerror(err)}")
        return
    try:
        write_file("/proc/self/setgroups", "deny")
        write_file("/proc/self/uid_map", f"{NOBODY} {outside} 1")
        write_file("/proc/self/gid_map", f"{NOBODY} {outside_gid} 1")
    except OSError as exc:
        facts["notes"].append(f"uid map not written: {exc}")
    facts["namespaces"] = ["user", "pid", "net", "ipc", "uts"]
    facts["outside_uid"] = outside
    _become_pid1()
    try:
        socket.sethostname(SANDBOX_HOSTNAME)
    except OSError:
        pass
    if private is not None:
        workdir, cfg, size_mb = private
        facts["namespaces"].insert(1, "mount")
        try:
            private_root(workdir, NOBODY, list(cfg.ro_paths), size_mb, cfg.devices)
            facts["filesystem"] = "private-root"
        except OSError as exc:
            facts["notes"].append(f"private root not built ({exc}); the filesystem is shared")


def _isolate_root_private(workdir: str, uid: int, cfg: ZygoteConfig, size_mb: int,
                          facts: dict[str, Any]) -> None:
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    os.makedirs(workdir, 0o700, exist_ok=True)
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        facts["notes"].append(f"unshare(mount, pid, net, ipc) failed: {os.strerror(err)}")
        _become(uid)
        return
    facts["namespaces"] = ["mount", "pid", "net", "ipc", "uts"]
    _become_pid1()
    try:
        socket.sethostname(SANDBOX_HOSTNAME)
    except OSError:
        pass
    try:
        private_root(workdir, uid, list(cfg.ro_paths), size_mb, cfg.devices)
        facts["filesystem"] = "private-root"
    except OSError as exc:
        facts["notes"].append(f"private root not built ({exc}); the filesystem is shared")
    _become(uid)


def _become_pid1() -> None:
    """After unshare(CLONE_NEWPID) our next child is pid 1 of the new namespace; when
    it dies, the kernel kills every process left in there. We tell the zygote its pid,
    wait for it, and leave with its exit status."""
    pid = os.fork()
    if pid == 0:
        _close_report_fd()
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        return
    if _report_fd is not None:
        os.write(_report_fd, str(pid).encode())
    _close_report_fd()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)
