"""Regenerate the notebook submissions of the test corpus and the README demo.

    python tests/corpus/_make_notebooks.py

Writes (relative to the repository root):

    tests/corpus/correct_qkv_notebook/attention.ipynb
    tests/corpus/correct_wq_notebook/attention.ipynb
    tests/corpus/notebook_cell_raises/attention.ipynb
    tests/corpus/lesson_plot_notebook/attention.ipynb
    tests/corpus/notebook_imports_unknown_package/attention.ipynb
    tests/corpus/both_module_and_notebook/attention.ipynb
    tests/corpus/invalid_notebook_json/attention.ipynb    (not JSON: merge-conflict markers)
    tests/corpus/notebook_bad_schema/attention.ipynb      (JSON, but not a notebook)
    tests/corpus_files/bob.ipynb
    examples/submissions/binh_tran/attention.ipynb

Only the notebooks are written; each folder's attention.py / answers.yaml /
expected.yaml are kept as files in the repository.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"

# --------------------------------------------------------------------------------------
# Code cells shared by the notebooks
# --------------------------------------------------------------------------------------

IMPORTS = """\
import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
print(torch.__version__)
"""

CAUSAL_MASK = """\
def causal_mask(seq_len, device=None):
    \"\"\"True = query i may attend key j (j <= i).\"\"\"
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


causal_mask(5)
"""

SDPA_MANUAL = """\
def scaled_dot_product_attention(q, k, v, mask=None):
    \"\"\"softmax(q k^T / sqrt(d)) v; mask: bool, True = may attend. Returns (output, weights).\"\"\"
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same last dimension")
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError("attention mask must be boolean, where True means allowed")
        try:
            shape = torch.broadcast_shapes(mask.shape, scores.shape)
        except RuntimeError:
            shape = None
        if shape != scores.shape:
            raise ValueError(f"mask of shape {tuple(mask.shape)} does not fit {tuple(scores.shape)}")
        scores = scores.masked_fill(~mask.to(scores.device), torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights
"""

MHSA_QKV = """\
class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout_p=0.1):
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

    def _normalize_mask(self, mask, batch, seq_len, device):
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

    def forward(self, x, attention_mask=None, causal=False):
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
            scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)

        weights = torch.softmax(scores, dim=-1)
        weights = self.dropout(weights)
        context = torch.matmul(weights, v)
        context = context.transpose(1, 2).contiguous().view(batch, seq_len, embed_dim)
        return self.out_proj(context), weights
"""

SDPA_TORCH = """\
def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    \"\"\"Bài 5: the same attention with F.scaled_dot_product_attention (True = may attend).\"\"\"
    attn_mask = None
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError("attention mask must be boolean, where True means allowed")
        attn_mask = mask.to(q.device)
    if causal and attn_mask is not None:
        future_ok = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        attn_mask = attn_mask & future_ok
        causal = False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=causal)
"""

DEMO = """\
model = MultiHeadSelfAttention(embed_dim=64, num_heads=4, dropout_p=0.1)
model.eval()
x = torch.randn(2, 5, 64)
padding_mask = torch.tensor(
    [[True, True, True, False, False], [True, True, True, True, True]], dtype=torch.bool
)
out, weights = model(x, attention_mask=padding_mask)
print("output.shape :", out.shape)
print("weights.shape:", weights.shape)
print("device:", out.device, " dtype:", out.dtype)
print("PAD weights of batch 0:", weights[0, :, :, 3:].abs().max().item())
"""

DEMO_CAUSAL = """\
_, causal_weights = model(x, causal=True)
print(causal_weights[0, 0])
print("above the diagonal:", torch.triu(causal_weights[0, 0], diagonal=1).abs().max().item())
"""

# The W_q / W_k / W_v / W_o variant: head helpers in their own cell.
HEAD_HELPERS = """\
def split_heads(t, num_heads):
    \"\"\"[B, T, E] -> [B, H, T, E/H]\"\"\"
    b, n, e = t.shape
    return t.view(b, n, num_heads, e // num_heads).transpose(1, 2)


def merge_heads(t):
    \"\"\"[B, H, T, D] -> [B, T, H*D]\"\"\"
    b, h, n, d = t.shape
    return t.transpose(1, 2).reshape(b, n, h * d)
"""

MHSA_WQ = """\
class MultiHeadSelfAttention(nn.Module):
    \"\"\"Self-attention with four projections W_q, W_k, W_v, W_o.\"\"\"

    def __init__(self, embed_dim, num_heads, dropout_p=0.1):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError("embed_dim, num_heads phải > 0")
        if embed_dim % num_heads:
            raise ValueError("embed_dim phải chia hết cho num_heads")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.W_q = nn.Linear(embed_dim, embed_dim)
        self.W_k = nn.Linear(embed_dim, embed_dim)
        self.W_v = nn.Linear(embed_dim, embed_dim)
        self.W_o = nn.Linear(embed_dim, embed_dim)
        self.drop = nn.Dropout(dropout_p)

    def forward(self, x, attention_mask=None, causal=False):
        if x.dim() != 3:
            raise ValueError(f"x phải là [batch, seq_len, embed_dim], nhận {tuple(x.shape)}")
        b, n, e = x.shape
        if e != self.embed_dim:
            raise ValueError(f"embed_dim {e} != {self.embed_dim}")
        q = split_heads(self.W_q(x), self.num_heads)
        k = split_heads(self.W_k(x), self.num_heads)
        v = split_heads(self.W_v(x), self.num_heads)
        scores = q @ k.transpose(-1, -2) / self.head_dim ** 0.5

        keep = torch.ones(1, 1, n, n, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            if attention_mask.dtype != torch.bool:
                raise TypeError("attention_mask phải là bool")
            if attention_mask.shape != (b, n):
                raise ValueError(f"attention_mask shape {tuple(attention_mask.shape)}, cần {(b, n)}")
            keep = keep & attention_mask.to(x.device)[:, None, None, :]
        if causal:
            keep = keep & causal_mask(n, device=x.device)
        scores = torch.where(keep, scores, torch.full_like(scores, float("-inf")))

        attn = self.drop(torch.softmax(scores, dim=-1))
        return self.W_o(merge_heads(attn @ v)), attn
"""

SDPA_TORCH_WQ = """\
from torch.nn.functional import scaled_dot_product_attention as fused_attention


def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):
    if mask is not None and mask.dtype != torch.bool:
        raise TypeError("mask phải là bool, True = được attend")
    if mask is not None and causal:
        lower = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril()
        mask, causal = mask.to(q.device) & lower, False
    elif mask is not None:
        mask = mask.to(q.device)
    return fused_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal)
"""

DEMO_DROPOUT = """\
model.train()
a = model(x)[0]
b = model(x)[0]
print("train() gives different outputs:", not torch.equal(a, b))
model.eval()
print("eval() gives the same output:", torch.equal(model(x)[0], model(x)[0]))
"""


# The lesson's section 7, "Visualize Attention", as students copy it, then a call on
# their own module's weights.
PLOT_ATTENTION = """\
import matplotlib.pyplot as plt
import seaborn as sns

def plot_attention(attn_weights, tokens, head=0):
    \"\"\"Plot attention heatmap cho head cụ thể\"\"\"
    fig, ax = plt.subplots(figsize=(8, 6))
    # attn_weights: (batch, heads, seq, seq)
    weights = attn_weights[0, head].detach().numpy()
    sns.heatmap(weights, xticklabels=tokens, yticklabels=tokens,
                cmap='Blues', ax=ax)
    ax.set_title(f'Attention Head {head}')
    plt.tight_layout()
    plt.show()

# Ví dụ
tokens = ["The", "cat", "sat", "on", "the", "mat"]
"""

PLOT_CALL = """\
model = MultiHeadSelfAttention(embed_dim=64, num_heads=4, dropout_p=0.0).eval()
_, attn_weights = model(torch.randn(1, len(tokens), 64), causal=True)
plot_attention(attn_weights, tokens, head=0)
"""


def md(text: str):
    return new_markdown_cell(text)


def code(text: str):
    return new_code_cell(text.rstrip("\n"))


def notebook(cells) -> nbformat.NotebookNode:
    nb = new_notebook(cells=cells)
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:02d}"  # fixed ids: regenerating gives the same files
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def qkv_notebook() -> nbformat.NotebookNode:
    return notebook([
        md("# Day 13 — Attention Mechanism\n\nBài tập: multi-head self-attention bằng PyTorch."),
        code(IMPORTS),
        md("## Causal mask\n\nQuery ở vị trí i chỉ được nhìn key ở vị trí <= i."),
        code(CAUSAL_MASK),
        md("## Scaled dot-product attention\n\n$\\mathrm{softmax}(QK^T/\\sqrt{d_k})V$"),
        code(SDPA_MANUAL),
        md("## Multi-head self-attention (layout `qkv` + `out_proj`, như bài học)"),
        code(MHSA_QKV),
        md("## Bài 5: PyTorch SDPA"),
        code(SDPA_TORCH),
        md("## Bài 1–3: shapes, padding mask, causal mask"),
        code(DEMO),
        code(DEMO_CAUSAL),
    ])


def wq_notebook() -> nbformat.NotebookNode:
    return notebook([
        md("# Attention, day 13\n\nMy notes: Q = what I look for, K = how I am found, V = what I pass on."),
        code(IMPORTS),
        md("### Helpers: splitting and merging heads"),
        code(HEAD_HELPERS),
        md("### Causal mask"),
        code(CAUSAL_MASK),
        md("### The attention function"),
        code(SDPA_MANUAL),
        md("### The module (W_q, W_k, W_v, W_o)"),
        code(MHSA_WQ),
        md("### Exercise 5: fused SDPA"),
        code(SDPA_TORCH_WQ),
        md("### Demo"),
        code(DEMO),
        code(DEMO_DROPOUT),
        md("Memory: 8 × 16 × 4096² × 2 bytes = 4 GiB just for the weights."),
    ])


def cell_raises_notebook() -> nbformat.NotebookNode:
    # code cells 1 and 2 define everything; code cell 3 raises NameError (`mdl` is a typo).
    return notebook([
        md("# Day 13 attention"),
        code(IMPORTS + "\n\n" + CAUSAL_MASK + "\n\n" + SDPA_MANUAL + "\n\n" + SDPA_TORCH),
        code(MHSA_QKV),
        md("Demo"),
        code("model = MultiHeadSelfAttention(64, 4).eval()\nx = torch.randn(2, 5, 64)\n"
             "out, weights = mdl(x)\nprint(out.shape, weights.shape)"),
        code("print('shapes look right')"),
    ])


def lesson_plot_notebook() -> nbformat.NotebookNode:
    """The qkv notebook plus the lesson's plot: its heatmap must reach the report."""
    nb = qkv_notebook()
    nb.cells += [md("## 7. Visualize Attention"), code(PLOT_ATTENTION), code(PLOT_CALL)]
    return notebook(nb.cells)


def unknown_package_notebook() -> nbformat.NotebookNode:
    """The qkv notebook with a cell that imports a package outside the environment."""
    nb = qkv_notebook()
    nb.cells += [md("Trying a package I have at home"),
                 code("import notapackage\nnotapackage.plot()")]
    return notebook(nb.cells)


def bob_notebook() -> nbformat.NotebookNode:
    return notebook([
        md("# Bob — day 13"),
        code(IMPORTS),
        code(CAUSAL_MASK + "\n\n" + SDPA_MANUAL),
        code(MHSA_QKV),
        code(SDPA_TORCH),
        code(DEMO),
    ])


def write(nb: nbformat.NotebookNode, path: Path) -> None:
    nbformat.validate(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def conflicted_json(nb: nbformat.NotebookNode) -> str:
    """A notebook saved in the middle of a git merge: conflict markers make it invalid JSON."""
    lines = nbformat.writes(nb).splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith('"import math')) - 1
    return "\n".join(
        lines[:at]
        + ["<<<<<<< HEAD"]
        + lines[at:at + 3]
        + ["=======", '   "source": [', '    "import torch\\n",', '    "import math\\n",', ">>>>>>> origin/main"]
        + lines[at + 3:]
    ) + "\n"


def not_a_notebook() -> str:
    """Valid JSON, but no notebook: the student exported their run log instead."""
    return json.dumps(
        {
            "run": "attention_demo.py",
            "output_shape": [2, 5, 64],
            "weights_shape": [2, 4, 5, 5],
            "cells": "model = MultiHeadSelfAttention(64, 4)",
        },
        indent=1,
    ) + "\n"


def main() -> None:
    write(qkv_notebook(), CORPUS / "correct_qkv_notebook" / "attention.ipynb")
    write(wq_notebook(), CORPUS / "correct_wq_notebook" / "attention.ipynb")
    write(cell_raises_notebook(), CORPUS / "notebook_cell_raises" / "attention.ipynb")
    write(qkv_notebook(), CORPUS / "both_module_and_notebook" / "attention.ipynb")
    write(lesson_plot_notebook(), CORPUS / "lesson_plot_notebook" / "attention.ipynb")
    write(unknown_package_notebook(), CORPUS / "notebook_imports_unknown_package" / "attention.ipynb")
    write(bob_notebook(), ROOT / "tests" / "corpus_files" / "bob.ipynb")
    write(wq_notebook(), ROOT / "examples" / "submissions" / "binh_tran" / "attention.ipynb")
    (CORPUS / "invalid_notebook_json").mkdir(parents=True, exist_ok=True)
    (CORPUS / "invalid_notebook_json" / "attention.ipynb").write_text(
        conflicted_json(qkv_notebook()), encoding="utf-8"
    )
    (CORPUS / "notebook_bad_schema").mkdir(parents=True, exist_ok=True)
    (CORPUS / "notebook_bad_schema" / "attention.ipynb").write_text(not_a_notebook(), encoding="utf-8")


if __name__ == "__main__":
    main()
