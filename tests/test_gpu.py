"""`--device cuda`: the same grading on a GPU (skipped on machines without CUDA)."""

import pytest
import torch
from conftest import ROOT, read_results, run_grader

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_correct_and_buggy_submissions_grade_the_same_on_cuda(tmp_path):
    out = tmp_path / "reports"
    done = run_grader("grade", str(ROOT / "examples" / "submissions"), "--device", "cuda",
                      "--out", str(out), "--assignment", "attention")
    assert done.returncode == 0, done.stderr
    results = read_results(out)
    assert results["an_nguyen"]["score"] == 100 and results["binh_tran"]["score"] == 100
    assert results["an_nguyen"]["provenance"]["device"] == "cuda"
    assert results["chi_le"]["score"] < 100
