"""Messages between the grader and one student's child: requests, and checked replies.

Values inside `Call` and `Ok` are `wire`-encoded data (this module never decodes them).
A test's first request also carries the test's seed (`with_seed` / `seed_of`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.sandbox.frames import WireError
from grader.sandbox.protocol.control import int_field, is_int, str_field

MAX_REPLY_TEXT = 20_000
"""Strings in a child's exception and load reports are cut to this many characters."""


# ---------------------------------------------------------------- requests


@dataclass(frozen=True)
class Target:
    """A top-level name of the submission, or an object the child handed out, and an
    optional attribute of it."""

    name: str = ""
    handle: int | None = None
    attr: str = ""

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": self.name} if self.handle is None else {"handle": self.handle}
        return doc | ({"attr": self.attr} if self.attr else {})

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Target":
        attr = doc.get("attr")
        attr = str(attr) if attr else ""
        if "handle" in doc:
            return cls(handle=int_field(doc, "handle", "target"), attr=attr)
        return cls(name=str_field(doc, "name", "target"), attr=attr)


@dataclass(frozen=True)
class Load:
    """Write the submission's files into the workdir, then run its module or cells."""

    kind: str
    """"module" (then `source`) or "notebook" (then `cells`)."""
    filename: str
    source: str = ""
    cells: tuple[str, ...] = ()
    files: dict[str, str] | None = None
    """{name: text} of the copies the child writes; None: its code only."""
    encodings: dict[str, str] | None = None

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"op": "load", "kind": self.kind, "filename": self.filename}
        doc |= {"source": self.source} if self.kind == "module" else {"cells": list(self.cells)}
        if self.files is not None:
            doc["files"] = dict(self.files)
        return doc | ({"encodings": dict(self.encodings)} if self.encodings else {})

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Load":
        kind, files, encodings = doc.get("kind"), doc.get("files"), doc.get("encodings")
        if kind == "module":
            code: dict[str, Any] = {"source": str_field(doc, "source", "load request")}
        elif kind == "notebook" and isinstance(doc.get("cells"), list):
            code = {"cells": tuple(str(c) for c in doc["cells"])}
        else:
            raise WireError(f"malformed load request (kind {kind!r})")
        return cls(kind=kind, filename=str(doc.get("filename", "")), **code,
                   files=files if isinstance(files, dict) else None,
                   encodings=encodings if isinstance(encodings, dict) else None)


@dataclass(frozen=True)
class Call:
    target: Target
    args: Any = field(default_factory=list)
    """`wire.encode(list(args))`."""
    kwargs: Any = field(default_factory=lambda: {"$dict": {}})

    def to_doc(self) -> dict[str, Any]:
        return {"op": "call", **self.target.to_doc(), "args": self.args, "kwargs": self.kwargs}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Call":
        return cls(Target.from_doc(doc), doc.get("args", []), doc.get("kwargs", {"$dict": {}}))


@dataclass(frozen=True)
class GetAttr:
    target: Target

    def to_doc(self) -> dict[str, Any]:
        return {"op": "getattr", **self.target.to_doc()}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "GetAttr":
        return cls(Target.from_doc(doc))


@dataclass(frozen=True)
class Has:
    name: str

    def to_doc(self) -> dict[str, Any]:
        return {"op": "has", "name": self.name}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Has":
        return cls(str_field(doc, "name", "has request"))


@dataclass(frozen=True)
class Seed:
    seed: int

    def to_doc(self) -> dict[str, Any]:
        return {"op": "seed", "seed": self.seed}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Seed":
        return cls(int_field(doc, "seed", "seed request"))


@dataclass(frozen=True)
class Figures:
    """The figures the student's code showed since the last time."""

    def to_doc(self) -> dict[str, Any]:
        return {"op": "figures"}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Figures":
        return cls()


@dataclass(frozen=True)
class SpyStart:
    target: str
    """A library function, dotted: `torch.softmax`."""

    def to_doc(self) -> dict[str, Any]:
        return {"op": "spy_start", "target": self.target}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "SpyStart":
        return cls(str_field(doc, "target", "spy request"))


@dataclass(frozen=True)
class SpyStop:
    target: str

    def to_doc(self) -> dict[str, Any]:
        return {"op": "spy_stop", "target": self.target}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "SpyStop":
        return cls(str_field(doc, "target", "spy request"))


@dataclass(frozen=True)
class Exit:
    """Report the CPU time used, then exit."""

    def to_doc(self) -> dict[str, Any]:
        return {"op": "exit"}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Exit":
        return cls()


Request = Load | Call | GetAttr | Has | Seed | Figures | SpyStart | SpyStop | Exit
_REQUESTS: dict[str, Any] = {"load": Load, "call": Call, "getattr": GetAttr, "has": Has,
                             "seed": Seed, "figures": Figures, "spy_start": SpyStart,
                             "spy_stop": SpyStop, "exit": Exit}


def request_from_doc(doc: dict[str, Any]) -> Request:
    """The request a frame carries; `WireError` for an unknown op or a malformed one."""
    op = doc.get("op")
    if not isinstance(op, str) or op not in _REQUESTS:
        raise WireError(f"unknown op {op!r}")
    request: Request = _REQUESTS[op].from_doc(doc)
    return request


def with_seed(doc: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """A request's frame that also seeds the child's generators before it runs."""
    return doc if seed is None else {**doc, "seed": int(seed)}


def seed_of(doc: dict[str, Any]) -> int | None:
    return int_field(doc, "seed", "request") if "seed" in doc else None


# ---------------------------------------------------------------- replies


def _text(info: dict[str, Any], key: str, limit: int = MAX_REPLY_TEXT) -> str:
    value = info.get(key, "")
    if not isinstance(value, str):
        raise WireError(f"malformed exception report ({key})")
    return value[:limit]


@dataclass(frozen=True)
class ErrorReport:
    """An exception the student's code raised, as text (never the object)."""

    type: str
    message: str = ""
    traceback: str = ""
    where: str = ""
    builtin: str | None = None
    """The nearest builtin exception class it derives from, by name."""
    cell: int | None = None
    """The notebook cell that raised, for a load's cell errors."""

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"type": self.type, "message": self.message, "traceback": self.traceback,
                               "where": self.where, "builtin": self.builtin}
        return doc | ({"cell": self.cell} if self.cell is not None else {})

    @classmethod
    def from_doc(cls, info: Any) -> "ErrorReport":
        if not isinstance(info, dict):
            raise WireError("malformed exception report")
        builtin = info.get("builtin")
        if builtin is not None and not isinstance(builtin, str):
            raise WireError("malformed exception report (builtin)")
        if "cell" in info and not is_int(info["cell"]):
            raise WireError("malformed exception report (cell)")
        return cls(type=_text(info, "type"), message=_text(info, "message"),
                   traceback=_text(info, "traceback"), where=_text(info, "where"),
                   builtin=builtin[:100] if builtin else None, cell=info.get("cell"))


@dataclass(frozen=True)
class LoadReport:
    error: ErrorReport | None = None
    """What a module raised while it was imported."""
    cell_errors: tuple[ErrorReport, ...] = ()
    defined: tuple[str, ...] = ()
    """The public names the submission defined (at most 500)."""

    def to_doc(self) -> dict[str, Any]:
        return {"error": None if self.error is None else self.error.to_doc(),
                "cell_errors": [c.to_doc() for c in self.cell_errors], "defined": list(self.defined)}

    @classmethod
    def from_doc(cls, value: Any) -> "LoadReport":
        if not isinstance(value, dict):
            raise WireError("malformed load report")
        error, cells, defined = value.get("error"), value.get("cell_errors", []), value.get("defined", [])
        if not isinstance(cells, list) or not isinstance(defined, list):
            raise WireError("malformed load report")
        if not all(isinstance(d, str) for d in defined):
            raise WireError("malformed load report (defined)")
        checked = tuple(ErrorReport.from_doc(c) for c in cells[:1000])
        if any(c.cell is None for c in checked):
            raise WireError("malformed load report (cell number)")
        return cls(None if error is None else ErrorReport.from_doc(error), checked,
                   tuple(d[:200] for d in defined[:500]))


@dataclass(frozen=True)
class Ok:
    value: Any = None
    """wire-encoded; a `LoadReport` for a load."""

    def to_doc(self) -> dict[str, Any]:
        value = self.value.to_doc() if isinstance(self.value, LoadReport) else self.value
        return {"ok": True, "value": value}


@dataclass(frozen=True)
class Raised:
    error: ErrorReport

    def to_doc(self) -> dict[str, Any]:
        return {"raised": self.error.to_doc()}


@dataclass(frozen=True)
class Missing:
    """The submission does not define the name a request used."""

    name: str

    def to_doc(self) -> dict[str, Any]:
        return {"missing": self.name}


@dataclass(frozen=True)
class ProtocolError:
    """The child could not read the request (or refused it)."""

    message: str

    def to_doc(self) -> dict[str, Any]:
        return {"protocol_error": self.message}


Reply = Ok | Raised | Missing | ProtocolError


def reply_from_doc(reply: dict[str, Any], op: Any = None) -> Reply:
    """A child's answer to an `op` request, checked and cut to size, or `WireError`."""
    if "ok" in reply:
        if reply["ok"] is not True:
            raise WireError("malformed answer: 'ok' is not true")
        value = reply.get("value")
        return Ok(LoadReport.from_doc(value) if op == "load" else value)
    if "raised" in reply:
        return Raised(ErrorReport.from_doc(reply["raised"]))
    if isinstance(reply.get("missing"), str):
        return Missing(reply["missing"][:200])
    if isinstance(reply.get("protocol_error"), str):
        return ProtocolError(reply["protocol_error"][:MAX_REPLY_TEXT])
    raise WireError(f"malformed answer with keys {sorted(map(str, reply))[:5]}")


def checked_reply(request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """`reply_from_doc`, as the JSON object it checked."""
    return reply_from_doc(reply, request.get("op")).to_doc()
