"""A submission's code, as the similarity stage sees it: read by the grading reader.

Modules and notebooks are read by `grader.intake.load.read_submission`, exactly as
grading reads them (no links, a size cap, PEP 263 decoding, nbformat validation); the
code is never run. A notebook's code cells are joined in order, each under a `# In[n]`
line of ours; IPython magics (`%...`, `!...`) are dropped, and so is a cell magic's
cell (`%%bash`...), except `%%time`, `%%timeit` and `%%capture`, whose code is Python.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.intake.discover import Submission
from grader.intake.load import read_submission

__all__ = ["Code", "join_cells", "submission_code"]

_PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture")


@dataclass(frozen=True)
class Code:
    """The text of one submission's code (or why there is none)."""

    student: str
    text: str
    """The module, or the notebook's code cells joined; what the pair pages show."""
    problem: str = ""
    """Why no code could be read (the grading reader's message); empty when read."""


def submission_code(sub: Submission) -> Code:
    loaded = read_submission(sub)
    if loaded.request is None:
        return Code(sub.id, "", loaded.failure or "no code was handed in")
    if loaded.kind == "notebook":
        return Code(sub.id, join_cells(loaded.request["cells"]))
    return Code(sub.id, str(loaded.request["source"]))


def join_cells(cells: list[str]) -> str:
    """Code cells in order, magics left out, each cell under a `# In[n]` comment."""
    parts = []
    for n, source in enumerate(cells, 1):
        lines = source.splitlines()
        if lines and lines[0].lstrip().startswith("%%"):
            if not lines[0].lstrip().startswith(_PYTHON_CELL_MAGICS):
                continue
            lines = lines[1:]
        kept = [line for line in lines if not line.lstrip().startswith(("%", "!"))]
        parts.append("\n".join([f"# In[{n}]", *kept]))
    return "\n\n".join(parts) + "\n"
