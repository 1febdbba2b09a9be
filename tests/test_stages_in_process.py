"""The stages after the sandbox, graded through the in-process fake (tests/fakes.py):
the real protocol, proxy, pytest session and scoring, in milliseconds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes import InProcessSandbox

from grader import assignment
from grader.batch.pipeline import Grading
from grader.config import RunConfig
from grader.intake.discover import discover

ROOT = Path(__file__).resolve().parent
ADVERSARIAL = ROOT / "fixtures" / "adversarial"


@pytest.fixture()
def fake() -> Iterator[InProcessSandbox]:
    with InProcessSandbox() as sandbox:
        yield sandbox


def _grade(tiny: assignment.Assignment, fake: InProcessSandbox, name: str):  # type: ignore[no-untyped-def]
    with Grading(tiny, fake, RunConfig()) as grading:  # type: ignore[arg-type]
        return grading.grade(discover(ADVERSARIAL / name, tiny)[0])


def test_an_honest_submission_gets_full_marks(tiny, fake) -> None:
    result = _grade(tiny, fake, "honest")
    assert result.gradable and result.score == result.max_score > 0
    assert fake.spawned >= 1


def test_a_wrong_value_loses_points_with_a_message(tiny, fake) -> None:
    result = _grade(tiny, fake, "wrong")
    assert result.gradable and result.score < result.max_score
    failed = [t for ex in result.exercises for t in ex.tests if not t.passed]
    assert failed and all(t.message for t in failed)


def test_a_submission_that_imports_a_plotting_library_has_the_sandbox_warm_them(tiny, fake, tmp_path) -> None:
    """What `Sandbox.warm_plots` is for: the zygote loads pyplot and seaborn once a class is seen
    to plot, and never for a class that does not."""
    assert _grade(tiny, fake, "honest").gradable and fake.warm_asked == 0
    plots = tmp_path / "plots"
    plots.mkdir()
    source = (ADVERSARIAL / "honest" / "solution.py").read_text()
    (plots / "solution.py").write_text(source + "\n\ndef show(x):\n    import seaborn\n    seaborn.heatmap(x)\n")
    with Grading(tiny, fake, RunConfig()) as grading:  # type: ignore[arg-type]
        assert grading.grade(discover(plots, tiny)[0]).gradable
    assert fake.warm_asked == 1
