"""sdpa_rewrite: sdpa_attention matches the reference and really calls PyTorch's SDPA.

Only `sdpa_attention` is called here (dropout_p left at 0.0). Masks are boolean with
True = may attend, and every query row keeps a key under the mask and under its
inverse, so an inverted mask is recognised instead of producing NaN.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.testing import assert_close, fail, said, seeded_randn

SDPA = "torch.nn.functional.scaled_dot_product_attention"
B, H, D = 2, 3, 8
MASK = torch.tensor([[1, 1, 1, 0, 0], [1, 0, 1, 1, 0]], dtype=torch.bool)  # [B, T]
T = MASK.size(1)
INVERTED = ("the mask is inverted: PyTorch's boolean attn_mask already means True = may attend;"
            " pass it as is, don't use ~mask.")


def _qkv(device: torch.device, tq: int = T, tk: int = T, seed: int = 0) -> tuple[torch.Tensor, ...]:
    return (seeded_randn(B, H, tq, D, seed=seed + 1, device=device),
            seeded_randn(B, H, tk, D, seed=seed + 2, device=device),
            seeded_randn(B, H, tk, D, seed=seed + 3, device=device))


def _expected(reference: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              mask: torch.Tensor | None = None) -> torch.Tensor:
    return reference.scaled_dot_product_attention(q, k, v, mask)[0]


def _output(result: Any) -> torch.Tensor:
    if isinstance(result, (tuple, list)) and len(result) >= 1 and isinstance(result[0], torch.Tensor):
        fail(f"sdpa_attention returned a {type(result).__name__}; it must return just the output tensor.")
    return result


def _compare(got: Any, expected: torch.Tensor, what: str, bugs: dict[str, torch.Tensor], hint: str) -> None:
    """Values only, naming a known bug if one fits."""
    assert_close(got, expected, what=what, hint=hint, bugs=bugs, check_dtype=False, check_device=False)


def test_matches_without_mask(student, reference, device):
    """sdpa_attention without a mask matches the reference"""
    q, k, v = _qkv(device, tq=4, tk=6)
    got = _output(student.sdpa_attention(q, k, v))
    _compare(got, _expected(reference, q, k, v), "sdpa_attention output", {},
             "pass q, k, v straight to F.scaled_dot_product_attention ([..., T, D] each).")


def test_matches_with_bool_mask(student, reference, device):
    """sdpa_attention with a boolean mask (True = may attend) matches the reference"""
    q, k, v = _qkv(device, seed=10)
    by_key = MASK[:, None, None, :]
    by_query = by_key & ~torch.eye(T, dtype=torch.bool)[[1, 2, 3, 4, 0]]  # each row: 1-2 keys off
    by_query[..., 0] = True
    for name, mask in (("a [B, 1, 1, T] mask", by_key), ("a [B, 1, T, T] mask", by_query)):
        mask = mask.to(device)
        got = _output(student.sdpa_attention(q, k, v, mask))
        bugs = {
            INVERTED: _expected(reference, q, k, v, ~mask),
            "the mask is ignored? Pass it as attn_mask=mask.": _expected(reference, q, k, v),
        }
        _compare(got, _expected(reference, q, k, v, mask), f"sdpa_attention output with {name}", bugs,
                 "pass the boolean mask as attn_mask (True = may attend), broadcastable to [..., Tq, Tk].")


def test_matches_causal(student, reference, device):
    """sdpa_attention with causal=True matches the reference's causal attention"""
    q, k, v = _qkv(device, seed=20)
    tril = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    got = _output(student.sdpa_attention(q, k, v, causal=True))
    bugs = {
        "causal=True ignored? Pass is_causal=causal.": _expected(reference, q, k, v),
        "the causal mask uses triu instead of tril? Or simply pass is_causal=True.":
            _expected(reference, q, k, v, tril.T.contiguous()),
    }
    _compare(got, _expected(reference, q, k, v, tril), "sdpa_attention output with causal=True", bugs,
             "with causal=True, query i may attend keys 0..i: pass is_causal=True.")


def test_mask_and_causal_combine(student, reference, device):
    """sdpa_attention with a mask and causal=True lets a key through only where both allow it"""
    q, k, v = _qkv(device, seed=30)
    mask = MASK[:, None, None, :].to(device)
    tril = torch.ones(T, T, dtype=torch.bool, device=device).tril()
    try:
        got = _output(student.sdpa_attention(q, k, v, mask, causal=True))
    except RuntimeError as exc:
        if "is_causal" in said(exc):
            fail(f"sdpa_attention(q, k, v, mask, causal=True) raised {said(exc)}",
                 hint="many PyTorch versions refuse attn_mask together with is_causal=True:"
                 " combine them yourself (mask & causal_mask) and pass only attn_mask.")
        raise
    bugs = {
        INVERTED: _expected(reference, q, k, v, ~mask & tril),
        "causal=True is ignored when a mask is given? Combine: mask & causal.": _expected(reference, q, k, v, mask),
        "the mask is ignored when causal=True? Combine: mask & causal.": _expected(reference, q, k, v, tril),
    }
    _compare(got, _expected(reference, q, k, v, mask & tril), "sdpa_attention output with a mask and causal=True",
             bugs, "a key may be attended only where the mask and the causal mask both allow it (&).")


def test_calls_torch_sdpa(student, device):
    """sdpa_attention really calls torch.nn.functional.scaled_dot_product_attention"""
    q, k, v = _qkv(device, seed=40)
    mask = MASK[:, None, None, :].to(device)
    with student.spy(SDPA) as calls:
        student.sdpa_attention(q, k, v)
        student.sdpa_attention(q, k, v, mask)
    if calls.count < 1:
        fail("sdpa_attention did not call torch.nn.functional.scaled_dot_product_attention.",
             hint="the exercise is to replace the manual scores -> softmax -> matmul with that function.")
