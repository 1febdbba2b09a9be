"""Reading an assignment's YAML into plain data (schema-checked)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    """One answer the student writes in answers.yaml (see docs/assignments.md)."""

    id: str
    """Dotted path into answers.yaml, e.g. `quiz.q3`."""
    exercise: str
    prompt: str
    type: str
    """numeric | exact | choice | text | manual"""
    points: float
    choices: tuple[str, ...] = ()
    visibility: str = "visible"
