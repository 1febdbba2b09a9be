"""`grader kit`: what students receive. Public tests only; no hidden tests, no answer
key (nor a hash of one), no reference, no mutants.

    <out>/<assignment id>/
      README.md               how to install grader, write, check and hand in
      assignment.yaml         the student copy: `grader check` in this folder finds it
      public/test_*.py        the public tests
      public/support.py       the assignment's support module, where a public test uses it
      starter/...             the assignment's starter files (a module and a notebook)
      answers.template.yaml   every written question, to copy to answers.yaml

The starters sit in `starter/` so that the kit folder itself holds no work until the
student copies one starter into it: then `grader check` there needs no flags, and a
module and a notebook never compete (where both are present, the notebook is graded).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import textwrap
from pathlib import Path

import yaml

from grader import __version__, yamltext
from grader.answers.submitted import template_answers
from grader.assignment import Assignment
from grader.report.files import write_text_atomic
from grader.report.formatting import fmt_points

INSTRUCTOR_ONLY_KEYS = ("reference", "answer_key", "mutants", "labelled_answers")
STARTER_DIR = "starter"
TEMPLATE_NAME = "answers.template.yaml"


def student_yaml(a: Assignment) -> str:
    doc = yamltext.load(a.path.read_text(encoding="utf-8"))
    for key in INSTRUCTOR_ONLY_KEYS:
        doc.pop(key, None)
    if a.support is not None and public_tests_use_support(a):
        doc["support"] = f"public/{a.support.name}"
    else:
        doc.pop("support", None)
    for ex in doc["exercises"]:
        ex.pop("hidden", None)
        if "public" in ex:
            ex["public"] = f"public/{Path(ex['public']).name}"
    if "starter" in doc:
        doc["starter"] = [f"{STARTER_DIR}/{Path(f).name}" for f in doc["starter"]]
    header = "# Student copy: public tests only. `grader check` in your folder uses it.\n"
    return header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def write_kit(a: Assignment, out: Path) -> list[Path]:
    folder = out / a.id
    (folder / "public").mkdir(parents=True, exist_ok=True)
    written = [write_text_atomic(folder / "assignment.yaml", student_yaml(a))]
    for ex in a.exercises:
        if ex.public is not None:
            target = folder / "public" / ex.public.name
            shutil.copyfile(ex.public, target)
            written.append(target)
    if a.support is not None and public_tests_use_support(a):
        target = folder / "public" / a.support.name
        shutil.copyfile(a.support, target)
        written.append(target)
    for f in a.starter:
        target = folder / STARTER_DIR / f.name
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(f, target)
        written.append(target)
    if a.questions:
        written.append(write_text_atomic(folder / TEMPLATE_NAME, template_answers(a.questions)))
    written.append(write_text_atomic(folder / "README.md", student_readme(a)))
    return written


def public_tests_use_support(a: Assignment) -> bool:
    """Whether a public test function takes the `support` fixture: only then does the
    support module (which hidden tests may use too) go to students."""
    return any(_takes_support(ex.public) for ex in a.exercises if ex.public is not None)


def _takes_support(test_file: Path) -> bool:
    try:
        tree = ast.parse(test_file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return True  # cannot tell: `grader check` must not fail for want of it
    return any(arg.arg == "support" for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               for arg in node.args.args + node.args.kwonlyargs)


# ------------------------------------------------------------------------ README.md


def student_readme(a: Assignment) -> str:
    """The kit's README.md: every name, file and exercise comes from the assignment."""
    sections = [_intro(a), _install(a), _write(a), _check(a), _answers(a), _hand_in(a)]
    return "\n\n".join(s for s in sections if s) + "\n"


def _para(text: str) -> str:
    """Prose wrapped for reading in a terminal as well as rendered."""
    return textwrap.fill(text, 88, break_on_hyphens=False, break_long_words=False)


def _intro(a: Assignment) -> str:
    return f"# {a.title}\n\n" + _para(
        f"Your kit for the assignment `{a.id}` (version {a.version}). Work in this folder: "
        "`grader check` runs the public tests on your work, on your own computer, and "
        "tells you what fails and why.")


def _install(a: Assignment) -> str:
    torch = _installed_version("torch")
    torch_spec = f"torch=={torch}" if torch else "torch"
    packages = ", ".join(_requirements()) or "what it needs"
    others = _student_packages(a)
    return (
        "## 1. Install grader\n\n"
        "You need Python 3.10 or newer. In this folder:\n\n"
        "```bash\n"
        "python3 -m venv .venv\n"
        f".venv/bin/pip install {torch_spec}\n"
        ".venv/bin/pip install <path or URL from your instructor>\n"
        + (f".venv/bin/pip install {' '.join(_shell_quote(r) for r in others)}\n" if others else "")
        + "```\n\n" + _para(
        f"The second line installs PyTorch, the version your work is graded with (on Linux, "
        f"adding `--index-url https://download.pytorch.org/whl/cpu` gets the much smaller "
        f"CPU build). The third installs `grader` (version {__version__}) from the file or "
        f"address your instructor gives you: it is not on PyPI, so `pip install grader` alone "
        f"would not find it or would install something else. It brings {packages}. "
        "On Windows, write `.venv\\Scripts\\pip` and `.venv\\Scripts\\grader` instead of "
        "`.venv/bin/pip` and `.venv/bin/grader`.") + _environment(a)
    )


def _environment(a: Assignment) -> str:
    """The paragraph on the packages student code may import (the YAML's `environment:`)."""
    env = a.environment
    if env is None:
        return ""
    fourth = ("The fourth installs the other packages the lesson uses, in the versions your "
              "work is graded with. ") if _student_packages(a) else ""
    return "\n\n" + _para(
        f"{fourth}Your code may import {env.summary()}, and nothing else: that is the "
        "environment your work is graded in. `grader check` notes any other import, which "
        "may be missing where your work is graded.")


def _student_packages(a: Assignment) -> list[str]:
    """The environment's requirements but torch (installed on its own line)."""
    env = a.environment
    return [p.requirement for p in env.packages if p.key != "torch"] if env else []


def _shell_quote(requirement: str) -> str:
    return requirement if re.fullmatch(r"[A-Za-z0-9._=-]+", requirement) else f'"{requirement}"'


def _write(a: Assignment) -> str:
    code = f"`{a.module_name}` or `{a.notebook_name}`"
    starters = [f for f in a.starter if f.name in (a.module_name, a.notebook_name)]
    lines = [f"## 2. Write {code}\n"]
    if starters:
        lines.append("Copy one starter into this folder and fill in its `TODO`s:\n")
        lines.append("```bash")
        commands = [f"cp {STARTER_DIR}/{f.name} ." for f in starters]
        width = max(len(c) for c in commands) + 4
        notes = ("# a module ...", "# ... or a notebook") if len(starters) == 2 else ("",) * len(starters)
        lines += [f"{c:<{width}}{note}".rstrip() for c, note in zip(commands, notes)]
        lines.append("```\n")
    else:
        lines.append(f"Create {code} in this folder.\n")
    lines.append(_para(f"Keep only one of {code} here: when both exist, the notebook is graded "
                       f"and `{a.module_name}` is ignored. A notebook's code cells run in order, "
                       "as \"Restart & Run All\" would."))
    names = _starter_names(a)
    if names:
        lines.append("\n" + _para(f"Keep the names and signatures of the starter "
                                  f"({', '.join(f'`{n}`' for n in names)}): the tests call them."))
    return "\n".join(lines)


def _check(a: Assignment) -> str:
    first = a.exercises[0].id
    rows = ["| exercise | what | points |", "|---|---|---|"]
    for ex in a.exercises:
        what = ex.title + (f" (answers in `{a.answers_name}`)" if ex.questions else "")
        rows.append(f"| `{ex.id}` | {what} | {fmt_points(ex.max_score)} |")
    return (
        "## 3. Check your work\n\n"
        "```bash\n"
        ".venv/bin/grader check                            # every exercise\n"
        f".venv/bin/grader check --exercise {first:<16}# one exercise (repeat --exercise for more)\n"
        "```\n\n" + _para(
        "Run it in this folder; it needs no other flags. It runs the public tests, which are "
        "a sample of the tests your work is graded with (passing them does not guarantee full "
        "marks), prints what failed with a hint, writes `report.html` here, and exits 0 when "
        "everything passes. The exercises:") + "\n\n" + "\n".join(rows)
    )


def _answers(a: Assignment) -> str:
    if not a.questions:
        return ""
    return (
        "## 4. Written answers\n\n"
        "```bash\n"
        f"cp {TEMPLATE_NAME} {a.answers_name}\n"
        "```\n\n" + _para(
        f"Fill in the value after each key of `{a.answers_name}`; the comments say what each "
        "question asks and what kind of answer it takes. `grader check` only checks that "
        "each answer is there and readable: your answers are graded by your instructor.")
    )


def _hand_in(a: Assignment) -> str:
    answers = f"  {a.answers_name}\n" if a.questions else ""
    with_answers = f" plus `{a.answers_name}`" if a.questions else ""
    return (
        f"## {5 if a.questions else 4}. Hand in\n\n" + _para(
            f"A folder named by your student id with `{a.module_name}` or `{a.notebook_name}`"
            f"{with_answers}, and nothing else:") + "\n\n"
        "```\n"
        "<student-id>/\n"
        f"  {a.module_name}        (or {a.notebook_name})\n"
        f"{answers}"
        "```\n\n" + _para(
            "Hand it in as your instructor tells you (where, and by when). Your work is then "
            "graded with more tests than `grader check` runs.")
    )


def _starter_names(a: Assignment) -> list[str]:
    """The top-level functions and classes the starter module defines, in order."""
    module = next((f for f in a.starter if f.suffix == ".py"), None)
    if module is None:
        return []
    try:
        tree = ast.parse(module.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return []
    return [n.name for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]


def _installed_version(package: str) -> str:
    """`2.13.0` for `2.13.0+cpu`: the public version, which pip on any platform finds."""
    try:
        return importlib.metadata.version(package).split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return ""


def _requirements() -> list[str]:
    """The packages installing grader pulls in, torch aside (its own line)."""
    try:
        requires = importlib.metadata.requires("grader") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    names = [m.group(0) for r in requires if "extra ==" not in r
             if (m := re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r))]
    return [n for n in names if n.lower() != "torch"]
