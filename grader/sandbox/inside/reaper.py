"""Killing what a child's uid left behind, from a small process forked before torch.

kill(-1) from a process of uid U reaches exactly the processes of uid U (nothing else runs
as U), wherever they hid: a new session, a daemonized grandchild. Dropping to U is for
good, so it takes a fork. Forking the zygote itself (about 300 MB mapped once torch is
in) cost about 9 ms of CPU per submission in page tables alone; `start` forks this
helper at the zygote's start, before the heavy imports, and each `reap` forks the helper
instead. Where there is no helper (it died, or the zygote was started without one) the
zygote forks itself, as before.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket

from grader.sandbox.inside.isolation import PR_SET_PDEATHSIG, prctl

_helper: socket.socket | None = None
_helper_pid = 0


def start() -> None:
    """Fork the helper; call it before importing torch. The helper has the caller's
    privileges (it must become any child's uid) and dies with it."""
    global _helper, _helper_pid
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        ours.close()
        _serve(theirs)
    theirs.close()
    _helper, _helper_pid = ours, pid


def stop() -> None:
    """Let the helper go (it exits when its channel closes) and reap it, so the zygote's
    last wait for orphans does not wait on it."""
    global _helper, _helper_pid
    if _helper is not None:
        _helper.close()
        _helper = None
    if _helper_pid:
        try:
            os.waitpid(_helper_pid, 0)
        except ChildProcessError:
            pass
        _helper_pid = 0


def reap(uid: int, workdir: str) -> None:
    """Kill every process of `uid`, then remove `workdir` as that uid; back when done."""
    global _helper, _helper_pid
    if _helper is not None:
        try:
            _helper.sendall(json.dumps([uid, workdir]).encode() + b"\n")
            if _helper.recv(1) == b"k":
                return
        except OSError:
            pass
        _helper.close()
        # Gone: done here from now on. Its pid is forgotten, not waited for: the zygote's
        # reaping of orphans may have collected it, and the pid be another child's now.
        _helper, _helper_pid = None, 0
    _reap_in_a_fork(uid, workdir)


def _serve(channel: socket.socket) -> None:
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    lines = channel.makefile("rb")
    for line in lines:
        try:
            uid, workdir = json.loads(line)
            _reap_in_a_fork(int(uid), str(workdir))
            channel.sendall(b"k")
        except (ValueError, TypeError, OSError):
            break
    os._exit(0)


def _reap_in_a_fork(uid: int, workdir: str) -> None:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(3):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
            if workdir and os.path.isdir(workdir):
                shutil.rmtree(workdir, ignore_errors=True)
        except BaseException:
            code = 1
        os._exit(code)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
