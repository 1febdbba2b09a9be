"""The package tree is the data flow: a stage imports only the stages before it.

intake -> sandbox -> testing -> answers -> score -> similarity -> report -> batch -> review, with
the shared plain-data modules (errors, results, assignment, ...) below them all and
the commands (cli, kit, validate) above. What runs next to student code
(`grader.sandbox.inside`) imports only the wire between it and the grader, and the
error tree (a leaf module of plain classes).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import grader

PACKAGE = Path(grader.__file__).parent
LAYERS = [
    {"grader", "grader.config", "grader.errors", "grader.limits", "grader.results", "grader.figures",
     "grader.assignment", "grader.environment", "grader.yamltext"},
    {"grader.intake"},
    {"grader.sandbox"},
    {"grader.testing"},
    {"grader.answers"},
    {"grader.score"},
    {"grader.similarity"},
    {"grader.report"},
    {"grader.batch"},
    {"grader.review"},
    {"grader.cli", "grader.cli_similar", "grader.kit", "grader.validate"},
]
INSIDE = "grader.sandbox.inside"
INSIDE_MAY_IMPORT = ("grader.sandbox.wire", "grader.sandbox.frames", "grader.sandbox.protocol",
                     "grader.errors", INSIDE)


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _grader_imports(path: Path, name: str) -> set[str]:
    found = set()
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "grader"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[:len(pkg) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            if base.split(".")[0] != "grader":
                continue
            for alias in node.names:  # `from grader.x import y`: y may be a module
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in _MODULES else base)
    return found


_MODULES = _modules()


def _layer(module: str) -> int:
    for i, layer in enumerate(LAYERS):
        if any(module == top or module.startswith(top + ".") for top in layer if top != "grader"):
            return i
    assert module == "grader", f"{module} is in no layer: add it to LAYERS"
    return 0


def test_every_module_has_a_layer():
    for name in _MODULES:
        _layer(name)


@pytest.mark.parametrize("name", sorted(_MODULES))
def test_a_stage_imports_only_the_stages_before_it(name):
    mine = _layer(name)
    later = sorted(m for m in _grader_imports(_MODULES[name], name) if _layer(m) > mine)
    assert not later, f"{name} (layer {mine}) imports later stages: {later}"


@pytest.mark.parametrize("name", sorted(n for n in _MODULES if n.startswith(INSIDE)))
def test_inside_the_sandbox_only_the_wire_is_imported(name):
    bad = sorted(m for m in _grader_imports(_MODULES[name], name)
                 if m != "grader" and not m.startswith(INSIDE_MAY_IMPORT))
    assert not bad, f"{name} runs next to student code and imports {bad}"


@pytest.mark.parametrize("name", sorted(_MODULES))
def test_no_module_is_over_400_lines(name):
    lines = len(_MODULES[name].read_text().splitlines())
    assert lines <= 400, f"{name} has {lines} lines: split it along what it does"


@pytest.mark.parametrize("module", ["grader.score", "grader.answers.grade", "grader.report.html",
                                    "grader.results", "grader.intake.load",
                                    # the batch parent: torch (2 s of CPU) is the workers' and
                                    # the zygote's, never the process that hands out the work
                                    "grader.cli", "grader.batch.run", "grader.batch.workers",
                                    "grader.batch.dask"])
def test_scoring_and_reporting_do_not_load_pytest_or_torch(module):
    code = (f"import sys, {module}; "
            "print(','.join(m for m in ('pytest', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing {module} loads {out.stdout.strip()}"


def test_the_batch_parent_chooses_its_device_without_torch(monkeypatch):
    """`grader grade` (default `--device cpu`) imported torch in the parent just to check
    the device: 2 s of CPU before the first worker started."""
    code = ("import sys; from grader.batch.prepare import resolve_device; "
            "assert resolve_device('cpu') == 'cpu'; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    from grader.batch import prepare
    from grader.errors import UsageError

    monkeypatch.setattr(prepare, "_gpu_device_node", lambda: False)
    assert prepare.resolve_device("auto") == "cpu"
    with pytest.raises(UsageError, match="no GPU device"):
        prepare.resolve_device("cuda")


def test_one_error_tree():
    """Every exception class of grader's is a GraderError (private sentinels aside), so a
    fault crosses process boundaries by class and maps to an exit code at the CLI."""
    import importlib
    import inspect

    from grader.errors import GraderError

    strays = []
    for name in sorted(_MODULES):
        if name.endswith("mpl_backend"):  # imports matplotlib: not part of the tree
            continue
        module = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if (cls.__module__ == name and issubclass(cls, BaseException)
                    and not cls_name.startswith("_") and not issubclass(cls, GraderError)):
                strays.append(f"{name}.{cls_name}")
    assert not strays, f"exceptions outside the GraderError tree: {strays}"
