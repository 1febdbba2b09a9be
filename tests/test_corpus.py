"""Each sample submission gets exactly the per-exercise outcome it must get.

tests/corpus/<case>/expected.yaml says, per exercise: passed (full marks), lost (fewer
than full marks), error (the code could not run: error or timeout), or timeout; and,
where it matters, phrases the messages must hold or must not, that the report shows no
error (`clean`), and how many of the student's own figures it shows (`figures`).
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


def _messages(result: dict, ex_id: str) -> str:
    ex = next(e for e in result["exercises"] if e["id"] == ex_id)
    return " ".join([ex["message"]] + [t["message"] for t in ex["tests"]] + list(result["load"]["notices"]))


@pytest.mark.parametrize("case", [c for c in CASES if _expected(c).get("message_lacks")])
def test_messages_give_no_advice_meant_for_another_mistake(case, corpus_results):
    for ex_id, needle in _expected(case)["message_lacks"].items():
        text = _messages(corpus_results[case], ex_id)
        assert needle.lower() not in text.lower(), f"{case}/{ex_id}: {needle!r} in {text[:600]!r}"


@pytest.mark.parametrize("case", [c for c in CASES if _expected(c).get("clean")])
def test_clean_cases_report_no_error(case, corpus_results):
    result = corpus_results[case]
    load = result["load"]
    assert load["cell_errors"] == [] and load["notices"] == [], (load["cell_errors"], load["notices"])
    failing = [(t["name"], t["message"]) for ex in result["exercises"] for t in ex["tests"]
               if not t["passed"] or t["outcome"] != "passed"]
    assert failing == []


@pytest.mark.parametrize("case", [c for c in CASES if "figures" in _expected(c)])
def test_the_students_figures_reach_the_result(case, corpus_results):
    figures = [f for ex in corpus_results[case]["exercises"] for t in ex["tests"]
               for f in t.get("figures", [])]
    assert len(figures) == _expected(case)["figures"]
    for f in figures:
        assert f["png_base64"].startswith("iVBORw0KGgo") and f["width"] > 100 and f["height"] > 100


def test_every_result_lists_every_exercise(corpus_results):
    ids = None
    for case, result in corpus_results.items():
        got = [ex["id"] for ex in result["exercises"]]
        ids = ids or got
        assert got == ids, case
        assert result["assignment"] == "attention" and result["max_score"] == 100
        assert result["provenance"]["torch_version"] and result["provenance"]["seed"] == 1234
