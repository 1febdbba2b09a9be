"""similarity.json: what the class overview (index.html) shows of the similarity run.

A versioned, explicit format, written by `grader similar` (and `grade --similarity`)
and read back by the index writer, so `grader report` re-renders the section without
fingerprinting again. Only the instructor's pages read it; a student's report never does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FILENAME", "FORMAT", "ShownPair", "Summary", "read_summary", "summary_json"]

FILENAME = "similarity.json"
FORMAT = "grader-similarity/1"


@dataclass(frozen=True)
class ShownPair:
    a: str
    b: str
    similarity: float
    shared: int
    flagged: bool
    page: str
    """The pair's page, relative to the reports folder."""
    reason: str = ""
    """Why it is flagged: "share" or "region" (see `grader.similarity.pairs`); "" if not."""


@dataclass(frozen=True)
class Summary:
    threshold: float
    submissions: int
    pairs: tuple[ShownPair, ...]
    """The flagged pairs and the closest others, most similar first."""
    clusters: tuple[tuple[str, ...], ...]
    base_files: tuple[str, ...] = ()
    unread: tuple[tuple[str, str], ...] = ()
    """(student, why) for the submissions whose code could not be read."""
    region: int = 0
    """Fingerprints in one matched region that flag a pair too (0: not recorded)."""

    @property
    def flagged(self) -> int:
        return sum(p.flagged for p in self.pairs)


def summary_json(summary: Summary) -> str:
    doc: dict[str, Any] = {
        "format": FORMAT, "threshold": summary.threshold, "submissions": summary.submissions,
        "pairs": [vars(p) for p in summary.pairs], "clusters": [list(c) for c in summary.clusters],
        "base_files": list(summary.base_files), "unread": [list(u) for u in summary.unread],
        "region": summary.region,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def read_summary(folder: Path) -> Summary | None:
    """FOLDER/similarity.json, or None when there is none or it is not ours."""
    try:
        doc = json.loads((folder / FILENAME).read_text(encoding="utf-8"))
        if doc.get("format") != FORMAT:
            return None
        return Summary(
            threshold=float(doc["threshold"]), submissions=int(doc["submissions"]),
            pairs=tuple(ShownPair(**p) for p in doc["pairs"]),
            clusters=tuple(tuple(c) for c in doc["clusters"]),
            base_files=tuple(doc.get("base_files", ())),
            unread=tuple((str(s), str(w)) for s, w in doc.get("unread", ())),
            region=int(doc.get("region", 0)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
