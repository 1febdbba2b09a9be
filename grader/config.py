"""One grading run's configuration, built once at the edge (the CLI) and passed down.

A `RunConfig` is everything a grading process needs besides the submissions: which
assignment, how isolated, on what device and seed, whether it is a public check, and
any limits that replace the assignment's own. It crosses into a grading worker (a
pipe) and a Dask task as `to_json()` text, plain JSON with a format number, never
pickle, and is rebuilt by `from_json()`; `from_json(c.to_json()) == c`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar

from grader.errors import InternalError
from grader.limits import Limits

FORMAT = 1
"""The JSON format's number: a process that reads another refuses it."""


@dataclass(frozen=True)
class RunConfig:
    assignment: Path | None = None
    """The assignment.yaml a worker loads (None where the caller hands the loaded
    `Assignment` over itself, as in-process grading does)."""
    isolation: str = "auto"
    """The sandbox's isolation level: a `grader.sandbox.host.Isolation` value."""
    device: str = "cpu"
    """Where the tests run the student's tensors: "cpu" or "cuda" (never "auto" here)."""
    seed: int = 1234
    public: bool = False
    """`grader check`: public tests only, answers checked for form, never for content."""
    exercises: tuple[str, ...] = ()
    """Only these exercises (`grader check --exercise`); empty: all of them."""
    limits: Limits | None = None
    """Limits (time, memory, output) that replace the assignment's; None: its own."""

    _TYPES: ClassVar[dict[str, tuple[type, ...]]] = {
        "assignment": (str, type(None)), "isolation": (str,), "device": (str,),
        "seed": (int,), "public": (bool,), "exercises": (list,), "limits": (dict, type(None)),
    }

    def limits_for(self, own: Limits) -> Limits:
        """The limits to grade under, given the assignment's `own`."""
        return self.limits if self.limits is not None else own

    def with_assignment(self, path: Path) -> RunConfig:
        return replace(self, assignment=path)

    def to_json(self) -> str:
        """One line of JSON, keys sorted (the same config is the same text)."""
        doc = asdict(self)
        doc["assignment"] = None if self.assignment is None else str(self.assignment)
        doc["exercises"] = list(self.exercises)
        return json.dumps({"format": FORMAT, "config": doc}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunConfig:
        """The config `to_json` wrote; anything else is a bug of ours (InternalError)."""
        try:
            outer = json.loads(text)
        except ValueError as exc:
            raise _malformed(f"not JSON ({exc})") from None
        if not isinstance(outer, dict) or outer.get("format") != FORMAT:
            raise _malformed(f"expected format {FORMAT}, got {str(outer)[:200]}")
        return cls._from_doc(outer.get("config"))

    @classmethod
    def _from_doc(cls, doc: Any) -> RunConfig:
        names = {f.name for f in fields(cls)}
        if not isinstance(doc, dict) or set(doc) != names:
            raise _malformed(f"expected the keys {sorted(names)}, got {str(doc)[:200]}")
        for name, types in cls._TYPES.items():
            if not isinstance(doc[name], types) or (bool in types) != isinstance(doc[name], bool):
                raise _malformed(f"`{name}` is {doc[name]!r}")
        return cls(
            assignment=None if doc["assignment"] is None else Path(doc["assignment"]),
            isolation=doc["isolation"], device=doc["device"], seed=doc["seed"],
            public=doc["public"], exercises=tuple(str(e) for e in doc["exercises"]),
            limits=None if doc["limits"] is None else _limits(doc["limits"]),
        )


def _limits(doc: dict[str, Any]) -> Limits:
    unknown = set(doc) - {f.name for f in fields(Limits)}
    if unknown:
        raise _malformed(f"unknown limits {sorted(unknown)}")
    return Limits(**doc)


def _malformed(why: str) -> InternalError:
    return InternalError(f"malformed run configuration: {why}")
