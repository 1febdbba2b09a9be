"""Grading many submissions in parallel: a pool of warm grading workers.

Each worker is a fork of a warm template that imported torch and pytest once
(`batch.template`), or, where the template cannot make one, a process of its own that
imports them; it attaches to the zygote the pool started for all of them (or starts its
own, when it replaces a worker that died), and grades submissions one after another. It
talks to the pool over a pipe in JSON lines (plain data, never pickle): first the run's
`RunConfig` (`to_json`), then one submission a line, each answered by its result
(`SubmissionResult.to_json_dict`) or an error. A worker that
dies or hangs costs only the submission it was grading, which gets an *ungradable*
result (a grader failure, not a zero); the worker is replaced and the batch goes on.

An error of the grader's in a worker crosses the pipe as its class name and message
(`errors.to_doc`) and is rebuilt here: one that every submission would meet (a broken
assignment: `errors.stops_the_batch`) stops the batch with its own message, any other
marks that one submission not gradable (`Grading` already retried it once in a fresh
sandbox where the sandbox failed).
"""

from __future__ import annotations

import gc
import json
import os
import queue
import socket
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.assignment import Assignment
from grader.batch.prepare import ATTEMPTS, load_assignment, sandbox_for, ungradable
from grader.batch.template import Forked, Template
from grader.config import RunConfig
from grader.errors import GraderError, InternalError, from_doc, one_line, stops_the_batch, to_doc
from grader.intake.discover import Submission
from grader.limits import Limits
from grader.results import SubmissionResult
from grader.sandbox import interpreter
from grader.sandbox.launch import Isolation

if TYPE_CHECKING:
    from grader.batch.pipeline import Grading

# The collector is off while torch, pytest and the tests are imported (~0.1-0.2 s of
# CPU walking the growing heap, for almost no garbage); `main` freezes what is loaded and
# turns it back on before the first submission.
_BOOT = "import gc; gc.disable(); from grader.batch import workers; workers.main(sys.argv[2:])"


def submission_doc(sub: Submission) -> dict[str, Any]:
    doc = asdict(sub)
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in doc.items()}


def submission_from(doc: dict[str, Any]) -> Submission:
    paths = {k: (Path(doc[k]) if doc[k] else None) for k in ("module", "notebook", "answers")}
    return Submission(id=doc["id"], path=Path(doc["path"]), notices=tuple(doc["notices"]), **paths)


def worker_env() -> dict[str, str]:
    return {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "OMP_NUM_THREADS": "1"}


def worker_path() -> list[str]:
    """-I: no PYTHON* variables, no user site, and no current folder on sys.path, so a
    `grader/` folder where the command runs (a student's pull request) can never stand in
    for this package; the package's own location and our import path (less the current
    folder) are put on the path."""
    return [str(interpreter.PACKAGE.parent), *(p for p in interpreter.import_path() if p != os.getcwd())]


class Worker:
    def __init__(self, config: str, zygote: socket.socket | None = None,
                 level: Isolation | None = None, template: Template | None = None) -> None:
        """`config`: the `RunConfig` as JSON, the first line the worker reads; `zygote`:
        its connection to a zygote the batch shares (`Sandbox.launch_shared`), at
        isolation `level`; without one the worker starts a zygote of its own. A fork of
        `template` where it can make one, else a process of its own."""
        forked = template.fork(zygote, level, config) if template is not None else None
        self.proc: subprocess.Popen[str] | Forked
        if forked is not None:
            self.proc = forked
        else:
            shared = [str(zygote.fileno()), level.value] if zygote is not None and level is not None else []
            self.proc = subprocess.Popen(
                interpreter.boot_argv(_BOOT, worker_path(), *shared), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, env=worker_env(), text=True, bufsize=1,
                pass_fds=[zygote.fileno()] if shared and zygote is not None else (),
            )
            if zygote is not None:
                zygote.close()  # the worker holds it now: the zygote sees it close when the worker ends
        self._send(config)
        self.ready = self._read(timeout_s=300.0)

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def _read(self, timeout_s: float) -> dict[str, Any] | None:
        box: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        reader = threading.Thread(target=lambda: box.put(self.proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        try:
            line = box.get(timeout=timeout_s)
        except queue.Empty:
            self.kill()
            return None
        return json.loads(line) if line else None

    def grade(self, sub: Submission, timeout_s: float) -> dict[str, Any] | None:
        try:
            self._send(json.dumps({"submission": submission_doc(sub)}))
        except (BrokenPipeError, OSError):
            return None
        return self._read(timeout_s)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()


def grade_all(subs: Sequence[Submission], assignment: Assignment, config: RunConfig,
              jobs: int) -> Iterator[SubmissionResult]:
    """Yield each submission's result as soon as it is graded (in completion order).
    The workers load `assignment` themselves, as `config` says (`load_assignment`), and
    share one zygote, started here (`Sandbox.launch_shared`)."""
    init = config.with_assignment(assignment.path).to_json()
    todo: queue.Queue[Submission | None] = queue.Queue()
    for s in subs:
        todo.put(s)
    done: queue.Queue[SubmissionResult | BaseException] = queue.Queue()
    timeout_s = submission_timeout_s(config.limits_for(assignment.limits))
    n = max(1, min(jobs, len(subs)))
    zygote = sandbox_for(assignment, config)
    try:
        connections: list[socket.socket | None] = list(zygote.launch_shared(n))
    except GraderError:  # no sandbox here: each worker meets it and says so
        connections = [None] * n
    template = _template()
    starts = _starts(connections, zygote.level, template)
    threads = [threading.Thread(target=_drive, args=(init, todo, done, assignment, timeout_s, start),
                                daemon=True) for start in starts]
    for t in threads:
        todo.put(None)
        t.start()
    try:
        for _ in subs:
            item = done.get()
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:  # stopped early (an error, a failed write): the workers take no more
        _drain(todo, len(threads))
        if template is not None:
            template.stop()
        zygote.stop()  # it ends once the workers have closed their connections (10 s at most)


@dataclass
class _Start:
    """How a pool thread starts its first worker: on its connection to the shared zygote,
    once `after` is set. A replacement worker (after a crash) starts a zygote of its own."""

    zygote: socket.socket | None
    level: Isolation | None
    template: Template | None = None
    after: threading.Event | None = None
    started: threading.Event = field(default_factory=threading.Event)
    """Set once this thread's first worker is ready, or will never be started."""

    def worker(self, init: str) -> Worker:
        if self.after is not None:
            self.after.wait()
        zygote, self.zygote = self.zygote, None
        try:
            return Worker(init, zygote, self.level, self.template)
        finally:
            self.started.set()

    def release(self) -> None:
        """The thread ends: a connection it never used is closed, and nobody waits for it."""
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
        self.started.set()


def _template() -> Template | None:
    try:
        return Template(worker_env(), worker_path())
    except OSError:  # workers start as processes of their own
        return None


def _starts(connections: Sequence[socket.socket | None], level: Isolation | None,
            template: Template | None = None) -> list[_Start]:
    """One start per pool thread. Forks of the template start at once. Without one,
    booting a worker (torch, pytest, the tests: seconds of CPU) next to the zygote's boot
    on every core would delay the first result for all; so one fewer worker than cores
    starts at once (at least one), the rest once the first is ready, while it grades."""
    starts = [_Start(c, level, template) for c in connections]
    at_once = len(starts) if template is not None else max(1, (os.cpu_count() or 1) - 1)
    for start in starts[at_once:]:
        start.after = starts[0].started
    return starts


def submission_timeout_s(limits: Limits) -> float:
    """How long a worker may take on one submission before it counts as hung: a grading
    the sandbox failed is done again once (`prepare.ATTEMPTS`), with a restart."""
    return ATTEMPTS * (limits.per_submission_s + limits.load_s * 2) + 120


def _drain(todo: "queue.Queue[Submission | None]", drivers: int) -> None:
    while True:
        try:
            todo.get_nowait()
        except queue.Empty:
            break
    for _ in range(drivers):
        todo.put(None)


def _drive(init: str, todo: "queue.Queue[Submission | None]",
           done: "queue.Queue[SubmissionResult | BaseException]", assignment: Assignment,
           timeout_s: float, start: _Start) -> None:
    """One worker's loop, in a thread of the pool. Whatever goes wrong here reaches the
    pool as an error: a thread that died silently would leave the batch waiting."""
    try:
        _drive_worker(init, todo, done, assignment, timeout_s, start)
    except Exception as exc:  # a bug of ours in the pool itself
        done.put(InternalError(one_line(f"a grading worker's driver failed: {type(exc).__name__}: {exc}")))
    finally:
        start.release()


def _drive_worker(init: str, todo: "queue.Queue[Submission | None]",
                  done: "queue.Queue[SubmissionResult | BaseException]", assignment: Assignment,
                  timeout_s: float, start: _Start) -> None:
    worker: Worker | None = None
    while (sub := todo.get()) is not None:
        if worker is None:
            worker = start.worker(init)
            if worker.ready is None or "fault" in worker.ready:
                done.put(_start_failure(worker.ready))
                worker.kill()
                return
        reply = worker.grade(sub, timeout_s)
        if reply is None:
            done.put(ungradable(sub, assignment, "the grading worker crashed or hung"))
            worker.kill()
            worker = None
        elif "fault" in reply:
            error = from_doc(reply["fault"])
            if stops_the_batch(error):
                done.put(error)
                break
            done.put(ungradable(sub, assignment, _reason(error)))
        else:
            done.put(SubmissionResult.from_json_dict(reply["result"]))
    if worker is not None:
        worker.close()


def _start_failure(ready: dict[str, Any] | None) -> GraderError:
    if ready is None:
        return InternalError("a grading worker could not start (it exited or hung)")
    error = from_doc(ready["fault"])
    if stops_the_batch(error):
        return error  # a broken assignment: its own message, exit 2
    return InternalError(f"a grading worker could not start: {_reason(error)}")


def _reason(error: GraderError) -> str:
    """One line for a not-gradable result: the error's class and message."""
    return one_line(f"{type(error).__name__}: {error}")


def main(shared: Sequence[str] = ()) -> None:
    """Worker process: read tasks on stdin, answer on a private copy of stdout.
    `shared`: the fd and isolation level of a zygote the batch shares, if any."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed here goes to stderr, not into the protocol
    # Private too: the test session's capture puts its own object on sys.stdin.
    inp = os.fdopen(os.dup(0), "r")
    from grader.sandbox.host import Sandbox

    sandbox: Sandbox | None = None
    try:
        config = RunConfig.from_json(inp.readline())
        a = load_assignment(config)
        sandbox = sandbox_for(a, config)
        if shared:
            sandbox.attach(socket.socket(fileno=int(shared[0])), Isolation(shared[1]))
        else:
            sandbox.launch()  # the zygote imports torch while this process does the same
        warm_imports()
        from grader.batch.pipeline import Grading  # torch and pytest: in the worker, never the pool

        grading = Grading(a, sandbox, config)  # collects the tests
        sandbox.ready_or_restart()
    except Exception as exc:
        if sandbox is not None:
            sandbox.stop()
        _answer(out, {"fault": to_doc(exc)})
        return
    gc.freeze()  # torch's module objects never die: keep the collector off them
    gc.enable()  # off since `_BOOT`
    ready = _answer(out, {"ready": True, "sandbox": sandbox.level.value if sandbox.level else ""})
    try:
        for line in inp if ready else ():
            if not _answer(out, _grade_line(line, grading)):
                break
    finally:
        sandbox.stop()
    os._exit(0)  # skip the interpreter's teardown of torch (~0.5 s): nothing is left to do


def _answer(out: Any, doc: dict[str, Any]) -> bool:
    """Send one line to the pool; False when the pool is gone (it stopped early, on an
    error of its own: nobody is left to answer, and that is not this worker's error)."""
    try:
        out.write(json.dumps(doc) + "\n")
        out.flush()
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


def warm_imports() -> None:
    """What every submission needs, paid once: torch (one thread: one worker per core)
    and nbformat. The reference and the tests are loaded by `Grading`."""
    import nbformat  # noqa: F401
    import torch

    torch.set_num_threads(1)


def warm_key(config: str) -> None:
    """Compile the answer key's patterns (`answers.patterns.compile_key`). Quietly does
    nothing where the key cannot be read: each worker reports that itself."""
    try:
        run = RunConfig.from_json(config)
        if run.public:
            return
        from grader.answers.patterns import compile_key
        from grader.batch.pipeline import answer_key

        key = answer_key(load_assignment(run).answer_key)
        if key is not None:
            compile_key(key)
    except Exception:  # never the template's to report
        return


def _grade_line(line: str, grading: "Grading") -> dict[str, Any]:
    """One submission's answer: {"result": ...}, or {"fault": {"class", "message"}} for an
    error of the grader's (the parent rebuilds it: `errors.from_doc`)."""
    sub = submission_from(json.loads(line)["submission"])
    try:
        return {"result": grading.grade(sub).to_json_dict()}
    except Exception as exc:  # ours (a GraderError), or a bug of ours: never the student's
        return {"fault": to_doc(exc)}


if __name__ == "__main__":
    main()
