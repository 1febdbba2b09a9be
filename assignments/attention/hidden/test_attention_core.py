"""attention_core: the attention itself, without masks or dropout, and argument checks.

Modules are built with dropout_p=0.0 and put in eval(), and no test here passes a valid
mask, so a dropout or mask bug costs nothing in this exercise. Values are compared
without judging dtype or device (that is `shape_reading`'s job).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.nn import functional as F

from grader.testing import (
    assert_close,
    call_both,
    dtype_name,
    expect_raise,
    returned_pair,
    seeded_randn,
)

E, H = 32, 4  # head_dim 8
B, T = 2, 6


def _compare(got: Any, expected: torch.Tensor, what: str, bugs: Any, default_hint: str) -> None:
    """Values only (dtype and device are `shape_reading`'s), naming a known bug if one fits."""
    assert_close(got, expected, what=what, hint=default_hint, bugs=bugs, check_dtype=False,
                 check_device=False)


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


def test_function_matches_reference(student, reference, device):
    """scaled_dot_product_attention matches the reference"""
    q = seeded_randn(B, H, 4, 8, seed=1, device=device)
    k = seeded_randn(B, H, 6, 8, seed=2, device=device)
    v = seeded_randn(B, H, 6, 5, seed=3, device=device)
    mine, (r_out, r_w) = call_both(student.scaled_dot_product_attention,
                                   reference.scaled_dot_product_attention, q, k, v)
    out, w = returned_pair(mine, "scaled_dot_product_attention", tensors=False)
    _compare(w, r_w, "attention weights", lambda: _score_bugs(q, k),
             "weights must be softmax(q @ k^T / sqrt(d_k)) over the last axis.")
    _compare(out, r_out, "output", None, "the output must be weights @ v.")


def test_function_any_leading_dims(student, reference, device):
    """scaled_dot_product_attention works for inputs with one leading dim ([B, T, D])"""
    q = seeded_randn(3, 5, 8, seed=4, device=device)
    k = seeded_randn(3, 7, 8, seed=5, device=device)
    v = seeded_randn(3, 7, 8, seed=6, device=device)
    mine, (r_out, r_w) = call_both(student.scaled_dot_product_attention,
                                   reference.scaled_dot_product_attention, q, k, v)
    out, w = returned_pair(mine, "scaled_dot_product_attention", tensors=False)
    hint = "q, k, v are [..., T, D]: transpose k with k.transpose(-2, -1), not with fixed dims like (2, 3)."
    _compare(w, r_w, "attention weights", lambda: _score_bugs(q, k), hint)
    _compare(out, r_out, "output", None, hint)


def test_module_weights_match_reference(student, reference, device, support):
    """MultiHeadSelfAttention's weights match the reference (eval, no mask, same parameters)"""
    mine, ref = support.paired_modules(student, reference, device, E, H)
    x = seeded_randn(B, T, E, seed=7, device=device)
    mine_result, (_, r_w) = call_both(mine, ref, x)
    _, w = returned_pair(mine_result, "forward", tensors=False)
    with torch.no_grad():
        _compare(w, r_w, "attention weights [B, H, T, T]", lambda: _weight_bugs(ref, x),
                 "weights must be softmax(q @ k^T / sqrt(head_dim)) per head, q, k, v from the projections.")


def test_module_output_matches_reference(student, reference, device, support):
    """MultiHeadSelfAttention's output matches the reference (eval, no mask, same parameters)"""
    mine, ref = support.paired_modules(student, reference, device, E, H)
    x = seeded_randn(B, T, E, seed=8, device=device)
    mine_result, (r_out, _) = call_both(mine, ref, x)
    out, _ = returned_pair(mine_result, "forward", tensors=False)
    with torch.no_grad():
        _compare(out, r_out, "output [B, T, E]", lambda: _output_bugs(ref, x),
                 "output = out_proj(heads of weights @ v merged back to [B, T, E]);"
                 " if the weights test fails too, fix the weights first.")


def test_rejects_non_positive_sizes(student):
    """embed_dim or num_heads that is not positive raises ValueError"""
    for e, h in [(0, 4), (-8, 2), (32, 0), (32, -4)]:
        expect_raise(ValueError, f"MultiHeadSelfAttention({e}, {h})",
                     student.MultiHeadSelfAttention, e, h, dropout_p=0.0,
                     hint="check embed_dim > 0 and num_heads > 0 in __init__ and raise ValueError.")


def test_rejects_indivisible_sizes(student):
    """embed_dim not divisible by num_heads raises ValueError"""
    for e, h in [(30, 4), (32, 5), (10, 3)]:
        expect_raise(ValueError, f"MultiHeadSelfAttention({e}, {h})",
                     student.MultiHeadSelfAttention, e, h, dropout_p=0.0,
                     hint="check embed_dim % num_heads == 0 in __init__ and raise ValueError.")


def test_rejects_input_not_3d(student, device, support):
    """x that is not 3-D ([batch, seq_len, embed_dim]) raises ValueError"""
    mine = support.module(student, device, E, H)
    for shape in [(T, E), (1, B, T, E)]:
        x = seeded_randn(*shape, seed=9, device=device)
        expect_raise(ValueError, f"forward(x of shape {list(shape)})", mine, x,
                     hint="check x.dim() == 3 at the start of forward and raise ValueError.")


def test_rejects_mask_of_wrong_shape(student, device, support):
    """an attention_mask whose shape cannot be used raises ValueError"""
    mine = support.module(student, device, E, H)
    x = seeded_randn(B, T, E, seed=10, device=device)
    for shape in [(B, T + 2), (B + 1, T)]:
        mask = torch.ones(shape, dtype=torch.bool, device=device)
        expect_raise(ValueError, f"forward(x of shape {[B, T, E]}, attention_mask of shape {list(shape)})",
                     mine, x, attention_mask=mask,
                     hint="check the mask's shape against [batch, seq_len] before using it.")


def test_rejects_non_bool_mask(student, device, support):
    """an attention_mask that is not boolean raises TypeError"""
    mine = support.module(student, device, E, H)
    x = seeded_randn(B, T, E, seed=11, device=device)
    for dtype in (torch.float32, torch.int64):
        mask = torch.ones(B, T, dtype=dtype, device=device)
        expect_raise(TypeError, f"forward with a {dtype_name(dtype)} attention_mask",
                     mine, x, attention_mask=mask,
                     hint="check mask.dtype == torch.bool and raise TypeError; don't convert it silently.")
