"""The hidden tests give a submission's module the reference's weights (`weights_for`):
whatever layout it uses, and under every name it gives the same tensor."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
E, H = 32, 4


def _reference() -> ModuleType:
    path = ROOT / "reference" / "attention.py"
    spec = importlib.util.spec_from_file_location("reference_for_mapping", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REF = _reference()


class Remote:
    """A module as the `student` fixture shows it: its state dict crosses as copies (in
    one process, a state dict's tensors share storage with the parameters, and an alias
    would follow its layer by itself)."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.module.state_dict().items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> Any:
        return self.module.load_state_dict({k: v.clone() for k, v in state.items()})


class Counting(REF.MultiHeadSelfAttention):  # type: ignore[name-defined,misc]
    """The reference's own module, counting how often its weights are loaded."""

    loads = 0

    def load_state_dict(self, *args: Any, **kwargs: Any) -> Any:
        type(self).loads += 1
        return super().load_state_dict(*args, **kwargs)


class AliasAfter(Counting):
    """The contract's name first, then a second name for the same layer (the issue's case)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_proj = self.qkv


class AliasFirst(nn.Module):
    """The other name registered first: the contract's `qkv` is the alias."""

    def __init__(self, embed_dim: int, num_heads: int, dropout_p: float = 0.0) -> None:
        super().__init__()
        self.in_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.inner = REF.MultiHeadSelfAttention(embed_dim, num_heads, dropout_p)
        self.inner.qkv = self.in_proj

    def forward(self, x: torch.Tensor) -> Any:
        return self.inner(x)


class Twice(nn.Module):
    """A whole attention module registered under two prefixes."""

    def __init__(self, embed_dim: int, num_heads: int, dropout_p: float = 0.0) -> None:
        super().__init__()
        self.attn = REF.MultiHeadSelfAttention(embed_dim, num_heads, dropout_p)
        self.same_attn = self.attn

    def forward(self, x: torch.Tensor) -> Any:
        return self.same_attn(x)


class Holder(nn.Module):
    def __init__(self, weight: nn.Parameter) -> None:
        super().__init__()
        self.weight = weight


class TiedParameter(Counting):
    """One Parameter (not a layer) registered again, in a submodule loaded after it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tied = Holder(self.out_proj.weight)


@pytest.mark.parametrize("cls", [AliasAfter, AliasFirst, Twice, TiedParameter])
def test_every_name_of_a_projection_gets_the_reference_weights(cls: type[nn.Module]) -> None:
    ref = REF.seeded_module(E, H, seed=0)
    mine = cls(E, H, dropout_p=0.0).eval()
    remote = Remote(mine)
    remote.load_state_dict(REF.weights_for(remote, ref))
    x = torch.randn(2, 6, E, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(mine(x)[0], ref(x)[0])


def test_a_module_with_only_its_projections_is_not_probed() -> None:
    mine = Counting(E, H, dropout_p=0.0)
    Counting.loads = 0
    REF.weights_for(Remote(mine), REF.seeded_module(E, H, seed=0))
    assert Counting.loads == 0


def test_two_projections_in_one_tensor_stay_the_modules_own_bug() -> None:
    """W_k tied to W_q is a bug of the submission's: no value is chosen for it."""

    class TiedQK(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.W_q, self.W_v, self.W_o = (nn.Linear(E, E) for _ in range(3))
            self.W_k = self.W_q

    mine = TiedQK()
    mapped = REF.weights_for(Remote(mine), REF.seeded_module(E, H, seed=0))
    Remote(mine).load_state_dict(mapped)
    assert torch.equal(mine.W_q.weight, mapped["W_k.weight"])  # the last one loaded wins
    assert not torch.equal(mapped["W_q.weight"], mapped["W_k.weight"])
