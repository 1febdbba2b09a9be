"""Messages between the grader and its zygote: start, fork, kill, and both hellos.

The version check lives here: each side's first message carries `WIRE_VERSION`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeGuard

from grader.sandbox.frames import WIRE_VERSION, WireError


class VersionMismatch(WireError):
    """The other side speaks another version of this protocol."""

    @classmethod
    def of(cls, who: str, theirs: Any) -> "VersionMismatch":
        return cls(f"wire versions differ: the grader speaks version {WIRE_VERSION}, {who} "
                   f"speaks {theirs!r}; both must come from the same grader package "
                   "(reinstall it, then run the same command again)")


class Refused(WireError):
    """A request the child cannot serve, through no fault of the student's code."""


def check_version(theirs: Any, who: str) -> None:
    """Raise `VersionMismatch` unless `theirs` is this package's `WIRE_VERSION`."""
    if not is_int(theirs) or theirs != WIRE_VERSION:
        raise VersionMismatch.of(who, theirs)


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def int_field(doc: dict[str, Any], key: str, what: str) -> int:
    value = doc.get(key)
    if not is_int(value):
        raise WireError(f"malformed {what}: {key!r} is not an integer")
    return int(value)


def str_field(doc: dict[str, Any], key: str, what: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str):
        raise WireError(f"malformed {what}: {key!r} is not a string")
    return value


# ---------------------------------------------------------------- grader <-> zygote


@dataclass(frozen=True)
class ZygoteConfig:
    """What the sandbox tells the zygote at start (its argv, as JSON)."""

    level: str = "process"
    private_root: bool = False
    prewarm: bool = True
    ro_paths: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    """GPU device nodes to show children (only /dev/nvidia*)."""
    version: int | None = WIRE_VERSION
    tmp_dirs: tuple[str, ...] = ()
    """Per connection, the folder its children's workdirs go in (a tmpfs of its own under
    bubblewrap); none: the zygote's temp folder."""
    warm_imports: tuple[str, ...] = ()
    """Plotting modules of the assignment's environment to import when a connection asks
    (`Warm`, `plotting.warm`): the children forked after that find them loaded."""

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"level": self.level, "private_root": self.private_root,
                               "prewarm": self.prewarm, "version": self.version}
        if self.ro_paths or self.devices:
            doc |= {"ro_paths": list(self.ro_paths), "devices": list(self.devices)}
        doc |= {"warm_imports": list(self.warm_imports)} if self.warm_imports else {}
        return doc | ({"tmp_dirs": list(self.tmp_dirs)} if self.tmp_dirs else {})

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "ZygoteConfig":
        return cls(level=str(doc.get("level", "process")),
                   private_root=bool(doc.get("private_root", False)),
                   prewarm=bool(doc.get("prewarm", True)),
                   ro_paths=tuple(str(p) for p in doc.get("ro_paths", [])),
                   devices=tuple(str(p) for p in doc.get("devices", [])
                                 if str(p).startswith("/dev/nvidia")),
                   version=doc.get("version") if is_int(doc.get("version")) else None,
                   tmp_dirs=tuple(str(p) for p in doc.get("tmp_dirs", [])),
                   warm_imports=tuple(str(m) for m in doc.get("warm_imports", [])))


@dataclass(frozen=True)
class Hello:
    """The zygote's first frame: ready to fork (or `error`: it cannot serve)."""

    pid: int
    strategy: str
    version: Any = WIRE_VERSION
    error: str = ""

    def to_doc(self) -> dict[str, Any]:
        doc = {"ready": True, "pid": self.pid, "strategy": self.strategy, "version": self.version}
        return doc | ({"error": self.error} if self.error else {})

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Hello":
        if doc.get("ready") is not True:
            raise WireError(f"the zygote's first frame is not a hello: {str(doc)[:200]}")
        return cls(pid=int_field(doc, "pid", "hello"), strategy=str(doc.get("strategy", "")),
                   version=doc.get("version"), error=str(doc.get("error") or ""))

    def checked(self) -> "Hello":
        """This hello, or `VersionMismatch` / `WireError` (the zygote refused to serve)."""
        check_version(self.version, "the sandbox's zygote")
        if self.error:
            raise WireError(self.error)
        return self


@dataclass(frozen=True)
class Fork:
    """Fork a fresh child; sent with its protocol and output sockets."""

    limits: dict[str, Any] = field(default_factory=dict)

    def to_doc(self) -> dict[str, Any]:
        return {"op": "fork", "limits": dict(self.limits)}


@dataclass(frozen=True)
class Kill:
    """Kill a child with everything it started, and reap it."""

    pid: int

    def to_doc(self) -> dict[str, Any]:
        return {"op": "kill", "pid": self.pid}


@dataclass(frozen=True)
class Warm:
    """A submission that plots was seen: import the plotting libraries of the zygote's config
    (`ZygoteConfig.warm_imports`), right after answering, for the children forked after that."""

    def to_doc(self) -> dict[str, Any]:
        return {"op": "warm"}


def control_request_from_doc(doc: dict[str, Any]) -> Fork | Kill | Warm:
    """What the zygote was asked; `WireError` for anything else."""
    if doc.get("op") == "fork":
        limits = doc.get("limits", {})
        return Fork(limits if isinstance(limits, dict) else {})
    if doc.get("op") == "kill":
        return Kill(int_field(doc, "pid", "kill request"))
    if doc.get("op") == "warm":
        return Warm()
    raise WireError("bad request")


@dataclass(frozen=True)
class Forked:
    pid: int

    def to_doc(self) -> dict[str, Any]:
        return {"pid": self.pid}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Forked":
        pid = doc.get("pid")
        if not is_int(pid) or pid <= 0:
            raise WireError(f"the sandbox could not fork a child (it answered {str(doc)[:200]})")
        return cls(pid)


@dataclass(frozen=True)
class Killed:
    status: int
    """As a shell gives it: 128 + signal for a child killed by one."""
    cpu_s: float = 0.0

    def to_doc(self) -> dict[str, Any]:
        return {"status": self.status, "cpu_s": self.cpu_s}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Killed":
        try:
            return cls(int(doc.get("status", -1)), float(doc.get("cpu_s", 0.0)))
        except (TypeError, ValueError):
            raise WireError(f"the sandbox answered a kill with {str(doc)[:200]}") from None


@dataclass(frozen=True)
class Warmed:
    pending: bool
    """Whether the zygote will import them (False: nothing to import, or already done)."""

    def to_doc(self) -> dict[str, Any]:
        return {"warm": self.pending}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Warmed":
        if not isinstance(doc.get("warm"), bool):
            raise WireError(f"the sandbox answered a warm-up with {str(doc)[:200]}")
        return cls(doc["warm"])


@dataclass(frozen=True)
class ControlError:
    error: str

    def to_doc(self) -> dict[str, Any]:
        return {"error": self.error}


@dataclass(frozen=True)
class ChildHello:
    """A child's first frame: the isolation it actually got, before any student code."""

    isolation: dict[str, Any]
    version: Any = WIRE_VERSION

    def to_doc(self) -> dict[str, Any]:
        return {"isolation": self.isolation, "version": self.version}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "ChildHello":
        facts = doc.get("isolation")
        return cls(facts if isinstance(facts, dict) else {}, doc.get("version"))
