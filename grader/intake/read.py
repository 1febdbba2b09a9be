"""The one reader of a submission's files, which are hostile input.

Every file a student hands in (code, notebook, answers) is read here and nowhere else:
only a regular file, never through a symbolic link, never blocking on a FIFO or a
device, never more than a size cap. Whatever goes wrong is an `UnreadableSubmission`
whose message tells the student what to do.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from grader.errors import UnreadableSubmission

MAX_CODE_BYTES = 2 * 1024 * 1024
MAX_NOTEBOOK_BYTES = 16 * 1024 * 1024
MAX_ANSWERS_BYTES = 256 * 1024

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def read_bytes(path: Path, limit: int = MAX_CODE_BYTES) -> bytes:
    """A regular file's bytes: not a link, a FIFO or a folder, at most `limit` bytes."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise UnreadableSubmission(f"there is no {path.name}") from None
    except OSError as exc:
        if os.path.islink(path):
            raise UnreadableSubmission(f"{path.name} is not a regular file (it is a symbolic "
                                       "link); hand in the file itself") from None
        raise UnreadableSubmission(f"{path.name} cannot be opened ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnreadableSubmission(f"{path.name} is not a regular file (a folder, a pipe or "
                                   "a device?); hand in a plain file")
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnreadableSubmission(
            f"{path.name} is larger than {limit // 1024} KiB; hand in only your code "
            "(clear large notebook outputs)")
    return data


def digest(files: list[Path]) -> str:
    """Hash of what the reader would read (names and bytes), for resuming a batch: a file
    it refuses is hashed as its refusal, so fixing it changes the digest."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0")
        try:
            h.update(read_bytes(f, MAX_NOTEBOOK_BYTES))
        except UnreadableSubmission as exc:
            h.update(b"<unreadable>" + str(exc).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]
