"""The report data `grader.testing.compare` builds from tensors (heatmaps, mismatch slices)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from grader.testing.compare import heatmap_panel, mismatch_evidence


def _elementwise(t: torch.Tensor, limit: int) -> list[list[float]]:
    """The values as the report had them before `tolist`: one tensor per element."""
    return [[round(float(v), 4) for v in row[:limit]] for row in t[:limit]]


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN included."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return bool(a == b) and type(a) is type(b)


@pytest.mark.parametrize("shape", [(6, 6), (1, 1), (20, 3), (3, 20), (17, 17)])
def test_a_heatmap_holds_the_values_rounded_as_before(shape: tuple[int, int]) -> None:
    torch.manual_seed(0)
    m = torch.randn(shape, dtype=torch.float32) * 3
    m.view(-1)[0] = float("nan")
    m.view(-1)[-1] = float("-inf")
    masked = (torch.rand(shape) > 0.5).to(torch.int64)  # not bool: truth values, as before
    panel = heatmap_panel("w", m, masked)
    expected = _elementwise(m.detach().to("cpu", torch.float64), 16)
    assert _same(panel["matrix"], expected)
    assert panel["masked"] == [[bool(v) for v in row] for row in masked[:16, :16]]
    assert heatmap_panel("w", m)["masked"] is None


def test_a_mismatch_slice_holds_the_values_rounded_as_before() -> None:
    torch.manual_seed(1)
    expected = torch.randn(2, 3, 10, 12)
    got = expected.clone()
    got[1, 2, 4, 5] += 1
    data = mismatch_evidence("w", got, expected).data
    assert data["index"] == [1, 2, 4, 5]
    assert _same(data["got_slice"], _elementwise(got[1, 2].double(), 8))
    assert _same(data["expected_slice"], _elementwise(expected[1, 2].double(), 8))
    one = mismatch_evidence("v", torch.tensor([1.0, 2.0, 3.5]), torch.tensor([1.0, 2.0, 3.0])).data
    assert one["got_slice"] == [1.0, 2.0, 3.5]


def test_a_heatmap_of_a_tensor_that_is_not_2d_is_refused() -> None:
    with pytest.raises((ValueError, IndexError)):
        heatmap_panel("w", torch.zeros(2, 3, 4))
