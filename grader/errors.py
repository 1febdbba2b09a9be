"""Every exception the grader raises on purpose: one tree, rooted at GraderError.

    GraderError
    ├── AssignmentError          the assignment is broken: the instructor must fix it
    │   └── AssignmentSchemaError    a key of the YAML is missing or has the wrong type
    ├── UsageError               the command line asks for something impossible
    │   ├── NoSubmissionsFound
    │   └── SandboxUnavailable
    ├── OutputError              the reports cannot be written (disk full, permissions)
    ├── EnvironmentMissing       a package the assignment declares is not installed here
    ├── SubmissionError          the student's work is at fault: a value in the result
    │   ├── UnreadableSubmission     a file cannot be read (a link, too large, not text)
    │   ├── StudentProblem           what student code did to a test (testing.student_errors)
    │   ├── GradingFailure           a test's verdict, also an AssertionError (testing.compare)
    │   ├── Malformed                an answer that cannot be read as its type (answers.values)
    │   └── NotAnImage               a figure that is not a PNG we may show (figures)
    ├── WireError                a frame that is not what the protocol says (sandbox.protocol);
    │                            whose fault it is, the reader decides: a child's is the student's
    └── InternalError            a bug of ours: never reported as a student's zero
        └── SandboxFailure       a child could not be isolated or run as promised
            └── SandboxLost      the zygote died or its control socket broke

A student's broken submission is *not* an exception here: after isolation, failures
are values (`results.Status.ERROR` with a message). A `SandboxFailure` met while
grading a submission makes the grader retry it once in a fresh sandbox, then mark it
not gradable; it never becomes the student's error.

An error crosses a process boundary (a grading worker's pipe, a Dask task) as
`to_doc(exc)` and is rebuilt, of the same class, by `from_doc`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


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


class OutputError(GraderError):
    """A report file cannot be written: what was already written stays valid."""

    @classmethod
    def writing(cls, path: Path, exc: OSError) -> "OutputError":
        why = exc.strerror or str(exc) or type(exc).__name__
        return cls(f"cannot write {path}: {why}; free some space (or fix the permissions) "
                   "and run the same command again: results already written are kept")


class SubmissionError(GraderError):
    """The student's work is at fault. Never an exit code or a crash: it becomes the
    result's `error` status with this message, which says what to fix."""


class UnreadableSubmission(SubmissionError):
    """A file of the submission cannot be used; the message says how to fix it."""


class WireError(GraderError):
    """A frame or value that is not plain data of the agreed shape."""


class EnvironmentMissing(GraderError):
    """The assignment's declared environment is not installed where grader runs: grading
    would charge students for our missing package, so nothing is graded."""

    @classmethod
    def of(cls, assignment_path: Path, problems: list[str]) -> "EnvironmentMissing":
        return cls(f"the environment {assignment_path} declares is not installed here "
                   f"({'; '.join(problems)}); install it with: grader environment "
                   f"{assignment_path} --requirements > req.txt && pip install -r req.txt")


class InternalError(GraderError):
    """A bug in the grader itself."""


class SandboxFailure(InternalError):
    """A child could not be isolated or run as promised; never the student's fault."""


class SandboxLost(SandboxFailure):
    """The sandbox's zygote is gone (killed, crashed) or its control socket broke: it
    can fork no more children until it is restarted."""


def stops_the_batch(exc: GraderError) -> bool:
    """Errors every submission would meet again (a broken assignment, an impossible
    request): the batch stops with them instead of marking each result not gradable."""
    return isinstance(exc, (AssignmentError, UsageError))


def one_line(text: str) -> str:
    """A message on one line (YAML and Python errors span several)."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def to_doc(exc: BaseException) -> dict[str, str]:
    """An error as plain data, to cross a process boundary: its class name, if it is one
    of ours (else InternalError, naming the original type), and its message."""
    if isinstance(exc, GraderError):
        return {"class": type(exc).__name__, "message": str(exc)}
    return {"class": InternalError.__name__, "message": f"{type(exc).__name__}: {exc}"}


def from_doc(doc: Any) -> GraderError:
    """The error `to_doc` described, of the same class (InternalError for a class that
    is not ours: nothing the other side sends picks arbitrary code)."""
    if not isinstance(doc, dict):
        return InternalError(f"malformed error report: {str(doc)[:200]}")
    cls = _classes_by_name().get(str(doc.get("class", "")), InternalError)
    exc = cls.__new__(cls)
    Exception.__init__(exc, str(doc.get("message", "")))
    return exc


def _classes_by_name() -> dict[str, type[GraderError]]:
    found: dict[str, type[GraderError]] = {}
    todo: list[type[GraderError]] = [GraderError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return found
