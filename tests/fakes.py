"""An in-process fake sandbox for the fast unit tier.

`InProcessSandbox.spawn()` returns a real `Child` handle whose other end is the real
`sandbox.inside.child.Server`, run on a thread of this process over a socketpair:
the protocol, the wire checks, the student proxy and the pytest session are the real
ones; only the process, the isolation and the limits are missing. So it is for
trusted fixture code, never for hostile input (tests/test_tamper.py uses the real one).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import tempfile
import threading
from typing import Any

from grader.sandbox import protocol
from grader.sandbox.handle import Child, OutputDrain
from grader.sandbox.inside.child import Server


class _FolderServer(Server):
    """The child's server, loading in a private folder as the real child does."""

    def __init__(self, sock: socket.socket, folder: str) -> None:
        super().__init__(sock, lambda device: device)
        self.folder = folder

    def op_load(self, request: protocol.Load) -> protocol.LoadReport:
        with contextlib.chdir(self.folder):
            return super().op_load(request)


class InProcessSandbox:
    """Duck-types `grader.sandbox.host.Sandbox` for `Connection` and `Grading`."""

    healthy = True
    level = None  # provenance reads "none": no isolation was given

    def __init__(self) -> None:
        self._pids = itertools.count(1)
        self._servers: dict[int, tuple[socket.socket, threading.Thread]] = {}
        self.spawned = 0
        self.warm_asked = 0
        self._folder = tempfile.TemporaryDirectory(prefix="grader-fake-")

    def __enter__(self) -> InProcessSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        for pid in list(self._servers):
            self.kill(pid)
        self._folder.cleanup()

    def spawn(self) -> Child:
        grader_end, child_end = socket.socketpair()
        out_read, out_write = socket.socketpair()
        out_write.close()  # the thread's prints go to pytest's capture, not here
        server = _FolderServer(child_end, self._folder.name)
        thread = threading.Thread(target=self._serve, args=(server,), daemon=True)
        thread.start()
        pid = next(self._pids)
        self._servers[pid] = (child_end, thread)
        self.spawned += 1
        return Child(self, pid, grader_end, OutputDrain(out_read, 1 << 16), {"fake": True})  # type: ignore[arg-type]

    @staticmethod
    def _serve(server: Server) -> None:
        with contextlib.suppress(OSError):
            server.serve()
        server.sock.close()

    def kill(self, pid: int) -> tuple[int, float]:
        sock, thread = self._servers.pop(pid, (None, None))
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return -9, 0.0

    def kill_later(self, pid: int) -> None:
        self.kill(pid)

    def check(self) -> None:
        pass

    def restart(self) -> None:
        pass

    may_warm_plots = True

    def warm_plots(self) -> None:
        self.warm_asked += 1

    def describe(self) -> str:
        return "in-process fake (no isolation: trusted test fixtures only)"

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"the fake sandbox has no {name}: add it to tests/fakes.py")
