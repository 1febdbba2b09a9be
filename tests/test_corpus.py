"""Each sample submission gets exactly the per-exercise outcome it must get.

tests/corpus/<case>/expected.yaml says, per exercise: passed (full marks), lost (fewer
than full marks), error (the code could not run: error or timeout), or timeout.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p.parent.name for p in CORPUS.glob("*/expected.yaml"))


def _expected(case: str) -> dict:
    return yaml.safe_load((CORPUS / case / "expected.yaml").read_text())


def _matches(expected: str, exercise: dict) -> bool:
    full = exercise["score"] >= exercise["max_score"] - 1e-9
    return {
        "passed": full and exercise["status"] == "passed",
        "lost": not full,
        "error": exercise["status"] in ("error", "timeout"),
        "timeout": exercise["status"] == "timeout",
    }[expected]


@pytest.mark.parametrize("case", CASES)
def test_outcome_per_exercise(case, corpus_results):
    expected = _expected(case)
    result = corpus_results[case]
    got = {ex["id"]: ex for ex in result["exercises"]}
    wrong = {
        ex_id: f"expected {want}, got {got[ex_id]['status']} {got[ex_id]['score']}/{got[ex_id]['max_score']}"
               f" ({'; '.join(t['message'][:120] for t in got[ex_id]['tests'] if not t['passed'])[:400]})"
        for ex_id, want in expected["status"].items() if not _matches(want, got[ex_id])
    }
    assert not wrong, f"{case}: {expected.get('why', '')}\n" + "\n".join(f"{k}: {v}" for k, v in wrong.items())


@pytest.mark.parametrize("case", [c for c in CASES if _expected(c).get("message_contains")])
def test_messages_name_the_bug(case, corpus_results):
    result = corpus_results[case]
    for ex_id, needle in _expected(case)["message_contains"].items():
        ex = next(e for e in result["exercises"] if e["id"] == ex_id)
        text = " ".join([ex["message"]] + [t["message"] for t in ex["tests"]] + list(result["load"]["notices"]))
        assert needle.lower() in text.lower(), f"{case}/{ex_id}: {needle!r} not in {text[:600]!r}"


def test_every_result_lists_every_exercise(corpus_results):
    ids = None
    for case, result in corpus_results.items():
        got = [ex["id"] for ex in result["exercises"]]
        ids = ids or got
        assert got == ids, case
        assert result["assignment"] == "attention" and result["max_score"] == 100
        assert result["provenance"]["torch_version"] and result["provenance"]["seed"] == 1234
