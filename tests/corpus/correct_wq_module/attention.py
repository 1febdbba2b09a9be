# Day 13 homework - self-attention written from scratch
# Layout: four separate projections W_q, W_k, W_v, W_o (like the lesson's diagram).

import math
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

NEG_INF = float("-inf")


def causal_mask(seq_len, device=None):
    # query i may look at keys 0..i (diagonal included)
    i = torch.arange(seq_len, device=device)
    return i[None, :] <= i[:, None]


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.size(-1)
    if k.size(-1) != d:
        raise ValueError(f"q has last dim {d} but k has {k.size(-1)}")
    scores = torch.einsum("...qd,...kd->...qk", q, k) * (1.0 / math.sqrt(d))
    if mask is not None:
        if mask.dtype is not torch.bool:
            raise TypeError(f"mask must be torch.bool, got {mask.dtype}")
        try:
            target = torch.broadcast_shapes(mask.shape, scores.shape)
        except RuntimeError as err:
            raise ValueError(f"mask shape {list(mask.shape)} does not fit scores {list(scores.shape)}") from err
        if target != scores.shape:
            raise ValueError(f"mask shape {list(mask.shape)} does not fit scores {list(scores.shape)}")
        scores = scores.masked_fill(mask.logical_not().to(scores.device), NEG_INF)
    weights = scores.softmax(dim=-1)
    out = torch.einsum("...qk,...kd->...qd", weights, v)
    return out, weights


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention with separate W_q / W_k / W_v / W_o."""

    def __init__(self, embed_dim, num_heads, dropout_p=0.1):
        super().__init__()
        if not (embed_dim > 0 and num_heads > 0):
            raise ValueError(f"embed_dim ({embed_dim}) and num_heads ({num_heads}) must be > 0")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.W_q = nn.Linear(embed_dim, embed_dim)
        self.W_k = nn.Linear(embed_dim, embed_dim)
        self.W_v = nn.Linear(embed_dim, embed_dim)
        self.W_o = nn.Linear(embed_dim, embed_dim)
        self.attn_drop = nn.Dropout(p=dropout_p)

    # -- helpers -------------------------------------------------------------
    def split_heads(self, t):
        b, n, _ = t.shape
        return t.reshape(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def merge_heads(self, t):
        b, h, n, d = t.shape
        return t.permute(0, 2, 1, 3).reshape(b, n, h * d)

    def build_allowed(self, attention_mask, causal, b, n, device):
        allowed = None
        if attention_mask is not None:
            if attention_mask.dtype != torch.bool:
                raise TypeError("attention_mask must be a bool tensor (True = real token)")
            m = attention_mask.to(device)
            if m.shape == (b, n):
                allowed = m.view(b, 1, 1, n)
            elif m.shape in ((b, 1, 1, n), (b, self.num_heads, n, n)):
                allowed = m
            else:
                raise ValueError(f"attention_mask has shape {tuple(m.shape)}, expected ({b}, {n})")
        if causal:
            c = causal_mask(n, device=device).view(1, 1, n, n)
            allowed = c if allowed is None else (allowed & c)
        return allowed

    # -- forward ---------------------------------------------------------------
    def forward(self, x, attention_mask=None, causal=False):
        if x.dim() != 3:
            raise ValueError(f"x must be [batch, seq_len, embed_dim], got {tuple(x.shape)}")
        b, n, e = x.shape
        if e != self.embed_dim:
            raise ValueError(f"x has embed_dim {e}, module expects {self.embed_dim}")

        q = self.split_heads(self.W_q(x))
        k = self.split_heads(self.W_k(x))
        v = self.split_heads(self.W_v(x))

        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.head_dim)
        allowed = self.build_allowed(attention_mask, causal, b, n, x.device)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, NEG_INF)
        attn = F.softmax(scores, dim=-1)
        attn = self.attn_drop(attn)
        ctx = torch.einsum("bhqk,bhkd->bhqd", attn, v)
        return self.W_o(self.merge_heads(ctx)), attn


def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    """Exercise 5: same thing with torch.nn.functional.scaled_dot_product_attention."""
    if mask is not None and mask.dtype != torch.bool:
        raise TypeError("mask must be bool (True = allowed)")
    if mask is not None and causal:
        tq, tk = q.size(-2), k.size(-2)
        keep = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.device) & keep, dropout_p=dropout_p)
    if mask is not None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.device), dropout_p=dropout_p)
    return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=causal)
