"""Tamper resistance, end to end: a class of adversarial submissions through `grader grade`.

One batch per isolation level (`--jobs 2`), then one assertion per student: each
attack is aimed at the real paths of this machine (see tests/fixtures/adversarial/
README.md), and must not raise a wrong submission's score, read a hidden test or the
reference, touch a file outside its sandbox, reach the network, or disturb the honest
student graded in the same batch. The message each student gets must say what
happened.

`bwrap` runs where bubblewrap works (marked `sandbox`); `process` runs everywhere on
Linux. The first of them that works grades every case; the other grades the cases
whose outcome depends on the isolation level (`ISOLATION_CASES`): files, network,
processes, memory, output, environment. The rest (symlinks, oversized files, shipped
configuration, forged values...) are decided in the grader's process, the same under
any level, and are not graded twice to keep the suite fast.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from grader.cli import main as cli
from grader.sandbox import host as sandbox

ROOT = Path(__file__).resolve().parent
TINY = ROOT / "fixtures" / "tiny"
ADVERSARIAL = ROOT / "fixtures" / "adversarial"
SECRET_ENV = "GRADER_TEST_SECRET_TOKEN"
SECRET = "ghp_thisIsAFakeTokenThatMustNeverReachStudents123"
HIDDEN_SENTINEL = "HIDDEN-TEST-SENTINEL-7f3a"
REFERENCE_SENTINEL = "REFERENCE-SENTINEL-91c2"
HONEST_SENTINEL = "HONEST-SENTINEL-52ab"
MAX = 4.0

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the adversarial batch targets Linux isolation")


# ---------------------------------------------------------------- listeners


class Listeners:
    """Sockets on the grader's machine a student tries to reach; records any contact."""

    def __init__(self, folder: Path) -> None:
        self.contacts: list[str] = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("0.0.0.0", 0))
        self.tcp.listen(8)
        self.port = self.tcp.getsockname()[1]
        self.unix_path = str(folder / "listener.sock")
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.unix_path)
        os.chmod(self.unix_path, 0o777)
        self.unix.listen(8)
        self.abstract_name = f"grader-test-{os.getpid()}-{id(self)}"
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen(8)
        self._stop = False
        self._threads = [threading.Thread(target=self._serve, args=(s, n), daemon=True)
                         for s, n in ((self.tcp, "tcp"), (self.unix, "unix"),
                                      (self.abstract, "abstract"))]
        for t in self._threads:
            t.start()

    def _serve(self, sock: socket.socket, name: str) -> None:
        sock.settimeout(0.2)
        while not self._stop:
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.contacts.append(name)
            conn.close()

    def close(self) -> None:
        self._stop = True
        for t in self._threads:
            t.join(1)
        for s in (self.tcp, self.unix, self.abstract):
            s.close()


def host_ip() -> str:
    """An address of this machine other than loopback (loopback if there is none)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))
        return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


# ---------------------------------------------------------------- the class


@dataclass
class Batch:
    mode: str
    base: Path
    out: Path
    results: dict[str, dict[str, Any]]
    exit_code: int
    output: str
    seconds: float
    contacts: list[str]
    leftovers: list[str]
    canary: Path
    markers: Path
    honest_source: str
    extra: dict[str, Any] = field(default_factory=dict)

    def student(self, sid: str) -> dict[str, Any]:
        if self.mode != PRIMARY and sid not in ISOLATION_CASES:
            pytest.skip(f"{sid} does not depend on the isolation level: graded under {PRIMARY}")
        assert sid in self.results, f"no result for {sid}; got {sorted(self.results)}"
        return self.results[sid]

    def report_text(self, sid: str) -> str:
        return (self.out / sid / "result.json").read_text() + (self.out / sid / "report.html").read_text()


CANARY_TEXT = "canary: written by the test, never by a student\n"


ISOLATION_CASES = frozenset({
    "honest", "forge_result", "search_fs", "network", "fork_bomb", "daemon", "kill_all",
    "notebook_shell", "env_dump", "memory_hog", "flood",
})
GENERATED_CASES = ("oversized", "symlink_escape", "linked_student")


def build_class(base: Path, listeners: Listeners, only: frozenset[str] | None = None) -> dict[str, Any]:
    """The class folder: every fixture (or `only` these), with this machine's real
    paths substituted."""
    subs = base / "class"
    out = base / "reports"
    canary = base / "instructor" / "canary.txt"
    markers = base / "markers"
    for d in (subs, out, canary.parent, markers):
        d.mkdir(parents=True, exist_ok=True)
    canary.write_text(CANARY_TEXT)
    targets = {
        "canary": str(canary), "out": str(out), "markers": str(markers),
        "hidden": str(TINY / "hidden" / "test_add.py"), "reference": str(TINY / "reference.py"),
        "honest": str(subs / "honest" / "solution.py"),
        "unix": listeners.unix_path, "abstract": listeners.abstract_name,
        "port": listeners.port, "host_ip": host_ip(),
    }
    for folder in sorted(ADVERSARIAL.iterdir()):
        if not folder.is_dir() or (only is not None and folder.name not in only):
            continue
        dest = subs / folder.name
        dest.mkdir()
        for f in folder.iterdir():
            data = f.read_bytes()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                (dest / f.name).write_bytes(data)
                continue
            text = (text.replace("__TARGETS__", json.dumps(targets))
                    .replace("__MARKERS__", str(markers))
                    .replace("__HIDDEN__", targets["hidden"])
                    .replace("__REFERENCE__", targets["reference"]))
            (dest / f.name).write_text(text)
    if only is not None:
        return {"subs": subs, "out": out, "canary": canary, "markers": markers}
    # Made here rather than stored: a huge file, and links that point outside.
    (subs / "oversized").mkdir()
    (subs / "oversized" / "solution.py").write_text(
        "def add(a, b):\n    return a + b\n" + "# padding\n" * 330_000)
    (subs / "symlink_escape").mkdir()
    (subs / "symlink_escape" / "solution.py").symlink_to(TINY / "reference.py")
    (subs / "symlink_escape" / "answers.yaml").symlink_to(TINY / "hidden" / "test_add.py")
    (subs / "linked_student").symlink_to(subs / "honest")
    return {"subs": subs, "out": out, "canary": canary, "markers": markers}


def _processes_matching(words: tuple[str, ...]) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if any(w in comm or w in cmdline for w in words):
            found.append(f"{entry} {comm} {cmdline[:80]}")
    return found


LEFTOVER_MARKERS = ("forkbomb-tiny", "1000.77", "1000.78")


def run_batch(mode: str, base: Path, only: frozenset[str] | None = None) -> Batch:
    listeners = Listeners(base)
    paths = build_class(base, listeners, only)
    honest_source = (paths["subs"] / "honest" / "solution.py").read_text()
    old = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = SECRET
    started = time.monotonic()
    try:
        outcome = CliRunner().invoke(cli, [
            "grade", str(paths["subs"]), "--assignment", str(TINY / "assignment.yaml"),
            "--out", str(paths["out"]), "--jobs", "2", "--sandbox", mode, "--quiet",
        ])
    finally:
        if old is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = old
    seconds = time.monotonic() - started
    time.sleep(0.2)
    listeners.close()
    results = {}
    for f in sorted(paths["out"].glob("*/result.json")):
        results[f.parent.name] = json.loads(f.read_text())
    return Batch(mode=mode, base=base, out=paths["out"], results=results,
                 exit_code=outcome.exit_code,
                 output=outcome.output + (repr(outcome.exception) if outcome.exception else ""),
                 seconds=seconds, contacts=list(listeners.contacts),
                 leftovers=_processes_matching(LEFTOVER_MARKERS), canary=paths["canary"],
                 markers=paths["markers"], honest_source=honest_source)


BWRAP = sys.platform.startswith("linux") and sandbox.bwrap_works()
PRIMARY = "bwrap" if BWRAP else "process"
MODES = [
    pytest.param("bwrap", marks=[pytest.mark.sandbox, pytest.mark.skipif(
        not BWRAP, reason="bubblewrap does not work here")]),
    pytest.param("process"),
]

_BATCHES: dict[str, Batch] = {}


@pytest.fixture(scope="module", params=MODES)
def batch(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Batch:
    mode = request.param
    if mode not in _BATCHES:
        only = None if mode == PRIMARY else ISOLATION_CASES
        _BATCHES[mode] = run_batch(mode, tmp_path_factory.mktemp(f"tamper-{mode}"), only)
    return _BATCHES[mode]


# ---------------------------------------------------------------- helpers


def _tests_of(result: dict[str, Any], exercise: str) -> list[dict[str, Any]]:
    for ex in result["exercises"]:
        if ex["id"] == exercise:
            return ex["tests"]
    raise KeyError(exercise)


def messages(result: dict[str, Any], exercise: str | None = None) -> str:
    parts = list(result["load"].get("notices", ()))
    for ex in result["exercises"]:
        if exercise is None or ex["id"] == exercise:
            parts.append(ex.get("message", ""))
            parts += [t["message"] for t in ex["tests"]]
    return "\n".join(parts)


def outcomes(result: dict[str, Any], exercise: str) -> set[str]:
    return {t["outcome"] for t in _tests_of(result, exercise)}


def assert_no_score(b: Batch, sid: str) -> dict[str, Any]:
    r = b.student(sid)
    assert r["score"] == 0, f"{sid} scored {r['score']}: {messages(r)}"
    assert r["gradable"] is True, f"{sid} was flagged as a grader failure: {messages(r)}"
    return r


# ---------------------------------------------------------------- the batch as a whole


def test_batch_completes_and_states_isolation(batch: Batch) -> None:
    assert batch.exit_code == 0, batch.output
    expected = {p.name for p in ADVERSARIAL.iterdir() if p.is_dir()} | set(GENERATED_CASES)
    assert set(batch.results) == (expected if batch.mode == PRIMARY else ISOLATION_CASES)
    for sid, r in batch.results.items():
        assert r["provenance"]["sandbox"] == batch.mode, sid
    assert batch.seconds < 120, f"the batch took {batch.seconds:.0f} s"


def test_honest_student_intact(batch: Batch) -> None:
    r = batch.student("honest")
    assert r["score"] == MAX, messages(r)
    assert r["provenance"]["sandbox"] == batch.mode
    # Its files were not touched by anyone in the class.
    assert (batch.base / "class" / "honest" / "solution.py").read_text() == batch.honest_source


def test_wrong_baseline(batch: Batch) -> None:
    r = assert_no_score(batch, "wrong")
    assert "add(2, 3) returned -1, expected 5" in messages(r, "add")


def test_nothing_outside_the_sandbox_was_touched(batch: Batch) -> None:
    assert batch.canary.read_text() == CANARY_TEXT
    assert sorted(p.name for p in batch.markers.iterdir()) == []
    assert not (batch.out / "FORGED.txt").exists()
    assert not (batch.base / "class" / "reports").exists()
    assert not list((batch.base / "class").glob("*/reports"))
    assert not list((batch.base / "class").glob("*/result.json"))


def test_no_process_outlives_the_batch(batch: Batch) -> None:
    assert batch.leftovers == []


def test_no_network_contact(batch: Batch) -> None:
    assert batch.contacts == []
    r = assert_no_score(batch, "network")
    net = [line for line in r["load"]["stdout"].splitlines() if line.startswith("NET:")]
    assert net and "connected" not in net[0].replace("not connected", ""), net


# ---------------------------------------------------------------- comparisons and values


def test_patched_comparisons_do_not_help(batch: Batch) -> None:
    r = assert_no_score(batch, "patch_compare")
    assert outcomes(r, "add") == {"failed"} and outcomes(r, "scale") == {"failed"}
    assert "add(2, 3) returned -1, expected 5" in messages(r, "add")


def test_tensor_subclass_and_lying_int_are_flattened(batch: Batch) -> None:
    r = assert_no_score(batch, "tensor_subclass")
    assert "add(2, 3) returned -1, expected 5" in messages(r, "add")
    assert outcomes(r, "scale") == {"failed"}


def test_patching_the_grader_in_the_child_changes_nothing(batch: Batch) -> None:
    r = assert_no_score(batch, "patch_grader")
    # Forged answers arrive as what they are: a string where an int was expected.
    assert "returned a str, not an int" in messages(r, "add")


# ---------------------------------------------------------------- exits


def test_sys_exit_at_import(batch: Batch) -> None:
    r = assert_no_score(batch, "exit_at_import")
    assert "SystemExit" in messages(r)
    assert outcomes(r, "add") <= {"failed", "error"}


def test_os_exit_at_import(batch: Batch) -> None:
    r = assert_no_score(batch, "os_exit_at_import")
    assert "ended while loading your code" in messages(r)


def test_os_exit_mid_call_gets_a_fresh_process_for_the_next_test(batch: Batch) -> None:
    r = batch.student("exit_mid_call")
    assert outcomes(r, "add") == {"error"}
    assert "ended during this test" in messages(r, "add")
    assert outcomes(r, "scale") == {"passed"}
    assert r["score"] == 2


def test_sys_exit_mid_call(batch: Batch) -> None:
    r = batch.student("sys_exit_mid_call")
    assert outcomes(r, "add") == {"error"}
    assert "SystemExit" in messages(r, "add")
    assert outcomes(r, "scale") == {"passed"}
    assert r["score"] == 2


# ---------------------------------------------------------------- files


def test_forged_result_is_replaced_by_the_real_one(batch: Batch) -> None:
    r = assert_no_score(batch, "forge_result")
    assert r["provenance"] is not None and r["max_score"] == MAX
    assert "FORGE:" in r["load"]["stdout"]
    # Judged by the real files, not by what the submission believes it wrote (inside
    # its sandbox those paths may not exist, or be its own private copies).
    assert batch.student("honest")["score"] == MAX
    grades = (batch.out / "grades.csv").read_text()
    assert "999" not in grades and "forge_result" in grades
    assert not (batch.out / "FORGED.txt").exists()
    assert batch.canary.read_text() == CANARY_TEXT


def test_filesystem_search_finds_no_hidden_test(batch: Batch) -> None:
    r = assert_no_score(batch, "search_fs")
    stdout = r["load"]["stdout"]
    assert "READ:" in stdout and "FOUND:" in stdout
    for sentinel in (HIDDEN_SENTINEL, REFERENCE_SENTINEL, HONEST_SENTINEL, "canary: written"):
        assert sentinel not in stdout
    found = stdout.split("FOUND:", 1)[1].splitlines()[0]
    # It sees system files and the grader's own (public) code, nothing of this class
    # (installed packages have test files of their own: matplotlib/tests/test_scale.py).
    for secret in (str(TINY), str(batch.base), "hidden/test_add.py", "hidden/test_scale.py",
                   "result.json"):
        assert secret not in found, found[:1000]


def test_symlinks_are_not_followed(batch: Batch) -> None:
    r = assert_no_score(batch, "symlink_escape")
    assert "symbolic link; the grader does not follow links" in messages(r)
    text = batch.report_text("symlink_escape")
    assert REFERENCE_SENTINEL not in text and HIDDEN_SENTINEL not in text
    linked = assert_no_score(batch, "linked_student")
    assert "symbolic link" in messages(linked)
    assert HONEST_SENTINEL not in batch.report_text("linked_student")


def test_shipped_config_is_never_loaded(batch: Batch) -> None:
    r = assert_no_score(batch, "shipped_config")
    assert outcomes(r, "add") == {"failed"}
    assert list(batch.markers.iterdir()) == []


def test_notebook_shell_commands_stay_inside(batch: Batch) -> None:
    r = assert_no_score(batch, "notebook_shell")
    assert r["load"]["kind"] == "notebook"
    assert list(batch.markers.iterdir()) == []
    text = batch.report_text("notebook_shell")
    assert HIDDEN_SENTINEL not in text and REFERENCE_SENTINEL not in text


def test_oversized_and_non_utf8_get_a_clear_message(batch: Batch) -> None:
    big = assert_no_score(batch, "oversized")
    assert "larger than" in messages(big) and "KiB" in messages(big)
    latin = assert_no_score(batch, "non_utf8")
    assert "not UTF-8" in messages(latin)


# ---------------------------------------------------------------- limits


def test_infinite_loop_times_out(batch: Batch) -> None:
    r = batch.student("infinite_loop")
    assert outcomes(r, "add") == {"timeout"}
    assert "did not finish within" in messages(r, "add")
    assert outcomes(r, "scale") == {"passed"}


def test_infinite_import_times_out(batch: Batch) -> None:
    r = assert_no_score(batch, "infinite_import")
    assert "loading your code did not finish" in messages(r)


def test_hundred_gigabytes_is_refused(batch: Batch) -> None:
    r = batch.student("memory_hog")
    assert outcomes(r, "add") == {"error"}
    text = messages(r, "add")
    assert "MemoryError" in text or "allocate" in text, text
    assert outcomes(r, "scale") == {"passed"}


def test_fork_bomb_is_contained(batch: Batch) -> None:
    r = batch.student("fork_bomb")
    assert outcomes(r, "add") <= {"timeout", "error"}
    assert outcomes(r, "scale") == {"passed"}
    assert not [p for p in batch.leftovers if "forkbomb" in p]


def test_daemonized_processes_die_with_the_student(batch: Batch) -> None:
    assert_no_score(batch, "daemon")
    assert not [p for p in batch.leftovers if "1000.7" in p]


def test_output_flood_is_cut_and_reported(batch: Batch) -> None:
    r = batch.student("flood")
    assert r["score"] == MAX, messages(r)
    assert r["load"]["stdout_truncated"] is True
    assert 0 < len(r["load"]["stdout"].encode()) <= 64 * 1024
    assert "truncated" in (batch.out / "flood" / "report.html").read_text()


def test_kill_all_reaches_nobody_else(batch: Batch) -> None:
    assert_no_score(batch, "kill_all")
    assert batch.student("honest")["score"] == MAX


# ---------------------------------------------------------------- the child's world


def test_environment_is_scrubbed(batch: Batch) -> None:
    r = batch.student("env_dump")
    assert r["score"] == MAX, messages(r)
    line = next(ln for ln in r["load"]["stdout"].splitlines() if ln.startswith("ENV:"))
    env = json.loads(line[len("ENV:"):])
    assert sorted(env) == sorted(["HOME", "TMPDIR", "PATH", "LANG", "MPLBACKEND",
                                  "OMP_NUM_THREADS", "USER", "LOGNAME"])
    assert SECRET not in r["load"]["stdout"]
    for value in env.values():
        assert str(batch.base) not in value and "/root" not in value
    assert env["HOME"] == env["TMPDIR"]
    cwd = next(ln for ln in r["load"]["stdout"].splitlines() if ln.startswith("CWD:"))
    # The private temp folder holds a copy of the submission and nothing else.
    assert env["HOME"] in cwd and "['solution.py']" in cwd


@pytest.mark.parametrize("sid", ["protocol_garbage", "protocol_huge", "patch_builtins"])
def test_garbage_from_the_child_is_a_clean_error(batch: Batch, sid: str) -> None:
    # A forged or malformed answer, a 1 GiB frame announced, a child too broken to
    # answer: an error for this student (not a grader failure), and the batch goes on.
    r = assert_no_score(batch, sid)
    assert outcomes(r, "add") == {"error"} and outcomes(r, "scale") == {"error"}
    assert "ended while loading your code" in messages(r), messages(r)
