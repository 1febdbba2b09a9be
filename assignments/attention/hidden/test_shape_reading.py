"""shape_reading (code part): shapes of the demo configuration; device and dtype follow x.

Modules run in eval() with dropout_p=0.0 and are never compared with the reference:
only shapes, dtypes and devices are judged. Device bugs are found without a GPU by
running on the `meta` device, where mixing in a tensor created on the CPU raises. Only
such a device error counts against the submission; a correct submission that looks at
tensor values (e.g. `if not mask.any(): raise`) cannot run on `meta`, and that is
not counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

from grader.testing import (
    check_dtype,
    fail,
    raised_by_student,
    returned_pair,
    said,
    seeded_randn,
)

DEVICE_MISMATCH = re.compile(
    r"same device|expected device|different device|device mismatch|devices? (do|does) not match",
    re.IGNORECASE,
)
DEVICE_HINT = "a tensor was created on the CPU: pass device=x.device when creating tensors in forward."


def _device_probe(what: str, feedback: Any, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run `call`; fail on a device mismatch, note anything else raised and return None."""
    try:
        return call(*args, **kwargs)
    except Exception as exc:
        if not raised_by_student(exc):
            raise
        if DEVICE_MISMATCH.search(said(exc)):
            fail(f"{what} raised {said(exc)}", hint=DEVICE_HINT)
        feedback.note(f"{what} raised {said(exc)}. Not counted here: only device errors are.")
        return None


def _check_devices(result: Any, expected: str, what: str) -> None:
    out, w = returned_pair(result, "forward")
    for name, value in (("output", out), ("weights", w)):
        if value.device.type != torch.device(expected).type:
            fail(f"{what}: {name} is on {value.device.type}, expected {torch.device(expected).type}"
                 " (the input's device).", hint=DEVICE_HINT)


def test_demo_shapes(student, device, support):
    """output and weights shapes for the demo configuration (batch=2, seq_len=5, embed_dim=64, num_heads=4)"""
    module = support.module(student, device, 64, 4)
    out, w = support.forward(module, seeded_randn(2, 5, 64, seed=1, device=device))
    if tuple(out.shape) != (2, 5, 64):
        fail(f"output shape is {list(out.shape)}, expected [2, 5, 64] ([batch, seq_len, embed_dim]).",
             hint="merge the heads back: transpose(1, 2) then reshape to [B, T, E], then out_proj.")
    if tuple(w.shape) != (2, 4, 5, 5):
        hint = "return the weights per head: [batch, num_heads, seq_len, seq_len]."
        if tuple(w.shape) == (2, 5, 5):
            hint = "the weights are averaged over heads? Return them per head: [B, H, T, T]."
        fail(f"weights shape is {list(w.shape)}, expected [2, 4, 5, 5].", hint=hint)


def test_float32_stays_float32(student, device, support):
    """float32 input gives float32 output and weights"""
    module = support.module(student, device, 32, 4)
    out, w = support.forward(module, seeded_randn(2, 6, 32, seed=2, device=device))
    for name, value in (("output", out), ("weights", w)):
        check_dtype(value, torch.float32, name,
                    hint="tensors created in forward must follow x.dtype (no float64 constants or .double()).")


def test_float64_follows_input(student, device, support):
    """float64 input gives float64 output and weights"""
    module = support.module(student, device, 32, 4)
    module.double()
    x = seeded_randn(2, 6, 32, seed=3, device=device, dtype=torch.float64)
    try:
        result = module(x)
    except Exception as exc:
        if not raised_by_student(exc):
            raise
        fail(f"with a float64 module and input, forward raised {said(exc)}",
             hint="a tensor created with a fixed dtype in forward? Use dtype=x.dtype.")
    out, w = returned_pair(result, "forward")
    for name, value in (("output", out), ("weights", w)):
        check_dtype(value, torch.float64, f"with a float64 module and input, {name}",
                    hint="a tensor created with a fixed dtype, or .float(), in forward? Use x.dtype.")


def test_device_follows_input(student, device, feedback, support):
    """output and weights are on the input's device, also with a padding mask and causal=True"""
    module = support.module(student, device, 32, 4)
    x = seeded_randn(2, 5, 32, seed=4, device=device)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool, device=device)
    for kwargs, what in (({}, "forward(x)"),
                         ({"attention_mask": mask, "causal": True}, "forward(x, attention_mask, causal=True)")):
        result = _device_probe(f"on {device.type}, {what}", feedback, module, x, **kwargs)
        if result is not None:
            _check_devices(result, str(device), f"on {device.type}, {what}")


def test_meta_device(student, feedback, support):
    """on the meta device, nothing in forward is created on the CPU (masks and causal=True included)"""
    module = support.module(student, "cpu", 32, 4)
    if _device_probe("module.to('meta')", feedback, module.to, "meta") is None:
        return
    x = torch.empty(2, 5, 32, device="meta")
    mask = torch.empty(2, 5, dtype=torch.bool, device="meta")
    for kwargs, what in (({}, "forward(x)"),
                         ({"attention_mask": mask}, "forward(x, attention_mask)"),
                         ({"causal": True}, "forward(x, causal=True)"),
                         ({"attention_mask": mask, "causal": True}, "forward(x, attention_mask, causal=True)")):
        result = _device_probe(f"on meta, {what}", feedback, module, x, **kwargs)
        if result is not None:
            _check_devices(result, "meta", f"on meta, {what}")
