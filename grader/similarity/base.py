"""Base code: what every student was given, so sharing it is not copying.

Three sources, all removed from every submission's fingerprints before pairs are
compared:

- the assignment's starter files (what `grader kit` hands out);
- the files its YAML names under `similarity: {base: [...]}` (paths relative to the
  YAML), e.g. the lesson's code;
- the files given on the command line (`grader similar --base PATH`).

A `.py` file and a notebook are read as code; any other file (the lesson's text, a
Markdown page) is searched for code: its fenced blocks when it has some, else every
paragraph, or run of paragraphs, that Python parses as more than a bare name.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

from grader import yamltext
from grader.assignment import Assignment
from grader.errors import AssignmentError
from grader.intake.load import notebook_cells, read_source, read_text
from grader.similarity.fingerprint import K, kgram_hashes, normalise
from grader.similarity.source import join_cells

__all__ = ["base_hashes", "base_paths", "base_text", "lesson_code"]

_FENCE = re.compile(r"^```[ \t]*(?:python|py|ipython|python3)?[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_MAX_BASE_BYTES = 16 * 1024 * 1024


def base_paths(a: Assignment | None, extra: Sequence[Path] = ()) -> list[Path]:
    """The starters, the YAML's `similarity.base` and `extra`, each once, in that order."""
    found: list[Path] = []
    if a is not None:
        found += list(a.starter) + _yaml_base(a)
    found += [p.resolve() for p in extra]
    return list(dict.fromkeys(found))


def _yaml_base(a: Assignment) -> list[Path]:
    doc = yamltext.load(a.path.read_text(encoding="utf-8")) or {}
    listed = (doc.get("similarity") or {}).get("base") or []
    paths = [(a.path.parent / rel).resolve() for rel in listed]
    for i, path in enumerate(paths):
        if not path.is_file():
            raise AssignmentError(f"{a.path}: similarity.base.{i}: there is no file {path}")
    return paths


def base_text(path: Path) -> str:
    """The code in one base file (read by the same reader as submissions)."""
    if path.suffix == ".py":
        return read_source(path, _MAX_BASE_BYTES)[0]
    text = read_text(path, _MAX_BASE_BYTES)
    if path.suffix == ".ipynb":
        return join_cells(notebook_cells(path, text))
    return lesson_code(text)


def lesson_code(text: str) -> str:
    """The code in prose: fenced blocks, else the paragraphs that parse as Python."""
    fenced = _FENCE.findall(text)
    if fenced:
        return "\n\n".join(fenced)
    blocks: list[str] = []
    current = ""
    for para in re.split(r"\n[ \t]*\n", text):
        merged = f"{current}\n\n{para}" if current else para
        if current and _parses(merged):
            current = merged
        elif _is_code(para):
            blocks.append(current)
            current = para
        else:
            blocks.append(current)
            current = ""
    blocks.append(current)
    return "\n\n".join(textwrap.dedent(b) for b in blocks if b)


def _parses(text: str) -> bool:
    try:
        ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError):
        return False
    return True


def _is_code(para: str) -> bool:
    """Parses, and is more than prose that happens to parse (`Overview`, `Q, K, V`)."""
    if not _parses(para):
        return False
    tree = ast.parse(textwrap.dedent(para))
    return any(not isinstance(node, ast.Expr) or isinstance(node.value, ast.Call)
               for node in tree.body)


def base_hashes(texts: Iterable[str], k: int = K) -> frozenset[int]:
    """Every k-gram hash of the base code (all of them, not only the winnowed ones)."""
    found: set[int] = set()
    for text in texts:
        found.update(kgram_hashes(normalise(text).kinds, k))
    return frozenset(found)
