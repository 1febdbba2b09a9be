"""The student's own figures (issue 14): captured as PNG in the sandboxed child, checked
as images on the grader's side, kept in result.json, shown in report.html as data: images
(in a real headless browser too), and no cost for submissions that do not plot."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ATTENTION, ROOT, read_results, run_grader

from grader.figures import (
    MAX_FIGURES,
    MAX_PNG_BYTES,
    FigureBatch,
    NotAnImage,
    checked_batch,
    figure_from_doc,
    png_size,
)
from grader.limits import Limits
from grader.report.html import render_report
from grader.results import (
    ExerciseResult,
    Figure,
    Status,
    SubmissionResult,
    from_json_dict,
    to_json_dict,
)
from grader.results import TestResult as Checked  # (not a test class)
from grader.sandbox.host import Isolation, Sandbox
from grader.sandbox.inside import plotting
from grader.testing import GradingFailure, show_figures
from grader.testing.session import Feedback
from grader.testing.student import Connection, Student

CORPUS = ROOT / "tests" / "corpus"
LIMITS = Limits(load_s=60, per_test_s=30, per_submission_s=120, memory_mb=4096, cpu_s=120,
                processes=64, file_size_mb=4, output_kb=64)


# ------------------------------------------------------------------ PNG bytes


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(width: int = 3, height: int = 2, raw: bytes | None = None, *, color: int = 2,
         depth: int = 8, tail: bytes = b"") -> bytes:
    channels = {0: 1, 2: 3, 6: 4}[color]
    row = bytes([0]) + bytes(width * channels * depth // 8)
    raw = row * height if raw is None else raw
    header = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw))
            + _chunk(b"IEND", b"") + tail)


def _pillow_png(mode: str, size: tuple[int, int] = (40, 30)) -> bytes:
    from PIL import Image  # matplotlib's dependency

    buffer = io.BytesIO()
    Image.new(mode, size).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "1", "P", "I;16"])
def test_real_pngs_pass_with_their_size(mode: str) -> None:
    assert png_size(_pillow_png(mode)) == (40, 30)


def test_an_interlaced_png_passes() -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (37, 21), "red").save(buffer, format="PNG")
    plain = buffer.getvalue()
    assert png_size(plain) == (37, 21)
    # Pillow writes no interlaced PNGs: build one, 7 passes of filter byte + black pixels
    header = struct.pack(">IIBBBBB", 37, 21, 8, 2, 0, 0, 1)
    raw = b""
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                           (1, 0, 2, 2), (0, 1, 1, 2)):
        cols, rows = -(-(37 - x0) // dx), -(-(21 - y0) // dy)
        raw += (b"\x00" + bytes(cols * 3)) * rows if cols > 0 and rows > 0 else b""
    data = (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw))
            + _chunk(b"IEND", b""))
    assert png_size(data) == (37, 21)
    from PIL import Image as _Image

    _Image.open(io.BytesIO(data)).load()  # Pillow agrees it is an image


def test_a_handmade_png_passes() -> None:
    assert png_size(_png(3, 2)) == (3, 2)


def _bad_crc() -> bytes:
    data = bytearray(_png())
    data[-20] ^= 0xFF  # inside IDAT's body or CRC
    return bytes(data)


@pytest.mark.parametrize("data, why", [
    (b"GIF89a" + bytes(40), "wrong signature"),
    (b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "wrong signature"),
    (b"<img src=x onerror=alert(1)>", "wrong signature"),
    (_png()[:-12], "no IHDR or no IEND"),
    (_png()[:40], "truncated chunk"),
    (_bad_crc(), "checksum"),
    (_png(tail=b"<script>alert(1)</script>"), "after the end"),
    (_png(0, 2, raw=b""), "pixels"),
    (_png(5000, 1, raw=bytes(1 + 5000 * 3)), "pixels"),
    (_png(3, 2, raw=bytes(10_000_000)), "larger than its dimensions allow"),
    (_png(3, 2, raw=b"\x00" * 3), "ends early"),
    (_png(3, 2, color=2, depth=1), "unsupported PNG header"),
])
def test_what_is_not_a_png_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(NotAnImage, match=why):
        png_size(data)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_a_batch_is_capped_and_says_what_it_left_out() -> None:
    good = {"png": _b64(_png()), "source": "cell 3"}
    value = {"figures": [good, {"png": "not base64!!", "source": "x"},
                         {"png": _b64(b"<svg/>"), "source": "y"}, good, good, good],
             "left_out": ["a figure from cell 9 was not kept (larger than 200 KB)", 42]}
    batch = checked_batch(value, room=2)
    assert [f.source for f in batch.figures] == ["cell 3", "cell 3"]
    assert batch.figures[0].width == 3 and batch.figures[0].height == 2
    notes = " | ".join(batch.left_out)
    assert "larger than 200 KB" in notes and "not base64" in notes and "wrong signature" in notes
    assert f"2 more figure(s) not shown: a report shows at most {MAX_FIGURES}" in notes
    assert checked_batch("garbage", room=3).figures == ()
    assert checked_batch({"figures": [{"png": _b64(_png())}]}, room=0).figures == ()


def test_a_figure_over_the_size_cap_is_refused() -> None:
    noise = b"".join(b"\x00" + os.urandom(300 * 3) for _ in range(300))  # incompressible
    big = _png(300, 300, raw=noise)
    assert png_size(big) == (300, 300) and len(big) > MAX_PNG_BYTES
    batch = checked_batch({"figures": [{"png": _b64(big), "source": "cell 1"}]}, room=3)
    assert batch.figures == () and f"{MAX_PNG_BYTES // 1024} KB" in " ".join(batch.left_out)


# ------------------------------------------------------------------ result.json and report.html


def _result(figure: Figure) -> SubmissionResult:
    test = Checked(name="your plot", score=0, max_score=0, passed=True,
                      test_id="t.py::test_plot_attention", figures=(figure,))
    ex = ExerciseResult(id="causal_mask", title="Causal mask", score=0, max_score=0,
                        status=Status.PASSED, tests=(test,))
    return SubmissionResult(student="ana", assignment="attention", score=0, max_score=0,
                            exercises=(ex,))


def test_figures_round_trip_through_result_json_and_are_checked_again() -> None:
    figure = Figure(png_base64=_b64(_png()), width=3, height=2, source="cell 9")
    doc = json.loads(json.dumps(to_json_dict(_result(figure))))
    stored = doc["exercises"][0]["tests"][0]["figures"]
    assert stored == [{"png_base64": figure.png_base64, "width": 3, "height": 2, "source": "cell 9"}]
    assert from_json_dict(doc).exercises[0].tests[0].figures == (figure,)
    stored[0]["png_base64"] = _b64(b"<svg onload=alert(1)>")
    assert from_json_dict(doc).exercises[0].tests[0].figures == ()
    assert figure_from_doc("junk") is None


def test_the_report_embeds_figures_as_data_images_under_their_exercise() -> None:
    figure = Figure(png_base64=_b64(_png()), width=3, height=2, source='cell 9"><script>x</script>')
    html = render_report(_result(figure))
    section = html.split('data-exercise="causal_mask"', 1)[1]
    assert f'<img src="data:image/png;base64,{figure.png_base64}" width="3" height="2"' in section
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html


# ------------------------------------------------------------------ a test that shows them


class _FakeStudent:
    def __init__(self, *batches: FigureBatch) -> None:
        self.batches = list(batches)

    def figures(self) -> FigureBatch:
        return self.batches.pop(0)


FIG = Figure(png_base64=_b64(_png()), width=3, height=2, source="cell 9")


def _shown(student: _FakeStudent, plot: object = None) -> tuple[tuple[Figure, ...], list[str]]:
    feedback = Feedback()
    show_figures(student, feedback, plot, "define plot_attention")  # type: ignore[arg-type]
    return tuple(feedback.shown), [e.data["text"] for e in feedback.evidence]


def test_show_figures_prefers_what_the_notebook_showed() -> None:
    calls: list[int] = []
    shown, notes = _shown(_FakeStudent(FigureBatch((FIG,), ("one too many",))), lambda: calls.append(1))
    assert shown == (FIG,) and notes == ["one too many"] and calls == []


def test_show_figures_draws_with_the_students_plot_and_notes_its_failure() -> None:
    shown, notes = _shown(_FakeStudent(FigureBatch(), FigureBatch((FIG,))), lambda: None)
    assert shown == (FIG,) and notes == []

    def broken() -> None:
        raise GradingFailure("forward must return a pair (output, weights), got Tensor.")

    shown, notes = _shown(_FakeStudent(FigureBatch(), FigureBatch()), broken)
    assert shown == () and notes == [
        "no figure: forward must return a pair (output, weights), got Tensor. (drawing is not graded)",
        "define plot_attention"]
    shown, notes = _shown(_FakeStudent(FigureBatch()))
    assert shown == () and notes == ["define plot_attention"]


# ------------------------------------------------------------------ capture in the child


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    with Sandbox(Isolation.AUTO, LIMITS) as sb:
        yield sb


def _connect(box: Sandbox, kind: str, code: str | list[str]) -> Connection:
    request = ({"op": "load", "kind": "module", "source": code, "filename": "attention.py"}
               if kind == "module" else
               {"op": "load", "kind": "notebook", "cells": code, "filename": "attention.ipynb"})
    return Connection(box, request, LIMITS, f"attention.{'py' if kind == 'module' else 'ipynb'}")


PLOTTING_MODULE = '''
import os, sys, time
import matplotlib.pyplot as plt

MATPLOTLIB_BEFORE_ITS_IMPORT = None


def plot(values):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.imshow(values)
    os.environ["DISPLAY"] = ":99"  # where Agg's show() would warn "non-interactive"
    started = time.monotonic()
    plt.show()
    return time.monotonic() - started


def open_figures():
    return len(plt.get_fignums())
'''


def test_a_plot_function_is_captured_when_called_and_show_returns_at_once(box: Sandbox) -> None:
    conn = _connect(box, "module", PLOTTING_MODULE)
    try:
        student = Student(conn)
        assert student.figures().figures == ()  # nothing drawn at import
        took = student.plot([[0.0, 1.0], [1.0, 0.0]])
        assert took < 5 and student.open_figures() == 0  # shown, then closed
        batch = student.figures()
        assert [f.source for f in batch.figures] == ["plot(...)"] and batch.left_out == ()
        assert 300 < batch.figures[0].width < 500 and 200 < batch.figures[0].height < 400
        assert student.figures().figures == ()  # handed over once
    finally:
        conn.close()
    printed = "".join(text for text, _ in conn.output)
    assert "non-interactive" not in printed and "Warning" not in printed, printed


def test_a_gui_backend_chosen_by_the_student_still_draws_headless(box: Sandbox) -> None:
    conn = _connect(box, "module", "import matplotlib\nmatplotlib.use('TkAgg')\n"
                                   "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\n")
    try:
        batch = Student(conn).figures()
    finally:
        conn.close()
    assert conn.load is not None and conn.load.error is None
    assert [f.source for f in batch.figures] == ["attention.py"]


def test_a_huge_or_broken_figure_is_drawn_smaller_or_said(box: Sandbox) -> None:
    code = ("import matplotlib.pyplot as plt\n"
            "big = plt.figure(figsize=(80, 60))\nbig.add_subplot().plot([1, 2])\n"
            "bad = plt.figure()\nbad.add_subplot().plot([1, 2])\n"
            "bad.savefig = None  # drawing it fails\n")
    conn = _connect(box, "module", code)
    try:
        batch = Student(conn).figures()
    finally:
        conn.close()
    (figure,) = batch.figures
    assert max(figure.width, figure.height) <= 2000
    assert any("could not be drawn: TypeError" in note for note in batch.left_out), batch.left_out


def test_submissions_that_do_not_plot_never_import_matplotlib(box: Sandbox) -> None:
    conn = _connect(box, "module", "import sys\nAT_START = sorted(m for m in sys.modules if "
                                   "m.split('.')[0] in ('matplotlib', 'seaborn', 'pandas'))\n"
                                   "def now():\n    return 'matplotlib' in sys.modules\n")
    try:
        student = Student(conn)
        assert student.AT_START.value() == []
        assert student.figures().figures == ()
        assert student.now() is False
    finally:
        conn.close()


LOADED_AT_START = ("import sys\nAT_START = sorted(m for m in ('matplotlib.pyplot', 'seaborn', 'pandas') "
                   "if m in sys.modules)\n")


def test_a_zygote_asked_to_warm_loads_the_plotting_imports_and_children_still_capture() -> None:
    """`Sandbox.warm_plots` (a batch's worker met a submission that plots): children forked
    before it have nothing loaded, those forked after its answer find pyplot, seaborn and
    pandas loaded, and the lesson's heatmap is drawn and captured as before, no warning
    printed. A zygote started without warm imports is never asked."""
    warm = plotting.warm_imports(["torch", "matplotlib", "seaborn"])
    with Sandbox(Isolation.AUTO, LIMITS, spare=False, warm_imports=warm) as warmed:
        first = _connect(warmed, "module", LOADED_AT_START)
        try:
            assert Student(first).AT_START.value() == []
        finally:
            first.close()
        assert warmed.may_warm_plots and not Sandbox(Isolation.AUTO, LIMITS).may_warm_plots
        warmed.warm_plots()
        assert not warmed.may_warm_plots  # asked once: the workers stop looking
        warmed.warm_plots()
        later = _connect(warmed, "module", LOADED_AT_START + PLOTTING_MODULE
                         + "import seaborn as sns\n\ndef heatmap(values):\n"
                           "    sns.heatmap(values, annot=True)\n    plt.show()\n")
        try:
            student = Student(later)
            assert student.AT_START.value() == ["matplotlib.pyplot", "pandas", "seaborn"]
            student.heatmap([[0.25, 0.75], [1.0, 0.0]])
            batch = student.figures()
        finally:
            later.close()
    assert [f.source for f in batch.figures] == ["heatmap(...)"] and batch.left_out == ()
    printed = "".join(text for text, _ in later.output)
    assert "Warning" not in printed and "cache" not in printed.lower(), printed


NOTEBOOK = [
    "import matplotlib.pyplot as plt\nfrom IPython.display import display",
    "plt.plot([1, 2, 3])",                                     # left open: shown at the cell's end
    "fig, ax = plt.subplots()\nax.bar([1, 2], [3, 4])\ndisplay(fig)\nplt.close(fig)",
    "fig2 = plt.figure()\nfig2.add_subplot().plot([3, 1])\nfig2",  # the cell's result
    "plt.figure()",                                            # empty: no picture, as in Jupyter
    "plt.scatter([1], [2])\nplt.show()",                        # one too many
]


def test_a_notebook_shows_what_jupyter_would_and_at_most_three(box: Sandbox) -> None:
    conn = _connect(box, "notebook", NOTEBOOK)
    try:
        batch = Student(conn).figures()
    finally:
        conn.close()
    assert [f.source for f in batch.figures] == ["cell 2", "cell 3", "cell 4"]
    assert len({f.png_base64 for f in batch.figures}) == 3
    assert any("cell 6" in note and "more than" in note for note in batch.left_out), batch.left_out
    assert conn.load is not None and conn.load.cell_errors == []


def test_matplotlib_inline_is_captured_too(box: Sandbox) -> None:
    conn = _connect(box, "notebook", ["%matplotlib inline\nimport matplotlib.pyplot as plt",
                                      "plt.plot([1, 2])\nplt.show()", "plt.plot([2, 1])"])
    try:
        batch = Student(conn).figures()
    finally:
        conn.close()
    assert conn.load is not None and conn.load.cell_errors == []
    assert [f.source for f in batch.figures] == ["cell 2", "cell 3"]


# ------------------------------------------------------------------ the lesson, graded


@pytest.fixture(scope="module")
def lesson_reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus's lesson module and notebook, graded by the real `grader grade`."""
    root = tmp_path_factory.mktemp("lesson")
    for case in ("lesson_plot_module", "lesson_plot_notebook", "correct_qkv_module"):
        shutil.copytree(CORPUS / case, root / "subs" / case, ignore=shutil.ignore_patterns("expected.yaml"))
    done = run_grader("grade", str(root / "subs"), "--assignment", str(ATTENTION),
                      "--out", str(root / "out"), "--jobs", "2", "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "out"


def _plot_test(result: dict) -> dict:
    causal = next(ex for ex in result["exercises"] if ex["id"] == "causal_mask")
    return next(t for t in causal["tests"] if t["test_id"].endswith("::test_plot_attention"))


@pytest.mark.parametrize("case, source", [("lesson_plot_module", "plot_attention(...)"),
                                          ("lesson_plot_notebook", "cell 9")])
def test_the_lessons_plot_reaches_the_report_with_full_marks(lesson_reports: Path, case: str,
                                                             source: str) -> None:
    result = read_results(lesson_reports)[case]
    code_tests = [t for ex in result["exercises"] for t in ex["tests"]
                  if not t["test_id"].startswith("question:")]
    assert code_tests and all(t["passed"] and t["outcome"] == "passed" for t in code_tests)
    assert result["load"]["cell_errors"] == [] and result["load"]["notices"] == []
    # (full marks, written answers included: tests/corpus/<case>/expected.yaml)
    test = _plot_test(result)
    assert test["passed"] and test["max_score"] == 0
    (figure,) = test["figures"]
    assert figure["source"] == source and png_size(base64.b64decode(figure["png_base64"]))
    html = (lesson_reports / case / "report.html").read_text()
    causal = html.split('data-exercise="causal_mask"', 1)[1].split("</section>", 1)[0]
    assert causal.count('<img src="data:image/png;base64,') == 1
    assert "svg class=\"heatmap\"" in causal  # beside the reference heatmaps


def test_without_a_plot_the_report_says_how_to_get_one(lesson_reports: Path) -> None:
    test = _plot_test(read_results(lesson_reports)["correct_qkv_module"])
    assert test["passed"] and test["figures"] == []
    assert "define `plot_attention(attn_weights, tokens, head=0)`" in test["evidence"][0]["data"]["text"]


try:
    from selenium.webdriver import Chrome
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    HAVE_SELENIUM = True
except ImportError:  # pragma: no cover - depends on the machine
    HAVE_SELENIUM = False

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@pytest.mark.browser
@pytest.mark.skipif(not (HAVE_SELENIUM and CHROMIUM.exists() and CHROMEDRIVER.exists()),
                    reason="needs selenium, chromium and chromedriver")
def test_the_notebooks_heatmap_is_drawn_in_a_real_browser(lesson_reports: Path,
                                                          tmp_path: Path) -> None:
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1000", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        driver.get((lesson_reports / "lesson_plot_notebook" / "report.html").as_uri())
        images = driver.find_elements(By.CSS_SELECTOR, 'section[data-exercise="causal_mask"] figure.student-figure img')
        assert len(images) == 1
        image = images[0]
        loaded = driver.execute_script(
            "const i = arguments[0]; return i.decode().then(() => [i.complete, i.naturalWidth, "
            "i.naturalHeight]).catch(e => String(e));", image)
        assert isinstance(loaded, list) and loaded[0] is True and loaded[1] > 100 and loaded[2] > 100, loaded
        assert image.is_displayed() and image.size["width"] > 100
        assert image.get_attribute("src").startswith("data:image/png;base64,")
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert errors == []
        artifacts = ROOT / "test-artifacts"
        artifacts.mkdir(exist_ok=True)
        image.screenshot(str(artifacts / "student-figure.png"))
    finally:
        driver.quit()
