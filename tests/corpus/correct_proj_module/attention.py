"""Bài tập Day 13: Multi-head self-attention.

Dùng q_proj / k_proj / v_proj / out_proj giống nn.MultiheadAttention của PyTorch.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.functional import scaled_dot_product_attention as torch_sdpa


def causal_mask(seq_len: int, device=None) -> torch.Tensor:
    """Ma trận tam giác dưới: True = được attend."""
    ones = torch.ones((seq_len, seq_len), dtype=torch.bool, device=device)
    return ones.tril(diagonal=0)


def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(Q K^T / sqrt(d_k)) V, trả về (output, weights)."""
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError("mask phải là bool (True = được attend)")
        if len(mask.shape) > len(scores.shape) or any(
            m not in (1, s) for m, s in zip(reversed(mask.shape), reversed(scores.shape))
        ):
            raise ValueError(f"mask shape {tuple(mask.shape)} không broadcast được tới {tuple(scores.shape)}")
        scores = scores.masked_fill(~mask.to(scores.device), float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, dropout_p: float = 0.1) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError("embed_dim và num_heads phải dương")
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim phải chia hết cho num_heads")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout_p)

    def _heads(self, t: torch.Tensor, batch: int, seq_len: int) -> torch.Tensor:
        # [B, T, E] -> [B, T, H, D] -> [B, H, T, D]
        return t.view(batch, seq_len, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x, attention_mask=None, causal=False):
        if x.ndim != 3:
            raise ValueError("x phải có shape [batch, seq_len, embed_dim]")
        batch, seq_len, embed_dim = x.shape
        if embed_dim != self.embed_dim:
            raise ValueError(f"embed_dim={embed_dim}, cần {self.embed_dim}")

        q = self._heads(self.q_proj(x), batch, seq_len)
        k = self._heads(self.k_proj(x), batch, seq_len)
        v = self._heads(self.v_proj(x), batch, seq_len)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)

        allowed = None
        if attention_mask is not None:
            if attention_mask.dtype != torch.bool:
                raise TypeError("attention_mask phải là bool, True = token thật")
            if attention_mask.shape != (batch, seq_len):
                raise ValueError(f"attention_mask shape {tuple(attention_mask.shape)} != {(batch, seq_len)}")
            allowed = attention_mask.to(x.device)[:, None, None, :]
        if causal:
            c = causal_mask(seq_len, device=x.device)[None, None]
            allowed = c if allowed is None else allowed & c
        if allowed is not None:
            # giống bài học: nếu một query không được nhìn key nào thì báo lỗi thay vì ra NaN
            if not allowed.any(dim=-1).all():
                raise ValueError("each query must be allowed to attend to at least one key")
            scores = scores.masked_fill(~allowed, float("-inf"))

        weights = torch.softmax(scores, dim=-1)
        weights = self.dropout(weights)
        context = (weights @ v).transpose(1, 2).reshape(batch, seq_len, embed_dim)
        return self.out_proj(context), weights


def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    """Bài 5: dùng torch.nn.functional.scaled_dot_product_attention (mask True = cho phép)."""
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError("mask phải là bool")
        mask = mask.to(q.device)
        if causal:
            mask = mask & torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
            causal = False
    return torch_sdpa(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal)
