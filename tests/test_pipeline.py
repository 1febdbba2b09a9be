"""One submission through the whole pipeline, in this process (the child is still sandboxed)."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from result_samples import without_timing

from grader import assignment
from grader.batch.pipeline import grade_submission
from grader.config import RunConfig
from grader.intake.discover import discover
from grader.sandbox.host import Isolation, Sandbox

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"


@pytest.fixture(scope="module")
def attention():
    return assignment.load(ROOT / "assignments" / "attention" / "assignment.yaml")


@pytest.fixture(scope="module")
def sandbox(attention):
    with Sandbox(Isolation.AUTO, attention.limits) as box:
        yield box


@pytest.mark.parametrize("case", ["correct_qkv_module", "dropout_in_eval"])
def test_five_gradings_give_identical_results(case, attention, sandbox):
    sub = discover(CORPUS / case, attention)[0]
    docs = [without_timing(grade_submission(sub, attention, sandbox, RunConfig())) for _ in range(5)]
    assert all(d == docs[0] for d in docs[1:])


def test_reference_gets_full_marks_and_records_provenance(attention, sandbox, tmp_path):
    folder = tmp_path / "reference"
    folder.mkdir()
    (folder / "attention.py").write_text((ROOT / "reference" / "attention.py").read_text())
    (folder / "answers.yaml").write_text((ROOT / "assignments" / "attention" / "solution" / "answers.yaml").read_text())
    result = grade_submission(discover(folder, attention)[0], attention, sandbox, RunConfig())
    assert result.score == result.max_score == 100, [
        (t.name, t.message) for ex in result.exercises for t in ex.tests if not t.passed]
    p = result.provenance
    assert p.assignment == "attention" and p.seed == 1234 and p.device == "cpu"
    assert p.sandbox == sandbox.level.value and p.grader_version


def test_check_mode_never_needs_the_reference_or_key(attention, sandbox):
    sub = discover(CORPUS / "correct_qkv_module", attention)[0]
    hidden_free = replace(attention, reference=None, answer_key=None)
    result = grade_submission(sub, hidden_free, sandbox, RunConfig(public=True))
    assert all(t.passed for ex in result.exercises for t in ex.tests)
    questions = [t for ex in result.exercises for t in ex.tests if t.test_id.startswith("question:")]
    assert questions and all(t.max_score == 0 for t in questions)


def test_the_workers_template_compiles_the_answer_key_once(attention):
    """`workers.warm_key`, which the template runs before its first fork: every pattern of
    the key is compiled, so the workers it forks never compile one while grading."""
    from grader.answers.patterns import term
    from grader.batch.workers import warm_key

    term.cache_clear()
    warm_key(RunConfig(assignment=attention.path).to_json())
    assert term.cache_info().currsize >= 500  # the lesson's key: about 500 patterns, some in two readings
    term.cache_clear()
    for broken in ("not json", RunConfig(assignment=Path("/nowhere/assignment.yaml")).to_json(),
                   RunConfig(assignment=attention.path, public=True).to_json()):
        warm_key(broken)  # nothing raised: the workers report a broken key themselves
    assert term.cache_info().currsize == 0


def test_the_template_compiles_the_key_before_its_first_fork(attention, monkeypatch):
    """Compiled after the first fork, the first worker compiled the key again during its first
    submission (about 0.4 s of CPU, on the way to the batch's first result)."""
    import os
    import socket

    from grader.answers.patterns import term
    from grader.batch import template

    compiled_at_fork: list[int] = []

    def fork() -> int:  # the template's side of a fork; no worker is started
        compiled_at_fork.append(term.cache_info().currsize)
        return 4242

    monkeypatch.setattr(template.os, "fork", fork)
    term.cache_clear()
    pool, ours = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    request = json.dumps({"level": "", "config": RunConfig(assignment=attention.path).to_json()}).encode()
    for _ in range(2):
        read_end, write_end = os.pipe()
        socket.send_fds(pool, [request], [read_end, write_end])
        os.close(read_end)
        os.close(write_end)
    served = threading.Thread(target=template.serve, args=(ours,))
    served.start()
    replies = [json.loads(pool.recv(1 << 10)) for _ in range(2)]
    pool.close()
    served.join(10)
    ours.close()
    assert replies == [{"pid": 4242}, {"pid": 4242}]
    assert len(compiled_at_fork) == 2 and compiled_at_fork[0] >= 500 and compiled_at_fork[1] == compiled_at_fork[0]


def test_a_fork_request_the_template_cannot_read_is_an_empty_one():
    from grader.batch.template import _request

    assert _request(b'{"level": "bwrap", "config": "{}"}') == {"level": "bwrap", "config": "{}"}
    assert _request(b"not json") == {} and _request(b"[1, 2]") == {} and _request(b"\xff") == {}
