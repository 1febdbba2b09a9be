"""report.html and index.html, read as HTML: content, visibility rules, no injection."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
from html.parser import HTMLParser

import pytest
from result_samples import (
    IMG,
    SCRIPT,
    all_samples,
    buggy,
    evil,
    full_marks,
    grader_failure,
    notebook_error,
    unloadable,
)

from grader.report.charts import color_for, heatmap_view, histogram_bars
from grader.report.formatting import fmt_points, fmt_value, plain_text
from grader.report.html import render_index, render_report
from grader.results import Evidence, SubmissionResult
from grader.results import TestResult as _TestResult


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text inside <script> elements."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)

    def named(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs in self.tags if tag == name]


def assert_inert(html: str, scripts: int) -> Tags:
    """No markup a student could have injected, and nothing that fetches."""
    tags = Tags(html)
    assert len(tags.named("script")) == scripts
    assert all(attrs.get("src") is None for attrs in tags.named("script"))
    for bad in ("img", "iframe", "object", "embed", "base", "form", "video", "audio"):
        assert not tags.named(bad), bad
    for tag, attrs in tags.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src", "action", "xlink:href") and value:
                assert not re.match(r"^\s*(https?:|//|javascript:)", value, re.IGNORECASE), (
                    tag,
                    value,
                )
    assert [a.get("href") for a in tags.named("link")] == ["data:,"]
    return tags


@pytest.mark.parametrize("result", all_samples(), ids=lambda r: r.student[:8])
def test_report_is_inert_and_complete(result: SubmissionResult) -> None:
    html = render_report(result)
    assert_inert(html, scripts=0)
    assert "script-src 'none'" in html.replace("&#39;", "'")
    for ex in result.exercises:
        assert f'data-exercise="{ex.id}"' in html
    assert "hidden tests" not in html or any(
        t.visibility == "hidden" for ex in result.exercises for t in ex.tests
    )


def test_full_marks_shows_the_total_and_every_pass() -> None:
    html = render_report(full_marks())
    assert '<span class="big">100</span><span class="of"> / 100</span>' in html
    assert html.count('class="badge st-passed"') == 2 * 8  # summary table + cards
    assert "Graded 2026-03-02T10:15:00+00:00" in html and "a1a1a1a1a1a1" in html
    assert "torch 2.13.0+cpu" in html and "sandbox bwrap" in html


def test_mismatch_evidence_is_a_table_with_both_slices() -> None:
    html = render_report(buggy())
    assert html.count('class="mismatch"') == 2  # not the message_only test's
    for text in ("max abs error", "0.3125", "[0, 1, 2, 3]", "expected [0, 1]", "got [0, 1]"):
        assert text in html
    assert '<td class="differs">0.5625</td>' in html and '<td class="differs">0.4</td>' in html
    assert "<td>0.25</td>" in html


def test_heatmaps_are_inline_svg_with_masked_cells_marked() -> None:
    html = render_report(buggy())
    tags = Tags(html)
    heatmaps = [a for a in tags.named("svg") if a.get("class") == "heatmap"]
    assert len(heatmaps) == 4  # padding: yours + reference; causal: yours + reference
    assert html.count('class="cell masked leaked"') == 6 * 2 + 11  # PAD columns; causal off by one
    assert "12 masked cells got weight" in html and "11 masked cells got weight" in html
    assert "masked: must get weight 0" in html
    assert len(tags.named("lineargradient")) == 2  # one color scale per picture
    ids = [a["id"] for _, a in tags.tags if a.get("id")]
    assert len(ids) == len(set(ids))


def test_visibility_hidden_counted_message_only_without_name_or_evidence() -> None:
    html = render_report(buggy())
    assert "secret shape sweep" not in html and "hidden failure" not in html
    assert "hidden tests: 1/2 passed (4 / 4 points)" in html
    assert "hidden tests: 1/1 passed (5 / 5 points)" in html
    assert "Check how heads are split and merged back." in html
    assert "multi-head output matches" not in html


def test_output_truncated_is_said() -> None:
    html = render_report(buggy())
    assert "output truncated" in html and "debug: q.shape=[2, 4, 5, 16]" in html


def test_notebook_cell_error_shows_number_and_clean_traceback() -> None:
    html = render_report(notebook_error())
    assert "Cell [3] raised <code>NameError</code>: name &#39;mha&#39; is not defined" in html
    assert "----&gt; 3 out = mha(x)" in html
    assert "\x1b" not in html
    assert "the notebook was graded" in html


def test_unloadable_shows_every_exercise_as_error_with_why() -> None:
    html = render_report(unloadable())
    assert html.count('class="badge st-error"') == 2 * 7
    assert html.count('class="badge st-timeout"') == 2
    assert html.count("could not be imported: SyntaxError") == 7 + 1  # cards + notice
    assert "Nothing could be loaded" in html


def test_grader_failure_is_not_a_zero() -> None:
    html = render_report(grader_failure())
    assert "Grader failure, not a zero" in html and "not graded" in html
    assert '<span class="big">0</span>' not in html


def test_student_text_is_shown_as_text() -> None:
    html = render_report(evil())
    assert_inert(html, scripts=0)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert SCRIPT not in html and IMG not in html


def _class(n: int) -> list[SubmissionResult]:
    out = []
    for i in range(n):
        r = buggy(f"student{i:02d}")
        ex = list(r.exercises)
        core = ex[1]
        t0 = dataclasses.replace(
            core.tests[0], message=core.tests[0].message.replace("3 of", f"{i} of")
        )
        ex[1] = dataclasses.replace(core, tests=(t0, *core.tests[1:]))
        out.append(dataclasses.replace(r, exercises=tuple(ex)))
    return out


def test_index_counts_common_failures_across_different_numbers() -> None:
    html = render_index([*_class(4), full_marks(), unloadable()])
    assert re.search(
        r'<td class="num">4</td><td>scaled_dot_product_attention matches the reference</td>', html
    )
    assert re.search(r'<td class="num">1</td><td>\(whole exercise\)</td>', html)
    assert "hidden failure" in html  # the instructor sees hidden tests' messages


def test_index_pass_rates_histogram_and_links() -> None:
    results = [full_marks(), buggy(), unloadable(), grader_failure(), evil()]
    html = render_index(results)
    tags = assert_inert(html, scripts=1)
    hrefs = [a["href"] for a in tags.named("a") if (a.get("href") or "").endswith("report.html")]
    assert hrefs == [
        "%3Cscript%3Ealert%281%29%3C%2Fscript%3E/report.html",
        "alice/report.html", "bob/report.html", "dave/report.html", "erin/report.html",
    ]  # fmt: skip
    assert "1 not graded (grader failure, not a zero)" in html
    assert "grader failure, not a zero</span>" in html
    bars = [a for tag, a in tags.tags if tag == "rect" and a.get("rx") == "3"]
    assert len(bars) == 10
    for title in ("1 student scored 90–100 %", "1 student scored 80–89 %",
                  "1 student scored 60–69 %", "1 student scored 0–9 %"):  # fmt: skip
        assert title in html  # erin (grader failure) is in no bin
    assert "1/4" in html  # attention_core: alice passed; bob, dave, evil did not
    assert '<th data-sort="num" class="num" id="score-header">' in html


def test_index_script_is_the_only_one_and_its_hash_is_in_the_policy() -> None:
    html = render_index([full_marks(), evil()])
    tags = Tags(html)
    (script,) = tags.scripts
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src &#39;sha256-{digest}&#39;" in html


def test_index_custom_href() -> None:
    html = render_index([full_marks()], report_href=lambda s: f"reports/{s}.html")
    assert 'href="reports/alice.html"' in html


def test_index_of_nobody_renders() -> None:
    html = render_index([])
    assert '0</span><span class="of"> submissions' in html


def test_formatting_helpers() -> None:
    assert [fmt_points(x) for x in (8, 7.5, 2.3333, 0.0)] == ["8", "7.5", "2.33", "0"]
    assert fmt_value(None) == "—" and fmt_value(float("inf")) == "inf"
    assert fmt_value([0.123456, "x"]) == "[0.1235, x]"
    assert plain_text(["\x1b[31mA\x1b[0m", "b\x07"]) == "A\nb"


def test_color_scale_and_histogram() -> None:
    assert color_for(0.0) == "#440154" and color_for(1.0) == "#fde725"
    assert color_for(float("nan")) == "#c9ced6"
    h = heatmap_view("x", {"title": "t", "panels": [{"label": "a", "matrix": [[-2.0, 2.0]]}]})
    assert (h.vmin, h.vmax) == ("-2", "2") and not h.has_mask
    bars = histogram_bars([100.0, 95.0, 0.0, 45.5])
    assert [b.count for b in bars] == [1, 0, 0, 0, 1, 0, 0, 0, 0, 2]


def test_ragged_or_broken_heatmap_data_still_renders() -> None:
    broken = _TestResult("t", 0, 1, False, "m")
    ev = [
        {"title": "ragged", "panels": [{"label": "a", "matrix": [[1.0], [0.5, None, "nan"]], "masked": [[True]]}]},
        {"title": "junk", "panels": ["not a panel", {"label": "b", "matrix": "nope"}]},
    ]  # fmt: skip

    t = dataclasses.replace(broken, evidence=tuple(Evidence("heatmaps", d) for d in ev))
    r = full_marks()
    ex = dataclasses.replace(r.exercises[0], tests=(t,))
    html = render_report(dataclasses.replace(r, exercises=(ex, *r.exercises[1:])))
    assert "ragged" in html and "junk" in html and "NaN" in html


def test_evidence_from_grader_testing_renders() -> None:
    """What the test-author helpers really produce (4-D tensors, NaN, masks) renders."""
    torch = pytest.importorskip("torch")
    from grader.testing import heatmap_panel, mismatch_evidence

    expected = torch.softmax(
        torch.randn(2, 4, 5, 5, generator=torch.Generator().manual_seed(0)), -1
    )
    got = expected.clone()
    got[1, 2, 3, 4] = float("nan")
    got[0, 1, 2, 0] += 0.5
    pad = torch.tensor([False, False, False, True, True]).expand(5, 5)
    panels = [
        heatmap_panel("your weights", got[0, 1], pad),
        heatmap_panel("reference", expected[0, 1]),
    ]
    ev = (
        mismatch_evidence("weights", got, expected),
        Evidence("heatmaps", {"title": "w", "panels": panels}),
    )
    r = full_marks()
    t = _TestResult("weights match", 0, 1, False, "they do not", evidence=ev)
    ex = dataclasses.replace(r.exercises[0], tests=(t,))
    html = render_report(dataclasses.replace(r, exercises=(ex, *r.exercises[1:])))
    assert "[1, 2, 3, 4]" in html and "expected [1, 2]" in html and ">nan<" in html
    assert html.count('class="heatmap"') == 2 and 'class="cell masked' in html


def test_unknown_visibility_is_hidden_in_the_report() -> None:
    r = buggy()
    ex = r.exercises[2]
    odd = dataclasses.replace(ex.tests[0], visibility={"after": "2099-01-01"})  # type: ignore[arg-type]
    r = dataclasses.replace(
        r, exercises=(*r.exercises[:2], dataclasses.replace(ex, tests=(odd,)), *r.exercises[3:])
    )
    html = render_report(r)
    assert "weights on PAD keys are 0" not in html and "hidden tests: 0/1 passed" in html


def test_a_load_failure_counts_once_per_exercise_in_the_overview():
    from grader.report.html import LOAD_FAILURE, render_index
    from grader.results import ExerciseResult, Status, SubmissionResult, TestResult

    why = "importing attention.py raised SyntaxError at line 85: expected ':'"
    tests = tuple(TestResult(name=f"check {i}", score=0, max_score=1, passed=False,
                             message=why, outcome="error", test_id=f"t{i}") for i in range(5))
    ex = ExerciseResult(id="attention_core", score=0, max_score=5, status=Status.ERROR,
                        tests=tests, message=why)
    result = SubmissionResult(student="em", assignment="attention", score=0, max_score=5,
                              exercises=(ex,))
    html = render_index([result])
    assert html.count(LOAD_FAILURE) == 1
    assert "check 3" not in html


# ------------------------------------------------- written answers waiting for review


def _with_written(r: SubmissionResult, flags: dict[str, bool | None]) -> SubmissionResult:
    """`r` whose quiz holds one written answer per question id, flagged as given."""
    from grader.results import ExerciseResult, Review, Status

    tests = tuple(
        _TestResult(name=f"{qid}: {SCRIPT}", score=0.5, max_score=1.0, passed=False,
                    message="covered: the Query. missing: the Key.", outcome="failed",
                    test_id=f"question:{qid}", needs_review=flag,
                    review=None if flag is None else Review(found=("the Query",), missed=("the Key",),
                                                            reasons=("near a negation",) if flag else ()))
        for qid, flag in flags.items())
    quiz = ExerciseResult("quiz", 0.5 * len(tests), float(len(tests)), Status.PARTIAL, tests, "Quiz")
    others = tuple(ex for ex in r.exercises if ex.id != "quiz")
    return dataclasses.replace(r, exercises=(*others, quiz),
                               score=sum(ex.score for ex in others) + quiz.score)


def test_report_says_a_person_will_review_each_flagged_answer() -> None:
    r = _with_written(full_marks(), {"quiz.q1": True, "quiz.q2": False, "quiz.q3": True})
    html = render_report(r)
    assert_inert(html, scripts=0)
    assert html.count('class="review-note"') == 2
    assert "A person will review this answer: 0.5 / 1 is a provisional score." in html
    assert "2 of your written answers will be reviewed by a person" in html
    assert "&lt;script&gt;" in html and SCRIPT not in html
    assert 'class="review-note"' not in render_report(_with_written(full_marks(), {"quiz.q1": False}))
    assert 'id="review-pending"' not in render_report(full_marks())


def test_an_override_ends_the_wait_and_undoing_it_brings_it_back() -> None:
    from grader.report.overrides import Override, apply_overrides, strip_overrides

    r = _with_written(full_marks(), {"quiz.q1": True, "quiz.q2": True})
    done = apply_overrides(r, [Override("alice", "quiz.q1", 1.0, "right, other words")])
    q1 = next(t for t in done.exercise("quiz").tests if t.test_id == "question:quiz.q1")
    assert q1.needs_review is False and q1.score == 1.0
    html = render_report(done)
    assert html.count('class="review-note"') == 1 and "1 of your written answers" in html
    assert "overridden by the instructor: right, other words" in html
    assert strip_overrides(done) == r


def test_index_counts_answers_waiting_for_review_per_question() -> None:
    flagged = _with_written(full_marks("ann"), {"quiz.q1": True, "quiz.q2": True})
    one = _with_written(full_marks("bao"), {"quiz.q1": True, "quiz.q2": False})
    none = _with_written(full_marks("cam"), {"quiz.q1": False, "quiz.q2": False})
    html = render_index([flagged, one, none, grader_failure()])
    tags = assert_inert(html, scripts=1)
    assert 'Written answers waiting for review: <span id="review-waiting">3</span> of 6' in html
    rows = re.findall(r'<tr data-question="([^"]+)"><td>.*?</td><td class="num">(\d+)</td>'
                      r'<td class="num">(\d+)</td></tr>', html)
    assert rows == [("quiz.q1", "2", "3"), ("quiz.q2", "1", "3")]
    assert "quiz.q1: &lt;script&gt;" in html
    hrefs = [a.get("href") for a in tags.named("a")]
    assert "#review-howto" in hrefs and 'id="review-howto"' in html
    assert "grader review --out" in html
    assert html.count('class="badge st-review">2 to review') == 1
    assert html.count('class="badge st-review">1 to review') == 1
    calm = render_index([none])
    assert 'id="review-waiting">0<' in calm and "review-howto" not in calm
    assert 'id="review-queue"' not in render_index([full_marks()])  # no written answers
