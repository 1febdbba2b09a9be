"""The student's side: a forked child that loads one submission and answers calls.

Runs inside the sandbox, after `zygote` forked and isolated it, in its private working
folder (the current directory), where `load` first writes a copy of the submission's
files (received as text over the socket: the child never reads the instructor's
disk). It trusts nothing and decides nothing: it executes the student's code, and
sends back plain data (see `wire`). Verdicts are made in the grader's process.
"""

from __future__ import annotations

import builtins
import importlib
import json
import os
import socket
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from grader.sandbox import protocol, wire
from grader.sandbox.inside import plotting
from grader.sandbox.inside.seeding import seed_all

MODULE_NAME = "attention_submission"
_MAX_TEXT = 4000
_MAX_COPY_BYTES = 16 * 1024 * 1024


class Namespace:
    """The names the submission defined, and the objects handed out as handles."""

    def __init__(self) -> None:
        self.names: dict[str, Any] = {}
        self.module_dicts: list[dict[str, Any]] = []
        self._objects: dict[int, Any] = {}
        self._ids: dict[int, int] = {}

    def to_handle(self, obj: Any) -> wire.Handle:
        key = id(obj)
        if key not in self._ids:
            self._ids[key] = len(self._objects) + 1
            self._objects[self._ids[key]] = obj
        return wire.Handle(self._ids[key], type(obj).__name__)

    def from_handle(self, handle: wire.Handle) -> Any:
        try:
            return self._objects[handle.id]
        except KeyError:
            raise LookupError(f"unknown handle {handle.id}") from None


# ---------------------------------------------------------------- loading


def load_module(ns: Namespace, source: str, filename: str) -> protocol.LoadReport:
    """Execute a module's source as a fresh module; keep what it defined even if it raised."""
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = os.path.abspath(filename)
    sys.modules[MODULE_NAME] = module
    ns.module_dicts.append(module.__dict__)
    plotting.COLLECTOR.source = filename
    error = None
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are student errors too
        error = describe_exception(exc, filename)
    ns.names = module.__dict__
    return protocol.LoadReport(error=error)


def load_notebook(ns: Namespace, cells: list[str], filename: str) -> protocol.LoadReport:
    """Run code cells in order with IPython, as a Jupyter kernel would (magics included).

    Like nbclient with allow_errors, a cell that raises is recorded and the next cells
    still run, so the names the notebook did define are graded.
    """
    shell = make_shell()
    ns.names = shell.user_ns
    ns.module_dicts.append(shell.user_ns)
    cell_errors = []
    for number, source in enumerate(cells, start=1):
        plotting.COLLECTOR.source = f"cell {number}"
        try:
            result = shell.run_cell(source, store_history=False, silent=False)
            exc = result.error_before_exec or result.error_in_exec
        except BaseException as raised:  # SystemExit escapes run_cell in some versions
            exc = raised
        if exc is not None:
            cell_errors.append(replace(describe_exception(exc, f"cell {number}"), cell=number))
    return protocol.LoadReport(cell_errors=tuple(cell_errors))


def make_shell() -> Any:
    """The IPython shell notebooks run in (one per process; built ahead in the zygote)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    cfg = Config()
    cfg.HistoryManager.enabled = False
    cfg.InteractiveShell.colors = "NoColor"
    cfg.InteractiveShell.xmode = "Plain"
    shell = InteractiveShell.instance(config=cfg)
    plotting.watch_shell(shell)  # what cells show is captured, as Jupyter would display it
    return shell


def describe_exception(exc: BaseException, where: str) -> protocol.ErrorReport:
    try:
        tb = traceback.TracebackException.from_exception(exc, limit=-12)
        _drop_grader_frames(tb, set())
        text = "".join(tb.format())
    except Exception:  # a hostile exception (a __str__ that raises...) still reports
        text = f"{type(exc).__name__} (traceback unavailable)"
    return protocol.ErrorReport(type=type(exc).__name__, builtin=_builtin_base(type(exc)),
                                message=_clip(_safe_str(exc)),
                                traceback=_clip(_student_frames(text)), where=where)


def _safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
        return text if isinstance(text, str) else ""
    except Exception:
        return "(the exception's message could not be shown)"


def _builtin_base(cls: type) -> str | None:
    for base in cls.__mro__:
        if getattr(builtins, base.__name__, None) is base and base.__module__ == "builtins":
            return str(base.__name__)
    return None


_GRADER_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _drop_grader_frames(tb: traceback.TracebackException, seen: set[int]) -> None:
    """Only the student's frames: the child's own are noise (and not the student's)."""
    if id(tb) in seen:
        return
    seen.add(id(tb))
    tb.stack = traceback.StackSummary.from_list(
        [f for f in tb.stack if not _is_grader_file(f.filename)])
    for other in (tb.__cause__, tb.__context__):
        if other is not None:
            _drop_grader_frames(other, seen)


def _is_grader_file(filename: str) -> bool:
    return filename.startswith(_GRADER_DIR) or "/grader/sandbox/inside/child.py" in filename


def _student_frames(text: str) -> str:
    lines = [ln for ln in text.splitlines() if "grader/sandbox/inside/child.py" not in ln]
    return "\n".join(lines)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "\n... (cut)"


# ---------------------------------------------------------------- calls


class Spy:
    """Count calls of a library function, also through names the student imported."""

    def __init__(self, ns: Namespace, dotted: str) -> None:
        module_name, _, attr = dotted.rpartition(".")
        self.module = importlib.import_module(module_name)
        self.attr = attr
        self.original = getattr(self.module, attr)
        self.count = 0
        original = self.original

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return original(*args, **kwargs)

        self.wrapper = counting
        self.patched: list[tuple[dict[str, Any], str]] = []
        setattr(self.module, attr, counting)
        for d in ns.module_dicts:
            for name, value in list(d.items()):
                if value is original:
                    d[name] = counting
                    self.patched.append((d, name))

    def stop(self) -> int:
        setattr(self.module, self.attr, self.original)
        for d, name in self.patched:
            if d.get(name) is self.wrapper:
                d[name] = self.original
        return self.count


class Server:
    def __init__(self, sock: socket.socket, device_ok: Callable[[str], str]) -> None:
        self.sock = sock
        self.ns = Namespace()
        self.spies: dict[str, Spy] = {}
        self.device_ok = device_ok

    def serve(self) -> None:
        while True:
            try:
                doc = wire.recv_frame(self.sock)
            except EOFError:
                return
            if doc.get("op") == "exit":
                wire.send_frame(self.sock, protocol.Ok({"cpu_s": _cpu_seconds()}).to_doc())
                return
            wire.send_frame(self.sock, self.handle(doc))

    def handle(self, doc: dict[str, Any]) -> dict[str, Any]:
        """One request's frame, answered: the frame of its reply."""
        return self.answer(doc).to_doc()

    def answer(self, doc: dict[str, Any]) -> protocol.Reply:
        try:
            request = protocol.request_from_doc(doc)
            seed = protocol.seed_of(doc)  # a test's first request carries the test's seed
        except protocol.WireError as exc:
            return protocol.ProtocolError(str(exc))
        op = str(doc["op"])
        try:
            if seed is not None:
                seed_all(seed)
            return protocol.Ok(getattr(self, f"op_{op}")(request))
        except _Missing as exc:
            return protocol.Missing(str(exc))
        except protocol.Refused as exc:
            return protocol.ProtocolError(str(exc))
        except BaseException as exc:
            return protocol.Raised(describe_exception(exc, op))

    def _encode(self, value: Any) -> Any:
        return wire.encode(value, self.ns.to_handle)

    def _decode(self, value: Any) -> Any:
        return wire.decode(value, self.ns.from_handle, self.device_ok)

    def op_load(self, request: protocol.Load) -> protocol.LoadReport:
        write_submission_copy(request.to_doc())
        plotting.install()  # matplotlib stays unimported until the student imports it
        sys.argv = [request.filename or MODULE_NAME]
        if request.kind == "notebook":
            report = load_notebook(self.ns, list(request.cells), request.filename)
        else:
            report = load_module(self.ns, request.source, request.filename)
        defined = sorted(k for k in self.ns.names if not k.startswith("_"))[:500]
        return replace(report, defined=tuple(defined))

    def op_has(self, request: protocol.Has) -> bool:
        return request.name in self.ns.names

    def op_seed(self, request: protocol.Seed) -> None:
        seed_all(request.seed)

    def op_call(self, request: protocol.Call) -> Any:
        target = self._target(request.target)
        plotting.COLLECTOR.source = _call_label(request.target, target)
        args = self._decode(request.args)
        kwargs = self._decode(request.kwargs)
        return self._encode(target(*args, **kwargs))

    def op_getattr(self, request: protocol.GetAttr) -> Any:
        return self._encode(self._target(request.target))

    def _target(self, target: protocol.Target) -> Any:
        if target.handle is not None:
            obj = self.ns.from_handle(wire.Handle(target.handle, ""))
        else:
            if target.name not in self.ns.names:
                raise _Missing(target.name)
            obj = self.ns.names[target.name]
        return getattr(obj, target.attr) if target.attr else obj

    def op_figures(self, request: protocol.Figures) -> dict[str, Any]:
        """The figures the student's code showed since the last time (see `plotting`)."""
        return plotting.COLLECTOR.take()

    def op_spy_start(self, request: protocol.SpyStart) -> None:
        self.spies[request.target] = Spy(self.ns, request.target)

    def op_spy_stop(self, request: protocol.SpyStop) -> int:
        return self.spies.pop(request.target).stop()


def _call_label(request: protocol.Target, target: Any) -> str:
    """How a figure drawn during this call is captioned: `plot_attention(...)`."""
    name = request.attr or request.name or str(getattr(target, "__name__", "a call"))
    return f"{name}(...)"


def _cpu_seconds() -> float:
    """This process's CPU and that of the children it waited for (reported on exit; the
    grader only records it, so a student who lies about it changes no verdict)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime, 4)


class _Missing(Exception):
    pass


# ---------------------------------------------------------------- the submission's copy


def write_submission_copy(request: dict[str, Any], folder: str = ".") -> list[str]:
    """Write the submission's files into the private working folder, before its code runs.

    `files` ({name: text}) when the grader sent them; otherwise the module's source, or
    the notebook's code cells as a minimal notebook. Names are reduced to a plain file
    name: nothing is written outside the folder. A file is written in the encoding
    `encodings` names for it (a module that declares one, PEP 263), else UTF-8. Best
    effort: a failure to write (the file-size limit) never stops the grading.
    """
    files = request.get("files")
    if not isinstance(files, dict):
        files = {}
        name = str(request.get("filename", ""))
        if request.get("kind") == "module" and isinstance(request.get("source"), str):
            files[name] = request["source"]
        elif request.get("kind") == "notebook" and isinstance(request.get("cells"), list):
            files[name] = _minimal_notebook([str(c) for c in request["cells"]])
    encodings = request.get("encodings")
    encodings = encodings if isinstance(encodings, dict) else {}
    written = []
    for raw_name, text in files.items():
        name = os.path.basename(str(raw_name))
        if not name or name in (".", "..") or not isinstance(text, str):
            continue
        data = _encoded(text, encodings.get(raw_name))[:_MAX_COPY_BYTES]
        try:
            fd = os.open(os.path.join(folder, name),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            written.append(name)
        except OSError:
            continue
    return written


def _encoded(text: str, encoding: Any) -> bytes:
    try:
        return text.encode(str(encoding or "utf-8"), errors="replace")
    except LookupError:
        return text.encode("utf-8", errors="replace")


def _minimal_notebook(cells: list[str]) -> str:
    doc = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
           "cells": [{"cell_type": "code", "execution_count": None, "metadata": {},
                      "outputs": [], "source": src, "id": f"cell-{i}"}
                     for i, src in enumerate(cells)]}
    return json.dumps(doc, indent=1)


# ---------------------------------------------------------------- process setup


def run(proto: socket.socket) -> None:
    """Entry point in the forked child, after the sandbox limits are applied."""
    torch.set_num_threads(1)
    server = Server(proto, _device_guard)
    server.serve()


def _device_guard(device: str) -> str:
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise protocol.Refused("the grader asked for CUDA, but the sandbox has none")
    return device
