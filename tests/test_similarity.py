"""`grader similar`: planted copies are found, independent solutions are not.

The cases (tests/similarity_cases.py) are built here, in tmp_path: four independent
styles (fused qkv, separate projections, einsum, and two students handing in the
lesson's own class), and copies of them renamed, reordered, commented and reformatted,
pasted into a notebook over several cells, or sharing one class only; and two more
styles that share nothing but one small, renamed function.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import assignment as assignment_mod
from grader.intake.discover import discover
from grader.similarity.fingerprint import normalise
from grader.similarity.pairs import MIN_COMMON, compare, fragments
from grader.similarity.run import Options, find_similar, write_similarity
from grader.similarity.source import join_cells

sys.path.insert(0, str(Path(__file__).parent))
import similarity_cases as cases

ROOT = Path(__file__).resolve().parents[1]
YAML = ROOT / "assignments" / "attention" / "assignment.yaml"


@pytest.fixture(scope="module")
def attention():
    return assignment_mod.load(YAML, require_hidden=False)


@pytest.fixture(scope="module")
def planted(attention, tmp_path_factory):
    files, truth = cases.planted()
    root = cases.write(tmp_path_factory.mktemp("subs"), files)
    return root, find_similar(discover(root, attention), attention), truth


def test_precision_and_recall_are_one_at_the_default_threshold(planted):
    _, found, truth = planted
    flagged = {frozenset((p.a, p.b)) for p in found.flagged}
    hit = len(flagged & truth)
    print(f"\nplanted: {len(found.codes)} submissions, {len(truth)} copied pairs; precision "
          f"{hit / max(1, len(flagged)):.2f}, recall {hit / len(truth):.2f}")
    assert flagged == truth, (f"missed {sorted(map(sorted, truth - flagged))}, "
                              f"wrongly flagged {sorted(map(sorted, flagged - truth))}")


@pytest.mark.parametrize("a, b", [("fused", "separate"), ("fused", "einsum"), ("separate", "einsum"),
                                  ("lesson_1", "lesson_2"), ("lesson_1", "fused"),
                                  ("lesson_2", "einsum"), ("looped_heads", "fused"),
                                  ("packed_bmm", "einsum"), ("looped_heads", "separate")])
def test_independent_styles_and_the_lessons_own_code_stay_apart(planted, a, b):
    _, found, _ = planted
    pair = next((p for p in found.pairs if {p.a, p.b} == {a, b}), None)
    assert pair is None or pair.similarity < Options().threshold / 2, pair
    assert pair is None or not pair.flagged, pair


def test_one_shared_function_is_flagged_by_its_region(planted):
    """The region rule's margin, measured: the copied helper is one region far above
    `Options.region`, the regions independent pairs share stay far below it."""
    _, found, truth = planted
    docs = _documents(found)
    by_id = {d.student: d for d in docs}
    counted: dict[int, int] = {}
    for d in docs:
        for h in d.prints:
            counted[h] = counted.get(h, 0) + 1
    limit = max(MIN_COMMON, Options().common * len(docs))
    idioms = {h for h, n in counted.items() if n > limit}
    largest = {frozenset((p.a, p.b)): max((f.fingerprints for f in
                                           fragments(by_id[p.a], by_id[p.b], idioms)), default=0)
               for p in compare(docs)}
    copied = min(n for pair, n in largest.items() if pair in truth)
    independent = max(n for pair, n in largest.items() if pair not in truth)
    n = Options().region
    print(f"\nlargest region: smallest over copied pairs {copied}, largest over independent "
          f"pairs {independent}; region rule at {n}")
    assert copied >= 2 * n and 0 < independent <= n // 2, (copied, independent, n)
    pair = next(p for p in found.pairs if {p.a, p.b} == {"looped_heads", "packed_bmm"})
    assert pair.flagged and pair.reason == "region" and pair.similarity < Options().threshold
    assert pair.region == largest[frozenset((pair.a, pair.b))]
    assert {p.reason for p in found.flagged} == {"share", "region"}
    assert all(not p.reason for p in found.pairs if not p.flagged)


def _documents(found):
    from grader.similarity.base import base_hashes, base_text
    from grader.similarity.pairs import fingerprint
    base = base_hashes((base_text(p) for p in found.base_files), found.options.k)
    return [fingerprint(code, base, found.options) for code in found.codes.values()]


@pytest.mark.parametrize("copy, original", [("copy_renamed", "fused"), ("copy_notebook", "fused"),
                                            ("copy_reordered", "separate"),
                                            ("copy_commented", "einsum"),
                                            ("partial_one_function", "separate"),
                                            ("packed_bmm", "looped_heads")])
def test_each_disguise_is_flagged(planted, copy, original):
    _, found, _ = planted
    pair = next(p for p in found.shown if {p.a, p.b} == {copy, original})
    assert pair.flagged and pair.fragments


def test_a_copy_passed_round_is_one_cluster(planted):
    _, found, _ = planted
    assert ("copy_notebook", "copy_renamed", "fused") in found.clusters


def test_without_the_lesson_as_base_the_lesson_students_look_alike(planted):
    root, _, _ = planted
    alone = find_similar(discover(root, assignment_mod.load(YAML, require_hidden=False)), None)
    assert any({p.a, p.b} == {"lesson_1", "lesson_2"} for p in alone.flagged)


def test_normalising_ignores_names_comments_layout_and_docstrings():
    one = normalise('def f(a, b):\n    """Doc."""\n    return a.view(b, -1)  # note\n')
    two = normalise("def g(x,\n      y):\n\n    return x.view(y,\n                  -1)\n")
    assert one.kinds == two.kinds
    assert normalise("torch.matmul(x)").kinds != normalise("torch.bmm(x)").kinds
    assert normalise("self.wq(x)").kinds == normalise("self.query_proj(h)").kinds


def test_unreadable_code_is_skipped_a_line_at_a_time():
    kinds = normalise("x = 'open\ny = f(1)\n").kinds
    assert kinds[-7:-1] == ("N", "=", "N", "(", "#", ")")


def test_notebook_cells_are_joined_without_magics():
    text = join_cells(["%matplotlib inline\nimport torch", "!pip install x\ny = 1", "%%bash\nls -l"])
    assert "matplotlib" not in text and "pip" not in text and "ls -l" not in text
    assert "import torch" in text and "y = 1" in text


def test_outputs_csv_pages_and_index(planted, tmp_path):
    _, found, truth = planted
    written = write_similarity(found, tmp_path)
    rows = list(csv.DictReader((tmp_path / "similarity.csv").open(encoding="utf-8")))
    assert {frozenset((r["student_a"], r["student_b"])) for r in rows if r["flagged"] == "yes"} == truth
    assert {r["reason"] for r in rows} == {"share", "region", ""}
    region = next(r for r in rows if r["reason"] == "region")
    assert "one matched region of 27" in (tmp_path / region["page"]).read_text()
    doc = json.loads((tmp_path / "similarity.json").read_text())
    assert {p["reason"] for p in doc["pairs"]} == {"share", "region", ""}
    page = tmp_path / doc["pairs"][0]["page"]
    assert page in written and 'class="f1"' in page.read_text()


def test_student_code_is_escaped_on_the_pair_page(attention, tmp_path):
    evil = cases.HEADER + "".join(cases.FUSED[1:]) + '\nX = "</td><script>alert(1)</script>"\n'
    subs = cases.write(tmp_path / "subs", [("a", "attention.py", evil), ("b", "attention.py", evil)])
    found = find_similar(discover(subs, attention), attention)
    write_similarity(found, tmp_path / "out")
    html = next((tmp_path / "out" / "_similarity").glob("*.html")).read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_cli_similar_and_the_index_section(tmp_path):
    from result_samples import full_marks

    from grader.cli import main
    from grader.report.html import render_index, render_report
    from grader.similarity.summary import read_summary

    files, _ = cases.planted()
    subs = cases.write(tmp_path / "subs", files)
    out = tmp_path / "reports"
    res = CliRunner().invoke(main, ["similar", str(subs), "--assignment", str(YAML), "--out", str(out)])
    assert res.exit_code == 0, res.output
    summary = read_summary(out)
    assert summary is not None and summary.flagged == 8 and len(summary.clusters) == 2
    html = render_index([], similarity=summary)
    assert "Similar submissions" in html and "copy_renamed" in html
    assert "Similar submissions" not in render_report(full_marks("copy_renamed"))
