"""examples/ci/: the GitHub Actions workflow's steps, run locally on fake pull requests."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from grader.sandbox.host import bwrap_works

CI = ROOT / "examples" / "ci"
WORKFLOW = CI / "grade-pull-request.yml"


def _run_locally(tmp_path: Path, *cases: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """run_locally.sh with `grader` on PATH meaning this checkout's grader."""
    work, bin_dir = tmp_path / "ci", tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "grader"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m grader.cli "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "WORKDIR": str(work), "GRADER_BIN": str(bin_dir), "PYTHON": sys.executable,
           "GRADER_SANDBOX": "bwrap" if bwrap_works() else "process"}
    done = subprocess.run(["bash", str(CI / "run_locally.sh"), *cases], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False)
    return done, work


def test_a_passing_pull_request(tmp_path):
    done, work = _run_locally(tmp_path, "correct_wq_module")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    summary = (work / "step_summary.md").read_text()
    assert "## correct\\_wq\\_module: 100 / 100 (attention)" in summary
    assert "| exercise | score | status |" in summary and "What failed" not in summary
    assert "::error" not in done.stdout
    root = ET.parse(work / "runner_temp" / "junit.xml").getroot()
    assert root.get("failures") == "0" and root.get("errors") == "0" and int(root.get("tests")) > 30
    assert (work / "runner_temp" / "reports" / "correct_wq_module" / "report.html").is_file()


def test_a_failing_pull_request_is_annotated_and_fails_the_check(tmp_path):
    done, work = _run_locally(tmp_path, "raises_at_import")
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "--fail-under 60: raises_at_import scored 24/100" in done.stderr
    errors = [ln for ln in (work / "annotations.txt").read_text().splitlines() if ln.startswith("::error ")]
    assert errors and errors[0].startswith(
        "::error file=submissions/raises_at_import/attention.py,line=136,title=raises_at_import")
    assert "RuntimeError" in errors[0]
    summary = (work / "step_summary.md").read_text()
    assert "| Scaled dot-product and multi-head attention | 0 / 20 | 💥 error |" in summary
    root = ET.parse(work / "runner_temp" / "junit.xml").getroot()
    assert int(root.get("errors")) >= 30
    private = work / "runner_temp" / "private" / "assignments" / "attention" / "hidden"
    assert private.is_dir() and not (work / "workspace" / ".hidden-tests").exists()


def test_a_pull_request_changing_two_submissions_is_refused(tmp_path):
    done, work = _run_locally(tmp_path, "no_scaling", "causal_triu")
    assert done.returncode == 1
    assert "changes 2 submission folders" in done.stdout
    assert not (work / "runner_temp" / "reports").exists()


def _steps() -> list[dict]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    return [s for job in doc["jobs"].values() for s in job["steps"]]


def test_the_workflow_keeps_its_own_rules():
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert list(doc[True]) == ["pull_request_target"]  # YAML reads the key `on` as True
    assert doc["permissions"] == {"contents": "read"}
    steps = _steps()
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == 2 and all(s["with"]["persist-credentials"] is False for s in checkouts)
    with_secrets = [s for s in steps if "secrets." in yaml.safe_dump(s)]
    assert [s["name"] for s in with_secrets] == ["Check out the hidden tests"]
    assert all("${{" not in s["run"] for s in steps if "run" in s)
    grade = next(s for s in steps if s.get("name") == "Grade the submission")
    assert grade["working-directory"] == "${{ runner.temp }}" and grade["env"]["PYTHONSAFEPATH"] == "1"
    for flag in ("--format github", "--junit junit.xml", "--fail-under 60"):
        assert flag in grade["run"]
    assert "secrets" not in yaml.safe_dump(doc.get("env", {})) and "env" not in doc["jobs"]["grade"]


@pytest.mark.parametrize("text", ["run_locally.sh", "pull_request_target", "PYTHONSAFEPATH"])
def test_the_readme_explains_the_setup(text):
    assert text in (CI / "README.md").read_text()
