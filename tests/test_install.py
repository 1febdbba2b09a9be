"""The path users take: `grader` installed into a fresh venv that is not the one running
these tests, then run the way instructors run it: as root and as an unprivileged user,
under bubblewrap and as plain processes. Each must give the same scores as the
development install, and say which isolation it used.

The venv is made by Debian's /usr/bin/python3 where it can make one (what a stock
Debian/Ubuntu user has), under /tmp (which the sandbox mounts a private tmpfs over), and
the package is installed from a copy of the source, not in editable mode, as pipx or a
plain `pip install` does: its `grader` then lives in the venv's site-packages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from conftest import ATTENTION, ROOT, read_results, run_grader

from grader.sandbox import host as sandbox

pytestmark = pytest.mark.slow

LINUX = sys.platform.startswith("linux")
AS_ROOT = LINUX and os.geteuid() == 0
STUDENTS = ("an_nguyen", "binh_tran", "chi_le")  # a correct module, a notebook, a bug
SOURCE_FILES = ("pyproject.toml", "README.md", "grader")
NOBODY = "nobody"


def _base_python() -> str:
    """Debian's python3 where it can make a venv, else the one below this venv."""
    debian = "/usr/bin/python3"
    if os.path.exists(debian) and subprocess.run(
            [debian, "-c", "import ensurepip, venv"], capture_output=True).returncode == 0:
        return debian
    return getattr(sys, "_base_executable", sys.executable)


def _run(argv: list[str], user: str | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    """A folder under /tmp that an unprivileged user can read (pytest's are 0700)."""
    top = Path(tempfile.mkdtemp(prefix="grader-install-", dir="/tmp"))
    top.chmod(0o755)
    yield top
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def venv(place: Path) -> Path:
    """A fresh venv with torch and a (non-editable) install of this source tree."""
    src = place / "src"
    src.mkdir()
    for name in SOURCE_FILES:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy2)(
            ROOT / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                        if (ROOT / name).is_dir() else {}))
    env_dir = place / "venv"
    made = _run([_base_python(), "-m", "venv", str(env_dir)])
    assert made.returncode == 0, made.stderr
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q",
           "--disable-pip-version-check"]
    torch_pin = "torch==" + torch.__version__.split("+")[0]
    for what in ([torch_pin], [str(src)]):
        done = _run(pip + what)
        assert done.returncode == 0, done.stderr[-3000:]
    shutil.rmtree(src)
    # The assignment's student environment, as the README says (grade refuses without it).
    reqs = _run([str(env_dir / "bin" / "grader"), "environment", str(ATTENTION), "--requirements"])
    assert reqs.returncode == 0, reqs.stderr
    done = _run(pip + reqs.stdout.split())
    assert done.returncode == 0, done.stderr[-3000:]
    return env_dir


@pytest.fixture(scope="module")
def class_folder(place: Path) -> Path:
    """Three submissions and the assignment, readable by anyone."""
    folder = place / "class"
    for student in STUDENTS:
        shutil.copytree(ROOT / "examples" / "submissions" / student, folder / "subs" / student)
    shutil.copytree(ATTENTION.parent, folder / "assignments" / "attention")
    shutil.copytree(ROOT / "reference", folder / "reference")  # the YAML names ../../reference
    return folder


@pytest.fixture(scope="module")
def expected(class_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The development install's results on the same submissions."""
    out = tmp_path_factory.mktemp("dev")
    done = run_grader("grade", str(class_folder / "subs"), "--assignment",
                      str(class_folder / "assignments" / "attention" / "assignment.yaml"), "--out", str(out),
                      "--quiet", "--jobs", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    return read_results(out)


def _scores(results: dict[str, dict]) -> dict[str, dict[str, float]]:
    return {s: {ex["id"]: ex["score"] for ex in r["exercises"]} for s, r in results.items()}


def _grade_in_venv(venv: Path, class_folder: Path, out: Path, mode: str,
                   user: str | None = None) -> dict[str, dict]:
    out.mkdir(mode=0o777)
    out.chmod(0o777)
    done = _run([str(venv / "bin" / "grader"), "grade", str(class_folder / "subs"),
                 "--assignment", str(class_folder / "assignments" / "attention" / "assignment.yaml"),
                 "--out", str(out), "--sandbox", mode, "--quiet", "--jobs", "1"],
                user=user, cwd="/")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return read_results(out)


def _check_provenance(results: dict[str, dict], venv: Path, mode: str) -> None:
    version = _run([str(venv / "bin" / "python"), "-c",
                    "import sys; print(sys.version.split()[0])"]).stdout.strip()
    for r in results.values():
        assert r["gradable"] is True
        prov = r["provenance"]
        assert prov["sandbox"] == mode
        assert prov["python_version"] == version
        word = "bubblewrap" if mode == "bwrap" else "plain child process"
        assert prov["isolation"].startswith(word), prov["isolation"]


MODES = [
    pytest.param("bwrap", marks=[pytest.mark.sandbox, pytest.mark.skipif(
        not (LINUX and sandbox.bwrap_works()), reason="bubblewrap does not work here")]),
    pytest.param("process", marks=pytest.mark.skipif(not LINUX, reason="Linux isolation")),
]


@pytest.mark.parametrize("mode", MODES)
def test_a_fresh_venv_grades_like_the_development_install(
        venv: Path, class_folder: Path, expected: dict[str, dict], place: Path, mode: str) -> None:
    results = _grade_in_venv(venv, class_folder, place / f"out-root-{mode}", mode)
    assert _scores(results) == _scores(expected)
    _check_provenance(results, venv, mode)


def _nobody_can_run(python: Path) -> bool:
    return AS_ROOT and shutil.which("runuser") is not None and _run(
        [str(python), "-c", "import torch, grader"], user=NOBODY).returncode == 0


@pytest.mark.parametrize("mode", MODES)
def test_an_unprivileged_user_gets_the_same_scores(
        venv: Path, class_folder: Path, expected: dict[str, dict], place: Path, mode: str) -> None:
    if not _nobody_can_run(venv / "bin" / "python"):
        pytest.skip("needs root (to become `nobody`) and an interpreter `nobody` can run")
    results = _grade_in_venv(venv, class_folder, place / f"out-nobody-{mode}", mode, user=NOBODY)
    assert _scores(results) == _scores(expected)
    _check_provenance(results, venv, mode)
    isolation = json.dumps([r["provenance"]["isolation"] for r in results.values()])
    assert "uid 0" not in isolation


def test_the_sandbox_is_started_as_launched_not_through_its_real_path(venv: Path) -> None:
    """A venv's python is a symlink; its realpath would lose the venv's packages."""
    probe = ("from grader.sandbox import host as sandbox, interpreter; import sys, json; "
             "argv = sandbox._zygote_argv(sandbox.Isolation.PROCESS, 3); "
             "print(json.dumps([argv[0], sys.prefix, interpreter.runtime_paths()]))")
    done = _run([str(venv / "bin" / "python"), "-c", probe], cwd="/")
    assert done.returncode == 0, done.stderr
    exe, prefix, paths = json.loads(done.stdout)
    assert exe == str(venv / "bin" / "python") and os.path.islink(exe)
    assert prefix == str(venv) and prefix in paths
