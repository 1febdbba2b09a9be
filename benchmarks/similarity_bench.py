"""`grader similar` on 200 submissions: wall time (budget: 5 s on the 2-core dev box),
and precision/recall on the planted cases at the default threshold.

    .venv/bin/python benchmarks/similarity_bench.py

The 200 are the planted styles and disguised copies of them (renamed, reordered,
commented, notebooks, one shared function), repeated, so many pairs share code: the
expensive case for comparing, and for working out matched regions.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import similarity_cases as cases

from grader import assignment as assignment_mod
from grader.intake.discover import discover
from grader.similarity.run import find_similar, write_similarity


def main() -> None:
    a = assignment_mod.load(ROOT / "assignments/attention/assignment.yaml", require_hidden=False)
    files, truth = cases.planted()
    with tempfile.TemporaryDirectory() as tmp:
        found = find_similar(discover(cases.write(Path(tmp) / "p", files), a), a)
        flagged = {frozenset((p.a, p.b)) for p in found.flagged}
        hit = len(flagged & truth)
        print(f"planted: {len(files)} submissions, {len(truth)} copied pairs; precision "
              f"{hit / max(1, len(flagged)):.2f}, recall {hit / len(truth):.2f}")
        many = [(f"s{i // len(files):03d}_{s}", name, text)
                for i, (s, name, text) in enumerate(files * (200 // len(files) + 1))][:200]
        subs = discover(cases.write(Path(tmp) / "many", many), a)
        start = time.perf_counter()
        found = find_similar(subs, a)
        write_similarity(found, Path(tmp) / "out")
        took = time.perf_counter() - start
        print(f"{len(subs)} submissions: {took:.2f} s ({len(found.pairs)} pairs sharing code, "
              f"{len(found.flagged)} flagged, {len(found.shown)} pages)")


if __name__ == "__main__":
    main()
