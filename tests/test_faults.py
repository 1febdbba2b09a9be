"""Fault injection: a fault of the grader's is never a student's score.

What is killed or broken here is the grader's own machinery (the sandbox's zygote, its
control socket, a grading worker, the disk the reports go to, the assignment), never
the student's code. Each case must end with correct scores or with results marked not
gradable (graded again by the next run), the right exit code, and a one-line message.
A child killed by someone else cannot be told from a crash: that stays the student's
error, for that test only, and the batch goes on.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from conftest import ATTENTION, ROOT

from grader import assignment
from grader.batch.pipeline import Grading
from grader.batch.prepare import ungradable
from grader.batch.run import up_to_date
from grader.config import RunConfig
from grader.errors import (
    AssignmentError,
    GraderError,
    InternalError,
    OutputError,
    SandboxFailure,
    SandboxLost,
    from_doc,
    stops_the_batch,
    to_doc,
)
from grader.intake.discover import discover
from grader.report.files import write_result_json
from grader.results import SubmissionResult
from grader.sandbox.host import Isolation, Sandbox
from grader.testing import student as proxy
from grader.testing.session import classify, graders_fault
from grader.testing.student import StudentRaised, raised_class

TINY = ROOT / "tests" / "fixtures" / "tiny"
ADVERSARIAL = ROOT / "tests" / "fixtures" / "adversarial"
HONEST_ATTENTION = ROOT / "examples" / "submissions" / "an_nguyen"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="kills processes found through /proc")


# ---------------------------------------------------------------- processes


def _children(pid: int) -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and _parent(int(e)) == pid]


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _tree(pid: int) -> list[int]:
    """`pid` and every process below it."""
    found = [pid]
    for kid in _children(pid):
        found += _tree(kid)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _sigkill(pids: list[int]) -> int:
    killed = 0
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
    return killed


def kill_zygote(box: Sandbox) -> None:
    """What the OOM killer or a host hiccup does: the zygote and all it forked die."""
    assert box._proc is not None, "the sandbox is not running"
    pid = box._proc.pid
    _sigkill(_tree(pid))
    box._proc.wait(10)


def _kill_below(root: int, word: str) -> int:
    """SIGKILL every process under `root` whose command line holds `word` (or, for
    WORKER, every grading worker), and all below them."""
    victims = [p for p in _tree(root)[1:] if (_is_worker(p) if word == WORKER else word in _cmdline(p))]
    return _sigkill([q for p in victims for q in _tree(p)])


WORKER = "a grading worker"
TEMPLATE = "template.main"


def _is_worker(pid: int) -> bool:
    """A worker started on its own, or one forked by the workers' template (it has the
    template's command line, and the template for its parent)."""
    line = _cmdline(pid)
    return "workers.main" in line or (TEMPLATE in line and TEMPLATE in _cmdline(_parent(pid)))


# ---------------------------------------------------------------- in-process grading


@pytest.fixture(scope="module")
def box(tiny: assignment.Assignment) -> Iterator[Sandbox]:
    with Sandbox(Isolation.AUTO, tiny.limits) as sb:
        yield sb


def _sub(name: str, a: assignment.Assignment):  # type: ignore[no-untyped-def]
    return discover(ADVERSARIAL / name, a)[0]


LAST_REQUEST = 4
"""The tiny assignment's hidden tests call the student's code four times."""


def _full_marks(result: SubmissionResult) -> bool:
    return result.gradable and result.score == result.max_score


def _lost(result: SubmissionResult) -> list[str]:
    return [f"{t.name}: {t.outcome}: {t.message}" for ex in result.exercises for t in ex.tests
            if not t.passed]


def _kill_zygote_during(monkeypatch: pytest.MonkeyPatch, box: Sandbox, gradings: set[int],
                        before_request: int) -> dict[str, int]:
    """Kill the zygote (and the child) right before the n-th request a test makes of the
    student's code, in each of the `gradings` (1 = the first connection made)."""
    real = proxy.Connection.request
    count = {"connections": 0, "kills": 0}

    def request(self: proxy.Connection, doc: dict[str, Any]) -> Any:
        made = getattr(self, "_fault_requests", 0) + 1
        if made == 1:
            count["connections"] += 1
            self._fault_number = count["connections"]  # type: ignore[attr-defined]
        self._fault_requests = made  # type: ignore[attr-defined]
        if made == before_request and self._fault_number in gradings:  # type: ignore[attr-defined]
            kill_zygote(box)
            count["kills"] += 1
        return real(self, doc)

    monkeypatch.setattr(proxy.Connection, "request", request)
    return count


def test_zygote_killed_between_two_gradings_costs_no_points(tiny, box) -> None:
    honest = _sub("honest", tiny)
    with Grading(tiny, box, RunConfig()) as grading:
        first = grading.grade(honest)
        kill_zygote(box)
        assert not box.healthy
        second = grading.grade(honest)
        assert grading.restarts == 1
    assert _full_marks(first) and _full_marks(second), _lost(second)


def test_zygote_killed_mid_test_is_graded_again_in_a_fresh_sandbox(tiny, box, monkeypatch) -> None:
    honest = _sub("honest", tiny)
    # The last request: no later test's fresh child would reveal the dead zygote.
    count = _kill_zygote_during(monkeypatch, box, gradings={1}, before_request=LAST_REQUEST)
    with Grading(tiny, box, RunConfig()) as grading:
        result = grading.grade(honest)
        assert grading.restarts == 1 and count["kills"] == 1
    assert _full_marks(result), _lost(result)


def test_a_sandbox_that_fails_twice_makes_the_submission_not_gradable(tiny, box, monkeypatch) -> None:
    """Never a gradable wrong score: a one-line reason, and the next submission gets a
    working sandbox again."""
    honest = _sub("honest", tiny)
    count = _kill_zygote_during(monkeypatch, box, gradings={1, 2}, before_request=LAST_REQUEST)
    with Grading(tiny, box, RunConfig()) as grading:
        with pytest.raises(SandboxFailure) as info:
            grading.grade(honest)
        message = str(info.value)
        assert "2 times" in message and "exited" in message and "\n" not in message
        assert count["kills"] == 2
        after = grading.grade(honest)
    assert _full_marks(after), _lost(after)
    marked = ungradable(honest, tiny, message)
    assert not marked.gradable and marked.score == 0


def test_a_test_that_catches_the_sandboxs_failure_does_not_hide_it(tmp_path, box, monkeypatch) -> None:
    """A hidden test may catch every exception around a call (and fail the student):
    the sandbox's failure is still the grader's."""
    shutil.copytree(TINY, tmp_path / "tiny", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tiny" / "hidden" / "test_scale.py").write_text(CATCHING_TEST)
    catching = assignment.load(tmp_path / "tiny" / "assignment.yaml")
    count = _kill_zygote_during(monkeypatch, box, gradings={1}, before_request=3)  # its only call
    with Grading(catching, box, RunConfig()) as grading:
        result = grading.grade(_sub("honest", catching))
        assert grading.restarts == 1 and count["kills"] == 1
    assert _full_marks(result), _lost(result)


CATCHING_TEST = '''
import torch


def test_catches_everything(student):
    """scales, whatever happens"""
    try:
        got = student.scale(torch.ones(3), 2.0)
    except Exception as exc:
        raise AssertionError(f"scale raised {exc}")
    assert torch.equal(got, torch.full((3,), 2.0))
'''


def test_a_child_killed_mid_test_is_the_students_error_for_that_test_only(tiny, monkeypatch) -> None:
    """Killed from outside, a child cannot be told from one that crashed: that test is
    an error, the next test gets a fresh child, and the next submission is unharmed."""
    honest = _sub("honest", tiny)
    real = proxy.Connection.request
    count = {"n": 0}

    def request(self: proxy.Connection, doc: dict[str, Any]) -> Any:
        count["n"] += 1
        if count["n"] == 2:  # the child is loaded; the first test's call is next
            assert self.child is not None
            os.kill(self.child.pid, signal.SIGKILL)
            time.sleep(0.2)
        return real(self, doc)

    # Process mode: the child's pid is a pid of this machine's (not of bwrap's namespace).
    with Sandbox(Isolation.PROCESS, tiny.limits) as sb:
        monkeypatch.setattr(proxy.Connection, "request", request)
        with Grading(tiny, sb, RunConfig()) as grading:
            hit = grading.grade(honest)
            again = grading.grade(honest)
            assert grading.restarts == 0 and sb.healthy
    assert hit.gradable
    lost = [t for ex in hit.exercises for t in ex.tests if not t.passed]
    assert len(lost) == 1 and lost[0].outcome == "error", _lost(hit)
    assert "your process ended" in lost[0].message
    assert hit.score == hit.max_score - lost[0].max_score
    assert _full_marks(again), _lost(again)


def test_garbage_from_the_students_process_is_the_students_error(tiny, box) -> None:
    """Frames the student's code writes on its own socket: an error for the student,
    with the sandbox healthy and nothing retried."""
    if not box.healthy:  # left so by an earlier test
        box.restart()
    with Grading(tiny, box, RunConfig()) as grading:
        result = grading.grade(_sub("protocol_garbage", tiny))
        assert grading.restarts == 0 and box.healthy
    assert result.gradable and result.score == 0
    assert all(t.outcome == "error" and "your process" in t.message
               for ex in result.exercises for t in ex.tests), _lost(result)


# ---------------------------------------------------------------- the zygote's socket


class FakeZygote:
    """The other end of a sandbox's control socket, answering with what it is given."""

    def __init__(self, answer: bytes, close_after: bool = False) -> None:
        self.box = Sandbox(Isolation.PROCESS, spare=False)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.box._control, self.box._ready = ours, True
        self.theirs = theirs
        self.thread = threading.Thread(target=self._serve, args=(answer, close_after), daemon=True)
        self.thread.start()

    def _serve(self, answer: bytes, close_after: bool) -> None:
        msg, fds, _, _ = socket.recv_fds(self.theirs, 1 << 16, 2)
        for fd in fds:
            os.close(fd)
        self.theirs.sendall(answer)
        if close_after:
            self.theirs.close()


def _frame(doc: Any) -> bytes:
    body = json.dumps(doc).encode()
    return len(body).to_bytes(4, "big") + body


@pytest.mark.parametrize("answer, close_after", [
    (b"\x00\x00\x00\x05hello", False),             # not JSON
    (b"\x00\x00\x01\x00{\"pid\"", True),           # a truncated frame, then gone
    (_frame({"error": "bad request"}), False),      # no pid
    (_frame({"pid": "1; rm -rf /"}), False),        # a pid that is not one
    (b"", True),                                    # gone without a word
], ids=["garbage", "truncated", "no-pid", "bad-pid", "closed"])
def test_a_broken_control_socket_is_the_sandboxs_failure(answer: bytes, close_after: bool) -> None:
    fake = FakeZygote(answer, close_after)
    with pytest.raises(SandboxLost):
        fake.box.spawn()
    assert not fake.box.healthy
    with pytest.raises(SandboxLost):  # and it stays lost: no second wait on a dead socket
        fake.box.spawn()
    assert fake.box.kill(12345) == (-1, 0.0)


def test_the_graders_own_errors_are_never_classified_as_the_students() -> None:
    for exc in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(), SandboxLost("gone"),
                InternalError("a bug")):
        assert graders_fault(exc)
        outcome, message, _ = classify(exc, "failed")
        assert "could not use what your code returned" not in message, message
        assert "not your code" in message
    student_oserror = raised_class("FileNotFoundError")("no such file")
    assert isinstance(student_oserror, OSError) and isinstance(student_oserror, StudentRaised)
    assert not graders_fault(student_oserror)
    assert classify(student_oserror, "failed")[0] == "error"
    assert classify(TypeError("'int' object is not subscriptable"), "failed")[0] == "failed"


def test_errors_cross_a_process_boundary_with_their_class() -> None:
    for exc in (AssignmentError("key is broken"), SandboxLost("zygote gone"), OutputError("full"),
                InternalError("bug")):
        back = from_doc(json.loads(json.dumps(to_doc(exc))))
        assert type(back) is type(exc) and str(back) == str(exc)
    assert type(from_doc(to_doc(KeyError("x")))) is InternalError
    assert type(from_doc({"class": "SystemExit", "message": "x"})) is InternalError
    assert type(from_doc("garbage")) is InternalError
    assert stops_the_batch(from_doc(to_doc(AssignmentError("x"))))
    assert not stops_the_batch(from_doc(to_doc(SandboxLost("x"))))
    assert isinstance(from_doc(to_doc(SandboxLost("x"))), GraderError)


def test_a_result_that_is_not_gradable_is_never_up_to_date(tiny, tmp_path) -> None:
    honest = _sub("honest", tiny)
    write_result_json(ungradable(honest, tiny, "SandboxLost: gone"), tmp_path / honest.id / "result.json")
    assert up_to_date(honest, tiny, RunConfig(), tmp_path) is None


# ---------------------------------------------------------------- through `grader grade`


def _grader(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "grader.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _results(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/result.json")}


def _grade_killing(args: list[str], out: Path, after: int, word: str,
                   timeout_s: float = 300) -> tuple[int, str, int]:
    """Run `grader grade`, and once `after` results are on disk SIGKILL every process
    below it whose command line holds `word` (with all below them)."""
    proc = _grader(*args)
    killed = 0
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        if not killed and len(list(out.glob("*/result.json"))) >= after:
            killed = _kill_below(proc.pid, word)
        time.sleep(0.02)
    _, err = proc.communicate(timeout=max(deadline - time.monotonic(), 1))
    return proc.returncode, err, killed


@pytest.mark.slow
def test_sixteen_copies_survive_a_zygote_kill(tmp_path) -> None:
    """The issue's measurement: 16 correct submissions, the zygotes SIGKILLed after the
    third result. No gradable wrong score, and 16 full marks after at most one rerun."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    for i in range(16):
        shutil.copytree(HONEST_ATTENTION, subs / f"copy{i:02d}")
    args = ["grade", str(subs), "--assignment", str(ATTENTION), "--out", str(out),
            "--jobs", "2", "--quiet"]
    code, err, killed = _grade_killing(args, out, after=3, word="zygote")
    assert code == 0, err[-3000:]
    assert killed, "no zygote was found to kill"
    first = _results(out)
    assert len(first) == 16, (sorted(first), err[-3000:])
    wrong = {s: (r["score"], _lost_in(r)) for s, r in first.items()
             if r["gradable"] and r["score"] != r["max_score"]}
    assert not wrong, f"gradable wrong scores after the zygote was killed: {wrong}"
    for r in first.values():
        if not r["gradable"]:
            assert "not your fault" in r["load"]["notices"][0]
    again = _grader(*args)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err[-3000:]
    final = _results(out)
    assert len(final) == 16 and all(r["gradable"] and r["score"] == r["max_score"] == 100
                                    for r in final.values()), {
        s: (r["score"], r["gradable"], _lost_in(r)) for s, r in final.items() if r["score"] != 100}


def _lost_in(result: dict[str, Any]) -> list[str]:
    notices = list(result["load"]["notices"])[:1]
    return notices + [f"{t['name']}: {t['message'][:160]}" for ex in result["exercises"]
                      for t in ex["tests"] if not t["passed"]][:3]


@pytest.mark.slow
def test_a_zygote_killed_while_its_worker_starts_is_started_again(tmp_path) -> None:
    """Killed before it was ready (a host hiccup while torch imports): one fresh start,
    not a batch stopped for a sandbox that "does not work here"."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    for i in range(2):
        shutil.copytree(ADVERSARIAL / "honest", subs / f"s{i}")
    args = ["grade", str(subs), "--assignment", str(TINY / "assignment.yaml"), "--out", str(out),
            "--jobs", "1", "--quiet"]
    code, err, killed = _grade_killing(args, out, after=0, word="zygote")
    assert killed, "no zygote was found to kill"
    assert code == 0, err[-3000:]
    results = _results(out)
    assert len(results) == 2 and all(r["gradable"] and r["score"] == r["max_score"]
                                     for r in results.values()), results


SLOW_HONEST = '''"""An honest, correct submission that takes its time."""
import time


def add(a, b):
    time.sleep(0.4)
    return a + b


def scale(x, k):
    return x * k
'''

def _slow_class(tmp_path: Path, n: int, jobs: int) -> tuple[list[str], Path]:
    """`n` correct, slow submissions of the tiny assignment: the arguments that grade them
    with `jobs` workers, and the output folder."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    for i in range(n):
        (subs / f"s{i}").mkdir(parents=True)
        (subs / f"s{i}" / "solution.py").write_text(SLOW_HONEST)
    return ["grade", str(subs), "--assignment", str(TINY / "assignment.yaml"), "--out", str(out),
            "--jobs", str(jobs), "--quiet"], out


@pytest.mark.slow
def test_a_killed_worker_costs_a_not_gradable_result_graded_again_next_run(tmp_path) -> None:
    args, out = _slow_class(tmp_path, 4, jobs=1)
    code, err, killed = _grade_killing(args, out, after=1, word=WORKER)
    assert code == 0, err[-3000:]
    assert killed, "no worker was found to kill"
    first = _results(out)
    assert len(first) == 4
    not_gradable = [s for s, r in first.items() if not r["gradable"]]
    assert not_gradable, "the worker was killed while it graded nobody?"
    assert all(r["score"] == r["max_score"] for r in first.values() if r["gradable"])
    for s in not_gradable:
        assert "grading worker crashed" in first[s]["load"]["notices"][0]
    rows = (out / "grades.csv").read_text().splitlines()
    assert any(row.startswith(f"{not_gradable[0]},,") for row in rows), rows  # no score, not 0
    again = _grader(*args)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err[-3000:]
    final = _results(out)
    assert all(r["gradable"] and r["score"] == r["max_score"] for r in final.values())
    kept = [s for s in first if s not in not_gradable]
    assert all(final[s]["provenance"] == first[s]["provenance"] for s in kept), "regraded, not kept"


@pytest.mark.slow
def test_the_workers_template_killed_mid_batch_costs_nothing(tmp_path) -> None:
    """The workers are forks of one template (imports paid once). It holds no grading
    state: killed mid-batch, its workers go on, and a replacement worker would start as
    a process of its own."""
    args, out = _slow_class(tmp_path, 6, jobs=2)
    proc = _grader(*args)
    killed, deadline = 0, time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if not killed and len(list(out.glob("*/result.json"))) >= 1:
            templates = [p for p in _tree(proc.pid)[1:] if TEMPLATE in _cmdline(p)
                         and TEMPLATE not in _cmdline(_parent(p))]
            killed = _sigkill(templates)
        time.sleep(0.02)
    _, err = proc.communicate(timeout=max(deadline - time.monotonic(), 1))
    assert proc.returncode == 0, err[-3000:]
    assert killed, "no template was found to kill"
    results = _results(out)
    assert len(results) == 6 and all(r["gradable"] and r["score"] == r["max_score"]
                                     for r in results.values()), results


def test_two_workers_share_one_zygote_and_a_replaced_worker_starts_its_own(tmp_path) -> None:
    """`--jobs 2` boots torch in one zygote for both workers (start-up and memory); a
    worker killed mid-batch is replaced by one with a zygote of its own, and the other
    worker keeps grading on the shared one."""
    args, out = _slow_class(tmp_path, 8, jobs=2)
    proc = _grader(*args)
    most, killed, deadline = 0, 0, time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        forked = {p for p in _tree(proc.pid)[1:] if _is_zygote(p)}
        zygotes = [p for p in forked if _parent(p) not in forked]
        if not killed:
            most = max(most, len(zygotes))
            if len(list(out.glob("*/result.json"))) >= 2:
                killed = _kill_below(proc.pid, WORKER)
        time.sleep(0.02)
    _, err = proc.communicate(timeout=max(deadline - time.monotonic(), 1))
    assert proc.returncode == 0, err[-3000:]
    assert most == 1, f"{most} zygotes before a worker was killed"
    assert killed, "no worker was found to kill"
    results = _results(out)
    assert len(results) == 8
    assert all(r["score"] == r["max_score"] for r in results.values() if r["gradable"])
    assert sum(r["gradable"] for r in results.values()) >= 6  # at most one per killed worker


@pytest.mark.parametrize(("cores", "waiting"), [(1, [False, True]), (2, [False, True, True]),
                                               (8, [False, False, False, False])])
def test_one_fewer_worker_than_cores_boots_at_once(monkeypatch, cores: int, waiting: list[bool]) -> None:
    from grader.batch import workers

    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    starts = workers._starts([None] * len(waiting), None)
    assert [s.after is starts[0].started for s in starts] == waiting
    starts[0].release()  # a first thread that ends without a worker lets the others start
    assert all(s.after is None or s.after.is_set() for s in starts)
    forks = workers._starts([None] * len(waiting), None, cast(Any, object()))
    assert all(s.after is None for s in forks)  # forks of the template boot nothing: all at once


def _is_zygote(pid: int) -> bool:
    """The zygote's interpreter, or a child forked from it (not bubblewrap around it)."""
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return False
    return exe.startswith("python") and "zygote.main" in _cmdline(pid)


# ---------------------------------------------------------------- a full disk


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


@pytest.mark.slow
def test_reports_on_a_full_disk_stop_with_one_line_and_leave_no_partial_file(tmp_path, tiny_disk) -> None:
    subs = tmp_path / "subs"
    for i in range(30):
        shutil.copytree(ADVERSARIAL / "honest", subs / f"s{i:02d}")
    out = tiny_disk / "reports"
    proc = _grader("grade", str(subs), "--assignment", str(TINY / "assignment.yaml"), "--out", str(out),
                   "--jobs", "1", "--quiet")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err[-3000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grader: cannot write "), err[-3000:]
    assert "No space left on device" in lines[0]
    assert not list(out.rglob("*.tmp")), "a temporary file was left behind"
    written = list(out.glob("*/result.json"))
    assert written, "the disk filled before any result: the test proves nothing"
    for path in written:
        doc = json.loads(path.read_text())  # complete, or not there at all
        assert doc["gradable"] and doc["score"] == doc["max_score"]


# ---------------------------------------------------------------- a broken assignment


def _assignment_copy(tmp_path: Path) -> Path:
    """The attention assignment and its reference, copied: the YAML is at the returned path."""
    shutil.copytree(ROOT / "assignments" / "attention", tmp_path / "assignments" / "attention",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "reference").mkdir()
    shutil.copy(ROOT / "reference" / "attention.py", tmp_path / "reference" / "attention.py")
    return tmp_path / "assignments" / "attention" / "assignment.yaml"


def _unclose_first_list(path: Path) -> None:
    text = path.read_text()
    start = text.index("[")
    path.write_text(text[:start] + text[start:].replace("]", "", 1))


def _break(kind: str, yaml_path: Path) -> str:
    """Break the copied assignment; the words its one-line message must hold."""
    folder = yaml_path.parent
    if kind == "key":
        _unclose_first_list(folder / "answer_key.yaml")
        return "answer_key.yaml: the answer key is not valid YAML: line"
    if kind == "yaml":
        yaml_path.write_text(yaml_path.read_text().replace("exercises:\n", "exercises: [\n", 1))
        return "assignment.yaml: not valid YAML: line"
    if kind == "missing_reference":
        (folder.parent.parent / "reference" / "attention.py").unlink()
        return "at `reference`: file"
    if kind == "reference_fails":
        (folder.parent.parent / "reference" / "attention.py").write_text("def broken(:\n")
        return "fails to import"
    raise ValueError(kind)


@pytest.mark.parametrize("kind", [
    pytest.param("key", marks=pytest.mark.slow),               # read in a worker, per submission
    "yaml",                                                    # read before any worker starts
    "missing_reference",
    pytest.param("reference_fails", marks=pytest.mark.slow),   # met when a worker starts
])
def test_a_broken_assignment_is_one_line_and_exit_2(tmp_path, kind: str) -> None:
    yaml_path = _assignment_copy(tmp_path)
    expected = _break(kind, yaml_path)
    proc = _grader("grade", str(HONEST_ATTENTION), "--assignment", str(yaml_path),
                   "--out", str(tmp_path / "out"), "--jobs", "1", "--quiet")
    _, err = proc.communicate(timeout=300)
    lines = err.strip().splitlines()
    assert proc.returncode == 2, err[-3000:]
    assert len(lines) == 1 and lines[0].startswith("grader: "), err[-3000:]
    assert expected in lines[0], lines[0]
    assert not list((tmp_path / "out").glob("*/result.json")), "a result was written for a broken assignment"


@pytest.mark.slow
def test_a_dask_worker_sends_a_broken_key_back_as_an_assignment_error(tmp_path) -> None:
    """What `grade_on_worker` returns to the Dask client: the error's class, so the
    batch stops with the key's message (and no submission is marked ungradable)."""
    from grader.batch import dask as dask_executor
    from grader.batch.workers import submission_doc

    yaml_path = _assignment_copy(tmp_path)
    _break("key", yaml_path)
    a = assignment.load(yaml_path)
    init = RunConfig(assignment=yaml_path).to_json()
    try:
        doc = submission_doc(discover(HONEST_ATTENTION, a)[0])
        reply = json.loads(dask_executor.grade_on_worker(init, doc))
    finally:
        state = dask_executor._STATE
        if "grading" in state:
            state["grading"].close()
            state["grading"].sandbox.stop()
        state.clear()
    error = from_doc(reply["fault"])
    assert isinstance(error, AssignmentError) and stops_the_batch(error)
    assert "answer_key.yaml" in str(error)
