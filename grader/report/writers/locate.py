"""Where in a student's files a failure points: a file and a line, for annotations.

In order: the deepest frame of the student's code in the test's traceback (a module's
`File "attention.py", line N`; a notebook's `<ipython-input-N-HASH>` frame, matched to
its code cell by IPython's hash of the cell's source, then to the line of the .ipynb
file); for a written answer, its key in answers.yaml; for a test that errored because
the code did not load, where loading failed; else line 1 of the graded file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from grader.results import EvidenceKind, Outcome, SubmissionResult, TestResult

if TYPE_CHECKING:
    from grader.intake.discover import Submission

__all__ = ["Location", "answers_line", "locate_test", "notebook_line", "relative_to"]

FRAME = re.compile(r'File "(?P<file>[^"\n]+)", line (?P<line>\d+)')
IPYTHON_FILE = re.compile(r"^<ipython-input-\d+-(?P<hash>[0-9a-f]{12})>$")


@dataclass(frozen=True)
class Location:
    path: Path | None
    """The student's file, or None when it is not known (`grader report`)."""
    line: int = 1


def locate_test(result: SubmissionResult, test: TestResult, sub: Submission | None,
                use_evidence: bool = True) -> Location:
    if sub is None:
        return Location(None)
    code = sub.notebook or sub.module
    if test.test_id.startswith("question:") and sub.answers is not None:
        return Location(sub.answers, answers_line(sub.answers, test.test_id.removeprefix("question:")))
    if code is None:
        return Location(sub.answers)
    texts = [str(ev.data.get("text", "")) for ev in test.evidence if ev.kind == EvidenceKind.TRACEBACK]
    line = next((n for text in reversed(texts) if (n := _code_line(text, code, None))), None)
    if use_evidence and line:
        return Location(code, line)
    if use_evidence and test.outcome == Outcome.ERROR and result.load.cell_errors:
        return Location(code, _load_error_line(result.load.cell_errors[-1], code) or 1)
    return Location(code)


def _code_line(traceback_text: str, code: Path, cell: int | None) -> int | None:
    """The line of `code` where the deepest student frame of the traceback is."""
    for match in reversed(list(FRAME.finditer(traceback_text))):
        name, line = match["file"], int(match["line"])
        if code.suffix != ".ipynb" and os.path.basename(name) == code.name:
            return line
        ipython = IPYTHON_FILE.match(name)
        if code.suffix == ".ipynb" and ipython:
            number = _cell_by_hash(code, ipython["hash"]) or cell
            return notebook_line(code, number, line) if number else None
    return None


def _load_error_line(error: dict[str, Any], code: Path) -> int | None:
    """A load error (a module that did not import, a notebook cell that raised)."""
    text = error.get("traceback", "")
    text = "\n".join(map(str, text)) if isinstance(text, list) else str(text)
    cell = error.get("cell") if isinstance(error.get("cell"), int) else None
    line = _code_line(text, code, cell)
    if line is None and cell and code.suffix == ".ipynb":
        return notebook_line(code, cell, 1)
    return line


# ------------------------------------------------------------------ notebooks


@dataclass(frozen=True)
class _Cell:
    source: str
    first_line: int
    """The .ipynb file's line holding the cell's first source line (1-based)."""
    one_line: bool
    """The source is stored as one JSON string, not a list of lines."""


@lru_cache(maxsize=64)
def _code_cells(path: Path) -> tuple[_Cell, ...]:
    try:
        text = path.read_text(encoding="utf-8")
        cells = [c for c in json.loads(text).get("cells", []) if c.get("cell_type") == "code"]
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return ()
    starts = _source_starts(text.splitlines())
    if len(starts) != len(cells):
        return ()  # not laid out as nbformat writes it: no line numbers, not wrong ones
    return tuple(_Cell(_joined(c.get("source", "")), start, one)
                 for c, (start, one) in zip(cells, starts))


def _joined(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _source_starts(lines: list[str]) -> list[tuple[int, bool]]:
    """For each code cell, in order: (line of its first source line, stored as one string)."""
    starts, in_code = [], False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith('"cell_type":'):
            in_code = '"code"' in stripped
        elif in_code and stripped.startswith('"source":'):
            one_line = not stripped.endswith("[")
            starts.append((number if one_line else number + 1, one_line))
            in_code = False
    return starts


def _cell_by_hash(path: Path, digest: str) -> int | None:
    for number, cell in enumerate(_code_cells(path), start=1):
        for variant in (cell.source, cell.source + "\n"):
            if hashlib.sha1(variant.encode("utf-8")).hexdigest()[:12] == digest:
                return number
    return None


def notebook_line(path: Path, cell: int, line_in_cell: int) -> int:
    """The .ipynb file's line for line `line_in_cell` of code cell `cell` (both 1-based)."""
    cells = _code_cells(path)
    if not 1 <= cell <= len(cells):
        return 1
    c = cells[cell - 1]
    if c.one_line:
        return c.first_line
    count = max(1, len(c.source.splitlines()))
    return c.first_line + min(max(line_in_cell, 1), count) - 1


# ------------------------------------------------------------------ answers.yaml


def answers_line(path: Path, question_id: str) -> int:
    """The line of the question's key in answers.yaml (its parent's, or 1, if missing)."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return 1
    line = 1
    for part in question_id.split("."):
        if not isinstance(node, yaml.MappingNode):
            break
        match = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
        if match is None:
            break
        line, node = match[0].start_mark.line + 1, match[1]
    return line


def relative_to(path: Path, root: Path) -> str:
    """`path` relative to the repository root, with / separators (absolute if outside)."""
    absolute = path.resolve()
    try:
        return absolute.relative_to(root.resolve()).as_posix()
    except ValueError:
        return absolute.as_posix()
