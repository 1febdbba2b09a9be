"""Files on disk: result.json round-trips, grades.csv is safe, writes are atomic."""

from __future__ import annotations

import csv
import dataclasses
import enum
import json
import os
from pathlib import Path
from typing import Any

import pytest
from result_samples import EXERCISE_IDS, all_samples, buggy, evil, full_marks, grader_failure

from grader.errors import OutputError
from grader.report.files import (
    csv_safe,
    write_grades_csv,
    write_index_html,
    write_report_html,
    write_result_json,
)
from grader.results import (
    EvidenceKind,
    Outcome,
    SubmissionResult,
    Visibility,
    from_json_dict,
)


def _strict_json(path: Path) -> object:
    def reject(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=reject)


@pytest.mark.parametrize("result", [r for r in all_samples() if r.student != evil().student],
                         ids=lambda r: r.student)  # fmt: skip
def test_result_json_round_trips(tmp_path: Path, result: SubmissionResult) -> None:
    path = write_result_json(result, tmp_path / result.student / "result.json")
    doc = _strict_json(path)
    assert isinstance(doc, dict)
    assert list(doc)[:5] == ["student", "assignment", "score", "max_score", "exercises"]
    assert from_json_dict(doc) == result


def test_result_json_has_every_exercise_and_contract_keys(tmp_path: Path) -> None:
    doc = _strict_json(write_result_json(buggy(), tmp_path / "result.json"))
    assert isinstance(doc, dict)
    assert [e["id"] for e in doc["exercises"]] == list(EXERCISE_IDS)
    ex = doc["exercises"][2]
    assert ex["status"] == "failed" and {"id", "score", "max_score", "status", "tests"} <= set(ex)
    assert {"name", "score", "max_score", "passed", "message"} <= set(ex["tests"][0])


def test_non_finite_numbers_become_readable_strings(tmp_path: Path) -> None:
    doc = _strict_json(write_result_json(evil(), tmp_path / "result.json"))
    assert isinstance(doc, dict)
    ev = doc["exercises"][2]["tests"][0]["evidence"][3]
    assert ev["data"]["max_abs_error"] == "inf" and float(ev["data"]["max_abs_error"]) == float(
        "inf"
    )
    assert doc["student"] == "<script>alert(1)</script>"


def test_write_is_atomic_and_leaves_no_temp_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "result.json"
    write_result_json(full_marks(), path)
    before = path.read_text()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("grader.report.files.os.replace", broken_replace)
    with pytest.raises(OutputError, match="cannot write .*result.json: disk full"):
        write_result_json(buggy(), path)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_overwrite_replaces_the_file(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    write_result_json(full_marks(), path)
    write_result_json(buggy(), path)
    assert from_json_dict(json.loads(path.read_text())) == buggy()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
    assert os.stat(path).st_mode & 0o777 == 0o644


def _read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_grades_csv_columns_and_rows(tmp_path: Path) -> None:
    path = write_grades_csv([full_marks(), buggy()], tmp_path / "grades.csv", EXERCISE_IDS)
    rows = _read_csv(path)
    assert rows[0] == ["student", "total", "max", *EXERCISE_IDS]
    assert rows[1] == ["alice", "100", "100", "10", "20", "15", "15", "10", "10", "10", "10"]
    assert rows[2] == ["bob", "68", "100", "10", "8", "0", "10", "10", "10", "10", "10"]


def test_grades_csv_exercise_order_and_missing_exercise(tmp_path: Path) -> None:
    path = write_grades_csv([full_marks()], tmp_path / "g.csv", ["quiz", "not_there", "dropout"])
    assert _read_csv(path) == [
        ["student", "total", "max", "quiz", "not_there", "dropout"],
        ["alice", "100", "100", "10", "", "10"],
    ]


def test_grader_failure_is_blank_not_zero(tmp_path: Path) -> None:
    rows = _read_csv(write_grades_csv([grader_failure()], tmp_path / "g.csv", EXERCISE_IDS))
    assert rows[1] == ["erin", "", "100", *([""] * len(EXERCISE_IDS))]


@pytest.mark.parametrize("student", ["=cmd|' /C calc'!A0", "+1+1", "-2", "@SUM(A1)", "\tx"])
def test_grades_csv_escapes_formulas(tmp_path: Path, student: str) -> None:
    result = dataclasses.replace(full_marks(), student=student)
    rows = _read_csv(write_grades_csv([result], tmp_path / "g.csv", EXERCISE_IDS))
    assert rows[1][0] == "'" + student


def test_csv_safe_leaves_plain_ids_alone() -> None:
    assert csv_safe("alice") == "alice" and csv_safe("a=b") == "a=b"
    assert csv_safe('<script>"x",y') == '<script>"x",y'


def test_grades_csv_quotes_commas_and_quotes(tmp_path: Path) -> None:
    result = dataclasses.replace(full_marks(), student='o"neil, jr')
    rows = _read_csv(write_grades_csv([result], tmp_path / "g.csv", EXERCISE_IDS))
    assert rows[1][0] == 'o"neil, jr'


def test_html_writers_create_folders(tmp_path: Path) -> None:
    report = write_report_html(buggy(), tmp_path / "reports" / "bob" / "report.html")
    index = write_index_html(all_samples(), tmp_path / "reports" / "index.html")
    assert report.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert 'href="bob/report.html"' in index.read_text(encoding="utf-8")


def _rich() -> SubmissionResult:
    """Every kind of content a result carries: evidence of each kind, a figure, a written
    answer waiting for review and one decided, load errors and notices."""
    import base64
    import struct
    import zlib

    from grader.results import (
        Evidence,
        EvidenceKind,
        Figure,
        LoadReport,
        Outcome,
        Review,
        TestResult,
        Visibility,
    )

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(b"\x00" + bytes(6))) + chunk(b"IEND", b""))
    figure = Figure(png_base64=base64.b64encode(png).decode(), width=2, height=1, source="cell 8")
    evidence = (
        Evidence(EvidenceKind.MISMATCH, {"what": "output", "max_abs_error": 0.5, "index": [0, 1],
                                         "expected": 1.0, "got": 1.5, "expected_slice": [[1.0]],
                                         "got_slice": [[1.5]]}),
        Evidence(EvidenceKind.HEATMAPS, {"title": "weights", "panels": [
            {"label": "yours", "matrix": [[0.5, 0.5]], "masked": [[False, True]]}]}),
        Evidence(EvidenceKind.TRACEBACK, {"title": "Your code raised", "text": "ValueError: x"}),
        Evidence(EvidenceKind.NOTE, {"text": "a note"}),
    )
    code = TestResult("masks the future", 0.0, 5.0, False, "wrong weights", Outcome.ERROR,
                      Visibility.VISIBLE, "hidden/test_causal_mask.py::test_future", evidence,
                      0.25, (figure,))
    withheld = TestResult("withheld", 0.0, 2.0, False, "no", Outcome.TIMEOUT,
                          Visibility.MESSAGE_ONLY, "hidden/test_x.py::test_slow")
    secret = TestResult("secret", 1.0, 1.0, True, visibility=Visibility.HIDDEN, test_id="t::s")
    flagged = TestResult("1. Why?", 0.5, 1.0, False, "provisional", Outcome.FAILED,
                         test_id="question:quiz.q1", needs_review=True,
                         review=Review(found=("scale",), missed=("softmax",), reasons=("short",)))
    decided = TestResult("2. How?", 1.0, 1.0, True, test_id="question:quiz.q2", needs_review=False,
                         review=Review(found=("mask",)))
    base = grader_failure()
    first, second, *rest = base.exercises
    exercises = (dataclasses.replace(first, tests=(code, withheld, secret)),
                 dataclasses.replace(second, tests=(flagged, decided)), *rest)
    load = LoadReport(kind="notebook", files=("attention.ipynb",), notices=("cell 3 raised",),
                      cell_errors=({"cell": 3, "where": "cell 3", "ename": "ValueError",
                                    "evalue": "x", "traceback": "..."},),
                      stdout="hello\n", stdout_truncated=True)
    return dataclasses.replace(base, exercises=exercises, load=load)


def test_a_rich_result_round_trips_through_its_json_document() -> None:
    result = _rich()
    assert not result.gradable and result.needs_review_count == 1
    doc = result.to_json_dict()
    text = json.dumps(doc)
    back = SubmissionResult.from_json_dict(json.loads(text))
    assert back == result
    assert json.dumps(back.to_json_dict()) == text
    test = back.exercises[0].tests[0]
    assert test.outcome is Outcome.ERROR and test.evidence[0].kind is EvidenceKind.MISMATCH
    assert back.exercises[0].tests[1].visibility is Visibility.MESSAGE_ONLY
    assert "Outcome" not in text and "Visibility" not in text and "EvidenceKind" not in text


def test_the_json_document_is_what_asdict_gives_with_enums_as_their_values() -> None:
    # to_json_dict walks the dataclasses itself (asdict's deep copies cost more than the rest
    # of writing a result): its document is asdict's, member for member, with each enum's value
    def plain(value: Any) -> Any:
        if isinstance(value, enum.Enum):
            return value.value
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(plain(v) for v in value)
        return value

    for result in [_rich(), *all_samples()]:
        expected = plain(dataclasses.asdict(result))
        expected["exercises"] = list(expected["exercises"])
        for ex in expected["exercises"]:
            for test in ex["tests"]:
                for key in ("needs_review", "review"):
                    if test.get(key) is None:
                        test.pop(key, None)
        doc = result.to_json_dict()
        assert doc == expected
        assert json.dumps(doc["exercises"]) == json.dumps(expected["exercises"])  # key order too


def test_outcomes_visibilities_and_kinds_read_and_print_as_their_values() -> None:
    assert Outcome("timeout") is Outcome.TIMEOUT and Outcome.ERROR == "error"
    assert f"{Outcome.ERROR} {Visibility.MESSAGE_ONLY} {EvidenceKind.NOTE}" == "error message_only note"
    assert str(Visibility.HIDDEN) == "hidden" and {"passed": 1}[Outcome.PASSED] == 1
    from grader.results import TestResult

    assert TestResult("t", 1, 1, True, outcome="failed").outcome is Outcome.FAILED  # type: ignore[arg-type]
