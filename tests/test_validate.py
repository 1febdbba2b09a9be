"""`grader validate` fails an assignment whose tests let a mutant survive."""

from __future__ import annotations

import shutil

import yaml

from conftest import ROOT, run_grader


def test_a_surviving_mutant_fails_validation(tmp_path):
    folder = tmp_path / "attention"
    shutil.copytree(ROOT / "assignments" / "attention", folder)
    doc = yaml.safe_load((folder / "assignment.yaml").read_text())
    doc["reference"] = str(ROOT / "reference" / "attention.py")
    (folder / "assignment.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (folder / "mutants.yaml").write_text(yaml.safe_dump([
        # declared to lose causal_mask too, which a dropout bug does not touch
        {"file": "mutants/dropout_in_eval.py", "loses": ["dropout", "causal_mask"]},
    ]))
    done = run_grader("validate", str(folder / "assignment.yaml"), timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "reference: 100/100" in done.stdout
    assert "mutant dropout_in_eval survives in ['causal_mask']" in done.stdout
