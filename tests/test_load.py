"""A module's source is decoded the way Python decodes it (PEP 263), not always as UTF-8."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.intake.discover import Submission
from grader.intake.load import UnreadableSubmission, read_source, read_submission
from grader.sandbox.inside.child import write_submission_copy

LATIN1 = '# -*- coding: latin-1 -*-\n"""Résumé: ½ of a café."""\nNAME = "café"\n'


def test_a_declared_encoding_is_honoured_and_the_childs_copy_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "attention.py"
    path.write_bytes(LATIN1.encode("latin-1"))
    assert read_source(path) == (LATIN1, "iso8859-1")
    loaded = read_submission(Submission(id="s", path=tmp_path, module=path, notebook=None,
                                        answers=None))
    assert loaded.request is not None and loaded.request["source"] == LATIN1
    copy = tmp_path / "copy"
    copy.mkdir()
    assert write_submission_copy(loaded.request, str(copy)) == ["attention.py"]
    assert (copy / "attention.py").read_bytes() == path.read_bytes()


def test_a_utf8_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "attention.py"
    path.write_bytes(b"\xef\xbb\xbfNAME = 'caf\xc3\xa9'\n")
    assert read_source(path) == ("NAME = 'café'\n", "utf-8-sig")


@pytest.mark.parametrize("data, words", [
    (b"# caf\xe9\nx = 1\n", "is not UTF-8 text (byte 0xe9 at position 5)"),
    (b"x = 1\n\n\ny = 'caf\xe9'\n", "is not UTF-8 text (byte 0xe9"),
    (b"# coding: ascii\nx = 'caf\xe9'\n", "declares `coding: ascii` but is not ascii text"),
    (b"# coding: no-such-codec\nx = 1\n", "encoding declaration Python cannot use"),
], ids=["no-declaration-first-line", "no-declaration-later", "wrong-declaration", "unknown-codec"])
def test_a_file_invalid_in_its_encoding_gets_a_message_that_says_what_to_do(
        tmp_path: Path, data: bytes, words: str) -> None:
    path = tmp_path / "attention.py"
    path.write_bytes(data)
    with pytest.raises(UnreadableSubmission) as info:
        read_source(path)
    assert words in str(info.value) and str(info.value).startswith("attention.py ")


# ------------------------------------------------------------------ the one safe reader


def test_the_reader_refuses_a_fifo_without_blocking(tmp_path):
    import os

    from grader.intake.read import read_bytes

    fifo = tmp_path / "attention.py"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableSubmission, match="not a regular file"):
        read_bytes(fifo)


def test_the_reader_refuses_a_link_and_a_huge_file(tmp_path):
    from grader.intake.read import read_bytes

    secret = tmp_path / "secret.txt"
    secret.write_text("x" * 100)
    link = tmp_path / "attention.py"
    link.symlink_to(secret)
    with pytest.raises(UnreadableSubmission, match="symbolic link"):
        read_bytes(link)
    with pytest.raises(UnreadableSubmission, match="larger than"):
        read_bytes(secret, limit=10)


def test_answers_and_digest_go_through_the_same_reader(tmp_path):
    import os

    from grader.answers.submitted import load_answers
    from grader.intake.read import digest

    fifo = tmp_path / "answers.yaml"
    os.mkfifo(fifo)
    answers, problems = load_answers(fifo)  # would block forever if opened plainly
    assert answers is None and "not a regular file" in problems[0]
    assert len(digest([fifo])) == 16
    huge = tmp_path / "attention.py"
    huge.write_bytes(b"#" * (17 * 1024 * 1024))
    before = digest([huge])
    huge.write_bytes(b"#" * (17 * 1024 * 1024 + 1))
    assert digest([huge]) == before  # both refused alike: too large
