"""Public checks for scaled_dot_product_attention and MultiHeadSelfAttention.

These are a small sample of what grading runs; passing them does not guarantee full marks.
"""

import math

import torch

from grader.testing import assert_close, expect_raise


def test_function_matches_formula(student, device):
    """scaled_dot_product_attention computes softmax(q k^T / sqrt(d)) v"""
    q, k, v = (torch.randn(2, 4, 6, 8, device=device) for _ in range(3))
    output, weights = student.scaled_dot_product_attention(q, k, v)
    expected_weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1)
    assert_close(weights, expected_weights, what="weights")
    assert_close(output, expected_weights @ v, what="output")


def test_module_weights_are_a_softmax(student, device, support):
    """MultiHeadSelfAttention's weights are a softmax over the keys: each row sums to 1"""
    module = support.module(student, device, 32, 4)
    _, weights = support.forward(module, torch.randn(2, 5, 32, device=device))
    assert_close(weights.sum(-1), torch.ones(2, 4, 5, device=device), what="row sums of the weights",
                 hint="the softmax must run over the keys (dim=-1).")


def test_rejects_indivisible_sizes(student):
    """embed_dim not divisible by num_heads raises ValueError"""
    expect_raise(ValueError, "MultiHeadSelfAttention(30, 4)", student.MultiHeadSelfAttention, 30, 4,
                 dropout_p=0.0)


def test_rejects_float_mask(student, device, support):
    """a float attention_mask raises TypeError"""
    module = support.module(student, device, 32, 4, eval=False)
    x, mask = torch.randn(2, 5, 32, device=device), torch.ones(2, 5, device=device)
    expect_raise(TypeError, "forward with a float32 attention_mask", module, x, attention_mask=mask)
