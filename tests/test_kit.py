"""The student kit, used as a student would: `grader kit`, then `grader check` in its folder."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import ROOT, run_grader

CONTRACT_NAMES = ["causal_mask", "scaled_dot_product_attention", "MultiHeadSelfAttention",
                  "sdpa_attention"]
CODE_EXERCISES = ["shape_reading", "attention_core", "padding_mask", "causal_mask", "dropout",
                  "sdpa_rewrite"]
ALL_EXERCISES = [*CODE_EXERCISES, "complexity", "quiz"]
SOLUTION_ANSWERS = ROOT / "assignments" / "attention" / "solution" / "answers.yaml"


@pytest.fixture(scope="module")
def kit_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kit")
    done = run_grader("kit", "attention", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out / "attention"


@pytest.fixture
def kit(kit_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the kit folder, as a student unpacks it."""
    folder = tmp_path / "attention"
    shutil.copytree(kit_template, folder)
    return folder


def test_kit_writes_a_readme_and_both_starters(kit):
    readme = (kit / "README.md").read_text()
    for needed in ("python3 -m venv .venv", ".venv/bin/pip install torch==",
                   "<path or URL from your instructor>", "not on PyPI",
                   "cp starter/attention.py .", "cp starter/attention.ipynb .",
                   ".venv/bin/grader check ", "--exercise", "cp answers.template.yaml answers.yaml",
                   "<student-id>/", "as your instructor tells you"):
        assert needed in readme, needed
    for ex in ALL_EXERCISES:
        assert f"`{ex}`" in readme
    for name in CONTRACT_NAMES:
        assert f"`{name}`" in readme
    assert not (kit / "attention.py").exists() and not (kit / "attention.ipynb").exists()
    nbformat.validate(nbformat.read(kit / "starter" / "attention.ipynb", as_version=4))


def test_the_starter_defines_the_contracts_names_and_imports_only_torch_and_math(kit):
    tree = ast.parse((kit / "starter" / "attention.py").read_text())
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert defined == CONTRACT_NAMES
    imported = {alias.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for alias in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"math", "torch"}
    done = subprocess.run([sys.executable, "-c", "import attention; print(attention.MultiHeadSelfAttention)"],
                          cwd=kit / "starter", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "MultiHeadSelfAttention" in done.stdout, done.stderr


def test_the_starter_notebook_says_what_the_module_says():
    done = subprocess.run([sys.executable, "scripts/py_to_notebook.py", "--check",
                           "assignments/attention/starter/attention.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("starter", ["attention.py", "attention.ipynb"])
def test_the_starter_fails_check_with_its_todos_and_no_crash(kit, starter):
    shutil.copyfile(kit / "starter" / starter, kit / starter)
    done = run_grader("check", cwd=kit)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    blocks = done.stdout.split("\n\n")
    for ex in CODE_EXERCISES:
        block = next(b for b in blocks if f"({ex})" in b)
        assert "not implemented yet: " in block, block
    assert "not implemented yet: causal_mask: return the [seq_len, seq_len] bool lower triangle" in done.stdout
    assert "TODO" not in done.stdout  # the TODO's text, without the marker
    assert (kit / "report.html").is_file()


def test_a_correct_solution_passes_check_in_the_kit_with_no_flags(kit):
    shutil.copyfile(ROOT / "reference" / "attention.py", kit / "attention.py")
    shutil.copyfile(SOLUTION_ANSWERS, kit / "answers.yaml")
    done = run_grader("check", cwd=kit)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0/0" not in done.stdout
    rows = [line for line in done.stdout.splitlines() if "graded by your instructor" in line]
    assert len(rows) == 2 and "O(n²)" in rows[0] and "Quiz" in rows[1], done.stdout
    html = (kit / "report.html").read_text()
    assert "graded by your instructor" in html and "0 / 0" not in html


def test_missing_written_answers_are_named_and_graded_by_the_instructor(kit):
    shutil.copyfile(ROOT / "reference" / "attention.py", kit / "attention.py")
    answers = SOLUTION_ANSWERS.read_text().replace("growth_1024_to_4096:", "unrelated_key:")
    (kit / "answers.yaml").write_text(answers)
    done = run_grader("check", "--exercise", "complexity", cwd=kit)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 answer to fix" in done.stdout
    assert "(graded by your instructor)" in done.stdout and "(0/0)" not in done.stdout
    assert "answers.yaml has no `complexity.growth_1024_to_4096`" in done.stdout


def test_check_one_exercise_runs_only_its_tests(kit):
    shutil.copyfile(kit / "starter" / "attention.py", kit / "attention.py")
    done = run_grader("check", "--exercise", "causal_mask", cwd=kit)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "checked only: causal_mask" in done.stdout
    assert "Causal mask" in done.stdout and "0/15" in done.stdout
    for other in ("Padding mask", "Quiz", "(attention_core)", "Exercise 1"):
        assert other not in done.stdout
    html = (kit / "report.html").read_text()
    assert 'data-exercise="causal_mask"' in html and 'data-exercise="padding_mask"' not in html

    (kit / "attention.py").write_text(
        (kit / "starter" / "attention.py").read_text().replace(
            '    raise NotImplementedError("TODO: causal_mask: return the [seq_len, seq_len] bool lower triangle")',
            "    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()"))
    mixed = run_grader("check", "--exercise", "causal_mask", "--exercise", "sdpa_rewrite", cwd=kit)
    assert "causal_mask(4) is a bool lower triangle" not in mixed.stdout  # passes now
    assert "(sdpa_rewrite)" in mixed.stdout and "(padding_mask)" not in mixed.stdout


def test_an_unknown_exercise_is_a_usage_error_listing_the_ids(kit):
    shutil.copyfile(kit / "starter" / "attention.py", kit / "attention.py")
    done = run_grader("check", "--exercise", "causal", cwd=kit)
    assert done.returncode == 64
    assert "no exercise 'causal'" in done.stderr and ", ".join(ALL_EXERCISES) in done.stderr


def test_check_without_an_assignment_is_a_usage_error(tmp_path):
    (tmp_path / "attention.py").write_text((ROOT / "reference" / "attention.py").read_text())
    done = run_grader("check", cwd=tmp_path)
    assert done.returncode == 64, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "kit folder" in done.stderr and "--assignment" in done.stderr


def test_check_in_the_kit_before_copying_a_starter_says_what_to_do(kit):
    done = run_grader("check", cwd=kit)
    assert done.returncode == 64, done.stdout + done.stderr
    assert "copy starter/attention.py or starter/attention.ipynb" in done.stderr


def test_the_kit_carries_the_support_module_its_public_tests_use(kit):
    support = kit / "public" / "support.py"
    assert support.read_bytes() == (ROOT / "assignments" / "attention" / "support.py").read_bytes()
    doc = yaml.safe_load((kit / "assignment.yaml").read_text())
    assert doc["support"] == "public/support.py"
    names = {p.relative_to(kit).as_posix() for p in kit.rglob("*") if p.is_file()}
    assert not any(n.startswith("hidden/") or "answer_key" in n or "mutants" in n for n in names), names
    assert "reference" not in doc and "answer_key" not in doc


def test_a_kit_whose_public_tests_do_not_use_support_leaves_it_out(tmp_path):
    from grader import assignment
    from grader.kit import write_kit

    folder = tmp_path / "assignments" / "attention"
    shutil.copytree(ROOT / "assignments" / "attention", folder, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "reference").mkdir()
    shutil.copyfile(ROOT / "reference" / "attention.py", tmp_path / "reference" / "attention.py")
    for test in (folder / "public").glob("test_*.py"):
        test.write_text('def test_nothing(student):\n    """passes"""\n')
    write_kit(assignment.load(folder / "assignment.yaml"), tmp_path / "kit")
    kit = tmp_path / "kit" / "attention"
    assert not (kit / "public" / "support.py").exists()
    assert "support" not in yaml.safe_load((kit / "assignment.yaml").read_text())
    done = run_grader("check", "--exercise", "attention_core", cwd=kit)
    assert done.returncode == 64 and "Traceback" not in done.stderr, done.stdout + done.stderr
