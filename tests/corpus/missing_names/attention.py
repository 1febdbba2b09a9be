"""Day 13 - work in progress: only the causal mask so far."""

import torch


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))
