"""Public checks for the causal mask.

These are a small sample of what grading runs; passing them does not guarantee full marks.
"""

import torch

from grader.testing import fail, heatmap_panel, show_figures


def test_causal_mask_is_lower_triangle(student, device):
    """causal_mask(4) is a bool lower triangle, diagonal included"""
    got = student.causal_mask(4, device=device)
    if got.dtype != torch.bool:
        fail(f"causal_mask(4) has dtype {got.dtype}, expected torch.bool.")
    if not torch.equal(got.cpu(), torch.ones(4, 4, dtype=torch.bool).tril()):
        fail(f"causal_mask(4) is {got.int().tolist()}; query i may attend keys 0..i (True = allowed).")


def test_future_weights_are_zero(student, device, feedback, support):
    """future positions get zero weight"""
    module = support.module(student, device, 32, 4)
    _, weights = support.forward(module, torch.randn(2, 5, 32, device=device), causal=True)
    future = ~torch.ones(5, 5, dtype=torch.bool, device=device).tril()
    feedback.heatmaps("Head 0 weights, batch 0", [heatmap_panel("yours", weights[0, 0], masked=future)])
    worst = float(weights[..., future].abs().max())
    if worst > 1e-6:
        fail(f"weights on future keys are up to {worst:.2g}, expected 0.")


TOKENS = ["The", "cat", "sat", "on", "the", "mat"]
NO_PLOT = ("no figure of yours: define `plot_attention(attn_weights, tokens, head=0)` as in the "
           "lesson's section 7 (Visualize Attention) to see your own weights drawn here")


def test_plot_attention(student, device, feedback, support):
    """your plot_attention, drawn on your causal weights (not graded: for you to look at)"""
    def plot() -> None:
        module = support.module(student, device, 32, 4)
        _, weights = support.forward(module, torch.randn(1, len(TOKENS), 32, device=device), causal=True)
        student.plot_attention(weights.detach().cpu(), TOKENS, head=0)

    show_figures(student, feedback, plot if "plot_attention" in student else None, NO_PLOT)

