#!/usr/bin/env python
"""Where one grading worker's time goes, stage by stage (timestamps, no grader edits).

    python benchmarks/profile_worker.py --subs benchmarks/out/subs --k 12
    python benchmarks/profile_worker.py --subs benchmarks/out/subs --cprofile notebook

Runs what `python -m grader.batch.workers` runs, in this process, with timers wrapped
around the stages of grader.batch.pipeline.grade_submission (by monkeypatching names; the
grader's files are not changed):

    import torch/pytest/grader -> Sandbox.start (zygote boot) ->
    per submission: read_submission (incl. nbformat), spawn (fork), load (exec in the
    child), pytest.main (tests, split into time in tests vs pytest overhead, and time
    waiting on the child), answers, scoring, provenance, child close, then what the
    batch parent does: render report.html + write result.json.

Both wall time and this process's CPU time (time.process_time) are recorded; the
child's CPU is not visible here (it runs in the sandbox). The first submission of
each kind is reported separately (cold: lazy imports, first torch ops).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

T_START = time.perf_counter()
C_START = time.process_time()

REPO = Path(__file__).resolve().parents[1]
# The grader is imported from the installed package or PYTHONPATH (to profile a
# snapshot, PYTHONPATH=/path/to/snapshot); the repo only when nothing else has it.
try:
    import grader  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPO))

import torch  # (timed: the worker's first import)

torch.set_num_threads(1)  # as grader.batch.workers does: one worker per core. Without
# it every tiny op here paid for a 2-thread pool on a loaded 2-core machine: a softmax
# took ~7 ms, and the worker's CPU per submission read ~0.4 s instead of ~0.1 s.

T_TORCH = time.perf_counter()
import pytest

import grader.sandbox.host as sandbox_mod
from grader import assignment as assignment_mod
from grader.batch import pipeline
from grader.config import RunConfig
from grader.intake.discover import discover
from grader.report.files import write_report_html, write_result_json
from grader.sandbox.host import Isolation, Sandbox
from grader.testing import student as proxy

T_IMPORTS = time.perf_counter()
C_IMPORTS = time.process_time()

_current: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])


def timed(name: str, fn):  # type: ignore[no-untyped-def]
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        t, c = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            slot = _current[name]
            slot[0] += time.perf_counter() - t
            slot[1] += time.process_time() - c
            slot[2] += 1
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def sandbox_cpu() -> float:
    """CPU (s) of every process below this one, plus what they reaped (cutime/cstime):
    the zygote and the student children it forked and waited for."""
    return sandbox_counts()[0]


def sandbox_counts() -> tuple[float, int]:
    """(CPU s, minor page faults) of every process below this one, reaped ones included
    (cutime/cstime, cminflt): the zygote and the student children it forked and waited
    for. Minor faults after fork are mostly copy-on-write copies of the zygote's pages."""
    import os
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    data = f.read()
            except OSError:
                continue
            rest = data[data.rfind(")") + 2:].split()
            stats[int(name)] = (int(rest[1]), sum(int(x) for x in rest[11:15]),
                                int(rest[7]) + int(rest[8]))
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        kids.setdefault(ppid, []).append(pid)
    total, faults, todo = 0, 0, list(kids.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        faults += stats[pid][2]
        todo.extend(kids.get(pid, []))
    return total / tick, faults


def instrument() -> None:
    for name in ("read_submission", "load_reference", "_answers",
                 "score_questions", "exercise_results", "provenance", "_load_report"):
        setattr(pipeline, name, timed(name, getattr(pipeline, name)))
    pipeline.TestRunner.run = timed("run_tests", pipeline.TestRunner.run)  # type: ignore[method-assign]
    Sandbox.spawn = timed("spawn (fork)", Sandbox.spawn)  # type: ignore[method-assign]
    proxy.Connection._load_into = timed("load in child", proxy.Connection._load_into)  # type: ignore[method-assign]
    proxy.Connection.close = timed("child close", proxy.Connection.close)  # type: ignore[method-assign]
    sandbox_mod.Child.request = timed("child round trips", sandbox_mod.Child.request)  # type: ignore[method-assign]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--subs", type=Path, default=REPO / "benchmarks" / "out" / "subs")
    p.add_argument("--assignment", type=Path, default=None)
    p.add_argument("--k", type=int, default=12, help="submissions to grade (alternating kinds)")
    p.add_argument("--sandbox", default="auto")
    p.add_argument("--sort", default="cumulative",
                   help="how the test thread's cProfile is ordered: cumulative, tottime, ...")
    p.add_argument("--cprofile", choices=["module", "notebook"], default=None,
                   help="also cProfile one warm submission of this kind")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--pytest-args", default="",
                   help="what-if: extra arguments appended to every pytest.main call, "
                        "e.g. '--tb=native -p no:unraisableexception'")
    p.add_argument("--tbstyle", default=None,
                   help="what-if: set config.option.tbstyle in pytest_configure (the grader "
                        "disables the terminal plugin, so --tb cannot be passed); 'native' or "
                        "'line' skip pytest's AST-based traceback formatting")
    p.add_argument("--gc-freeze", action="store_true", default=True,
                   help="gc.freeze() once the sandbox and reference are up, as the worker "
                        "does (the default)")
    p.add_argument("--no-gc-freeze", dest="gc_freeze", action="store_false",
                   help="what-if: no gc.freeze() in this process")
    args = p.parse_args()
    if args.pytest_args or args.tbstyle:
        import shlex
        extra = shlex.split(args.pytest_args)
        real_main = pytest.main

        class TbStyle:
            @pytest.hookimpl(tryfirst=True)
            def pytest_configure(self, config):  # type: ignore[no-untyped-def]
                config.option.tbstyle = args.tbstyle

        more = [TbStyle()] if args.tbstyle else []

        def main_with_extra(argv, plugins=None):  # type: ignore[no-untyped-def]
            return real_main(list(argv) + extra, plugins=list(plugins or []) + more)
        pytest.main = main_with_extra  # type: ignore[assignment]

    a_path = args.assignment
    if a_path is None:
        a_path = REPO / "assignments/attention/assignment.yaml"
        try:
            assignment_mod.load(a_path)
        except Exception:
            a_path = REPO / "assignments/attention/dev-assignment.yaml"
    a = assignment_mod.load(a_path)
    subs = discover(args.subs, a)[: args.k]
    manifest = {m["id"]: m for m in json.loads((args.subs.parent / "manifest.json").read_text())}

    instrument()
    options = RunConfig()
    t = time.perf_counter()
    c = time.process_time()
    box = Sandbox(Isolation(args.sandbox), a.limits)
    box.start()
    t_sandbox, c_sandbox = time.perf_counter() - t, time.process_time() - c
    if args.gc_freeze:
        import gc
        pipeline.load_reference(a.reference)
        gc.collect()
        gc.freeze()

    t = time.perf_counter()
    grading = pipeline.Grading(a, box, options)  # one test session, as in a worker
    t_session = time.perf_counter() - t
    out = Path("/tmp/profile_worker_out")
    per_sub: list[dict[str, object]] = []
    seen_kinds: set[str] = set()
    for sub in subs:
        _current.clear()
        kind = manifest.get(sub.id, {}).get("kind", "module")
        z, f = sandbox_counts()
        t, c = time.perf_counter(), time.process_time()
        result = grading.grade(sub)
        t_grade, c_grade = time.perf_counter() - t, time.process_time() - c
        time.sleep(0.05)  # let the zygote reap the child
        z2, f2 = sandbox_counts()
        z_grade, f_grade = z2 - z, f2 - f
        t2, c2 = time.perf_counter(), time.process_time()
        write_report_html(result, out / sub.id / "report.html")
        t_html = time.perf_counter() - t2
        t3 = time.perf_counter()
        write_result_json(result, out / sub.id / "result.json")
        t_json = time.perf_counter() - t3
        c_write = time.process_time() - c2
        stages = {k: (v[0], v[1], v[2]) for k, v in _current.items()}
        tests = sum(tt.duration_s or 0 for ex in result.exercises for tt in ex.tests)
        per_sub.append({"id": sub.id, "kind": kind, "cold": kind not in seen_kinds,
                        "grade_wall": t_grade, "grade_cpu": c_grade, "child_cpu": z_grade,
                        "child_minflt": f_grade, "stages": stages,
                        "tests_reported_s": tests, "html_s": t_html, "json_s": t_json,
                        "write_cpu": c_write, "score": result.score,
                        "variant": manifest.get(sub.id, {}).get("variant", "?"),
                        "failed_tests": sum(not tt.passed for ex in result.exercises
                                            for tt in ex.tests if tt.test_id.startswith(("hidden/", "public/")))})
        seen_kinds.add(kind)

    prof_text = ""
    if args.cprofile:
        import cProfile
        import io
        import pstats
        sub = next(s for s in subs if manifest.get(s.id, {}).get("kind") == args.cprofile)
        from grader.testing import session as testrun
        # The tests run in the test session's thread: profile that thread too.
        in_tests = cProfile.Profile()
        run_items = testrun.GraderPlugin._run_items

        def profiled(self, *a, **k):  # type: ignore[no-untyped-def]
            return in_tests.runcall(run_items, self, *a, **k)
        testrun.GraderPlugin._run_items = profiled  # type: ignore[method-assign]
        pr = cProfile.Profile()
        pr.enable()
        grading.grade(sub)
        pr.disable()
        testrun.GraderPlugin._run_items = run_items  # type: ignore[method-assign]
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("cumulative").print_stats(25)
        buf.write("\n--- in the test session's thread ---\n")
        pstats.Stats(in_tests, stream=buf).sort_stats(args.sort).print_stats(60)
        prof_text = buf.getvalue()
    box.stop()

    print(f"startup: import torch {T_TORCH - T_START:.2f} s; + pytest + grader "
          f"{T_IMPORTS - T_TORCH:.2f} s (CPU {C_IMPORTS - C_START:.2f} s); "
          f"Sandbox.start (zygote boot, {box.level.value if box.level else '?'}) "
          f"{t_sandbox:.2f} s wall (worker CPU {c_sandbox:.2f} s; the zygote's own CPU is not counted); "
          f"test session (pytest config + collection) {t_session:.2f} s")
    names = ["read_submission", "spawn (fork)", "load in child", "run_tests", "child round trips",
             "load_reference", "_answers", "score_questions", "exercise_results", "_load_report",
             "provenance", "child close"]
    for cold in (True, False):
        for kind in ("module", "notebook"):
            rows = [r for r in per_sub if r["kind"] == kind and r["cold"] == cold]
            if not rows:
                continue
            label = f"{'cold' if cold else 'warm'} {kind} (n={len(rows)}, medians)"
            print(f"\n{label}")
            print(f"  {'grade_submission total':<28} wall {statistics.median(r['grade_wall'] for r in rows):7.3f} s"
                  f"  CPU {statistics.median(r['grade_cpu'] for r in rows):7.3f} s (worker)"
                  f" + {statistics.median(r['child_cpu'] for r in rows):.3f} s (sandbox child)"
                  f"; sandbox minor faults {statistics.median(r['child_minflt'] for r in rows):.0f}")
            for n in names:
                w = [r["stages"].get(n, (0, 0, 0)) for r in rows]  # type: ignore[union-attr]
                print(f"  {n:<28} wall {statistics.median(x[0] for x in w):7.3f} s"
                      f"  CPU {statistics.median(x[1] for x in w):7.3f} s  calls {statistics.median(x[2] for x in w):g}")
            print(f"  {'tests (pytest call phases)':<28} wall {statistics.median(r['tests_reported_s'] for r in rows):7.3f} s")
            print(f"  {'render report.html':<28} wall {statistics.median(r['html_s'] for r in rows):7.3f} s")
            print(f"  {'write result.json (fsync)':<28} wall {statistics.median(r['json_s'] for r in rows):7.3f} s")
    print("\nper submission: id kind variant failed-tests wall CPU(worker) CPU(sandbox child)")
    for r in per_sub:
        print(f"  {r['id']} {r['kind']:<8} {r['variant']:<12} {r['failed_tests']:>3} "
              f"{r['grade_wall']:6.3f} {r['grade_cpu']:6.3f} {r['child_cpu']:6.3f}"
              f"{'  (cold)' if r['cold'] else ''}")
    if prof_text:
        print("\ncProfile of one warm", args.cprofile, "submission (cumulative):")
        print(prof_text)
    if args.json:
        args.json.write_text(json.dumps({"per_sub": per_sub, "sandbox_s": t_sandbox,
                                         "import_torch_s": T_TORCH - T_START,
                                         "imports_s": T_IMPORTS - T_START}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
