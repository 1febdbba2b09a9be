"""What a grading process builds from its `RunConfig` before the first submission: the
assignment as it grades (its exercises, its limits) and a sandbox for it.

No torch here (`grader check` starts the sandbox's zygote first, which imports torch
while the check does the same; the batch parent never imports it), so the grading
pipeline is not imported either. What the parent needs of it is here too: how often a
grading the sandbox failed is tried (`ATTEMPTS`), and the result of one that could not
be graded (`ungradable`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from grader import assignment as assignment_mod
from grader.assignment import Assignment
from grader.config import RunConfig
from grader.errors import UsageError
from grader.intake.discover import Submission
from grader.results import ExerciseResult, LoadReport, Outcome, Status, SubmissionResult, TestResult
from grader.sandbox.host import Isolation, Sandbox
from grader.sandbox.inside import plotting
from grader.sandbox.launch import gpu_device_nodes

ATTEMPTS = 2
"""A grading the sandbox failed is done again once, in a fresh sandbox (`pipeline.Grading`)."""


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
    warm = plotting.warm_imports(a.environment.names()) if prewarm and a.environment else ()
    return Sandbox(Isolation(config.isolation), a.limits, prewarm=prewarm, spare=spare,
                   hidden=(a.root,), warm_imports=warm)


def ungradable(sub: Submission, assignment: Assignment, why: str) -> SubmissionResult:
    """A result saying the *grader* failed on this submission: not a zero for the student."""
    message = f"the grader failed on this submission ({why}); it is not your fault, ask your instructor"
    exercises = tuple(
        ExerciseResult(id=ex.id, title=ex.title, score=0.0, max_score=ex.max_score,
                       status=Status.ERROR, message=message,
                       tests=(TestResult(name="grading", score=0.0, max_score=ex.max_score,
                                         passed=False, message=message, outcome=Outcome.ERROR),))
        for ex in assignment.exercises
    )
    return SubmissionResult(student=sub.id, assignment=assignment.id, score=0.0,
                            max_score=assignment.max_score, exercises=exercises,
                            load=LoadReport(kind="none", notices=(message,)), gradable=False)


def resolve_device(choice: str) -> str:
    """The device a run grades on (`--device cpu|cuda|auto`). torch is imported here
    (2 s of CPU, in the process that hands out the work) only where a GPU may be found."""
    if choice == "cpu":
        return choice
    if not _gpu_device_node():
        if choice == "cuda":
            raise UsageError("--device cuda was asked for, but this machine shows no GPU device (/dev/nvidia*)")
        return "cpu"
    import torch

    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise UsageError("--device cuda was asked for, but torch sees no CUDA device here")
    return choice


def _gpu_device_node() -> bool:
    """Whether a GPU's device node exists (NVIDIA, ROCm, WSL): without one, torch cannot
    see CUDA either. Elsewhere than Linux, only torch can say."""
    if not sys.platform.startswith("linux"):
        return True
    return bool(gpu_device_nodes()) or any(os.path.exists(p) for p in ("/dev/kfd", "/dev/dxg"))
