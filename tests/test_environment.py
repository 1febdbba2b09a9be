"""The student environment an assignment declares (issue 14): schema, install, proof in
the sandbox, the kit's README, and honest messages about imports outside it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import ATTENTION, ROOT, run_grader

from grader import assignment
from grader.environment import (
    Environment,
    imported_modules,
    missing_module,
    parse_environment,
    undeclared_imports,
)
from grader.errors import AssignmentSchemaError
from grader.kit import student_readme
from grader.limits import Limits
from grader.sandbox.host import Isolation, Sandbox
from grader.testing.student import Connection, Student, StudentCrashed, _import_failed_message
from grader.validate import ValidationReport, _probe_environment

LESSON_ENV = parse_environment({"packages": ["torch>=2.1,<3", "numpy==2.4.6",
                                             "matplotlib==3.11.2", "seaborn==0.13.2"]})
LIMITS = Limits(load_s=30, per_test_s=10, per_submission_s=60, memory_mb=4096, cpu_s=60,
                processes=64, file_size_mb=4, output_kb=64)


def _env() -> Environment:
    assert LESSON_ENV is not None
    return LESSON_ENV


# ------------------------------------------------------------------ the declaration


def test_the_attention_assignment_declares_the_lessons_packages_pinned() -> None:
    env = assignment.load(ATTENTION).environment
    assert env is not None
    pins = dict(re.match(r"([A-Za-z0-9_.-]+)(.*)", r).groups() for r in env.requirements())
    assert set(pins) == {"torch", "numpy", "matplotlib", "seaborn"}
    assert pins["torch"].startswith(">=")  # setup.sh pins the CPU build
    for name in ("numpy", "matplotlib", "seaborn"):
        assert re.fullmatch(r"==\d+(\.\d+)+", pins[name]), (name, pins[name])


def _yaml(tmp_path: Path, environment: object) -> Path:
    doc = {"schema": 1, "id": "tiny", "title": "Tiny", "version": "1", "environment": environment,
           "exercises": [{"id": "only", "questions": [
               {"id": "only.q", "prompt": "?", "type": "numeric", "points": 1}]}]}
    path = tmp_path / "assignment.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("environment, key, expected", [
    ({"packages": ["matplotlib==3.11.2", "not a requirement!"]}, "environment.packages.1",
     "not a pip requirement"),
    ({"packages": ["seaborn==0.13.2", "Seaborn>=0.12"]}, "environment.packages.1", "listed twice"),
    ({"packages": [3]}, "environment.packages.0", "expected string"),
    ({"pip": ["numpy"]}, "environment", "unknown key"),
    ({}, "environment", "missing key: 'packages'"),
])
def test_a_bad_environment_names_its_entry(tmp_path: Path, environment: object, key: str,
                                           expected: str) -> None:
    with pytest.raises(AssignmentSchemaError) as err:
        assignment.load(_yaml(tmp_path, environment))
    assert err.value.key == key and expected in err.value.expected, str(err.value)


def test_no_declaration_means_no_environment(tmp_path: Path) -> None:
    path = _yaml(tmp_path, None)
    doc = yaml.safe_load(path.read_text())
    del doc["environment"]
    path.write_text(yaml.safe_dump(doc))
    assert assignment.load(path).environment is None


def test_grader_environment_prints_the_requirements_for_pip() -> None:
    done = run_grader("environment", str(ATTENTION), "--requirements")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == list(_env().requirements())
    status = run_grader("environment", str(ATTENTION))
    assert status.returncode == 0, status.stdout + status.stderr  # this venv has them all
    assert "matplotlib==3.11.2" in status.stdout and "3.11.2" in status.stdout


def test_grader_environment_refuses_two_different_pins(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _yaml(tmp_path / "a", {"packages": ["seaborn==0.13.2"]})
    second = _yaml(tmp_path / "b", {"packages": ["seaborn==0.12.0"]})
    done = run_grader("environment", str(first), str(second), "--requirements")
    assert done.returncode != 0 and "seaborn differently" in done.stderr


def test_setup_installs_the_shipped_assignments_environment() -> None:
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "environment assignments/*/assignment.yaml --requirements" in setup


def test_the_kit_readme_lists_the_packages_to_install() -> None:
    text = student_readme(assignment.load(ATTENTION))
    install = text.split("## 2.")[0]
    assert ".venv/bin/pip install numpy==2.4.6 matplotlib==3.11.2 seaborn==0.13.2" in install
    assert "may import `torch`, `numpy`, `matplotlib` and `seaborn`" in " ".join(install.split())


# ------------------------------------------------------------------ reading imports


def test_imports_are_found_anywhere_in_the_code_and_notebook_syntax_is_skipped() -> None:
    module = ("import os, numpy as np\nfrom matplotlib import pyplot\nfrom . import sibling\n"
              "def f():\n    import pandas.io\n    from seaborn.utils import x\n")
    assert imported_modules([module]) == ("os", "numpy", "matplotlib", "pandas", "seaborn")
    cells = ["%matplotlib inline\nimport tqdm\n!pip install tqdm", "%%bash\nimport nope",
             "def broken(:\n import nope2", "from IPython.display import display"]
    assert imported_modules(cells, notebook=True) == ("tqdm", "IPython")


def test_only_what_the_environment_does_not_offer_is_undeclared() -> None:
    env = _env()
    code = ["import math, json, torch, seaborn, mpl_toolkits.mplot3d\nimport pandas\n"
            "from IPython.display import display\nimport notapackage"]
    assert undeclared_imports(code, env, notebook=False) == ("pandas", "IPython", "notapackage")
    assert undeclared_imports(code, env, notebook=True) == ("pandas", "notapackage")
    assert undeclared_imports(code, env, False, besides={"notapackage"}) == ("pandas", "IPython")


def test_a_missing_module_is_read_from_the_childs_report() -> None:
    assert missing_module({"type": "ModuleNotFoundError", "message": "No module named 'a.b'"}) == "a"
    assert missing_module({"type": "ImportError", "message": "cannot import name 'x'"}) == ""
    assert missing_module(None) == ""


# ------------------------------------------------------------------ messages


def _error(kind: str, message: str, line: int) -> dict:
    tb = (f'Traceback (most recent call last):\n  File "attention.py", line {line}, in <module>\n'
          f"{kind}: {message}")
    return {"type": kind, "message": message, "traceback": tb}


DEMO = "import torch\n\n\ndef f():\n    return 1\n\n\nmodel = f()\nout = model(3)\n"


def test_an_import_outside_the_environment_names_it_and_what_there_is() -> None:
    text = _import_failed_message("attention.py", _error(
        "ModuleNotFoundError", "No module named 'notapackage'", 3),
        "import math\n\nimport notapackage\n", _env())
    assert "`notapackage`" in text and "line 3" in text
    assert "not in this assignment's environment" in text
    assert "`torch`, `numpy`, `matplotlib` and `seaborn`, and Python's standard library" in text
    assert "__main__" not in text


def test_a_declared_package_missing_here_says_to_install_it() -> None:
    text = _import_failed_message("attention.py", _error(
        "ModuleNotFoundError", "No module named 'seaborn'", 2), "import torch\nimport seaborn\n", _env())
    assert 'pip install "seaborn==0.13.2"' in text and "__main__" not in text


def test_demo_code_that_fails_on_import_gets_the_main_advice() -> None:
    text = _import_failed_message("attention.py", _error("TypeError", "'int' object is not callable", 9),
                                  DEMO, _env())
    assert "line 9" in text and '`if __name__ == "__main__":`' in text


@pytest.mark.parametrize("error, source", [
    ({"type": "SyntaxError", "message": "expected ':'",
      "traceback": '  File "attention.py", line 1\n    def f()\nSyntaxError: expected \':\''},
     "def f()\n    pass\n"),
    (_error("ImportError", "cannot import name 'nope' from 'torch'", 1), "from torch import nope\n"),
    (_error("NameError", "name 'Tensor' is not defined", 4), "import torch\n\n\nclass A:\n    x: Tensor = 1\n"),
])
def test_other_mistakes_get_no_main_advice(error: dict, source: str) -> None:
    text = _import_failed_message("attention.py", error, source, _env())
    assert "__main__" not in text and error["type"] in text


# ------------------------------------------------------------------ in the sandbox


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    with Sandbox(Isolation.AUTO, LIMITS) as sb:
        yield sb


def _load(box: Sandbox, source: str) -> Connection:
    return Connection(box, {"op": "load", "kind": "module", "source": source,
                            "filename": "attention.py"}, LIMITS, "attention.py", _env())


def test_the_lessons_packages_import_in_the_sandbox(box: Sandbox) -> None:
    conn = _load(box, "import matplotlib.pyplot as plt\nimport seaborn as sns\nimport numpy\n"
                      "import sys\nBACKEND = plt.get_backend()\nFILES = sns.__file__\n")
    try:
        student = Student(conn)
        assert student.BACKEND.value() == "module://grader.sandbox.inside.mpl_backend"
        assert student.FILES.value().endswith("seaborn/__init__.py")
    finally:
        conn.close()


def test_a_module_importing_an_unknown_package_gets_the_environment_message(box: Sandbox) -> None:
    conn = _load(box, "import torch\nimport notapackage\n\ndef f():\n    return 1\n")
    try:
        with pytest.raises(StudentCrashed) as err:
            Student(conn).f()
    finally:
        conn.close()
    text = str(err.value)
    assert "imports `notapackage`" in text and "line 2" in text and "__main__" not in text


def test_validate_imports_every_declared_package_in_a_sandboxed_child() -> None:
    a = assignment.load(ATTENTION)
    report = ValidationReport()
    _probe_environment(a, Isolation.AUTO, report)
    assert report.ok, report.problems
    assert "matplotlib 3.11.2" in report.lines[-1] and "seaborn 0.13.2" in report.lines[-1]

    broken = replace(a, environment=parse_environment(
        {"packages": ["torch>=2.1,<3", "numpy==1.0.0", "notapackage==1.0"]}))
    report = ValidationReport()
    _probe_environment(broken, Isolation.AUTO, report)
    problems = " | ".join(report.problems)
    assert "numpy 2.4.6 is installed, but the assignment declares `numpy==1.0.0`" in problems
    assert "`notapackage==1.0` does not import in the sandbox (ModuleNotFoundError" in problems


def test_check_notes_an_import_outside_the_environment(tmp_path: Path) -> None:
    """pandas is installed (seaborn needs it) but not declared: check says so, and passes."""
    source = (ROOT / "reference" / "attention.py").read_text(encoding="utf-8")
    source = source.replace("from __future__ import annotations\n",
                            "from __future__ import annotations\n\nimport pandas as pd\n", 1)
    assert "import pandas" in source
    (tmp_path / "attention.py").write_text(source, encoding="utf-8")
    done = run_grader("check", str(tmp_path), "--assignment", str(ATTENTION),
                      "--exercise", "causal_mask")
    text = " ".join(done.stdout.split())
    assert "note: your code imports `pandas`, which is not in this assignment's environment" in text
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_grade_refuses_while_a_declared_package_is_missing_here(tmp_path: Path) -> None:
    """A missing package would cost every student who imports it: grade nothing, say
    what to install, exit 2."""
    path = _yaml(tmp_path, {"packages": ["seaborn==0.12.0", "notapackage-zz==1.0"]})
    (tmp_path / "subs" / "alice").mkdir(parents=True)
    (tmp_path / "subs" / "alice" / "attention.py").write_text("x = 1\n")
    out = tmp_path / "reports"
    done = run_grader("grade", str(tmp_path / "subs"), "--assignment", str(path), "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grader: the environment"), done.stderr
    assert "notapackage-zz is not installed" in lines[0] and "seaborn 0.13.2 is installed" in lines[0]
    assert "--requirements" in lines[0]
    assert not list(out.glob("*/result.json"))


def test_a_batchs_sandbox_warms_the_plotting_packages_its_environment_declares() -> None:
    """`grade` warms what the lesson's plots import (see `plotting.warm`); `check` (no prewarm)
    and an environment without them do not."""
    from grader.batch.prepare import sandbox_for
    from grader.config import RunConfig

    a = assignment.load(ATTENTION)
    assert sandbox_for(a, RunConfig()).warm_imports == ("matplotlib", "matplotlib.pyplot", "seaborn")
    assert sandbox_for(a, RunConfig(), prewarm=False).warm_imports == ()
    torch_only = replace(a, environment=parse_environment({"packages": ["torch>=2.1,<3", "numpy"]}))
    assert sandbox_for(torch_only, RunConfig()).warm_imports == ()
    assert sandbox_for(replace(a, environment=None), RunConfig()).warm_imports == ()
