"""Fixtures for the naive baseline: one fresh `python -m pytest` per submission.

The hidden tests run against the submission *imported directly* into the pytest
process (no sandbox, no warm process): `student` is the loaded module itself (plus
`seed`, `spy` and `figures`, which the hidden tests use), `reference` is reference/attention.py
imported normally, `support` is the assignment's support module, `device` is the CPU,
`feedback` records nothing.

Which submission: the BENCH_SUBMISSION environment variable (a .py or .ipynb path).
A notebook's code cells are run in order with exec(), each in the same namespace; a
cell that raises is skipped, like nbclient with allow_errors. bench.py copies this
file next to copies of the hidden tests and runs pytest on that folder.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import os
import random
import sys
import types
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

os.environ.setdefault("MPLBACKEND", "Agg")  # as in the sandbox: figures are drawn off screen
REPO = Path(os.environ.get("BENCH_REPO") or Path(__file__).resolve().parents[2])


def _load_submission(path: Path) -> types.ModuleType:
    module = types.ModuleType("attention_submission")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    if path.suffix == ".ipynb":
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb.get("cells", []):
            if cell.get("cell_type") != "code":
                continue
            src = cell["source"]
            src = "".join(src) if isinstance(src, list) else src
            try:
                exec(compile(src, str(path), "exec"), module.__dict__)
            except Exception:
                pass
    else:
        try:
            exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
        except Exception:
            pass
    return module


class _Count:
    count = 0


class DirectStudent:
    """The module, plus the two helpers the hidden tests call on `student`."""

    def __init__(self, module: types.ModuleType) -> None:
        object.__setattr__(self, "_module", module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def __contains__(self, name: str) -> bool:
        return hasattr(self._module, name)

    def figures(self) -> _Figures:
        return _Figures()

    def seed(self, seed: int) -> None:
        torch.manual_seed(int(seed))
        random.seed(int(seed))

    @contextlib.contextmanager
    def spy(self, dotted: str) -> Iterator[_Count]:
        module_name, _, attr = dotted.rpartition(".")
        mod = importlib.import_module(module_name)
        original = getattr(mod, attr)
        counter = _Count()

        def counting(*args: Any, **kwargs: Any) -> Any:
            counter.count += 1
            return original(*args, **kwargs)

        patched = [k for k, v in vars(self._module).items() if v is original]
        setattr(mod, attr, counting)
        for k in patched:
            setattr(self._module, k, counting)
        try:
            yield counter
        finally:
            setattr(mod, attr, original)
            for k in patched:
                setattr(self._module, k, original)


class _Figures:
    """What `student.figures()` answers: the PNGs of the figures left open, then closed."""

    def __init__(self) -> None:
        self.figures: list[bytes] = []
        self.left_out: list[str] = []
        plt = sys.modules.get("matplotlib.pyplot")
        for num in plt.get_fignums() if plt is not None else ():
            buf = io.BytesIO()
            plt.figure(num).savefig(buf, format="png")
            plt.close(num)
            self.figures.append(buf.getvalue())


class _Feedback:
    def heatmaps(self, title: str, panels: list[dict[str, Any]]) -> None:
        pass

    def figures(self, batch: _Figures) -> None:
        pass

    def note(self, text: str) -> None:
        pass


@pytest.fixture(scope="session")
def _submission() -> types.ModuleType:
    return _load_submission(Path(os.environ["BENCH_SUBMISSION"]))


@pytest.fixture
def student(_submission: types.ModuleType) -> DirectStudent:
    return DirectStudent(_submission)


def _import_file(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def reference() -> types.ModuleType:
    return _import_file("bench_reference", REPO / "reference" / "attention.py")


@pytest.fixture(scope="session")
def support() -> types.ModuleType:
    """The assignment's support module (bench.py copies it here as bench_support.py)."""
    path = Path(__file__).with_name("bench_support.py")
    if not path.exists():
        pytest.fail("this test needs the assignment's support module, which bench.py did not copy")
    return _import_file("bench_support", path)


@pytest.fixture
def device() -> torch.device:
    return torch.device("cpu")


@pytest.fixture
def feedback() -> _Feedback:
    return _Feedback()


@pytest.fixture(autouse=True)
def _seed(request: pytest.FixtureRequest) -> None:
    seed = (1234 * 1_000_003 + zlib.crc32(request.node.nodeid.encode())) % (2**31)
    torch.manual_seed(seed)
    random.seed(seed)
