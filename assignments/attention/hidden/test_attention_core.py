"""attention_core: the attention itself, without masks or dropout, and argument checks.

Modules are built with dropout_p=0.0 and put in eval(), and no test here passes a valid
mask, so a dropout or mask bug costs nothing in this exercise. Values are compared
without judging dtype or device (that is `shape_reading`'s job).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch.nn import functional as F

from grader.testing import GradingFailure, assert_close, fail

E, H = 32, 4  # head_dim 8
B, T = 2, 6


def _randn(*shape: int, seed: int, device: torch.device) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device)


def _paired(student: Any, reference: Any, device: torch.device) -> tuple[Any, Any]:
    """The student's module and the reference's: eval(), dropout off, the same weights."""
    ref = reference.seeded_module(E, H, seed=0).to(device)
    mine = student.MultiHeadSelfAttention(E, H, dropout_p=0.0)
    mine.to(str(device))
    mine.eval()
    try:
        mapped = reference.weights_for(mine, ref)
    except ValueError as exc:
        fail(str(exc))
    mine.load_state_dict(mapped)
    return mine, ref


def _pair(result: Any, what: str) -> tuple[Any, Any]:
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        fail(f"{what} must return a pair (output, weights), got {type(result).__name__}.")
    return result[0], result[1]


def _matches(got: Any, expected: torch.Tensor) -> bool:
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape or got.is_meta:
        return False
    g, e = got.detach().cpu().double(), expected.detach().cpu().double()
    return torch.allclose(g, e, atol=1e-4, rtol=1e-3)


def _compare(
    got: Any,
    expected: torch.Tensor,
    what: str,
    bugs: Callable[[], dict[str, torch.Tensor]],
    default_hint: str,
) -> None:
    """assert_close, with a hint naming the known bug that reproduces `got`, if any."""
    try:
        assert_close(got, expected, what=what, check_dtype=False, check_device=False)
    except GradingFailure:
        hint = next((h for h, e in bugs().items() if _matches(got, e)), default_hint)
        assert_close(got, expected, what=what, hint=hint, check_dtype=False, check_device=False)


def _score_bugs(q: torch.Tensor, k: torch.Tensor) -> dict[str, torch.Tensor]:
    """Weights that common bugs give for q [..., Tq, D], k [..., Tk, D]."""
    d = q.size(-1)
    s = q @ k.transpose(-2, -1)
    return {
        "no scaling by 1/sqrt(d_k)?": s.softmax(-1),
        "scaled by 1/d_k instead of 1/sqrt(d_k)?": (s / d).softmax(-1),
        "softmax over the wrong axis? It must run over the keys (dim=-1).": (s / math.sqrt(d)).softmax(-2),
        "scores are k @ q^T instead of q @ k^T?": (s.transpose(-2, -1) / math.sqrt(d)).softmax(-1),
    }


def _split(ref: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return F.linear(x, ref.qkv.weight, ref.qkv.bias).split(E, dim=-1)  # each [B, T, E]


def _heads(t: torch.Tensor) -> torch.Tensor:
    return t.view(t.size(0), t.size(1), H, E // H).transpose(1, 2)


def _weight_bugs(ref: Any, x: torch.Tensor) -> dict[str, torch.Tensor]:
    q, k, _ = _split(ref, x)
    bugs = _score_bugs(_heads(q), _heads(k))
    s = _heads(q) @ _heads(k).transpose(-2, -1)
    bugs["scaled by 1/sqrt(embed_dim) instead of 1/sqrt(head_dim)?"] = (s / math.sqrt(E)).softmax(-1)
    mixed = [t.reshape(x.size(0), H, x.size(1), E // H) for t in (q, k)]
    bugs[
        "heads mixed: reshape to [B, T, H, D] then transpose(1, 2), not view to [B, H, T, D] directly?"
    ] = (mixed[0] @ mixed[1].transpose(-2, -1) / math.sqrt(E // H)).softmax(-1)
    per_head = F.linear(x, ref.qkv.weight, ref.qkv.bias).view(x.size(0), x.size(1), H, 3, E // H)
    qi, ki = per_head[..., 0, :].transpose(1, 2), per_head[..., 1, :].transpose(1, 2)
    bugs[
        "qkv output split per head? Its 3*E outputs are [q | k | v] (view to [B, T, 3, H, D])."
    ] = (qi @ ki.transpose(-2, -1) / math.sqrt(E // H)).softmax(-1)
    return bugs


def _output_bugs(ref: Any, x: torch.Tensor) -> dict[str, torch.Tensor]:
    q, k, v = _split(ref, x)
    w = (_heads(q) @ _heads(k).transpose(-2, -1) / math.sqrt(E // H)).softmax(-1)
    context = w @ _heads(v)  # [B, H, T, D]
    merged = context.transpose(1, 2).reshape(x.shape)
    return {
        "out_proj not applied after merging the heads?": merged,
        "heads merged wrongly: transpose(1, 2) back to [B, T, H, D] before reshaping to [B, T, E]?": ref.out_proj(
            context.reshape(x.shape)
        ),
    }


def _said(exc: BaseException) -> str:
    """'TypeName: message' for an exception the student's code raised."""
    message = exc.args[0] if exc.args else ""
    return f"{getattr(exc, 'type_name', type(exc).__name__)}: {message}"


def _raised_by_student(exc: BaseException) -> bool:
    """False for the grader's own failures (a crash or timeout of the child)."""
    try:
        from grader.testing.student import StudentRaised
    except ImportError:  # no sandbox: everything comes from the submission
        return True
    return isinstance(exc, StudentRaised)


def _expect_raise(kind: type[Exception], what: str, hint: str, call: Callable[..., Any],
                  *args: Any, **kwargs: Any) -> None:
    """Pass if `call(*args, **kwargs)` raises `kind` in the student's code, else fail."""
    try:
        call(*args, **kwargs)
    except kind:
        return
    except Exception as exc:  # the student's exception, arrived as its builtin type
        if not _raised_by_student(exc):
            raise
        fail(f"{what} raised {_said(exc)}; expected {kind.__name__}.", hint=hint)
    fail(f"{what} did not raise; expected {kind.__name__}.", hint=hint)


def test_function_matches_reference(student, reference, device):
    """scaled_dot_product_attention matches the reference"""
    q = _randn(B, H, 4, 8, seed=1, device=device)
    k = _randn(B, H, 6, 8, seed=2, device=device)
    v = _randn(B, H, 6, 5, seed=3, device=device)
    out, w = _pair(student.scaled_dot_product_attention(q, k, v), "scaled_dot_product_attention")
    r_out, r_w = reference.scaled_dot_product_attention(q, k, v)
    _compare(w, r_w, "attention weights", lambda: _score_bugs(q, k),
             "weights must be softmax(q @ k^T / sqrt(d_k)) over the last axis.")
    _compare(out, r_out, "output", dict, "the output must be weights @ v.")


def test_function_any_leading_dims(student, reference, device):
    """scaled_dot_product_attention works for inputs with one leading dim ([B, T, D])"""
    q = _randn(3, 5, 8, seed=4, device=device)
    k = _randn(3, 7, 8, seed=5, device=device)
    v = _randn(3, 7, 8, seed=6, device=device)
    out, w = _pair(student.scaled_dot_product_attention(q, k, v), "scaled_dot_product_attention")
    r_out, r_w = reference.scaled_dot_product_attention(q, k, v)
    hint = "q, k, v are [..., T, D]: transpose k with k.transpose(-2, -1), not with fixed dims like (2, 3)."
    _compare(w, r_w, "attention weights", lambda: _score_bugs(q, k), hint)
    _compare(out, r_out, "output", dict, hint)


def test_module_weights_match_reference(student, reference, device):
    """MultiHeadSelfAttention's weights match the reference (eval, no mask, same parameters)"""
    mine, ref = _paired(student, reference, device)
    x = _randn(B, T, E, seed=7, device=device)
    _, w = _pair(mine(x), "forward")
    with torch.no_grad():
        _, r_w = ref(x)
        _compare(w, r_w, "attention weights [B, H, T, T]", lambda: _weight_bugs(ref, x),
                 "weights must be softmax(q @ k^T / sqrt(head_dim)) per head, q, k, v from the projections.")


def test_module_output_matches_reference(student, reference, device):
    """MultiHeadSelfAttention's output matches the reference (eval, no mask, same parameters)"""
    mine, ref = _paired(student, reference, device)
    x = _randn(B, T, E, seed=8, device=device)
    out, _ = _pair(mine(x), "forward")
    with torch.no_grad():
        r_out, _ = ref(x)
        _compare(out, r_out, "output [B, T, E]", lambda: _output_bugs(ref, x),
                 "output = out_proj(heads of weights @ v merged back to [B, T, E]);"
                 " if the weights test fails too, fix the weights first.")


def test_rejects_non_positive_sizes(student):
    """embed_dim or num_heads that is not positive raises ValueError"""
    for e, h in [(0, 4), (-8, 2), (32, 0), (32, -4)]:
        _expect_raise(ValueError, f"MultiHeadSelfAttention({e}, {h})",
                      "check embed_dim > 0 and num_heads > 0 in __init__ and raise ValueError.",
                      student.MultiHeadSelfAttention, e, h, dropout_p=0.0)


def test_rejects_indivisible_sizes(student):
    """embed_dim not divisible by num_heads raises ValueError"""
    for e, h in [(30, 4), (32, 5), (10, 3)]:
        _expect_raise(ValueError, f"MultiHeadSelfAttention({e}, {h})",
                      "check embed_dim % num_heads == 0 in __init__ and raise ValueError.",
                      student.MultiHeadSelfAttention, e, h, dropout_p=0.0)


def test_rejects_input_not_3d(student, device):
    """x that is not 3-D ([batch, seq_len, embed_dim]) raises ValueError"""
    mine = student.MultiHeadSelfAttention(E, H, dropout_p=0.0)
    mine.to(str(device))
    mine.eval()
    for shape in [(T, E), (1, B, T, E)]:
        x = _randn(*shape, seed=9, device=device)
        _expect_raise(ValueError, f"forward(x of shape {list(shape)})",
                      "check x.dim() == 3 at the start of forward and raise ValueError.", mine, x)


def test_rejects_mask_of_wrong_shape(student, device):
    """an attention_mask whose shape cannot be used raises ValueError"""
    mine = student.MultiHeadSelfAttention(E, H, dropout_p=0.0)
    mine.to(str(device))
    mine.eval()
    x = _randn(B, T, E, seed=10, device=device)
    for shape in [(B, T + 2), (B + 1, T)]:
        mask = torch.ones(shape, dtype=torch.bool, device=device)
        _expect_raise(ValueError, f"forward(x of shape {[B, T, E]}, attention_mask of shape {list(shape)})",
                      "check the mask's shape against [batch, seq_len] before using it.",
                      mine, x, attention_mask=mask)


def test_rejects_non_bool_mask(student, device):
    """an attention_mask that is not boolean raises TypeError"""
    mine = student.MultiHeadSelfAttention(E, H, dropout_p=0.0)
    mine.to(str(device))
    mine.eval()
    x = _randn(B, T, E, seed=11, device=device)
    for dtype in (torch.float32, torch.int64):
        mask = torch.ones(B, T, dtype=dtype, device=device)
        _expect_raise(TypeError, f"forward with a {str(dtype).replace('torch.', '')} attention_mask",
                      "check mask.dtype == torch.bool and raise TypeError; don't convert it silently.",
                      mine, x, attention_mask=mask)
