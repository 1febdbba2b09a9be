"""A warm process that imports torch once and forks a fresh child per submission.

Started by `sandbox` (inside bubblewrap, or as a plain process). It stays
single-threaded and computes nothing with torch (its warm-up ops run on the meta device:
no thread, no random draw), so forking is safe and cheap (~10 ms instead of ~1.3 s for a
fresh interpreter). The zygote itself never runs student code.

Each child, before any student code runs (`grader.sandbox.inside.spawn`):

1. closes every file descriptor but its protocol socket and its output socket (the
   zygote's control socket above all: a child holding it could steal or forge the
   zygote's frames and disturb the next student);
2. enters new namespaces and drops to an unprivileged user, in one of these ways:

   - `root-private`: the zygote is real root (process mode as root). The child
     unshares mount, pid, net, ipc and uts namespaces, becomes pid 1 of the new pid
     namespace, builds a private root on a size-capped tmpfs (read-only binds of the
     system libraries and the Python runtime, a minimal /dev, a fresh /proc, a private
     workdir; nothing else: not the repository, not the assignment, not reports/, not
     $HOME), moves it to / and chroots into it, then setuid()s to a uid of its own.
   - `setuid-userns`: the zygote is root with only CAP_SETUID/SETGID/KILL (bubblewrap
     as root) or a root that cannot mount. The child setuid()s to a uid of its own,
     then unshares user, pid, net, ipc and uts namespaces (uid 65534 inside).
   - `userns`: the zygote is not root (a laptop, unprivileged bubblewrap): the child
     unshares user, pid, net, ipc and uts namespaces (uid 65534 inside).
   - `none`: no namespaces (macOS, or a kernel that refuses): rlimits only.

   A uid of its own (random in [UID_MIN, UID_MAX)) makes RLIMIT_NPROC count only this
   child's processes (the kernel does not enforce RLIMIT_NPROC for uid 0 at all, even
   inside a user namespace: measured), and lets the zygote kill every process the
   child left behind with kill(-1) from that uid, even without a pid namespace;
3. sets no_new_privs, drops every capability, applies rlimits (address space, CPU
   seconds, processes, file size, no core dumps);
4. sends one `{"isolation": {...}}` frame describing what it actually got, then serves
   `child.run` on its protocol socket, always fd 3 (stdin is /dev/null; stdout and
   stderr go to the output socket).

Control protocol on each inherited Unix socket (`protocol`, framed by `frames`; one
socket per grading worker when a batch shares this zygote): first a `Hello` (with
`WIRE_VERSION`; with an `error` and an exit when the config's version is not ours), then
    `Fork` + 2 fds (protocol, output) -> `Forked`
    `Kill`                            -> `Killed` (a connection kills only its own children)
    `Warm`                            -> `Warmed` (then import the config's plotting
                                         libraries: a submission that plots was seen)
    anything else                     -> `ControlError`
"""

from __future__ import annotations

import bdb  # noqa: F401 (see IPython.core.logger below)
import gc
import json
import math
import os
import random
import resource
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

# IPython.core.logger and bdb: what IPython imports on a notebook's first cell
# (`run_cell` -> `shell.logger`, `run_code` -> `import bdb`); imported here, not again
# in every notebook's child.
import IPython.core.interactiveshell
import IPython.core.logger  # noqa: F401
import torch  # imported once here so every child starts warm

from grader.sandbox import protocol, wire
from grader.sandbox.inside import child, plotting, reaper
from grader.sandbox.inside.isolation import LINUX, PR_SET_CHILD_SUBREAPER, prctl
from grader.sandbox.inside.spawn import fork_child
from grader.sandbox.protocol import ZygoteConfig


def _prewarm() -> None:
    """What torch imports lazily on the first meta-device op (~1 s): paid once here
    instead of once per student. `grader check` skips it: its public tests do not use
    the meta device, and a student waits for start-up once."""
    import sympy  # noqa: F401
    import torch._decomp
    import torch._dynamo
    import torch._refs
    import torch._subclasses.fake_tensor  # noqa: F401

    _attend_on_meta()


def _attend_on_meta() -> None:
    """Run attention's usual ops once on the meta device: each op finds its meta kernel
    and caches it on first use (4-10 ms of CPU a child otherwise: `benchmarks/prewarm_probe.py`).
    Meta ops compute nothing, start no thread and draw no random number, so forking stays safe
    (held by a test in tests/test_sandbox.py)."""
    import torch.nn.functional as F

    x = torch.empty(2, 5, 16, device="meta")
    pad = torch.ones(2, 5, dtype=torch.bool, device="meta").to(x.device)
    torch.empty(4, 4).to("meta")  # a module moved to meta (allocated on the CPU, not filled)
    qkv = torch.nn.Linear(16, 48, device="meta")(x)
    _ = qkv.chunk(3, dim=-1), qkv.split(16, dim=-1)  # the other ways to cut q, k and v
    q, k, v = qkv.view(2, 5, 3, 2, 8).permute(2, 0, 3, 1, 4).unbind(0)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(8)
    causal = torch.tril(torch.ones(5, 5, device="meta")) == 0
    scores = torch.where(causal | ~pad[:, None, None, :], float("-inf"), scores)
    allowed = pad.unsqueeze(1).unsqueeze(2) & torch.ones(5, 5, dtype=torch.bool, device="meta").triu()
    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    weights = torch.nn.Dropout(0.1)(F.softmax(scores, dim=-1))
    out = (weights @ v).transpose(1, 2).contiguous().reshape(2, 5, 16)
    torch.nn.Linear(16, 16, device="meta")(out.view(2, 5, 16))
    F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=0.1)
    F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.einsum("bhqd,bhkd->bhqk", q, k).softmax(-1)


def _prebuild_shell() -> None:
    """Build IPython's shell once (~35 ms per notebook otherwise): each forked child
    gets its own pristine copy of it, with an empty namespace."""
    child.make_shell()


UID_MIN = 1_900_000_000
UID_MAX = 2_000_000_000


Children = dict[int, tuple[str, int | None, int | None]]
"""A connection's children: pid -> (workdir, uid, pid-1 process of its namespace)."""


@dataclass
class Connection:
    """One grading worker's connection: its children, and the folder their workdirs are
    made in (under bubblewrap, a tmpfs of its own: a student filling it disturbs only
    that worker's next child, which finds it emptied, never another worker's)."""

    tmp_root: str
    children: Children = field(default_factory=dict)


def _tmp_root(cfg: ZygoteConfig, n: int, strategy: str) -> str:
    root = tempfile.mkdtemp(prefix="grader-children-",
                            dir=cfg.tmp_dirs[n] if n < len(cfg.tmp_dirs) else None)
    # Children that become their own uid before creating their workdir need to write
    # here; sticky and not listable, so none can see or remove another's.
    os.chmod(root, 0o1733 if strategy in ("setuid-userns",) else 0o711)
    return root


def main(control_fds: int | str, config: dict[str, Any] | None = None) -> None:
    """Serve forks on each control socket (`control_fds`: one fd, or several as "5,6,7":
    a zygote shared by a batch's workers) until every one is closed."""
    cfg = ZygoteConfig.from_doc(config or {})
    controls = [socket.socket(fileno=int(fd)) for fd in str(control_fds).split(",")]
    try:
        protocol.check_version(cfg.version, "its sandbox's config")
    except protocol.VersionMismatch as exc:  # say so in the hello, then leave
        for control in controls:
            _reply(control, protocol.Hello(os.getpid(), "none", error=str(exc)).to_doc())
        os._exit(2)
    if cfg.prewarm:
        _prewarm()
        _prebuild_shell()
    # Started with the collector off (`launch._BOOT`): what is loaded now lives as long
    # as the zygote, so it leaves the collector's generations for good; every child
    # starts with an enabled collector that only tracks its own objects.
    gc.freeze()
    gc.enable()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # What a child leaves behind when it is killed (the pid-1 process of its namespace,
    # orphans) is re-parented here and reaped, instead of piling up as zombies under an
    # init that may never reap them (a container's).
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    strategy = _strategy(cfg)
    hello = protocol.Hello(os.getpid(), strategy).to_doc()
    # A connection whose hello cannot be sent was closed before this was ready: nobody to serve.
    served: dict[socket.socket, Connection] = {}
    for n, control in enumerate(controls):
        if _reply(control, hello):
            served[control] = Connection(_tmp_root(cfg, n, strategy))
        else:
            control.close()
    ready = selectors.DefaultSelector()
    for control in served:
        ready.register(control, selectors.EVENT_READ, control)
    warm = plotting.WarmUp(cfg.warm_imports)
    while served:
        for key, _events in ready.select():
            control = key.data
            if not _serve_one(control, served, strategy, cfg, warm):
                ready.unregister(control)
                done = served.pop(control)
                _kill_all(done.children)
                shutil.rmtree(done.tmp_root, ignore_errors=True)
                control.close()
        if warm.due:  # asked, and answered: the asking worker goes on grading meanwhile
            warm.run()
    reaper.stop()
    _reap_orphans({}, wait_s=1.0)
    # Skip the interpreter's teardown of torch (seconds): nothing is left to flush.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _serve_one(control: socket.socket, served: dict[socket.socket, Connection], strategy: str,
               cfg: ZygoteConfig, warm: plotting.WarmUp) -> bool:
    """Answer one request on `control`; False when that connection is done (closed, or
    its sandbox gone). A connection forks, and kills, only children of its own."""
    children, tmp_root = served[control].children, served[control].tmp_root
    try:
        msg, fds, _flags, _addr = socket.recv_fds(control, 1 << 16, 2)
    except (EOFError, ConnectionError):
        return False
    if not msg:
        return False
    request = _parse(msg)
    _reap_orphans(_all_children(served))
    if isinstance(request, protocol.Fork) and len(fds) == 2:
        workdir = os.path.join(tmp_root, "s-" + os.urandom(6).hex())
        uid = _fresh_uid() if strategy in ("root-private", "setuid-userns") else None
        pid, inner = fork_child(fds[0], fds[1], request.limits, workdir, uid, strategy, cfg)
        children[pid] = (workdir, uid, inner)
        for fd in fds:
            os.close(fd)
        return _reply(control, protocol.Forked(pid).to_doc())
    if isinstance(request, protocol.Warm):
        for fd in fds:
            os.close(fd)
        pending = bool(warm.modules) and not warm.done
        warm.asked = True
        return _reply(control, protocol.Warmed(pending).to_doc())
    if isinstance(request, protocol.Kill):
        cpu_before = _children_cpu()
        status = _kill_one(request.pid, children.pop(request.pid)) if request.pid in children else 0
        _reap_orphans(_all_children(served))
        return _reply(control, protocol.Killed(status, round(_children_cpu() - cpu_before, 4)).to_doc())
    for fd in fds:
        os.close(fd)
    return _reply(control, protocol.ControlError("bad request").to_doc())


def _all_children(served: dict[socket.socket, Connection]) -> Children:
    return {pid: v for c in served.values() for pid, v in c.children.items()}


def _kill_one(pid: int, child: tuple[str, int | None, int | None]) -> int:
    """Kill one child with all it started and remove its workdir; its exit status."""
    workdir, uid, inner = child
    status = _kill(pid, _exited.pop(pid, None), inner)
    if uid is not None:
        reaper.reap(uid, workdir)
    if workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return status


def _kill_all(children: Children) -> None:
    for pid, what in children.items():
        _kill_one(pid, what)


def _reply(control: socket.socket, doc: dict[str, Any]) -> bool:
    """Answer the sandbox; False when it is gone (stopped, or its process died): then
    this zygote cleans up and exits, without a traceback on the grader's stderr."""
    try:
        wire.send_frame(control, doc)
    except OSError:
        return False
    return True


def _parse(msg: bytes) -> protocol.Fork | protocol.Kill | protocol.Warm | None:
    """The sandbox's request, or None for anything that is not one."""
    try:
        doc = json.loads(msg[4:].decode("utf-8"))
        return protocol.control_request_from_doc(doc if isinstance(doc, dict) else {})
    except (UnicodeDecodeError, ValueError, protocol.WireError):
        return None


def _strategy(cfg: ZygoteConfig) -> str:
    """How children will be isolated, from what this zygote is allowed to do."""
    if not LINUX:
        return "none"
    if os.geteuid() == 0:
        if cfg.private_root and _has_cap(21):  # CAP_SYS_ADMIN
            return "root-private"
        if _has_cap(6) and _has_cap(7):  # CAP_SETGID, CAP_SETUID
            return "setuid-userns"
    return "userns"


def _has_cap(bit: int) -> bool:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> bit & 1)
    except OSError:
        pass
    return False


def _fresh_uid() -> int:
    return random.SystemRandom().randrange(UID_MIN, UID_MAX)


# ---------------------------------------------------------------- killing


_exited: dict[int, int] = {}
"""Exit statuses of our children that `_reap_orphans` collected before their `kill`."""


def _reap_orphans(children: dict[int, Any], wait_s: float = 0.0) -> None:
    """Collect exited children and orphans; with `wait_s`, wait that long for an orphan
    (a killed child's pid-1 process, which may still be dying)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid in children:
            _exited[pid] = status
        elif pid:
            if wait_s:
                return  # the orphan we were waiting for
            continue
        if pid == 0:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.002)


def _children_cpu() -> float:
    """CPU seconds of every child reaped so far: the delta around one child's reaping is
    that child's cost (best effort: a child reaped earlier by `_reap_orphans` is missed)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _kill(pid: int, status: int | None = None, inner: int | None = None) -> int:
    """Kill a child with everything it started; its exit status, as a shell gives it.

    `inner` is the pid-1 process of the child's pid namespace (the one running student
    code), which `pid` waits for. Killing it first tears the namespace down, lets `pid`
    reap it and exit, and leaves no orphan behind."""
    if status is None and inner is not None:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if done == 0:
            status = None
            try:
                os.kill(inner, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
                    break
                time.sleep(0.001)
    for kill in (os.killpg, os.kill):  # its process group, else the child alone
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if status is None:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return 0
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else None)
