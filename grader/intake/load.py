"""Loading a submission on the grader's side: reading files into a load request.

Reading and validating happen here (nbformat for notebooks); *running* the code is the
child's job. Files are read without following links, with a size cap. A module is
decoded as Python decodes it (PEP 263: the encoding its first two lines declare, else
UTF-8); notebooks and answers are UTF-8.
"""

from __future__ import annotations

import codecs
import io
import json
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.errors import UnreadableSubmission
from grader.intake.discover import Submission
from grader.intake.read import MAX_ANSWERS_BYTES, MAX_CODE_BYTES, MAX_NOTEBOOK_BYTES, read_bytes


@dataclass(frozen=True)
class LoadedSubmission:
    kind: str
    """module | notebook | none"""
    request: dict[str, Any] | None
    """The `load` request for the child, or None when there is nothing to run."""
    failure: str = ""
    notices: tuple[str, ...] = ()
    files: tuple[str, ...] = field(default_factory=tuple)


def read_submission(sub: Submission) -> LoadedSubmission:
    files = tuple(p.name for p in sub.files())
    try:
        if sub.notebook is not None:
            text = read_text(sub.notebook, MAX_NOTEBOOK_BYTES)
            request = {"op": "load", "kind": "notebook", "cells": notebook_cells(sub.notebook, text),
                       "filename": sub.notebook.name, "files": _copies(sub, sub.notebook, text)}
            return LoadedSubmission("notebook", request, notices=sub.notices, files=files)
        if sub.module is not None:
            source, encoding = read_source(sub.module)
            request = {"op": "load", "kind": "module", "source": source,
                       "filename": sub.module.name, "files": _copies(sub, sub.module, source)}
            if encoding != "utf-8":  # the child's copy is written back in the same encoding
                request["encodings"] = {sub.module.name: encoding}
            return LoadedSubmission("module", request, notices=sub.notices, files=files)
    except UnreadableSubmission as exc:
        kind = "notebook" if sub.notebook else "module"
        return LoadedSubmission(kind, None, str(exc), sub.notices, files)
    failure = sub.notices[-1] if sub.notices else "no code was handed in"
    return LoadedSubmission("none", None, failure, sub.notices, files)


def _copies(sub: Submission, code: Path, text: str) -> dict[str, str]:
    """The files the child finds in its private folder: its code and its answers."""
    copies = {code.name: text}
    if sub.answers is not None:
        try:
            copies[sub.answers.name] = read_text(sub.answers, MAX_ANSWERS_BYTES)
        except UnreadableSubmission:
            pass  # the answers' own problems are reported by `answers.load_answers`
    return copies


def read_text(path: Path, limit: int = MAX_CODE_BYTES) -> str:
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableSubmission(
            f"{path.name} is not UTF-8 text (byte 0x{data[exc.start]:02x} at position "
            f"{exc.start}); save it with UTF-8 encoding") from None


def read_source(path: Path, limit: int = MAX_CODE_BYTES) -> tuple[str, str]:
    """A Python file's text and encoding, decoded the way Python decodes it (PEP 263):
    the encoding a `coding:` comment on its first two lines declares, else UTF-8 (a
    UTF-8 byte-order mark is dropped). Raises UnreadableSubmission with what to do."""
    data = read_bytes(path, limit)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise UnreadableSubmission(_undeclarable(path, data, exc)) from None
    try:
        return data.decode(encoding), codecs.lookup(encoding).name
    except UnicodeDecodeError as exc:
        raise UnreadableSubmission(_undecodable(path, data, encoding, exc)) from None


def _undecodable(path: Path, data: bytes, encoding: str, exc: UnicodeDecodeError) -> str:
    byte = f"byte 0x{data[exc.start]:02x} at position {exc.start}"
    if codecs.lookup(encoding).name in ("utf-8", "utf-8-sig"):
        return (f"{path.name} is not UTF-8 text ({byte}); save it with UTF-8 encoding, or "
                "declare the encoding it was saved in on its first line, e.g. "
                "`# -*- coding: latin-1 -*-`")
    return (f"{path.name} declares `coding: {encoding}` but is not {encoding} text ({byte}); "
            "fix the declaration, or save it with UTF-8 encoding and remove the line")


def _undeclarable(path: Path, data: bytes, exc: SyntaxError) -> str:
    """What Python's own reader refused before decoding: an unknown `coding:` name, a
    declaration that contradicts a UTF-8 byte-order mark, or undecodable first lines."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return _undecodable(path, data, "utf-8", bad)
    return (f"{path.name} has an encoding declaration Python cannot use ({exc.msg}); save it "
            "with UTF-8 encoding and remove the `coding:` line")


def notebook_cells(path: Path, text: str) -> list[str]:
    """The code cells' sources, after nbformat has read and validated the notebook."""
    import nbformat  # about 0.9 s to import: only where notebooks are read

    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableSubmission(
            f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}); was it saved completely? Re-save it from Jupyter") from None
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        raise UnreadableSubmission(
            f"{path.name} is not a valid Jupyter notebook: {_first_line(exc.message)}") from None
    except Exception as exc:  # nbformat raises several types for non-notebook JSON
        raise UnreadableSubmission(f"{path.name} is not a Jupyter notebook ({exc})") from None
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "schema validation failed"
