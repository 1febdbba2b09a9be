"""Assignment YAML: a bad file gets the file, the key and what was expected."""

import datetime as dt
from pathlib import Path

import pytest
import yaml

from grader import assignment
from grader.errors import AssignmentError, AssignmentSchemaError

ATTENTION = Path(__file__).resolve().parents[1] / "assignments" / "attention" / "assignment.yaml"
CONTRACT_IDS = ["shape_reading", "attention_core", "padding_mask", "causal_mask", "dropout",
                "sdpa_rewrite", "complexity", "quiz"]


def test_attention_assignment_has_the_contracts_exercises_and_100_points():
    a = assignment.load(ATTENTION)
    assert [ex.id for ex in a.exercises] == CONTRACT_IDS
    assert a.max_score == 100
    assert {q.id for q in a.questions} >= {f"quiz.q{i}" for i in range(1, 11)}


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "assignment.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _minimal(**extra) -> dict:
    return {"schema": 1, "id": "tiny", "title": "Tiny", "version": "1",
            "exercises": [{"id": "only", "questions": [
                {"id": "only.q", "prompt": "?", "type": "numeric", "points": 1}]}], **extra}


@pytest.mark.parametrize("change, key, expected", [
    (lambda d: d.pop("title"), "", "missing key: 'title'"),
    (lambda d: d.update(schema=2), "schema", "expected one of"),
    (lambda d: d["exercises"][0].update(points="ten"), "exercises.0.points", "expected number"),
    (lambda d: d["exercises"][0]["questions"][0].update(type="essay"), "exercises.0.questions.0.type", "expected one of"),
    (lambda d: d.update(colour="blue"), "", "unknown key"),
    (lambda d: d["exercises"][0].update(visibility="secret"), "exercises.0.visibility", "visible, message_only"),
])
def test_schema_errors_name_file_key_and_expectation(tmp_path, change, key, expected):
    doc = _minimal()
    change(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(AssignmentSchemaError) as info:
        assignment.load(path)
    assert info.value.key == key
    assert expected in str(info.value) and str(path) in str(info.value)


def test_missing_test_file_is_named(tmp_path):
    doc = _minimal()
    doc["exercises"][0].update(points=5, hidden="hidden/test_only.py")
    with pytest.raises(AssignmentSchemaError, match="test_only.py does not exist"):
        assignment.load(_write(tmp_path, doc))


def test_malformed_yaml_is_reported_with_the_file(tmp_path):
    path = tmp_path / "assignment.yaml"
    path.write_text("id: [unclosed\n")
    with pytest.raises(AssignmentError, match="not valid YAML"):
        assignment.load(path)


def test_resolve_by_name_path_or_single_default(tmp_path):
    (tmp_path / "assignments" / "tiny").mkdir(parents=True)
    target = _write(tmp_path / "assignments" / "tiny", _minimal())
    assert assignment.resolve(None, tmp_path) == target
    assert assignment.resolve("tiny", tmp_path) == target
    assert assignment.resolve(str(target), tmp_path) == target.resolve()
    with pytest.raises(AssignmentError, match="not found"):
        assignment.resolve("nope", tmp_path)


def test_visibility_after_a_date_reveals_on_that_day():
    assert assignment._visibility({"after": "2026-12-24"}, dt.date(2026, 12, 23)) == "hidden"
    assert assignment._visibility({"after": "2026-12-24"}, dt.date(2026, 12, 24)) == "visible"


def test_every_yaml_file_the_grader_trusts_reads_the_same_with_libyaml():
    """`yamltext` reads trusted YAML with libyaml's parser: every such file in the
    repository (assignments, labelled answers, examples, fixtures) must give the
    document the pure-Python parser gives."""
    from grader import yamltext

    repo = Path(__file__).resolve().parents[1]
    files = [p for folder in ("assignments", "examples", "tests") for p in (repo / folder).rglob("*.y*ml")]
    assert len(files) > 250
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            expected = yaml.safe_load(text)
        except yaml.YAMLError:
            with pytest.raises(yaml.YAMLError):
                yamltext.load(text)
            continue
        assert yamltext.load(text) == expected, path
    assert yamltext.SafeLoader is getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def test_a_broken_trusted_file_still_says_where(tmp_path):
    path = tmp_path / "assignment.yaml"
    path.write_text("id: x\nexercises: [\n  - id: a\n")
    with pytest.raises(AssignmentError, match=r"not valid YAML: line \d+, column \d+"):
        assignment.load(path)
