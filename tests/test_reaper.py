"""The reaper: what a child's uid left behind is killed, and its workdir removed, from a
small helper forked before torch; where the helper is gone, from a fork of the caller."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.sandbox.inside import reaper

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="becoming another uid needs root")


def _leftover(uid: int, workdir: Path) -> subprocess.Popen[bytes]:
    workdir.mkdir()
    os.chown(workdir, uid, uid)
    (workdir / "left.txt").write_text("x")
    os.chown(workdir / "left.txt", uid, uid)
    return subprocess.Popen(["sleep", "300"], user=uid, group=uid, start_new_session=True)


def _dead(proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 5
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc.returncode == -signal.SIGKILL


@pytest.fixture
def children_root() -> Iterator[Path]:
    """Where the zygote makes workdirs: sticky and writable by every child's uid."""
    root = Path(tempfile.mkdtemp(prefix="grader-children-"))
    root.chmod(0o1733)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_the_helper_kills_a_uids_processes_and_removes_its_workdir(children_root: Path) -> None:
    tmp_path = children_root
    reaper.start()
    helper = reaper._helper
    try:
        uid = 1_999_000_000 + os.getpid() % 100_000
        first = _leftover(uid, tmp_path / "one")
        reaper.reap(uid, str(tmp_path / "one"))
        assert _dead(first) and not (tmp_path / "one").exists()
        assert reaper._helper is helper  # the helper did it, and is still there

        helper_pid = reaper._helper_pid
        os.kill(helper_pid, signal.SIGKILL)
        os.waitpid(helper_pid, 0)
        second = _leftover(uid, tmp_path / "two")
        reaper.reap(uid, str(tmp_path / "two"))  # the helper is gone: done from a fork here
        assert _dead(second) and not (tmp_path / "two").exists()
        assert reaper._helper is None
    finally:
        reaper.stop()
