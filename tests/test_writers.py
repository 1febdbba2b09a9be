"""Output formats (grader.report.writers): GitHub, JUnit, Gradescope, JSON lines.

Most tests feed hand-built results (result_samples.py) to one writer; the last ones run
the real CLI once on a small class whose code raises at known lines, then reuse its
reports (up to date, so nothing is graded twice) for each format.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from conftest import ATTENTION, ROOT, run_grader
from result_samples import (
    EXERCISE_IDS,
    all_samples,
    buggy,
    evil,
    full_marks,
    grader_failure,
    notebook_error,
)

from grader.errors import InternalError, UsageError
from grader.intake.discover import Submission
from grader.report import writers
from grader.report.writers import Context
from grader.report.writers.github import (
    Annotation,
    GitHubWriter,
    collect_annotations,
    escape_data,
    escape_property,
    md_text,
    summary_markdown,
)
from grader.report.writers.gradescope import GradescopeWriter, gradescope_results
from grader.report.writers.jsonl import json_line
from grader.report.writers.junit import JUnitWriter, junit_xml
from grader.report.writers.locate import answers_line, locate_test, notebook_line
from grader.results import Evidence, Status
from grader.results import TestResult as Checked  # a name pytest does not collect

CORPUS = ROOT / "tests" / "corpus"


def _ctx(tmp_path: Path, env: dict[str, str] | None = None, **kw: object) -> Context:
    return Context(out=tmp_path / "reports", exercise_ids=EXERCISE_IDS, env=env or {},
                   cwd=tmp_path, stdout=io.StringIO(), stderr=io.StringIO(), **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------ registry


def test_formats_are_chosen_by_name():
    assert writers.names() == ["github", "gradescope", "jsonl", "junit"]
    assert isinstance(writers.create("junit"), JUnitWriter)
    with pytest.raises(UsageError, match="unknown output format 'pdf'"):
        writers.create("pdf")
    chosen = writers.select(["github", "github", "junit"], Path("j.xml"))
    assert [w.name for w in chosen.writers] == ["github", "junit"]
    assert not chosen.stdout_is_taken and writers.select(["jsonl", "junit"]).stdout_is_taken
    with pytest.raises(UsageError, match="jsonl keeps stdout"):
        writers.select(["jsonl", "github"])


def test_one_failing_writer_does_not_stop_the_others(tmp_path):
    class Broken(writers.Writer):
        name = "broken"

        def finish(self, results, ctx):
            raise OSError(13, "Permission denied", "/nope")

    both = writers.Writers([Broken(), JUnitWriter(tmp_path / "j.xml")])
    with pytest.raises(UsageError, match="cannot write /nope"):
        both.finish([full_marks()], _ctx(tmp_path))
    assert (tmp_path / "j.xml").is_file()


# ------------------------------------------------------------------ github


def test_workflow_command_escaping_follows_github_rules():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    line = Annotation("error", "t: 1, 2", "m:\nx", "sub/attention.py", 7).command()
    assert line == "::error file=sub/attention.py,line=7,title=t%3A 1%2C 2::m:%0Ax"
    assert "\x1b" not in Annotation("error", "\x1b[31mred", "\x1b]0;title\x07m").command()


def _submission(folder: Path, code: str = "attention.py", answers: bool = True) -> Submission:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / code).write_text("x = 1\n")
    if answers:
        (folder / "answers.yaml").write_text("shape_reading:\n  output_shape: [2, 5, 64]\nquiz:\n  q1: a\n  q3: b\n")
    return Submission(folder.name, folder, folder / code if code.endswith(".py") else None,
                      folder / code if code.endswith(".ipynb") else None,
                      folder / "answers.yaml" if answers else None)


def test_annotations_respect_visibility_and_point_into_the_repository(tmp_path):
    sub = _submission(tmp_path / "repo" / "submissions" / "bob")
    ctx = _ctx(tmp_path, submissions={"bob": sub})
    found = collect_annotations([buggy()], ctx, tmp_path / "repo")
    errors = [a for a in found if a.level == "error"]
    assert errors and all(a.file == "submissions/bob/attention.py" and a.line == 1 for a in errors)
    titles = " ".join(a.title for a in errors)
    assert "scaled_dot_product_attention matches the reference" in titles
    assert "multi-head output matches" not in titles  # message_only: the name is withheld...
    assert any("a check whose details are withheld" in a.title and
               a.message == "Check how heads are split and merged back." for a in errors)  # ...the message not
    assert "secret" not in " ".join(a.title + a.message for a in found)  # hidden: never named
    notice = [a for a in found if a.level == "notice"]
    assert len(notice) == 1 and notice[0].message == "hidden tests: 2/3 passed"


def test_annotation_lines_come_from_the_students_traceback_and_answers(tmp_path):
    sub = _submission(tmp_path / "s" / "carl")
    tb = Evidence("traceback", {"title": "Your code raised", "text": (
        'Traceback (most recent call last):\n  File "attention.py", line 12, in forward\n'
        '    y = helper(x)\n  File "attention.py", line 40, in helper\n    1 / 0\n'
        'ZeroDivisionError: division by zero')})
    crash = Checked("forward works", 0, 2, False, "your code raised ZeroDivisionError",
                       outcome="error", evidence=(tb,))
    quiz = Checked("3. masks?", 0, 1, False, "misses the key points", test_id="question:quiz.q3")
    result = full_marks("carl")
    assert locate_test(result, crash, sub).line == 40
    assert locate_test(result, crash, sub, use_evidence=False).line == 1
    where = locate_test(result, quiz, sub)
    assert where.path == sub.answers and where.line == 5
    assert answers_line(sub.answers, "quiz.q9") == 3  # missing: its parent key
    assert locate_test(result, crash, None).path is None  # `grader report`: no files known


def test_notebook_cell_lines_map_to_the_ipynb_file(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title"), nbformat.v4.new_code_cell("import torch"),
                nbformat.v4.new_markdown_cell("text"), nbformat.v4.new_code_cell("a = 1\nb = 2\nc = a / 0")]
    path = tmp_path / "attention.ipynb"
    nbformat.write(nb, str(path))
    raw = path.read_text().splitlines()
    line = notebook_line(path, 2, 3)
    assert '"c = a / 0"' in raw[line - 1]
    assert notebook_line(path, 9, 1) == 1  # no such cell: line 1, never a wrong line


def test_step_summary_for_one_submission_shows_exercises_and_failures():
    text = summary_markdown([buggy()])
    assert "| exercise | score | status |" in text and "| Padding mask | 0 / 15 | ❌ failed |" in text
    assert "### What failed" in text and "max abs error 0.312" in text
    assert "_hidden tests passed: Scaled dot-product and multi-head attention 1/2_" in text
    assert "hidden failure" not in text and "secret" not in text
    assert "Check how heads are split" in text and "multi-head output matches" not in text


def test_step_summary_for_a_class_is_a_table_and_escapes_student_text():
    text = summary_markdown(all_samples())
    assert "| student | score | shape\\_reading |" in text
    assert "| erin | grader failure (not a zero) |" in text
    assert "<script>" not in text and "\\<script\\>" in md_text("<script>")
    one = summary_markdown([evil()])
    assert "<script>" not in one.split("```")[0]  # outside code fences, nothing is markup
    assert md_text("a | b\nc") == "a \\| b c"


def test_one_message_shared_by_many_tests_is_shown_once():
    why = "importing attention.py raised RuntimeError at line 3"
    tests = tuple(Checked(f"check {i}", 0, 1, False, why, outcome="error") for i in range(9))
    result = full_marks("zoe")
    ex = dataclasses.replace(result.exercises[1], tests=tests, score=0, status=Status.ERROR)
    text = summary_markdown([dataclasses.replace(result, exercises=(result.exercises[0], ex))])
    assert text.count(why) == 1 and "and 5 more with the same message" in text


def test_failure_messages_cannot_close_their_code_fence():
    from grader.report.writers.github import fenced

    block = fenced("```\n# Heading\n````")
    assert block.startswith("`````text\n") and block.endswith("\n`````")


def test_github_writer_appends_to_the_step_summary_or_says_where_it_wrote(tmp_path):
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    ctx = _ctx(tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert GitHubWriter().finish([buggy()], ctx) == [summary]
    assert summary.read_text().startswith("earlier step\n## bob: ")
    assert ctx.stdout.getvalue().startswith("::error ")  # type: ignore[attr-defined]
    plain = _ctx(tmp_path)
    assert GitHubWriter().finish([full_marks()], plain) == [tmp_path / "reports" / "summary.md"]
    assert "GITHUB_STEP_SUMMARY is not set" in plain.stderr.getvalue()  # type: ignore[attr-defined]


# ------------------------------------------------------------------ junit


def test_junit_is_valid_xml_with_one_suite_per_student(tmp_path):
    path = tmp_path / "out" / "junit.xml"
    JUnitWriter(path).finish(all_samples(), _ctx(tmp_path))
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and [s.get("name") for s in root] == [r.student for r in all_samples()]
    bob = next(s for s in root if s.get("name") == "bob")
    cases = bob.findall("testcase")
    assert {c.get("classname") for c in cases} == {f"bob.{i}" for i in EXERCISE_IDS}
    assert int(bob.get("tests")) == len(cases) and int(bob.get("failures")) == 6
    failing = next(c for c in cases if c.get("name") == "scaled_dot_product_attention matches the reference")
    assert "max abs error 0.312" in failing.find("failure").get("message")
    hidden = [c for c in cases if c.get("name") == "hidden tests"]
    assert [h.find("failure").get("message") for h in hidden if h.find("failure") is not None] == [
        "hidden tests: 1/2 passed"]
    assert "secret" not in path.read_text()
    erin = next(s for s in root if s.get("name") == "erin")
    assert erin.find("testcase/error").get("type") == "grader-failure"
    dave = next(s for s in root if s.get("name") == "dave")
    assert dave.find("testcase/error").get("type") == "error"  # nothing ran: (whole exercise)
    assert [p.name for p in path.parent.iterdir()] == ["junit.xml"]  # atomic: no temp file left


def test_junit_survives_control_characters_and_cdata_ends():
    nasty = "bad \x00\x08\x1b[31m ]]> <tag> & \ud800 \ufffe end"
    test = Checked(nasty, 0, 1, False, nasty, outcome="error",
                      evidence=(Evidence("traceback", {"text": nasty}),))
    result = full_marks("x\x01y")
    ex = dataclasses.replace(result.exercises[0], tests=(test,))
    result = dataclasses.replace(result, exercises=(ex, *result.exercises[1:]))
    root = ET.fromstring(junit_xml([result]).encode("utf-8"))
    error = root.find("testsuite/testcase/error")
    assert error.get("message") == "bad [31m ]]> <tag> &   end"
    assert root.find("testsuite").get("name") == "xy"


# ------------------------------------------------------------------ gradescope


def test_gradescope_results_follow_its_format_and_our_visibility():
    doc = gradescope_results(buggy())
    assert set(doc) >= {"score", "output", "tests", "stdout_visibility", "execution_time"}
    assert doc["score"] == buggy().score and doc["stdout_visibility"] == "hidden"
    assert {t["visibility"] for t in doc["tests"]} == {"visible", "hidden"}
    for t in doc["tests"]:
        assert set(t) >= {"name", "score", "max_score", "output", "visibility", "number", "tags"}
    withheld = [t for t in doc["tests"] if "withheld" in t["name"]]
    assert [t["output"] for t in withheld] == ["Check how heads are split and merged back."]
    hidden = [t for t in doc["tests"] if t["visibility"] == "hidden"]
    assert {t["name"].split(": ", 1)[1] for t in hidden} == {
        "secret shape sweep", "secret dtype sweep", "padding and causal masks combine"}
    assert "hidden tests: 1/2 passed" in doc["output"]
    assert abs(sum(t["score"] for t in doc["tests"]) - doc["score"]) < 1e-6


def test_gradescope_writes_per_student_and_where_gradescope_reads(tmp_path):
    results_dir = tmp_path / "autograder" / "results"
    ctx = _ctx(tmp_path, env={"GRADESCOPE_RESULTS_DIR": str(results_dir)})
    writer = GradescopeWriter()
    assert writer.student(full_marks(), ctx) == [tmp_path / "reports" / "alice" / "gradescope.json"]
    assert writer.finish([full_marks()], ctx) == [results_dir / "results.json"]
    assert json.loads((results_dir / "results.json").read_text())["score"] == 100
    with pytest.raises(UsageError, match="one submission is graded per run"):
        writer.finish([full_marks(), buggy()], ctx)
    (results_dir / "results.json").unlink()
    assert writer.student(grader_failure(), ctx) == []
    with pytest.raises(InternalError, match="not a zero"):
        writer.finish([grader_failure()], ctx)
    assert not (results_dir / "results.json").exists()
    assert writer.finish([full_marks()], _ctx(tmp_path)) == []  # not inside Gradescope


# ------------------------------------------------------------------ jsonl


def test_json_line_is_one_line_of_scores():
    line = json_line(notebook_error(), Path("reports"))
    assert "\n" not in line
    doc = json.loads(line)
    assert doc["student"] == "carol" and doc["gradable"] is True
    assert [e["id"] for e in doc["exercises"]] == list(EXERCISE_IDS)
    assert doc["result_json"] == "reports/carol/result.json"


# ------------------------------------------------------------------ the real CLI


def _raising(source: str, line_prefix: str) -> tuple[str, int]:
    """`source` with sdpa_attention redefined to call a helper that raises; the helper's
    raise line number (1-based) in the returned text."""
    extra = ("\n\ndef _helper(q):\n    raise ZeroDivisionError('boom')\n\n\n"
             "def sdpa_attention(q, k, v, mask=None, causal=False, dropout_p=0.0):\n"
             "    return _helper(q)\n")
    text = source.rstrip("\n") + extra
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(line_prefix))
    return text, line


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A repository with three submissions, graded once: a module and a notebook whose
    sdpa_attention raises at a known line, and a correct module."""
    repo = tmp_path_factory.mktemp("repo")
    subs = repo / "submissions"
    for case, name in (("correct_qkv_module", "good"), ("correct_qkv_module", "mod_raises"),
                       ("correct_qkv_notebook", "nb_raises")):
        shutil.copytree(CORPUS / case, subs / name, ignore=shutil.ignore_patterns("expected.yaml"))
    module = subs / "mod_raises" / "attention.py"
    text, module_line = _raising(module.read_text(), "    raise ZeroDivisionError")
    module.write_text(text)
    nb_path = subs / "nb_raises" / "attention.ipynb"
    nb = nbformat.read(str(nb_path), as_version=4)
    cell, _ = _raising("", "    raise")
    nb.cells.append(nbformat.v4.new_code_cell(cell.strip("\n")))
    nbformat.write(nb, str(nb_path))
    nb_line = next(i for i, ln in enumerate(nb_path.read_text().splitlines(), 1)
                   if "raise ZeroDivisionError" in ln)
    out = repo / "reports"
    junit = repo / "junit.xml"
    done = run_grader("grade", str(subs), "--assignment", str(ATTENTION), "--out", str(out),
                      "--jobs", "2", "--format", "jsonl", "--junit", str(junit), "--fail-under", "95")
    return {"repo": repo, "subs": subs, "out": out, "junit": junit, "done": done,
            "module_line": module_line, "nb_line": nb_line}


def test_jsonl_mode_prints_only_json_lines_and_fail_under_sets_the_exit_code(graded_class):
    done = graded_class["done"]
    assert done.returncode == 1, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    docs = [json.loads(line) for line in lines]  # nothing but JSON on stdout
    assert sorted(d["student"] for d in docs) == ["good", "mod_raises", "nb_raises"]
    scores = {d["student"]: d["score"] for d in docs}
    assert scores["good"] == 100 and scores["mod_raises"] == 90 and scores["nb_raises"] == 90
    assert "--fail-under 95: mod_raises scored 90/100" in done.stderr
    assert "3 submission(s)" in done.stderr  # the summary went to stderr
    root = ET.parse(graded_class["junit"]).getroot()
    assert [s.get("name") for s in root] == ["good", "mod_raises", "nb_raises"]


def test_github_annotations_point_at_the_line_that_raised(graded_class, tmp_path):
    repo, summary = graded_class["repo"], tmp_path / "summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(repo)}
    stored = (graded_class["out"] / "nb_raises" / "result.json").read_text()
    done = _grade(graded_class, env, "--format", "github", "--format", "gradescope", "--fail-under", "90")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (graded_class["out"] / "nb_raises" / "result.json").read_text() == stored  # not regraded
    errors = [ln for ln in done.stdout.splitlines() if ln.startswith("::error ")]
    where = {ln.split(",title=")[0] for ln in errors}
    assert where == {f"::error file=submissions/mod_raises/attention.py,line={graded_class['module_line']}",
                     f"::error file=submissions/nb_raises/attention.ipynb,line={graded_class['nb_line']}"}
    assert all("ZeroDivisionError" in ln for ln in errors)
    text = summary.read_text()
    assert "| student | score |" in text and "| mod\\_raises | 90 / 100 |" in text
    gs = json.loads((graded_class["out"] / "nb_raises" / "gradescope.json").read_text())
    assert gs["score"] == 90


def _grade(graded: dict[str, object], env: dict[str, str], *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(graded["subs"]),
                           "--assignment", str(ATTENTION), "--out", str(graded["out"]), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
