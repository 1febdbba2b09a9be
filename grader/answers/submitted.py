"""answers.yaml on disk: read safely (it is hostile input) and written as a template."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from grader.answers.values import kind_of
from grader.assignment import Question
from grader.errors import UnreadableSubmission
from grader.intake.read import MAX_ANSWERS_BYTES, read_bytes

# ------------------------------------------------------------------------ reading


class _AnswersLoader(yaml.SafeLoader):
    """safe_load without aliases (`*name`), so a small file cannot expand into a huge one."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed", mark)
        return super().compose_node(parent, index)


def load_answers(path: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, list[str]]:
    """Read a student's answers.yaml: (answers or None, problems in plain words)."""
    path = Path(path)
    name = path.name
    if not os.path.lexists(path):
        return None, [f"there is no {name}; the written answers score 0 until you add it."]
    try:
        raw = read_bytes(path, MAX_ANSWERS_BYTES)
    except UnreadableSubmission as exc:
        return None, [f"{exc}; it was not read."]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [f"{name} is not UTF-8 text (bad byte at position {exc.start}); "
                      "save it with UTF-8 encoding."]
    return parse_answers(text, name)


def parse_answers(text: str, name: str = "answers.yaml") -> tuple[dict[str, Any] | None, list[str]]:
    """Parse answers.yaml text (see `load_answers`)."""
    try:
        data = yaml.load(text, Loader=_AnswersLoader)
    except yaml.MarkedYAMLError as exc:
        line = f"line {exc.problem_mark.line + 1}: " if exc.problem_mark else ""
        return None, [f"{name} is not valid YAML ({line}{exc.problem or exc.context}): check the indentation "
                      "(spaces, not tabs) and that every quote is closed."]
    except yaml.YAMLError as exc:
        return None, [f"{name} is not valid YAML ({exc})."]
    except RecursionError:
        return None, [f"{name} is nested too deeply to read."]
    except ValueError as exc:  # e.g. an integer with thousands of digits
        return None, [f"{name} holds a value that cannot be read ({exc})."]
    if data is None:
        return {}, [f"{name} holds no answers yet."]
    if not isinstance(data, dict):
        return None, [f"{name} must hold `key: value` pairs at the top level (like `quiz:`), "
                      f"but it holds {kind_of(data)}."]
    return data, []


# ----------------------------------------------------------------------- template

_TYPE_HINTS = {
    "numeric": "a number",
    "exact": "a value, or a list like [1, 2]",
    "text": "your own words, English or Vietnamese; for several lines write | and indent them below",
    "manual": "your own words; the instructor scores this one",
}


def template_answers(questions: Sequence[Question]) -> str:
    """An answers.yaml with every question id and an empty value, prompts as comments."""
    tree: dict[str, Any] = {}
    for q in questions:
        *parents, leaf = q.id.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"question id `{q.id}` runs through another question's answer")
        if leaf in node:
            raise ValueError(f"question id `{q.id}` is used twice or also names a group")
        node[leaf] = q
    lines = ["# Your written answers. Fill in the value after each key; keep the keys as they are.",
             "# Text answers may be in English or Vietnamese. `grader check` tells you what is missing."]
    _emit(tree, 0, lines)
    return "\n".join(lines) + "\n"


def _emit(tree: Mapping[str, Any], indent: int, lines: list[str]) -> None:
    pad = " " * indent
    for name, node in tree.items():
        if indent == 0:
            lines.append("")
        if isinstance(node, Question):
            hint = f"one of: {' | '.join(node.choices)}" if node.type == "choice" else _TYPE_HINTS[node.type]
            points = f"{node.points:g} point" + ("" if node.points == 1 else "s")
            lines.extend(f"{pad}# {row}" for row in textwrap.wrap(node.prompt, 86 - indent) or [""])
            lines.append(f"{pad}#   ({hint}; {points})")
            lines.append(f"{pad}{_yaml_key(name)}:")
        else:
            lines.append(f"{pad}{_yaml_key(name)}:")
            _emit(node, indent + 2, lines)


def _yaml_key(name: str) -> str:
    return yaml.safe_dump(name, default_flow_style=True).splitlines()[0]

