"""Every exception the grader raises on purpose, in three roots the CLI tells apart.

    GraderError
    ├── AssignmentError          the assignment is broken: the instructor must fix it
    │   └── AssignmentSchemaError    a key of the YAML is missing or has the wrong type
    ├── UsageError               the command line asks for something impossible
    │   ├── NoSubmissionsFound
    │   └── SandboxUnavailable
    └── InternalError            a bug of ours: never reported as a student's zero
        └── SandboxFailure       a child could not be isolated as promised

A student's broken submission is *not* an exception here: after isolation, failures
are values (`results.Status.ERROR` with a message).
"""

from __future__ import annotations

from pathlib import Path


class GraderError(Exception):
    """Base of every error the grader raises on purpose."""


class AssignmentError(GraderError):
    """The assignment (YAML, tests, reference, key) is broken."""


class AssignmentSchemaError(AssignmentError):
    def __init__(self, file: Path, key: str, expected: str) -> None:
        self.file, self.key, self.expected = file, key, expected
        where = key or "(top level)"
        super().__init__(f"{file}: at `{where}`: {expected}")


class UsageError(GraderError):
    """The command line asks for something that cannot be done."""


class NoSubmissionsFound(UsageError):
    @classmethod
    def in_folder(cls, folder: Path) -> "NoSubmissionsFound":
        return cls(
            f"no submissions in {folder}: expected folders with attention.py or "
            "attention.ipynb, or single .py/.ipynb files"
        )


class SandboxUnavailable(UsageError):
    @classmethod
    def bwrap_missing(cls) -> "SandboxUnavailable":
        return cls(
            "--sandbox bwrap was asked for, but bubblewrap does not work here "
            "(install the `bubblewrap` package, or allow unprivileged user namespaces); "
            "use --sandbox auto to fall back to plain processes"
        )


class InternalError(GraderError):
    """A bug in the grader itself."""


class SandboxFailure(InternalError):
    """A child did not get the isolation it was promised; the submission is ungradable."""
