"""Day 13 - Attention mechanism: my solution.

Multi-head self-attention following the lesson's code, plus the functions the
exercise asks for. The fused projection is also reachable as `in_proj` (the name
nn.MultiheadAttention uses), the way weight-tying code registers one layer twice.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """True where query i may attend key j, i.e. j <= i."""
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def _check_mask(mask: torch.Tensor, scores_shape: torch.Size) -> None:
    if mask.dtype != torch.bool:
        raise TypeError("attention mask must be boolean, where True means allowed")
    try:
        shape = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        shape = None
    if shape != scores_shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to {tuple(scores_shape)}"
        )


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d)) v; mask is boolean, True = may attend."""
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same last dimension")
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        _check_mask(mask, scores.shape)
        scores = scores.masked_fill(~mask.to(scores.device), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, dropout_p: float = 0.1) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError("embed_dim and num_heads must be positive")
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.in_proj = self.qkv  # the same layer under a second name
        self.dropout = nn.Dropout(dropout_p)

    def _normalize_mask(
        self, mask: torch.Tensor, batch: int, seq_len: int, device: torch.device
    ) -> torch.Tensor:
        if mask.dtype != torch.bool:
            raise TypeError("attention mask must be boolean, where True means allowed")
        mask = mask.to(device=device)
        if mask.shape == (batch, seq_len):
            return mask[:, None, None, :]
        if mask.shape == (batch, 1, 1, seq_len):
            return mask
        if mask.shape == (batch, self.num_heads, seq_len, seq_len):
            return mask
        raise ValueError(f"unsupported mask shape: {tuple(mask.shape)}")

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        causal: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if x.ndim != 3:
            raise ValueError("x must have shape [batch, seq_len, embed_dim]")
        batch, seq_len, embed_dim = x.shape
        if embed_dim != self.embed_dim:
            raise ValueError(f"expected embed_dim={self.embed_dim}, got {embed_dim}")

        qkv = self.in_proj(x).view(batch, seq_len, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)

        allowed = None
        if attention_mask is not None:
            allowed = self._normalize_mask(attention_mask, batch, seq_len, x.device)
        if causal:
            c_mask = causal_mask(seq_len, x.device)[None, None, :, :]
            allowed = c_mask if allowed is None else allowed & c_mask
        if allowed is not None:
            scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)

        weights = torch.softmax(scores, dim=-1)
        weights = self.dropout(weights)
        context = torch.matmul(weights, v)
        context = context.transpose(1, 2).contiguous().view(batch, seq_len, embed_dim)
        return self.out_proj(context), weights


def sdpa_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """The same attention through torch's fused kernel (True = may attend there too)."""
    attn_mask = None
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError("attention mask must be boolean, where True means allowed")
        attn_mask = mask.to(q.device)
    if causal and attn_mask is not None:
        future_ok = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        attn_mask = attn_mask & future_ok
        causal = False
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=causal
    )
