"""The class table `grader grade` prints: it fits the terminal and never cuts a word.

Formatting at fixed widths (wide: ids as column titles; 80: short titles and a legend;
narrow: a block per student), `grader check`'s table at fixed widths, then the real CLI
with $COLUMNS and, where tmux is installed, in a real 80-column terminal.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from result_samples import buggy, full_marks, grader_failure, notebook_error, unloadable

from grader import assignment as assignment_mod
from grader import results
from grader.assignment import Assignment, Exercise
from grader.errors import AssignmentSchemaError
from grader.report.formatting import fmt_points
from grader.report.summary import MARKS, short_titles, summary
from grader.report.terminal import format_check_table
from grader.results import SubmissionResult

ROOT = Path(__file__).resolve().parents[1]
ATTENTION = ROOT / "assignments" / "attention" / "assignment.yaml"
OUT = Path("reports")
WIDTHS = (200, 80, 50)


@pytest.fixture(scope="module")
def attention() -> Assignment:
    return assignment_mod.load(ATTENTION)


def _with_score(result: SubmissionResult, exercise_id: str, score: float) -> SubmissionResult:
    exercises = tuple(dataclasses.replace(ex, score=score) if ex.id == exercise_id else ex
                      for ex in result.exercises)
    return dataclasses.replace(result, exercises=exercises)


def _class() -> list[SubmissionResult]:
    """Full marks, partial scores (one of 11.111... points, shown as fmt_points does),
    errors and timeouts, a grader failure."""
    return [full_marks(), _with_score(buggy(), "attention_core", 100 / 9), notebook_error(),
            unloadable(), grader_failure()]


def _tokens(text: str) -> set[str]:
    return set(text.split())


def _assert_no_cut_words(text: str, exercises: tuple[Exercise, ...]) -> None:
    """No word of the output (of 4 letters or more) is the start of an exercise id cut
    short (`shape_readin`, `attention_co`) unless it is a short title or a title's word."""
    whole = {ex.id for ex in exercises} | set(short_titles(exercises).values())
    whole |= {w.strip("():,") for ex in exercises for w in ex.title.split()}
    for token in _tokens(text):
        word = token.strip("():,")
        for ex in exercises:
            if len(word) >= 4 and ex.id.startswith(word) and word != ex.id:
                assert word in whole, f"{word!r} looks like {ex.id!r} cut short"


@pytest.mark.parametrize("width", WIDTHS)
def test_every_line_fits_and_every_exercise_is_named_whole(attention: Assignment, width: int) -> None:
    text = summary(_class(), attention, OUT, width)
    assert max(len(line) for line in text.splitlines()) <= width
    shorts = short_titles(attention.exercises)
    for ex in attention.exercises:
        assert ex.id in _tokens(text) or shorts[ex.id] in _tokens(text)
    _assert_no_cut_words(text, attention.exercises)


def test_wide_terminal_has_a_column_per_exercise_id(attention: Assignment) -> None:
    lines = summary(_class(), attention, OUT, 200).splitlines()
    assert lines[0].split() == ["student", "total", *(ex.id for ex in attention.exercises)]
    assert lines[1].split() == ["out", "of", "100", "10", "20", "15", "15", "10", "10", "10", "10"]
    assert set(lines[2]) == {"-"}
    bob = next(line for line in lines if line.startswith("bob "))
    assert bob.split()[1:6] == ["68", "10", f"{fmt_points(100 / 9)}~", "0x", "10~"] == [
        "68", "10", "11.11~", "0x", "10~"]
    assert any(line.startswith("marks: ~ partial, x failed, ! error") for line in lines)
    assert not any(line.startswith("shapes ") for line in lines)  # ids need no legend


def test_80_columns_use_the_declared_short_titles_and_a_legend(attention: Assignment) -> None:
    lines = summary(_class(), attention, OUT, 80).splitlines()
    shorts = [ex.short or ex.id for ex in attention.exercises]
    assert shorts == ["shapes", "core", "padding", "causal", "dropout", "sdpa", "cost", "quiz"]
    assert lines[0].split() == ["student", "total", *shorts]
    legend = [line for line in lines if line.split()[:1] and line.split()[0] in shorts]
    assert legend[0].split()[:2] == ["shapes", "shape_reading"]
    assert "core     attention_core (Scaled dot-product and multi-head attention)" in lines
    carol = next(line for line in lines if line.startswith("carol "))
    assert "!" in carol  # a cell that raised, marked and explained in the legend
    dave = next(line for line in lines if line.startswith("dave "))
    assert dave.split()[-1] == "0T"  # reading answers.yaml timed out
    erin = next(line for line in lines if line.startswith("erin "))
    assert set(erin.split()[1:]) == {"-"}
    assert any("not graded, the grader itself failed (not a zero): erin" in line for line in lines)
    assert lines[-1] == "5 submission(s); reports in reports/ (index.html, grades.csv)"


def test_narrow_terminal_falls_back_to_a_block_per_student(attention: Assignment) -> None:
    text = summary(_class(), attention, OUT, 50)
    lines = text.splitlines()
    assert "student" not in lines[0].split()
    assert lines[0].split() == ["alice", "100/100"]
    bob = lines.index(next(line for line in lines if line.startswith("bob ")))
    block = lines[bob:bob + 1 + len(attention.exercises)]
    assert block[0].split() == ["bob", "68/100"]
    assert [line.split()[0] for line in block[1:]] == [ex.id for ex in attention.exercises]
    assert block[2].split() == ["attention_core", "11.11/20", "partial"]
    assert block[3].split() == ["padding_mask", "0/15", "failed"]
    assert "erin  not graded: the grader itself failed on this" in text
    assert not set("~!") & set(text) and "marks:" not in text  # statuses are words here


def test_very_narrow_blocks_use_short_titles_and_a_legend(attention: Assignment) -> None:
    text = summary(_class(), attention, OUT, 30)
    assert max(len(line) for line in text.splitlines()) <= 30
    assert ["core", "11.11/20", "partial"] in [line.split() for line in text.splitlines()]
    assert "core     attention_core" in text


def test_short_titles_are_declared_or_whole_words_of_the_id() -> None:
    def ex(id_: str, short: str = "") -> Exercise:
        return Exercise(id=id_, title=id_, points=1, public=None, hidden=None, short=short)

    exercises = (ex("mask_padding"), ex("mask_causal"), ex("attention_core"), ex("dropout"),
                 ex("shape_reading", short="attention"), ex("sdpa_rewrite"))
    assert short_titles(exercises) == {
        "mask_padding": "mp", "mask_causal": "mc",   # same first word: initials
        "attention_core": "ac",                      # "attention" is declared elsewhere
        "dropout": "dropout", "shape_reading": "attention", "sdpa_rewrite": "sdpa",
    }  # fmt: skip
    # "a" is shared, and so is "ab" (a_b's initials, ab's id): a_b keeps its id
    assert short_titles((ex("a_b"), ex("a_c"), ex("ab"))) == {"a_b": "a_b", "a_c": "ac", "ab": "ab"}


def test_derived_short_titles_are_used_when_none_is_declared(attention: Assignment) -> None:
    plain = dataclasses.replace(attention, exercises=tuple(
        dataclasses.replace(ex, short="") for ex in attention.exercises))
    text = summary(_class(), plain, OUT, 90)  # 83 columns: the ids need 115
    assert text.splitlines()[0].split() == [
        "student", "total", "shape", "attention", "padding", "causal", "dropout", "sdpa",
        "complexity", "quiz"]
    assert "attention   attention_core (Scaled dot-product and multi-head attention)" in text
    assert max(len(line) for line in text.splitlines()) <= 90


def test_student_names_cannot_drive_the_terminal(attention: Assignment) -> None:
    sneaky = dataclasses.replace(full_marks(), student="mallory\x1b[2J\x07")
    text = summary([sneaky], attention, OUT, 80)
    assert "\x1b" not in text and "\x07" not in text and "mallory" in text


def test_every_status_has_a_mark() -> None:
    assert len(set(MARKS.values())) == len(MARKS) and MARKS[next(iter(MARKS))] == ""


@pytest.mark.parametrize("short, expected", [
    ("a very long title", "exercises.0.short"),
    (" padded", "exercises.0.short"),
])
def test_short_is_checked_by_the_schema(tmp_path: Path, short: str, expected: str) -> None:
    path = tmp_path / "assignment.yaml"
    path.write_text(ATTENTION.read_text().replace("  short: shapes", f"  short: '{short}'"))
    (tmp_path / "public").symlink_to(ATTENTION.parent / "public")
    with pytest.raises(AssignmentSchemaError) as info:
        assignment_mod.load(path, require_hidden=False)
    assert info.value.key == expected


def test_two_exercises_cannot_share_a_short_title(tmp_path: Path) -> None:
    path = tmp_path / "assignment.yaml"
    path.write_text(ATTENTION.read_text().replace("  short: core", "  short: shapes"))
    (tmp_path / "public").symlink_to(ATTENTION.parent / "public")
    with pytest.raises(AssignmentSchemaError, match="short title 'shapes' appears twice"):
        assignment_mod.load(path, require_hidden=False)


# `grader check`'s table


@pytest.mark.parametrize("width", (200, 80, 50))
def test_check_table_fits_and_wraps_titles_whole(width: int) -> None:
    result = buggy()
    lines = format_check_table(result, color=False, width=width).splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["exercise"])
    end = next(i for i, line in enumerate(lines) if line.startswith("total"))
    table = lines[start:end + 1]
    assert max(len(line) for line in table) <= width
    names = " ".join(re.split(r"\s{2,}", line)[0] for line in table[2:-2])
    for ex in result.exercises:
        assert ex.title in names  # wrapped at spaces, whole and in order
    assert any(line.split()[-2:] == ["0/15", "failed"] for line in table)
    assert table[-1].split() == ["total", "68/100"]


def test_check_table_wraps_a_long_title_under_itself() -> None:
    lines = format_check_table(buggy(), color=False, width=50).splitlines()
    i = lines.index(next(line for line in lines if line.startswith("Scaled dot-product")))
    assert lines[i].split()[-2:] == ["8/20", "partial"]
    assert lines[i + 1] == "attention"


def test_check_table_wraps_a_long_status_too() -> None:
    """Written answers `check` cannot score have a status of several words."""
    r = buggy()
    answer = results.TestResult("Why scale by sqrt(head_dim)?", 0, 0, True, test_id="question:quiz.q2")
    quiz = dataclasses.replace(r.exercises[-1], score=0, max_score=0, tests=(answer,))
    r = dataclasses.replace(r, exercises=(*r.exercises[:-1], quiz))
    wide = format_check_table(r, color=False, width=200)
    status = next(line for line in wide.splitlines() if line.startswith("Quiz")).split("  ")[-1]
    assert len(status.split()) > 1
    lines = format_check_table(r, color=False, width=50).splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("total"))
    assert max(len(line) for line in lines[:end + 1]) <= 50
    at = next(i for i, line in enumerate(lines) if line.startswith("Quiz"))
    column = lines[at].index(status.split()[0])
    wrapped = [lines[at][column:]] + [line[column:] for line in lines[at + 1:end - 1]]
    assert " ".join(part.strip() for part in wrapped) == status


def test_check_messages_wrap_at_spaces() -> None:
    """Prose wraps (banner, exercise titles, messages); evidence (numbers, code) does not."""
    text = format_check_table(grader_failure(), color=False, width=50)
    assert text.startswith("GRADER FAILURE, NOT A ZERO")
    assert max(len(line) for line in text.splitlines()) <= 50


# the real CLI


def _grade(out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", "grade", str(ROOT / "examples" / "submissions"),
         "--assignment", str(ATTENTION), "--out", str(out), "--jobs", "2", "--quiet"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples graded once; later runs keep these results and only print."""
    out = tmp_path_factory.mktemp("summary-reports")
    done = _grade(out, dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.parametrize("columns", [200, 80, 50])
def test_cli_prints_a_table_that_fits_columns(graded: Path, attention: Assignment, columns: int) -> None:
    done = _grade(graded, {**os.environ, "COLUMNS": str(columns)})
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= columns
    _assert_no_cut_words(done.stdout, attention.exercises)
    ids = [ex.id for ex in attention.exercises]
    shorts = [ex.short or ex.id for ex in attention.exercises]
    expected_head = {200: ["student", "total", *ids], 80: ["student", "total", *shorts],
                     50: ["an_nguyen", "100/100"]}
    assert lines[0].split() == expected_head[columns]
    assert re.search(r"^5 submission\(s\); reports in\b", done.stdout, re.M)
    if columns == 50:
        assert "  attention_core  11.11/20  partial" in lines  # dung_pham's


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("columns", [80, 60])
def test_cli_in_a_real_terminal(graded: Path, attention: Assignment, columns: int) -> None:
    """No $COLUMNS: the width comes from the terminal itself, a detached tmux window (at
    60 columns the blocks, where the 100-column fallback would print a table)."""
    socket = f"grader-test-{uuid.uuid4().hex[:8]}"
    command = (f"env -u COLUMNS -u LINES {sys.executable} -m grader.cli grade "
               f"{ROOT / 'examples' / 'submissions'} --assignment {ATTENTION} --out {graded} "
               "--quiet; echo __done__; sleep 60")
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", str(columns), "-y", "100", "-s", "t", command],
                   cwd=ROOT, check=True, timeout=30)
    try:
        deadline = time.monotonic() + 300
        screen = ""
        while "__done__" not in screen and time.monotonic() < deadline:
            time.sleep(0.5)
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-J", "-t", "t"],  # -J: joined as printed
                                    capture_output=True, text=True, timeout=30).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=30)
    assert "__done__" in screen, screen
    lines = screen.splitlines()
    assert max(len(line) for line in lines) <= columns
    _assert_no_cut_words(screen, attention.exercises)
    if columns == 80:
        head = next(line for line in lines if line.startswith("student"))
        assert head.split() == ["student", "total", *(ex.short or ex.id for ex in attention.exercises)]
    else:
        assert lines[0].split() == ["an_nguyen", "100/100"]
        assert ["attention_core", "11.11/20", "partial"] in [line.split() for line in lines]
