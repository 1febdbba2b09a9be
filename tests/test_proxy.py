"""The `student` proxy against a real sandboxed child: what a test sees, and what it costs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from grader.limits import Limits
from grader.sandbox import host as sandbox
from grader.sandbox.host import Isolation, Sandbox
from grader.testing.student import Connection, RemoteObject, Student, StudentRaised

LIMITS = Limits(load_s=10, per_test_s=10, per_submission_s=60, memory_mb=2048, cpu_s=30,
                processes=32, file_size_mb=4, output_kb=64)

SOURCE = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.label = "net"

    def forward(self, x):
        return self.lin(x)

    def eval(self):  # an override is still called, in the child
        self.label = "evaluated"
        return super().eval()


def apply(fn, x):
    return fn(x)


class Plain:
    def state_dict(self):
        return {"plain": 1}
'''


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    with Sandbox(Isolation.AUTO, LIMITS) as sb:
        yield sb


@pytest.fixture
def student(box: Sandbox) -> Iterator[Student]:
    conn = Connection(box, {"op": "load", "kind": "module", "source": SOURCE,
                            "filename": "solution.py"}, LIMITS, "solution.py")
    yield Student(conn)
    conn.close()


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Every request the grader sends to the child, in order."""
    sent: list[dict] = []
    real = sandbox.Child.request

    def counting(self, doc, timeout):  # type: ignore[no-untyped-def]
        sent.append(doc)
        return real(self, doc, timeout)

    monkeypatch.setattr(sandbox.Child, "request", counting)
    return sent


def test_methods_calls_and_attributes_of_a_students_object(student: Student) -> None:
    net = student.Net(3)
    assert isinstance(net, RemoteObject) and "Net" in repr(net)
    net.eval()
    state = net.state_dict()
    assert set(state) == {"lin.weight", "lin.bias"} and isinstance(state["lin.weight"], torch.Tensor)
    assert net.label == "evaluated"  # the student's override ran, in the child
    assert net.training is False     # plain attributes come back as values
    x = torch.ones(1, 3)
    assert torch.equal(student.apply(net.forward, x), net(x))  # a bound method goes back


def test_each_lookup_and_each_call_is_one_request(student: Student, requests: list[dict]) -> None:
    plain = student.Plain()
    requests.clear()
    assert plain.state_dict() == {"plain": 1}
    assert [r["op"] for r in requests] == ["getattr", "call"]


def test_a_method_seen_once_is_looked_up_and_called_in_one_request(student: Student, requests: list[dict]) -> None:
    a, b = student.Net(3), student.Net(3)
    requests.clear()
    a.eval()
    b.eval()
    assert [r["op"] for r in requests] == ["getattr", "call", "call"]
    assert requests[2].get("attr") == "eval"
    assert a.label == "evaluated" and b.label == "evaluated"  # each object's own method ran


def test_a_method_called_in_one_request_is_still_the_bound_method(student: Student) -> None:
    a, b = student.Net(3), student.Net(3)
    x = torch.ones(1, 3)
    a.forward(x)  # forward is now known as a method of Net
    method = b.forward
    assert torch.equal(student.apply(method, x), b(x))  # sent back as b's bound method
    assert "method" in repr(method)
    with pytest.raises(TypeError):
        student.Net(3).training()  # a value is not made a method: calling it fails as in Python


def test_what_the_students_code_raises_arrives_as_its_type(student: Student) -> None:
    net = student.Net(3)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict({"nope": torch.zeros(1)})
    assert isinstance(info.value, StudentRaised) and "nope" in str(info.value)
    with pytest.raises(AttributeError):
        net.no_such_attribute  # noqa: B018
