"""Comparing every submission with every other: shared fingerprints, ranked pairs,
matched regions and clusters.

A pair's similarity is the share of the smaller submission's fingerprints that the
other has too (after base code is removed), so a partial copy, one function of a
larger file, still scores high. A pair is flagged when its similarity reaches the
threshold and it shares at least `MIN_SHARED` fingerprints (a nearly empty submission
is not "90 % the same" as anything): reason "share". It is also flagged when one
matched region (shared fingerprints that run in step in both files, see `fragments`)
holds at least `Options.region` of them: reason "region". That catches one copied
function of a file otherwise written alone, whose share stays under the threshold;
regions are only worked out for pairs sharing that many fingerprints, which few
independent pairs do. Fingerprints found in more than `common` of all
submissions (and more than `MIN_COMMON` of them) are idioms, not copies, and are left
out. Flagged pairs are joined into clusters with union-find; a cluster of three or
more is reported as a group.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from grader.similarity.fingerprint import K, Tokens, W, kgram_hashes, normalise, winnow
from grader.similarity.source import Code

__all__ = ["Document", "Fragment", "Options", "Pair", "clusters", "compare", "fingerprint"]

MIN_SHARED = 8
MIN_COMMON = 10


@dataclass(frozen=True)
class Options:
    threshold: float = 0.4
    """A pair whose similarity reaches this is flagged."""
    common: float = 0.5
    """Fingerprints in more than this share of the submissions are idioms, ignored."""
    region: int = 12
    """A pair with one matched region of this many fingerprints is flagged too. On the
    planted cases the smallest copied function (12 lines, renamed) makes a region of 27
    and independent solutions share regions of 6 at most; the planted functions of 9-15
    lines have 14-36 fingerprints (tests/test_similarity.py prints the numbers)."""
    k: int = K
    w: int = W


DEFAULT = Options()

@dataclass(frozen=True)
class Document:
    """One submission's code, tokens and fingerprints (base code already removed)."""

    code: Code
    tokens: Tokens
    prints: dict[int, int]
    """Fingerprint hash -> the k-gram position (token index) where it was first picked."""

    @property
    def student(self) -> str:
        return self.code.student


@dataclass(frozen=True)
class Fragment:
    """A matched region: lines (first, last, 1-based, inclusive) in each submission."""

    a_lines: tuple[int, int]
    b_lines: tuple[int, int]
    fingerprints: int


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    similarity: float
    """Shared fingerprints over the smaller submission's fingerprints, 0..1."""
    shared: int
    a_prints: int
    b_prints: int
    flagged: bool
    fragments: tuple[Fragment, ...] = ()
    reason: str = ""
    """Why it is flagged: "share" (similarity reached the threshold), "region" (one
    matched region reached `Options.region` fingerprints), "" when it is not."""
    region: int = 0
    """Fingerprints in the largest matched region; 0 when not worked out (the pair
    shares fewer than `Options.region` fingerprints, so no region can reach it)."""


def fingerprint(code: Code, base: frozenset[int], options: Options = DEFAULT) -> Document:
    tokens = normalise(code.text)
    prints = winnow(kgram_hashes(tokens.kinds, options.k), options.w)
    return Document(code, tokens, {h: p for h, p in prints.items() if h not in base})


def compare(docs: Sequence[Document], options: Options = DEFAULT) -> list[Pair]:
    """Every pair that shares a fingerprint, most similar first (ties: by names)."""
    index: dict[int, list[int]] = defaultdict(list)
    for i, doc in enumerate(docs):
        for h in doc.prints:
            index[h].append(i)
    limit = max(MIN_COMMON, options.common * len(docs))
    idioms = {h for h, where in index.items() if len(where) > limit}
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for h, where in index.items():
        if h not in idioms:
            for pair in itertools.combinations(where, 2):
                counts[pair] += 1
    sizes = [len(doc.prints.keys() - idioms) for doc in docs]
    pairs = [_pair(docs[i], docs[j], n, sizes[i], sizes[j], idioms, options)
             for (i, j), n in counts.items()]
    return sorted(pairs, key=lambda p: (-p.similarity, -p.shared, p.a, p.b))


def _pair(a: Document, b: Document, shared: int, na: int, nb: int, idioms: set[int],
          options: Options) -> Pair:
    similarity = shared / max(1, min(na, nb))
    region = 0
    if shared >= options.region:
        region = max((f.fingerprints for f in fragments(a, b, idioms, options.k)), default=0)
    if similarity >= options.threshold and shared >= MIN_SHARED:
        reason = "share"
    elif shared >= options.region and region >= options.region:
        reason = "region"
    else:
        reason = ""
    if a.student > b.student:
        a, b, na, nb = b, a, nb, na
    return Pair(a.student, b.student, round(similarity, 4), shared, na, nb, bool(reason),
                reason=reason, region=region)


def fragments(a: Document, b: Document, idioms: set[int] = frozenset(),  # type: ignore[assignment]
              k: int = K) -> tuple[Fragment, ...]:
    """The shared fingerprints grouped into regions that run in step in both files."""
    matches = sorted((a.prints[h], b.prints[h]) for h in a.prints.keys() & b.prints.keys()
                     if h not in idioms)
    groups: list[list[tuple[int, int]]] = []
    for pa, pb in matches:
        last = groups[-1][-1] if groups else None
        if last and pa - last[0] <= 2 * k and 0 <= pb - last[1] <= 2 * k:
            groups[-1].append((pa, pb))
        else:
            groups.append([(pa, pb)])
    return tuple(Fragment(_lines(a.tokens, [m[0] for m in g], k), _lines(b.tokens, [m[1] for m in g], k),
                          len(g)) for g in groups)


def _lines(tokens: Tokens, starts: list[int], k: int) -> tuple[int, int]:
    last = min(max(starts) + k - 1, len(tokens.lines) - 1)
    return tokens.lines[min(starts)], tokens.lines[last]


def clusters(pairs: Sequence[Pair]) -> list[tuple[str, ...]]:
    """Groups of three or more students joined by flagged pairs, largest first."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in pairs:
        if p.flagged:
            parent[root(p.a)] = root(p.b)
    groups: dict[str, list[str]] = defaultdict(list)
    for x in list(parent):
        groups[root(x)].append(x)
    found = [tuple(sorted(g)) for g in groups.values() if len(g) >= 3]
    return sorted(found, key=lambda g: (-len(g), g))
