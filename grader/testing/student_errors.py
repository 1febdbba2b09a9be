"""What a student's code did to a test, as exceptions the test sees (not wrong values).

    StudentProblem
    ├── StudentRaised     the student's code raised (also the builtin type it derives from)
    ├── StudentCrashed    the child died, exited, or sent garbage
    ├── StudentTimeout    a time limit was reached
    └── MissingName       the submission does not define a name a test uses
"""

from __future__ import annotations

import builtins

from grader.errors import SubmissionError
from grader.sandbox import protocol


class StudentProblem(SubmissionError):
    """Base of what a student's code did to a test (as opposed to a wrong value)."""


class StudentRaised(StudentProblem):
    """The student's code raised; for builtin types the instance is also one of them."""

    type_name: str = "Exception"
    student_traceback: str = ""

    def __str__(self) -> str:
        return f"{self.type_name}: {self.args[0] if self.args else ''}"


class StudentCrashed(StudentProblem):
    """The child died, exited, or sent garbage."""


class StudentTimeout(StudentProblem):
    """A time limit was reached."""


class MissingName(StudentProblem):
    """The submission does not define a name a test uses."""


_RAISED_CLASSES: dict[str, type[StudentRaised]] = {}
_NOT_MIXED = {"BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit",
              "AssertionError", "StopIteration", "StopAsyncIteration"}


def raised_class(builtin_name: str | None) -> type[StudentRaised]:
    """A StudentRaised subclass that is also the named builtin exception type.

    Built from the builtin's *name* only: nothing the child sends is ever executed or
    unpickled. AssertionError is never mixed in, so a student's assert cannot pass for
    a test's verdict.
    """
    name = builtin_name if builtin_name and builtin_name not in _NOT_MIXED else None
    base = getattr(builtins, name, None) if name else None
    if name is None or not (isinstance(base, type) and issubclass(base, Exception)):
        return StudentRaised
    if name not in _RAISED_CLASSES:
        _RAISED_CLASSES[name] = type(f"Student{name}", (StudentRaised, base), {})
    return _RAISED_CLASSES[name]


def make_raised(info: protocol.ErrorReport) -> StudentRaised:
    exc = raised_class(info.builtin)(info.message)
    exc.type_name = info.type[:100]
    exc.student_traceback = info.traceback
    return exc


__all__ = ["MissingName", "StudentCrashed", "StudentProblem", "StudentRaised", "StudentTimeout",
           "make_raised", "raised_class"]
