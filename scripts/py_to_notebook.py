"""Write a starter notebook from a starter module in the "percent" cell format.

    python scripts/py_to_notebook.py assignments/attention/starter/attention.py
    python scripts/py_to_notebook.py --check assignments/attention/starter/attention.py

The module is split at `# %%` lines (the cell markers VS Code, Spyder and Jupytext
read): `# %%` starts a code cell, `# %% [markdown]` a Markdown cell whose lines lose
their leading `# `. A module docstring before the first marker becomes the notebook's
first Markdown cell. The notebook (nbformat v4, validated) is written next to the module
with the suffix `.ipynb`, so an assignment's two starters say the same thing; `--check`
only tells whether the notebook on disk is up to date (exit 1 when it is not).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

MARKER = "# %%"
MARKDOWN = "# %% [markdown]"


def _header_cell(header: str) -> nbformat.NotebookNode | None:
    """The module docstring as Markdown, its first line as the title."""
    if not header.strip():
        return None
    doc = ast.get_docstring(ast.parse(header))
    if doc is None:
        return new_code_cell(header.strip("\n"))
    title, _, rest = doc.partition("\n")
    return new_markdown_cell(f"# {title.rstrip('.')}\n{rest}".rstrip())


def _markdown(lines: list[str]) -> str:
    return "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in lines).strip("\n")


def notebook_of(source: str) -> nbformat.NotebookNode:
    """The notebook for a percent-format module."""
    cells: list[nbformat.NotebookNode] = []
    header: list[str] = []
    kind, body = "", header
    chunks: list[tuple[str, list[str]]] = []
    for line in source.splitlines():
        if line.startswith(MARKER):
            kind, body = ("markdown" if line.startswith(MARKDOWN) else "code"), []
            chunks.append((kind, body))
        else:
            body.append(line)
    if (first := _header_cell("\n".join(header))) is not None:
        cells.append(first)
    for kind, lines in chunks:
        text = _markdown(lines) if kind == "markdown" else "\n".join(lines).strip("\n")
        if text.strip():
            cells.append(new_markdown_cell(text) if kind == "markdown" else new_code_cell(text))
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(nb)
    return nb


def _comparable(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in nb.cells]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"]
    if len(paths) != 1 or paths[0].suffix != ".py":
        print(__doc__, file=sys.stderr)
        return 64
    module = paths[0]
    target = module.with_suffix(".ipynb")
    nb = notebook_of(module.read_text(encoding="utf-8"))
    if check:
        current = nbformat.read(target, as_version=4) if target.is_file() else None
        if current is None or _comparable(current) != _comparable(nb):
            print(f"{target} is out of date: run python scripts/py_to_notebook.py {module}", file=sys.stderr)
            return 1
        return 0
    nbformat.write(nb, target)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
