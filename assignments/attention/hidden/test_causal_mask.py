"""causal_mask: the causal_mask function, future keys blocked, padding and causal combined.

Modules run in eval() with dropout_p=0.0. Every query row keeps at least one allowed key
(the first token is never PAD). Comparisons judge the mask, not the attention under it:
when the submission's attention without a mask already differs from the reference (that
costs `attention_core`), its masked weights are compared with its own unmasked weights
restricted to the allowed keys and renormalized, which is what masking the scores gives
whatever the scores are. With a padding mask only real queries are
judged here (what PAD rows do is `padding_mask`'s question).
"""

from __future__ import annotations

from typing import Any

import torch

from grader.testing import (
    check_dtype,
    check_shape,
    check_tensor,
    fail,
    matches,
    said,
    seeded_randn,
    show_figures,
    worst,
)

E, H = 32, 4
B, T = 2, 5
TRIL = torch.ones(T, T, dtype=torch.bool).tril()
PAD_MASK = torch.tensor(  # True = real token; the first token is always real
    [[1, 1, 1, 0, 0], [1, 0, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool
)
CAUSAL_HINT = "is the causal mask tril (True = may attend) and applied to the scores when causal=True?"

WRONG_PATTERNS = (  # (the allowed pattern for n tokens, what it means)
    (lambda n: torch.ones(n, n, dtype=torch.bool).triu(),
     "the causal mask uses triu instead of tril? Query i may attend keys 0..i."),
    (lambda n: torch.ones(n, n, dtype=torch.bool).triu(1),
     "the causal mask is inverted: True must mean may attend (the lower triangle)."),
    (lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1),
     "the diagonal is missing: a token may attend to itself (tril with diagonal=0)."),
)


def _causal_hint(w: torch.Tensor, plain_w: torch.Tensor, support: Any) -> str:
    """The likely bug behind weight on future keys (w: [B, H, T, T] with causal=True)."""
    if support.rows_off(plain_w):
        return support.ROWS_OFF_HINT
    if matches(w, plain_w):
        return "the weights are the same as without causal=True: is causal=True ignored?"
    attended = (w.detach().abs().nan_to_num(nan=1.0) > 1e-6).flatten(0, -3).any(0).cpu()
    if bool(attended.all()):
        return ("future keys still get some weight: fill masked scores with a very negative value"
                " (torch.finfo(scores.dtype).min), not a small number, before the softmax.")
    for pattern, hint in WRONG_PATTERNS:
        allowed = pattern(attended.size(0))
        rows = allowed.any(-1)  # what a row with every key masked gets varies: skip those
        if torch.equal(attended[rows], allowed[rows]):
            return hint
    return CAUSAL_HINT


def _mask_hint(got: torch.Tensor, n: int) -> str:
    """The likely bug behind a wrong causal_mask(n) (got: [n, n] bool)."""
    for pattern, hint in WRONG_PATTERNS:
        if torch.equal(got, pattern(n)):
            return hint
    return "expected torch.tril(torch.ones(n, n, dtype=torch.bool))."


def _combine_hint(mine: Any, x: torch.Tensor, mask: torch.Tensor, w: torch.Tensor, support: Any) -> str:
    """The likely bug behind real queries' weight on blocked keys with both masks."""
    if support.rows_off(support.forward(mine, x)[1]):
        return support.ROWS_OFF_HINT
    _, causal_w = support.forward(mine, x, causal=True)
    if worst(causal_w.masked_fill(TRIL.to(x.device), 0)) > 1e-6:
        return "causal=True alone already leaks future keys (see 'future positions get zero weight')."
    _, padded_w = support.forward(mine, x, attention_mask=mask)
    if worst(padded_w[support.real_query_pad_key(mask).expand_as(padded_w)]) > 1e-6:
        return "the padding mask alone already leaks PAD keys (see the padding_mask exercise)."
    real = w.transpose(1, 2)[mask]  # [N, H, T]: rows of real queries
    future = (~TRIL)[PAD_MASK.nonzero()[:, 1]][:, None, :].expand_as(real).to(x.device)
    pad_key = (~PAD_MASK)[PAD_MASK.nonzero()[:, 0]][:, None, :].expand_as(real).to(x.device)
    future_leak = worst(real[future]) > 1e-6
    pad_leak = worst(real[pad_key & ~future]) > 1e-6
    if future_leak and pad_leak:
        return "are the masks combined with | (either allows) instead of & (both must allow)?"
    if pad_leak:
        return "the padding mask is lost when causal=True: combine them with &, don't replace one with the other."
    return "causal=True is ignored when an attention_mask is given? Combine them with &."


def test_causal_mask_pattern(student, device):
    """causal_mask(n) is True on and below the diagonal (query i may attend keys 0..i)"""
    for n in (4, 7, 1):
        got = check_tensor(student.causal_mask(n, device=device), f"causal_mask({n})")
        check_shape(got, torch.Size([n, n]), f"causal_mask({n})")
        got = got.cpu() != 0 if got.dtype != torch.bool else got.cpu()
        expected = torch.ones(n, n, dtype=torch.bool).tril()
        if not torch.equal(got, expected):
            bad = int((got != expected).sum())
            fail(f"causal_mask({n}) is wrong in {bad} of {n * n} places:", hint=_mask_hint(got, n))


def test_causal_mask_dtype_and_device(student, device, feedback):
    """causal_mask returns a bool tensor, on the device it is given"""
    try:
        got = student.causal_mask(4)
    except TypeError as exc:
        fail(f"causal_mask(4) raised {said(exc)}.",
             hint="the signature is causal_mask(seq_len, device=None): device must be optional.")
    got = check_tensor(got, "causal_mask(4)")
    check_dtype(got, torch.bool, "causal_mask(4)", hint="create it with dtype=torch.bool (True = may attend).")
    for where in dict.fromkeys([device, torch.device("meta")]):
        try:
            got = student.causal_mask(4, device=where)
        except (AttributeError, TypeError) as exc:
            if "unexpected keyword" in said(exc):
                fail(f"causal_mask(4, device=...) raised {said(exc)}.",
                     hint="the signature is causal_mask(seq_len, device=None).")
            feedback.note(f"causal_mask(4, device={str(where)!r}) raised {said(exc)}; not counted.")
            continue
        if got.device.type != where.type:
            fail(f"causal_mask(4, device={str(where)!r}) is on {got.device.type}, expected {where.type}.",
                 hint="pass device=device when creating the tensor.")


def test_future_weights_are_zero(student, reference, device, feedback, support):
    """future positions get zero weight"""
    mine, ref = support.paired_modules(student, reference, device, E, H)
    x = seeded_randn(B, T, E, seed=1, device=device)
    (_, w), (_, r_w) = support.forward_both(mine, ref, x, causal=True)
    support.check_shapes(w, r_w)
    support.show_weights(feedback, w, r_w, TRIL.expand(B, T, T))
    leak = worst(w.masked_fill(TRIL.to(device), 0))
    if leak > 1e-6:
        fail(f"weights on future keys are up to {leak:.2g}, expected 0:",
             hint=_causal_hint(w, support.forward(mine, x)[1], support))


def test_causal_matches_reference(student, reference, device, feedback, support):
    """with causal=True, outputs and weights match the reference"""
    mine, ref = support.paired_modules(student, reference, device, E, H)
    x = seeded_randn(B, T, E, seed=2, device=device)
    rows = torch.ones(B, T, dtype=torch.bool)
    support.judge_masked(mine, ref, x, {"causal": True}, TRIL.expand(B, T, T), rows, feedback, CAUSAL_HINT)


def test_padding_and_causal_combine(student, reference, device, feedback, support):
    """padding and causal masks combine: a key gets weight only if both allow it"""
    mine, ref = support.paired_modules(student, reference, device, E, H)
    x = seeded_randn(len(PAD_MASK), T, E, seed=3, device=device)
    mask = PAD_MASK.to(device)
    (_, w), (_, r_w) = support.forward_both(mine, ref, x, attention_mask=mask, causal=True)
    support.check_shapes(w, r_w)
    allowed = support.key_mask(PAD_MASK) & TRIL
    support.show_weights(feedback, w, r_w, allowed)
    real_query_blocked = (PAD_MASK[:, :, None] & ~allowed)[:, None].to(device)  # [B, 1, T, T]
    leak = worst(w[real_query_blocked.expand_as(w)])
    if leak > 1e-6:
        fail(f"real queries put up to {leak:.2g} on keys that a mask blocks, expected 0:",
             hint=_combine_hint(mine, x, mask, w, support))


def test_padding_and_causal_match_reference(student, reference, device, feedback, support):
    """with a padding mask and causal=True, outputs and weights of real tokens match the reference"""
    mine, ref = support.paired_modules(student, reference, device, E, H)
    x = seeded_randn(len(PAD_MASK), T, E, seed=4, device=device)
    mask = PAD_MASK.to(device)
    support.judge_masked(mine, ref, x, {"attention_mask": mask, "causal": True},
                         support.key_mask(PAD_MASK) & TRIL, PAD_MASK, feedback,
                         "a key may be attended only where both masks allow it (padding & causal).")


TOKENS = ["The", "cat", "sat", "on", "the", "mat"]
NO_PLOT = ("no figure of yours: define `plot_attention(attn_weights, tokens, head=0)` as in the "
           "lesson's section 7 (Visualize Attention) to see your own weights drawn here")


def test_plot_attention(student, device, feedback, support):
    """your plot_attention, drawn on your causal weights (not graded: for you to look at)"""
    def plot() -> None:
        mine = support.module(student, device, E, H)
        _, w = support.forward(mine, seeded_randn(1, len(TOKENS), E, seed=5, device=device), causal=True)
        student.plot_attention(w.detach().cpu(), TOKENS, head=0)

    show_figures(student, feedback, plot if "plot_attention" in student else None, NO_PLOT)
