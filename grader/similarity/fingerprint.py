"""Fingerprints of Python code: normalised tokens, k-grams, winnowing.

The tokens come from the standard library's `tokenize` (nothing is imported, compiled
or run). Normalising makes a copy look like its original whatever it was renamed to:

- comments, blank lines, indentation and docstrings are dropped;
- a name becomes `N` (a keyword, a builtin and `self` stay as they are), an attribute
  of `self` becomes `A`, any other attribute keeps its name (`.transpose`, `.softmax`:
  the API a solution calls is its shape, and renaming cannot change it);
- a number becomes `#`, a string `S`.

Every run of `K` normalised tokens is hashed (CRC-32 of the tokens, then a polynomial:
the same on every run and machine), and winnowing (Schleimer, Wilkerson and Aiken 2003)
keeps the smallest hash of every `W` consecutive ones: any match of `K + W - 1` tokens
or more is sure to share a fingerprint.
"""

from __future__ import annotations

import builtins
import io
import keyword
import tokenize
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["K", "Tokens", "W", "kgram_hashes", "normalise", "winnow"]

K = 12
"""Tokens in a k-gram."""
W = 8
"""Hashes in a winnowing window."""

_KEEP = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"self"}
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER}
_FSTRING_PARTS = {name for name in ("FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, name)}
_MOD = (1 << 61) - 1
_BASE = 1_000_003
_MAX_RESTARTS = 200


@dataclass(frozen=True)
class Tokens:
    """A text's normalised tokens and the line (1-based) each starts on."""

    kinds: tuple[str, ...]
    lines: tuple[int, ...]


def normalise(text: str) -> Tokens:
    """The normalised tokens of `text`; what `tokenize` cannot read is skipped, a line
    at a time, so a syntax error or a stray prose line costs only its own tokens."""
    raw = list(_tolerant_tokens(text))
    kinds: list[str] = []
    lines: list[int] = []
    for i, tok in enumerate(raw):
        kind = _kind(raw, i)
        if kind == ";" and (not kinds or kinds[-1] == ";"):
            continue  # a blank statement: after a docstring, or at the start
        if kind:
            kinds.append(kind)
            lines.append(tok.start[0])
    return Tokens(tuple(kinds), tuple(lines))


def _tolerant_tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    lines = text.splitlines(keepends=True)
    start = 0
    for _ in range(_MAX_RESTARTS):
        if start >= len(lines):
            return
        readline = io.StringIO("".join(lines[start:])).readline
        last = 0
        try:
            for tok in tokenize.generate_tokens(readline):
                last = tok.start[0]
                yield tok._replace(start=(tok.start[0] + start, tok.start[1]))
            return
        except (tokenize.TokenError, SyntaxError) as exc:  # IndentationError is one
            where = getattr(exc, "lineno", None) or (exc.args[1][0] if len(exc.args) > 1 else last)
            start += max(int(where or 0), last, 1)


def _kind(raw: list[tokenize.TokenInfo], i: int) -> str:
    tok = raw[i]
    if tok.type in _SKIP or tok.type == tokenize.ERRORTOKEN and not tok.string.strip():
        return ""
    if tok.type == tokenize.NAME:
        return _name(raw, i)
    if tok.type == tokenize.NUMBER:
        return "#"
    if tok.type == tokenize.STRING or tokenize.tok_name[tok.type] == "FSTRING_START":
        return "" if _is_docstring(raw, i) else "S"
    if tokenize.tok_name[tok.type] in _FSTRING_PARTS:
        return ""
    if tok.type == tokenize.NEWLINE or tok.string == ";":
        return ";"
    return tok.string


def _name(raw: list[tokenize.TokenInfo], i: int) -> str:
    word = raw[i].string
    if i >= 1 and raw[i - 1].string == ".":
        return "A" if i >= 2 and raw[i - 2].string == "self" else word
    return word if word in _KEEP else "N"


def _is_docstring(raw: list[tokenize.TokenInfo], i: int) -> bool:
    """A string that is a statement of its own (a docstring, or prose in quotes)."""
    quiet = (tokenize.NL, tokenize.COMMENT)
    before = next((raw[j] for j in range(i - 1, -1, -1) if raw[j].type not in quiet), None)
    after = next((raw[j] for j in range(i + 1, len(raw)) if raw[j].type not in quiet), None)
    starts = before is None or before.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    return starts and (after is None or after.type in (tokenize.NEWLINE, tokenize.ENDMARKER))


def kgram_hashes(kinds: tuple[str, ...], k: int = K) -> list[int]:
    """The hash of the k-gram starting at each position (none when fewer than k tokens)."""
    if len(kinds) < k:
        return []
    values = [zlib.crc32(kind.encode()) for kind in kinds]
    top = pow(_BASE, k - 1, _MOD)
    h = 0
    for v in values[:k]:
        h = (h * _BASE + v) % _MOD
    out = [h]
    for i in range(k, len(values)):
        h = ((h - values[i - k] * top) * _BASE + values[i]) % _MOD
        out.append(h)
    return out


def winnow(hashes: list[int], w: int = W) -> dict[int, int]:
    """The fingerprints: hash -> the first k-gram position where winnowing picked it
    (the rightmost smallest hash of each window of `w`)."""
    picked: dict[int, int] = {}
    if 0 < len(hashes) < w:
        j = min(range(len(hashes)), key=hashes.__getitem__)
        return {hashes[j]: j}
    window: deque[int] = deque()
    for i, h in enumerate(hashes):
        while window and hashes[window[-1]] >= h:
            window.pop()
        window.append(i)
        if window[0] <= i - w:
            window.popleft()
        if i >= w - 1:
            picked.setdefault(hashes[window[0]], window[0])
    return picked
