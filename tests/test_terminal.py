"""`grader check` output: a table, then what failed and why, in plain text."""

from __future__ import annotations

import dataclasses

from result_samples import (
    EXERCISES,
    buggy,
    evil,
    full_marks,
    grader_failure,
    notebook_error,
    unloadable,
)

from grader.report.terminal import format_check_table


def test_table_lists_every_exercise_with_score_and_status() -> None:
    text = format_check_table(buggy(), color=False)
    lines = text.splitlines()
    assert lines[2].split() == ["exercise", "score", "status"]
    for _, title, _ in EXERCISES:
        assert any(line.startswith(title) for line in lines)
    assert any(
        line.startswith("Padding mask") and line.split()[-2:] == ["0/15", "failed"]
        for line in lines
    )
    assert any(line.startswith("total") and line.endswith("68/100") for line in lines)


def test_failing_tests_show_name_message_hint_and_evidence() -> None:
    text = format_check_table(buggy(), color=False)
    assert "x scaled_dot_product_attention matches the reference  (0/8)" in text
    assert "Is the softmax taken over the key axis (dim=-1)?" in text  # the hint
    assert "max abs error 0.3125 at [0, 1, 2, 3]" in text
    assert "0.1375   0.5625" in text
    assert "!!" in text and "xx" in text  # PAD keys that got weight, next to the reference
    assert "bad arguments raise ValueError" not in text  # passed tests are in the table only


def test_hidden_and_message_only_follow_visibility() -> None:
    text = format_check_table(buggy(), color=False)
    assert "secret" not in text and "hidden failure" not in text
    assert "hidden tests: 1/2 passed" in text
    assert "Check how heads are split and merged back." in text
    assert "multi-head output matches" not in text
    assert text.count("max abs error 0.3125") == 2  # not the message_only test's evidence


def test_notebook_cell_error_has_its_number() -> None:
    text = format_check_table(notebook_error(), color=False)
    assert "cell [3] raised NameError: name 'mha' is not defined" in text
    assert "----> 3 out = mha(x)" in text
    assert "[error]" in text


def test_unloadable_says_why_for_each_exercise() -> None:
    text = format_check_table(unloadable(), color=False)
    assert text.count("could not be imported: SyntaxError") == 7 + 1
    assert "timeout" in text


def test_grader_failure_banner() -> None:
    text = format_check_table(grader_failure(), color=False)
    assert text.startswith("GRADER FAILURE, NOT A ZERO")
    assert "not graded" in text


def test_full_marks() -> None:
    text = format_check_table(full_marks(), color=False)
    assert text.rstrip().endswith("Every check shown here passed.")


def test_color_is_optional() -> None:
    assert "\x1b" not in format_check_table(buggy(), color=False)
    colored = format_check_table(buggy(), color=True)
    assert "\x1b[32mpassed\x1b[0m" in colored and "\x1b[31mfailed\x1b[0m" in colored


def test_student_text_cannot_drive_the_terminal() -> None:
    r = evil()
    ex = r.exercises[2]
    sneaky = dataclasses.replace(ex.tests[0], message="\x1b]0;pwned\x07\x1b[2Jcleared\r\x08")
    r = dataclasses.replace(
        r, exercises=(*r.exercises[:2], dataclasses.replace(ex, tests=(sneaky,)), *r.exercises[3:])
    )
    text = format_check_table(r, color=False)
    assert "\x1b" not in text and "\x07" not in text and "\x08" not in text and "\r" not in text
    assert "cleared" in text
    assert "<script>alert(1)</script>" in text  # plain text in a terminal is fine


def test_unknown_visibility_is_hidden() -> None:
    r = buggy()
    ex = r.exercises[2]
    odd = dataclasses.replace(ex.tests[0], visibility="after:2099-01-01")
    r = dataclasses.replace(
        r, exercises=(*r.exercises[:2], dataclasses.replace(ex, tests=(odd,)), *r.exercises[3:])
    )
    text = format_check_table(r, color=False)
    assert "weights on PAD keys are 0" not in text and "hidden tests: 0/1 passed" in text
