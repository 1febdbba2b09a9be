"""Shared fixtures: the real `grader` CLI run once over a corpus, results read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ATTENTION = ROOT / "assignments" / "attention" / "assignment.yaml"


def run_grader(*args: str, cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def read_results(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/result.json")}


@pytest.fixture(scope="session")
def corpus_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every tests/corpus/ case graded by one real `grader grade` run."""
    out = tmp_path_factory.mktemp("corpus-reports")
    done = run_grader("grade", str(ROOT / "tests" / "corpus"), "--assignment", str(ATTENTION),
                      "--out", str(out), "--jobs", "2", "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    return read_results(out)
