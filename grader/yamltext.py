"""YAML text the grader trusts (an assignment's files, an instructor's overrides) as plain
data, read by libyaml's parser where PyYAML was built with it (its wheels and Debian's
python3-yaml are): the same documents, about ten times faster than the pure-Python parser.
Every grading process reads the assignment and its answer key at start-up (the key: 44 ms
of CPU, 3.5 ms with libyaml).

A student's answers.yaml is not read here: it is hostile input, and `answers.submitted`
reads it with the pure-Python parser, which it has refuse aliases.
"""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""`yaml.safe_load`'s loader, with libyaml's parser when there is one."""


def load(text: str) -> Any:
    """`yaml.safe_load(text)`, faster; raises `yaml.YAMLError` alike."""
    return yaml.load(text, Loader=SafeLoader)


__all__ = ["SafeLoader", "load"]
