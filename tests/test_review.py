"""`grader review`: grouping written answers, saving decisions, the local server, and the
page itself in headless Chromium (a real class graded, two groups graded by keyboard)."""

from __future__ import annotations

import csv
import dataclasses
import http.client
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import ATTENTION, ROOT, run_grader

from grader.report.overrides import read_overrides
from grader.report.writers import Context
from grader.report.writers.reports import ReportsWriter, read_reports
from grader.results import ExerciseResult, Review, Status, SubmissionResult, from_json_dict, to_json_dict
from grader.results import TestResult as _TestResult
from grader.review.groups import (
    Answer,
    answer_texts,
    collect,
    decisions,
    group_answers,
    normalise,
    save_decision,
)
from grader.review.server import ReviewState, make_server

# ------------------------------------------------------------------ grouping


def answer(student: str, text: str | None, score: float = 1.0, found: tuple[str, ...] = ("a",),
           question: str = "quiz.q1", flagged: bool = False) -> Answer:
    return Answer(student, question, "1. Q?", text, score, 1.0, flagged, found=found)


def by_students(groups: list) -> list[set[str]]:
    return [set(g.students) for g in groups]


def test_normalise_case_accents_and_spacing() -> None:
    assert normalise("  Tương   LAI\n\tđược Đúng ") == "tuong lai duoc dung"
    assert normalise("ＱＵＥＲＹ") == "query"  # NFKD folds full-width letters
    assert normalise("Chặn token tương lai") == normalise("chan TOKEN  tuong lai")


def test_identical_after_normalising_share_a_group() -> None:
    groups = group_answers([
        answer("a", "Causal mask chặn token tương lai."),
        answer("b", "causal mask chan token tuong lai."),
        answer("c", "CAUSAL  MASK   CHẶN\nTOKEN TƯƠNG LAI."),
        answer("d", "Something else entirely, about padding."),
    ])
    assert by_students(groups) == [{"a", "b", "c"}, {"d"}]
    assert len(groups[0].variants) == 3  # every wording is listed


def test_near_duplicates_join_but_negations_numbers_and_scores_do_not() -> None:
    base = "the causal mask hides the future tokens from each position during training"
    groups = group_answers([
        answer("a", base),
        answer("b", base + "!"),                                   # near-identical
        answer("c", base.replace("future", "futur")),              # a typo
        answer("d", base.replace("hides", "does not hide")),       # a negation
        answer("e", base.replace("each", "no")),                   # another negation
        answer("f", base + " 4", score=1.0),                       # a number differs
        answer("g", base + ".", score=0.5),                        # another provisional score
        answer("h", base + ".", found=("b",)),                     # other concepts found
        answer("i", "khong " + base),                              # Vietnamese negation
    ])
    sets = by_students(groups)
    assert {"a", "b", "c"} in sets
    for alone in "defghi":
        assert any(s == {alone} or (alone in s and s <= {"g", "h"}) for s in sets), (alone, sets)
    assert not any({"a", x} <= s for s in sets for x in "defghi")


def test_unknown_text_stays_alone_and_flagged_groups_come_first() -> None:
    groups = group_answers([
        answer("a", "same"), answer("b", "same"), answer("c", "other", flagged=True),
        answer("d", None), answer("e", None),
    ])
    assert by_students(groups)[0] == {"c"}  # flagged first
    assert {"d"} in by_students(groups) and {"e"} in by_students(groups)


def test_group_ids_are_stable_and_per_question() -> None:
    one = group_answers([answer("a", "x"), answer("b", "x")])
    two = group_answers([answer("b", "x"), answer("a", "x")])
    other = group_answers([answer("a", "x", question="quiz.q2"), answer("b", "x", question="quiz.q2")])
    assert one[0].id == two[0].id != other[0].id


# ------------------------------------------------------------------ saving


def test_save_decision_writes_what_overrides_reads_and_keeps_other_entries(tmp_path: Path) -> None:
    path = tmp_path / "overrides.yaml"
    path.write_text(yaml.safe_dump({"students": {
        "alice": {"causal_mask": {"points": 12, "comment": "office hours"},
                  "question:quiz.q1": {"points": 0}},
        "zoe": {"quiz.q2": {"points": 1}},
    }}))
    save_decision(path, "quiz.q1", ["alice", "bob"], 0.5, "partly: Key's role missing")
    got = {(o.student, o.key): (o.points, o.comment) for o in read_overrides(path)}
    assert got == {
        ("alice", "causal_mask"): (12.0, "office hours"),
        ("alice", "quiz.q1"): (0.5, "partly: Key's role missing"),  # one spelling of the key
        ("bob", "quiz.q1"): (0.5, "partly: Key's role missing"),
        ("zoe", "quiz.q2"): (1.0, ""),
    }
    save_decision(path, "quiz.q1", ["alice", "bob"], None)
    got = {(o.student, o.key) for o in read_overrides(path)}
    assert got == {("alice", "causal_mask"), ("zoe", "quiz.q2")}


def test_save_decision_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "overrides.yaml"
    save_decision(path, "quiz.q1", ["alice"], 1, "first")
    before = path.read_text()
    replaced: list[tuple[str, str]] = []
    real = os.replace

    def record(src: str, dst: str) -> None:
        replaced.append((str(src), str(dst)))
        real(src, dst)

    monkeypatch.setattr(os, "replace", record)
    save_decision(path, "quiz.q1", ["alice"], 0, "second")
    assert len(replaced) == 1 and replaced[0][1] == str(path)
    assert Path(replaced[0][0]).parent == tmp_path  # a temporary file beside it, then renamed

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    after_second = path.read_text()
    assert after_second != before
    with pytest.raises(Exception, match="No space left"):
        save_decision(path, "quiz.q1", ["alice"], 0.5, "third")
    assert path.read_text() == after_second  # the old file, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["overrides.yaml"]  # no temp left


# ------------------------------------------------------------------ a class without grading


QUESTIONS = ("quiz.q1", "quiz.q3")


def quiz_result(student: str, scores: dict[str, tuple[float, bool]]) -> SubmissionResult:
    tests = tuple(
        _TestResult(name=f"{q} prompt", score=s, max_score=1.0, passed=s >= 1.0,
                   message="covers the key points." if s >= 1 else "missing: the Key.",
                   outcome="passed" if s >= 1 else "failed", test_id=f"question:{q}",
                   needs_review=flag, review=Review(found=("Query",), missed=() if s >= 1 else ("Key",),
                                                    reasons=("near a negation",) if flag else ()))
        for q, (s, flag) in scores.items())
    quiz = ExerciseResult("quiz", sum(t.score for t in tests), float(len(tests)),
                          Status.PASSED if all(t.passed for t in tests) else Status.PARTIAL, tests, "Quiz")
    return SubmissionResult(student, "attention", quiz.score, quiz.max_score, (quiz,))


@pytest.fixture
def small_class(tmp_path: Path) -> tuple[Path, Path]:
    """reports/ and submissions/ of three students, written directly (no grading)."""
    out, subs = tmp_path / "reports", tmp_path / "subs"
    answers = {
        "ann": ("Query tìm, Key được so khớp, Value được cộng lại.", "<b>masks</b> & <script>alert(1)</script>"),
        "bao": ("query tim, key duoc so khop,  value duoc cong lai.", "padding hides PAD"),
        "cam": ("Something else", "padding hides PAD"),
    }
    scores = {"ann": {"quiz.q1": (1.0, False), "quiz.q3": (0.5, True)},
              "bao": {"quiz.q1": (1.0, False), "quiz.q3": (0.5, True)},
              "cam": {"quiz.q1": (0.0, False), "quiz.q3": (0.5, True)}}
    results = [quiz_result(s, scores[s]) for s in answers]
    ctx = Context(out=out, exercise_ids=("quiz",))
    writer = ReportsWriter()
    for r in results:
        writer.student(r, ctx)
    writer.finish(results, ctx)
    for s, (q1, q3) in answers.items():
        (subs / s).mkdir(parents=True)
        (subs / s / "answers.yaml").write_text(yaml.safe_dump({"quiz": {"q1": q1, "q3": q3}},
                                                              allow_unicode=True))
    return out, subs


def test_texts_come_from_answers_yaml_and_groups_form(small_class: tuple[Path, Path]) -> None:
    out, subs = small_class
    results = read_reports(out)
    texts = answer_texts(results, subs)
    assert texts[("bao", "quiz.q1")] == "query tim, key duoc so khop,  value duoc cong lai."
    groups = group_answers(collect(results, texts))
    assert [(g.question, set(g.students)) for g in groups] == [
        ("quiz.q1", {"ann", "bao"}), ("quiz.q1", {"cam"}),
        ("quiz.q3", {"bao", "cam"}), ("quiz.q3", {"ann"}),
    ]
    assert answer_texts(results, None)[("ann", "quiz.q1")] is None  # written before texts were kept


def test_the_text_result_json_keeps_is_used_without_the_submissions(tmp_path: Path) -> None:
    """A result that keeps the answer it graded (`Review.answer`) needs no answers.yaml,
    and the text graded wins over a file edited since."""
    result = quiz_result("dan", {"quiz.q1": (1.0, False)})
    test = result.exercises[0].tests[0]
    kept = dataclasses.replace(test, review=dataclasses.replace(test.review, answer="Q hỏi, K khớp, V góp."))
    result = dataclasses.replace(result, exercises=(dataclasses.replace(result.exercises[0], tests=(kept,)),))
    back = from_json_dict(json.loads(json.dumps(to_json_dict(result))))
    assert answer_texts([back], None) == {("dan", "quiz.q1"): "Q hỏi, K khớp, V góp."}
    (tmp_path / "dan").mkdir()
    (tmp_path / "dan" / "answers.yaml").write_text("quiz: {q1: edited later}\n")
    assert answer_texts([back], tmp_path)[("dan", "quiz.q1")] == "Q hỏi, K khớp, V góp."


@pytest.fixture
def server(small_class: tuple[Path, Path]) -> Iterator[tuple[str, int, str, Path]]:
    out, subs = small_class
    state = ReviewState(out, out.parent / "overrides.yaml", subs)
    srv, url = make_server(state, 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    port = srv.server_address[1]
    token = url.rstrip("/").rsplit("/", 1)[1]
    try:
        yield url, port, token, out
    finally:
        srv.shutdown()
        srv.server_close()


def request(port: int, method: str, path: str, headers: dict[str, str] | None = None,
            body: bytes | None = None, host: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    if body is not None:
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def decide_body(state_groups: list, students: set[str], points: float | None, comment: str) -> bytes:
    gid = next(g.id for g in state_groups if set(g.students) == students)
    return json.dumps({"group": gid, "points": points, "comment": comment}).encode()


def test_server_guards_every_request(server: tuple[str, int, str, Path], small_class: tuple[Path, Path]) -> None:
    url, port, token, out = server
    status, page = request(port, "GET", f"/{token}/")
    assert status == 200
    html = page.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    assert html.count("<script>") == 1
    assert request(port, "GET", "/")[0] == 403
    assert request(port, "GET", f"/{token[:-1]}x/")[0] == 403
    assert request(port, "GET", f"/{token}/", host="evil.example:80")[0] == 421  # DNS rebinding
    for path in ("style.css", "review.js", "../reports/ann/result.json", "%2e%2e/overrides.yaml",
                 "decide"):
        assert request(port, "GET", f"/{token}/{path}")[0] == 404, path
    assert request(port, "GET", f"/{token}")[0] == 308
    groups = ReviewState(out, out.parent / "overrides.yaml", small_class[1]).groups
    body = decide_body(groups, {"bao", "cam"}, 1, "ok")
    json_type = {"Content-Type": "application/json"}
    same = {**json_type, "Origin": f"http://127.0.0.1:{port}"}
    assert request(port, "POST", f"/{token}/decide", json_type, body)[0] == 403  # no Origin
    assert request(port, "POST", f"/{token}/decide", {**json_type, "Origin": "http://evil.example"},
                   body)[0] == 403
    assert request(port, "POST", f"/{token}/decide", {**same, "Sec-Fetch-Site": "cross-site"},
                   body)[0] == 403
    assert request(port, "POST", f"/{token}/decide",
                   {"Content-Type": "text/plain", "Origin": same["Origin"]}, body)[0] == 415
    assert request(port, "POST", "/nope/decide", same, body)[0] == 403
    assert not (out.parent / "overrides.yaml").exists()  # nothing refused was saved
    too_high = decide_body(groups, {"bao", "cam"}, 2, "")
    status, data = request(port, "POST", f"/{token}/decide", same, too_high)
    assert status == 400 and b"between 0 and 1" in data
    status, data = request(port, "POST", f"/{token}/decide", same, body)
    assert status == 200, data
    assert json.loads(data)["label"] == "decided: 1 / 1 · “ok”"
    saved = {(o.student, o.key): o.points for o in read_overrides(out.parent / "overrides.yaml")}
    assert saved == {("bao", "quiz.q3"): 1.0, ("cam", "quiz.q3"): 1.0}
    doc = json.loads((out / "cam" / "result.json").read_text())
    q3 = next(t for t in doc["exercises"][0]["tests"] if t["test_id"] == "question:quiz.q3")
    assert q3["score"] == 1.0 and q3["needs_review"] is False
    assert "overridden by the instructor: ok" in (out / "cam" / "report.html").read_text()
    status, page = request(port, "GET", f"/{token}/")
    assert "decided: 1 / 1 · “ok”" in page.decode()  # read back from overrides.yaml
    index = (out / "index.html").read_text()
    assert re.search(r'id="review-waiting">1<', index)  # ann's q3 still waits


def test_decisions_read_back_and_mixed(small_class: tuple[Path, Path]) -> None:
    out, subs = small_class
    path = out.parent / "overrides.yaml"
    state = ReviewState(out, path, subs)
    group = next(g for g in state.groups if set(g.students) == {"ann", "bao"})
    save_decision(path, "quiz.q1", ["ann"], 0.5, "")
    made = decisions(state.groups, read_overrides(path))
    assert made[group.id].mixed and made[group.id].decided == 1
    save_decision(path, "quiz.q1", ["ann", "bao"], 0.5, "")
    made = decisions(state.groups, read_overrides(path))
    assert not made[group.id].mixed and made[group.id].points == 0.5


# ------------------------------------------------------------------ the page in a browser


CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = ROOT / "test-artifacts"
try:
    from selenium.webdriver import ActionChains, Chrome
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    HAVE_SELENIUM = True
except ImportError:  # pragma: no cover - depends on the machine
    HAVE_SELENIUM = False

needs_browser = pytest.mark.skipif(
    not (HAVE_SELENIUM and CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason=f"needs selenium, {CHROMIUM} and {CHROMEDRIVER}")
WRONG_Q3 = "Padding mask hides future tokens, causal mask hides PAD."
C1, C3 = "Same idea, said clearly", "The masks are swapped"


def make_class(root: Path) -> Path:
    """The bundled examples plus two copies of an_nguyen whose quiz answers repeat hers
    (case, accents, spacing changed; one word added) and share one wrong q3."""
    subs = root / "subs"
    shutil.copytree(ROOT / "examples" / "submissions", subs)
    original = yaml.safe_load((subs / "an_nguyen" / "answers.yaml").read_text(encoding="utf-8"))
    q1 = original["quiz"]["q1"]
    for name, q1_text, q3_text in (
        ("an_caps", "  " + normalise(q1).upper().replace(" ", "   ") + " ", WRONG_Q3),
        ("an_typo", q1 + " nhé", "  padding  mask hides FUTURE tokens,   causal mask hides pad. "),
    ):
        shutil.copytree(subs / "an_nguyen", subs / name)
        doc = json.loads(json.dumps(original))
        doc["quiz"]["q1"], doc["quiz"]["q3"] = q1_text, q3_text
        (subs / name / "answers.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return subs


def start_review(out: Path, subs: Path, overrides: Path) -> tuple[subprocess.Popen[str], str]:
    """`grader review` as a subprocess on a free port; its printed address."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader.cli", "review", "--out", str(out), "--submissions", str(subs),
         "--overrides", str(overrides), "--port", "0", "--no-browser"],
        cwd=out.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or ()], daemon=True).start()
    seen = []
    while True:
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            proc.kill()
            pytest.fail(f"grader review printed no address: {seen}")
        seen.append(line)
        if found := re.search(r"review page: (http://127\.0\.0\.1:\d+/\S+/)", line):
            return proc, found.group(1)


def quiz_test(out: Path, student: str, question: str) -> dict:
    doc = json.loads((out / student / "result.json").read_text())
    quiz = next(e for e in doc["exercises"] if e["id"] == "quiz")
    return next(t for t in quiz["tests"] if t["test_id"] == f"question:{question}")


def quiz_column(out: Path) -> dict[str, float]:
    with (out / "grades.csv").open() as f:
        return {row["student"]: float(row["quiz"]) for row in csv.DictReader(f)}


def chromium(profile: Path) -> Chrome:
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking", "--window-size=1280,1000",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return Chrome(service=Service(str(CHROMEDRIVER)), options=options)


@pytest.mark.browser
@needs_browser
def test_review_page_grades_two_groups_by_keyboard(tmp_path: Path) -> None:
    subs = make_class(tmp_path)
    out = tmp_path / "reports"
    done = run_grader("grade", str(subs), "--assignment", str(ATTENTION), "--out", str(out),
                      "--jobs", "2", "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    quiz_before = quiz_column(out)
    results_before = {p.parent.name: p.read_text() for p in out.glob("*/result.json")}
    overrides = tmp_path / "overrides.yaml"
    proc, url = start_review(out, subs, overrides)
    drv = chromium(tmp_path / "profile")
    try:
        drv.get(url)
        keys = ActionChains(drv)

        def go_to(student: str, question: str) -> tuple[str, set[str]]:
            """Press j (or k) until the group of `question` holding `student` is the
            current one; its id and students."""
            groups = drv.find_elements(By.CSS_SELECTOR, "article.group")
            ids = [g.get_attribute("id") for g in groups]
            members = {g.get_attribute("id"): set(g.find_element(By.CSS_SELECTOR, ".students").text.split(", "))
                       for g in groups}
            target = next(g.get_attribute("id") for g in groups
                          if g.find_element(By.XPATH, "ancestor::section").get_attribute("data-question") == question
                          and student in members[g.get_attribute("id")])
            for _ in range(len(ids)):
                now = drv.find_element(By.CSS_SELECTOR, "article.group.current").get_attribute("id")
                if now == target:
                    return target, members[target]
                keys.send_keys("j" if ids.index(now) < ids.index(target) else "k").perform()
            pytest.fail(f"could not reach group {target}")

        def decision(gid: str) -> str:
            return drv.find_element(By.CSS_SELECTOR, f"#{gid} .decision").text

        # group 1: q1 written several ways -> a comment first, then the score it asks for
        q1, q1_students = go_to("an_typo", "quiz.q1")
        assert {"an_nguyen", "an_caps", "an_typo"} <= q1_students  # case, accents, spacing, a word
        keys.send_keys("c").send_keys(C1).send_keys(Keys.ENTER).perform()
        keys.send_keys("0.75").send_keys(Keys.ENTER).perform()
        WebDriverWait(drv, 30).until(lambda d: "decided: 0.75 / 1" in decision(q1))
        assert C1 in decision(q1)
        # group 2: the shared wrong q3 -> a digit, Enter; then back to it for the comment
        q3, q3_students = go_to("an_typo", "quiz.q3")
        assert {"an_caps", "an_typo"} <= q3_students
        keys.send_keys("0").send_keys(Keys.ENTER).perform()
        WebDriverWait(drv, 30).until(lambda d: "decided: 0 / 1" in decision(q3))
        go_to("an_typo", "quiz.q3")
        keys.send_keys("c").send_keys(C3).send_keys(Keys.ENTER).perform()
        WebDriverWait(drv, 30).until(lambda d: C3 in decision(q3))
        assert drv.find_element(By.ID, "decided-count").text == "2"
        assert [e for e in drv.get_log("browser") if e["level"] == "SEVERE"] == []  # type: ignore[no-untyped-call]
        drv.refresh()  # decisions are read back from overrides.yaml
        assert "decided: 0.75 / 1" in decision(q1) and C3 in decision(q3)
        assert drv.find_element(By.ID, "decided-count").text == "2"
        ARTIFACTS.mkdir(exist_ok=True)
        drv.save_screenshot(str(ARTIFACTS / "review-page.png"))
    finally:
        drv.quit()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    saved = {(o.student, o.key): (o.points, o.comment) for o in read_overrides(overrides)}
    assert saved == {**{(s, "quiz.q1"): (0.75, C1) for s in q1_students},
                     **{(s, "quiz.q3"): (0.0, C3) for s in q3_students}}
    quiz_after = quiz_column(out)
    for student in sorted(quiz_before):
        before = json.loads(results_before[student])
        old = {t["test_id"]: t["score"] for e in before["exercises"] if e["id"] == "quiz" for t in e["tests"]}
        html = (out / student / "report.html").read_text()
        expected = quiz_before[student]
        for question, students, points, comment in (("quiz.q1", q1_students, 0.75, C1),
                                                    ("quiz.q3", q3_students, 0.0, C3)):
            t = quiz_test(out, student, question)
            if student in students:
                assert t["score"] == points and t["message"] == f"overridden by the instructor: {comment}"
                assert t.get("needs_review") in (None, False)
                assert f"overridden by the instructor: {comment}" in html
                expected += points - old[f"question:{question}"]
            else:
                assert t["score"] == old[f"question:{question}"]
        assert quiz_after[student] == pytest.approx(expected, abs=1e-3), student
        if student not in q1_students | q3_students:
            assert (out / student / "result.json").read_text() == results_before[student]
