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

from grader.testing import assert_close, fail, heatmap_panel, show_figures

E, H = 32, 4
B, T = 2, 5
TRIL = torch.ones(T, T, dtype=torch.bool).tril()
PAD_MASK = torch.tensor(  # True = real token; the first token is always real
    [[1, 1, 1, 0, 0], [1, 0, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool
)
CAUSAL_HINT = "is the causal mask tril (True = may attend) and applied to the scores when causal=True?"


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


def _said(exc: BaseException) -> str:
    """'TypeName: message' for an exception the student's code raised."""
    message = exc.args[0] if exc.args else ""
    return f"{getattr(exc, 'type_name', type(exc).__name__)}: {message}"


def _rows_off(w: torch.Tensor) -> bool:
    """Whether some row of weights does not sum to 1."""
    return _worst(w.double().sum(-1) - 1) > 1e-4


WRONG_PATTERNS = (  # (the allowed pattern for n tokens, what it means)
    (lambda n: torch.ones(n, n, dtype=torch.bool).triu(),
     "the causal mask uses triu instead of tril? Query i may attend keys 0..i."),
    (lambda n: torch.ones(n, n, dtype=torch.bool).triu(1),
     "the causal mask is inverted: True must mean may attend (the lower triangle)."),
    (lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1),
     "the diagonal is missing: a token may attend to itself (tril with diagonal=0)."),
)


def _causal_hint(w: torch.Tensor, plain_w: torch.Tensor) -> str:
    """The likely bug behind weight on future keys (w: [B, H, T, T] with causal=True)."""
    if _rows_off(plain_w):
        return ("even without a mask your weights' rows do not sum to 1 (see attention_core):"
                " the softmax must run over the keys (dim=-1); then masked keys get 0.")
    if _matches(w, plain_w):
        return "the weights are the same as without causal=True: is causal=True ignored?"
    support = (w.detach().abs().nan_to_num(nan=1.0) > 1e-6).flatten(0, -3).any(0).cpu()
    if bool(support.all()):
        return ("future keys still get some weight: fill masked scores with a very negative value"
                " (torch.finfo(scores.dtype).min), not a small number, before the softmax.")
    for pattern, hint in WRONG_PATTERNS:
        allowed = pattern(support.size(0))
        rows = allowed.any(-1)  # what a row with every key masked gets varies: skip those
        if torch.equal(support[rows], allowed[rows]):
            return hint
    return CAUSAL_HINT


def _mask_hint(got: torch.Tensor, n: int) -> str:
    """The likely bug behind a wrong causal_mask(n) (got: [n, n] bool)."""
    for pattern, hint in WRONG_PATTERNS:
        if torch.equal(got, pattern(n)):
            return hint
    return "expected torch.tril(torch.ones(n, n, dtype=torch.bool))."


def _combine_hint(mine: Any, x: torch.Tensor, mask: torch.Tensor, w: torch.Tensor) -> str:
    """The likely bug behind real queries' weight on blocked keys with both masks."""
    if _rows_off(_pair(mine(x))[1]):
        return ("even without a mask your weights' rows do not sum to 1 (see attention_core):"
                " the softmax must run over the keys (dim=-1); then masked keys get 0.")
    _, causal_w = _pair(mine(x, causal=True))
    if _worst(causal_w.masked_fill(TRIL.to(x.device), 0)) > 1e-6:
        return "causal=True alone already leaks future keys (see 'future positions get zero weight')."
    _, padded_w = _pair(mine(x, attention_mask=mask))
    real_query_pad_key = mask[:, None, :, None] & ~mask[:, None, None, :]
    if _worst(padded_w[real_query_pad_key.expand_as(padded_w)]) > 1e-6:
        return "the padding mask alone already leaks PAD keys (see the padding_mask exercise)."
    real = w.transpose(1, 2)[mask]  # [N, H, T]: rows of real queries
    future = (~TRIL)[PAD_MASK.nonzero()[:, 1]][:, None, :].expand_as(real).to(x.device)
    pad_key = (~PAD_MASK)[PAD_MASK.nonzero()[:, 0]][:, None, :].expand_as(real).to(x.device)
    future_leak = _worst(real[future]) > 1e-6
    pad_leak = _worst(real[pad_key & ~future]) > 1e-6
    if future_leak and pad_leak:
        return "are the masks combined with | (either allows) instead of & (both must allow)?"
    if pad_leak:
        return "the padding mask is lost when causal=True: combine them with &, don't replace one with the other."
    return "causal=True is ignored when an attention_mask is given? Combine them with &."


def test_causal_mask_pattern(student, device):
    """causal_mask(n) is True on and below the diagonal (query i may attend keys 0..i)"""
    for n in (4, 7, 1):
        got = student.causal_mask(n, device=device)
        if not isinstance(got, torch.Tensor):
            fail(f"causal_mask({n}) returned a {type(got).__name__}, expected a tensor.")
        _check_shape(got, torch.Size([n, n]), f"causal_mask({n})")
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
        fail(f"causal_mask(4) raised {_said(exc)}.",
             hint="the signature is causal_mask(seq_len, device=None): device must be optional.")
    if not isinstance(got, torch.Tensor):
        fail(f"causal_mask(4) returned a {type(got).__name__}, expected a tensor.")
    if got.dtype != torch.bool:
        fail(f"causal_mask(4) has dtype {str(got.dtype).replace('torch.', '')}, expected bool.",
             hint="create it with dtype=torch.bool (True = may attend).")
    for where in dict.fromkeys([device, torch.device("meta")]):
        try:
            got = student.causal_mask(4, device=where)
        except (AttributeError, TypeError) as exc:
            if "unexpected keyword" in _said(exc):
                fail(f"causal_mask(4, device=...) raised {_said(exc)}.",
                     hint="the signature is causal_mask(seq_len, device=None).")
            feedback.note(f"causal_mask(4, device={str(where)!r}) raised {_said(exc)}; not counted.")
            continue
        if got.device.type != where.type:
            fail(f"causal_mask(4, device={str(where)!r}) is on {got.device.type}, expected {where.type}.",
                 hint="pass device=device when creating the tensor.")


def test_future_weights_are_zero(student, reference, device, feedback):
    """future positions get zero weight"""
    mine, ref = _paired(student, reference, device)
    x = _randn(B, T, E, seed=1, device=device)
    _, w = _pair(mine(x, causal=True))
    with torch.no_grad():
        _, r_w = ref(x, causal=True)
    _check_shape(w, r_w.shape, "attention weights")
    allowed = TRIL.expand(B, T, T)
    _show(feedback, w, r_w, allowed)
    worst = _worst(w.masked_fill(TRIL.to(device), 0))
    if worst > 1e-6:
        fail(f"weights on future keys are up to {worst:.2g}, expected 0:",
             hint=_causal_hint(w, _pair(mine(x))[1]))


def test_causal_matches_reference(student, reference, device, feedback):
    """with causal=True, outputs and weights match the reference"""
    mine, ref = _paired(student, reference, device)
    x = _randn(B, T, E, seed=2, device=device)
    rows = torch.ones(B, T, dtype=torch.bool)
    _judge_masked(mine, ref, x, {"causal": True}, TRIL.expand(B, T, T), rows, feedback, CAUSAL_HINT)


def test_padding_and_causal_combine(student, reference, device, feedback):
    """padding and causal masks combine: a key gets weight only if both allow it"""
    mine, ref = _paired(student, reference, device)
    x = _randn(len(PAD_MASK), T, E, seed=3, device=device)
    mask = PAD_MASK.to(device)
    _, w = _pair(mine(x, attention_mask=mask, causal=True))
    with torch.no_grad():
        _, r_w = ref(x, attention_mask=mask, causal=True)
    _check_shape(w, r_w.shape, "attention weights")
    allowed = _key_mask(PAD_MASK) & TRIL
    _show(feedback, w, r_w, allowed)
    real_query_blocked = (PAD_MASK[:, :, None] & ~allowed)[:, None].to(device)  # [B, 1, T, T]
    worst = _worst(w[real_query_blocked.expand_as(w)])
    if worst > 1e-6:
        fail(f"real queries put up to {worst:.2g} on keys that a mask blocks, expected 0:",
             hint=_combine_hint(mine, x, mask, w))


def test_padding_and_causal_match_reference(student, reference, device, feedback):
    """with a padding mask and causal=True, outputs and weights of real tokens match the reference"""
    mine, ref = _paired(student, reference, device)
    x = _randn(len(PAD_MASK), T, E, seed=4, device=device)
    mask = PAD_MASK.to(device)
    _judge_masked(mine, ref, x, {"attention_mask": mask, "causal": True},
                  _key_mask(PAD_MASK) & TRIL, PAD_MASK, feedback,
                  "a key may be attended only where both masks allow it (padding & causal).")


TOKENS = ["The", "cat", "sat", "on", "the", "mat"]
NO_PLOT = ("no figure of yours: define `plot_attention(attn_weights, tokens, head=0)` as in the "
           "lesson's section 7 (Visualize Attention) to see your own weights drawn here")


def test_plot_attention(student, device, feedback):
    """your plot_attention, drawn on your causal weights (not graded: for you to look at)"""
    def plot() -> None:
        mine = student.MultiHeadSelfAttention(E, H, dropout_p=0.0)
        mine.to(str(device))
        mine.eval()
        _, w = _pair(mine(_randn(1, len(TOKENS), E, seed=5, device=device), causal=True))
        student.plot_attention(w.detach().cpu(), TOKENS, head=0)

    show_figures(student, feedback, plot if "plot_attention" in student else None, NO_PLOT)

