"""Starting the zygote: its argv under bubblewrap or as a plain process, the read-only
paths it may show, its environment, the bubblewrap probe, and `describe`.
"""

from __future__ import annotations

import enum
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grader.limits import Limits
from grader.sandbox import interpreter
from grader.sandbox.protocol import ZygoteConfig

NOBODY = 65534
_GRADER_PKG = Path(__file__).resolve().parents[1]
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib32", "/lib64", "/sbin", "/etc/alternatives",
               "/etc/ld.so.cache", "/etc/localtime", "/etc/fonts")
"""/etc/fonts: fontconfig's configuration, read when a student's matplotlib lists fonts."""


class Isolation(str, enum.Enum):
    AUTO = "auto"
    BWRAP = "bwrap"
    PROCESS = "process"


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


def zygote_argv(level: Isolation, fd: int | Sequence[int], limits: Limits = Limits(),
                 prewarm: bool = True, hidden: tuple[Path, ...] = (),
                 warm_imports: tuple[str, ...] = ()) -> list[str]:
    """`fd`: the zygote's control socket, or one per grading worker that shares it."""
    fds = ",".join(map(str, [fd] if isinstance(fd, int) else fd))
    ro_paths = readonly_paths(hidden)
    path = _sandbox_import_path(ro_paths)
    if level is Isolation.PROCESS:
        config = ZygoteConfig("process", private_root=True, prewarm=prewarm,
                              ro_paths=tuple(ro_paths), devices=tuple(gpu_device_nodes()),
                              warm_imports=warm_imports)
        return interpreter.boot_argv(_BOOT, [str(_GRADER_PKG.parent), *path],
                                     fds, json.dumps(config.to_doc()))
    # One tmpfs per connection (`zygote.Connection`): each grading worker's children use
    # theirs one at a time, as when every worker had a zygote of its own.
    tmp_dirs = tuple(f"/tmp/w{n}" for n in range(len(fds.split(","))))
    argv = ["bwrap", *_bwrap_namespace_args(),
            "--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev",
            "--size", str(_tmp_size_bytes(limits)), "--tmpfs", "/tmp"]
    for d in tmp_dirs:
        argv += ["--size", str(_tmp_size_bytes(limits)), "--tmpfs", d]
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
    config = ZygoteConfig("bwrap", private_root=False, prewarm=prewarm, tmp_dirs=tmp_dirs,
                          warm_imports=warm_imports)
    return argv + interpreter.boot_argv(_BOOT, ["/opt/grader", *path], fds,
                                        json.dumps(config.to_doc()))


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
# The collector is off while torch, sympy and IPython are imported (it would walk the
# growing heap dozens of times, ~0.4 s of CPU, to free almost nothing); `zygote.main`
# freezes what is loaded and turns it back on before the first child is forked.
# The reaper is forked first, while the process is small (`inside.reaper`).
_BOOT = ("import gc; gc.disable(); from grader.sandbox.inside import reaper; reaper.start(); "
         "from grader.sandbox.inside import zygote; "
         "zygote.main(sys.argv[2], json.loads(sys.argv[3]))")


def clean_env(level: Isolation) -> dict[str, str]:
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


__all__ = ["Isolation", "bwrap_works", "describe", "readonly_paths", "zygote_argv", "clean_env"]
