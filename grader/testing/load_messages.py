"""Why a submission did not load, in words that say what to do about it."""

from __future__ import annotations

import ast
from typing import Any

from grader import environment


def _import_failed_message(label: str, error: dict[str, Any], source: str = "",
                           env: environment.Environment | None = None) -> str:
    """Why a module did not load, with the advice that fits what went wrong: a package
    outside the environment is named as such; "keep demo code under __main__" is said
    only where the failing line is code that runs on import (not an import, a def or a
    class, and not a syntax error)."""
    text = str(error.get("traceback", ""))
    line = _last_line_number(text, label)
    module = environment.missing_module(error)
    if module:
        return environment.missing_module_message(
            f"{label}{f' (line {line})' if line else ''}", module, env)
    where = f" at line {line}" if line else ""
    message = f"importing {label} raised {error.get('type')}{where}: {error.get('message')}"
    if _runs_on_import(source, _module_line(text, label)):
        message += (". A module must import without errors: keep demo code under "
                    "`if __name__ == \"__main__\":`")
    return message


def _module_line(traceback_text: str, label: str) -> int:
    """The line of the top-level statement that was running (the outermost frame of the
    student's file), or 0."""
    for ln in traceback_text.splitlines():
        if label in ln and "line " in ln and ln.rstrip().endswith("in <module>"):
            number = ln.split("line ", 1)[1].split(",", 1)[0].strip()
            return int(number) if number.isdigit() else 0
    return 0


def _runs_on_import(source: str, line: int) -> bool:
    """True when `line` is in a top-level statement that is demo code: not an import,
    a function or a class definition."""
    if not line:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for stmt in tree.body:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            return not isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                         ast.AsyncFunctionDef, ast.ClassDef))
    return False


def _last_line_number(traceback_text: str, label: str) -> str:
    found = ""
    for ln in traceback_text.splitlines():
        if label in ln and "line " in ln:
            found = ln.split("line ", 1)[1].split(",", 1)[0].strip()
    return found
