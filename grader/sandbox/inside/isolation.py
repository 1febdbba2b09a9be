"""The kernel's isolation primitives, as the zygote's children use them: mounts for a
private root, prctl and capabilities, and resource limits. Linux only; elsewhere these
are no-ops or unavailable, and the zygote falls back to rlimits alone.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import signal
import sys
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18

LINUX = sys.platform.startswith("linux")
libc: Any = ctypes.CDLL(None, use_errno=True) if LINUX else None


def private_root(workdir: str, uid: int, ro_paths: list[str], size_mb: int,
                  devices: tuple[str, ...] | list[str] = ()) -> None:
    """Build a new / on a tmpfs mounted over `workdir` and chroot into it (we are root in
    a fresh mount namespace; the host never sees these mounts)."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = workdir
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,mode=0755")
    for path in outermost(ro_paths):
        bind_readonly(path, root + path)
    dev = root + "/dev"
    os.makedirs(dev, 0o755, exist_ok=True)
    gpus = [os.path.basename(d) for d in devices]  # /dev/nvidia*, for --device cuda
    for name in ("null", "zero", "full", "random", "urandom", *gpus):
        if os.path.exists("/dev/" + name):
            open(f"{dev}/{name}", "w").close()
            mount("/dev/" + name, f"{dev}/{name}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    try:  # ptys for IPython's `!cmd` (pexpect), as bubblewrap's --dev has them
        os.makedirs(dev + "/pts", 0o755, exist_ok=True)
        mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC,
               "newinstance,ptmxmode=0666,mode=0620")
        os.symlink("pts/ptmx", dev + "/ptmx")
    except OSError:
        pass
    # As under bubblewrap: /tmp and /dev/shm belong to root; the child writes only in
    # its own workdir.
    for folder in (dev + "/shm", root + "/tmp"):
        os.makedirs(folder, 0o755, exist_ok=True)
    inner = root + workdir
    os.makedirs(inner, 0o711, exist_ok=True)
    os.chmod(inner, 0o700)
    os.chown(inner, uid, uid)
    parent = os.path.dirname(inner)
    while parent.startswith(root + "/tmp/"):
        os.chmod(parent, 0o711)
        parent = os.path.dirname(parent)
    os.makedirs(root + "/proc", 0o555, exist_ok=True)
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(root)
    mount(root, "/", None, MS_MOVE)
    os.chroot(".")
    os.chdir("/")


def outermost(paths: list[str]) -> list[str]:
    """Absolute existing paths, without those inside another one of the list."""
    clean = sorted({os.path.normpath(p) for p in paths if os.path.isabs(p)
                    and (os.path.exists(p) or os.path.islink(p))})
    out: list[str] = []
    for p in clean:
        if not any(p == o or p.startswith(o.rstrip("/") + "/") for o in out):
            out.append(p)
    return out


def bind_readonly(src: str, dst: str) -> None:
    if os.path.islink(src):
        os.makedirs(os.path.dirname(dst), 0o755, exist_ok=True)
        if not os.path.lexists(dst):
            os.symlink(os.readlink(src), dst)
        return
    os.makedirs(os.path.dirname(dst), 0o755, exist_ok=True)
    if os.path.isdir(src):
        os.makedirs(dst, 0o755, exist_ok=True)
    elif not os.path.exists(dst):
        open(dst, "w").close()
    mount(src, dst, None, MS_BIND | MS_REC)
    # In a user namespace the source's nosuid/nodev/noexec are locked: keep them.
    kept = os.statvfs(src).f_flag & (os.ST_NOEXEC | os.ST_NOSUID | os.ST_NODEV)
    mount(None, dst, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | kept)


def mount(src: str | None, dst: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return s.encode() if s is not None else None

    if libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {dst}: {os.strerror(err)}")


def write_file(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def prctl(option: int, value: int) -> None:
    if libc is not None:
        libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                    ctypes.c_ulong(0))


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """No capabilities left, in whatever user namespace we are in."""
    for cap in range(64):  # PR_CAPBSET_DROP needs CAP_SETPCAP; best effort
        if libc.prctl(24, ctypes.c_ulong(cap), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0)) != 0 and ctypes.get_errno() == errno.EINVAL:
            break
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    libc.capset(ctypes.byref(header), data)


# ---------------------------------------------------------------- limits


def apply_limits(limits: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    mb = 1024 * 1024
    applied: dict[str, Any] = {}
    vm = vm_size()
    if vm is not None:
        applied["memory_mb"] = set_limit(resource.RLIMIT_AS, vm + int(limits.get("memory_mb", 2048)) * mb, mb)
    applied["cpu_s"] = set_limit(resource.RLIMIT_CPU, int(limits.get("cpu_s", 120)))
    applied["file_size_mb"] = set_limit(resource.RLIMIT_FSIZE, int(limits.get("file_size_mb", 16)) * mb, mb)
    processes = int(limits.get("processes", 256))
    if not LINUX:
        # macOS counts every process of the user (a whole desktop): not set.
        facts["notes"].append("no process limit on this system")
        processes = -1
    elif facts.get("outside_uid") == 0:
        # Not enforced for uid 0 whatever we set (kernel rule); say so.
        facts["notes"].append("RLIMIT_NPROC is not enforced for uid 0: no process limit")
    elif not facts.get("namespaces") and facts.get("outside_uid") is not None and LINUX:
        # Counted across all of this user's processes: leave room for those.
        processes += processes_of(os.getuid())
    if processes > 0:
        applied["processes"] = set_limit(resource.RLIMIT_NPROC, processes)
    set_limit(resource.RLIMIT_CORE, 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return applied


def set_limit(which: int, value: int, unit: int = 1) -> int | None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        return None
    return value // unit


def vm_size() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return None


def processes_of(uid: int) -> int:
    count = 0
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.stat(f"/proc/{entry}").st_uid == uid:
                        count += int(len(os.listdir(f"/proc/{entry}/task")))
                except OSError:
                    continue
    except OSError:
        return 0
    return count
