"""Public checks for dropout in train() and eval().

These are a small sample of what grading runs; passing them does not guarantee full marks.
"""

import torch

from grader.testing import fail


def test_train_is_stochastic(student, device, support):
    """in train() with dropout_p=0.5, two calls on the same input differ"""
    module = support.module(student, device, 32, 4, 0.5, eval=False)
    module.train()
    x = torch.randn(2, 8, 32, device=device)
    _, first = support.forward(module, x)
    _, second = support.forward(module, x)
    if torch.equal(first, second):
        fail("two train() calls gave the same weights.", hint="apply dropout to the attention weights.")


def test_eval_is_deterministic(student, device, support):
    """eval() gives the same result twice"""
    module = support.module(student, device, 32, 4, 0.5)
    x = torch.randn(2, 8, 32, device=device)
    out1, w1 = support.forward(module, x)
    out2, w2 = support.forward(module, x)
    if not (torch.equal(out1, out2) and torch.equal(w1, w2)):
        fail("two eval() calls gave different results.", hint="dropout must be off in eval().")
