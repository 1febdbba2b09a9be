"""Our notebook runner (IPython in a forked child) against a real Jupyter kernel (nbclient)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader import assignment
from grader.intake.discover import discover
from grader.intake.load import read_submission
from grader.sandbox.host import Isolation, Sandbox
from grader.testing.student import Connection

ROOT = Path(__file__).resolve().parents[1]
CONTRACT_NAMES = {"causal_mask", "scaled_dot_product_attention", "MultiHeadSelfAttention", "sdpa_attention"}
CASES = ["correct_qkv_notebook", "notebook_cell_raises", "correct_wq_notebook",
         "lesson_plot_notebook", "notebook_imports_unknown_package"]


def _kernel_run(path: Path) -> tuple[list[tuple[int, str]], set[str]]:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("print(sorted(k for k in dir() if not k.startswith('_')))"))
    nbclient.NotebookClient(nb, timeout=120, allow_errors=True, kernel_name="python3").execute()
    errors, number = [], 0
    for cell in nb.cells[:-1]:
        if cell.cell_type != "code":
            continue
        number += 1
        errors += [(number, o["ename"]) for o in cell.outputs if o.get("output_type") == "error"]
    names = eval(nb.cells[-1].outputs[0]["text"])  # our own print of a list of str
    return errors, set(names) & CONTRACT_NAMES


def _our_run(path: Path) -> tuple[list[tuple[int, str]], set[str]]:
    a = assignment.load(ROOT / "assignments" / "attention" / "assignment.yaml", require_hidden=False)
    sub = discover(path.parent, a)[0]
    loaded = read_submission(sub)
    with Sandbox(Isolation.AUTO, a.limits) as box:
        conn = Connection(box, loaded.request, a.limits, sub.label)
        conn.begin_test(0)
        conn.request({"op": "has", "name": "causal_mask"})
        conn.close()
    load = conn.load
    return [(e["cell"], e["type"]) for e in load.cell_errors], set(load.defined) & CONTRACT_NAMES


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_same_errors_and_names_as_a_jupyter_kernel(case):
    path = ROOT / "tests" / "corpus" / case / "attention.ipynb"
    assert _our_run(path) == _kernel_run(path)
