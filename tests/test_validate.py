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
        {"name": "dropout_in_eval", "loses": ["dropout", "causal_mask"], "edits": [
            {"find": "self.dropout = nn.Dropout(dropout_p)", "replace": "self.dropout_p = dropout_p"},
            {"find": "weights = self.dropout(torch.softmax(_masked_scores(scores, allowed), dim=-1))",
             "replace": "weights = torch.nn.functional.dropout(torch.softmax(_masked_scores(scores, allowed), dim=-1), p=self.dropout_p, training=True)"}]},
    ]))
    done = run_grader("validate", str(folder / "assignment.yaml"), timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "reference: 100/100" in done.stdout
    assert "mutant dropout_in_eval survives in ['causal_mask']" in done.stdout


def test_a_mutant_edit_that_no_longer_applies_is_reported(tmp_path):
    folder = tmp_path / "attention"
    shutil.copytree(ROOT / "assignments" / "attention", folder)
    doc = yaml.safe_load((folder / "assignment.yaml").read_text())
    doc["reference"] = str(ROOT / "reference" / "attention.py")
    (folder / "assignment.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (folder / "mutants.yaml").write_text(yaml.safe_dump([
        {"name": "stale", "loses": ["attention_core"],
         "edits": [{"find": "this text is not in the reference", "replace": ""}]}]))
    done = run_grader("validate", str(folder / "assignment.yaml"))
    assert done.returncode == 2
    assert "[0].edits[0].find" in done.stderr and "found 0" in done.stderr


def test_a_starter_that_does_not_load_or_scores_fails_validation(tmp_path):
    folder = tmp_path / "attention"
    shutil.copytree(ROOT / "assignments" / "attention", folder)
    doc = yaml.safe_load((folder / "assignment.yaml").read_text())
    doc["reference"] = str(ROOT / "reference" / "attention.py")
    doc.pop("mutants")
    (folder / "assignment.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (folder / "starter" / "attention.py").write_text("import numpy_that_is_not_there\n")
    (folder / "starter" / "attention.ipynb").write_text(
        (folder / "starter" / "attention.ipynb").read_text().replace(
            "raise NotImplementedError(\\\"TODO: causal_mask",
            "return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()\\n    (\\\""))
    done = run_grader("validate", str(folder / "assignment.yaml"), timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the starter-py does not load cleanly" in done.stdout
    assert "numpy_that_is_not_there" in done.stdout
    assert "the starter-ipynb scores" in done.stdout and "expected 0" in done.stdout
