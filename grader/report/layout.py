"""Plain text fitted to a terminal's width: wrapped at spaces, a word is never cut.

Shared by `grader grade`'s class table (`summary.py`) and `grader check`'s table
(`terminal.py`). Widths are counted in characters (one column each).
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterable

__all__ = ["FALLBACK_WIDTH", "terminal_width", "widest", "wrap"]

FALLBACK_WIDTH = 100
"""Columns assumed when the output is not a terminal and $COLUMNS is not set."""


def terminal_width(fallback: int = FALLBACK_WIDTH) -> int:
    """The terminal's columns: $COLUMNS when set, else the terminal's size, else `fallback`."""
    return shutil.get_terminal_size((fallback, 24)).columns


def wrap(text: str, width: int, indent: str = "", hang: str | None = None) -> list[str]:
    """`text` in lines of at most `width` columns, broken at spaces only; a word longer
    than a line stays whole on a line of its own. `hang` indents the lines after the first
    (default: `indent`)."""
    hang = indent if hang is None else hang
    if max(len(indent), len(hang)) >= width:
        indent = hang = ""
    lines = textwrap.wrap(text, max(width, 1), initial_indent=indent, subsequent_indent=hang,
                          break_long_words=False, break_on_hyphens=False)
    return lines or [indent.rstrip()]


def widest(lines: Iterable[str]) -> int:
    return max((len(line) for line in lines), default=0)
