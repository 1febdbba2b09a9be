"""The messages between the grader and its sandbox, typed, each with the JSON it sends.

    grader --ZygoteConfig (argv)--------------> zygote --Hello---------------------> grader
    grader --Fork (+ 2 fds) | Kill | Warm-----> zygote --Forked | Killed | Warmed | ControlError
    child  --ChildHello (before any student code runs)----------------------------> grader
    grader --Load | Call | GetAttr | Has | Seed | Figures | SpyStart | SpyStop | Exit
                                             --> child --Ok | Raised | Missing | ProtocolError

`to_doc()` gives the JSON object a frame carries; `from_doc()` reads one back and raises
`WireError` for anything not of its shape. Each side's first message (the zygote's
config, both hellos) carries `WIRE_VERSION`, and the other side refuses another one
with `VersionMismatch`. What comes from a child is read as hostile: its code is the
student's, which can write to the socket itself, so a forged answer is at worst a
wrong value. Imports only `frames` (no torch: the sandbox starts before torch does);
the zygote and the child use it too.
"""

from grader.sandbox.frames import WIRE_VERSION, WireError
from grader.sandbox.protocol.calls import (
    MAX_REPLY_TEXT,
    Call,
    ErrorReport,
    Exit,
    Figures,
    GetAttr,
    Has,
    Load,
    LoadReport,
    Missing,
    Ok,
    ProtocolError,
    Raised,
    Reply,
    Request,
    Seed,
    SpyStart,
    SpyStop,
    Target,
    checked_reply,
    reply_from_doc,
    request_from_doc,
    seed_of,
    with_seed,
)
from grader.sandbox.protocol.control import (
    ChildHello,
    ControlError,
    Fork,
    Forked,
    Hello,
    Kill,
    Killed,
    Refused,
    VersionMismatch,
    Warm,
    Warmed,
    ZygoteConfig,
    check_version,
    control_request_from_doc,
)

__all__ = [
    "Call", "ChildHello", "ControlError", "ErrorReport", "Exit", "Figures", "Fork", "Forked",
    "GetAttr", "Has", "Hello", "Kill", "Killed", "Load", "LoadReport", "MAX_REPLY_TEXT",
    "Missing", "Ok", "ProtocolError", "Raised", "Refused", "Reply", "Request", "Seed",
    "SpyStart", "SpyStop", "Target", "VersionMismatch", "WIRE_VERSION", "Warm", "Warmed", "WireError",
    "ZygoteConfig", "check_version", "checked_reply", "control_request_from_doc",
    "reply_from_doc", "request_from_doc", "seed_of", "with_seed",
]
