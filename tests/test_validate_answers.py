"""`grader validate` measures the answer key on the hand-labelled answers.

It prints agreement and review flags by label and by language for the tuning and held-out
halves, and fails when a wrong answer gets half the points, or a right one loses points,
without a review flag.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml
from conftest import ROOT, run_grader

ROWS = ["label full", "label partial", "label zero", "lang en", "lang vi", "lang vi-plain", "lang mixed", "all"]


def _table(stdout: str, split: str) -> dict[str, tuple[int, int, int, int]]:
    """{row: (n, agree, flagged, unflagged wrong)} of one half's table."""
    block = stdout.split(f"labelled answers, {split} (")[1].split("labelled answers,")[0]
    rows = {}
    for line in block.splitlines()[1:]:
        m = re.match(r"\s+(label \S+|lang \S+|all)\s+(\d+)\s+(\d+)\s+\d+%\s+(\d+)\s+\d+%\s+(\d+)$", line)
        if m:
            rows[m.group(1)] = tuple(int(g) for g in m.groups()[1:])
        elif line.strip():
            break
    return rows


def _copy(tmp_path: Path, labelled: list[dict], alone: bool = False) -> Path:
    """The attention assignment with `labelled` as its labelled_answers.yaml (`alone`: its only set)."""
    folder = tmp_path / "attention"
    shutil.copytree(ROOT / "assignments" / "attention", folder)
    doc = yaml.safe_load((folder / "assignment.yaml").read_text())
    doc["reference"] = str(ROOT / "reference" / "attention.py")
    if alone:
        doc["labelled_answers"] = ["labelled_answers.yaml"]
    (folder / "assignment.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (folder / "labelled_answers.yaml").write_text(yaml.safe_dump(labelled, allow_unicode=True))
    return folder / "assignment.yaml"


def _case(n: int, question: str, split: str, label: str, answer: str, lang: str = "en", **extra) -> dict:
    return {"id": f"t{n}", "question": question, "split": split, "lang": lang, "label": label,
            "answer": answer, "reason": "test", **extra}


def test_validate_attention_prints_agreement_per_half_label_and_language():
    done = run_grader("validate", "attention", "--answers-only", timeout=300)
    assert done.returncode in (0, 1), done.stderr
    tune, heldout = _table(done.stdout, "tune"), _table(done.stdout, "heldout")
    assert list(tune) == ROWS and list(heldout) == ROWS, done.stdout
    labelled = yaml.safe_load((ROOT / "assignments" / "attention" / "labelled_answers.yaml").read_text())
    for split, table in (("tune", tune), ("heldout", heldout)):
        cases = [c for c in labelled if c["split"] == split]
        assert table["all"][0] == len(cases)
        assert sum(table[f"label {x}"][0] for x in ("full", "partial", "zero")) == len(cases)
        assert sum(table[f"lang {x}"][0] for x in ("en", "vi", "vi-plain", "mixed")) == len(cases)
    n, agree, flagged, wrong = tune["all"]
    # the key was tuned on this half: no unflagged wrong score there. (Issue 10 asks for at
    # most a quarter flagged; with every partial credit flagged this adversarial set is
    # at about 30%: printed, not yet met.)
    assert wrong == 0 and agree >= 0.9 * n, done.stdout
    # exit 1 exactly when some labelled answer is scored wrongly without a flag (or anything else)
    unsafe = [line for line in done.stdout.splitlines() if line.strip().startswith("- labelled answer ")]
    assert len(unsafe) == heldout["all"][3] + wrong
    assert done.returncode == (1 if unsafe else 0)


def test_a_wrong_score_without_a_flag_fails_validation(tmp_path: Path):
    labelled = [
        _case(1, "quiz.q3", "tune", "full", "The padding mask hides PAD tokens; the causal mask hides future tokens."),
        # labelled zero (say, the labeller thinks it off-topic), yet the key gives it full marks, unflagged
        _case(2, "quiz.q3", "heldout", "zero", "Padding mask chặn token PAD; causal mask chặn token tương lai.", "vi"),
        # labelled full, yet the key gives it nothing, unflagged
        _case(3, "quiz.q8", "heldout", "full", "It reduces the number of parameters.", "en"),
        _case(4, "quiz.q1", "tune", "partial", "Value là nội dung được tổng hợp.", "vi", points=0.33),
    ]
    done = run_grader("validate", str(_copy(tmp_path, labelled)), "--answers-only", timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("labelled answer t2 (quiz.q3, heldout, zero): a `zero` answer gets 1.00 of the points without "
            "a review flag") in done.stdout
    assert "labelled answer t3 (quiz.q8, heldout, full): a `full` answer loses 1.00 of the points" in done.stdout
    assert "t1 " not in done.stdout and "t4 " not in done.stdout
    assert _table(done.stdout, "tune")["all"] == (2, 2, 1, 0)  # t4's partial credit is flagged
    assert _table(done.stdout, "heldout")["all"] == (2, 0, 0, 2)
    assert _table(done.stdout, "heldout")["lang vi"] == (1, 0, 0, 1)


def test_agreeing_labels_validate_and_broken_entries_are_named(tmp_path: Path):
    good = [_case(1, "quiz.q6", "tune", "zero", "RNNs are always faster."),
            _case(2, "quiz.q6", "heldout", "partial", "An RNN is sequential.", points=0.5)]
    done = run_grader("validate", str(_copy(tmp_path, good)), "--answers-only", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attention: valid" in done.stdout
    broken = good + [_case(3, "quiz.q7", "tune", "full", "16"), _case(4, "quiz.q6", "tune", "partial", "x"),
                     _case(5, "quiz.q6", "blind9999", "zero", "x")]
    done = run_grader("validate", str(_copy(tmp_path / "b", broken)), "--answers-only", timeout=300)
    assert done.returncode == 1
    assert "labelled_answers.yaml[2] (t3): `question` must be a written (text) question" in done.stdout
    assert "labelled_answers.yaml[3] (t4): a `partial` answer needs `points`" in done.stdout
    # the splits are named in short (there are some two hundred), the last one included
    assert re.search(r"\(t5\): `split` must be one of tune, heldout, fresh, blind, blind2 \.\.\. blind\d+, not 'blind9999'\n",
                     done.stdout), done.stdout


def test_the_kit_leaves_the_labelled_answers_out(tmp_path: Path):
    done = run_grader("kit", "attention", "--out", str(tmp_path / "kit"))
    assert done.returncode == 0, done.stderr
    kit = tmp_path / "kit" / "attention"
    assert not (kit / "labelled_answers.yaml").exists()
    assert "labelled_answers" not in yaml.safe_load((kit / "assignment.yaml").read_text())


def test_the_by_question_table_counts_silent_disagreements(tmp_path: Path):
    """A score that disagrees with its label without a flag is counted where it happens, also when
    it is not unsafe: here the labeller counts five production conditions where the key reads six
    (full marks)."""
    labelled = [
        _case(1, "quiz.q10", "tune", "partial", "You need tests for the padding and causal masks, a limit on "
              "the sequence length, eval() mode so dropout is off, consistent dtype and device, latency "
              "monitoring and a rollback plan.", points=0.714),
        _case(2, "quiz.q3", "heldout", "full", "The padding mask hides PAD tokens; the causal mask hides future tokens."),
        _case(3, "quiz.q3", "heldout", "zero", "Padding mask chặn token PAD; causal mask chặn token tương lai.", "vi"),
    ]
    done = run_grader("validate", str(_copy(tmp_path, labelled, alone=True)), "--answers-only", timeout=300)
    block = done.stdout.split("labelled answers, all splits, by question (3):")[1]
    rows = {m.group(1): tuple(int(g) for g in m.groups()[1:]) for m in re.finditer(
        r"^\s+(quiz\.q\d+)\s+(\d+)\s+(\d+)\s+\d+%\s+(\d+)\s+\d+%\s+(\d+)\s+(\d+)$", block, re.M)}
    # (n, agree, flagged, unflagged wrong, silent disagreements), in the assignment's order
    assert list(rows) == ["quiz.q3", "quiz.q10"], done.stdout
    assert rows["quiz.q3"] == (2, 1, 0, 1, 1) and rows["quiz.q10"] == (1, 0, 0, 0, 1), done.stdout
