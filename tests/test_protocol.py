"""The typed messages between the grader and its sandbox: each reads back what it wrote,
another version is refused in words, and garbage is a WireError, never a crash."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from grader.errors import SandboxFailure
from grader.sandbox import frames, host, protocol
from grader.sandbox.frames import WIRE_VERSION, WireError
from grader.sandbox.host import Isolation, Sandbox

ERROR = protocol.ErrorReport("ValueError", "bad", "Traceback...", "call", "ValueError")
REQUESTS: list[Any] = [
    protocol.Load("module", "attention.py", source="x = 1", files={"attention.py": "x = 1"},
                  encodings={"attention.py": "latin-1"}),
    protocol.Load("notebook", "attention.ipynb", cells=("x = 1", "%time y = 2")),
    protocol.Call(protocol.Target(name="f"), [1, {"$tuple": [2]}], {"$dict": {"k": 3}}),
    protocol.Call(protocol.Target(handle=4, attr="forward")),
    protocol.GetAttr(protocol.Target(name="Net")),
    protocol.GetAttr(protocol.Target(handle=2, attr="training")),
    protocol.Has("causal_mask"), protocol.Seed(1234), protocol.Figures(),
    protocol.SpyStart("torch.softmax"), protocol.SpyStop("torch.softmax"), protocol.Exit(),
]
REPLIES: list[tuple[Any, str]] = [
    (protocol.Ok({"$tensor": {"dtype": "float32", "shape": [0], "data": ""}}), "call"),
    (protocol.Ok(protocol.LoadReport(ERROR, (protocol.ErrorReport("E", cell=2),), ("f",))), "load"),
    (protocol.Ok(protocol.LoadReport()), "load"),
    (protocol.Raised(ERROR), "call"),
    (protocol.Missing("attention"), "getattr"),
    (protocol.ProtocolError("unknown op 'nope'"), "nope"),
]


def _wire(doc: dict[str, Any]) -> dict[str, Any]:
    """What the other side reads: the doc through JSON."""
    return json.loads(json.dumps(doc, allow_nan=False))


@pytest.mark.parametrize("message", REQUESTS, ids=lambda m: type(m).__name__)
def test_every_request_reads_back_as_it_was_sent(message: Any) -> None:
    assert protocol.request_from_doc(_wire(message.to_doc())) == message


@pytest.mark.parametrize("message, op", REPLIES, ids=lambda m: type(m).__name__)
def test_every_reply_reads_back_as_it_was_sent(message: Any, op: str) -> None:
    assert protocol.reply_from_doc(_wire(message.to_doc()), op) == message


@pytest.mark.parametrize("message", [
    protocol.Hello(41, "userns"), protocol.Forked(42), protocol.Killed(137, 0.25),
    protocol.ChildHello({"namespaces": ["pid", "net"], "outside_uid": 1_900_000_123}),
    protocol.ZygoteConfig("process", private_root=True, prewarm=False, ro_paths=("/usr",),
                          devices=("/dev/nvidia0",)),
    protocol.ZygoteConfig("bwrap"),
    protocol.ZygoteConfig("bwrap", tmp_dirs=("/tmp/w0", "/tmp/w1")),
    protocol.ZygoteConfig("bwrap", warm_imports=("matplotlib", "matplotlib.pyplot", "seaborn")),
    protocol.Warmed(True), protocol.Warmed(False),
], ids=lambda m: type(m).__name__)
def test_every_control_message_reads_back_as_it_was_sent(message: Any) -> None:
    assert type(message).from_doc(_wire(message.to_doc())) == message


@pytest.mark.parametrize("message", [protocol.Fork({"memory_mb": 2048}), protocol.Kill(42), protocol.Warm()],
                         ids=lambda m: type(m).__name__)
def test_the_zygote_reads_the_requests_it_is_sent(message: Any) -> None:
    assert protocol.control_request_from_doc(_wire(message.to_doc())) == message


def test_the_wire_carries_what_it_carried_before() -> None:
    assert protocol.Fork({"cpu_s": 1}).to_doc() == {"op": "fork", "limits": {"cpu_s": 1}}
    assert protocol.Killed(0, 0.5).to_doc() == {"status": 0, "cpu_s": 0.5}
    assert protocol.Call(protocol.Target(name="f")).to_doc() == {
        "op": "call", "name": "f", "args": [], "kwargs": {"$dict": {}}}
    assert protocol.Raised(ERROR).to_doc()["raised"] == {
        "type": "ValueError", "message": "bad", "traceback": "Traceback...", "where": "call",
        "builtin": "ValueError"}
    assert protocol.with_seed({"op": "has", "name": "f"}, 7)["seed"] == 7
    assert protocol.seed_of(protocol.with_seed(protocol.Has("f").to_doc(), 7)) == 7


# ---------------------------------------------------------------- versions


def test_another_version_is_refused_in_words() -> None:
    for theirs in (WIRE_VERSION + 1, None, "1", True):
        with pytest.raises(protocol.VersionMismatch, match="versions differ"):
            protocol.Hello(1, "userns", version=theirs).checked()
    protocol.Hello(1, "userns").checked()
    old = protocol.Hello.from_doc({"ready": True, "pid": 3, "strategy": "none"})  # no version
    with pytest.raises(protocol.VersionMismatch, match=f"grader speaks version {WIRE_VERSION}"):
        old.checked()


def test_a_zygote_of_another_version_is_the_sandboxs_failure() -> None:
    box = Sandbox(Isolation.PROCESS, spare=False)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    box._control = ours
    frames.send_frame(theirs, protocol.Hello(os.getpid(), "userns", version=WIRE_VERSION + 1).to_doc())
    with pytest.raises(SandboxFailure, match="versions differ"):
        box.wait_ready()
    assert box._control is None  # stopped: nothing waits on it
    theirs.close()


def test_a_child_of_another_version_is_the_sandboxs_failure() -> None:
    stopped: list[bool] = []
    hello = protocol.ChildHello({"namespaces": []}, version=WIRE_VERSION + 1)
    with pytest.raises(SandboxFailure, match="a sandboxed child speaks"):
        host._checked_hello(hello, lambda: stopped.append(True))
    assert stopped == [True]


def test_the_zygote_refuses_a_config_of_another_version() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    config = {**protocol.ZygoteConfig(prewarm=False).to_doc(), "version": WIRE_VERSION + 1}
    code = ("import json, sys; from grader.sandbox.inside import zygote; "
            "zygote.main(int(sys.argv[1]), json.loads(sys.argv[2]))")
    proc = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno()), json.dumps(config)],
                            pass_fds=[theirs.fileno()])
    theirs.close()
    try:
        hello = protocol.Hello.from_doc(frames.recv_frame_until(ours, time.monotonic() + 120, 1 << 16))
        with pytest.raises(WireError, match="versions differ"):
            hello.checked()
        assert proc.wait(60) == 2
    finally:
        proc.kill()
        ours.close()


# ---------------------------------------------------------------- garbage


def _reader_of(data: bytes) -> socket.socket:
    a, b = socket.socketpair()

    def write() -> None:
        b.sendall(data)
        b.close()

    threading.Thread(target=write, daemon=True).start()
    return a


@pytest.mark.parametrize("data, error", [
    (b"\x00\x00\x00\x05hello", WireError),                 # not JSON
    (b"\x00\x00\x00\x02[]", WireError),                    # JSON, not an object
    (b"\x00\x00\x00\x02\xff\xfe", WireError),              # not UTF-8
    (b"\x00\x00\x01\x00{\"pid\"", EOFError),               # truncated, then gone
    (b"\x00\x00", EOFError),                               # a length cut short
    (b"\x7f\xff\xff\xff", WireError),                      # too big to be read
], ids=["garbage", "array", "not-utf8", "truncated", "short-length", "too-big"])
def test_a_garbage_or_truncated_frame_is_refused(data: bytes, error: type[Exception]) -> None:
    for read in (lambda s: frames.recv_frame(s, 1 << 20),
                 lambda s: frames.recv_frame_until(s, time.monotonic() + 5, 1 << 20)):
        sock = _reader_of(data)
        try:
            with pytest.raises(error):
                read(sock)
        finally:
            sock.close()


def test_a_truncated_frame_that_stalls_is_a_timeout() -> None:
    sock, peer = socket.socketpair()
    peer.sendall(b"\x00\x00\x00\x10{\"ok\"")  # then nothing: a trickle that stops
    try:
        with pytest.raises(TimeoutError):
            frames.recv_frame_until(sock, time.monotonic() + 0.3, 1 << 20)
    finally:
        sock.close()
        peer.close()


@pytest.mark.parametrize("doc", [
    {}, {"op": "pickle"}, {"op": 3}, {"op": "has"}, {"op": "seed", "seed": "1; rm"},
    {"op": "call", "handle": "x"}, {"op": "load", "kind": "module"},
    {"op": "load", "kind": "exe", "source": ""}, {"op": "has", "name": "f", "seed": "x"},
])
def test_a_malformed_request_is_a_wire_error(doc: dict[str, Any]) -> None:
    with pytest.raises(WireError):
        protocol.request_from_doc(doc)
        protocol.seed_of(doc)


@pytest.mark.parametrize("doc", [
    {"ready": False, "pid": 1}, {"ready": True, "pid": "1"}, {"pid": 1},
])
def test_a_malformed_hello_is_a_wire_error(doc: dict[str, Any]) -> None:
    with pytest.raises(WireError):
        protocol.Hello.from_doc(doc)


def test_malformed_control_answers_are_wire_errors() -> None:
    for doc in (protocol.ControlError("bad request").to_doc(), {"pid": "1; rm -rf /"},
                {"pid": True}, {"pid": 0}):
        with pytest.raises(WireError, match="could not fork"):
            protocol.Forked.from_doc(doc)
    with pytest.raises(WireError, match="answered a kill"):
        protocol.Killed.from_doc({"status": "dead"})
    for doc in ({}, {"warm": "yes"}, protocol.ControlError("bad request").to_doc()):
        with pytest.raises(WireError, match="answered a warm-up"):
            protocol.Warmed.from_doc(doc)
    for doc in ({"op": "exec"}, {"op": "kill", "pid": "1"}, {"op": "kill"}):
        with pytest.raises(WireError):
            protocol.control_request_from_doc(doc)


def test_a_forged_reply_is_cut_to_size() -> None:
    long = protocol.reply_from_doc({"raised": {"type": "E", "message": "x" * 10**6,
                                               "builtin": "ValueError" * 50}}, "call")
    assert isinstance(long, protocol.Raised)
    assert len(long.error.message) == protocol.MAX_REPLY_TEXT and len(long.error.builtin or "") == 100
    for bad in ({"ok": 1}, {"raised": []}, {"missing": 3}, {"verdict": "passed"}):
        with pytest.raises(WireError):
            protocol.reply_from_doc(bad, "call")
