"""`--junit FILE` (or `--format junit`, OUT/junit.xml): JUnit XML for CI test viewers.

Layout: `<testsuites name=ASSIGNMENT>` holds one `<testsuite name=STUDENT>` per student
(its properties: score, max_score, gradable), and that one `<testcase>` per test with
`classname="STUDENT.EXERCISE"` (so viewers group a student's tests by exercise),
`name` the test's name and `time` its duration. A failed test has
`<failure message=...>`, one that errored or timed out `<error type="error|timeout">`.

Visibility as in the report, since CI shows this file to whoever opened the pull
request: a message_only test is named "a check whose details are withheld" and
carries its message only; an exercise's hidden tests are one testcase "hidden tests"
("n/m passed"). An exercise that could not run at all (no tests) is one testcase
"(whole exercise)" with its message; a grader failure is one `<error
type="grader-failure">`.

Characters XML 1.0 forbids (most control characters, lone surrogates) are removed;
everything else is escaped by ElementTree, so `]]>` or `<` in a message is plain text.
The file is written atomically.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from grader.report.files import write_text_atomic
from grader.report.formatting import fmt_points
from grader.report.visibility import WITHHELD, shown
from grader.report.writers import Context, Writer
from grader.results import EvidenceKind, ExerciseResult, Outcome, Status, SubmissionResult, TestResult

__all__ = ["JUnitWriter", "junit_xml", "xml_safe"]

INVALID_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: object) -> str:
    return INVALID_XML.sub("", str(text))


class JUnitWriter(Writer):
    name = "junit"

    def __init__(self, path: Path | None = None) -> None:
        self.path = path

    def finish(self, results: Sequence[SubmissionResult], ctx: Context) -> list[Path]:
        target = self.path or ctx.out / "junit.xml"
        return [write_text_atomic(target, junit_xml(results))]


def _element(tag: str, text: str = "", **attrs: object) -> ET.Element:
    el = ET.Element(tag, {k: xml_safe(v) for k, v in attrs.items()})
    if text:
        el.text = xml_safe(text)
    return el


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else ""


def _testcase(classname: str, name: str, seconds: float, problem: tuple[str, str, str] | None
              ) -> ET.Element:
    """problem: (failure | error, type, full message)."""
    case = _element("testcase", classname=classname, name=name, time=f"{seconds:.3f}")
    if problem is not None:
        tag, kind, message = problem
        case.append(_element(tag, message, message=_first_line(message) or kind, type=kind))
    return case


def _test_problem(t: TestResult, message: str) -> tuple[str, str, str] | None:
    if t.passed:
        return None
    if t.outcome in (Outcome.ERROR, Outcome.TIMEOUT):
        return ("error", str(t.outcome), message or str(t.outcome))
    return ("failure", "failed", message or "failed")


def _visible_text(t: TestResult) -> str:
    tracebacks = [str(ev.data.get("text", "")) for ev in t.evidence if ev.kind == EvidenceKind.TRACEBACK]
    return "\n\n".join([t.message, *tracebacks]).strip()


def _exercise_cases(student: str, ex: ExerciseResult) -> list[ET.Element]:
    classname, view = f"{student}.{ex.id}", shown(ex)
    cases = [_testcase(classname, t.name or t.test_id, t.duration_s, _test_problem(t, _visible_text(t)))
             for t in view.visible]
    cases += [_testcase(classname, WITHHELD, t.duration_s, _test_problem(t, t.message))
              for t in view.message_only]
    if view.hidden:
        n, passed = len(view.hidden), view.hidden_passed
        failed = ("failure", "failed", f"hidden tests: {passed}/{n} passed") if passed < n else None
        cases.append(_testcase(classname, "hidden tests", sum(t.duration_s for t in view.hidden), failed))
    if not ex.tests and Status(ex.status) is not Status.PASSED:
        kind = "timeout" if Status(ex.status) is Status.TIMEOUT else "error"
        cases.append(_testcase(classname, "(whole exercise)", 0.0,
                               ("error", kind, ex.message or Status(ex.status).value)))
    return cases


def _suite(r: SubmissionResult) -> ET.Element:
    if r.gradable:
        cases = [c for ex in r.exercises for c in _exercise_cases(r.student, ex)]
    else:
        cases = [_testcase(f"{r.student}.grader", "grader", 0.0, (
            "error", "grader-failure", "the grader itself failed on this submission: not a score"))]
    suite = _element("testsuite", name=r.student, **_counts(cases),
                     timestamp=r.provenance.graded_at if r.provenance else "")
    props = ET.SubElement(suite, "properties")
    for key, value in (("score", fmt_points(r.score)), ("max_score", fmt_points(r.max_score)),
                       ("gradable", str(r.gradable).lower())):
        props.append(_element("property", name=key, value=value))
    suite.extend(cases)
    if r.load.notices:
        suite.append(_element("system-out", "\n".join(r.load.notices)))
    return suite


def _counts(cases: Sequence[ET.Element]) -> dict[str, str]:
    return {
        "tests": str(len(cases)),
        "failures": str(sum(c.find("failure") is not None for c in cases)),
        "errors": str(sum(c.find("error") is not None for c in cases)),
        "skipped": "0",
        "time": f"{sum(float(c.get('time', '0')) for c in cases):.3f}",
    }


def junit_xml(results: Sequence[SubmissionResult]) -> str:
    suites = [_suite(r) for r in results]
    cases = [c for s in suites for c in s.iter("testcase")]
    root = _element("testsuites", name=next((r.assignment for r in results), "grader"), **_counts(cases))
    root.extend(suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
