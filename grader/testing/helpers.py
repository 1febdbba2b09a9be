"""Helpers that any assignment's tests share: seeded inputs, a student's call paired with
the reference's, what the student's code raised, and shape checks, each with one
wording per mistake so that the same bug reads the same in every test.

    from grader.testing import call_both, check_shape, returned_pair, seeded_randn

    def test_matches_reference(student, reference, device):
        q = seeded_randn(2, 4, 8, seed=1, device=device)
        mine, theirs = call_both(student.attend, reference.attend, q)
        out, w = returned_pair(mine, "attend")
        check_shape(w, theirs[1].shape, "attention weights")

What belongs to one lesson (its modules, its masks, its likely bugs) goes in the
assignment's support module instead (`support:` in the YAML, the `support` fixture).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from grader.testing.compare import dtype_name, fail


def seeded_randn(*shape: int, seed: int, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Normal noise of `shape` that depends on `seed` only (drawn on the CPU, then moved),
    so the student's call and the reference's get the same inputs on every device."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=dtype).to(device)


def call_both(student_call: Callable[..., Any], reference_call: Callable[..., Any],
              *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """The student's result and the reference's for the same arguments (the reference's
    without autograd). The student's call runs first: if it raises, that is the verdict."""
    mine = student_call(*args, **kwargs)
    with torch.no_grad():
        theirs = reference_call(*args, **kwargs)
    return mine, theirs


def said(exc: BaseException) -> str:
    """'TypeName: message' for an exception the student's code raised."""
    message = exc.args[0] if exc.args else ""
    return f"{getattr(exc, 'type_name', type(exc).__name__)}: {message}"


def raised_by_student(exc: BaseException) -> bool:
    """Whether the student's code raised `exc`; False for the grader's own failures (the
    child crashed or ran out of time), which a test must let through."""
    from grader.testing.student import StudentRaised

    return isinstance(exc, StudentRaised)


def expect_raise(kind: type[Exception], what: str, call: Callable[..., Any], *args: Any,
                 hint: str = "", **kwargs: Any) -> None:
    """Pass if `call(*args, **kwargs)` raises `kind` in the student's code, else fail
    saying what it did instead."""
    try:
        call(*args, **kwargs)
    except kind:
        return
    except Exception as exc:  # the student's exception, arrived as its builtin type
        if not raised_by_student(exc) or isinstance(exc, NotImplementedError):
            raise  # the grader's failure; or a TODO left, which the report names as such
        fail(f"{what} raised {said(exc)}; expected {kind.__name__}.", hint=hint)
    fail(f"{what} did not raise; expected {kind.__name__}.", hint=hint)


def returned_pair(result: Any, what: str, names: tuple[str, str] = ("output", "weights"),
                  *, tensors: bool = True) -> tuple[Any, Any]:
    """The two values a call must return as a pair; with `tensors`, both must be tensors."""
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        fail(f"{what} must return a pair ({names[0]}, {names[1]}), got {type(result).__name__}.")
    if tensors:
        for name, value in zip(names, result):
            if not isinstance(value, torch.Tensor):
                fail(f"{what}: {name} is a {type(value).__name__}, expected a tensor.")
    return result[0], result[1]


def check_tensor(got: Any, what: str, *, hint: str = "") -> torch.Tensor:
    """`got`, failing unless it is a tensor."""
    if not isinstance(got, torch.Tensor):
        fail(f"{what}: got a {type(got).__name__}, expected a torch.Tensor.", hint=hint)
    return got


def check_shape(got: torch.Tensor, shape: torch.Size | tuple[int, ...] | list[int], what: str, *,
                hint: str = "") -> None:
    """Fail unless `got` has `shape` (the wording `assert_close` uses for a wrong shape)."""
    if tuple(got.shape) != tuple(shape):
        fail(f"{what}: shape is {list(got.shape)}, expected {list(shape)}.", hint=hint)


def check_dtype(got: torch.Tensor, dtype: torch.dtype, what: str, *, hint: str = "") -> None:
    if got.dtype != dtype:
        fail(f"{what}: dtype is {dtype_name(got.dtype)}, expected {dtype_name(dtype)}.", hint=hint)


def worst(values: torch.Tensor) -> float:
    """Largest |value|, NaN counting as infinite; 0 for no values."""
    if values.numel() == 0:
        return 0.0
    return float(values.detach().double().abs().nan_to_num(nan=float("inf")).max())
