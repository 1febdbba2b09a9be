"""Shared fixtures (the real `grader` CLI run once over a corpus, results read back),
and the line between the two tiers of the suite.

`pytest -m "not slow"` is the fast unit tier: pure functions of each stage and the
in-process fake sandbox (`tests/fakes.py`), in well under a minute. A test is `slow`
when it starts real processes: a sandbox, the CLI, a Dask cluster, a kernel, a browser.
That is decided here, once, from the fixtures a test uses and the module it is in, so a
new test that starts a sandbox through a shared fixture lands in the right tier.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ATTENTION = ROOT / "assignments" / "attention" / "assignment.yaml"
TINY = ROOT / "tests" / "fixtures" / "tiny"


PROCESS_FIXTURES = frozenset({
    "corpus_results", "box", "boxes", "batch", "graded", "graded_class", "lesson_reports",
    "venv", "driver", "cluster",
})
"""Fixtures that start a sandbox, the CLI, a cluster or a browser."""

PROCESS_MODULES = frozenset({
    "test_cli", "test_ci_workflow", "test_corpus", "test_dask_executor", "test_faults",
    "test_kit", "test_pipeline", "test_testrun", "test_proxy", "test_validate",
    "test_validate_answers", "test_review", "test_environment", "test_install",
    "test_browser", "test_tamper", "test_notebook_semantics", "test_gpu",
})
"""Modules whose tests (nearly) all run the CLI or a sandbox."""


PROCESS_CALLS = re.compile(r"\b(run_grader|_report|subprocess\.\w+|Sandbox|CliRunner)\(")
"""A test body that starts a process itself."""


def _starts_processes(item: pytest.Item) -> bool:
    if item.path.stem in PROCESS_MODULES or set(getattr(item, "fixturenames", ())) & PROCESS_FIXTURES:
        return True
    function = getattr(item, "function", None)
    try:
        return function is not None and bool(PROCESS_CALLS.search(inspect.getsource(function)))
    except (OSError, TypeError):
        return False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _starts_processes(item):
            item.add_marker(pytest.mark.slow)


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


@pytest.fixture(scope="session")
def tiny() -> Any:
    """The small fixture assignment (tests/fixtures/tiny): frozen, so shared by all."""
    from grader import assignment

    return assignment.load(TINY / "assignment.yaml")
