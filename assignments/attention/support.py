"""What the attention tests share: the student's module built and paired with the
reference's, masks, heatmaps, and the judging of a masked run. Tests receive this module
as the `support` fixture (`support: support.py` in assignment.yaml); it runs in the
grader's process, never in the sandbox.

It goes to students with the public tests (`grader kit`), so it holds no expected values
and never imports the reference module; tests pass the `reference` fixture in.
"""

from __future__ import annotations

from typing import Any

import torch

from grader.testing import (
    assert_close,
    call_both,
    check_shape,
    fail,
    heatmap_panel,
    matches,
    returned_pair,
    worst,
)

ROWS_OFF_HINT = ("even without a mask your weights' rows do not sum to 1 (see attention_core):"
                 " the softmax must run over the keys (dim=-1); then masked keys get 0.")
MASK_SCORES_HINT = ("weights of real queries do not sum to 1: mask the scores before the softmax"
                    " (masked_fill with a very negative value), not the weights after it.")
RESTRICTED_NOTE = (
    "Your attention without a mask differs from the reference (see attention_core), so"
    " this test compared your masked weights with your own unmasked weights restricted"
    " to the allowed keys (which is what masking the scores gives)."
)


def module(student: Any, device: torch.device | str, embed_dim: int = 32, num_heads: int = 4,
           dropout_p: float = 0.0, *, eval: bool = True) -> Any:
    """The student's MultiHeadSelfAttention on `device`, in eval() unless told otherwise.

    It is built on the CPU, so `.to(device)` is sent only for another device (a round trip
    to the student's process saved, 22 per submission)."""
    mine = student.MultiHeadSelfAttention(embed_dim, num_heads, dropout_p=dropout_p)
    if torch.device(device).type != "cpu":
        mine.to(str(device))
    if eval:
        mine.eval()
    return mine


def paired_modules(student: Any, reference: Any, device: torch.device, embed_dim: int = 32,
                   num_heads: int = 4) -> tuple[Any, Any]:
    """The student's module and the reference's: eval(), dropout off, the same weights."""
    ref = reference.seeded_module(embed_dim, num_heads, seed=0).to(device)
    mine = module(student, device, embed_dim, num_heads)
    try:
        mapped = reference.weights_for(mine, ref)
    except ValueError as exc:
        fail(str(exc))
    mine.load_state_dict(mapped)
    return mine, ref


def forward(mine: Any, x: torch.Tensor, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """`mine(x, **kwargs)`, which must return (output, weights) tensors."""
    return forward_result(mine(x, **kwargs))


def forward_both(mine: Any, ref: Any, x: torch.Tensor, **kwargs: Any) -> tuple[Any, Any]:
    """The student's (output, weights) and the reference's, for the same input."""
    mine_result, theirs = call_both(mine, ref, x, **kwargs)
    return forward_result(mine_result), theirs


def forward_result(result: Any) -> tuple[torch.Tensor, torch.Tensor]:
    return returned_pair(result, "forward")


def rows_off(w: torch.Tensor) -> bool:
    """Whether some row of weights does not sum to 1."""
    return worst(w.double().sum(-1) - 1) > 1e-4


def key_mask(mask: torch.Tensor) -> torch.Tensor:
    """[B, T] real tokens -> [B, T, T] (query, key) allowed."""
    return mask[:, None, :].expand(mask.size(0), mask.size(1), mask.size(1))


def real_query_pad_key(mask: torch.Tensor) -> torch.Tensor:
    """[B, T] real tokens -> [B, 1, T, T]: a real query's weight on a PAD key."""
    return mask[:, None, :, None] & ~mask[:, None, None, :]


def show_weights(feedback: Any, w: torch.Tensor, r_w: torch.Tensor, allowed: torch.Tensor) -> None:
    """Heatmaps of head 0, batch 0: the student's weights beside the reference's."""
    if tuple(w.shape) == tuple(r_w.shape) and w.dim() == 4 and not w.is_meta:
        feedback.heatmaps("Head 0 weights, batch 0", [
            heatmap_panel("yours", w[0, 0], masked=~allowed[0].cpu()),
            heatmap_panel("reference", r_w[0, 0], masked=~allowed[0].cpu()),
        ])


def renormalized(plain_w: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Unmasked weights restricted to the allowed keys: what masking the scores gives."""
    kept = plain_w.double() * allowed
    return kept / kept.sum(-1, keepdim=True)


def close(got: torch.Tensor, expected: torch.Tensor, what: str, hint: str) -> None:
    """assert_close on values only (dtype and device are `shape_reading`'s to judge)."""
    assert_close(got, expected, what=what, hint=hint, check_dtype=False, check_device=False)


def judge_masked(mine: Any, ref: Any, x: torch.Tensor, kwargs: dict[str, Any],
                 allowed: torch.Tensor, rows: torch.Tensor, feedback: Any, hint: str) -> None:
    """Compare the masked run `mine(x, **kwargs)` at query positions `rows` [B, T].

    `allowed` is [B, T, T] (query, key), True = may attend. Where the student's attention
    without a mask already differs from the reference (that costs `attention_core`), the
    masked weights are compared with the student's own unmasked weights restricted to the
    allowed keys and renormalized, which is what masking the scores gives whatever the
    scores are.
    """
    (out, w), (r_out, r_w) = forward_both(mine, ref, x, **kwargs)
    with torch.no_grad():
        r_plain_out, r_plain_w = ref(x)
    check_shapes(w, r_w, out, r_out)
    show_weights(feedback, w, r_w, allowed)
    rows = rows.to(x.device)
    plain_out, plain_w = forward(mine, x)
    if rows_off(plain_w):
        hint = ROWS_OFF_HINT
    elif rows_off(w.transpose(1, 2)[rows]):
        hint = MASK_SCORES_HINT
    judged = rows[:, None, :, None].expand_as(w)  # rows of other queries: not judged here
    if matches(plain_w, r_plain_w) and matches(plain_out, r_plain_out):
        close(torch.where(judged, w, r_w), r_w, "weights [B, H, query, key] of real queries", hint)
        close(torch.where(rows[..., None], out, r_out), r_out, "output [B, T, E] at real positions", hint)
        return
    feedback.note(RESTRICTED_NOTE)
    check_shape(plain_w, w.shape, "attention weights without a mask")
    expected = renormalized(plain_w, allowed.to(x.device)[:, None])
    close(torch.where(judged, w.double(), expected), expected,
          "weights [B, H, query, key] of real queries (vs your unmasked weights restricted to the allowed keys)",
          hint)


def check_shapes(w: torch.Tensor, r_w: torch.Tensor, out: torch.Tensor | None = None,
                 r_out: torch.Tensor | None = None) -> None:
    """The weights', then the output's, shape must be the reference's."""
    check_shape(w, r_w.shape, "attention weights")
    if out is not None and r_out is not None:
        check_shape(out, r_out.shape, "output")
