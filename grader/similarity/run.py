"""The similarity stage in one screen: read, fingerprint, compare, write."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from grader.assignment import Assignment
from grader.intake.discover import Submission
from grader.similarity.base import base_hashes, base_paths, base_text
from grader.similarity.page import write_outputs
from grader.similarity.pairs import (
    DEFAULT,
    Options,
    Pair,
    clusters,
    compare,
    fingerprint,
    fragments,
)
from grader.similarity.source import Code, submission_code
from grader.similarity.summary import Summary, read_summary

__all__ = ["Options", "Pair", "Similarity", "Summary", "find_similar", "read_summary",
           "write_similarity"]

SHOWN = 10
"""Pairs shown (with a page) besides the flagged ones: the closest of the rest."""
MAX_PAGES = 100
"""Flagged pairs with a page, most similar first (similarity.csv lists them all)."""


@dataclass(frozen=True)
class Similarity:
    pairs: tuple[Pair, ...]
    """Every pair that shares a fingerprint, most similar first."""
    shown: tuple[Pair, ...]
    """The flagged pairs and the closest others, with their matched regions."""
    clusters: tuple[tuple[str, ...], ...]
    codes: dict[str, Code]
    base_files: tuple[Path, ...]
    options: Options

    @property
    def flagged(self) -> tuple[Pair, ...]:
        return tuple(p for p in self.pairs if p.flagged)


def find_similar(subs: Sequence[Submission], assignment: Assignment | None,
                 extra_base: Sequence[Path] = (), options: Options = DEFAULT) -> Similarity:
    """Fingerprint every submission, remove the base code, rank the pairs."""
    paths = base_paths(assignment, extra_base)
    base = base_hashes((base_text(p) for p in paths), options.k)
    codes = {s.id: submission_code(s) for s in subs}
    docs = [fingerprint(code, base, options) for code in codes.values()]
    by_id = {d.student: d for d in docs}
    pairs = compare(docs, options)
    top = [p for p in pairs if p.flagged][:MAX_PAGES] + [p for p in pairs if not p.flagged][:SHOWN]
    shown = tuple(replace(p, fragments=fragments(by_id[p.a], by_id[p.b], k=options.k)) for p in top)
    return Similarity(tuple(pairs), shown, tuple(clusters(pairs)), codes, tuple(paths), options)


def write_similarity(found: Similarity, out: Path) -> list[Path]:
    """similarity.csv, similarity.json and the pair pages under `out`."""
    unread = tuple((c.student, c.problem) for c in found.codes.values() if c.problem)
    summary = Summary(found.options.threshold, len(found.codes), (), found.clusters,
                      tuple(p.name for p in found.base_files), unread, found.options.region)
    return write_outputs(out, found.pairs, found.shown, found.codes, summary)
