"""Public checks for Exercise 1: shapes, dtype and device follow the input.

These are a small sample of what grading runs; passing them does not guarantee full marks.
"""

import torch

from grader.testing import fail


def test_output_and_weights_shapes(student, device, support):
    """output has x's shape and weights are [batch, num_heads, seq_len, seq_len]"""
    batch, seq_len, embed_dim, num_heads = 3, 7, 32, 2
    module = support.module(student, device, embed_dim, num_heads)
    output, weights = support.forward(module, torch.randn(batch, seq_len, embed_dim, device=device))
    if list(output.shape) != [batch, seq_len, embed_dim]:
        fail(f"output shape is {list(output.shape)}, expected {[batch, seq_len, embed_dim]}.")
    if list(weights.shape) != [batch, num_heads, seq_len, seq_len]:
        fail(f"weights shape is {list(weights.shape)}, expected {[batch, num_heads, seq_len, seq_len]}.")


def test_float64_follows_input(student, device, support):
    """float64 input gives float64 output and weights"""
    module = support.module(student, device, 32, 4)
    module.double()
    output, weights = support.forward(module, torch.randn(2, 5, 32, dtype=torch.float64, device=device))
    if output.dtype != torch.float64 or weights.dtype != torch.float64:
        fail(f"got output {output.dtype} and weights {weights.dtype}, expected torch.float64 for both.",
             hint="tensors created in forward must use x.dtype and x.device.")
