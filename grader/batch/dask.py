"""Grading on an existing Dask cluster: `grader grade --executor dask --scheduler ADDR`.

Each Dask worker process keeps one warm sandbox (a zygote under bubblewrap where it
works) and grades the submissions it is given one at a time, exactly as a local
worker does (`pipeline.grade_submission`). Submissions are read from their paths, so
the workers must see the same filesystem (a shared folder, or a LocalCluster). What
comes back is the result as JSON text; results are written, and resumption works, in
the calling process as for local grading. Workers should run one thread each
(`--nthreads 1`): grading in one process is serialized anyway.

Errors come back as local workers send theirs (`errors.to_doc`): a broken assignment
stops the batch with its message; any other error of the grader's marks that one
submission not gradable, after `Grading` retried it once in a fresh sandbox.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from grader.assignment import Assignment
from grader.batch.prepare import load_assignment, sandbox_for, ungradable
from grader.batch.workers import submission_doc, submission_from
from grader.config import RunConfig
from grader.errors import UsageError, from_doc, one_line, stops_the_batch, to_doc
from grader.intake.discover import Submission
from grader.results import SubmissionResult

if TYPE_CHECKING:
    from grader.batch.pipeline import Grading

_STATE: dict[str, Any] = {}
_LOCK = threading.Lock()


def grade_all(subs: Sequence[Submission], assignment: Assignment, config: RunConfig,
              scheduler: str) -> Iterator[SubmissionResult]:
    """Yield each result as the cluster finishes it."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise UsageError("--executor dask needs the `distributed` package "
                         "(pip install 'grader[dask]')") from None
    init = config.with_assignment(assignment.path).to_json()
    with Client(scheduler, timeout="30s") as client:
        futures = {client.submit(grade_on_worker, init, submission_doc(s), pure=False,
                                 key=f"grade-{i}-{s.id}"): s for i, s in enumerate(subs)}
        for future in as_completed(futures):
            sub = futures[future]
            try:
                reply = json.loads(future.result())
            except Exception as exc:  # the Dask worker died or could not run the task
                yield ungradable(sub, assignment, one_line(
                    f"the Dask worker failed: {type(exc).__name__}: {exc}"))
                continue
            if "fault" not in reply:
                yield SubmissionResult.from_json_dict(reply["result"])
                continue
            error = from_doc(reply["fault"])
            if stops_the_batch(error):
                for other in futures:
                    other.cancel()
                raise error
            yield ungradable(sub, assignment, one_line(f"{type(error).__name__}: {error}"))


def grade_on_worker(config: str, sub_doc: dict[str, Any]) -> str:
    """Runs on a Dask worker: grade one submission with this process's warm sandbox.
    `config` is the `RunConfig` as JSON. Returns JSON: {"result": ...}, or
    {"fault": {"class", "message"}}."""
    with _LOCK:
        try:
            result = _warm(config).grade(submission_from(sub_doc))
        except Exception as exc:  # ours (a GraderError), or a bug of ours
            return json.dumps({"fault": to_doc(exc)})
        return json.dumps({"result": result.to_json_dict()})


def _warm(key: str) -> "Grading":
    """This Dask worker's `Grading` for the config `key` (JSON), kept warm: the same
    config is the same text (`RunConfig.to_json` sorts its keys)."""
    if _STATE.get("key") != key:
        import torch

        from grader.batch.pipeline import Grading  # torch and pytest: on the worker only

        os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # a plugin is not ours to run
        torch.set_num_threads(1)
        if "grading" in _STATE:
            _STATE["grading"].close()
            _STATE["grading"].sandbox.stop()
        _STATE.clear()
        config = RunConfig.from_json(key)
        a = load_assignment(config)
        sandbox = sandbox_for(a, config)
        sandbox.launch()
        sandbox.ready_or_restart()
        try:
            grading = Grading(a, sandbox, config)
        except BaseException:  # a broken reference or tests: no zygote left behind
            sandbox.stop()
            raise
        _STATE.update(key=key, grading=grading)
    return cast("Grading", _STATE["grading"])
