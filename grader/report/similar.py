"""Similar submissions into the reports folder: the similarity stage's own files, then
index.html again (when the folder holds results) so that it shows them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from grader.assignment import Assignment
from grader.intake.discover import Submission
from grader.report.files import write_index_html
from grader.report.writers.reports import read_reports
from grader.similarity.run import Options, Similarity, find_similar, write_similarity

__all__ = ["write_similar"]


def write_similar(subs: Sequence[Submission], a: Assignment, out: Path, base: Sequence[Path] = (),
                  threshold: float | None = None) -> tuple[Similarity, list[Path]]:
    options = Options() if threshold is None else Options(threshold=threshold)
    found = find_similar(subs, a, base, options)
    written = write_similarity(found, out)
    if any(out.glob("*/result.json")):
        written.append(write_index_html(read_reports(out), out / "index.html"))
    return found, written
