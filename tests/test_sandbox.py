"""The sandbox itself: what a child sees, what it may do, and what is left after it.

One warm Sandbox per isolation level for the whole module (a zygote costs seconds);
each test spawns fresh children from it. `bwrap` tests are marked `sandbox` and skipped
where bubblewrap does not work. End-to-end attacks through `grader grade` are in
test_tamper.py.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from grader.errors import SandboxUnavailable
from grader.sandbox import host as sandbox
from grader.sandbox import launch, wire
from grader.sandbox.host import Isolation, Limits, Sandbox

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
TINY = ROOT / "fixtures" / "tiny"
LINUX = sys.platform.startswith("linux")
BWRAP = LINUX and sandbox.bwrap_works()
AS_ROOT = LINUX and os.geteuid() == 0
LIMITS = Limits(load_s=5, per_test_s=3, per_submission_s=30, memory_mb=1024, cpu_s=1,
                processes=32, file_size_mb=4, output_kb=64)
EXPECTED_ENV = {"HOME", "TMPDIR", "PATH", "LANG", "MPLBACKEND", "OMP_NUM_THREADS", "USER",
                "LOGNAME"}

MODES = [
    pytest.param("bwrap", marks=[pytest.mark.sandbox,
                                 pytest.mark.skipif(not BWRAP, reason="bubblewrap does not work here")]),
    pytest.param("process", marks=pytest.mark.skipif(not LINUX, reason="Linux isolation")),
]


@pytest.fixture(scope="module")
def boxes() -> Iterator[dict[str, Sandbox]]:
    """One warm sandbox per level for the whole module, started on first use."""
    started: dict[str, Sandbox] = {}
    yield started
    for sb in started.values():
        sb.stop()


def _box(boxes: dict[str, Sandbox], mode: str) -> Sandbox:
    if mode not in boxes:
        sb = Sandbox(Isolation(mode), LIMITS)
        sb.start()
        boxes[mode] = sb
    return boxes[mode]


@pytest.fixture(params=MODES)
def box(request: pytest.FixtureRequest, boxes: dict[str, Sandbox]) -> Sandbox:
    return _box(boxes, request.param)


def load(child: sandbox.Child, source: str, timeout: float = 5) -> dict[str, Any]:
    return child.request({"op": "load", "kind": "module", "source": source,
                          "filename": "solution.py"}, timeout)


def call(child: sandbox.Child, name: str, *args: Any, timeout: float = 5) -> Any:
    reply = child.request({"op": "call", "name": name, "args": wire.encode(list(args)),
                           "kwargs": {"$dict": {}}}, timeout)
    if "raised" in reply:
        return reply
    return wire.decode(reply["value"])


def run(box: Sandbox, source: str, name: str = "f", *args: Any, timeout: float = 5) -> tuple[Any, sandbox.Child]:
    """Load `source` in a fresh child, call `name`, close the child."""
    child = box.spawn()
    try:
        reply = load(child, source, timeout)
        assert reply.get("ok"), reply
        assert reply["value"]["error"] is None, reply["value"]["error"]
        return call(child, name, *args, timeout=timeout), child
    finally:
        child.close()


def eventually(predicate: Any, within_s: float = 5.0) -> bool:
    """A closed child is killed and reaped by the zygote in the background, right after
    `close()` returns: what it left behind is gone within moments, not at once."""
    deadline = time.monotonic() + within_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(predicate())


def processes_with(word: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/cmdline").read_bytes() + Path(f"/proc/{entry}/comm").read_bytes()
            except OSError:
                continue
            if word.encode() in text:
                found.append(entry)
    return found


# ---------------------------------------------------------------- levels, without a zygote


def test_auto_falls_back_to_process_without_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "_BWRAP_OK", False)
    assert Sandbox(Isolation.AUTO).resolve_level() is Isolation.PROCESS
    assert Sandbox(Isolation.PROCESS).resolve_level() is Isolation.PROCESS
    with pytest.raises(SandboxUnavailable, match="--sandbox auto"):
        Sandbox(Isolation.BWRAP).resolve_level()
    monkeypatch.setattr(launch, "_BWRAP_OK", True)
    assert Sandbox(Isolation.AUTO).resolve_level() is Isolation.BWRAP


def test_readonly_view_holds_the_runtime_and_nothing_of_the_instructor() -> None:
    paths = sandbox.readonly_paths()
    assert any(Path(sys.prefix).resolve() == Path(p).resolve() or
               Path(sys.prefix).resolve().is_relative_to(Path(p).resolve()) for p in paths)
    for p in paths:
        resolved = Path(p).resolve()
        assert not (resolved / "assignments").exists(), p
        assert resolved not in (REPO, TINY, Path.home(), Path.cwd()), p
        assert not REPO.is_relative_to(resolved) or resolved == Path("/"), p


def test_runtime_paths_show_the_interpreter_not_the_folders_around_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every import path entry is bound, but never the current folder (`python -m`
    puts it on the path), the assignment, or a piece of a grader checkout other than
    the interpreter's own prefix (a repository's .venv)."""
    from grader.sandbox import interpreter

    site = tmp_path / "site-packages"
    work = tmp_path / "class"
    assignment = tmp_path / "course" / "attention"
    for folder in (site, work / "submissions", assignment / "hidden"):
        folder.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", [str(work), str(site), str(assignment / "hidden"),
                                      str(REPO / "tests"), "", "relative/entry", *sys.path])
    paths = interpreter.runtime_paths(hidden=(assignment,))
    assert str(site) in paths and sys.prefix in paths
    for shown in (work, assignment / "hidden", REPO / "tests", REPO):
        assert str(shown) not in paths
    assert not any(not os.path.isabs(p) for p in paths)
    if Path(sys.prefix).resolve().is_relative_to(REPO):  # this repository's .venv
        assert sys.prefix in paths


@pytest.mark.skipif(not LINUX, reason="bubblewrap is Linux only")
def test_bwrap_command_line() -> None:
    argv = sandbox._zygote_argv(Isolation.BWRAP, 7, LIMITS)
    assert argv[0] == "bwrap"
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent",
                 "--new-session"):
        assert flag in argv
    assert argv[argv.index("--tmpfs") - 2:argv.index("--tmpfs")] == ["--size", str(64 * 1024 * 1024)]
    if os.geteuid() == 0:
        # No user namespace (uid 0 there is uid 0 outside, where RLIMIT_NPROC does not
        # apply); only the capabilities the zygote needs to give children their own uid.
        assert "--unshare-user" not in argv and "--uid" not in argv
        caps = [argv[i + 1] for i, a in enumerate(argv) if a == "--cap-add"]
        assert sorted(caps) == ["CAP_KILL", "CAP_SETGID", "CAP_SETUID"]
        assert argv[argv.index("--cap-drop") + 1] == "ALL"
    else:
        assert "--unshare-user" in argv
    sources = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
    assert str(Path(sandbox.__file__).parents[1]) in sources
    assert not any(Path(s).resolve() in (REPO, TINY) for s in sources)


def test_checked_reply_turns_forgeries_into_wire_errors() -> None:
    ok = sandbox.checked_reply({"op": "call"}, {"ok": True, "value": 5, "extra": "ignored"})
    assert ok == {"ok": True, "value": 5}
    load_req = {"op": "load"}
    good = {"ok": True, "value": {"error": None, "cell_errors": [], "defined": ["add"]}}
    assert sandbox.checked_reply(load_req, good)["value"]["defined"] == ["add"]
    for bad in (
        {"ok": True, "value": {"error": "x", "cell_errors": 5, "defined": {}}},
        {"ok": True, "value": [1, 2]},
        {"ok": True, "value": {"error": None, "cell_errors": [{"type": 1}], "defined": []}},
        {"ok": True, "value": {"error": None, "cell_errors": [{"type": "E", "message": "m"}],
                               "defined": []}},  # a cell error without its cell number
    ):
        with pytest.raises(wire.WireError):
            sandbox.checked_reply(load_req, bad)
    for bad in ({"ok": False}, {"ok": "yes"}, {"raised": "boom"}, {"raised": {"message": 3}},
                {"verdict": "passed"}, {}):
        with pytest.raises(wire.WireError):
            sandbox.checked_reply({"op": "call"}, bad)
    long = sandbox.checked_reply({"op": "call"}, {"raised": {"type": "E", "message": "x" * 10**6}})
    assert len(long["raised"]["message"]) == sandbox.MAX_REPLY_TEXT


def test_frames_have_one_deadline_and_a_cap() -> None:
    a, b = socket.socketpair()
    try:
        b.sendall(struct.pack(">I", sandbox.MAX_CHILD_FRAME_BYTES + 1))
        with pytest.raises(wire.WireError, match="exceeds"):
            sandbox.recv_frame_until(a, time.monotonic() + 1, sandbox.MAX_CHILD_FRAME_BYTES)
        b.sendall(struct.pack(">I", 100) + b"{")  # then nothing: a trickle that stops
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            sandbox.recv_frame_until(a, time.monotonic() + 0.3, 1000)
        assert time.monotonic() - started < 1.0
    finally:
        a.close()
        b.close()


# ---------------------------------------------------------------- what a child gets


PROBE = r'''
import os, socket, json
def f(paths, port):
    out = {"uid": os.getuid(), "cwd": os.getcwd(), "cwd_files": sorted(os.listdir(".")),
           "root": sorted(os.listdir("/")), "env": dict(os.environ),
           "fds": sorted(int(x) for x in os.listdir("/proc/self/fd")),
           "hostname": socket.gethostname(), "readable": {}, "net": {}}
    for p in paths:
        try:
            with open(p, "rb") as fh:
                fh.read(1)
            out["readable"][p] = True
        except OSError as exc:
            out["readable"][p] = exc.strerror
    for host in ("127.0.0.1", "1.1.1.1"):
        s = socket.socket()
        s.settimeout(1)
        try:
            s.connect((host, port))
            out["net"][host] = "connected"
        except OSError as exc:
            out["net"][host] = str(exc.strerror or exc)
        finally:
            s.close()
    return out
'''


def test_isolation_facts(box: Sandbox) -> None:
    first = box.spawn()
    second = box.spawn()
    try:
        facts = first.isolation
        assert {"pid", "net", "ipc"} <= set(facts["namespaces"]), facts
        assert facts["notes"] == [], facts
        assert facts["limits"]["processes"] == LIMITS.processes
        assert facts["limits"]["file_size_mb"] == LIMITS.file_size_mb
        assert facts["limits"]["cpu_s"] == LIMITS.cpu_s
        if AS_ROOT:
            # A uid of its own, different for every child.
            assert facts["outside_uid"] >= 1_900_000_000
            assert facts["outside_uid"] != second.isolation["outside_uid"]
        if box.level is Isolation.BWRAP:
            assert facts["filesystem"] == "bwrap"
        elif AS_ROOT:
            assert facts["filesystem"] == "private-root"
        assert box.describe().startswith(sandbox.describe(box.level).split(" (")[0])
        assert str(second.isolation["outside_uid"]) in box.describe()  # the latest child
    finally:
        first.close()
        second.close()


def test_child_sees_only_its_copy_and_the_runtime(box: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "instructor-secret.txt"
    secret.write_text("secret")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.1)
    paths = [str(secret), str(TINY / "hidden" / "test_add.py"), str(TINY / "reference.py"),
             str(REPO / "pyproject.toml"), str(Path(sys.prefix) / "lib")]
    try:
        out, child = run(box, PROBE, "f", paths, listener.getsockname()[1])
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
    assert set(out["env"]) == EXPECTED_ENV
    assert out["env"]["HOME"] == out["env"]["TMPDIR"] == out["cwd"]
    assert out["cwd_files"] == ["solution.py"]
    assert out["hostname"] == "sandbox"
    assert out["net"]["127.0.0.1"] != "connected" and out["net"]["1.1.1.1"] != "connected"
    # Only stdin, stdout, stderr, its protocol socket on fd 3 (and listdir's own fd):
    # the zygote's control socket is not inherited.
    assert out["fds"][:4] == [0, 1, 2, 3] and len(out["fds"]) == 5
    if box.level is Isolation.BWRAP or AS_ROOT:
        for p in paths[:4]:
            assert out["readable"][p] != True, p  # noqa: E712
        # Only what the runtime needs: a venv inside a checkout shows as that venv alone.
        runtime_tops = {Path(p).parts[1] for p in sandbox.readonly_paths()}
        assert set(out["root"]) <= runtime_tops | {"dev", "proc", "tmp", "opt", "etc"}, out["root"]
        assert not {"assignments", "reference", "reports"} & set(out["root"])
    if AS_ROOT:
        assert out["uid"] != 0


def test_submission_copy_names_cannot_escape(box: Sandbox) -> None:
    child = box.spawn()
    try:
        reply = child.request({"op": "load", "kind": "module", "filename": "solution.py",
                               "source": "import os\ndef f():\n    return sorted(os.listdir('.'))\n",
                               "files": {"solution.py": "x = 1\n", "answers.yaml": "a: 1\n",
                                         "../../escape.txt": "no", "/etc/evil": "no"}}, 5)
        assert reply["ok"]
        assert call(child, "f") == ["answers.yaml", "escape.txt", "evil", "solution.py"]
    finally:
        child.close()


def test_no_state_carried_between_children(box: Sandbox) -> None:
    first_src = (
        "import os, torch\n"
        "torch.allclose = lambda *a, **k: True\n"
        "os.environ['LEAK'] = '1'\n"
        "open('left-behind.txt', 'w').write('x')\n"
        "def f():\n    return os.getcwd()\n")
    first_dir, first = run(box, first_src)
    second_src = (
        "import os, torch\n"
        "def f(other):\n"
        "    return [torch.allclose(torch.zeros(1), torch.ones(1)), 'LEAK' in os.environ,\n"
        "            sorted(os.listdir('.')), os.path.exists(other)]\n")
    out, second = run(box, second_src, "f", first_dir)
    assert out == [False, False, ["solution.py"], False]
    assert first.isolation["workdir"] != second.isolation["workdir"]


# ---------------------------------------------------------------- limits and leftovers


def test_processes_left_behind_die_with_the_child(box: Sandbox) -> None:
    src = (
        "import os, subprocess\n"
        "def f():\n"
        "    subprocess.Popen(['sleep', '999.41'], start_new_session=True)\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            os.execv('/bin/sleep', ['sleep', '999.42'])\n"
        "        os._exit(0)\n"
        "    return 1\n")
    out, child = run(box, src)
    assert out == 1
    assert eventually(lambda: processes_with("999.41") == [] and processes_with("999.42") == [])


def test_fork_bomb_meets_the_process_limit(box: Sandbox) -> None:
    # Each fork names itself (its comm): what is left of this bomb is found by that name, not by
    # its uid, which other work on a shared machine (anything run as nobody) may also use.
    name = f"bomb{os.getpid() % 100000}"
    src = (
        "import ctypes, os, time\n"
        "def f():\n"
        "    made = 0\n"
        "    while made < 500:\n"
        "        try:\n"
        "            pid = os.fork()\n"
        "        except OSError as exc:\n"
        "            return [made, exc.errno]\n"
        "        if pid == 0:\n"
        f"            ctypes.CDLL(None).prctl(15, b'{name}', 0, 0, 0)  # PR_SET_NAME\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        made += 1\n"
        "    return [made, 0]\n")
    (made, errno_), child = run(box, src, timeout=20)
    uid = child.isolation["outside_uid"]
    if uid == 0:
        pytest.skip("RLIMIT_NPROC is not enforced for uid 0 (no uid of its own here)")
    assert made < LIMITS.processes and errno_ == 11  # EAGAIN
    assert eventually(lambda: processes_with(name) == [])


def test_memory_limit(box: Sandbox) -> None:
    src = "def f():\n    return len(bytearray(100 * 2**30))\n"
    reply, _ = run(box, src)
    assert reply["raised"]["type"] == "MemoryError"


def test_file_size_limit(box: Sandbox) -> None:
    src = ("def f():\n"
           "    with open('big.bin', 'wb') as fh:\n"
           "        fh.write(b'x' * (5 * 2**20))\n")
    reply, _ = run(box, src)
    assert reply["raised"]["type"] == "OSError"
    assert "too large" in reply["raised"]["message"].lower()


def test_cpu_limit_ends_a_busy_child(box: Sandbox) -> None:
    child = box.spawn()
    try:
        load(child, "def f():\n    while True:\n        pass\n")
        started = time.monotonic()
        with pytest.raises(EOFError):
            call(child, "f", timeout=15)
        assert time.monotonic() - started < 10
        assert child.exit_status in (128 + 9, 128 + 24)  # SIGKILL or SIGXCPU
    finally:
        child.close()


def test_wall_time_limit_kills_and_reports(box: Sandbox) -> None:
    child = box.spawn()
    load(child, "import time\ndef f():\n    time.sleep(60)\n")
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        call(child, "f", timeout=0.5)
    assert time.monotonic() - started < 3
    assert not child.alive


def test_output_flood_is_capped(box: Sandbox) -> None:
    src = ("import sys\n"
           "def f():\n"
           "    chunk = 'y' * (1 << 20)\n"
           "    for _ in range(200):\n"
           "        sys.stdout.write(chunk)\n"
           "    return 7\n")
    child = box.spawn()
    try:
        assert load(child, src)["value"]["error"] is None
        try:
            out = call(child, "f", timeout=20)
        except EOFError:  # seen once in CI (as nobody, process mode), not in 15 runs since
            pytest.fail(f"the child ended mid-flood: exit status {child.exit_status}, "
                        f"{child.cpu_s:.2f} s of CPU, {len(child.drain.kept)} bytes kept")
    finally:
        child.close()
    assert out == 7
    text, cut = child.drain.text()
    assert cut is True
    assert len(text.encode()) == LIMITS.output_kb * 1024


def test_garbage_and_huge_frames_end_the_child_cleanly(box: Sandbox) -> None:
    for payload in (b"\xff\xff\xff\xff" + b"x" * 100,
                    struct.pack(">I", 12) + b"not json!!!!",
                    struct.pack(">I", 2) + b"[]"):
        child = box.spawn()
        src = ("import os, stat\n"
               f"PAYLOAD = {payload!r}\n"
               "def f():\n"
               "    os.write(3, PAYLOAD)\n"
               "    import time; time.sleep(5)\n")
        load(child, src)
        with pytest.raises(wire.WireError):
            call(child, "f")
        assert not child.alive
    # The sandbox is unharmed.
    out, _ = run(box, "def f():\n    return 'fine'\n")
    assert out == "fine"


# ---------------------------------------------------------------- check and grade


def _env_line(stdout: str) -> dict[str, str]:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("ENV:"))
    return json.loads(line[len("ENV:"):])


@pytest.mark.skipif(not LINUX, reason="uses the process-mode module sandbox")
def test_check_and_grade_give_the_same_environment(tmp_path: Path, boxes: dict[str, Sandbox]) -> None:
    from grader import assignment
    from grader.batch.pipeline import grade_submission
    from grader.config import RunConfig
    from grader.intake.discover import discover

    folder = tmp_path / "env_dump"
    folder.mkdir()
    (folder / "solution.py").write_text(
        (ROOT / "fixtures" / "adversarial" / "env_dump" / "solution.py").read_text())
    a = assignment.load(TINY / "assignment.yaml")
    sub = discover(folder, a)[0]
    sb = _box(boxes, "process")
    checked = grade_submission(sub, a, sb, RunConfig(public=True))
    graded = grade_submission(sub, a, sb, RunConfig(public=False))
    env_check, env_grade = _env_line(checked.load.stdout), _env_line(graded.load.stdout)
    assert set(env_check) == set(env_grade) == EXPECTED_ENV
    assert {k: v for k, v in env_check.items() if k not in ("HOME", "TMPDIR")} == \
        {k: v for k, v in env_grade.items() if k not in ("HOME", "TMPDIR")}
    assert graded.score == graded.max_score


def test_grader_check_works_without_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A student's laptop: no bubblewrap, `--sandbox auto` falls back to a plain process."""
    from grader.cli import main as cli

    monkeypatch.setattr(launch, "_BWRAP_OK", False)
    work = tmp_path / "mywork"
    work.mkdir()
    (work / "solution.py").write_text("def add(a, b):\n    return a + b\n")
    result = CliRunner().invoke(cli, ["check", str(work), "--assignment",
                                      str(TINY / "assignment.yaml"), "--sandbox", "auto"])
    assert result.exit_code == 0, result.output
    report = (work / "report.html").read_text()
    assert "sandbox process" in report


# ---------------------------------------------------------------- one zygote, many workers


FILL_DISK = """
import os
def f():
    n = 0
    try:
        while True:
            with open(f"fill{n}", "wb") as out:
                for _ in range(4):
                    out.write(b"x" * (1 << 20))
            n += 1
    except OSError:
        return "full"
"""
WRITE_1MB = """
def f():
    with open("mine", "wb") as out:
        return out.write(b"y" * (1 << 20))
"""


def _gone(child: sandbox.Child) -> bool:
    try:
        call(child, "f", timeout=1)
    except (EOFError, OSError):
        return True
    return False


@pytest.mark.parametrize("mode", MODES)
def test_a_shared_zygote_serves_each_connection_its_own_children(mode: str) -> None:
    """`grader grade` boots one zygote for all its workers (`launch_shared`): each worker's
    sandbox forks and kills only its own children, one closing leaves the others working,
    and the zygote ends when the last is closed."""
    owner = Sandbox(Isolation(mode), LIMITS)
    first, second = (Sandbox(Isolation(mode), LIMITS, spare=False) for _ in range(2))
    try:
        for sb, connection in zip((first, second), owner.launch_shared(2)):
            sb.attach(connection, owner.resolve_level())
        a, b = first.spawn(), second.spawn()
        assert load(a, "def f():\n    return 'a'\n")["ok"] and load(b, "def f():\n    return 'b'\n")["ok"]
        assert second.kill(a.pid) == (0, 0.0)  # not its child: nothing is done to it
        assert call(a, "f") == "a"
        # A student who fills the disk fills only their own worker's: another worker's
        # student, graded at the same time, still writes.
        filler, writer = first.spawn(), second.spawn()
        assert load(filler, FILL_DISK)["ok"] and load(writer, WRITE_1MB)["ok"]
        assert call(filler, "f", timeout=20) == "full"
        assert call(writer, "f") == 1 << 20
        if mode == "bwrap":  # a tmpfs per connection (as root in process mode: one per child)
            assert Path(filler.isolation["workdir"]).parents[1] != Path(writer.isolation["workdir"]).parents[1]
        filler.close()
        writer.close()
        first.stop()  # closes its connection: the zygote kills its children
        assert eventually(lambda: _gone(a))
        assert call(b, "f") == "b"
        out, _ = run(second, "def f():\n    return 'again'\n")
        assert out == "again"
        assert owner._proc is not None and owner._proc.poll() is None
        b.close()
        second.stop()
        assert eventually(lambda: owner._proc is not None and owner._proc.poll() is not None, within_s=10)
    finally:
        for sb in (first, second, owner):
            sb.stop()


def test_a_notebook_child_imports_nothing_a_module_child_does_not(box: Sandbox) -> None:
    """What IPython imports to run a notebook's cells is imported once, in the zygote, not
    again by every notebook's child (`zygote`'s imports)."""
    report = "import sys\ndef mods():\n    return sorted(sys.modules)\n"
    module_child = box.spawn()
    assert load(module_child, report)["ok"]
    notebook_child = box.spawn()
    loaded = notebook_child.request({"op": "load", "kind": "notebook", "filename": "attention.ipynb",
                                     "cells": ["import torch\nx = torch.zeros(2)", "x.shape", report]}, 10)
    assert loaded["ok"] and not loaded["value"].get("cell_errors"), loaded
    extra = set(call(notebook_child, "mods")) - set(call(module_child, "mods"))
    assert extra == set(), extra
    module_child.close()
    notebook_child.close()


def test_the_zygote_prewarm_starts_no_thread_and_draws_no_random_number() -> None:
    """What the zygote runs before forking stays on the meta device: a CPU op could start
    torch's thread pool (forking a threaded process is unsafe) or move the generators."""
    probe = (
        "import os, torch\n"
        "from grader.sandbox.inside import zygote\n"
        "threads, state = len(os.listdir('/proc/self/task')), torch.get_rng_state()\n"
        "zygote._prewarm()\n"
        "assert len(os.listdir('/proc/self/task')) == threads, 'a thread was started'\n"
        "assert torch.equal(torch.get_rng_state(), state), 'a random number was drawn'\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_zygote_plot_warm_up_starts_no_thread_draws_no_random_number_and_leaves_nothing() -> None:
    """What `plotting.warm` imports in the zygote (pyplot, seaborn and pandas) stays safe to
    fork from, selects the sandbox's backend as a child's own import would, and leaves no
    configuration folder behind."""
    probe = (
        "import glob, os, random, sys, tempfile, numpy, torch\n"
        "from grader.sandbox.inside import plotting\n"
        "threads, state = len(os.listdir('/proc/self/task')), torch.get_rng_state()\n"
        "np_state, py_state = numpy.random.get_state()[1].copy(), random.getstate()\n"
        "folders = set(glob.glob(os.path.join(tempfile.gettempdir(), 'grader-mpl-*')))\n"
        "planted = tempfile.mkdtemp()\n"  # a child's leftovers where the zygote runs
        "open(os.path.join(planted, 'matplotlibrc'), 'w').write('lines.linewidth: 7\\n')\n"
        "os.makedirs(os.path.join(planted, '.config', 'matplotlib'))\n"
        "open(os.path.join(planted, '.config', 'matplotlib', 'matplotlibrc'), 'w').write('lines.linewidth: 7\\n')\n"
        "os.chdir(planted); os.environ['HOME'] = planted\n"
        "modules = plotting.warm_imports(['torch', 'numpy', 'matplotlib', 'seaborn'])\n"
        "assert modules == ('matplotlib', 'matplotlib.pyplot', 'seaborn'), modules\n"
        "plotting.warm(modules + ('os',))\n"
        "assert {'matplotlib.pyplot', 'seaborn', 'pandas'} <= set(sys.modules)\n"
        "assert len(os.listdir('/proc/self/task')) == threads, 'a thread was started'\n"
        "assert torch.equal(torch.get_rng_state(), state), 'a random number was drawn (torch)'\n"
        "assert (numpy.random.get_state()[1] == np_state).all(), 'a random number was drawn (numpy)'\n"
        "assert random.getstate() == py_state, 'a random number was drawn (random)'\n"
        "import matplotlib\n"
        "assert matplotlib.get_backend() == plotting.BACKEND, matplotlib.get_backend()\n"
        "assert matplotlib.rcParams['lines.linewidth'] == 1.5, 'a planted matplotlibrc was read'\n"
        "assert os.getcwd() == planted and os.environ['HOME'] == planted\n"
        "assert plotting._HOOK not in sys.meta_path and 'MPLCONFIGDIR' not in os.environ\n"
        "assert set(glob.glob(os.path.join(tempfile.gettempdir(), 'grader-mpl-*'))) == folders\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLCONFIGDIR"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
