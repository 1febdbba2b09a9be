"""The assignment's support module: declared in the YAML, part of its digest, checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader import assignment
from grader.errors import AssignmentSchemaError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def attention(tmp_path: Path) -> Path:
    """A copy of the attention assignment (and the reference its YAML points at)."""
    folder = tmp_path / "assignments" / "attention"
    shutil.copytree(ROOT / "assignments" / "attention", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "reference").mkdir()
    shutil.copyfile(ROOT / "reference" / "attention.py", tmp_path / "reference" / "attention.py")
    return folder / "assignment.yaml"


def test_the_attention_assignment_declares_its_support_module():
    a = assignment.load(ROOT / "assignments" / "attention" / "assignment.yaml")
    assert a.support == ROOT / "assignments" / "attention" / "support.py"


@pytest.mark.parametrize("public", [False, True])
def test_changing_the_support_module_changes_the_digest(attention, public):
    before = assignment.load(attention).digest(public=public)
    support = attention.parent / "support.py"
    support.write_text(support.read_text() + "\n# edited\n")
    assert assignment.load(attention).digest(public=public) != before


def test_a_missing_support_module_is_named(attention):
    (attention.parent / "support.py").unlink()
    with pytest.raises(AssignmentSchemaError, match="support.*does not exist"):
        assignment.load(attention)


def test_a_support_module_must_be_python(attention):
    attention.write_text(attention.read_text().replace("support: support.py", "support: support.txt"))
    with pytest.raises(AssignmentSchemaError, match="support"):
        assignment.load(attention)


def test_the_authoring_api_exports_what_it_lists():
    import grader.testing as api

    assert sorted(api.__all__) == api.__all__
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    for helper in ("call_both", "check_shape", "expect_raise", "returned_pair", "said", "seeded_randn"):
        assert helper in api.__all__
