"""Public checks for sdpa_attention.

These are a small sample of what grading runs; passing them does not guarantee full marks.
"""

import math

import torch

from grader.testing import assert_close, fail


def test_matches_formula(student, device):
    """sdpa_attention without a mask computes softmax(q k^T / sqrt(d)) v"""
    q, k, v = (torch.randn(2, 4, 6, 8, device=device) for _ in range(3))
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1) @ v
    assert_close(student.sdpa_attention(q, k, v), expected, what="sdpa_attention output")


def test_calls_torch_sdpa(student, device):
    """sdpa_attention calls torch.nn.functional.scaled_dot_product_attention"""
    q, k, v = (torch.randn(1, 2, 5, 8, device=device) for _ in range(3))
    with student.spy("torch.nn.functional.scaled_dot_product_attention") as calls:
        student.sdpa_attention(q, k, v)
    if calls.count < 1:
        fail("sdpa_attention did not call torch.nn.functional.scaled_dot_product_attention.")
