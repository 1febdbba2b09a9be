"""The instructor's outputs: similarity.csv, similarity.json and one page per pair.

Pages are rendered by Jinja2 with autoescape on (student code is text, never markup)
and allow no script and no request (Content-Security-Policy `default-src 'none'`).
Each file is written whole to a temporary name and then renamed into place.
"""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2

from grader.errors import OutputError
from grader.similarity.pairs import Pair
from grader.similarity.source import Code
from grader.similarity.summary import FILENAME, ShownPair, Summary, summary_json

__all__ = ["PAGES", "page_name", "render_pair", "similarity_csv", "write_outputs"]

PAGES = "_similarity"
"""The pages' folder under the reports folder (`_`: no student id starts with it)."""
_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
                          autoescape=True, undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    fragment: int
    """1-based fragment this line is in, 0 for none."""


def page_name(rank: int, pair: Pair) -> str:
    return f"{PAGES}/{rank:03d}-{_UNSAFE.sub('_', pair.a)}--{_UNSAFE.sub('_', pair.b)}.html"


def render_pair(pair: Pair, a: Code, b: Code, threshold: float, region: int = 0) -> str:
    return _ENV.get_template("pair.html").render(
        pair=pair, threshold=threshold, region=region, fragments=list(enumerate(pair.fragments, 1)),
        a_lines=_lines(a.text, [f.a_lines for f in pair.fragments]),
        b_lines=_lines(b.text, [f.b_lines for f in pair.fragments]))


def _lines(text: str, spans: Sequence[tuple[int, int]]) -> list[Line]:
    marks: dict[int, int] = {}
    for n, (first, last) in enumerate(spans, 1):
        for line in range(first, last + 1):
            marks.setdefault(line, n)
    return [Line(i, t, marks.get(i, 0)) for i, t in enumerate(text.splitlines(), 1)]


def similarity_csv(pairs: Sequence[Pair], pages: dict[tuple[str, str], str]) -> str:
    """One row per pair that shares a fingerprint, most similar first."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(["student_a", "student_b", "similarity", "shared", "fingerprints_a",
                  "fingerprints_b", "flagged", "reason", "largest_region", "page"])
    for p in pairs:
        out.writerow([_cell(p.a), _cell(p.b), f"{p.similarity:.4f}", p.shared, p.a_prints,
                      p.b_prints, "yes" if p.flagged else "no", p.reason, p.region,
                      pages.get((p.a, p.b), "")])
    return buf.getvalue()


def _cell(text: str) -> str:
    """No spreadsheet formula from a student's folder name (OWASP: CSV injection)."""
    return "'" + text if text.startswith(_FORMULA) else text


def write_outputs(out: Path, pairs: Sequence[Pair], shown: Sequence[Pair], codes: dict[str, Code],
                  summary: Summary) -> list[Path]:
    """similarity.csv, similarity.json and a page for each shown pair, under `out`."""
    pages = {(p.a, p.b): page_name(rank, p) for rank, p in enumerate(shown, 1)}
    written = [_write(out / "similarity.csv", similarity_csv(pairs, pages))]
    for p in shown:
        html = render_pair(p, codes[p.a], codes[p.b], summary.threshold, summary.region)
        written.append(_write(out / pages[(p.a, p.b)], html))
    shown_pairs = tuple(ShownPair(p.a, p.b, p.similarity, p.shared, p.flagged, pages[(p.a, p.b)],
                                  p.reason) for p in shown)
    doc = Summary(summary.threshold, summary.submissions, shown_pairs, summary.clusters,
                  summary.base_files, summary.unread, summary.region)
    written.append(_write(out / FILENAME, summary_json(doc)))
    return written


def _write(target: Path, text: str) -> Path:
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise OutputError.writing(target, exc) from None
    return target
