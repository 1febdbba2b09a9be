"""What a grading process builds from its `RunConfig` before the first submission: the
assignment as it grades (its exercises, its limits) and a sandbox for it.

No torch here (`grader check` starts the sandbox's zygote first, which imports torch
while the check does the same), so the grading pipeline is not imported either.
"""

from __future__ import annotations

from dataclasses import replace

from grader import assignment as assignment_mod
from grader.assignment import Assignment
from grader.config import RunConfig
from grader.errors import UsageError
from grader.sandbox.host import Isolation, Sandbox


def load_assignment(config: RunConfig) -> Assignment:
    """The assignment `config` names, as it grades (`for_run`); a public check needs
    no hidden tests."""
    if config.assignment is None:
        raise UsageError("no assignment given: pass --assignment PATH/TO/assignment.yaml")
    return for_run(assignment_mod.load(config.assignment, require_hidden=not config.public), config)


def for_run(a: Assignment, config: RunConfig) -> Assignment:
    """`a` with only `config.exercises` (all where none are named), under `config`'s limits."""
    ids = config.exercises
    known = [ex.id for ex in a.exercises]
    unknown = [i for i in dict.fromkeys(ids) if i not in known]
    if unknown:
        raise UsageError(f"no exercise {', '.join(map(repr, unknown))} in {a.id}; "
                         f"the exercises are: {', '.join(known)}")
    a = a.only(ids) if ids else a
    return replace(a, limits=config.limits_for(a.limits))


def sandbox_for(a: Assignment, config: RunConfig, *, prewarm: bool = True,
                spare: bool = True) -> Sandbox:
    """A sandbox (not yet launched) at `config`'s isolation, under `a`'s limits, that
    never shows `a`'s folder (its hidden tests) to the student's code."""
    return Sandbox(Isolation(config.isolation), a.limits, prewarm=prewarm, spare=spare,
                   hidden=(a.root,))
