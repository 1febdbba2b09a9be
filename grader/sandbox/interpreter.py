"""The Python that `grader` runs with, as the sandbox and the workers start it again.

Whatever installed `grader` (a venv anywhere, pipx, uv, conda, pyenv, `pip --user`, the
system interpreter), a process we start must import the same packages. So it is started
as `sys.executable` *as launched* (a venv's `bin/python` is a symlink to the base
interpreter; started through its real path, Python no longer finds the venv's
`pyvenv.cfg` and loses its site-packages), and it is handed this process's import path
explicitly, because `-I` (which keeps PYTHON* variables, the user's site and the current
folder out) would drop `pip --user` and PYTHONPATH entries.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
"""The `grader` package folder; bound on its own, wherever it is installed."""


def executable() -> str:
    """The interpreter to start: this one, by the path it was started with."""
    return sys.executable or os.path.realpath(sys.argv[0])


def import_path() -> list[str]:
    """This process's `sys.path`: absolute entries that exist (folders, zip files)."""
    out: list[str] = []
    for entry in sys.path:
        if entry and os.path.isabs(entry) and os.path.exists(entry) and entry not in out:
            out.append(entry)
    return out


def runtime_paths(hidden: tuple[Path, ...] = ()) -> list[str]:
    """What a sandboxed interpreter must be able to read to start and import what we
    import: the prefixes (a venv's, its base interpreter's) and every import path
    entry, less any that would show the current folder or a secret (`secret_folders`).
    """
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found = prefixes | set(import_path())
    exe = executable()
    if os.path.isabs(exe):
        found.add(os.path.dirname(exe))  # a venv's bin/ (its python is a symlink)
    inside = [Path(p).resolve() for p in prefixes]
    secret = secret_folders(hidden)
    cwd = Path.cwd().resolve()
    keep = []
    for p in found:
        if not os.path.exists(p):
            continue
        r = Path(p).resolve()
        own = any(r == q or q in r.parents for q in inside)
        if _above_or_at(r, cwd) or any(_above_or_at(r, h) or (h in r.parents and not own)
                                       for h in secret):
            continue
        keep.append(p)
    return sorted(keep)


def secret_folders(extra: tuple[Path, ...] = ()) -> list[Path]:
    """Folders a sandbox must show nothing of (but the interpreter's own prefixes
    inside them, a repository's `.venv`): a source checkout of grader, which holds
    the hidden tests, and whatever the caller adds (the assignment)."""
    out = [Path(p).resolve() for p in extra]
    if (PACKAGE.parent / "assignments").exists():
        out.append(PACKAGE.parent)
    return out


def _above_or_at(path: Path, other: Path) -> bool:
    return path == other or path in other.parents


BOOT = ("import sys, json; sys.path[:0] = [p for p in json.loads(sys.argv[1]) "
        "if p not in sys.path]; ")
"""The start of a `-c` program: put the parent's import path (argv[1], JSON) first."""


def boot_argv(program: str, path: list[str], *args: str) -> list[str]:
    """`python -I -c BOOT+program PATH args...`: this interpreter, this import path."""
    return [executable(), "-I", "-c", BOOT + program, _json(path), *args]


def _json(value: object) -> str:
    import json

    return json.dumps(value)
