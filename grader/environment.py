"""The student environment an assignment declares: the packages student code may import.

    environment:
      packages: ["torch>=2.1,<3", "matplotlib==3.11.2", "seaborn==0.13.2"]

Each entry is a pip requirement string; pins live here and nowhere else. Besides these,
student code may import Python's standard library (and IPython, in a notebook). The
grader uses the declaration to

- install it: `grader environment --requirements` prints the requirements for pip
  (`scripts/setup.sh` installs those of every shipped assignment into .venv);
- prove it: `grader validate` imports every package in a sandboxed child (`probe_source`);
- explain: a module or cell that fails to import a package outside it is told which
  package and what the environment offers (`missing_module_message`), not that its
  own code is wrong;
- warn: imports outside it, found in the source without running it
  (`undeclared_imports`), are noted in the report and by `grader check`.

Nothing here imports the packages themselves: the grader's process never needs them.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from grader.errors import EnvironmentMissing

__all__ = ["Environment", "Package", "cell_notice", "import_notices", "imported_modules",
           "installed_problems", "merged_requirements", "require_installed", "missing_module",
           "missing_module_message", "parse_environment", "probe_problems", "probe_source", "request_sources",
           "undeclared_imports",
           "undeclared_notice"]

NOTEBOOK_RUNTIME = frozenset({"IPython"})
"""What a notebook may always import: the shell its cells run in."""
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_NO_MODULE = re.compile(r"No module named '([^']+)'")


@dataclass(frozen=True)
class Package:
    requirement: str
    """As the YAML writes it: `matplotlib==3.11.2`."""
    name: str
    """The distribution's name, as written: `matplotlib`."""

    @property
    def key(self) -> str:
        """The name normalized as pip compares names (PEP 503)."""
        return canonical(self.name)

    @property
    def modules(self) -> frozenset[str]:
        """The top-level names it can be imported by (from its installed metadata, else
        the name itself: `scikit-learn` -> `scikit_learn`)."""
        return _modules_of(self.key) | {self.import_name}

    @property
    def import_name(self) -> str:
        """The one module that stands for it (what `grader validate` imports)."""
        guess = self.name.replace("-", "_").replace(".", "_")
        installed = _modules_of(self.key)
        if guess in installed or not installed:
            return guess
        return sorted(m for m in installed if not m.startswith("_"))[0] if any(
            not m.startswith("_") for m in installed) else guess


@dataclass(frozen=True)
class Environment:
    packages: tuple[Package, ...] = ()

    def requirements(self) -> tuple[str, ...]:
        return tuple(p.requirement for p in self.packages)

    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.packages)

    def package_for(self, module: str) -> Package | None:
        top = module.split(".", 1)[0]
        return next((p for p in self.packages if top in p.modules), None)

    def offers(self, module: str, notebook: bool = False) -> bool:
        top = module.split(".", 1)[0]
        return (top in sys.stdlib_module_names or top == "__future__"
                or (notebook and top in NOTEBOOK_RUNTIME) or self.package_for(top) is not None)

    def summary(self) -> str:
        """`torch, numpy, matplotlib and seaborn, and Python's standard library`."""
        names = [f"`{n}`" for n in self.names()]
        listed = (", ".join(names[:-1]) + " and " + names[-1]) if len(names) > 1 else "".join(names)
        return f"{listed}, and Python's standard library" if listed else "Python's standard library only"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_environment(doc: Mapping[str, Any] | None) -> Environment | None:
    """The YAML's `environment:` (already schema-checked); None when it has none.
    Raises ValueError naming the entry that is not a requirement pip would accept."""
    if doc is None:
        return None
    packages = []
    for i, raw in enumerate(doc.get("packages", ())):
        packages.append(Package(str(raw).strip(), _requirement_name(str(raw), i)))
    keys = [p.key for p in packages]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            raise ValueError(f"packages.{i}: {packages[i].name} is listed twice")
    return Environment(tuple(packages))


def _requirement_name(text: str, i: int) -> str:
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # pragma: no cover - pytest brings packaging
        match = _NAME.match(text.strip())
        if not match:
            raise ValueError(f"packages.{i}: {text!r} is not a pip requirement") from None
        return match.group(0)
    try:
        return Requirement(text).name
    except InvalidRequirement as exc:
        raise ValueError(f"packages.{i}: {text!r} is not a pip requirement ({exc})") from None


@cache
def _modules_of(key: str) -> frozenset[str]:
    """The top-level modules an installed distribution provides (none when it is not
    installed): its top_level.txt, else the first part of each .py file it installed, as
    `importlib.metadata.packages_distributions` reads them, for this one distribution only
    (reading all of them costs `grader check` 0.2-0.6 s)."""
    try:
        dist = importlib.metadata.distribution(key)
    except importlib.metadata.PackageNotFoundError:
        return frozenset()
    declared = (dist.read_text("top_level.txt") or "").split()
    if declared:
        return frozenset(declared)
    return frozenset(f.parts[0] if len(f.parts) > 1 else f.with_suffix("").name
                     for f in dist.files or () if f.suffix == ".py")


# ------------------------------------------------------------------ a failed import


def missing_module(error: Mapping[str, Any] | None) -> str:
    """The top-level module a `ModuleNotFoundError` (as the child reported it) names, or ''."""
    if not error or error.get("type") != "ModuleNotFoundError":
        return ""
    found = _NO_MODULE.search(str(error.get("message", "")))
    return found.group(1).split(".", 1)[0] if found else ""


def missing_module_message(where: str, module: str, env: Environment | None) -> str:
    """What to tell a student whose code (`where`: "attention.py (line 12)", "cell 7")
    imports `module`, which is not installed: which package, and what there is instead."""
    if env is None:
        return (f"{where} imports `{module}`, which is not installed where your code runs; "
                "use only what your instructor's environment provides")
    package = env.package_for(module)
    if package is not None:  # declared, but missing here: not the student's doing
        return (f"{where} imports `{module}`, which this assignment's environment includes "
                f"(`{package.requirement}`) but which is not installed here: install it with "
                f"`pip install \"{package.requirement}\"`")
    return (f"{where} imports `{module}`, which is not in this assignment's environment: it "
            f"offers {env.summary()}. Remove that import and the code that needs it")


def cell_notice(error: Mapping[str, Any], env: Environment | None) -> str:
    """The report's line for a notebook cell that raised (the cells after it still ran)."""
    module = missing_module(error)
    if module:
        text = missing_module_message(f"cell {error.get('cell')}", module, env)
    else:
        text = f"cell {error.get('cell')} raised {error.get('type')}: {error.get('message')}"
    return text + " (the cells after it still ran)"


# ------------------------------------------------------------------ imports in the source


def imported_modules(sources: Iterable[str], notebook: bool = False) -> tuple[str, ...]:
    """The top-level names the code imports (absolute imports, anywhere in it), in the
    order they first appear; code that does not parse is skipped (running it reports it)."""
    found: dict[str, None] = {}
    for source in sources:
        tree = _parse(_without_ipython_syntax(source) if notebook else source)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.setdefault(alias.name.split(".", 1)[0], None)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.setdefault(node.module.split(".", 1)[0], None)
    return tuple(found)


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _without_ipython_syntax(cell: str) -> str:
    """A cell without magics and shell escapes, which are not Python (`%%bash`: none of it)."""
    if cell.lstrip().startswith("%%"):
        return ""
    lines = cell.splitlines()
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)


def undeclared_imports(sources: Sequence[str], env: Environment, notebook: bool,
                       besides: Iterable[str] = ()) -> tuple[str, ...]:
    """Modules the code imports that the environment does not offer (`besides` left out:
    those whose import already failed, reported on their own)."""
    skip = set(besides)
    return tuple(m for m in imported_modules(sources, notebook)
                 if m not in skip and not env.offers(m, notebook))


def undeclared_notice(modules: Sequence[str], env: Environment) -> str:
    names = ", ".join(f"`{m}`" for m in modules)
    verb = "is" if len(modules) == 1 else "are"
    return (f"your code imports {names}, which {verb} not in this assignment's environment "
            f"({env.summary()}): it may be missing where your work is graded")


def import_notices(request: Mapping[str, Any] | None, error: Mapping[str, Any] | None,
                   cell_errors: Sequence[Mapping[str, Any]],
                   env: Environment | None) -> list[str]:
    """The report's note on what the submission (its `load` request) imports outside the
    environment; imports that failed are left out (their own message says it)."""
    if env is None or not request:
        return []
    sources, notebook = request_sources(request)
    failed = {missing_module(e) for e in (error, *cell_errors)} - {""}
    found = undeclared_imports(sources, env, notebook, besides=failed)
    return [undeclared_notice(found, env)] if found else []


def request_sources(request: Mapping[str, Any] | None) -> tuple[list[str], bool]:
    """The code a `load` request carries (a module's source, or a notebook's code cells),
    and whether it is a notebook."""
    if not request:
        return [], False
    notebook = request.get("kind") == "notebook"
    cells = request.get("cells") if notebook else [request.get("source")]
    return [c for c in (cells if isinstance(cells, list) else []) if isinstance(c, str)], notebook


# ------------------------------------------------------------------ grader environment


def merged_requirements(envs: Iterable[Environment]) -> tuple[str, ...]:
    """The requirements of several assignments, each package once; ValueError when two
    assignments pin one package differently (pip could not install both)."""
    chosen: dict[str, str] = {}
    for env in envs:
        for p in env.packages:
            other = chosen.setdefault(p.key, p.requirement)
            if other.replace(" ", "") != p.requirement.replace(" ", ""):
                raise ValueError(f"two assignments declare {p.name} differently: "
                                 f"`{other}` and `{p.requirement}`; make them agree")
    return tuple(chosen.values())


def require_installed(env: Environment | None, assignment_path: Path) -> None:
    """`grader grade` grades nothing when a declared package is missing or of another
    version here: students would lose points for our installation."""
    if env is None:
        return
    _, problems = installed_problems(merged_requirements([env]))
    if problems:
        raise EnvironmentMissing.of(assignment_path, problems)


def installed_problems(requirements: Sequence[str]) -> tuple[list[str], list[str]]:
    """(one line per requirement with what is installed in this Python, problems)."""
    lines, problems = [], []
    for requirement in requirements:
        name = _requirement_name(requirement, 0)
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            lines.append(f"{requirement:<28} not installed")
            problems.append(f"{name} is not installed: pip install \"{requirement}\"")
            continue
        lines.append(f"{requirement:<28} {version}")
        if not _satisfies(requirement, version):
            problems.append(f"{name} {version} is installed, not `{requirement}`: "
                            f"pip install \"{requirement}\"")
    return lines, problems


# ------------------------------------------------------------------ grader validate


PROBE_RESULT = "ENVIRONMENT_PROBE"
"""The name the probe module leaves its findings under."""


def probe_source(env: Environment) -> str:
    """A module that imports every package of `env` and records, per package, its
    installed version or why it failed (run in a sandboxed child by `grader validate`)."""
    wanted = [(p.name, p.import_name) for p in env.packages]
    return (
        "import importlib, importlib.metadata\n"
        f"{PROBE_RESULT} = {{}}\n"
        f"for _dist, _module in {wanted!r}:\n"
        "    try:\n"
        "        importlib.import_module(_module)\n"
        "    except BaseException as _exc:\n"
        f"        {PROBE_RESULT}[_dist] = {{'ok': False, 'error': (type(_exc).__name__ + ': ' + str(_exc))[:300]}}\n"
        "        continue\n"
        "    try:\n"
        "        _version = importlib.metadata.version(_dist)\n"
        "    except importlib.metadata.PackageNotFoundError:\n"
        "        _version = ''\n"
        f"    {PROBE_RESULT}[_dist] = {{'ok': True, 'version': _version}}\n"
    )


def probe_problems(env: Environment, found: Any) -> tuple[list[str], list[str]]:
    """(lines, problems) for `grader validate` from what the probe found in the sandbox."""
    lines, problems = [], []
    found = found if isinstance(found, dict) else {}
    for p in env.packages:
        got = found.get(p.name)
        if not isinstance(got, dict) or not got.get("ok"):
            why = got.get("error", "not reported") if isinstance(got, dict) else "not reported"
            problems.append(f"environment: `{p.requirement}` does not import in the sandbox ({why}); "
                            f"install it where grader runs: pip install \"{p.requirement}\"")
            continue
        version = str(got.get("version", ""))
        if version and not _satisfies(p.requirement, version):
            problems.append(f"environment: {p.name} {version} is installed, but the assignment "
                            f"declares `{p.requirement}`")
        lines.append(f"{p.name} {version or '(version unknown)'}")
    return lines, problems


def _satisfies(requirement: str, version: str) -> bool:
    try:
        from packaging.requirements import Requirement
        from packaging.version import InvalidVersion
    except ImportError:  # pragma: no cover
        return True
    try:
        return Requirement(requirement).specifier.contains(version, prereleases=True)
    except InvalidVersion:
        return True
