"""Scoring of answers.yaml: the attention key and questions, sample answers, hostile files."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

import grader.answers.grade as answers_module
import grader.answers.values as answer_values
from grader import results
from grader.answers.grade import (
    AnswerKeyError,
    check_key,
    load_answers,
    parse_answers,
    read_number,
    score_questions,
    template_answers,
)
from grader.assignment import Question
from grader.errors import AssignmentError

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = ROOT / "assignments" / "attention"
EXAMPLES = ROOT / "examples" / "answers"


def _questions() -> list[Question]:
    entries = yaml.safe_load((ASSIGNMENT / "questions.yaml").read_text(encoding="utf-8"))
    return [Question(**{**e, "choices": tuple(e.get("choices", ()))}) for e in entries]


QUESTIONS = _questions()
BY_ID = {q.id: q for q in QUESTIONS}
KEY: dict[str, Any] = yaml.safe_load((ASSIGNMENT / "answer_key.yaml").read_text(encoding="utf-8"))


def _example(name: str) -> dict[str, Any]:
    data, problems = load_answers(EXAMPLES / name)
    assert problems == [] and data is not None
    return data


def _one(question_id: str, value: Any) -> results.TestResult:
    """Score one answer, written at its dotted path."""
    *parents, leaf = question_id.split(".")
    doc: dict[str, Any] = {leaf: value}
    for part in reversed(parents):
        doc = {part: doc}
    return score_questions([BY_ID[question_id]], doc, KEY)[0]


def _strip_accents(text: str) -> str:
    return answer_values.strip_accents(text)


# ------------------------------------------------------------------ key and questions


def test_key_loads_and_covers_every_question() -> None:
    assert check_key(QUESTIONS, KEY) == []
    assert {q.id for q in QUESTIONS} <= set(KEY)


def test_questions_are_the_contracts_with_their_points() -> None:
    points = {q.id: q.points for q in QUESTIONS}
    assert [i for i in points if i.startswith("shape_reading.")] == [
        "shape_reading.output_shape", "shape_reading.weights_shape", "shape_reading.device", "shape_reading.dtype"]
    assert all(points[i] == 1 for i in points if i.startswith(("shape_reading.", "quiz.")))
    assert [points[f"complexity.{i}"] for i in ("growth_1024_to_4096", "growth_2048_to_8192", "weights_bytes")] == [3, 3, 4]
    assert [i for i in points if i.startswith("quiz.")] == [f"quiz.q{n}" for n in range(1, 11)]
    assert sum(points.values()) == 24
    assert {q.exercise for q in QUESTIONS} == {"shape_reading", "complexity", "quiz"}


def test_assignment_yaml_holds_these_questions() -> None:
    doc = yaml.safe_load((ASSIGNMENT / "assignment.yaml").read_text(encoding="utf-8"))
    pasted = [(ex["id"], q["id"], q["type"], q["points"], " ".join(q["prompt"].split()))
              for ex in doc["exercises"] for q in ex.get("questions", ())]
    assert pasted == [(q.exercise, q.id, q.type, q.points, q.prompt) for q in QUESTIONS]


def test_solution_answers_get_full_marks() -> None:
    data, problems = load_answers(ASSIGNMENT / "solution" / "answers.yaml")
    assert problems == [] and sum(r.score for r in score_questions(QUESTIONS, data, KEY)) == 24


def test_exported_names_exist() -> None:
    assert all(hasattr(answers_module, name) for name in answers_module.__all__)


# ------------------------------------------------------------------ the example corpus


@pytest.mark.parametrize("name", ["correct_en.yaml", "correct_vi.yaml"])
def test_correct_examples_get_full_marks(name: str) -> None:
    results = score_questions(QUESTIONS, _example(name), KEY)
    assert [r.test_id for r in results] == [f"question:{q.id}" for q in QUESTIONS]
    assert [(r.test_id, r.score, r.passed, r.outcome) for r in results] == [
        (f"question:{q.id}", q.points, True, "passed") for q in QUESTIONS]


def test_vietnamese_without_diacritics_gets_full_marks() -> None:
    text = _strip_accents((EXAMPLES / "correct_vi.yaml").read_text(encoding="utf-8"))
    assert "đ" not in text and "ươ" not in text
    data, problems = parse_answers(text)
    assert problems == [] and data is not None
    assert sum(r.score for r in score_questions(QUESTIONS, data, KEY)) == 24


def test_wrong_example_scores_zero_everywhere() -> None:
    results = score_questions(QUESTIONS, _example("wrong.yaml"), KEY)
    assert [(r.score, r.passed, r.outcome) for r in results] == [(0.0, False, "failed")] * len(QUESTIONS)
    assert all(r.message.startswith(("answered ", "none of the key points")) for r in results)


PARTIAL_SCORES = {
    "shape_reading.output_shape": 1, "shape_reading.weights_shape": 0, "shape_reading.device": 0,
    "shape_reading.dtype": 0, "complexity.growth_1024_to_4096": 3, "complexity.growth_2048_to_8192": 0,
    "complexity.weights_bytes": 4, "quiz.q1": 0.67, "quiz.q2": 0.5, "quiz.q3": 0.5, "quiz.q4": 0.5,
    "quiz.q5": 0.5, "quiz.q6": 0.5, "quiz.q7": 0, "quiz.q8": 0.5, "quiz.q9": 0.5, "quiz.q10": 0.2857,
}


def test_partial_example_gets_partial_credit() -> None:
    results = {r.test_id.removeprefix("question:"): r for r in score_questions(QUESTIONS, _example("partial.yaml"), KEY)}
    assert {i: r.score for i, r in results.items()} == pytest.approx(PARTIAL_SCORES)
    assert "add `device: <your answer>` under `shape_reading:`" in results["shape_reading.device"].message
    assert "`shape_reading.dtype` is empty" in results["shape_reading.dtype"].message
    assert "add `q7: <your answer>` under `quiz:`" in results["quiz.q7"].message
    q1 = results["quiz.q1"].message
    # two roles clearly said of Query and Key, the Value untouched: a partial score it stands by
    assert not results["quiz.q1"].needs_review
    # "Test the masks and monitor latency.": each item it names is a condition read, two of seven
    assert not results["quiz.q10"].needs_review
    assert q1.startswith("covered: the Query") and "missing: the Value" in q1


# ------------------------------------------------------------------ quiz paraphrases

FULL_MARKS = {
    "quiz.q1": [
        "Q encodes what a token wants to find, K encodes how a token can be found (like an index entry), "
        "and V holds the information it contributes once attended.",
        "Query: the question a position asks. Key: the label other positions are compared with. "
        "Value: the actual content returned and averaged by the attention weights.",
        "Query là token hiện tại đang cần gì, Key là đặc điểm để token khác tìm đến, Value là thông tin được truyền đi.",
        "Query la token hien tai dang can gi, Key la dac diem de token khac tim den, Value la thong tin duoc truyen di.",
    ],
    "quiz.q2": [
        "Without it, the scores' magnitude scales with d_k; big logits push softmax into a peaked distribution "
        "where gradients are tiny.",
        "Because the variance of q·k grows with head_dim; dividing keeps the logits in a range where softmax "
        "still has useful gradients.",
        "Nếu không chia, score rất lớn khiến softmax gần one-hot, gradient yếu, training khó ổn định.",
        "De giu do lon cua score on dinh, tranh softmax bi bao hoa va gradient yeu.",
    ],
    "quiz.q3": [
        "Padding mask: don't let anyone attend to the filler tokens added for batching. "
        "Causal mask: don't let a position look at tokens that come later.",
        "The padding mask deals with variable-length batches by ignoring PAD keys; the causal mask enforces "
        "autoregressive order so a token only sees the past and itself.",
        "Padding mask che các vị trí PAD vì đó không phải nội dung thật; causal mask che token phía sau.",
        "Padding mask bo qua token PAD; causal mask chan token tuong lai.",
    ],
    "quiz.q4": [
        "The model could peek at the token it is supposed to predict, so training loss looks great but at "
        "generation time that information isn't available.",
        "Without it, position i sees tokens i+1.., i.e. the labels. It learns to copy them, a shortcut that "
        "doesn't exist when we generate one token at a time.",
        "Token hiện tại nhìn thấy token tương lai (chính là đáp án) trong lúc train, nhưng khi inference thì chưa có.",
        "Vi luc train model nhin duoc dap an tuong lai, con khi suy luan thi khong co.",
    ],
    "quiz.q5": [
        "Several heads attend in parallel in different subspaces, each capturing a different pattern; their "
        "results are concatenated and mixed by W_o.",
        "embed_dim is split into num_heads smaller heads, each with separate learned projections, so the layer "
        "can model several types of relations at once; afterwards the heads are merged back.",
        "Chia embed_dim thành nhiều head, mỗi head học một kiểu quan hệ khác nhau, rồi gộp các head lại.",
        "Moi head hoc projection rieng, nhieu goc nhin khac nhau, sau do concat va project ve embed_dim.",
    ],
    "quiz.q6": [
        "Every token's attention is computed simultaneously via matmuls, while an RNN is inherently "
        "sequential: h_t needs h_{t-1}.",
        "Attention has no recurrence: the whole sequence is one batched matrix product on the GPU. "
        "RNNs must wait for the previous hidden state.",
        "Attention tính toàn bộ token cùng lúc bằng nhân ma trận trên GPU, còn RNN phải chạy lần lượt từng bước.",
        "Attention dung matrix multiplication cho toan bo sequence, RNN phu thuoc tuan tu.",
    ],
    "quiz.q7": [16, "16", "16x", "x16", "16 lần", "16 lan", "tăng 16 lần", "(8192/2048)^2",
                "(8192 / 2048)^2 = 16 lần.", "4^2 = 16", "It grows 16 times because it is seq_len x seq_len.",
                "Tăng 16 lần vì attention matrix là seq_len x seq_len."],
    "quiz.q8": [
        "The memory bandwidth bottleneck: it never writes the full n x n score matrix to HBM, computing it "
        "block by block in SRAM, which makes attention much faster.",
        "Naive attention is IO-bound. FlashAttention tiles the computation to reduce reads and writes to GPU "
        "memory, so throughput goes up.",
        "Giảm lượng bộ nhớ và băng thông vì không lưu toàn bộ ma trận attention, nhờ đó chạy nhanh hơn trên GPU.",
        "Giam memory traffic, khong materialize attention matrix, tang throughput tren GPU.",
    ],
    "quiz.q9": [
        "Attention is only one part of the network: there are many stacked layers, MLPs and residual paths, "
        "so the weights show correlation, not causation.",
        "Because what the model attends to is not necessarily why it made its prediction; the FFN and "
        "residual stream after attention also change the result.",
        "Vì output còn đi qua nhiều tầng, FFN, residual, phi tuyến; attention weight không phản ánh trực tiếp lý do.",
        "Vi con nhieu layer, FFN va residual phia sau; attention khong tuong ung truc tiep voi giai thich nhan qua.",
    ],
    "quiz.q10": [
        "Unit-test the masks, cap the sequence length, run in eval mode, keep dtype/device consistent, "
        "monitor latency and OOMs and keep a rollback.",
        "You need mask tests, a max context length, dropout disabled at inference, an optimized kernel like "
        "SDPA, alerts on latency, and a fallback.",
        "Phải kiểm thử mask, giới hạn độ dài, dùng eval(), dtype/device nhất quán, runtime tối ưu, theo dõi OOM.",
        "Can test mask, gioi han sequence length, eval dung, dtype/device nhat quan, giam sat OOM, co rollback.",
        ["test the padding and causal masks", "limit the sequence length", "call model.eval()", "use SDPA",
         "same dtype and device everywhere",
         "monitor p99 latency and OOM"],
    ],
}

ZERO_MARKS = {
    "quiz.q1": ["They are the same matrix: the input X copied three times.", "Không biết."],
    "quiz.q2": ["Because sqrt makes the numbers positive.", "To make it run faster on the CPU."],
    "quiz.q3": ["They are the same thing.", "Hai cái giống nhau."],
    "quiz.q4": ["Because the padding tokens leak into the output."],
    "quiz.q5": ["It uses a bigger learning rate.", "Tăng learning rate."],
    "quiz.q6": ["RNNs are slower because they have more parameters."],
    "quiz.q7": [4, "4 lần", "4x", "64", "160", "2^16", "(8192/2048)^3"],
    "quiz.q8": ["It makes attention more accurate by changing the formula."],
    "quiz.q9": ["Because attention weights are random."],
    "quiz.q10": ["Just use it, nothing is needed.", "Không cần gì cả."],
}


@pytest.mark.parametrize("question_id,answer", [(q, a) for q, items in FULL_MARKS.items() for a in items])
def test_correct_answer_in_any_wording_gets_full_marks(question_id: str, answer: Any) -> None:
    result = _one(question_id, answer)
    assert (result.score, result.passed) == (1.0, True), result.message


@pytest.mark.parametrize("question_id,answer", [(q, a) for q, items in ZERO_MARKS.items() for a in items])
def test_wrong_answer_gets_zero(question_id: str, answer: Any) -> None:
    result = _one(question_id, answer)
    assert (result.score, result.passed, result.outcome) == (0.0, False, "failed"), result.message


@pytest.mark.parametrize("question_id,answer,score", [
    ("quiz.q3", "The causal mask hides future tokens.", 0.5),
    ("quiz.q3", "Causal mask chặn token tương lai.", 0.5),
    ("quiz.q6", "An RNN is sequential.", 0.5),
    ("quiz.q1", "Value là nội dung được tổng hợp.", 0.33),
    ("quiz.q4", "Because at inference time the model generates left to right, so the future tokens just aren't there "
                "yet.", 0.5),
    ("quiz.q4", "Vì khi suy luận mô hình sinh lần lượt từng token, các token phía sau chưa hề tồn tại.", 0.5),
    ("quiz.q2", "chia sqrt de score khong bi qua to khi head_dim lon", 0.5),  # "quá to": too big
    ("quiz.q4", "Without it, the hidden state at position t is computed using tokens t+1, t+2, ..., so the thing being "
                "predicted is already visible during training.", 0.5),
    ("quiz.q8", "Memory: the big n×n attention matrix isn't kept around anymore, so long sequences fit on the card.", 0.5),
    ("quiz.q5", "Because there are several heads, the model can look at the sentence in several ways at once instead of "
                "just one, so it captures more kinds of patterns.", 0.5),
    ("quiz.q2", "It's a normalization so the numbers stay in a reasonable range and don't overflow when head_dim is "
                "big.", 0.5),
    ("quiz.q4", "During training token 3 can attend to token 4, which is exactly the target it has to output.", 0.5),
    ("quiz.q4", "Lúc train model nhìn được cả câu, kể cả các token phía sau, nên học sai.", 0.5),
    ("quiz.q4", "In training, the attention of position t covers positions t+1 and t+2 as well.", 0.5),
    ("quiz.q3", "Causal mask blocks the tokens after the current one. Padding mask is used to pad short sentences with "
                "zeros so the batch has the same shape.", 0.5),
    ("quiz.q6", "RNN phai xu ly tung token theo thu tu. Con attention nho multi-head, moi head chay mot token rieng nen "
                "song song.", 0.5),
    ("quiz.q4", "Khi train token nhìn được token tương lai nên học đường tắt. Còn lúc inference thì sẽ chậm hơn vì phải "
                "tính attention cho cả token tương lai.", 0.5),
    ("quiz.q6", "Attention tính cả sequence bằng nhân ma trận nên song song trên GPU. RNN chậm vì hidden state của nó "
                "tốn O(n^2) memory.", 0.5),
    ("quiz.q10", "Mask tests, a cap on seq_len, eval() so dropout is off, monitoring latency and OOM, and a rollback. The "
                 "dtype doesn't really matter, PyTorch casts it.", 5 / 7),
    ("quiz.q3", "The causal mask lets token i see only tokens 0..i. The padding mask is just there to make every "
                "sentence the same length.", 0.5),
    ("quiz.q9", "Weight cao không có nghĩa là nhân quả, và sau attention thì không còn lớp nào nữa nên weight là tất "
                "cả.", 0.5),
    ("quiz.q2", "Otherwise the softmax saturates and the gradients vanish. The sqrt comes from the number of heads: "
                "more heads, bigger scores.", 0.5),
    ("quiz.q2", "Không chia thì softmax bão hòa, gradient rất nhỏ; score lớn là vì nó bị nhân với số head.", 0.5),
    ("quiz.q3", "The causal mask hides the tokens after the current one. The padding mask is what the dataloader uses "
                "to make every sequence the same length.", 0.5),
    ("quiz.q3", "The causal mask keeps each token from seeing later ones. The padding mask is mostly about making the "
                "batch the same length.", 0.5),
    ("quiz.q10", "kiem thu mask", 1 / 7),
    ("quiz.q10", "test masks, limit length, eval(), dtype, monitoring latency, rollback", 1.0),  # six of seven: full
    ("quiz.q10", "test masks, limit length, eval(), dtype, monitoring, rollback, sdpa", 1.0),  # capped
    ("quiz.q10", "Test the masks, limit the length, use eval(), keep one dtype and watch latency.", 5 / 7),
])
def test_partial_answers_get_partial_credit(question_id: str, answer: str, score: float) -> None:
    result = _one(question_id, answer)
    assert result.score == pytest.approx(score, abs=1e-4)
    assert result.passed is (score == 1.0)


@pytest.mark.parametrize("answer,sevenths,review", [
    ("Cần test mask, giới hạn seq_len và gọi eval().", 3, False),  # each item named is a condition read
    ("Test the masks and keep a rollback plan.", 2, False),
    ("Cần test mask (padding + causal), dùng SDPA thay vì tự viết loop.", 2, False),  # inside brackets, set aside
    ("Cần test mask và theo dõi hệ thống khi chạy thật.", 1, True),  # "theo dõi hệ thống": monitoring, unread
    ("Mask tests, a max seq_len, and making sure nothing breaks at 3am.", 2, True),
])
def test_a_partial_list_of_conditions_is_sure_only_when_every_item_is_read(
        answer: str, sevenths: int, review: bool) -> None:
    result = _one("quiz.q10", answer)
    assert result.score == pytest.approx(sevenths / 7, abs=1e-4)
    assert result.needs_review is review, result.message


def test_text_messages_name_covered_and_missing_concepts() -> None:
    message = _one("quiz.q2", "Otherwise softmax saturates.").message
    assert message.startswith(f"{PROVISIONAL} covered: otherwise softmax saturates")
    assert "missing: dot products grow with head_dim" in message
    assert "Hint: What happens to softmax" in message


# ------------------------------------------------------------------ numeric and exact formats


@pytest.mark.parametrize("answer", [
    4294967296, 4294967296.0, "4294967296", "4,294,967,296", "4.294.967.296", "4 294 967 296",
    "4_294_967_296", "4294967296 bytes", "4,294,967,296 B", "4 GiB", "4 GB", "4096 MiB", "4.29e9", "~4.3 GB",
    "2^32", "2**32", "8*16*4096*4096*2", "8 x 16 x 4096 x 4096 x 2 bytes", "8 × 16 × 4096² × 2",
    "8*16*4096*4096*2 = 4294967296 bytes", "khoảng 4 GiB", "4 GiB (4,294,967,296 bytes)",
])
def test_weights_bytes_accepts_reasonable_formats(answer: Any) -> None:
    result = _one("complexity.weights_bytes", answer)
    assert (result.score, result.message) == (4.0, "correct."), result.message


@pytest.mark.parametrize("answer", [4e9, "4e9", 536870912, "512 MiB", "4 MB", 2**31, "16"])
def test_weights_bytes_rejects_wrong_numbers(answer: Any) -> None:
    assert _one("complexity.weights_bytes", answer).score == 0


@pytest.mark.parametrize("text,expected", [
    ("16,5", 16.5), ("4,096", 4096.0), ("1.5e3", 1500.0), ("-3", -3.0), ("16.0x", 16.0),
    ("it grows by a factor of 16", 16.0), ("from 1024 to 4096: 16 times", 16.0),
])
def test_read_number(text: str, expected: float) -> None:
    assert read_number(text) == (expected,)


@pytest.mark.parametrize("question_id,answer", [
    ("shape_reading.output_shape", [2, 5, 64]), ("shape_reading.output_shape", "[2, 5, 64]"),
    ("shape_reading.output_shape", "torch.Size([2, 5, 64])"), ("shape_reading.output_shape", "(2, 5, 64)"),
    ("shape_reading.output_shape", "2, 5, 64"), ("shape_reading.output_shape", "2 x 5 x 64"),
    ("shape_reading.output_shape", [2.0, "5", 64]), ("shape_reading.weights_shape", [2, 4, 5, 5]),
    ("shape_reading.weights_shape", "torch.Size([2, 4, 5, 5])"), ("shape_reading.device", "cpu"),
    ("shape_reading.device", " CPU "), ("shape_reading.device", "`cpu`"), ("shape_reading.device", "device(type='cpu')"),
    ("shape_reading.device", 'device(type="cpu")'), ("shape_reading.dtype", "float32"),
    ("shape_reading.dtype", "torch.float32"), ("shape_reading.dtype", "Torch.Float32"), ("shape_reading.dtype", "fp32"),
])
def test_exact_answers_are_normalised(question_id: str, answer: Any) -> None:
    assert _one(question_id, answer).passed


@pytest.mark.parametrize("question_id,answer", [
    ("shape_reading.output_shape", [2, 64, 5]), ("shape_reading.output_shape", "[2, 5, 64, 1]"),
    ("shape_reading.weights_shape", [2, 5, 5]), ("shape_reading.device", "cuda"), ("shape_reading.device", "cuda:0"),
    ("shape_reading.dtype", "float64"), ("shape_reading.dtype", "float16"), ("shape_reading.dtype", "float"),
])
def test_wrong_exact_answers_score_zero(question_id: str, answer: Any) -> None:
    result = _one(question_id, answer)
    assert (result.score, result.passed) == (0.0, False)
    assert result.message.startswith("answered ") and "not the expected answer" in result.message


# ------------------------------------------------------------------ missing, empty, malformed


def test_missing_answers_file_says_which_key_to_add() -> None:
    results = score_questions(QUESTIONS, None, KEY)
    assert all(r.score == 0 and not r.passed for r in results)
    by_id = {r.test_id: r.message for r in results}
    assert "add `q3: <your answer>` under `quiz:` in answers.yaml" in by_id["question:quiz.q3"]
    assert "add `weights_bytes: <your answer>` under `complexity:`" in by_id["question:complexity.weights_bytes"]


@pytest.mark.parametrize("doc,expected", [
    ({}, "answers.yaml has no `quiz.q3`: add `q3: <your answer>` under `quiz:` in answers.yaml."),
    ({"quiz": {"q1": "x"}}, "answers.yaml has no `quiz.q3`: add `q3: <your answer>` under `quiz:`"),
    ({"quiz": "I did the quiz"}, "`quiz` in answers.yaml is text, not a group of answers"),
    ({"quiz": {"q3": None}}, "`quiz.q3` is empty in answers.yaml: write your answer after `q3:`."),
    ({"quiz": {"q3": "   "}}, "`quiz.q3` is empty"),
    ({"quiz": {"q3": []}}, "`quiz.q3` is empty"),
    ({"quiz": {"q3": {"padding": "PAD"}}}, "`quiz.q3`: expected text, found a mapping"),
    ({"quiz": {"q3": True}}, "`quiz.q3`: expected text, found true/false"),
])
def test_missing_empty_and_malformed_answers_score_zero(doc: dict[str, Any], expected: str) -> None:
    result = score_questions([BY_ID["quiz.q3"]], doc, KEY)[0]
    assert (result.score, result.max_score, result.passed, result.outcome) == (0.0, 1.0, False, "failed")
    assert expected in result.message


def test_flat_dotted_key_is_accepted() -> None:
    assert score_questions([BY_ID["quiz.q7"]], {"quiz.q7": 16}, KEY)[0].passed


@pytest.mark.parametrize("question_id,answer,expected", [
    ("complexity.weights_bytes", {"value": 4}, "expected a number, found a mapping"),
    ("complexity.weights_bytes", [4294967296], "expected a number, found a list"),
    ("complexity.weights_bytes", True, "expected a number, found true/false"),
    ("complexity.weights_bytes", "four gigabytes", "could not find a number"),
    ("complexity.growth_1024_to_4096", "4 or 16", "found several numbers (4, 16)"),
    ("complexity.growth_1024_to_4096", float("nan"), "not a finite number"),
    ("complexity.growth_1024_to_4096", 10**400, "not a finite number"),
    ("shape_reading.output_shape", {"shape": [2, 5, 64]}, "expected a value or a list of values, found a mapping"),
    ("shape_reading.output_shape", [[2, 5, 64]], "expected a value or a list of values, found a list"),
])
def test_malformed_answers_score_zero_with_a_message(question_id: str, answer: Any, expected: str) -> None:
    result = _one(question_id, answer)
    assert (result.score, result.passed) == (0.0, False)
    assert result.message.startswith(f"`{question_id}`: ") and expected in result.message


# ------------------------------------------------------------------ hidden answers stay hidden

_EXPECTED_FORMS = [r"(?<![\w.])16(?![\w.])", r"4294967296", r"4,294,967,296", r"2, 5, 64", r"2, 4, 5, 5",
                   r"float32", r"\bcpu\b"]


def _samples() -> Iterator[tuple[str, Any]]:
    for name in ("wrong.yaml", "partial.yaml"):
        data = _example(name)
        for q in QUESTIONS:
            yield q.id, answers_module.lookup(data, q.id)
    for q, items in ZERO_MARKS.items():
        yield from ((q, a) for a in items)
    yield from (("complexity.weights_bytes", a) for a in ({"v": 1}, "four", 4e9, "4 MB"))
    yield from (("shape_reading.dtype", a) for a in ("float64", ["float", 32], 1.5))


@pytest.mark.parametrize("question_id,answer", list(_samples()))
def test_messages_never_contain_the_expected_answer(question_id: str, answer: Any) -> None:
    doc: Mapping[str, Any] = {} if answer is answers_module._MISSING else {question_id: answer}
    result = score_questions([BY_ID[question_id]], doc, KEY)[0]
    message = result.message.replace(answer_values.show(answer), "")  # the student's own words may echo
    for form in _EXPECTED_FORMS:
        assert not re.search(form, message), (form, result.message)


# ------------------------------------------------------------------ check mode


class _ExplodingKey(dict):  # type: ignore[type-arg]
    def __getitem__(self, item: Any) -> Any:
        raise AssertionError("check mode read the key")

    get = __getitem__  # type: ignore[assignment]


@pytest.mark.parametrize("name", ["correct_en.yaml", "wrong.yaml"])
def test_check_mode_says_present_never_right_or_wrong(name: str) -> None:
    for key in (None, _ExplodingKey()):
        results = score_questions(QUESTIONS, _example(name), key, check_only=True)
        assert [(r.score, r.max_score, r.passed, r.message) for r in results] == [(0.0, 0.0, True, "present")] * len(QUESTIONS)


def test_check_mode_reports_missing_and_malformed() -> None:
    data = _example("partial.yaml")
    data["complexity"]["weights_bytes"] = {"oops": 1}
    results = {r.test_id: r for r in score_questions(QUESTIONS, data, None, check_only=True)}
    failing = {i for i, r in results.items() if not r.passed}
    assert failing == {"question:shape_reading.device", "question:shape_reading.dtype",
                       "question:complexity.weights_bytes", "question:quiz.q7"}
    assert all(r.score == 0 and r.max_score == 0 for r in results.values())
    assert "add `q7: <your answer>` under `quiz:`" in results["question:quiz.q7"].message
    assert "expected a number, found a mapping" in results["question:complexity.weights_bytes"].message


def test_grading_without_a_key_is_an_assignment_error() -> None:
    assert issubclass(AnswerKeyError, AssignmentError)
    with pytest.raises(AnswerKeyError, match="no answer key"):
        score_questions(QUESTIONS, {}, None)
    with pytest.raises(AnswerKeyError, match="`quiz.q3`: no entry"):
        score_questions(QUESTIONS, {}, {k: v for k, v in KEY.items() if k != "quiz.q3"})


@pytest.mark.parametrize("entry,problem", [
    ({"rubric": []}, "non-empty `rubric`"),
    ({"rubric": [{"points": 1, "concept": "c", "any": ["("]}]}, "'(' is not a valid regular expression"),
    ({"rubric": [{"points": 0.5, "concept": "c", "any": ["x"]}]}, "add up to 0.5"),
    ({"rubric": [{"points": 1, "concept": "c"}]}, "needs `accept` (or `any` or `all`)"),
    ({"rubric": [{"points": 1, "concept": "c", "acept": ["x"], "any": ["x"]}]}, "unknown field(s) ['acept']"),
    ({"rubric": [{"points": 1, "concept": "c", "accept": ["x"], "reject": ["a ... ("]}]}, "not a valid regular"),
    ({"rubric": [{"points": 1, "concept": "c", "accept": ["x"], "subject": "y"}]}, "`subject` must be a list"),
])
def test_check_key_finds_broken_rubrics(entry: dict[str, Any], problem: str) -> None:
    problems = check_key([BY_ID["quiz.q3"]], {"quiz.q3": entry})
    assert len(problems) == 1 and problem in problems[0]


# ------------------------------------------------------------------ other question types


def test_manual_questions_wait_for_the_instructor() -> None:
    q = Question(id="essay.production", exercise="quiz", prompt="Can attention be used in production?",
                 type="manual", points=5)
    graded = score_questions([q], {"essay": {"production": "Yes, if ..."}}, {})[0]
    assert (graded.score, graded.max_score, graded.passed) == (0.0, 5.0, False)
    assert "waiting for the instructor's score" in graded.message
    checked = score_questions([q], {"essay": {"production": "Yes"}}, None, check_only=True)[0]
    assert (checked.passed, checked.message) == (True, "present")


def test_choice_questions() -> None:
    q = Question(id="mc.mask", exercise="quiz", prompt="Which mask hides future tokens?", type="choice",
                 points=2, choices=("padding", "causal"), visibility="hidden")
    key = {"mc.mask": {"answer": "causal", "hint": "Think of decoder-only models."}}
    right = score_questions([q], {"mc": {"mask": " Causal "}}, key)[0]
    wrong = score_questions([q], {"mc": {"mask": "padding"}}, key)[0]
    odd = score_questions([q], {"mc": {"mask": "both"}}, key)[0]
    assert (right.score, right.visibility, wrong.score, odd.score) == (2.0, "hidden", 0.0, 0.0)
    assert "causal" not in wrong.message and "Think of decoder-only" in wrong.message
    assert "not one of the choices: padding, causal" in odd.message
    assert check_key([q], {"mc.mask": {"answer": "neither"}}) != []


# ------------------------------------------------------------------ reading answers.yaml


def _write(tmp_path: Path, content: bytes | str) -> Path:
    path = tmp_path / "answers.yaml"
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


_HOSTILE = [
    (b"quiz: [\n", "is not valid YAML (line"),
    (b"quiz:\n\tq1: x\n", "is not valid YAML"),
    (b"- 16\n- 4\n", "must hold `key: value` pairs at the top level"),
    (b"just some text\n", "but it holds text"),
    ("quiz:\n  q1: t\u00f4i\n".encode("latin-1"), "is not UTF-8 text"),
    (b"a: &a [1, 2]\nb: *a\n", "aliases (*name) are not allowed"),
    (b"a: &a ['lol','lol']\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
     "aliases (*name) are not allowed"),
    (b"x: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
    (b"x: " + b"9" * 5000 + b"\n", "cannot be read"),
    (b"x: !!python/object/apply:os.system ['true']\n", "is not valid YAML"),
    (b"q: " + b"a" * (256 * 1024) + b"\n", "larger than 256 KiB"),
]


@pytest.mark.parametrize("content,expected", _HOSTILE, ids=[expected for _, expected in _HOSTILE])
def test_hostile_or_broken_answer_files(tmp_path: Path, content: bytes, expected: str) -> None:
    data, problems = load_answers(_write(tmp_path, content))
    assert data is None and len(problems) == 1 and expected in problems[0], problems


def test_missing_empty_linked_and_bom_files(tmp_path: Path) -> None:
    assert load_answers(tmp_path / "answers.yaml") == (None, ["there is no answers.yaml; the written answers score 0 until you add it."])
    assert load_answers(_write(tmp_path, "# nothing yet\n")) == ({}, ["answers.yaml holds no answers yet."])
    assert load_answers(_write(tmp_path, "\ufeffquiz:\n  q7: 16\n")) == ({"quiz": {"q7": 16}}, [])
    secret = tmp_path / "secret.txt"
    secret.write_text("quiz: {q1: secret}\n")
    link = tmp_path / "linked" / "answers.yaml"
    link.parent.mkdir()
    os.symlink(secret, link)
    assert load_answers(link)[0] is None and "not a regular file" in load_answers(link)[1][0]
    assert load_answers(tmp_path)[0] is None


def test_yaml_quirks_are_read_as_students_mean_them(tmp_path: Path) -> None:
    text = "complexity:\n  weights_bytes: 4,294,967,296\n  growth_1024_to_4096: 16x\nshape_reading:\n  dtype: float32\n"
    data, problems = load_answers(_write(tmp_path, text))
    assert problems == [] and data is not None
    qs = [BY_ID["complexity.weights_bytes"], BY_ID["complexity.growth_1024_to_4096"], BY_ID["shape_reading.dtype"]]
    assert [r.passed for r in score_questions(qs, data, KEY)] == [True, True, True]


# ------------------------------------------------------------------ template


def test_template_lists_every_question_empty() -> None:
    text = template_answers(QUESTIONS)
    data, problems = parse_answers(text)
    assert problems == [] and data is not None
    assert list(data) == ["shape_reading", "complexity", "quiz"]
    assert all(answers_module.lookup(data, q.id) is None for q in QUESTIONS)
    results = score_questions(QUESTIONS, data, None, check_only=True)
    assert all(not r.passed and "is empty in answers.yaml" in r.message for r in results)
    assert "# 1. How do Query, Key and Value differ?" in text
    assert not any(answer in text for answer in ("4294967296", "float32", "2, 5, 64", "2, 4, 5, 5", "cpu\n"))


def test_template_rejects_clashing_ids() -> None:
    clash = [Question(id="a", exercise="e", prompt="p", type="text", points=1),
             Question(id="a.b", exercise="e", prompt="p", type="text", points=1)]
    with pytest.raises(ValueError, match="a.b"):
        template_answers(clash)


# ------------------------------------------------------------------ claims, not vocabulary (issue 10)

PROVISIONAL = "provisional: your instructor will review this answer."

# Wrong answers that use the key's words: opposite claims, swapped roles, key words
# strung together, words in another sense. Each must score 0, or be flagged for review
# when it gets any points.
WRONG_WITH_THE_WORDS = [
    ("quiz.q1", "The Key is what the token is looking for, the Query is the label other tokens are matched on, "
                "and the Value is the score between them."),
    ("quiz.q1", "The Value decides which tokens to attend to and the Key holds the content that is summed."),
    ("quiz.q1", "query key value dot product softmax weighted sum matching content"),
    ("quiz.q2", "Dividing by sqrt(d) makes the softmax sharper and the gradients larger."),
    ("quiz.q2", "dividing by sqrt(d) makes the softmax sharper and the gradients larger"),
    ("quiz.q2", "saturation gradient variance scale large"),
    ("quiz.q2", "Scaling makes the scores larger so softmax can pick the best token."),
    ("quiz.q3", "padding mask hides future tokens, causal mask hides PAD"),
    ("quiz.q3", "The causal mask removes PAD tokens and the padding mask stops tokens from seeing the future."),
    ("quiz.q3", "The padding mask does not keep PAD tokens out of attention; the causal mask lets every token see "
                "the whole sentence."),
    ("quiz.q4", "Without the mask the model trains faster now, but in the future, when we deploy for inference, "
                "it uses more memory."),
    ("quiz.q4", "The model can't see future tokens even without the mask, so there is no leakage."),
    ("quiz.q5", "Multi-head attention does not let heads learn different relations; it just runs the same "
                "attention several times."),
    ("quiz.q5", "heads concat projection subspace capacity"),
    ("quiz.q6", "Attention has to process tokens one by one, while an RNN sees the whole sequence at once."),
    ("quiz.q6", "Attention does not compute tokens in parallel; it is faster only because it has fewer parameters."),
    ("quiz.q8", "FlashAttention stores the full attention matrix in memory so that it can be reused."),
    ("quiz.q8", "It addresses the memory of the model: the model forgets long context, so it gets a longer memory."),
    ("quiz.q9", "They are enough: the weights directly show which tokens caused the output."),
    ("quiz.q9", "Because the causal mask hides the future tokens."),
    # a right point, then a wrong claim on the same question: never full marks without a person
    ("quiz.q9", "Vi attention weight cao chua chac la ly do model quyet dinh nhu vay. Con ve kien truc thi "
                "attention la lop cuoi cung, khong co gi phia sau."),
    ("quiz.q9", "Vì output còn đi qua FFN, residual, nhiều layer nonlinear. Tuy nhiên nếu lấy attention của layer "
                "cuối thì nó chính là causal explanation của output."),
    ("quiz.q9", "A high weight is not why the model decided. Also the weights of all heads are always the same."),
    ("quiz.q3", "Hai mask thực ra làm cùng một việc: đều chặn PAD và chặn tương lai như nhau."),
    ("quiz.q3", "padding mask che PAD, còn causal mask che các token trước nó"),
    ("quiz.q2", "Chia sqrt(head_dim) để làm score nhỏ lại, giúp tính toán nhanh hơn và đỡ tốn VRAM."),
    ("quiz.q2", "Chia √d_k để score nhỏ lại, từ đó attention matrix chiếm ít VRAM hơn và tránh OOM khi sequence dài."),
    ("quiz.q2", "Chia sqrt(d_k) để tránh softmax saturated. Còn độ lớn của score thì không bị ảnh hưởng bởi dimension, chỉ "
                "là trick cho gradient đẹp hơn."),
    ("quiz.q3", "The causal mask stops tokens from attending to later positions in the sequence. The padding mask is just "
                "for making the batch the same length."),
    ("quiz.q2", "Để tránh saturate thì phải chia, vì nếu không chia thì score quá nhỏ, softmax ra phân phối đều (uniform) "
                "và gradient bị vanishing."),
    ("quiz.q5", "Multi-head concat các token trong câu lại với nhau thành một vector dài rồi project về embed_dim."),
    ("quiz.q3", "The padding mask zeroes out attention to <pad> positions. The causal mask hides the past tokens so the "
                "model only focuses on the current and upcoming words."),
    ("quiz.q6", "RNN bị sequential dependency, h_t cần h_{t-1}. Attention parallel tốt hơn vì nó chỉ nhìn một window nhỏ "
                "xung quanh token như CNN."),
    ("quiz.q3", "Causal mask là ma trận tam giác dưới, để token không nhìn được các token phía sau. Padding mask thì "
                "dùng để giới hạn độ dài câu tối đa."),
    ("quiz.q3", "Causal mask che các future token. Padding mask thì để pad các câu ngắn cho bằng câu dài nhất trong batch."),
    ("quiz.q3", "Padding mask chặn các vị trí <pad>. Causal mask chặn future token. Causal mask chỉ cần khi inference, "
                "lúc training thì không cần vì đã có label."),
    ("quiz.q8", "It computes attention tile by tile, so memory traffic drops and throughput goes up. The catch is that "
                "it's an approximation of softmax attention."),
    ("quiz.q8", "flash attention chay nhanh hon tren gpu nhung ton nhieu memory hon vi phai luu them cac block"),
    ("quiz.q9", "A high weight doesn't mean that token caused the output. Also, after the attention layer the output "
                "goes straight to the final prediction."),
    ("quiz.q5", "Multi-head giúp tăng capacity vì dùng nhiều GPU, mỗi head chạy trên một GPU riêng."),
    ("quiz.q5", "Multi-head tức là mỗi head xử lý một phần khác nhau của batch để chạy song song; sau đó concat output "
                "các head rồi qua W_o project về embed_dim."),
    ("quiz.q5", "Concat các head rồi qua output projection về embed_dim. Capacity tăng vì mỗi head có embed_dim riêng "
                "đầy đủ."),
    ("quiz.q8", "FlashAttention giảm memory của attention matrix bằng cách tính theo block. Nhưng tốc độ thì giống hệt "
                "attention thường."),
    ("quiz.q10", "Phải có unit test cho padding/causal mask, set max seq_len theo VRAM, gọi model.eval(), monitor p99 "
                 "latency với OOM, và có rollback. Dtype thì cứ để FP32 mặc định, không cần để ý."),
    ("quiz.q10", "No tests are needed and dropout should stay on in production."),
    ("quiz.q8", "FlashAttention làm tăng memory usage một chút để đổi lấy accuracy cao hơn so với attention thường."),
    ("quiz.q9", "Tại residual và FFN làm attention weight bị đổi giá trị sau đó, nên weight mình in ra bị sai số."),
    ("quiz.q4", "Causal mask làm cho model chỉ nhìn được các token tương lai; bỏ nó đi thì model nhìn vào quá khứ nên leak."),
    ("quiz.q2", "Chia sqrt(head_dim) là để mọi head có cùng độ lớn trước khi concat, không head nào át head nào."),
    ("quiz.q4", "vi causal mask giup model nhin duoc ca token tuong lai nen hieu context tot hon, bo no di thi model thieu thong tin"),
    ("quiz.q10", "Self-attention có độ phức tạp O(n^2) theo độ dài chuỗi nên chạy chậm hơn RNN."),
    ("quiz.q2", "Ta chia sqrt(d) để giảm gradient, vì gradient quá lớn làm softmax bão hòa và điểm bị explode."),
    ("quiz.q2", "The point is to focus more sharply: after the division the softmax is closer to one-hot."),
    ("quiz.q8", "Flash attention is faster because it caches the full attention matrix in GPU memory and never recomputes it."),
    ("quiz.q2", "sqrt(d) giống temperature, chia cho nó để attention sharp hơn và tập trung vào một token."),
    ("quiz.q6", "vi attention tach cau ra nhieu head, moi head chay tren 1 GPU khac nhau nen song song duoc"),
    ("quiz.q9", "Vì trọng số attention đã đi qua FFN và residual nên bị biến đổi, không còn đúng nữa."),
    ("quiz.q6", "Attention nhanh vì dùng dropout nên các token được tính độc lập với nhau."),
    ("quiz.q3", "Không cần mask nào cả vì softmax tự cho PAD và token tương lai weight gần 0; mask chỉ để tiết kiệm bộ nhớ."),
    ("quiz.q8", "FlashAttention puts the whole attention matrix in SRAM instead of HBM, that is why it is faster."),
    ("quiz.q4", "Thiếu causal mask thì khi inference model đọc nhầm KV cache của request khác nên lộ dữ liệu."),
    ("quiz.q2", "Why must the attention scores be divided by sqrt(head_dim)?"),
    ("quiz.q6", "Vì sao attention train parallel tốt hơn RNN?"),
]


@pytest.mark.parametrize("question_id,answer", WRONG_WITH_THE_WORDS)
def test_wrong_claims_in_the_keys_words_do_not_score(question_id: str, answer: str) -> None:
    result = _one(question_id, answer)
    assert result.score == 0.0 or (result.needs_review and result.score < 1.0), result.message
    assert result.needs_review is not None and result.review is not None


def test_key_words_before_a_thin_sentence_go_to_a_person() -> None:
    """No function word anywhere, so not a sentence; its last item is too long for a term: still
    key words, not claims (blind218's b220-041 scored 1.0 without a flag)."""
    result = _one("quiz.q3", "Mask: True/False, tam giác, -inf, <pad>, masked_fill. Hai loại mask khác nhau.")
    assert result.needs_review and result.review is not None
    assert any("bare terms" in r for r in result.review.reasons), result.review.reasons


# Right answers in other words (the examples among them): full marks.
RIGHT_IN_OTHER_WORDS = [
    ("quiz.q6", "In an RNN step t can't start until step t-1 is done. In attention all positions are computed "
                "at the same time from a few matrix products."),
    ("quiz.q3", "The padding mask hides the filler <pad> positions; the causal mask hides any position after i."),
    ("quiz.q3", "One hides the filler positions added to make sequences the same length; the other lets position "
                "i see only itself and what came before it, never any position after i."),
    ("quiz.q9", "Output còn qua nhiều layer, FFN và residual; attention weight cao chưa chắc là nguyên nhân."),
    ("quiz.q1", "Query is what the token is looking for, Key is what it is matched on, and the Value is what "
                "token j hands over: out_i = Σ softmax·v_j."),
    ("quiz.q1", "Think of a database: the query is your search, keys are the indexed fields compared with it, "
                "values are the records you get back."),
    ("quiz.q2", "Dot products grow with the head dimension. Dividing keeps the scores at a stable scale, so the "
                "softmax does not saturate into a near one-hot distribution with weak gradients."),
    ("quiz.q2", "Để scale của score không phụ thuộc head_dim; không chia thì softmax gần one-hot nên gradient "
                "vanishing."),
    ("quiz.q4", "It's like practising with the answer sheet visible: in the real exam there's no answer sheet. "
                "The model sees the next tokens in training but won't have them when generating."),
    ("quiz.q4", "vi luc train token i nhin thay token i+1 chinh la nhan can du doan, con luc inference thi chua co "
                "token do"),
    ("quiz.q5", "Each head has its own Q/K/V projections and learns a different kind of relation; their outputs "
                "are concatenated and projected back to embed_dim."),
    ("quiz.q6", "Everything is one big matrix multiplication over the whole sequence, so the GPU runs it in "
                "parallel; RNN has to go step by step (tuần tự)."),
    ("quiz.q8", "flash attention tinh attention theo block, khong luu ca ma tran n x n vao HBM, giam doc ghi bo "
                "nho va tang toc do tren GPU"),
    ("quiz.q9", "Being CC'd (high attention) doesn't show that a token caused the outcome, and the decision still "
                "went through many more layers, FFN and residual connections afterwards."),
]


@pytest.mark.parametrize("question_id,answer", RIGHT_IN_OTHER_WORDS)
def test_right_claims_in_other_words_get_full_marks(question_id: str, answer: str) -> None:
    result = _one(question_id, answer)
    assert (result.score, result.passed) == (1.0, True), result.message


@pytest.mark.parametrize("question_id,answer,score", [
    # "future" in another sense does not make the causal point
    ("quiz.q3", "Padding mask sets PAD positions to -inf. The causal mask is needed so that in the future we can "
                "run inference faster.", 0.5),
    # "gradient" in another sense is not the saturation point
    ("quiz.q2", "To keep the scores on a stable scale when head_dim grows. Also the gradient of the output "
                "projection is computed after the heads are concatenated.", 0.5),
    # "kernels" and "monitoring" in other senses are not conditions
    ("quiz.q10", "Test the masks and cap seq_len. Monitoring of the team's workload is needed since writing "
                 "custom kernels takes time.", 2 / 7),
    # evaluating a model, avoiding OOM and a model's capacity are not eval() mode, monitoring or a length cap
    ("quiz.q10", "Test the masks. Also eval kỹ accuracy trên benchmark trước khi deploy.", 1 / 7),
    ("quiz.q10", "Cần giới hạn seq_len để tránh OOM và phải để model ở eval mode.", 2 / 7),
    ("quiz.q10", "Cần chia score cho sqrt(head_dim) và dùng nhiều head hơn để tăng capacity.", 0.0),
    ("quiz.q10", "Attention matrix tăng 16 lần khi sequence length tăng từ 2048 lên 8192.", 0.0),
])
def test_a_word_in_another_sense_earns_nothing(question_id: str, answer: str, score: float) -> None:
    assert _one(question_id, answer).score == pytest.approx(score, abs=1e-4)


def test_swapped_roles_say_which_point_is_turned_around() -> None:
    result = _one("quiz.q6", "Attention has to process tokens one by one, while an RNN sees the whole sequence "
                             "at once.")
    assert result.score == 0.0
    assert "states the opposite of" in result.message


def test_negated_point_earns_nothing_and_is_flagged() -> None:
    result = _one("quiz.q8", "It does not reduce memory use; it just changes the formula.")
    assert (result.score, result.needs_review) == (0.0, True)
    assert result.message.startswith(PROVISIONAL)
    assert result.review is not None and any("negation" in r for r in result.review.reasons)


def test_a_repeated_question_scores_zero_and_says_so() -> None:
    result = _one("quiz.q9", "Why are attention weights not enough as evidence for explainability?")
    assert (result.score, result.needs_review) == (0.0, False)
    assert "repeats the question" in result.message


def test_negation_words_read_with_and_without_diacritics_never_as_other_words() -> None:
    # "chưa"/"chua" is a negation; "chứa" (contains) is not; "K" is the Key, not "không".
    assert _one("quiz.q3", "Padding mask chặn token PAD; causal mask chưa cho token nhìn tương lai.").score == 1.0
    negated = _one("quiz.q5", "Mỗi head ko học quan hệ khác nhau, chỉ lặp lại; sau đó concat lại.")
    assert negated.score == 0.5 and negated.needs_review
    assert _one("quiz.q1", "Q la nhu cau tim context, K la dau hieu de duoc match, V la noi dung tong hop").score == 1.0


# ------------------------------------------------------------------ needs_review on every written answer


def test_every_written_answer_says_whether_it_needs_review() -> None:
    for name in ("correct_en.yaml", "correct_vi.yaml", "partial.yaml", "wrong.yaml"):
        for q, r in zip(QUESTIONS, score_questions(QUESTIONS, _example(name), KEY)):
            if q.type == "text":
                assert isinstance(r.needs_review, bool), (name, q.id)
            else:
                assert r.needs_review is None and r.review is None, (name, q.id)


@pytest.mark.parametrize("name", ["correct_en.yaml", "correct_vi.yaml"])
def test_correct_examples_are_not_flagged(name: str) -> None:
    results = score_questions(QUESTIONS, _example(name), KEY)
    assert not [r.test_id for r in results if r.needs_review]


def test_review_lists_concepts_found_and_missed() -> None:
    result = _one("quiz.q3", "Causal mask chặn token tương lai.")
    assert result.review is not None and result.needs_review is True
    assert any("partial credit" in r for r in result.review.reasons)
    assert result.review.found == ("the causal mask hides future tokens",)
    assert result.review.missed == ("the padding mask hides PAD tokens, which are not real content",)


@pytest.mark.parametrize("question_id,answer,why", [
    ("quiz.q2", "em chưa hiểu phần này lắm, chắc là để tránh gradient vanishing?", "hedges"),
    ("quiz.q3", "Padding: PAD. Causal: future.", "short"),
    ("quiz.q9", "Because " + "the model is deep and the output goes through many layers " * 12, "unusually long"),
    ("quiz.q6", "In an RNN each hidden state depends on the previous one, so you must go step by step; attention "
                "is also parallel across multiple heads which is a nice property of the transformer.", "long answer"),
])
def test_unsure_scores_are_flagged_with_a_reason(question_id: str, answer: str, why: str) -> None:
    result = _one(question_id, answer)
    assert result.needs_review and result.message.startswith(PROVISIONAL), result.message
    assert result.review is not None and any(why in r for r in result.review.reasons), result.review


def test_empty_written_answer_is_certain() -> None:
    result = _one("quiz.q3", "")
    assert (result.score, result.needs_review) == (0.0, False)
    assert result.review is not None and len(result.review.missed) == 2 and not result.review.found
