"""Comparisons that explain themselves: a verdict (`GradingFailure`) with a message a
student can act on and numbers the report can show.

Comparison order follows PrairieLearn's `code_feedback`: present, type, shape, dtype,
device, values; each message names the variable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import torch

from grader.errors import SubmissionError
from grader.results import Evidence, EvidenceKind

KnownBugs = Mapping[str, torch.Tensor] | Callable[[], Mapping[str, torch.Tensor]]
"""What common bugs give instead of the expected value, keyed by the hint naming each
bug: a mapping, or a function building it (only called when the comparison fails)."""


class GradingFailure(SubmissionError, AssertionError):
    """A test's verdict: the student's result is wrong, with why and evidence."""

    def __init__(self, message: str, evidence: Sequence[Evidence] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.evidence = tuple(evidence)


def fail(message: str, *, hint: str = "", evidence: Sequence[Evidence] = ()) -> NoReturn:
    raise GradingFailure(_with_hint(message, hint), evidence)


def _with_hint(message: str, hint: str) -> str:
    return f"{message} {hint}".strip() if hint else message


def assert_close(
    got: Any,
    expected: torch.Tensor,
    *,
    what: str,
    hint: str = "",
    atol: float = 1e-5,
    rtol: float = 1e-4,
    check_dtype: bool = True,
    check_device: bool = True,
    bugs: KnownBugs | None = None,
) -> None:
    """Fail with a plain-words message unless `got` is a tensor close to `expected`.

    With `bugs`, a failure whose `got` is what one of those bugs gives takes that bug's
    hint instead of `hint`.
    """
    if bugs is not None:
        try:
            assert_close(got, expected, what=what, hint=hint, atol=atol, rtol=rtol,
                         check_dtype=check_dtype, check_device=check_device)
            return
        except GradingFailure:
            hint = _named_bug(got, bugs() if callable(bugs) else bugs) or hint
    if got is None:
        fail(f"{what}: got None, expected a tensor of shape {list(expected.shape)}.", hint=hint)
    if not isinstance(got, torch.Tensor):
        fail(f"{what}: got a {type(got).__name__}, expected a torch.Tensor.", hint=hint)
    if tuple(got.shape) != tuple(expected.shape):
        fail(
            f"{what}: shape is {list(got.shape)}, expected {list(expected.shape)}.", hint=hint
        )
    if check_dtype and got.dtype != expected.dtype:
        fail(
            f"{what}: dtype is {dtype_name(got.dtype)}, expected {dtype_name(expected.dtype)}"
            " (tensors a forward pass creates must follow the input's dtype).",
            hint=hint,
        )
    if check_device and got.device.type != expected.device.type:
        fail(
            f"{what}: on device {got.device.type}, expected {expected.device.type}"
            " (create new tensors with device=x.device).",
            hint=hint,
        )
    if got.device.type == "meta" or expected.device.type == "meta":
        return
    g = got.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    g_nan, e_nan = torch.isnan(g), torch.isnan(e)
    if bool((g_nan != e_nan).any()):
        idx = _first_index(g_nan != e_nan)
        fail(
            f"{what}: NaN at {idx} where the expected value is {_fmt(e[idx])}"
            " (a row with every key masked, or -inf minus -inf?).",
            hint=hint,
            evidence=[mismatch_evidence(what, got, expected)],
        )
    ok = torch.isclose(g, e, atol=atol, rtol=rtol, equal_nan=True)
    if bool(ok.all()):
        return
    diff = torch.where(ok, torch.zeros_like(g), (g - e).abs().nan_to_num(posinf=float("inf")))
    idx = _first_index(diff == diff.max())
    bad = int((~ok).sum())
    fail(
        f"{what}: {bad} of {ok.numel()} values differ; max abs error {float(diff.max()):.3g}"
        f" at {list(idx)} (expected {_fmt(e[idx])}, got {_fmt(g[idx])}).",
        hint=hint,
        evidence=[mismatch_evidence(what, got, expected)],
    )


def matches(got: Any, expected: torch.Tensor, *, atol: float = 1e-4, rtol: float = 1e-3) -> bool:
    """Whether `got` is a tensor of `expected`'s shape with close values (loosely: for
    recognising what a known bug gives, not for a verdict)."""
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape or got.is_meta:
        return False
    g, e = got.detach().cpu().double(), expected.detach().cpu().double()
    return torch.allclose(g, e, atol=atol, rtol=rtol)


def _named_bug(got: Any, bugs: Mapping[str, torch.Tensor]) -> str:
    return next((hint for hint, wrong in bugs.items() if matches(got, wrong)), "")


def mismatch_evidence(what: str, got: torch.Tensor, expected: torch.Tensor) -> Evidence:
    """A small slice around the worst difference, for the report."""
    g = got.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    diff = (g - e).abs().nan_to_num(nan=float("inf"))
    idx = _first_index(diff == diff.max()) if diff.numel() else ()
    lead = tuple(idx[:-2]) if len(idx) >= 2 else ()
    e_slice = e[lead] if lead else e
    g_slice = g[lead] if lead else g
    return Evidence(
        kind=EvidenceKind.MISMATCH,
        data={
            "what": what,
            "max_abs_error": float(diff.max()) if diff.numel() else 0.0,
            "index": list(idx),
            "expected": _fmt(e[idx]) if idx else None,
            "got": _fmt(g[idx]) if idx else None,
            "slice_of": list(lead),
            "expected_slice": _small(e_slice),
            "got_slice": _small(g_slice),
        },
    )


def heatmap_panel(
    label: str, matrix: torch.Tensor, masked: torch.Tensor | None = None
) -> dict[str, Any]:
    """One heatmap for `feedback.heatmaps(...)`: a 2-D matrix, masked cells marked."""
    m = matrix.detach().to("cpu", torch.float64)
    return {
        "label": label,
        "matrix": _rounded(m[:16, :16]),
        "masked": None if masked is None else [[bool(v) for v in row] for row in _rows(masked[:16, :16])],
    }


def _rows(t: torch.Tensor) -> list[Any]:
    """A 2-D tensor's elements as Python numbers, row by row (`tolist`: one call, where
    iterating made a tensor per element, about 2 us each)."""
    if t.dim() != 2:
        raise ValueError(f"expected a 2-D tensor, got {t.dim()}-D")
    return list(t.tolist())


def _rounded(t: torch.Tensor, limit: int = 16) -> list[list[float]]:
    """A float64 2-D tensor's first `limit` x `limit` values, to 4 decimals."""
    return [[round(v, 4) for v in row[:limit]] for row in _rows(t[:limit])]


def show_figures(student: Any, feedback: Any, plot: Callable[[], object] | None = None,
                 missing: str = "") -> None:
    """Show the student's own figures under the running test, ungraded.

    First those their code already showed (a notebook's cells); where there are none and
    `plot` is given, `plot()` runs (it calls a `plot_*` function of theirs on their own
    results) and what that draws is shown. Drawing costs no points: what goes wrong is
    noted, not failed, except a time limit. `missing` is noted when there is no figure.
    """
    from grader.testing.student import MissingName, StudentRaised

    batch = student.figures()
    if not batch.figures and plot is not None:
        for why in batch.left_out:  # what the notebook showed but could not be kept
            feedback.note(why)
        try:
            plot()
        except (StudentRaised, MissingName, GradingFailure) as exc:
            feedback.note(f"no figure: {getattr(exc, 'message', None) or exc} (drawing is not graded)")
        batch = student.figures()
    feedback.figures(batch)
    if not batch.figures and missing:
        feedback.note(missing)


def _small(t: torch.Tensor, limit: int = 8) -> Any:
    while t.dim() > 2:
        t = t[0]
    if t.dim() == 2:
        return _rounded(t, limit)
    if t.dim() == 1:
        return [round(v, 4) for v in t[:limit].tolist()]
    return round(float(t), 4)


def _first_index(mask: torch.Tensor) -> tuple[int, ...]:
    nz = mask.nonzero()
    return tuple(int(i) for i in nz[0]) if len(nz) else ()


def _fmt(value: torch.Tensor) -> str:
    return f"{float(value):.4g}"


def dtype_name(dtype: torch.dtype) -> str:
    """`float32` for torch.float32."""
    return str(dtype).replace("torch.", "")
