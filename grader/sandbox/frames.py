"""Frames on a socket: a 4-byte big-endian length, then a UTF-8 JSON object.

The values inside are `wire`'s business; this module needs no torch, so the sandbox
can be launched before torch is imported.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from typing import Any

from grader.errors import WireError

MAX_FRAME_BYTES = 256 * 1024 * 1024
WIRE_VERSION = 1
"""What the grader and its sandbox speak: sent in each side's first message, and checked."""


__all__ = ["MAX_FRAME_BYTES", "WIRE_VERSION", "WireError", "pack", "recv_frame", "recv_frame_until",
           "send_frame"]


def send_frame(sock: socket.socket, doc: dict[str, Any]) -> None:
    sock.sendall(pack(doc))


def recv_frame(sock: socket.socket, max_bytes: int = MAX_FRAME_BYTES) -> dict[str, Any]:
    """Read one frame; raise EOFError if the peer is gone, WireError if it is garbage."""
    (length,) = struct.unpack(">I", _recv_exact(sock, 4))
    if length > max_bytes:
        raise WireError(f"frame of {length} bytes exceeds the {max_bytes}-byte limit")
    try:
        doc = json.loads(_recv_exact(sock, length).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"frame is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise WireError("frame is not a JSON object")
    return doc


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(min(n - len(chunks), 1 << 20))
        if not chunk:
            raise EOFError("peer closed the connection")
        chunks += chunk
    return bytes(chunks)


def recv_frame_until(sock: socket.socket, deadline: float, max_bytes: int) -> dict[str, Any]:
    """`recv_frame` with one deadline for the whole frame (TimeoutError after it)."""
    (length,) = struct.unpack(">I", _recv_exact_until(sock, 4, deadline))
    if length > max_bytes:
        raise WireError(f"a frame of {length} bytes exceeds the {max_bytes}-byte limit")
    body = _recv_exact_until(sock, length, deadline)
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise WireError(f"frame is not JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict):
        raise WireError("frame is not a JSON object")
    return doc


def _recv_exact_until(sock: socket.socket, n: int, deadline: float) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        sock.settimeout(left)
        chunk = sock.recv(min(n - len(chunks), 1 << 20))
        if not chunk:
            raise EOFError("peer closed the connection")
        chunks += chunk
    return bytes(chunks)


def pack(doc: dict[str, Any]) -> bytes:
    """One frame as bytes (for `socket.send_fds`, which sends a frame with descriptors)."""
    body = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return struct.pack(">I", len(body)) + body
