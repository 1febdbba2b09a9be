"""Reading an assignment's YAML into plain data (schema-checked).

The format is documented in docs/assignments.md; `schemas/assignment.schema.json` is
its grammar. Paths in the YAML are relative to the YAML file. Nothing here knows about
attention: a new lesson is a new folder.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from grader import yamltext
from grader.environment import Environment, parse_environment
from grader.errors import AssignmentError, AssignmentSchemaError, one_line
from grader.limits import Limits

_SCHEMA_PATH = Path(__file__).parent / "schemas" / "assignment.schema.json"


@dataclass(frozen=True)
class Question:
    """One answer the student writes in answers.yaml (see docs/assignments.md)."""

    id: str
    """Dotted path into answers.yaml, e.g. `quiz.q3`."""
    exercise: str
    prompt: str
    type: str
    """numeric | exact | choice | text | manual"""
    points: float
    choices: tuple[str, ...] = ()
    visibility: str = "visible"


@dataclass(frozen=True)
class TestSpec:
    """Per-test-function overrides from the YAML."""

    points: float | None = None
    visibility: str | None = None


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    points: float
    """Points of the exercise's tests (questions carry their own)."""
    public: Path | None
    hidden: Path | None
    tests: dict[str, TestSpec] = field(default_factory=dict)
    visibility: str = "visible"
    questions: tuple[Question, ...] = ()
    short: str = ""
    """Column title in `grader grade`'s table; empty: derived from the id there."""

    @property
    def max_score(self) -> float:
        tests = self.points if (self.hidden or self.public) else 0.0
        return tests + sum(q.points for q in self.questions)

    def test_file(self, public: bool) -> Path | None:
        return self.public if public else self.hidden


@dataclass(frozen=True)
class Assignment:
    id: str
    title: str
    version: str
    path: Path
    """The YAML file."""
    exercises: tuple[Exercise, ...]
    reference: Path | None
    answer_key: Path | None
    mutants: Path | None
    module_name: str = "attention.py"
    notebook_name: str = "attention.ipynb"
    answers_name: str = "answers.yaml"
    limits: Limits = Limits()
    starter: tuple[Path, ...] = ()
    """Files students start from (`grader kit` puts them in the kit's `starter/`)."""
    environment: Environment | None = None
    """The packages student code may import (`environment:`); None: not declared."""
    labelled_answers: tuple[Path, ...] = ()
    """Files of written answers labelled by hand (`labelled_answers:`, one or a list),
    which `grader validate` scores with the answer key to measure it; instructor only,
    never in the kit."""
    support: Path | None = None
    """The support module (`support:`): helpers the tests of this assignment share, given
    to them as the `support` fixture; it goes in the kit when a public test uses it."""

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def max_score(self) -> float:
        return sum(ex.max_score for ex in self.exercises)

    @property
    def questions(self) -> tuple[Question, ...]:
        return tuple(q for ex in self.exercises for q in ex.questions)

    def only(self, exercise_ids: Sequence[str]) -> Assignment:
        """This assignment with just these exercises (`grader check --exercise`): the
        others' tests are not collected, their questions not read."""
        wanted = set(exercise_ids)
        return replace(self, exercises=tuple(ex for ex in self.exercises if ex.id in wanted))

    def digest(self, public: bool = False) -> str:
        """Hash of everything that decides a grade, to know when a result is stale."""
        files = [self.path] + [f for ex in self.exercises if (f := ex.test_file(public))]
        files += [self.support] if self.support else []
        if not public:
            files += [p for p in (self.reference, self.answer_key) if p]
        h = hashlib.sha256()
        for f in files:
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        return h.hexdigest()[:16]


def resolve(name_or_path: str | None, cwd: Path) -> Path:
    """`--assignment`: a YAML path, a folder holding assignment.yaml, or a name under
    ./assignments/ (the only one there when not given)."""
    if name_or_path is None:
        found = sorted((cwd / "assignments").glob("*/assignment.yaml"))
        if len(found) == 1:
            return found[0]
        if not found:
            raise AssignmentError(
                f"no assignment given and none under {cwd / 'assignments'}: "
                "pass --assignment PATH/TO/assignment.yaml")
        names = ", ".join(p.parent.name for p in found)
        raise AssignmentError(f"several assignments ({names}): pick one with --assignment NAME")
    candidate = Path(name_or_path)
    for path in (candidate, candidate / "assignment.yaml",
                 cwd / "assignments" / name_or_path / "assignment.yaml"):
        if path.is_file():
            return path.resolve()
    raise AssignmentError(f"assignment {name_or_path!r} not found: give a path to its "
                          "assignment.yaml or a folder name under ./assignments/")


def load(path: Path, *, require_hidden: bool = True) -> Assignment:
    """Parse and check an assignment YAML; every error names the file and key."""
    path = path.resolve()
    doc = _read_yaml(path)
    _check_schema(path, doc)
    root = path.parent
    exercises = tuple(_exercise(root, path, e) for e in doc["exercises"])
    _check_unique(path, "exercises", [e.id for e in exercises])
    _check_unique(path, "questions", [q.id for e in exercises for q in e.questions])
    _check_unique(path, "exercises", [e.short for e in exercises if e.short], "short title")
    _check_starter_names(path, doc.get("starter", ()))
    sub = doc.get("submission", {})
    assignment = Assignment(
        id=doc["id"], title=doc["title"], version=str(doc["version"]), path=path,
        exercises=exercises,
        reference=_optional(root, doc.get("reference")),
        answer_key=_optional(root, doc.get("answer_key")),
        mutants=_optional(root, doc.get("mutants")),
        module_name=sub.get("module", "attention.py"),
        notebook_name=sub.get("notebook", "attention.ipynb"),
        answers_name=sub.get("answers", "answers.yaml"),
        limits=Limits(**doc.get("limits", {})),
        starter=tuple((root / rel).resolve() for rel in doc.get("starter", ())),
        environment=_environment(path, doc.get("environment")),
        labelled_answers=tuple((root / rel).resolve() for rel in _as_list(doc.get("labelled_answers"))),
        support=_optional(root, doc.get("support")),
    )
    _check_files(assignment, require_hidden)
    return assignment


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AssignmentError(f"{path}: cannot read: {exc}") from None
    try:
        return yamltext.load(text)
    except yaml.YAMLError as exc:
        raise AssignmentError(f"{path}: not valid YAML: {yaml_problem(exc)}") from None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML parser's error on one line: where it stopped, what it expected, and where
    the construct it was reading started."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if not problem or mark is None:
        return one_line(str(exc))
    text = f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and start is not None:
        text += f" ({context} that starts at line {start.line + 1}, column {start.column + 1})"
    elif context:
        text += f" ({context})"
    return text


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(_SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


def _check_schema(path: Path, doc: Any) -> None:
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        key = ".".join(str(p) for p in err.absolute_path)
        raise AssignmentSchemaError(path, key, _explain(err))


def _explain(err: jsonschema.ValidationError) -> str:
    if err.validator == "required":
        return f"missing key: {err.message.split(' is a required')[0]}"
    if err.validator == "additionalProperties":
        return f"unknown key ({err.message})"
    if err.validator in ("enum", "const"):
        return f"expected one of {err.validator_value}, got {err.instance!r}"
    if err.validator == "type":
        return f"expected {err.validator_value}, got {type(err.instance).__name__} {err.instance!r}"
    if err.validator == "oneOf":
        return f"expected visible, message_only, hidden or {{after: YYYY-MM-DD}}, got {err.instance!r}"
    return str(err.message)


def _exercise(root: Path, path: Path, doc: dict[str, Any]) -> Exercise:
    visibility = _visibility(doc.get("visibility", "visible"))
    questions = tuple(
        Question(id=q["id"], exercise=doc["id"], prompt=q["prompt"], type=q["type"],
                 points=float(q["points"]), choices=tuple(q.get("choices", ())),
                 visibility=_visibility(q.get("visibility", visibility)))
        for q in doc.get("questions", ())
    )
    return Exercise(
        id=doc["id"], title=doc.get("title", doc["id"]), points=float(doc.get("points", 0)),
        public=_optional(root, doc.get("public")), hidden=_optional(root, doc.get("hidden")),
        tests={name: TestSpec(t.get("points"), _visibility(t["visibility"]) if "visibility" in t else None)
               for name, t in doc.get("tests", {}).items()},
        visibility=visibility, questions=questions, short=doc.get("short", ""),
    )


def _environment(path: Path, doc: dict[str, Any] | None) -> Environment | None:
    try:
        return parse_environment(doc)
    except ValueError as exc:
        key, _, why = str(exc).partition(": ")
        raise AssignmentSchemaError(path, f"environment.{key}", why) from None


def _visibility(value: Any, today: dt.date | None = None) -> str:
    """`{after: DATE}` is hidden until that date, visible from it."""
    if isinstance(value, dict):
        after = value["after"]
        date = after if isinstance(after, dt.date) else dt.date.fromisoformat(str(after))
        return "visible" if (today or dt.date.today()) >= date else "hidden"
    return str(value)


def _as_list(value: str | list[str] | None) -> list[str]:
    return [] if not value else [value] if isinstance(value, str) else list(value)


def _optional(root: Path, rel: str | None) -> Path | None:
    return (root / rel).resolve() if rel else None


def _check_unique(path: Path, what: str, ids: list[str], kind: str = "id") -> None:
    seen = set()
    for i in ids:
        if i in seen:
            raise AssignmentSchemaError(path, what, f"{kind} {i!r} appears twice")
        seen.add(i)


def _check_starter_names(path: Path, files: list[str]) -> None:
    """`grader kit` puts every starter file in one folder: their names must differ."""
    names = [Path(f).name for f in files]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise AssignmentSchemaError(path, f"starter.{i}", f"another starter file is also named {name!r}")


def _check_files(a: Assignment, require_hidden: bool) -> None:
    for ex in a.exercises:
        for kind, f in (("public", ex.public), ("hidden", ex.hidden)):
            if f is not None and not f.is_file() and (require_hidden or kind == "public"):
                raise AssignmentSchemaError(a.path, f"exercises.{ex.id}.{kind}",
                                            f"test file {f} does not exist")
    if a.support is not None and not a.support.is_file():
        raise AssignmentSchemaError(a.path, "support", f"support module {a.support} does not exist")
    if require_hidden:
        for key, f in (("reference", a.reference), ("answer_key", a.answer_key), ("mutants", a.mutants),
                       *((f"labelled_answers.{i}", f) for i, f in enumerate(a.labelled_answers)),
                       *((f"starter.{i}", f) for i, f in enumerate(a.starter))):
            if f is not None and not f.is_file():
                raise AssignmentSchemaError(a.path, key, f"file {f} does not exist")
