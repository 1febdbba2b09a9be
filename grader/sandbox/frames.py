"""Frames on a socket: a 4-byte big-endian length, then a UTF-8 JSON object.

The values inside are `wire`'s business; this module needs no torch, so the sandbox
can be launched before torch is imported.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

MAX_FRAME_BYTES = 256 * 1024 * 1024


class WireError(Exception):
    """A frame or value that is not plain data of the agreed shape."""


def send_frame(sock: socket.socket, doc: dict[str, Any]) -> None:
    body = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")
    sock.sendall(struct.pack(">I", len(body)) + body)


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
