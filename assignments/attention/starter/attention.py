"""Starter for the `attention` assignment (Day 13: Attention mechanism).

Replace each `raise NotImplementedError("TODO: ...")` with your code. Keep the names
and the signatures as they are: the grader calls them. Masks are bool tensors where
True means "may attend". Check your work in the kit folder with `grader check`, or one
exercise at a time with `grader check --exercise causal_mask`. Your written answers
(shapes, the O(n²) numbers, the quiz) go in answers.yaml, not here.
"""

# %%
import math

import torch
from torch import nn
from torch.nn import functional as F

# %% [markdown]
# ## `causal_mask` (exercise `causal_mask`)


# %%
def causal_mask(seq_len, device=None):
    """A bool tensor [seq_len, seq_len]: True where query i may attend key j, i.e. on
    and below the diagonal (j <= i). Create it on `device`."""
    # TODO: a lower triangle of True, the diagonal included.
    raise NotImplementedError("TODO: causal_mask: return the [seq_len, seq_len] bool lower triangle")


# %% [markdown]
# ## `scaled_dot_product_attention` (exercise `attention_core`)


# %%
def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d)) v, without dropout.

    q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv]; `mask` is bool, broadcastable to
    [..., Tq, Tk], True = may attend. Returns (output [..., Tq, Dv], weights [..., Tq, Tk]).
    Raise TypeError when `mask` is not bool, ValueError when its shape cannot broadcast.
    """
    # TODO: scores = q k^T / sqrt(D); where the mask is False, use a very negative
    #       score before the softmax over the keys (the last axis).
    raise NotImplementedError("TODO: scaled_dot_product_attention: return (output, weights)")


# %% [markdown]
# ## `MultiHeadSelfAttention` (exercises `shape_reading`, `attention_core`, `padding_mask`, `causal_mask`, `dropout`)


# %%
class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention over x [B, T, E].

    Projections: `qkv` = nn.Linear(E, 3 * E) (q, k, v in this order) and `out_proj` =
    nn.Linear(E, E). The grader also accepts W_q, W_k, W_v, W_o, or q_proj, k_proj,
    v_proj, out_proj (all nn.Linear with bias).
    """

    def __init__(self, embed_dim, num_heads, dropout_p=0.1):
        super().__init__()
        # TODO: raise ValueError when embed_dim or num_heads is not positive, or when
        #       embed_dim % num_heads != 0.
        # TODO: keep embed_dim, num_heads and head_dim = embed_dim // num_heads, and create
        #       self.qkv = nn.Linear(embed_dim, 3 * embed_dim),
        #       self.out_proj = nn.Linear(embed_dim, embed_dim),
        #       self.dropout = nn.Dropout(dropout_p).
        raise NotImplementedError(
            "TODO: MultiHeadSelfAttention.__init__: check the arguments and create the layers")

    def forward(self, x, attention_mask=None, causal=False):
        """x [B, T, E] -> (output [B, T, E], weights [B, H, T, T], after dropout).

        `attention_mask`: bool [B, T], True = real token, False = PAD (PAD keys get zero
        weight). `causal=True`: query i attends keys 0..i only (use `causal_mask`). Both
        masks combine: a key must be allowed by both. Raise ValueError when x is not 3-D
        or a mask has a shape you cannot use, TypeError when a mask is not bool. Tensors
        you create here live on x's device and follow its dtype.
        """
        # TODO: project to q, k, v and split them into heads [B, H, T, head_dim];
        #       scores [B, H, T, T]; apply the masks; softmax over the keys; dropout on
        #       the weights; weights @ v; merge the heads; out_proj.
        raise NotImplementedError("TODO: MultiHeadSelfAttention.forward: return (output, weights)")


# %% [markdown]
# ## `sdpa_attention` (exercise `sdpa_rewrite`)


# %%
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    """The same attention as `scaled_dot_product_attention` (mask: True = may attend),
    built on torch.nn.functional.scaled_dot_product_attention. Returns the output only."""
    # TODO: call F.scaled_dot_product_attention(q, k, v, attn_mask=..., dropout_p=...,
    #       is_causal=...). A bool attn_mask there also means True = may attend; some
    #       PyTorch versions refuse attn_mask together with is_causal=True, so combine
    #       the masks yourself in that case.
    raise NotImplementedError("TODO: sdpa_attention: call F.scaled_dot_product_attention")
