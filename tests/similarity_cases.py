"""Planted cases for `grader similar`: independent solutions in four styles, and copies
of them disguised the ways students disguise copies. Shared by tests/test_similarity.py
and benchmarks/similarity_bench.py (precision and recall at the default threshold)."""

from __future__ import annotations

import json
import re
from pathlib import Path

LESSON_MHSA = '''
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
        self.dropout = nn.Dropout(dropout_p)

    def _normalize_mask(self, mask: torch.Tensor, batch: int, seq_len: int, device: torch.device) -> torch.Tensor:
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

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, causal: bool = False):
        if x.ndim != 3:
            raise ValueError("x must have shape [batch, seq_len, embed_dim]")
        batch, seq_len, embed_dim = x.shape
        if embed_dim != self.embed_dim:
            raise ValueError(f"expected embed_dim={self.embed_dim}, got {embed_dim}")

        qkv = self.qkv(x).view(batch, seq_len, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)

        allowed = None
        if attention_mask is not None:
            allowed = self._normalize_mask(attention_mask, batch, seq_len, x.device)
        if causal:
            c_mask = causal_mask(seq_len, x.device)[None, None, :, :]
            allowed = c_mask if allowed is None else allowed & c_mask
        if allowed is not None:
            if not allowed.any(dim=-1).all():
                raise ValueError("each query must be allowed to attend to at least one key")
            scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)

        weights = torch.softmax(scores, dim=-1)
        weights = self.dropout(weights)
        context = torch.matmul(weights, v)
        context = context.transpose(1, 2).contiguous().view(batch, seq_len, embed_dim)
        return self.out_proj(context), weights
'''

HEADER = "import math\n\nimport torch\nfrom torch import nn\nfrom torch.nn import functional as F\n"

# Each style is a list of top-level blocks, so a copy can reorder them.
FUSED = [HEADER, '''
def causal_mask(seq_len, device=None):
    idx = torch.arange(seq_len, device=device)
    return idx[:, None] >= idx[None, :]
''', '''
def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.size(-1)
    logits = q @ k.transpose(-1, -2) * d ** -0.5
    if mask is not None:
        if mask.dtype is not torch.bool:
            raise TypeError("mask must be a bool tensor")
        try:
            torch.broadcast_shapes(mask.shape, logits.shape)
        except RuntimeError as err:
            raise ValueError(f"mask {tuple(mask.shape)} vs scores {tuple(logits.shape)}") from err
        logits = logits.masked_fill(mask.logical_not(), float("-inf"))
    probs = logits.softmax(dim=-1)
    return probs @ v, probs
''', '''
class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout_p=0.1):
        super().__init__()
        if embed_dim < 1 or num_heads < 1 or embed_dim % num_heads:
            raise ValueError(f"cannot split {embed_dim} features into {num_heads} heads")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x, attention_mask=None, causal=False):
        if x.dim() != 3:
            raise ValueError(f"expected x of shape [B, T, E], got {tuple(x.shape)}")
        B, T, E = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        keep = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if causal:
            keep = keep & causal_mask(T, x.device)
        keep = keep.expand(B, 1, T, T)
        if attention_mask is not None:
            if attention_mask.dtype != torch.bool:
                raise TypeError("attention_mask must be bool")
            if tuple(attention_mask.shape) != (B, T):
                raise ValueError(f"attention_mask must be [B, T], got {tuple(attention_mask.shape)}")
            keep = keep & attention_mask.view(B, 1, 1, T)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        att = att.masked_fill(~keep, torch.finfo(att.dtype).min).softmax(dim=-1)
        att = self.dropout(att)
        y = (att @ v).transpose(1, 2).reshape(B, T, E)
        return self.out_proj(y), att
''', '''
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    if causal and mask is not None:
        tri = causal_mask(q.size(-2), q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask & tri, dropout_p=dropout_p)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal)
''']

SEPARATE = [HEADER, '''
def causal_mask(seq_len, device=None):
    return torch.ones((seq_len, seq_len), dtype=torch.bool, device=device).tril()
''', '''
def scaled_dot_product_attention(q, k, v, mask=None):
    scale = 1.0 / math.sqrt(k.shape[-1])
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        if not mask.dtype == torch.bool:
            raise TypeError("the mask has to be boolean")
        if len(mask.shape) > len(scores.shape):
            raise ValueError("mask has too many dimensions")
        for m, s in zip(reversed(mask.shape), reversed(scores.shape)):
            if m not in (1, s):
                raise ValueError("mask shape does not broadcast")
        scores = torch.where(mask, scores, torch.full_like(scores, -1e9))
    weights = F.softmax(scores, dim=-1)
    out = torch.matmul(weights, v)
    return out, weights
''', '''
class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout_p=0.1):
        super().__init__()
        if embed_dim <= 0:
            raise ValueError("embed_dim must be > 0")
        if num_heads <= 0:
            raise ValueError("num_heads must be > 0")
        if embed_dim % num_heads != 0:
            raise ValueError("num_heads must divide embed_dim")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout_p)

    def _heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def _merge(self, t):
        b, h, n, d = t.shape
        return t.permute(0, 2, 1, 3).reshape(b, n, h * d)

    def forward(self, x, attention_mask=None, causal=False):
        if len(x.shape) != 3:
            raise ValueError("x must be 3-D")
        b, n, _ = x.shape
        q = self._heads(self.q_proj(x))
        k = self._heads(self.k_proj(x))
        v = self._heads(self.v_proj(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        mask = None
        if attention_mask is not None:
            if attention_mask.dtype != torch.bool:
                raise TypeError("attention_mask must be boolean")
            if attention_mask.shape != (b, n):
                raise ValueError("attention_mask must have shape [batch, seq_len]")
            mask = attention_mask[:, None, None, :]
        if causal:
            tri = causal_mask(n, device=x.device)[None, None]
            mask = tri if mask is None else mask & tri
        if mask is not None:
            scores = scores.masked_fill(mask == False, -1e9)
        weights = self.dropout(F.softmax(scores, dim=-1))
        return self.out_proj(self._merge(torch.matmul(weights, v))), weights
''', '''
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    attn_mask = mask
    if causal:
        tri = causal_mask(q.shape[-2], device=q.device)
        attn_mask = tri if attn_mask is None else attn_mask & tri
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p)
''']

EINSUM = [HEADER, '''
def causal_mask(seq_len, device=None):
    full = torch.full((seq_len, seq_len), True, device=device)
    return torch.tril(full)
''', '''
def scaled_dot_product_attention(q, k, v, mask=None):
    energy = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError(f"mask dtype {mask.dtype} is not torch.bool")
        try:
            mask = mask.expand_as(energy)
        except RuntimeError:
            raise ValueError(f"mask of shape {list(mask.shape)} cannot broadcast") from None
        energy = energy.masked_fill(~mask, -float("inf"))
    attn = torch.softmax(energy, dim=-1)
    return torch.einsum("...qk,...kd->...qd", attn, v), attn
''', '''
class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout_p=0.1):
        super().__init__()
        if not (embed_dim > 0 and num_heads > 0 and embed_dim % num_heads == 0):
            raise ValueError("embed_dim must be a positive multiple of num_heads")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.W_q = nn.Linear(embed_dim, embed_dim)
        self.W_k = nn.Linear(embed_dim, embed_dim)
        self.W_v = nn.Linear(embed_dim, embed_dim)
        self.W_o = nn.Linear(embed_dim, embed_dim)
        self.drop = nn.Dropout(dropout_p)

    def forward(self, x, attention_mask=None, causal=False):
        if x.ndim != 3:
            raise ValueError("need a [batch, time, channels] input")
        bsz, tlen, _ = x.shape
        split = lambda t: t.unflatten(-1, (self.num_heads, self.head_dim))
        q, k, v = split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x))
        energy = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_dim)
        allow = torch.ones(bsz, 1, tlen, tlen, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            if attention_mask.dtype != torch.bool:
                raise TypeError("attention_mask dtype must be torch.bool")
            if attention_mask.shape != (bsz, tlen):
                raise ValueError("attention_mask shape must be (batch, time)")
            allow = allow & attention_mask[:, None, None, :]
        if causal:
            allow = allow & causal_mask(tlen, x.device)
        energy = energy.masked_fill(allow.logical_not(), torch.finfo(energy.dtype).min)
        attn = self.drop(energy.softmax(-1))
        out = torch.einsum("bhqk,bkhd->bqhd", attn, v).flatten(-2)
        return self.W_o(out), attn
''', '''
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=causal)
    if causal:
        mask = mask & causal_mask(q.shape[-2], q.device)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
''']

# Two students who both hand in the lesson's own class, each with functions of their own.
LESSON_1 = [HEADER, '''
def causal_mask(seq_len: int, device: torch.device) -> torch.Tensor:
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))
''', '''
def scaled_dot_product_attention(q, k, v, mask=None):
    s = q.matmul(k.mT) / math.sqrt(q.shape[-1])
    if mask is not None:
        assert_bool = mask.dtype == torch.bool
        if not assert_bool:
            raise TypeError("bool mask please")
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w.matmul(v), w
''', LESSON_MHSA, '''
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    kw = {"dropout_p": dropout_p}
    if mask is not None and causal:
        kw["attn_mask"] = mask & causal_mask(q.size(-2), q.device)
    elif mask is not None:
        kw["attn_mask"] = mask
    else:
        kw["is_causal"] = causal
    return F.scaled_dot_product_attention(q, k, v, **kw)
''']

LESSON_2 = [HEADER, '''
def causal_mask(seq_len: int, device: torch.device) -> torch.Tensor:
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))
''', LESSON_MHSA, '''
def scaled_dot_product_attention(query, key, value, mask=None):
    dk = key.size(-1)
    raw = torch.bmm(query.flatten(0, -3), key.flatten(0, -3).transpose(1, 2)).view(
        *query.shape[:-1], key.shape[-2]) / dk ** 0.5
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError("mask dtype")
        raw = torch.where(mask, raw, raw.new_tensor(float("-inf")))
    p = torch.nn.functional.softmax(raw, dim=-1)
    return p @ value, p
''', '''
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    if causal:
        tri = causal_mask(q.shape[-2], q.device)
        mask = tri if mask is None else (mask & tri)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
''']


PARTIAL_OWN = ['''
def causal_mask(seq_len, device=None):
    rows = torch.arange(seq_len, device=device).unsqueeze(1)
    cols = torch.arange(seq_len, device=device).unsqueeze(0)
    return cols <= rows
''', '''
def scaled_dot_product_attention(q, k, v, mask=None):
    if mask is not None and mask.dtype != torch.bool:
        raise TypeError("expected a torch.bool mask")
    a = torch.matmul(q / math.sqrt(q.shape[-1]), k.swapaxes(-1, -2))
    if mask is not None:
        if torch.broadcast_shapes(mask.shape, a.shape) != a.shape:
            raise ValueError("mask does not fit the scores")
        a = a + torch.zeros_like(a).masked_fill(~mask, float("-inf"))
    a = torch.softmax(a, -1)
    return torch.matmul(a, v), a
''', '''
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    full = mask
    if causal:
        full = causal_mask(q.shape[-2], q.device) if full is None else full & causal_mask(q.shape[-2], q.device)
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=full, dropout_p=dropout_p)
''']


# Two more independent styles that share one small function and nothing else: the mask
# helper written by `looped_heads` (12 lines, about a fifth of the file) is pasted into
# `packed_bmm` with every name changed. The share of fingerprints stays under the
# threshold; the matched region is what flags it.
MASK_BIAS = '''
def additive_mask(mask, scores):
    if mask is None:
        return torch.zeros_like(scores)
    if mask.dtype is not torch.bool:
        raise TypeError(f"mask must be torch.bool, not {mask.dtype}")
    while mask.dim() < scores.dim():
        mask = mask.unsqueeze(0)
    if any(m not in (1, s) for m, s in zip(mask.shape, scores.shape)):
        raise ValueError(f"mask {tuple(mask.shape)} does not fit scores {tuple(scores.shape)}")
    bias = scores.new_zeros(mask.shape)
    bias = bias.masked_fill(mask.logical_not(), torch.finfo(scores.dtype).min)
    return bias.expand_as(scores)
'''

MASK_BIAS_COPY = '''
def bias_from(allowed, logits):
    if allowed is None:
        return torch.zeros_like(logits)
    if allowed.dtype is not torch.bool:
        raise TypeError(f"allowed has to be torch.bool, got {allowed.dtype}")
    while allowed.dim() < logits.dim():
        allowed = allowed.unsqueeze(0)
    if any(a not in (1, b) for a, b in zip(allowed.shape, logits.shape)):
        raise ValueError(f"cannot use {tuple(allowed.shape)} for {tuple(logits.shape)}")
    penalty = logits.new_zeros(allowed.shape)
    penalty = penalty.masked_fill(allowed.logical_not(), torch.finfo(logits.dtype).min)
    return penalty.expand_as(logits)
'''

LOOPED_HEADS = [HEADER, '''
def causal_mask(seq_len, device=None):
    above = torch.triu(torch.ones(seq_len, seq_len, device=device), diagonal=1)
    return above == 0
''', MASK_BIAS, '''
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)).div(math.sqrt(q.size(-1)))
    scores = scores + additive_mask(mask, scores)
    weights = scores.softmax(dim=-1)
    return weights.matmul(v), weights
''', '''
class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout_p=0.1):
        super().__init__()
        if num_heads < 1 or embed_dim < num_heads or embed_dim % num_heads:
            raise ValueError("num_heads has to split embed_dim evenly")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.heads = nn.ModuleList(
            nn.ModuleDict({"q": nn.Linear(embed_dim, self.head_dim),
                           "k": nn.Linear(embed_dim, self.head_dim),
                           "v": nn.Linear(embed_dim, self.head_dim)})
            for _ in range(num_heads))
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x, attention_mask=None, causal=False):
        if x.dim() != 3 or x.size(-1) != self.embed_dim:
            raise ValueError("x must be [batch, seq_len, embed_dim]")
        seq = x.size(1)
        allowed = None
        if attention_mask is not None:
            if attention_mask.dtype != torch.bool or attention_mask.shape != x.shape[:2]:
                raise ValueError("attention_mask must be a bool [batch, seq_len] tensor")
            allowed = attention_mask.unsqueeze(1)
        if causal:
            tri = causal_mask(seq, x.device)
            allowed = tri if allowed is None else allowed & tri
        outs, maps = [], []
        for head in self.heads:
            o, w = scaled_dot_product_attention(head["q"](x), head["k"](x), head["v"](x), allowed)
            outs.append(o)
            maps.append(self.dropout(w))
        return self.out_proj(torch.cat(outs, dim=-1)), torch.stack(maps, dim=1)
''', '''
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    if causal:
        lower = causal_mask(q.size(-2), q.device)
        mask = lower if mask is None else torch.logical_and(mask, lower)
    return F.scaled_dot_product_attention(q, k, v, mask, dropout_p)
''']

PACKED_BMM = [HEADER, '''
def causal_mask(seq_len, device=None):
    steps = torch.arange(seq_len, device=device)
    return steps.view(-1, 1).ge(steps.view(1, -1))
''', '''
def scaled_dot_product_attention(q, k, v, mask=None):
    *lead, n, dk = q.shape
    qs = q.reshape(-1, n, dk) * dk ** -0.5
    ks = k.reshape(-1, k.shape[-2], dk)
    sims = torch.bmm(qs, ks.transpose(1, 2)).reshape(*lead, n, k.shape[-2])
    sims = sims + bias_from(mask, sims)
    probs = F.softmax(sims, -1)
    mixed = torch.bmm(probs.reshape(-1, n, k.shape[-2]), v.reshape(-1, *v.shape[-2:]))
    return mixed.reshape(*lead, n, v.shape[-1]), probs
''', MASK_BIAS_COPY, '''
class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout_p=0.1):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError("bad embed_dim / num_heads")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.in_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        nn.init.xavier_uniform_(self.in_weight)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.p = dropout_p

    def forward(self, x, attention_mask=None, causal=False):
        if x.ndim != 3:
            raise ValueError("x: [batch, seq_len, embed_dim] expected")
        nb, nt, ne = x.shape
        packed = F.linear(x, self.in_weight, self.in_bias)
        packed = packed.unflatten(-1, (3, self.num_heads, self.head_dim)).permute(2, 0, 3, 1, 4)
        q, k, v = packed[0], packed[1], packed[2]
        allowed = torch.ones(nt, nt, dtype=torch.bool, device=x.device)
        if causal:
            allowed = allowed.tril()
        if attention_mask is not None:
            if attention_mask.dtype != torch.bool:
                raise TypeError("attention_mask: torch.bool please")
            if attention_mask.shape != (nb, nt):
                raise ValueError("attention_mask: [batch, seq_len] please")
            allowed = allowed & attention_mask[:, None, None, :]
        mixed, probs = scaled_dot_product_attention(q, k, v, allowed)
        probs = F.dropout(probs, self.p, self.training)
        mixed = probs @ v
        return self.out_proj(mixed.transpose(1, 2).flatten(2)), probs
''', '''
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    if mask is not None and causal:
        mask = mask.logical_and(causal_mask(q.shape[-2], q.device))
        causal = False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p,
                                          is_causal=causal)
''']


def renamed(blocks: list[str]) -> list[str]:
    """Every name the student chose, renamed (a find-and-replace a copier would do)."""
    names = {"logits": "sim", "probs": "att_p", "keep": "allowed_positions", "att": "alpha",
             "idx": "positions", "err": "problem", "B": "n_batch", "T": "n_tok", "E": "width",
             "y": "merged", "tri": "lower", "t": "tensor_", "d": "dim_k", "q": "query",
             "k": "key", "v": "value", "x": "inputs", "num_heads": "heads", "embed_dim": "width_",
             "head_dim": "per_head", "qkv": "to_qkv", "out_proj": "proj_out"}
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    return [pattern.sub(lambda m: names[m.group(1)], b) for b in blocks]


def commented(blocks: list[str]) -> list[str]:
    """Comments added, blank lines and indentation inside brackets changed."""
    out = []
    for b in blocks:
        lines = []
        for line in b.splitlines():
            lines.append(line.replace(", ", ",  ").replace("(q, k, v", "(\n        q,\n        k,\n        v"))
            if line.strip().endswith(":"):
                lines.append(" " * (len(line) - len(line.lstrip()) + 4) + "# my own comment here")
        out.append("# ---- a section ----\n" + "\n\n".join(lines) + "\n\n")
    return out


def notebook(blocks: list[str]) -> str:
    """The blocks pasted into a notebook, split over cells, with magics and outputs."""
    text = "".join(blocks)
    half = len(text.splitlines()) // 2
    lines = text.splitlines(keepends=True)
    cells = [["%matplotlib inline\n", "!pip list\n"], lines[:half], lines[half:], ["%timeit f()\n"]]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": 1,
         "source": src, "outputs": [{"output_type": "stream", "name": "stdout",
                                     "text": "".join(SEPARATE)}]}
        for i, src in enumerate(cells)]})


# (student, file name, text), and the pairs that share planted code.
def planted() -> tuple[list[tuple[str, str, str]], set[frozenset[str]]]:
    # its own functions, and the `separate` student's class, copied
    partial = [HEADER, PARTIAL_OWN[0], PARTIAL_OWN[1], SEPARATE[3], PARTIAL_OWN[2]]
    files = [
        ("fused", "attention.py", "".join(FUSED)),
        ("separate", "attention.py", "".join(SEPARATE)),
        ("einsum", "attention.py", "".join(EINSUM)),
        ("lesson_1", "attention.py", "".join(LESSON_1)),
        ("lesson_2", "attention.py", "".join(LESSON_2)),
        ("copy_renamed", "attention.py", "".join(renamed(FUSED))),
        ("copy_reordered", "attention.py", "".join([SEPARATE[0], SEPARATE[4], SEPARATE[3], SEPARATE[1], SEPARATE[2]])),
        ("copy_commented", "attention.py", "".join(commented(EINSUM))),
        ("copy_notebook", "attention.ipynb", notebook(renamed(FUSED[:1]) + FUSED[1:])),
        ("partial_one_function", "attention.py", "".join(partial)),
        ("looped_heads", "attention.py", "".join(LOOPED_HEADS)),
        ("packed_bmm", "attention.py", "".join(PACKED_BMM)),
    ]
    groups = [{"fused", "copy_renamed", "copy_notebook"}, {"separate", "copy_reordered"},
              {"einsum", "copy_commented"}]
    truth = {frozenset((a, b)) for g in groups for a in g for b in g if a < b}
    # one function (SEPARATE's class) is shared with both of the `separate` group
    truth |= {frozenset(("partial_one_function", "separate")),
              frozenset(("partial_one_function", "copy_reordered"))}
    # one small function (a mask helper, renamed) is all these two share
    truth.add(frozenset(("looped_heads", "packed_bmm")))
    return files, truth


def write(root: Path, files: list[tuple[str, str, str]]) -> Path:
    for student, name, text in files:
        (root / student).mkdir(parents=True, exist_ok=True)
        (root / student / name).write_text(text, encoding="utf-8")
    return root
