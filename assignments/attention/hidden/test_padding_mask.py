"""padding_mask: PAD keys get no weight, and the masked attention matches the reference.

Modules run in eval() with dropout_p=0.0. Every query row keeps at least one real key.
Comparisons judge the mask, not the attention under it: when the submission's attention
without a mask already differs from the reference (that costs `attention_core`), its
masked weights are compared with its own unmasked weights restricted to the allowed keys
and renormalized, which is what masking the scores gives whatever the scores are.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.testing import (
    call_both,
    check_shape,
    fail,
    matches,
    returned_pair,
    seeded_randn,
    worst,
)

E, H = 32, 4
PAD_MASK = torch.tensor(  # True = real token; right padding, none, left padding, gaps
    [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1], [1, 0, 1, 1, 0, 1]],
    dtype=torch.bool,
)
B, T = PAD_MASK.shape
KEYS_HINT = "is the mask applied to the keys (mask[:, None, None, :]), with True meaning allowed?"


def _leak_hint(w: torch.Tensor, mask: torch.Tensor, plain_w: torch.Tensor, support: Any) -> str:
    """The likely bug behind real tokens' weight on PAD keys."""
    real_rows = w.transpose(1, 2)[mask]  # [N, H, T]
    if bool(torch.isnan(real_rows).any()):
        return "NaN in real tokens' weights: a row with every key masked? " + KEYS_HINT
    if support.rows_off(plain_w):
        return support.ROWS_OFF_HINT
    if matches(w, plain_w):
        return "the weights are the same as without a mask: is attention_mask ignored?"
    padded = mask.any(1) & (~mask).any(1)  # batches with both real and PAD tokens
    on_real = (w * mask[:, None, None, :]).sum(-1).transpose(1, 2)[mask & padded[:, None]]
    if worst(on_real) < 1e-3:
        return ("real keys get no weight and PAD keys do: is the mask inverted? True means a real"
                " token, so fill the scores where the mask is False (~mask).")
    pad_rows = w.transpose(1, 2)[~mask]
    if worst(pad_rows) < 1e-6:
        return "PAD queries get zero weight but PAD keys do not: " + KEYS_HINT
    return KEYS_HINT + " Fill masked scores with a very negative value before the softmax."


def _masked_weights(support: Any, mine: Any, ref: Any, x: torch.Tensor, mask: torch.Tensor,
                    feedback: Any) -> torch.Tensor:
    """The student's weights with `mask`, their shape checked and shown beside the reference's."""
    (_, w), (_, r_w) = support.forward_both(mine, ref, x, attention_mask=mask)
    support.check_shapes(w, r_w)
    support.show_weights(feedback, w, r_w, support.key_mask(PAD_MASK))
    return w


def test_pad_keys_get_zero_weight(student, reference, device, feedback, support):
    """weights on PAD keys are 0 (for every real token's query)"""
    mine, ref = support.paired_modules(student, reference, device, E, H)
    x = seeded_randn(B, T, E, seed=1, device=device)
    mask = PAD_MASK.to(device)
    w = _masked_weights(support, mine, ref, x, mask, feedback)
    leak = worst(w[support.real_query_pad_key(mask).expand_as(w)])
    if leak > 1e-6:
        plain_w = support.forward(mine, x)[1]
        fail(f"real tokens put up to {leak:.2g} of their weight on PAD keys, expected 0:",
             hint=_leak_hint(w, mask, plain_w, support))


def test_padded_outputs_match_reference(student, reference, device, feedback, support):
    """outputs and weights of real tokens match the reference with a padding mask"""
    mine, ref = support.paired_modules(student, reference, device, E, H)
    x = seeded_randn(B, T, E, seed=2, device=device)
    mask = PAD_MASK.to(device)
    support.judge_masked(mine, ref, x, {"attention_mask": mask}, support.key_mask(PAD_MASK), PAD_MASK,
                         feedback, KEYS_HINT)


def test_pad_queries_still_attend(student, reference, device, feedback, support):
    """the mask is on keys, not queries: a PAD position's row still attends to the real keys"""
    mine, ref = support.paired_modules(student, reference, device, E, H)
    x = seeded_randn(B, T, E, seed=3, device=device)
    mask = PAD_MASK.to(device)
    w = _masked_weights(support, mine, ref, x, mask, feedback)
    pad_rows = w.transpose(1, 2)[~mask]  # [N, H, T]: rows of PAD queries
    hint = ("mask only the keys (mask[:, None, None, :]); a PAD query's row is never used,"
            " but it must not be empty, NaN or spread over PAD keys.")
    if bool(torch.isnan(pad_rows).any()):
        fail("the rows of PAD queries contain NaN:", hint=hint)
    off = (pad_rows.sum(-1) - 1).flatten()
    if worst(off) > 1e-4:
        worst_sum = 1 + float(off[off.abs().argmax()])
        fail(f"a row of a PAD query sums to {worst_sum:.3g}, expected 1:", hint=hint)
    pad_keys = ~mask[:, None, None, :].expand_as(w)
    pad_query = ~mask[:, None, :, None].expand_as(w)
    on_pad = worst(w[pad_keys & pad_query])
    if on_pad > 1e-6:
        fail(f"rows of PAD queries put up to {on_pad:.2g} on PAD keys, expected 0:", hint=hint)


def test_function_mask(student, reference, device, feedback, support):
    """scaled_dot_product_attention gives zero weight where the mask is False and matches the reference"""
    q = seeded_randn(2, 3, 4, 8, seed=4, device=device)
    k = seeded_randn(2, 3, 6, 8, seed=5, device=device)
    v = seeded_randn(2, 3, 6, 5, seed=6, device=device)
    by_key = torch.tensor([[1, 1, 1, 1, 0, 0], [0, 1, 1, 0, 1, 1]], dtype=torch.bool)[:, None, None, :]
    by_query = torch.rand(2, 1, 4, 6, generator=torch.Generator().manual_seed(7)) < 0.5
    by_query[..., 0] = True  # every query keeps a key
    attend, ref_attend = student.scaled_dot_product_attention, reference.scaled_dot_product_attention
    mine, (r_plain_out, r_plain_w) = call_both(attend, ref_attend, q, k, v)
    plain_out, plain_w = returned_pair(mine, "scaled_dot_product_attention")
    core_ok = matches(plain_w, r_plain_w) and matches(plain_out, r_plain_out)
    if not core_ok:
        feedback.note("Your scaled_dot_product_attention without a mask differs from the reference"
                      " (see attention_core), so with a mask your weights were compared with your"
                      " unmasked weights restricted to the allowed keys.")
    hint = "fill the scores where the mask is False (True = may attend) before the softmax."
    for name, mask in (("a [B, 1, 1, Tk] mask", by_key), ("a [B, 1, Tq, Tk] mask", by_query)):
        mask = mask.to(device)
        mine, (r_out, r_w) = call_both(attend, ref_attend, q, k, v, mask)
        out, w = returned_pair(mine, "scaled_dot_product_attention")
        check_shape(w, r_w.shape, f"weights with {name}")
        leak = worst(w[~mask.expand_as(w)])
        if leak > 1e-6:
            fail(f"with {name}, masked positions get weight up to {leak:.2g}, expected 0:", hint=hint)
        if core_ok:
            support.close(w, r_w, f"weights with {name}", hint)
            support.close(out, r_out, f"output with {name}", hint)
        else:
            check_shape(plain_w, w.shape, "weights without a mask")
            support.close(w, support.renormalized(plain_w, mask),
                          f"weights with {name} (vs your unmasked weights restricted to the allowed keys)", hint)
