"""The student's figures on the grader's side: untrusted bytes until proven PNG.

The child captures figures (`grader.sandbox.inside.plotting`) and sends them as base64 text in a
JSON answer. Its process runs the student's code, which can send anything; so each
figure is decoded and checked here, in pure Python, before it is kept: the PNG
signature, every chunk's length and CRC, an IHDR of sane dimensions first, image
data that inflates completely within what those dimensions allow, IEND last. Only then
is it a `results.Figure`, which report.html shows as `<img src="data:image/png;...">`
through the autoescaping template, never as markup. At most `MAX_FIGURES` per
submission, each at most `MAX_PNG_BYTES`.

In result.json a figure is kept as base64 (`png_base64`) with its size and where it
was drawn, so `grader report` re-renders without other files; re-read, it is checked
again.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grader.errors import SubmissionError
from grader.results import Figure

__all__ = ["FigureBatch", "MAX_FIGURES", "MAX_PNG_BYTES", "NotAnImage", "checked_batch",
           "figure_from_doc", "png_size"]

MAX_FIGURES = 3
"""Per submission (the child keeps no more either)."""
MAX_PNG_BYTES = 200 * 1024
MAX_SIDE = 4096
"""Pixels, per side."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
"""Samples per pixel by PNG color type."""
_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}


class NotAnImage(SubmissionError, ValueError):
    """The bytes are not a PNG the report may show; the message says why."""


@dataclass(frozen=True)
class FigureBatch:
    """What `student.figures()` gives a test: the figures that passed, and why others
    were left out (too many, too large, not an image)."""

    figures: tuple[Figure, ...] = ()
    left_out: tuple[str, ...] = ()


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a complete, well-formed PNG; NotAnImage otherwise."""
    if not data.startswith(PNG_SIGNATURE):
        raise NotAnImage("not a PNG (wrong signature)")
    pos, header, idat, ended = len(PNG_SIGNATURE), None, bytearray(), False
    while pos < len(data):
        if ended:
            raise NotAnImage("bytes after the end of the image")
        if pos + 12 > len(data):
            raise NotAnImage("truncated chunk")
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length or pos + 12 + length > len(data):
            raise NotAnImage("truncated chunk")
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise NotAnImage(f"chunk {kind!r} fails its checksum")
        if header is None and kind != b"IHDR":
            raise NotAnImage("the first chunk is not IHDR")
        if kind == b"IHDR":
            if header is not None:
                raise NotAnImage("two IHDR chunks")
            header = _header(body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            ended = True
        pos += 12 + length
    if header is None or not ended:
        raise NotAnImage("incomplete PNG (no IHDR or no IEND)")
    if not idat:
        raise NotAnImage("no image data")
    width, height, size = header
    _inflates_to(bytes(idat), size)
    return width, height


def _header(body: bytes) -> tuple[int, int, int]:
    """(width, height, how many bytes the image data must inflate to)."""
    if len(body) != 13:
        raise NotAnImage("malformed IHDR")
    width, height, depth, color, compression, filtering, interlace = struct.unpack(">IIBBBBB", body)
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        raise NotAnImage(f"{width}x{height} pixels (at most {MAX_SIDE} per side)")
    if depth not in _DEPTHS.get(color, ()) or compression or filtering or interlace > 1:
        raise NotAnImage("unsupported PNG header")
    bits = _CHANNELS[color] * depth
    passes = _ADAM7 if interlace else ((0, 0, 1, 1),)
    size = 0
    for x0, y0, dx, dy in passes:
        columns, rows = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if columns > 0 and rows > 0:
            size += rows * (1 + (columns * bits + 7) // 8)  # a filter byte per row
    return width, height, size


_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
          (0, 1, 1, 2))
"""The seven passes of an interlaced PNG: (first column, first row, column step, row step)."""


def _inflates_to(idat: bytes, size: int) -> None:
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(idat, size + 1)
    except zlib.error as exc:
        raise NotAnImage(f"image data is not deflate ({exc})") from None
    if len(raw) > size or inflater.unconsumed_tail:
        raise NotAnImage("image data larger than its dimensions allow")
    if not inflater.eof or len(raw) < size:
        raise NotAnImage("image data ends early")


def checked_figure(png_base64: Any, source: Any) -> Figure:
    """A `Figure` from what the child sent, or NotAnImage."""
    if not isinstance(png_base64, str) or len(png_base64) > 4 * (MAX_PNG_BYTES // 3 + 2):
        raise NotAnImage(f"not base64 text of at most {MAX_PNG_BYTES // 1024} KB")
    try:
        data = base64.b64decode(png_base64, validate=True)
    except (binascii.Error, ValueError):
        raise NotAnImage("not base64") from None
    if len(data) > MAX_PNG_BYTES:
        raise NotAnImage(f"larger than {MAX_PNG_BYTES // 1024} KB")
    width, height = png_size(data)
    text = source if isinstance(source, str) else ""
    return Figure(png_base64=base64.b64encode(data).decode("ascii"), width=width,
                  height=height, source=text[:200])


def checked_batch(value: Any, room: int) -> FigureBatch:
    """The child's answer to `figures` ({figures: [{png, source}], left_out: [str]}),
    checked: at most `room` figures are kept, each a PNG; the rest is said in words."""
    doc = value if isinstance(value, Mapping) else {}
    listed = doc.get("figures")
    raw: list[Any] = listed if isinstance(listed, list) else []
    said = doc.get("left_out")
    notes = [n[:300] for n in said[:10] if isinstance(n, str)] if isinstance(said, list) else []
    kept: list[Figure] = []
    for i, item in enumerate(raw[:50]):
        item = item if isinstance(item, Mapping) else {}
        if len(kept) >= room:
            notes.append(f"{len(raw) - i} more figure(s) not shown: a report shows at most "
                         f"{MAX_FIGURES}")
            break
        try:
            kept.append(checked_figure(item.get("png"), item.get("source")))
        except NotAnImage as exc:
            notes.append(f"a figure was not shown: {exc}")
    return FigureBatch(tuple(kept), tuple(notes))


def figure_from_doc(doc: Any) -> Figure | None:
    """A figure as result.json stores it, checked again; None if it no longer is one."""
    if not isinstance(doc, Mapping):
        return None
    try:
        return checked_figure(doc.get("png_base64"), doc.get("source"))
    except NotAnImage:
        return None
