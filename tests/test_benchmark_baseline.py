"""The benchmark's naive baseline runs every hidden test, as the grader does.

Its speed-up is only a measurement while the baseline does the same work: when a hidden
test asked for a fixture the baseline's conftest lacked (`support`, `student.figures()`),
two thirds of its tests errored at setup, it ran cheaper, and every ratio read low.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = REPO / "assignments" / "attention" / "assignment.yaml"

pytestmark = pytest.mark.slow


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench", REPO / "benchmarks" / "bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench"] = module
    spec.loader.exec_module(module)
    return module


def test_baseline_runs_every_hidden_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench()
    manifest = bench.generate(6, tmp_path / "subs")  # s000 module, s001 notebook: correct; s002: no sqrt
    tests = bench.baseline_tests_dir(ASSIGNMENT, tmp_path / "baseline_tests")
    hidden = sum(len(re.findall(r"^def test_", f.read_text(), re.M))
                 for f in (ASSIGNMENT.parent / "hidden").glob("test_*.py"))
    monkeypatch.setenv("BENCH_REPO", str(REPO))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    rows = {sub["id"]: bench.run_baseline_one(sub, tests) for sub in manifest[:3]}
    for sid in ("s000", "s001"):
        assert rows[sid]["rc"] == 0, rows[sid]["summary"]
        assert re.match(rf"{hidden} passed\b", rows[sid]["summary"]), rows[sid]["summary"]
    assert manifest[2]["variant"] == "no_sqrt"
    assert rows["s002"]["rc"] == 1 and "error" not in rows["s002"]["summary"], rows["s002"]["summary"]


def test_a_compared_tree_grades_with_its_own_copy_of_the_assignment(tmp_path: Path) -> None:
    """`--compare DIR`: where DIR holds the assignment's folder too (`git archive HEAD grader
    assignments reference`), its tests and support module are the ones measured."""
    bench = _bench()
    snap, before, bare = tmp_path / "snapshot", tmp_path / "before", tmp_path / "bare"
    for root in (snap, before):
        (root / "assignments" / "attention").mkdir(parents=True)
        (root / "assignments" / "attention" / "assignment.yaml").write_text("id: attention\n")
    (bare / "grader").mkdir(parents=True)
    mine = snap / "assignments" / "attention" / "assignment.yaml"
    assert bench._own_assignment(mine, snap, snap) == mine
    assert bench._own_assignment(mine, snap, before) == before / "assignments" / "attention" / "assignment.yaml"
    assert bench._own_assignment(mine, snap, bare) == mine
    assert bench._own_assignment(ASSIGNMENT, snap, before) == ASSIGNMENT  # not under the snapshot
