#!/usr/bin/env python
"""What one request to a student's child costs, by kind (the per-request floor of grading).

    python benchmarks/round_trip.py              # 2000 requests of each kind, 3 rounds
    python benchmarks/round_trip.py --n 500 --sandbox process

A grading worker sends about 163 requests per submission (225 before `obj.method(...)` became
one request), and about 250 tensors cross each way. Each kind below runs N times against a
trivial module in a real sandbox child; the worker's user and system CPU per request come
from os.times(), the child's from the CPU the zygote reaped (`Connection.student_cpu_s`),
less that of a child that answered a tenth as many (its fork, load and exit). Rounds repeat
with nothing else changed, so their spread is this machine's noise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
try:
    import grader  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPO))

import torch

torch.set_num_threads(1)  # as a worker does

from grader.assignment import load
from grader.sandbox.host import Isolation, Sandbox
from grader.sandbox.protocol.calls import Load
from grader.testing.student import Connection, Student

SOURCE = "import torch\nX = 3\nT = torch.zeros(4, 8)\ndef f(t):\n    return t\ndef g(t):\n    return 1\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2000, help="requests of each kind per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sandbox", default="auto")
    args = p.parse_args()
    a = load(REPO / "assignments/attention/assignment.yaml")
    box = Sandbox(Isolation(args.sandbox), a.limits)
    box.start()
    request = Load(kind="module", filename="m.py", source=SOURCE).to_doc()
    x = torch.zeros(4, 8)
    kinds: list[tuple[str, Callable[[Any], Any]]] = [
        ("getattr -> int", lambda st: st.X.value()),
        ("getattr -> tensor", lambda st: st.T.value()),
        ("call(tensor) -> int", lambda st: st.g(x)),
        ("call(tensor) -> tensor", lambda st: st.f(x)),
    ]
    print(f"microseconds per request, {args.n} requests each: wall | worker user + sys | child CPU")
    try:
        for _ in range(args.rounds):
            row = []
            for name, ask in kinds:
                few = _child_cpu(box, request, a, ask, args.n // 10)[0]
                child, wall, user, system = _child_cpu(box, request, a, ask, args.n)
                per = 1e6 / args.n
                row.append(f"{name}: {wall * per:.0f} | {user * per:.0f} + {system * per:.0f} | "
                           f"{(child - few) * 1e6 / (args.n - args.n // 10):.0f}")
            print("   ".join(row))
    finally:
        box.stop()
    return 0


def _child_cpu(box: Sandbox, request: dict[str, Any], a: Any, ask: Callable[[Any], Any],
               n: int) -> tuple[float, float, float, float]:
    """(child CPU, wall, worker user, worker system) in seconds, for n requests to one child."""
    conn = Connection(box, request, a.limits, "bench")
    student = Student(conn)
    conn.begin_test(1)
    ask(student)  # the child is forked and loaded outside the timing
    t0, o0 = time.perf_counter(), os.times()
    for _ in range(n):
        ask(student)
    t1, o1 = time.perf_counter(), os.times()
    conn.close()
    return conn.student_cpu_s, t1 - t0, o1.user - o0.user, o1.system - o0.system


if __name__ == "__main__":
    sys.exit(main())
