"""dropout: train() is stochastic, eval() is not, and the returned weights are dropped.

Judged only by properties every correct implementation has, never against the
reference. "Without dropout" means the submission's own module built with dropout_p=0
and loaded with the same state_dict, so a bug elsewhere changes nothing here:
- with p > 0, two train() calls differ;
- eval() repeats itself exactly and equals the module without dropout (its rows sum to
  1 unless the softmax itself is wrong, which is `attention_core`'s to judge);
- in train() each weight is 0 or its value without dropout / (1 - p), and the fraction
  kept is 1 - p within 6 standard deviations of the binomial (a correct submission
  fails that about once in 500 million runs).
No mask is used, so no weight is 0 before dropout. The child is seeded: a run repeats.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from grader.testing import fail, seeded_randn

E, H = 32, 4


def _module(student: Any, device: torch.device, p: float, support: Any) -> Any:
    student.seed(0)
    return support.module(student, device, E, H, p, eval=False)


def _without_dropout(student: Any, device: torch.device, module: Any, support: Any) -> Any:
    """The student's module with dropout_p=0 and `module`'s parameters, in eval()."""
    plain = support.module(student, device, E, H)
    plain.load_state_dict(module.state_dict())
    return plain


def test_train_is_stochastic(student, device, support):
    """in train() with dropout_p=0.5, two calls on the same input differ"""
    module = _module(student, device, 0.5, support)
    module.train()
    x = seeded_randn(2, 8, E, seed=1, device=device)
    out1, w1 = support.forward(module, x)
    out2, w2 = support.forward(module, x)
    if torch.equal(out1, out2) and torch.equal(w1, w2):
        fail("two train() calls gave the same output and weights:",
             hint="is dropout applied? Use nn.Dropout(dropout_p) on the attention weights.")


def test_eval_is_deterministic(student, device, support):
    """eval() turns dropout off: the same result twice, equal to dropout_p=0, rows summing to 1"""
    module = _module(student, device, 0.5, support)
    module.eval()
    x = seeded_randn(2, 8, E, seed=2, device=device)
    out1, w1 = support.forward(module, x)
    out2, w2 = support.forward(module, x)
    hint = "dropout still active in eval()? Use nn.Dropout, or F.dropout(..., training=self.training)."
    if not (torch.equal(out1, out2) and torch.equal(w1, w2)):
        fail("two eval() calls on the same input gave different results:", hint=hint)
    no_dropout = _without_dropout(student, device, module, support)
    _, w0 = support.forward(no_dropout, x)
    if w0.shape != w1.shape or not torch.allclose(w1.double(), w0.double(), rtol=1e-5, atol=1e-7):
        fail("in eval() the weights with dropout_p=0.5 differ from those with dropout_p=0"
             " (same parameters):", hint=hint)
    off = (w1.double().sum(-1) - 1).abs().nan_to_num(nan=float("inf"))
    off0 = (w0.double().sum(-1) - 1).abs().nan_to_num(nan=float("inf"))
    if float(off.max()) > 1e-5 and float(off0.max()) <= 1e-5:  # else the softmax itself is off
        fail(f"in eval() a row of weights sums to {1 + float(off.max()):.4g}, expected 1:", hint=hint)


def _kept_scale(w_train: torch.Tensor, w_eval: torch.Tensor) -> float | None:
    """The one factor all kept weights were multiplied by, if there is one."""
    kept = (w_train != 0) & (w_eval > 1e-6)
    if not bool(kept.any()):
        return None
    ratio = w_train[kept] / w_eval[kept]
    scale = float(ratio.median())
    return scale if bool(torch.allclose(ratio, torch.full_like(ratio, scale), rtol=1e-4)) else None


def test_train_weights_are_dropped_and_rescaled(student, device, support):
    """in train(), each weight is 0 or its value without dropout / (1 - p), with about a fraction p dropped"""
    p = 0.25
    module = _module(student, device, p, support)
    x = seeded_randn(4, 16, E, seed=3, device=device)
    undropped = _without_dropout(student, device, module, support)
    _, w_eval = support.forward(undropped, x)
    module.train()
    _, w_train = support.forward(module, x)
    if w_train.shape != w_eval.shape:
        fail(f"weights are {list(w_train.shape)} in train() but {list(w_eval.shape)} in eval().")
    w_eval, w_train = w_eval.detach().cpu().double(), w_train.detach().cpu().double()
    usable = w_eval > 1e-6  # softmax weights that are 0 before dropout tell nothing
    kept = usable & torch.isclose(w_train, w_eval / (1 - p), rtol=1e-4, atol=1e-9)
    dropped = usable & (w_train == 0)
    other = usable & ~kept & ~dropped
    if bool(other.any()):
        i = tuple(int(v) for v in other.nonzero()[0])
        seen = (f"weight {list(i)} is {float(w_train[i]):.4g} in train(), {float(w_eval[i]):.4g}"
                " without dropout:")
        scale = _kept_scale(w_train, w_eval)
        if scale is not None and abs(scale - 1) < 1e-4 and not bool((w_train[usable] == 0).any()):
            fail(seen + " the weights returned in train() are not dropped.",
                 hint="apply dropout to the attention weights (not the output) and return them after dropout.")
        if scale is not None and abs(scale - 1) < 1e-4:
            fail(seen + " kept weights are not divided by (1 - p).",
                 hint="nn.Dropout rescales the kept values for you; don't undo it.")
        if scale is not None:
            fail(seen + f" kept weights are multiplied by {scale:.4g}, expected 1 / (1 - {p}) = {1 / (1 - p):.4g}.",
                 hint=f"that is dropout with p = {1 - 1 / scale:.3g}: is dropout_p passed on to nn.Dropout?")
        fail(seen + f" expected 0 or that weight / (1 - p) = {float(w_eval[i]) / (1 - p):.4g}.",
             hint="apply dropout to the softmax weights (after the softmax, not to the scores).")
    n = int(usable.sum())
    kept_fraction = int(kept.sum()) / n
    tolerance = 6 * math.sqrt(p * (1 - p) / n)
    if abs(kept_fraction - (1 - p)) > tolerance:
        fail(f"with dropout_p={p}, {1 - kept_fraction:.3f} of {n} weights were dropped, expected"
             f" {p} +- {tolerance:.3f}:", hint="is dropout_p passed on to nn.Dropout (no fixed rate)?")
