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

from grader.testing import assert_close, fail, heatmap_panel

E, H = 32, 4
PAD_MASK = torch.tensor(  # True = real token; right padding, none, left padding, gaps
    [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1], [1, 0, 1, 1, 0, 1]],
    dtype=torch.bool,
)
B, T = PAD_MASK.shape
KEYS_HINT = "is the mask applied to the keys (mask[:, None, None, :]), with True meaning allowed?"


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


def _pair(result: Any, what: str = "forward") -> tuple[torch.Tensor, torch.Tensor]:
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        fail(f"{what} must return a pair (output, weights), got {type(result).__name__}.")
    for name, value in (("output", result[0]), ("weights", result[1])):
        if not isinstance(value, torch.Tensor):
            fail(f"{what}: {name} is a {type(value).__name__}, expected a tensor.")
    return result[0], result[1]


def _check_shape(w: torch.Tensor, shape: torch.Size, what: str) -> None:
    if tuple(w.shape) != tuple(shape):
        fail(f"{what}: shape is {list(w.shape)}, expected {list(shape)}.")


def _close(got: torch.Tensor, expected: torch.Tensor, what: str, hint: str) -> None:
    assert_close(got, expected, what=what, hint=hint, check_dtype=False, check_device=False)


def _matches(got: torch.Tensor, expected: torch.Tensor) -> bool:
    if got.shape != expected.shape:
        return False
    return torch.allclose(got.detach().cpu().double(), expected.detach().cpu().double(), atol=1e-4, rtol=1e-3)


def _worst(values: torch.Tensor) -> float:
    """Largest |value|, NaN counting as infinite; 0 for no values."""
    if values.numel() == 0:
        return 0.0
    return float(values.detach().double().abs().nan_to_num(nan=float("inf")).max())


def _key_mask(mask: torch.Tensor) -> torch.Tensor:
    """[B, T] real tokens -> [B, T, T] (query, key) allowed."""
    return mask[:, None, :].expand(mask.size(0), mask.size(1), mask.size(1))


def _show(feedback: Any, w: torch.Tensor, r_w: torch.Tensor, allowed: torch.Tensor) -> None:
    if tuple(w.shape) == tuple(r_w.shape) and w.dim() == 4 and not w.is_meta:
        feedback.heatmaps("Head 0 weights, batch 0", [
            heatmap_panel("yours", w[0, 0], masked=~allowed[0].cpu()),
            heatmap_panel("reference", r_w[0, 0], masked=~allowed[0].cpu()),
        ])


def _leak_hint(w: torch.Tensor, mask: torch.Tensor, plain_w: torch.Tensor) -> str:
    """The likely bug behind real tokens' weight on PAD keys."""
    real_rows = w.transpose(1, 2)[mask]  # [N, H, T]
    if bool(torch.isnan(real_rows).any()):
        return "NaN in real tokens' weights: a row with every key masked? " + KEYS_HINT
    if _worst(plain_w.double().sum(-1) - 1) > 1e-4:
        return ("even without a mask your weights' rows do not sum to 1 (see attention_core):"
                " the softmax must run over the keys (dim=-1); then masked keys get 0.")
    if _matches(w, plain_w):
        return "the weights are the same as without a mask: is attention_mask ignored?"
    padded = mask.any(1) & (~mask).any(1)  # batches with both real and PAD tokens
    on_real = (w * mask[:, None, None, :]).sum(-1).transpose(1, 2)[mask & padded[:, None]]
    if _worst(on_real) < 1e-3:
        return ("real keys get no weight and PAD keys do: is the mask inverted? True means a real"
                " token, so fill the scores where the mask is False (~mask).")
    pad_rows = w.transpose(1, 2)[~mask]
    if _worst(pad_rows) < 1e-6:
        return "PAD queries get zero weight but PAD keys do not: " + KEYS_HINT
    return KEYS_HINT + " Fill masked scores with a very negative value before the softmax."


def _renormalized(plain_w: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Unmasked weights restricted to the allowed keys: what masking the scores gives."""
    kept = plain_w.double() * allowed
    return kept / kept.sum(-1, keepdim=True)


def _judge_masked(mine: Any, ref: Any, x: torch.Tensor, kwargs: dict[str, Any],
                  allowed: torch.Tensor, rows: torch.Tensor, feedback: Any, hint: str) -> None:
    """Compare the masked run at query positions `rows` [B, T] (see the module docstring).

    `allowed` is [B, T, T] (query, key), True = may attend.
    """
    out, w = _pair(mine(x, **kwargs))
    with torch.no_grad():
        r_out, r_w = ref(x, **kwargs)
        r_plain_out, r_plain_w = ref(x)
    _check_shape(w, r_w.shape, "attention weights")
    _check_shape(out, r_out.shape, "output")
    _show(feedback, w, r_w, allowed)
    rows = rows.to(x.device)
    plain_out, plain_w = _pair(mine(x))
    if _worst(plain_w.double().sum(-1) - 1) > 1e-4:
        hint = ("even without a mask your weights' rows do not sum to 1 (see attention_core):"
                " the softmax must run over the keys (dim=-1).")
    elif _worst(w.transpose(1, 2)[rows].double().sum(-1) - 1) > 1e-4:
        hint = ("weights of real queries do not sum to 1: mask the scores before the softmax"
                " (masked_fill with a very negative value), not the weights after it.")
    judged = rows[:, None, :, None].expand_as(w)  # rows of other queries: not judged here
    if _matches(plain_w, r_plain_w) and _matches(plain_out, r_plain_out):
        _close(torch.where(judged, w, r_w), r_w, "weights [B, H, query, key] of real queries", hint)
        _close(torch.where(rows[..., None], out, r_out), r_out, "output [B, T, E] at real positions", hint)
        return
    feedback.note(
        "Your attention without a mask differs from the reference (see attention_core), so"
        " this test compared your masked weights with your own unmasked weights restricted"
        " to the allowed keys (which is what masking the scores gives)."
    )
    _check_shape(plain_w, w.shape, "attention weights without a mask")
    expected = _renormalized(plain_w, allowed.to(x.device)[:, None])
    _close(torch.where(judged, w.double(), expected), expected,
           "weights [B, H, query, key] of real queries (vs your unmasked weights restricted to the allowed keys)",
           hint)


def test_pad_keys_get_zero_weight(student, reference, device, feedback):
    """weights on PAD keys are 0 (for every real token's query)"""
    mine, ref = _paired(student, reference, device)
    x = _randn(B, T, E, seed=1, device=device)
    mask = PAD_MASK.to(device)
    _, w = _pair(mine(x, attention_mask=mask))
    with torch.no_grad():
        _, r_w = ref(x, attention_mask=mask)
    _check_shape(w, r_w.shape, "attention weights")
    _show(feedback, w, r_w, _key_mask(PAD_MASK))
    real_query_pad_key = mask[:, None, :, None] & ~mask[:, None, None, :]  # [B, 1, T, T]
    worst = _worst(w[real_query_pad_key.expand_as(w)])
    if worst > 1e-6:
        plain_w = _pair(mine(x))[1]
        fail(f"real tokens put up to {worst:.2g} of their weight on PAD keys, expected 0:",
             hint=_leak_hint(w, mask, plain_w))


def test_padded_outputs_match_reference(student, reference, device, feedback):
    """outputs and weights of real tokens match the reference with a padding mask"""
    mine, ref = _paired(student, reference, device)
    x = _randn(B, T, E, seed=2, device=device)
    mask = PAD_MASK.to(device)
    _judge_masked(mine, ref, x, {"attention_mask": mask}, _key_mask(PAD_MASK), PAD_MASK,
                  feedback, KEYS_HINT)


def test_pad_queries_still_attend(student, reference, device, feedback):
    """the mask is on keys, not queries: a PAD position's row still attends to the real keys"""
    mine, ref = _paired(student, reference, device)
    x = _randn(B, T, E, seed=3, device=device)
    mask = PAD_MASK.to(device)
    _, w = _pair(mine(x, attention_mask=mask))
    with torch.no_grad():
        _, r_w = ref(x, attention_mask=mask)
    _check_shape(w, r_w.shape, "attention weights")
    _show(feedback, w, r_w, _key_mask(PAD_MASK))
    pad_rows = w.transpose(1, 2)[~mask]  # [N, H, T]: rows of PAD queries
    hint = ("mask only the keys (mask[:, None, None, :]); a PAD query's row is never used,"
            " but it must not be empty, NaN or spread over PAD keys.")
    if bool(torch.isnan(pad_rows).any()):
        fail("the rows of PAD queries contain NaN:", hint=hint)
    off = (pad_rows.sum(-1) - 1).flatten()
    if _worst(off) > 1e-4:
        worst_sum = 1 + float(off[off.abs().argmax()])
        fail(f"a row of a PAD query sums to {worst_sum:.3g}, expected 1:", hint=hint)
    pad_keys = ~mask[:, None, None, :].expand_as(w)
    pad_query = ~mask[:, None, :, None].expand_as(w)
    worst = _worst(w[pad_keys & pad_query])
    if worst > 1e-6:
        fail(f"rows of PAD queries put up to {worst:.2g} on PAD keys, expected 0:", hint=hint)


def test_function_mask(student, reference, device, feedback):
    """scaled_dot_product_attention gives zero weight where the mask is False and matches the reference"""
    q = _randn(2, 3, 4, 8, seed=4, device=device)
    k = _randn(2, 3, 6, 8, seed=5, device=device)
    v = _randn(2, 3, 6, 5, seed=6, device=device)
    by_key = torch.tensor([[1, 1, 1, 1, 0, 0], [0, 1, 1, 0, 1, 1]], dtype=torch.bool)[:, None, None, :]
    by_query = torch.rand(2, 1, 4, 6, generator=torch.Generator().manual_seed(7)) < 0.5
    by_query[..., 0] = True  # every query keeps a key
    r_plain_out, r_plain_w = reference.scaled_dot_product_attention(q, k, v)
    plain_out, plain_w = _pair(student.scaled_dot_product_attention(q, k, v), "scaled_dot_product_attention")
    core_ok = _matches(plain_w, r_plain_w) and _matches(plain_out, r_plain_out)
    if not core_ok:
        feedback.note("Your scaled_dot_product_attention without a mask differs from the reference"
                      " (see attention_core), so with a mask your weights were compared with your"
                      " unmasked weights restricted to the allowed keys.")
    hint = "fill the scores where the mask is False (True = may attend) before the softmax."
    for name, mask in (("a [B, 1, 1, Tk] mask", by_key), ("a [B, 1, Tq, Tk] mask", by_query)):
        mask = mask.to(device)
        out, w = _pair(student.scaled_dot_product_attention(q, k, v, mask), "scaled_dot_product_attention")
        r_out, r_w = reference.scaled_dot_product_attention(q, k, v, mask)
        _check_shape(w, r_w.shape, f"weights with {name}")
        worst = _worst(w[~mask.expand_as(w)])
        if worst > 1e-6:
            fail(f"with {name}, masked positions get weight up to {worst:.2g}, expected 0:", hint=hint)
        if core_ok:
            _close(w, r_w, f"weights with {name}", hint)
            _close(out, r_out, f"output with {name}", hint)
        else:
            _check_shape(plain_w, w.shape, "weights without a mask")
            _close(w, _renormalized(plain_w, mask),
                   f"weights with {name} (vs your unmasked weights restricted to the allowed keys)", hint)
