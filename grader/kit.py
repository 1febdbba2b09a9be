"""`grader kit`: what students receive. Public tests only; no hidden tests, no answer
key (nor a hash of one), no reference, no mutants."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from grader.answers_file import template_answers
from grader.assignment import Assignment
from grader.export import write_text_atomic

INSTRUCTOR_ONLY_KEYS = ("reference", "answer_key", "mutants")


def student_yaml(a: Assignment) -> str:
    doc = yaml.safe_load(a.path.read_text(encoding="utf-8"))
    for key in INSTRUCTOR_ONLY_KEYS:
        doc.pop(key, None)
    for ex in doc["exercises"]:
        ex.pop("hidden", None)
        if "public" in ex:
            ex["public"] = f"public/{Path(ex['public']).name}"
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
    written.append(write_text_atomic(folder / "answers.template.yaml", template_answers(a.questions)))
    return written
