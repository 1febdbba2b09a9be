"""The command line, run for real: exit codes, files written, messages."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest
from conftest import ATTENTION, ROOT, read_results, run_grader

CORPUS = ROOT / "tests" / "corpus"


def _class(tmp_path: Path, *cases: str) -> Path:
    folder = tmp_path / "submissions"
    folder.mkdir()
    for case in cases:
        shutil.copytree(CORPUS / case, folder / case, ignore=shutil.ignore_patterns("expected.yaml"))
    return folder


def test_grade_writes_the_contracts_files_and_resumes(tmp_path):
    subs = _class(tmp_path, "correct_qkv_module", "no_scaling")
    out = tmp_path / "reports"
    first = run_grader("grade", str(subs), "--assignment", str(ATTENTION), "--out", str(out), "--jobs", "2")
    assert first.returncode == 0, first.stderr
    for student in ("correct_qkv_module", "no_scaling"):
        assert (out / student / "result.json").is_file() and (out / student / "report.html").is_file()
    assert (out / "index.html").is_file()
    rows = list(csv.reader((out / "grades.csv").open()))
    assert rows[0][:3] == ["student", "total", "max"] and len(rows) == 3
    assert rows[0][3:] == ["shape_reading", "attention_core", "padding_mask", "causal_mask",
                           "dropout", "sdpa_rewrite", "complexity", "quiz"]
    before = read_results(out)
    assert before["correct_qkv_module"]["score"] == 100

    (subs / "no_scaling" / "attention.py").write_text(
        (CORPUS / "correct_qkv_module" / "attention.py").read_text())
    second = run_grader("grade", str(subs), "--assignment", str(ATTENTION), "--out", str(out))
    assert second.returncode == 0 and "1 result(s) up to date" in second.stderr
    after = read_results(out)
    assert after["correct_qkv_module"]["provenance"] == before["correct_qkv_module"]["provenance"]
    assert after["no_scaling"]["score"] == 100

    forced = run_grader("grade", str(subs), "--assignment", str(ATTENTION), "--out", str(out), "--force")
    assert "up to date" not in forced.stderr
    assert read_results(out)["correct_qkv_module"]["provenance"]["graded_at"] >= before["correct_qkv_module"]["provenance"]["graded_at"]


def test_grade_one_submission_folder_as_ci_would(tmp_path):
    out = tmp_path / "reports"
    done = run_grader("grade", str(CORPUS / "correct_wq_module"), "--assignment", "attention", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert list(read_results(out)) == ["correct_wq_module"]


@pytest.mark.parametrize("args, code, message", [
    (["grade", "tests/corpus", "--assignment", "nope"], 2, "assignment 'nope' not found"),
    (["grade", "does/not/exist", "--assignment", "attention"], 64, "does not exist"),
    (["grade", "docs", "--assignment", "attention"], 64, "no submissions in docs"),
])
def test_grader_failures_exit_nonzero_with_what_to_fix(args, code, message):
    done = run_grader(*args)
    assert done.returncode == code and message in done.stderr


def test_broken_assignment_yaml_names_the_key(tmp_path):
    bad = tmp_path / "assignment.yaml"
    bad.write_text(ATTENTION.read_text().replace("points: 20", "points: twenty"))
    done = run_grader("grade", str(CORPUS / "correct_qkv_module"), "--assignment", str(bad))
    assert done.returncode == 2
    assert "exercises.1.points" in done.stderr and "expected number" in done.stderr


def test_check_exit_code_and_table(tmp_path):
    good = _class(tmp_path, "correct_qkv_module") / "correct_qkv_module"
    ok = run_grader("check", str(good), "--assignment", str(ATTENTION))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Scaled dot-product" in ok.stdout and (good / "report.html").is_file()
    bad_folder = tmp_path / "bad"
    shutil.copytree(CORPUS / "causal_triu", bad_folder, ignore=shutil.ignore_patterns("expected.yaml"))
    bad = run_grader("check", str(bad_folder), "--assignment", str(ATTENTION))
    assert bad.returncode == 1 and "causal" in bad.stdout.lower()


def test_student_kit_has_no_hidden_material_and_check_works_from_it(tmp_path):
    kit = tmp_path / "kit"
    done = run_grader("kit", "attention", "--out", str(kit))
    assert done.returncode == 0, done.stderr
    texts = {p: p.read_bytes() for p in kit.rglob("*") if p.is_file()}
    assert not any("hidden" in p.parts for p in texts)
    key_text = (ROOT / "assignments" / "attention" / "answer_key.yaml").read_text()
    secrets = [b"4294967296", b"rubric"]  # from the key: anywhere
    instructor_keys = re.compile(rb"^\s*(answer_key|reference|mutants|labelled_answers):", re.M)
    for path, data in texts.items():
        for s in secrets:
            assert s not in data, f"{path} contains {s!r}"
        if path.suffix in (".yaml", ".yml"):  # the YAML names no instructor file
            assert not instructor_keys.search(data), f"{path} names an instructor file"
    assert "rubric" in key_text  # the secrets checked above are real
    student = tmp_path / "me"
    shutil.copytree(CORPUS / "correct_proj_module", student, ignore=shutil.ignore_patterns("expected.yaml"))
    shutil.copytree(kit / "attention", student / "attention-kit")
    ok = run_grader("check", ".", "--assignment", "attention-kit/assignment.yaml", cwd=student)
    assert ok.returncode == 0, ok.stdout + ok.stderr


@pytest.mark.slow
def test_validate_accepts_the_attention_assignment():
    done = run_grader("validate", "attention", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reference: 100/100" in done.stdout and "empty submission: 0/100" in done.stdout


def test_a_grader_folder_where_the_command_runs_is_never_imported(tmp_path):
    """A pull request adding `grader/` at the repository root must not replace the grader."""
    import subprocess
    import sys

    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "__init__.py").write_text(
        "open(__file__ + '.PWNED', 'w').write('ran')\n")
    shutil.copytree(CORPUS / "correct_qkv_module", tmp_path / "sub")
    # what the `grader` console script does: no current folder on sys.path
    done = subprocess.run([sys.executable, "-I", "-m", "grader.cli", "grade", "sub",
                           "--assignment", str(ATTENTION), "--out", "out", "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "grader" / "__init__.py.PWNED").exists()
    assert read_results(tmp_path / "out")["sub"]["score"] == 100
