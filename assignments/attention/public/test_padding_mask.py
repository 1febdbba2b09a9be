"""Public check for the padding mask.

These are a small sample of what grading runs; passing them does not guarantee full marks.
"""

import torch

from grader.testing import fail, heatmap_panel


def test_pad_keys_get_zero_weight(student, device, feedback, support):
    """weights on PAD keys are 0"""
    module = support.module(student, device, 32, 4)
    mask = torch.tensor([[True, True, True, False, False], [True, True, True, True, True]], device=device)
    _, weights = support.forward(module, torch.randn(2, 5, 32, device=device), attention_mask=mask)
    feedback.heatmaps("Head 0 weights, batch 0",
                      [heatmap_panel("yours", weights[0, 0], masked=~mask[0].expand(5, 5))])
    on_pad = weights[0, :, :3, 3:]  # real queries of batch 0, PAD keys 3 and 4
    if float(on_pad.abs().max()) > 1e-6:
        fail(f"weights on PAD keys are up to {float(on_pad.abs().max()):.2g}, expected 0.",
             hint="is the mask applied to the keys, with True meaning allowed?")
