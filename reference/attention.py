"""Reference solution of the `attention` assignment (Day 13: Attention mechanism).

Implements the names of the contract (`/work/shared/attention-contract.md`, section 1):
`causal_mask`, `scaled_dot_product_attention`, `MultiHeadSelfAttention` (projection
layout 1: `qkv` + `out_proj`) and `sdpa_attention`. Masks are boolean with True = may
attend. Nothing here looks at tensor values to decide what to do, so every function
also runs on the `meta` device (shape checks only; a query row with every key masked
gets uniform weights instead of an error).

`map_state_dict`, `weights_for` and `seeded_module` are for the hidden tests, not for
students: the first copies a reference module's weights into a submission's
`state_dict()`, whichever of the contract's three projection layouts it uses; the second
does so for a submission's module, also under every other name it gives the same
tensors; the third builds a reference module with deterministic weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "causal_mask",
    "scaled_dot_product_attention",
    "MultiHeadSelfAttention",
    "sdpa_attention",
    "map_state_dict",
    "weights_for",
    "seeded_module",
    "LAYOUTS",
]


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """[seq_len, seq_len] bool, True on and below the diagonal (query i sees keys <= i)."""
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def _check_bool(mask: object) -> torch.Tensor:
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a bool tensor (True = may attend), got {got}")
    return mask


def _broadcasts_to(shape: torch.Size, target: torch.Size) -> bool:
    """Whether a tensor of `shape` broadcasts to `target` without changing it."""
    if len(shape) > len(target):
        return False
    tail = target[len(target) - len(shape) :]
    return all(s in (1, t) for s, t in zip(shape, tail, strict=True))


def _masked_scores(scores: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    if allowed is None:
        return scores
    return scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d)) v; returns (output [..., Tq, Dv], weights [..., Tq, Tk])."""
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        mask = _check_bool(mask).to(scores.device)
        if not _broadcasts_to(mask.shape, scores.shape):
            raise ValueError(
                f"mask of shape {list(mask.shape)} does not broadcast to the scores'"
                f" shape {list(scores.shape)}"
            )
    weights = torch.softmax(_masked_scores(scores, mask), dim=-1)
    return torch.matmul(weights, v), weights


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention with a fused `qkv` projection and `out_proj`."""

    def __init__(self, embed_dim: int, num_heads: int, dropout_p: float = 0.1) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be positive, got {embed_dim} and {num_heads}"
            )
        if embed_dim % num_heads != 0:
            raise ValueError(
                f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}"
            )
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout_p)

    def _allowed(self, mask: torch.Tensor, batch: int, seq_len: int, device: torch.device) -> torch.Tensor:
        """The mask as [B, 1 or H, 1 or T, T] on `device`; True = may attend."""
        mask = _check_bool(mask).to(device)
        shape = tuple(mask.shape)
        if shape == (batch, seq_len):
            return mask[:, None, None, :]
        if shape in {
            (batch, 1, 1, seq_len),
            (batch, 1, seq_len, seq_len),
            (batch, self.num_heads, seq_len, seq_len),
        }:
            return mask
        raise ValueError(
            f"attention_mask has shape {list(shape)}; expected [{batch}, {seq_len}]"
            f" (or [B, 1, 1, T], [B, 1, T, T], [B, H, T, T])"
        )

    def forward(
        self,
        x: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        causal: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if x.dim() != 3:
            raise ValueError(f"x must be [batch, seq_len, embed_dim], got shape {list(x.shape)}")
        batch, seq_len, embed_dim = x.shape
        if embed_dim != self.embed_dim:
            raise ValueError(f"expected embed_dim={self.embed_dim}, got {embed_dim}")

        qkv = self.qkv(x).view(batch, seq_len, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each [B, H, T, D]
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)

        allowed = None
        if attention_mask is not None:
            allowed = self._allowed(attention_mask, batch, seq_len, x.device)
        if causal:
            up_to_query = causal_mask(seq_len, device=x.device)
            allowed = up_to_query if allowed is None else allowed & up_to_query

        weights = self.dropout(torch.softmax(_masked_scores(scores, allowed), dim=-1))
        context = torch.matmul(weights, v).transpose(1, 2).reshape(batch, seq_len, embed_dim)
        return self.out_proj(context), weights


def sdpa_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """The same attention through `torch.nn.functional.scaled_dot_product_attention`."""
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=causal)
    mask = _check_bool(mask).to(q.device)
    if causal:  # many PyTorch versions refuse attn_mask with is_causal=True: combine here
        top_left = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device)
        mask = mask & top_left.tril()  # what is_causal=True means, also when Tq != Tk
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)


# --- for the hidden tests --------------------------------------------------------------

LAYOUTS: dict[str, tuple[str, ...]] = {
    "qkv": ("qkv", "out_proj"),
    "W_q": ("W_q", "W_k", "W_v", "W_o"),
    "q_proj": ("q_proj", "k_proj", "v_proj", "out_proj"),
}
"""The contract's projection layouts, by the name that identifies each."""


def seeded_module(embed_dim: int, num_heads: int, seed: int = 0) -> MultiHeadSelfAttention:
    """A reference module in eval() with dropout off and weights drawn from `seed`.

    Weights have std 1/sqrt(embed_dim), biases std 0.1: scores of about unit size, so
    the weights are neither uniform nor one-hot and common bugs change them visibly.
    The global RNG is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        module = MultiHeadSelfAttention(embed_dim, num_heads, dropout_p=0.0)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in module.named_parameters():
            scale = embed_dim**-0.5 if name.endswith("weight") else 0.1
            param.copy_(torch.randn(param.shape, generator=generator) * scale)
    return module.eval()


def _find_key(
    keys: list[str], layer: str, param: str, shared: Sequence[Sequence[str]] = ()
) -> str | None:
    """The key of `layer.param`, at the top level or under one submodule prefix (or
    several prefixes that all name the same tensor)."""
    exact = f"{layer}.{param}"
    if exact in keys:
        return exact
    nested = [key for key in keys if key.endswith("." + exact)]
    if len(nested) == 1:
        return nested[0]
    if nested and any(set(nested) <= set(group) for group in shared):
        return nested[0]  # one tensor under several prefixes
    return None


def _layout_of(keys: list[str], shared: Sequence[Sequence[str]] = ()) -> str | None:
    for name, layers in LAYOUTS.items():
        if all(_find_key(keys, layer, "weight", shared) for layer in layers):
            return name
    return None


def weights_for(module: Any, reference_module: MultiHeadSelfAttention) -> dict[str, torch.Tensor]:
    """The state dict that gives a submission's `module` (the `student` fixture's object)
    `reference_module`'s projections: `map_state_dict` of its state, with every other
    name of the same tensors (a layer registered twice, `self.in_proj = self.qkv`, as
    weight-tying code does) given the same values, so a stale alias loaded last cannot
    undo them. Load it with `module.load_state_dict(...)`."""
    state = module.state_dict()
    return map_state_dict(state, reference_module, shared_entries(module, state))


def shared_entries(module: Any, state: dict[str, torch.Tensor]) -> list[tuple[str, ...]]:
    """Groups of `state`'s keys that name one tensor of `module`, found through the
    module's own `load_state_dict`: each floating entry is loaded with a value of its
    own, and the keys that read back the same value share their storage (the last one
    loaded wins for all of them). Only asked when the keys are not exactly one
    layout's: a module with just its projections has nothing to share."""
    floating = [k for k, v in state.items() if torch.is_tensor(v) and v.is_floating_point()]
    if set(floating) in _LAYOUT_KEYS:
        return []
    probe = dict(state)
    for i, key in enumerate(floating):
        probe[key] = torch.full_like(state[key], float(i + 1))
    module.load_state_dict(probe)
    back = module.state_dict()
    groups: dict[float, list[str]] = {}
    for key in floating:
        marker = _constant(back.get(key))
        if marker is not None:
            groups.setdefault(marker, []).append(key)
    return [tuple(keys) for keys in groups.values() if len(keys) > 1]


def _constant(value: object) -> float | None:
    """The one value every element of a tensor holds, else None."""
    if not torch.is_tensor(value) or value.numel() == 0:
        return None
    first = value.flatten()[0]
    return float(first) if bool((value == first).all()) else None


_LAYOUT_KEYS = [
    {f"{layer}.{param}" for layer in layers for param in ("weight", "bias")}
    for layers in LAYOUTS.values()
]


def map_state_dict(
    student_state: dict[str, torch.Tensor],
    reference_module: MultiHeadSelfAttention,
    shared: Sequence[Sequence[str]] = (),
) -> dict[str, torch.Tensor]:
    """`student_state` with its projections replaced by `reference_module`'s weights.

    The layout is read from the keys (`qkv`+`out_proj`, `W_q..W_o`, or
    `q_proj..out_proj`); every other entry (buffers, extra parameters) is kept as is,
    except the keys `shared` groups with a projection's (other names of the same
    tensor, see `shared_entries`), which get its new value too.
    Raises ValueError with a message for the student when no layout fits.
    """
    keys = list(student_state)
    layout = _layout_of(keys, shared)
    if layout is None:
        shown = ", ".join(keys[:12]) or "nothing"
        raise ValueError(
            "could not find the projections: MultiHeadSelfAttention must use nn.Linear"
            " layers named qkv + out_proj, or W_q, W_k, W_v, W_o, or q_proj, k_proj,"
            f" v_proj, out_proj (its state_dict has: {shown})."
        )
    E = reference_module.embed_dim
    w_q, w_k, w_v = reference_module.qkv.weight.detach().split(E, dim=0)
    b_q, b_k, b_v = reference_module.qkv.bias.detach().split(E, dim=0)
    w_o = reference_module.out_proj.weight.detach()
    b_o = reference_module.out_proj.bias.detach()
    if layout == "qkv":
        values = {"qkv": (torch.cat([w_q, w_k, w_v]), torch.cat([b_q, b_k, b_v])), "out_proj": (w_o, b_o)}
    else:
        names = LAYOUTS[layout]
        values = dict(zip(names, [(w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o)], strict=True))

    mapped = dict(student_state)
    replaced: list[str] = []
    for layer, (weight, bias) in values.items():
        for param, value in (("weight", weight), ("bias", bias)):
            key = _find_key(keys, layer, param, shared)
            if key is None:
                raise ValueError(
                    f"{layer} has no {param}: the projections must be nn.Linear with bias."
                )
            own = student_state[key]
            if tuple(own.shape) != tuple(value.shape):
                raise ValueError(
                    f"{key} has shape {list(own.shape)}, expected {list(value.shape)}"
                    f" for embed_dim={E}."
                )
            mapped[key] = value.to(device=own.device, dtype=own.dtype).clone()
            replaced.append(key)
    for group in shared:
        sources = [key for key in group if key in replaced]
        if len(sources) == 1:  # two projections in one tensor is the module's own bug
            for key in group:
                mapped[key] = mapped[sources[0]].clone()
    return mapped
