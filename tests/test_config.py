"""`RunConfig`: the one frozen configuration a grading worker or Dask task receives,
as plain JSON (never pickle), and what the workers build from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.config import RunConfig
from grader.errors import InternalError
from grader.limits import Limits

CONFIGS = {
    "defaults": RunConfig(),
    "batch": RunConfig(assignment=Path("/srv/assignments/attention/assignment.yaml"),
                       isolation="bwrap", device="cuda", seed=7),
    "check": RunConfig(assignment=Path("kit/assignment.yaml"), isolation="process", public=True,
                       exercises=("causal_mask", "padding_mask")),
    "limits": RunConfig(assignment=Path("a.yaml"), seed=0,
                        limits=Limits(load_s=5.5, per_test_s=2.0, memory_mb=512, output_kb=8)),
}


@pytest.mark.parametrize("config", CONFIGS.values(), ids=list(CONFIGS))
def test_a_config_round_trips_through_json(config: RunConfig) -> None:
    text = config.to_json()
    assert "\n" not in text  # one line of the worker's pipe
    assert RunConfig.from_json(text) == config
    assert RunConfig.from_json(text).to_json() == text


def test_the_json_is_plain_versioned_and_keyed_stably() -> None:
    doc = json.loads(CONFIGS["limits"].to_json())
    assert doc["format"] == 1
    assert doc["config"]["assignment"] == "a.yaml" and doc["config"]["limits"]["memory_mb"] == 512
    same = RunConfig(limits=CONFIGS["limits"].limits, seed=0, assignment=Path("a.yaml"))
    assert same.to_json() == CONFIGS["limits"].to_json()  # the Dask worker's cache key


def test_a_config_is_frozen() -> None:
    with pytest.raises(AttributeError):
        RunConfig().seed = 1  # type: ignore[misc]


def _doc(**changes: object) -> str:
    doc = json.loads(RunConfig().to_json())
    doc["config"].update(changes)
    return json.dumps(doc)


@pytest.mark.parametrize("text", [
    "not json",
    json.dumps({"format": 99, "config": {}}),
    json.dumps([1, 2]),
    _doc(seed="1234"),
    _doc(seed=True),
    _doc(public="yes"),
    _doc(exercises="causal_mask"),
    _doc(limits={"memory_gb": 2}),
    _doc(extra=1),
])
def test_anything_else_is_refused_as_a_bug_of_ours(text: str) -> None:
    with pytest.raises(InternalError, match="malformed run configuration"):
        RunConfig.from_json(text)


def test_limits_replace_the_assignments_only_when_given() -> None:
    own = Limits(per_test_s=3.0)
    assert RunConfig().limits_for(own) is own
    assert CONFIGS["limits"].limits_for(own) == CONFIGS["limits"].limits


def test_the_worker_builds_the_assignment_the_config_names() -> None:
    from grader.batch.prepare import load_assignment

    yaml_path = Path(__file__).parents[1] / "assignments" / "attention" / "assignment.yaml"
    config = RunConfig(assignment=yaml_path, public=True, exercises=("causal_mask",),
                       limits=Limits(per_test_s=1.5))
    a = load_assignment(config)
    assert [ex.id for ex in a.exercises] == ["causal_mask"] and a.limits.per_test_s == 1.5
