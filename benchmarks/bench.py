#!/usr/bin/env python
"""Benchmark `grader grade` against a naive one-process-per-submission baseline.

    python benchmarks/bench.py                 # N=200, --jobs = CPU count
    python benchmarks/bench.py --n 40 --skip-baseline

1. Generates N submissions from reference/attention.py into OUT/subs/: half modules
   (attention.py), half notebooks (attention.ipynb, the reference split into cells);
   a mix of correct ones and simple bugs (no sqrt scaling, triu for tril, softmax over
   the wrong axis, dropout not applied, a syntax error), each with an answers.yaml.
2. Runs `grader grade OUT/subs --jobs J --out OUT/grade --quiet --force` as a
   subprocess, sampling /proc every ~50 ms: RSS and PSS summed over the whole process
   tree (peak), and CPU time per process (summed).
3. Runs the naive baseline on a subset (--baseline-n, default 40): per submission a
   fresh `python -m pytest` on copies of the hidden tests, with benchmarks/baseline/
   conftest.py importing the submission directly; J at a time. Totals are extrapolated
   to N per submission (the output says so).
4. Times `grader check` on one notebook submission (hyperfine --runs 5 if present).

Writes OUT/results.md (the Markdown table, also printed) and OUT/results.json (raw).
This script does not import torch or the grader's grading code: everything measured
runs in subprocesses.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

# ---------------------------------------------------------------- submissions

STUDENT_NAMES = ("causal_mask", "scaled_dot_product_attention", "MultiHeadSelfAttention",
                 "sdpa_attention")

# name -> list of (old, new) source edits; every edit must change the source.
VARIANTS: dict[str, list[tuple[str, str]]] = {
    "correct": [],
    "no_sqrt": [("/ math.sqrt(q.size(-1))", ""), ("/ math.sqrt(self.head_dim)", "")],
    "triu": [(".tril()", ".triu()")],
    "softmax_dim": [("torch.softmax(_masked_scores(scores, mask), dim=-1)",
                     "torch.softmax(_masked_scores(scores, mask), dim=-2)"),
                    ("torch.softmax(_masked_scores(scores, allowed), dim=-1)",
                     "torch.softmax(_masked_scores(scores, allowed), dim=-2)")],
    "no_dropout": [("weights = self.dropout(torch.softmax(_masked_scores(scores, allowed), dim=-1))",
                    "weights = torch.softmax(_masked_scores(scores, allowed), dim=-1)")],
    "syntax_error": [("def sdpa_attention(", "def sdpa_attention(:")],
}
# 10 slots: 4 correct, 1 of each bug, 1 more no_sqrt (the classic one).
VARIANT_CYCLE = ("correct", "no_sqrt", "correct", "triu", "softmax_dim", "correct",
                 "no_dropout", "no_sqrt", "correct", "syntax_error")
SUPPORT_COPY = "bench_support.py"
"""The assignment's support module, copied next to the baseline's conftest (which loads it)."""
ANSWER_FILES = ("correct_en.yaml", "correct_vi.yaml", "partial.yaml", "correct_en.yaml", "wrong.yaml")


def student_source() -> str:
    """The reference as a student would hand it in: the contract's names only."""
    text = (REPO / "reference" / "attention.py").read_text(encoding="utf-8")
    text = text.split("# --- for the hidden tests", 1)[0].rstrip() + "\n"
    text = re.sub(r"__all__ = \[.*?\]\n", "__all__ = " + repr(list(STUDENT_NAMES)) + "\n",
                  text, count=1, flags=re.DOTALL)
    return text


PLOT_IMPORTS = "import matplotlib.pyplot as plt\nimport seaborn as sns\n"
PLOT_ATTENTION = '''# 7. Visualize Attention (as in the lesson)
def plot_attention(attn_weights, tokens, head=0):
    """Plot attention heatmap cho head cụ thể"""
    fig, ax = plt.subplots(figsize=(8, 6))
    weights = attn_weights[0, head].detach().numpy()
    sns.heatmap(weights, xticklabels=tokens, yticklabels=tokens, cmap="Blues", ax=ax)
    ax.set_title(f"Attention Head {head}")
    plt.tight_layout()
    plt.show()
'''
"""What a student who follows the lesson's section 7 adds (`--plots`): the hidden tests draw
with it, so each such submission imports pyplot and seaborn and renders one heatmap."""


def with_plot(source: str) -> str:
    if "\nimport torch\n" not in source:
        raise SystemExit("bench: `import torch` not found in the reference; update with_plot")
    return source.replace("\nimport torch\n", "\n" + PLOT_IMPORTS + "import torch\n", 1) + "\n\n" + PLOT_ATTENTION


def apply_variant(source: str, variant: str) -> str:
    for old, new in VARIANTS[variant]:
        if old not in source:
            raise SystemExit(f"bench: variant {variant}: {old!r} not found in the reference; "
                             "update VARIANTS in benchmarks/bench.py")
        source = source.replace(old, new)
    return source


DEMO = """\
x = torch.randn(2, 5, 64)
mha = MultiHeadSelfAttention(embed_dim=64, num_heads=4)
output, weights = mha(x)
print(output.shape, weights.shape, output.device, output.dtype)"""


def to_notebook(source: str) -> str:
    import nbformat  # only the generator needs it; ~0.5-0.9 s to import
    from nbformat import v4

    chunks = [c.strip("\n") for c in re.split(r"\n\n\n+", source) if c.strip()]
    cells = [v4.new_markdown_cell("# Day 13: attention\n\nMy implementation of the exercises.")]
    for chunk in chunks:
        first = chunk.splitlines()[0]
        m = re.match(r"(?:def|class)\s+(\w+)", first)
        if m:
            cells.append(v4.new_markdown_cell(f"### `{m.group(1)}`"))
        cells.append(v4.new_code_cell(chunk))
    demo = v4.new_code_cell(DEMO, execution_count=len(cells))
    demo.outputs = [v4.new_output("stream", name="stdout",
                                  text="torch.Size([2, 5, 64]) torch.Size([2, 4, 5, 5]) cpu torch.float32\n")]
    cells.append(v4.new_markdown_cell("Demo run (exercise 1)."))
    cells.append(demo)
    nb = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})
    nbformat.validate(nb)
    return nbformat.writes(nb)


def generate(n: int, dest: Path, plots: float = 0.0) -> list[dict[str, Any]]:
    """N submission folders s000.. under dest; returns the manifest. A `plots` share of them
    (spread evenly) carry the lesson's `plot_attention`."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    base = student_source()
    answers_dir = REPO / "examples" / "answers"
    answer_files = [answers_dir / f for f in ANSWER_FILES if (answers_dir / f).is_file()]
    sources = {v: apply_variant(base, v) for v in VARIANTS}
    notebooks = {v: to_notebook(s) for v, s in sources.items()}
    plotting = {v: with_plot(s) for v, s in sources.items()} if plots > 0 else {}
    plotting_nb = {v: to_notebook(s) for v, s in plotting.items()}
    manifest = []
    for i in range(n):
        kind = "notebook" if i % 2 else "module"
        variant = VARIANT_CYCLE[(i // 2) % len(VARIANT_CYCLE)]
        plots_here = int((i // 2 + 1) * plots) > int(i // 2 * plots)  # modules and notebooks alike
        folder = dest / f"s{i:03d}"
        folder.mkdir()
        if kind == "module":
            text = (plotting if plots_here else sources)[variant]
            (folder / "attention.py").write_text(text, encoding="utf-8")
        else:
            text = (plotting_nb if plots_here else notebooks)[variant]
            (folder / "attention.ipynb").write_text(text, encoding="utf-8")
        answers = ""
        if answer_files:
            src = answer_files[(i // 2) % len(answer_files)]
            shutil.copyfile(src, folder / "answers.yaml")
            answers = src.name
        manifest.append({"id": folder.name, "kind": kind, "variant": variant, "plots": plots_here,
                         "answers": answers, "path": str(folder)})
    (dest.parent / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


# ---------------------------------------------------------------- /proc sampling


def _read_stat(pid: int) -> tuple[int, float, int, int, float] | None:
    """(ppid, cpu s, rss bytes, starttime, cpu s of reaped children) from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = data[data.rfind(")") + 2:].split()
    # rest[0] is field 3 (state); field N is rest[N - 3]
    ppid = int(rest[1])
    cpu = (int(rest[11]) + int(rest[12])) / CLK_TCK
    start = int(rest[19])
    rss = int(rest[21]) * PAGE
    reaped = (int(rest[13]) + int(rest[14])) / CLK_TCK
    return ppid, cpu, rss, start, reaped


def _read_pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    """Direct children of `pid`, from /proc/PID/task/TID/children (all threads)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return out


class TreeSampler:
    """Samples a process tree every `interval` s: peak summed RSS/PSS, CPU per process.

    Descendants are found by walking /proc/PID/task/*/children from the root each
    sample; a process once seen stays tracked (by pid + start time) even after it is
    reparented, until it exits. A process that lives less than one interval is missed
    (its CPU too). PSS (smaps_rollup, ~5 ms per torch process) is read only when the
    RSS sum is within 10% of its peak so far, at most every `pss_every_s` seconds.
    """

    def __init__(self, root: int, include_root: bool = True, interval: float = 0.05,
                 pss: bool = True, pss_every_s: float = 2.0) -> None:
        self.root, self.include_root, self.interval, self.pss = root, include_root, interval, pss
        self.pss_every_s = pss_every_s
        self._last_pss = 0.0
        self.known: dict[tuple[int, int], float] = {}  # (pid, start) -> last cpu seen
        self.reaped: dict[tuple[int, int], float] = {}  # (pid, start) -> cutime+cstime
        self.roles: dict[tuple[int, int], str] = {}
        self._role_of_pid: dict[int, str] = {}
        self.peak_rss = self.peak_pss = 0
        self.peak_procs = 0
        self.samples = 0
        self.pss_samples = 0
        self.sample_cost_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> TreeSampler:
        self._thread.start()
        return self

    def stop(self, linger_s: float = 0.0) -> None:
        """Stop; first keep sampling already-known processes for up to `linger_s`."""
        deadline = time.monotonic() + linger_s
        while linger_s and time.monotonic() < deadline and self._alive_known():
            time.sleep(self.interval)
        self._stop.set()
        self._thread.join()

    def _alive_known(self) -> bool:
        return any((s := _read_stat(pid)) is not None and s[3] == start
                   for pid, start in self.known)

    @property
    def cpu_s(self) -> float:
        return sum(cpu for _, (cpu, _) in self.cpu_by_role().items())

    def cpu_by_role(self) -> dict[str, tuple[float, int]]:
        """role -> (CPU seconds, processes).

        Student children live ~0.3 s and spend their last milliseconds (and the
        teardown of a large forked address space) after the last sample, so their
        sampled CPU falls short. The zygote waits for each of them, so the kernel adds
        their whole CPU (and their own children's) to the zygote's cutime+cstime:
        "student child" is that sum when zygotes were seen, not the samples.
        """
        out: dict[str, tuple[float, int]] = {}
        for key, cpu in self.known.items():
            role = self.roles.get(key, "?")
            c, n = out.get(role, (0.0, 0))
            out[role] = (c + cpu, n + 1)
        zygotes = [k for k, r in self.roles.items() if r == "zygote"]
        if zygotes and "student child" in out:
            reaped = sum(self.reaped.get(k, 0.0) for k in zygotes)
            out["student child"] = (max(reaped, out["student child"][0]), out["student child"][1])
        return out

    def _classify(self, pid: int, ppid: int) -> str:
        if pid == self.root:
            return "grader (batch parent)"
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            cmd = ""
        parent = self._role_of_pid.get(ppid, "")
        if ("grader.batch.workers" in cmd or "import workers" in cmd or "import template" in cmd
                or (parent in ("grader (batch parent)", "grading worker") and "zygote" not in cmd
                    and not cmd.startswith("bwrap"))):
            return "grading worker"  # a worker, the workers' template, or a fork of it
        if cmd.startswith("bwrap"):
            return "bwrap"
        if "zygote" in cmd:
            # the zygote runs under bwrap (or the worker); its forks keep its command line
            return "student child" if parent in ("zygote", "student child") else "zygote"
        if "pytest" in cmd:
            return "pytest (baseline)"
        return Path(cmd.split(" ", 1)[0]).name or "?"

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.thread_time()
            self.sample()
            self.sample_cost_s += time.thread_time() - t0
            self._stop.wait(self.interval)

    def sample(self) -> None:
        tree: set[int] = set()
        todo = [self.root]
        while todo:
            pid = todo.pop()
            if pid in tree:
                continue
            tree.add(pid)
            todo.extend(_children(pid))
        if not self.include_root:
            tree.discard(self.root)
        tree.update(pid for pid, _ in self.known)  # reparented (orphaned) ones too
        stats = {}
        for pid in tree:
            s = _read_stat(pid)
            if s is None:
                continue
            key = (pid, s[3])
            if pid != self.root and s[0] == 1 and key not in self.known:
                continue  # a reused pid, not ours
            stats[pid] = s
            self.known[key] = max(self.known.get(key, 0.0), s[1])
            self.reaped[key] = max(self.reaped.get(key, 0.0), s[4])
            if self.roles.get(key) in (None, "bwrap", "?"):  # bwrap execs the zygote later
                self.roles[key] = self._classify(pid, s[0])
                self._role_of_pid[pid] = self.roles[key]
        rss = sum(s[2] for s in stats.values())
        self.samples += 1
        self.peak_procs = max(self.peak_procs, len(stats))
        now = time.monotonic()
        if (self.pss and rss >= 0.9 * self.peak_rss and now - self._last_pss >= self.pss_every_s):
            self._last_pss = now
            self.pss_samples += 1
            self.peak_pss = max(self.peak_pss, sum(_read_pss(pid) for pid in stats))
        self.peak_rss = max(self.peak_rss, rss)


# ---------------------------------------------------------------- runs


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def pick_assignment(requested: Path, fallback: Path) -> tuple[Path, str]:
    """The assignment to grade with; falls back when the first cannot be loaded."""
    probe = ("import sys; from pathlib import Path; from grader import assignment as a; "
             "a.load(Path(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-c", probe, str(requested)], capture_output=True,
                          text=True, cwd=REPO, check=False)
    if done.returncode == 0:
        return requested, ""
    why = (done.stderr.strip().splitlines() or ["?"])[-1]
    if fallback.exists() and fallback != requested:
        return fallback, f"{requested} did not load ({why}); used {fallback}"
    raise SystemExit(f"bench: cannot load {requested}: {why}")


def describe_source() -> str:
    """The commit, and how many files under grader/, assignments/, reference/ differ."""
    def git(*a: str) -> str:
        done = subprocess.run(["git", *a], capture_output=True, text=True, cwd=REPO, check=False)
        return done.stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--", "grader", "assignments", "reference").splitlines()
    return f"git {head}" + (f" + {len(dirty)} uncommitted path(s)" if dirty else ", clean")


def snapshot(dest: Path, assignments: list[Path]) -> Path:
    """Copy grader/, each assignment's folder and reference/ under dest, same layout."""
    if dest.exists():
        shutil.rmtree(dest)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "grader", dest / "grader", ignore=ignore)
    folders = {a.parent for a in assignments if a.exists()} | {REPO / "reference"}
    for folder in folders:
        if folder.is_dir() and folder.is_relative_to(REPO):
            shutil.copytree(folder, dest / folder.relative_to(REPO), ignore=ignore,
                            dirs_exist_ok=True)
    return dest


def grader_cmd() -> list[str]:
    exe = shutil.which("grader")
    return [exe] if exe else [sys.executable, "-m", "grader.cli"]


def run_grade(subs: Path, out: Path, assignment: Path, jobs: int, sandbox: str,
              pss: bool, env: dict[str, str] | None = None) -> dict[str, Any]:
    if out.exists():
        shutil.rmtree(out)
    cmd = grader_cmd() + ["grade", str(subs), "--assignment", str(assignment), "--jobs", str(jobs),
                          "--out", str(out), "--quiet", "--force", "--sandbox", sandbox]
    log = out.parent / "grade.log"
    load_before = loadavg()
    with open(log, "w") as logf:
        t0, t0_epoch = time.perf_counter(), time.time()
        # Not from the repository: `python -m` puts the current folder first on the path,
        # where REPO's grader/ would shadow the tree that PYTHONPATH names (a snapshot,
        # or --compare's other tree).
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, cwd=out.parent, env=env)
        sampler = TreeSampler(proc.pid, pss=pss).start()
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        sampler.stop(linger_s=10.0)  # workers may still be shutting down
    firsts = [f.stat().st_mtime for f in out.glob("*/result.json")]
    return {"cmd": " ".join(cmd), "rc": proc.returncode, "wall_s": wall,
            "first_result_s": (min(firsts) - t0_epoch) if firsts else None,
            "tree_cpu_s": sampler.cpu_s, "cpu_by_role": sampler.cpu_by_role(),
            "rusage_cpu_s": rusage.ru_utime + rusage.ru_stime,
            "peak_rss": sampler.peak_rss, "peak_pss": sampler.peak_pss,
            "peak_procs": sampler.peak_procs, "samples": sampler.samples,
            "pss_samples": sampler.pss_samples,
            "sampler_cpu_s": sampler.sample_cost_s, "log": str(log),
            "loadavg_before": load_before, "loadavg_after": loadavg()}


def read_results(out: Path, manifest: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for m in manifest:
        path = out / m["id"] / "result.json"
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            rows.append({**m, "missing": True})
            continue
        prov = doc.get("provenance") or {}
        rows.append({**m, "wall_s": prov.get("duration_s"), "cpu_s": prov.get("cpu_s"),
                     "sandbox": prov.get("sandbox"), "score": doc.get("score"),
                     "max_score": doc.get("max_score"), "gradable": doc.get("gradable", True)})
    return rows


def baseline_tests_dir(assignment: Path, dest: Path) -> Path:
    """Copies of the hidden tests next to the baseline conftest."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    hidden = sorted((assignment.parent / "hidden").glob("test_*.py"))
    if not hidden:
        raise SystemExit(f"bench: no hidden tests under {assignment.parent / 'hidden'}")
    for f in hidden:
        shutil.copyfile(f, dest / f.name)
    support = yaml.safe_load(assignment.read_text(encoding="utf-8")).get("support")
    if support:  # the `support` fixture's module: the tests' shared helpers
        shutil.copyfile(assignment.parent / support, dest / SUPPORT_COPY)
    shutil.copyfile(REPO / "benchmarks" / "baseline" / "conftest.py", dest / "conftest.py")
    return dest


def run_baseline_one(sub: dict[str, Any], tests: Path) -> dict[str, Any]:
    folder = Path(sub["path"])
    target = folder / ("attention.ipynb" if sub["kind"] == "notebook" else "attention.py")
    env = {**os.environ, "BENCH_SUBMISSION": str(target),
           "BENCH_REPO": os.environ.get("BENCH_REPO", str(REPO)),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)]))}
    cmd = [sys.executable, "-m", "pytest", str(tests), "-q", "-p", "no:cacheprovider",
           "--rootdir", str(tests), "-c", os.devnull, "--confcutdir", str(tests),
           "--import-mode=importlib",
           "-W", "ignore::pytest.PytestAssertRewriteWarning", "--tb=no", "-rN",
           # as the grader does: these two plugins gc.collect() 5 times at exit (~0.8 s
           # with torch loaded), a pytest cost rather than a cost of the naive approach
           "-p", "no:unraisableexception", "-p", "no:threadexception"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            cwd=tests)
    assert proc.stdout is not None
    text = proc.stdout.read().decode("utf-8", "replace")
    _, status, rusage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    last = text.strip().splitlines()[-1] if text.strip() else ""
    return {**sub, "wall_s": wall, "cpu_s": rusage.ru_utime + rusage.ru_stime,
            "rc": proc.returncode, "summary": last}


def run_baseline(subs: list[dict[str, Any]], tests: Path, jobs: int, pss: bool) -> dict[str, Any]:
    load_before = loadavg()
    sampler = TreeSampler(os.getpid(), include_root=False, pss=pss).start()
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(lambda s: run_baseline_one(s, tests), subs))
    wall = time.perf_counter() - t0
    sampler.stop()
    bad = [r for r in rows if r["rc"] not in (0, 1)]
    return {"rows": rows, "wall_s": wall, "tree_cpu_s": sum(r["cpu_s"] for r in rows),
            "peak_rss": sampler.peak_rss, "peak_pss": sampler.peak_pss,
            "peak_procs": sampler.peak_procs, "errors": [(r["id"], r["rc"], r["summary"]) for r in bad],
            "loadavg_before": load_before, "loadavg_after": loadavg()}


def time_check(sub: dict[str, Any], assignment: Path, dev_assignment: Path, sandbox: str,
               out: Path, runs: int = 5) -> dict[str, Any]:
    """`grader check` on one notebook submission, end to end."""
    folder = out / "check" / "student"
    if folder.parent.exists():
        shutil.rmtree(folder.parent)
    shutil.copytree(sub["path"], folder)
    result: dict[str, Any] = {"submission": sub["id"]}

    def cmd_for(a: Path) -> list[str]:
        return grader_cmd() + ["check", str(folder), "--assignment", str(a), "--sandbox", sandbox]

    chosen = None
    for a in dict.fromkeys([assignment, dev_assignment]):
        probe = subprocess.run(cmd_for(a), capture_output=True, text=True, cwd=out, check=False)
        if probe.returncode in (0, 1):
            chosen = a
            break
        result.setdefault("problems", []).append(
            f"{a.name}: rc {probe.returncode}: {(probe.stderr or probe.stdout).strip()[-300:]}")
    if chosen is None:
        return result
    public = any((chosen.parent / "public").glob("test_*.py"))
    result["assignment"] = str(chosen)
    result["public_tests"] = public
    cmd = cmd_for(chosen)
    result["cmd"] = " ".join(cmd)
    times: list[float] = []
    if shutil.which("hyperfine"):
        export = out / "check" / "hyperfine.json"
        line = " ".join(_shq(c) for c in cmd)
        done = subprocess.run(["hyperfine", "--runs", str(runs), "--warmup", "1", "-i", "-N",
                               "--export-json", str(export), line],
                              capture_output=True, text=True, cwd=out, check=False)
        if done.returncode == 0:
            times = json.loads(export.read_text())["results"][0]["times"]
            result["tool"] = "hyperfine"
    if not times:
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, capture_output=True, cwd=out, check=False)
            times.append(time.perf_counter() - t0)
        result["tool"] = "subprocess"
    result["times_s"] = times
    result["median_s"] = statistics.median(times)
    return result


def _shq(s: str) -> str:
    return s if re.fullmatch(r"[\w./=:+-]+", s) else "'" + s.replace("'", "'\\''") + "'"


# ---------------------------------------------------------------- report


def pct(values: list[float], q: float) -> float:
    vals = sorted(values)
    if not vals:
        return float("nan")
    k = (len(vals) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (k - lo)


def med_p95(values: list[float]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    return f"{statistics.median(values):.3f} / {pct(values, 0.95):.3f}"


def gib(b: int) -> str:
    return f"{b / 2**30:.2f} GiB"


def machine() -> dict[str, str]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    torch_v, import_s = torch_import_floor()
    bw = shutil.which("bwrap")
    bw_v = (subprocess.run([bw, "--version"], capture_output=True, text=True, check=False).stdout.strip()
            if bw else "no bubblewrap")
    return {"nproc": str(os.cpu_count()), "cpu": cpu, "ram": mem,
            "python": platform.python_version(), "torch": torch_v, "bwrap": bw_v,
            "kernel": platform.release(), "torch_import_s": f"{import_s:.2f}"}


def torch_import_floor(runs: int = 3) -> tuple[str, float]:
    """torch's version and the median wall of `import torch` in a fresh interpreter: the floor
    under start-up and `grader check`, which cannot show a result before one such import."""
    walls, version = [], "?"
    for _ in range(runs):
        t0 = time.perf_counter()
        version = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                 capture_output=True, text=True, check=False).stdout.strip() or "?"
        walls.append(time.perf_counter() - t0)
    return version, statistics.median(walls)


def render(info: dict[str, Any]) -> str:
    g, rows, mach = info["grade"], info["rows"], info["machine"]
    n = len(rows)
    ok_rows = [r for r in rows if not r.get("missing")]
    mods = [r["wall_s"] for r in ok_rows if r["kind"] == "module"]
    nbs = [r["wall_s"] for r in ok_rows if r["kind"] == "notebook"]
    have_cpu = any(r.get("cpu_s") is not None for r in ok_rows)
    lines = [
        f"# grader benchmark ({info['when']})",
        "",
        (f"Machine: {mach['nproc']} CPUs ({mach['cpu']}), {mach['ram']} RAM, Python {mach['python']}, "
         f"torch {mach['torch']} (`import torch` alone: {mach.get('torch_import_s', '?')} s wall, median of 3), "
         f"{mach['bwrap']}, kernel {mach['kernel']}."),
        f"Command: `{info['command']}`; grade run: `{g['cmd'].split(' grade ', 1)[-1]}`.",
        f"Assignment: `{info['assignment']}`" + (f" ({info['assignment_note']})" if info['assignment_note'] else ""),
        (f"N = {n} submissions ({len(mods)} modules, {len(nbs)} notebooks graded); --jobs {info['jobs']}; "
         f"sandbox used: {', '.join(sorted({str(r.get('sandbox')) for r in ok_rows})) or '?'}."),
        (f"Load average before/after the grade run: {g['loadavg_before']} / {g['loadavg_after']} "
         "(other work on the machine inflates wall times)"
         + (f"; run at nice {info['nice']:+d}." if info.get("nice") else ".")),
        "",
    ]
    b = info.get("baseline")
    head = "| figure | grader | naive baseline |"
    lines += [head, "|---|---|---|"]

    def brow(label: str, gval: str, bval: str = "") -> None:
        lines.append(f"| {label} | {gval} | {bval} |")

    bn = len(b["rows"]) if b else 0
    if b:
        bmods = [r["wall_s"] for r in b["rows"] if r["kind"] == "module"]
        bnbs = [r["wall_s"] for r in b["rows"] if r["kind"] == "notebook"]
        bcm = [r["cpu_s"] for r in b["rows"] if r["kind"] == "module"]
        bcn = [r["cpu_s"] for r in b["rows"] if r["kind"] == "notebook"]
        b_total_n = b["wall_s"] * n / bn
        b_cpu_n = b["tree_cpu_s"] * n / bn
    cpu_note = "n/a (result.json has no CPU time; see provenance.cpu_s proposal)"
    brow("per-submission wall, all (median / p95, s)",
         med_p95(mods + nbs), med_p95(bmods + bnbs) if b else "skipped")
    brow("per-submission wall, modules (median / p95, s)", med_p95(mods), med_p95(bmods) if b else "")
    brow("per-submission wall, notebooks (median / p95, s)", med_p95(nbs), med_p95(bnbs) if b else "")
    if have_cpu:
        gcm = [r["cpu_s"] for r in ok_rows if r["kind"] == "module"]
        gcn = [r["cpu_s"] for r in ok_rows if r["kind"] == "notebook"]
        brow("per-submission CPU, modules (median / p95, s)", med_p95(gcm), med_p95(bcm) if b else "")
        brow("per-submission CPU, notebooks (median / p95, s)", med_p95(gcn), med_p95(bcn) if b else "")
    else:
        brow("per-submission CPU, modules (median / p95, s)", cpu_note, med_p95(bcm) if b else "")
        brow("per-submission CPU, notebooks (median / p95, s)", cpu_note, med_p95(bcn) if b else "")
    brow("CPU per submission, amortized (whole tree CPU / N, s)", f"{g['tree_cpu_s'] / n:.3f}",
         f"{b['tree_cpu_s'] / bn:.3f}" if b else "")
    brow(f"total wall for N={n} (s)", f"{g['wall_s']:.1f}",
         (f"{b_total_n:.1f} (extrapolated from {bn}: {b['wall_s']:.1f} s)" if bn != n
          else f"{b['wall_s']:.1f}") if b else "")
    brow(f"total CPU, whole process tree, N={n} (s)", f"{g['tree_cpu_s']:.1f}",
         (f"{b_cpu_n:.1f} (extrapolated)" if bn != n else f"{b_cpu_n:.1f}") if b else "")
    cores = int(mach["nproc"])
    brow(f"idle-machine estimate: tree CPU / {cores} cores, N={n} (s)", f"{g['tree_cpu_s'] / cores:.1f}",
         f"{b_cpu_n / cores:.1f}" if b else "")
    brow("peak memory, process tree, sum of RSS", gib(g["peak_rss"]), gib(b["peak_rss"]) if b else "")
    brow("peak memory, process tree, sum of PSS", gib(g["peak_pss"]) if g["peak_pss"] else "n/a",
         (gib(b["peak_pss"]) if b["peak_pss"] else "n/a") if b else "")
    brow("peak processes in the tree", str(g["peak_procs"]), str(b["peak_procs"]) if b else "")
    lines.append("")
    lines.append("Per-submission wall for the grader is `provenance.duration_s` (grade_submission "
                 "only: not report writing, not worker/sandbox start-up, not queueing); for the "
                 "baseline it is the whole `python -m pytest` process. RSS sums double-count pages "
                 "that forked children share with their zygote; PSS splits them fairly.")
    lines.append("")
    roles = g.get("cpu_by_role") or {}
    if roles:
        lines += ["CPU of the grade run by process role (from /proc samples):", "",
                  "| role | processes | CPU (s) | CPU per submission (s) |", "|---|---|---|---|"]
        for role, (cpu, procs) in sorted(roles.items(), key=lambda kv: -kv[1][0]):
            lines.append(f"| {role} | {procs} | {cpu:.1f} | {cpu / n:.3f} |")
        lines.append("")
    ck = info.get("check")
    lines.append("## Targets")
    lines.append("")
    lines.append("| target | measured | met |")
    lines.append("|---|---|---|")

    def trow(label: str, value: str, ok: bool | None) -> None:
        lines.append(f"| {label} | {value} | {'yes' if ok else ('no' if ok is not None else '?')} |")

    # Issue 12's targets (speed-up at N=60 and N=200, core-s per submission, start-up, check)
    if b:
        speed = b_total_n / g["wall_s"]
        sane = b.get("sane", True)
        trow(">= 15x faster than the naive baseline (total wall)",
             f"{speed:.1f}x" + (" (baseline extrapolated)" if bn != n else "")
             + ("" if sane else " (the baseline is broken: see the notes)"), speed >= 15 if sane else None)
    else:
        trow(">= 15x faster than the naive baseline", "baseline skipped", None)
    per_sub = g["tree_cpu_s"] / n
    trow("<= 0.15 core-s per submission (whole tree CPU / N)", f"{per_sub:.3f}", per_sub <= 0.15)
    floor = float(mach.get("torch_import_s", "nan"))
    above = f"; one `import torch` here: {floor:.2f} s" if floor == floor else ""
    first = g.get("first_result_s")
    trow("start-up <= 1.5 s (first result.json after start)",
         (f"{first:.2f} s{above}" if first is not None else "n/a"), first <= 1.5 if first is not None else None)
    if mods and nbs:
        ratio = statistics.median(nbs) / statistics.median(mods)
        trow("notebook <= 1.5x module cost (median duration_s)", f"{ratio:.2f}x", ratio <= 1.5)
    mem = g["peak_pss"] or g["peak_rss"]
    trow("peak memory < 3 GiB (PSS of the tree; RSS sum in the table)", gib(mem), mem < 3 * 2**30)
    if ck and ck.get("median_s") is not None:
        note = "" if ck.get("public_tests") else " (no public tests exist yet: start-up and answers only)"
        trow("`grader check` on one notebook < 1.5 s", f"{ck['median_s']:.2f} s median of "
             f"{len(ck['times_s'])} ({ck['tool']}){above}{note}", ck["median_s"] < 1.5 and ck.get("public_tests"))
    elif ck:
        trow("`grader check` on one notebook < 1.5 s", "could not run: " + "; ".join(ck.get("problems", [])), None)
    lines.append("")
    if b and b["errors"]:
        lines.append(f"Baseline runs with pytest errors (rc not 0/1): {b['errors'][:5]}")
        lines.append("")
    if info["notes"]:
        lines.append("Notes:")
        lines += [f"- {x}" for x in info["notes"]]
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- side by side


def run_pairs(subs: Path, out: Path, assignment: Path, jobs: int, sandbox: str,
              trees: dict[str, Path], pairs: int, n: int) -> dict[str, Any]:
    """Grade the same submissions with each grader tree (a folder holding `grader/`),
    `pairs` times, alternating the order (ABBA...), so both see the same machine load.
    A tree that also holds the assignment's folder at the same place (`git archive HEAD
    grader assignments reference`) grades with its own copy, so a change to the tests or
    their support module is measured too; otherwise with `assignment`.
    Per run: tree CPU / N, CPU / N by role, wall, and the time to the first result.json
    (start-up plus one submission)."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    names = list(trees)
    own = {name: _own_assignment(assignment, trees[names[0]], root) for name, root in trees.items()}
    for name, path in own.items():
        print(f"[bench] {name} grades with {path}", file=sys.stderr)
    for i in range(pairs):
        for name in (names if i % 2 == 0 else names[::-1]):
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                filter(None, [str(trees[name]), os.environ.get("PYTHONPATH")]))
            print(f"[bench] pair {i + 1}/{pairs}: {name} ...", file=sys.stderr)
            g = run_grade(subs, out / f"grade-{names.index(name)}", own[name], jobs, sandbox,
                          pss=False, env=env)
            roles = {role: cpu / n for role, (cpu, _) in (g["cpu_by_role"] or {}).items()}
            runs[name].append({"rc": g["rc"], "wall_s": g["wall_s"], "cpu_per_sub": g["tree_cpu_s"] / n,
                               "first_result_s": g["first_result_s"], "roles": roles,
                               "load": g["loadavg_before"]})
            print(f"[bench]   {name}: {g['wall_s']:.1f} s wall, {g['tree_cpu_s'] / n:.3f} core-s/sub, "
                  f"first result {g['first_result_s'] or 0:.2f} s, load {g['loadavg_before']}",
                  file=sys.stderr)
    return runs


def _own_assignment(assignment: Path, first_root: Path, root: Path) -> Path:
    """`assignment` as `root` holds it, at its place under `first_root`; else `assignment`."""
    try:
        mine = root / assignment.resolve().relative_to(first_root.resolve())
    except ValueError:
        return assignment
    return mine if mine.is_file() else assignment


def render_pairs(runs: dict[str, list[dict[str, Any]]], n: int, baseline_wall_n: float | None) -> str:
    names = list(runs)
    med = statistics.median

    def cell(name: str, key: str, fmt: str) -> str:
        vals = [r[key] for r in runs[name] if r[key] is not None]
        if not vals:
            return "n/a"
        return f"**{med(vals):{fmt}}** (" + " / ".join(f"{v:{fmt}}" for v in vals) + ")"

    lines = [f"Side by side, N={n}, {len(runs[names[0]])} runs each, alternating order "
             "(median, then each run):", "",
             "| figure | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    lines.append("| CPU per submission, whole tree / N (core-s) | "
                 + " | ".join(cell(x, "cpu_per_sub", ".3f") for x in names) + " |")
    lines.append("| total wall (s) | " + " | ".join(cell(x, "wall_s", ".1f") for x in names) + " |")
    lines.append("| first result.json after start (s) | "
                 + " | ".join(cell(x, "first_result_s", ".2f") for x in names) + " |")
    roles = sorted({role for x in names for r in runs[x] for role in r["roles"]})
    for role in roles:
        lines.append(f"| {role}, CPU / N (core-s) | " + " | ".join(
            f"{med(r['roles'].get(role, 0.0) for r in runs[x]):.3f}" for x in names) + " |")
    if baseline_wall_n:
        lines.append(f"| speed-up vs naive baseline ({baseline_wall_n:.1f} s for N={n}), median wall | "
                     + " | ".join(f"{baseline_wall_n / med(r['wall_s'] for r in runs[x]):.1f}x"
                                  for x in names) + " |")
    lines.append("| load average before each run | "
                 + " | ".join(", ".join(r["load"].split()[0] for r in runs[x]) for x in names) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=200, help="submissions to generate (half notebooks)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out")
    p.add_argument("--sandbox", choices=["auto", "bwrap", "process"], default="auto")
    p.add_argument("--assignment", type=Path, default=REPO / "assignments/attention/assignment.yaml")
    p.add_argument("--fallback-assignment", type=Path,
                   default=REPO / "assignments/attention/dev-assignment.yaml")
    p.add_argument("--skip-baseline", action="store_true")
    p.add_argument("--baseline-n", type=int, default=40,
                   help="baseline subset size (extrapolated to N per submission); 0 = all N")
    p.add_argument("--skip-check", action="store_true", help="do not time `grader check`")
    p.add_argument("--no-pss", action="store_true", help="sample RSS only (cheaper)")
    p.add_argument("--no-snapshot", action="store_true",
                   help="grade with the live working tree instead of a copy of grader/, the "
                        "assignment folder and reference/ taken at start (the copy keeps a "
                        "run consistent while others edit those files)")
    p.add_argument("--nice", type=int, default=0,
                   help="os.nice() increment for this process and everything it runs "
                        "(negative needs root: approximates an idle machine on a busy one)")
    p.add_argument("--compare", type=Path, default=None, metavar="DIR",
                   help="also grade with the grader package in DIR (DIR/grader/, e.g. a copy "
                        "taken before a change), side by side: --pairs runs each, alternating")
    p.add_argument("--pairs", type=int, default=3, help="runs of each tree with --compare")
    p.add_argument("--plots", type=float, default=0.0, metavar="SHARE",
                   help="share of submissions (0-1) that carry the lesson's plot_attention, "
                        "whose hidden test draws a seaborn heatmap with it")
    args = p.parse_args(argv)
    if args.nice:
        os.nice(args.nice)

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    requested, fallback = args.assignment.resolve(), args.fallback_assignment.resolve()
    source = describe_source()
    if not args.no_snapshot:
        snap = snapshot(out / "snapshot", [requested, fallback])
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(snap), os.environ.get("PYTHONPATH")]))
        os.environ["BENCH_REPO"] = str(snap)
        requested, fallback = (snap / requested.relative_to(REPO), snap / fallback.relative_to(REPO))
        notes.append(f"Graded with a copy of grader/, the assignment folder and reference/ taken "
                     f"at start ({source}), in {snap}.")
    else:
        notes.append(f"Graded with the live working tree ({source}).")
    assignment, a_note = pick_assignment(requested, fallback)
    print(f"[bench] assignment {assignment}" + (f" -- {a_note}" if a_note else ""), file=sys.stderr)

    t0 = time.perf_counter()
    manifest = generate(args.n, out / "subs", args.plots)
    print(f"[bench] generated {len(manifest)} submissions in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    if args.plots > 0:
        notes.append(f"{sum(m['plots'] for m in manifest)} of {len(manifest)} submissions carry the "
                     "lesson's plot_attention (`--plots`).")

    print(f"[bench] grading with --jobs {args.jobs} ...", file=sys.stderr)
    grade = run_grade(out / "subs", out / "grade", assignment, args.jobs, args.sandbox,
                      pss=not args.no_pss)
    rows = read_results(out / "grade", manifest)
    missing = [r["id"] for r in rows if r.get("missing")]
    print(f"[bench] grade: rc {grade['rc']}, {grade['wall_s']:.1f} s wall", file=sys.stderr)
    if grade["rc"] != 0 or missing:
        notes.append(f"grader exit code {grade['rc']}; {len(missing)} result.json missing "
                     f"(see {grade['log']})")
    if not any(r.get("cpu_s") is not None for r in rows if not r.get("missing")):
        notes.append("result.json carries no per-submission CPU time. Proposal: "
                     "`provenance.cpu_s` = the worker's time.process_time() delta over "
                     "grade_submission + the CPU of the sandbox children it used (the zygote "
                     "can return ru_utime+ru_stime from os.wait4 in its `kill` reply).")
    notes.append(f"Sampler: {grade['samples']} samples of /proc ({grade['pss_samples']} with PSS), "
                 f"{grade['sampler_cpu_s']:.2f} s of the benchmark's own CPU (not counted in the "
                 "tree). Tree CPU = per-process "
                 "utime+stime, last value seen, except student children: their exact CPU is "
                 "the zygotes' cutime+cstime (they are reaped there); other processes shorter "
                 "than 50 ms are missed. "
                 f"wait4 rusage of the grader command alone: {grade['rusage_cpu_s']:.1f} s "
                 "(misses workers and sandboxes that are never reaped by their parent).")
    by_variant: dict[str, list[float]] = {}
    for r in rows:
        if not r.get("missing") and r.get("score") is not None:
            by_variant.setdefault(f"{r['variant']}", []).append(r["score"])
    notes.append("Scores by variant (min-max of 100, answers vary): " + ", ".join(
        f"{v} {min(x):.4g}-{max(x):.4g}" for v, x in by_variant.items()))

    baseline = None
    if not args.skip_baseline:
        bn = args.n if args.baseline_n <= 0 else min(args.baseline_n, args.n)
        subset = manifest[:bn]  # alternates module/notebook; variants cycle
        tests = baseline_tests_dir(assignment, out / "baseline_tests")
        print(f"[bench] naive baseline on {bn} submissions, {args.jobs} at a time ...", file=sys.stderr)
        baseline = run_baseline(subset, tests, args.jobs, pss=not args.no_pss)
        print(f"[bench] baseline: {baseline['wall_s']:.1f} s wall", file=sys.stderr)
        if bn != args.n:
            notes.append(f"Baseline ran on the first {bn} of {args.n} submissions "
                         f"({sum(r['kind'] == 'notebook' for r in subset)} notebooks); its N totals "
                         f"are extrapolated linearly (x{args.n / bn:g}).")
        # does the baseline agree with the grader on pass/fail?
        variant = {r["id"]: r.get("variant") for r in rows}
        wrong = [r for r in baseline["rows"] if (r["rc"] == 0) != (variant.get(r["id"]) == "correct")]
        notes.append(f"Baseline sanity: {bn - len(wrong)}/{bn} runs exit 0 exactly for the correct variants.")
        baseline["sane"] = not wrong
        if wrong:  # e.g. a fixture the baseline's conftest lacks: its tests error, it runs less
            notes.append("THE BASELINE IS BROKEN, so the speed-up is not a measurement: "
                         + "; ".join(f"{r['id']} ({variant.get(r['id'])}): {r['summary']}" for r in wrong[:3]))

    check = None
    if not args.skip_check:
        nb = next(m for m in manifest if m["kind"] == "notebook" and m["variant"] == "correct")
        print("[bench] timing `grader check` on one notebook ...", file=sys.stderr)
        check = time_check(nb, assignment if not a_note else requested, fallback,
                           args.sandbox, out)
        for prob in check.get("problems", []):
            notes.append(f"`grader check`: {prob}")

    pairs_md = ""
    if args.compare is not None:
        trees = {"this tree": out / "snapshot" if not args.no_snapshot else REPO,
                 f"--compare {args.compare}": args.compare.resolve()}
        runs = run_pairs(out / "subs", out, assignment, args.jobs, args.sandbox, trees,
                         args.pairs, args.n)
        b_wall_n = (baseline["wall_s"] * args.n / len(baseline["rows"])) if baseline else None
        pairs_md = render_pairs(runs, args.n, b_wall_n)
        notes.append("The side-by-side runs sample RSS only (no PSS), so the sampler costs less "
                     "than in the single run above.")

    command = "python benchmarks/bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
    info = {"when": dt.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
            "command": command.strip(),
            "assignment": str(assignment.relative_to(out / "snapshot")) if not args.no_snapshot
            else str(assignment),
            "assignment_note": a_note, "jobs": args.jobs, "nice": args.nice, "grade": grade, "rows": rows,
            "baseline": baseline, "check": check, "notes": notes}
    md = render(info) + ("\n" + pairs_md + "\n" if pairs_md else "")
    (out / "results.md").write_text(md + "\n", encoding="utf-8")
    (out / "results.json").write_text(json.dumps(info, indent=1, default=str), encoding="utf-8")
    print(md)
    return 0 if grade["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
