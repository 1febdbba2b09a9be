"""The grader's handle on one student's child: its protocol socket, its drained output,
and the means to end it (through the sandbox that forked it).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from grader.sandbox import frames, protocol
from grader.sandbox.frames import recv_frame_until

if TYPE_CHECKING:
    from grader.sandbox.host import Sandbox

MAX_CHILD_FRAME_BYTES = 64 * 1024 * 1024
"""A frame from a student's child larger than this ends it (the grader never buffers more)."""


class OutputDrain:
    """Reads a child's stdout+stderr to the end, keeping only the first `limit` bytes."""

    def __init__(self, sock: socket.socket, limit: int) -> None:
        self.sock = sock
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:
                break
            if not chunk:
                break
            room = self.limit - len(self.kept)
            self.kept += chunk[: max(room, 0)]
            self.dropped += max(len(chunk) - max(room, 0), 0)
        self.sock.close()

    def text(self, wait_s: float = 0.5) -> tuple[str, bool]:
        self.thread.join(wait_s)
        return bytes(self.kept).decode("utf-8", errors="replace"), self.dropped > 0


CLOSED = -2
"""`Child.exit_status` of a child asked to exit: the zygote reaps it in the background."""


class Child:
    """One student's process, as seen from the grader."""

    def __init__(self, sandbox: "Sandbox", pid: int, sock: socket.socket, drain: OutputDrain,
                 isolation: dict[str, Any] | None = None):
        self.sandbox = sandbox
        self.pid = pid
        self.sock = sock
        self.drain = drain
        self.exit_status: int | None = None
        self.cpu_s = 0.0
        """CPU seconds the child (and all it started) used, known once it is killed."""
        self.isolation: dict[str, Any] = isolation or {}
        """What the child reported about its isolation before any student code ran."""

    @property
    def alive(self) -> bool:
        return self.exit_status is None

    def request(self, doc: dict[str, Any] | protocol.Request, timeout_s: float) -> dict[str, Any]:
        """`ask`, with the checked answer as the JSON object it was."""
        frame = doc if isinstance(doc, dict) else doc.to_doc()
        return self._exchange(frame, timeout_s).to_doc()

    def ask(self, request: protocol.Request, timeout_s: float) -> protocol.Reply:
        """Send a request and wait for its answer; raise TimeoutError or EOFError."""
        return self._exchange(request.to_doc(), timeout_s)

    def _exchange(self, doc: dict[str, Any], timeout_s: float) -> protocol.Reply:
        """One request and its answer.

        The answer comes from a process the student controls: it is read with one
        deadline for the whole frame (a trickle of bytes cannot hold the grader), at most
        `MAX_CHILD_FRAME_BYTES`, and checked for shape; anything else raises
        `frames.WireError` and the child is killed.
        """
        deadline = time.monotonic() + max(timeout_s, 0.001)
        try:
            self.sock.settimeout(max(timeout_s, 0.001))
            frames.send_frame(self.sock, doc)
            reply = recv_frame_until(self.sock, deadline, MAX_CHILD_FRAME_BYTES)
            return protocol.reply_from_doc(reply, doc.get("op"))
        except frames.WireError:
            self.kill()
            raise
        except TimeoutError:
            self.kill()
            raise TimeoutError(f"no answer within {timeout_s:.0f} s") from None
        except (EOFError, OSError):
            self.kill()
            raise EOFError("the student's process ended") from None

    def close(self) -> None:
        """Ask the child to exit, then have the zygote kill and reap it in the background
        (~25 ms of the zygote's time that the grading need not wait for; the next
        `spawn` waits for it, so no two students' children ever overlap)."""
        if not self.alive:
            return
        try:
            frames.send_frame(self.sock, protocol.Exit().to_doc())
            reply = recv_frame_until(self.sock, time.monotonic() + 0.5, 1 << 16)
            self.cpu_s = float((reply.get("value") or {}).get("cpu_s", 0.0))
        except (OSError, EOFError, TimeoutError, ValueError, TypeError, AttributeError,
                frames.WireError):
            pass
        self.exit_status = CLOSED
        self.sock.close()
        self.sandbox.kill_later(self.pid)

    def kill(self) -> int:
        if self.exit_status is None:
            self.exit_status, self.cpu_s = self.sandbox.kill(self.pid)
            self.sock.close()
        return self.exit_status
