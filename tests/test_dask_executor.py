"""`--executor dask`: the same results from a Dask cluster as from local workers."""

from __future__ import annotations

import shutil

import pytest
from conftest import ATTENTION, ROOT, read_results, run_grader

distributed = pytest.importorskip("distributed")
CASES = ["correct_qkv_module", "correct_wq_notebook", "causal_triu"]


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1") as c:
        yield c


def _scores(results: dict) -> dict:
    return {s: (r["score"], [(e["id"], e["status"], e["score"]) for e in r["exercises"]])
            for s, r in results.items()}


def test_dask_grades_like_local_workers_and_resumes(tmp_path, cluster):
    subs = tmp_path / "subs"
    for case in CASES:
        shutil.copytree(ROOT / "tests" / "corpus" / case, subs / case,
                        ignore=shutil.ignore_patterns("expected.yaml"))
    local = run_grader("grade", str(subs), "--assignment", str(ATTENTION), "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    out = tmp_path / "dask"
    args = ["grade", str(subs), "--assignment", str(ATTENTION), "--out", str(out),
            "--executor", "dask", "--scheduler", cluster.scheduler_address]
    first = run_grader(*args)
    assert first.returncode == 0, first.stderr
    assert _scores(read_results(out)) == _scores(read_results(tmp_path / "local"))
    assert (out / "grades.csv").is_file() and (out / "index.html").is_file()
    again = run_grader(*args)
    assert again.returncode == 0 and "3 result(s) up to date" in again.stderr


def test_dask_without_scheduler_is_a_usage_error():
    done = run_grader("grade", "examples/submissions", "--executor", "dask")
    assert done.returncode == 64 and "--scheduler" in done.stderr
