"""The rubric engine on a rubric that is not the lesson's: subjects, negation, opposites.

Everything lesson-specific lives in an answer key; these tests show the engine reads
claims in any subject, in English and Vietnamese.
"""

from __future__ import annotations

import pytest

from grader.answers.rubric import check_rubric, grade_text, term

PETS = {"rubric": [
    {"points": 0.5, "concept": "cats chase mice",
     "subject": ["cats?|mèo"], "accept": ["chas\\w* ... mice", "đuổi chuột"], "reject": ["fear\\w* mice|sợ chuột"]},
    {"points": 0.5, "concept": "dogs guard the house",
     "subject": ["dogs?|chó"], "accept": ["guard\\w*", "canh (giữ )?nhà"]},
]}


def _grade(text: str):
    return grade_text(text, PETS, 1.0, "What do cats and dogs do?")


@pytest.mark.parametrize("text", [
    "Cats chase mice, dogs guard the house.",
    "The cat is the one that chases the mice; the dog guards.",
    "Mèo đuổi chuột, còn chó canh giữ nhà.",
    "meo duoi chuot, cho canh nha",                       # no diacritics
    "A dog guards the house while the cat chases mice.",  # order of the points does not matter
])
def test_points_said_of_their_subjects_score(text: str) -> None:
    grade = _grade(text)
    assert (grade.score, grade.reasons) == (1.0, ()), grade


def test_swapped_subjects_are_opposite_claims() -> None:
    grade = _grade("Dogs chase mice, cats guard the house.")
    assert grade.score == 0.0
    assert set(grade.opposite) == {"cats chase mice", "dogs guard the house"}


def test_a_negated_point_earns_nothing_and_is_flagged() -> None:
    for text in ("Cats do not chase mice; dogs guard the house.", "Mèo không đuổi chuột, chó canh nhà.",
                 "Cats don't chase mice, dogs guard."):
        grade = _grade(text)
        assert grade.score == 0.5 and grade.found == ("dogs guard the house",), text
        assert any("negation" in r for r in grade.reasons), text


def test_a_gap_never_crosses_a_negation() -> None:
    assert term("chas\\w* ... mice").search("chases the mice")
    assert not term("chas\\w* ... mice").search("chases no mice")
    assert not term("chas\\w* ... mice").search("chases but never catches the mice")


def test_reject_and_accept_both_said_is_a_conflict() -> None:
    grade = _grade("Cats chase mice but cats fear mice; dogs guard.")
    assert grade.score == 0.5 and any("opposite" in r for r in grade.reasons)


def test_a_diacritic_that_makes_another_word_is_not_a_negation() -> None:
    # "chứa" (contains) is not "chưa" (not yet), though both fold to "chua"
    numbers = {"rubric": [{"points": 1, "concept": "holds numbers", "accept": ["số"]}]}
    assert grade_text("Ma trận này chứa các số nguyên dương.", numbers, 1.0).score == 1.0
    not_yet = grade_text("Ma trận này chưa có số nguyên dương nào.", numbers, 1.0)
    assert not_yet.score == 0.0 and not_yet.reasons
    assert grade_text("Ma tran nay chua co so nguyen duong nao.", numbers, 1.0).score == 0.0


def test_whole_words_even_after_a_group() -> None:
    assert term("k(_\\w+)?").search("k_j") and term("k(_\\w+)?").search("the k vector")
    assert not term("k(_\\w+)?").search("what kind")
    assert not term("(is|are) ... score").search("this score")
    assert term("{not} ... score").search("doesn't change the score")


def test_keyword_lists_and_copied_questions_score_zero() -> None:
    assert _grade("cats chase mice dogs guard house").score == 0.0
    copied = _grade("What do cats and dogs do?")
    assert copied.copied and copied.score == 0.0


def test_unknown_fields_and_bad_patterns_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown field"):
        check_rubric([{"points": 1, "concept": "c", "accept": ["x"], "rejects": ["y"]}], 1.0)
    with pytest.raises(ValueError, match="not a valid regular expression"):
        check_rubric([{"points": 1, "concept": "c", "accept": ["x"], "subject": ["("]}], 1.0)
    check_rubric(PETS["rubric"], 1.0)


# ------------------------------------------------------------- a partial score the grader stands by


def test_one_of_two_points_clearly_said_and_the_other_untouched_is_not_flagged() -> None:
    grade = _grade("The cat is the one that chases the mice around the whole garden.")
    assert grade.score == 0.5 and grade.reasons == (), grade


@pytest.mark.parametrize("text", [
    "Cats chase mice.",                                                # a fragment: too short to be sure
    "The cat is the one that chases the mice, the dog sleeps all day.",  # the other subject is named
    "The cat is the one that chases the mice, maybe all day long too?",  # a hedge
    "The cat is the one that chases mice and never the birds in the garden.",  # a negation outside the point
])
def test_a_partial_score_with_any_doubt_is_flagged(text: str) -> None:
    grade = _grade(text)
    assert grade.score == 0.5 and any("partial credit" in r for r in grade.reasons), (text, grade)


THREE = {"rubric": [
    {"points": 0.34, "concept": "cats chase mice", "subject": ["cats?"], "accept": ["chas\\w* ... mice"]},
    {"points": 0.33, "concept": "dogs guard the house", "subject": ["dogs?"], "accept": ["guard\\w*"]},
    {"points": 0.33, "concept": "birds sing", "subject": ["birds?"], "accept": ["sing\\w*"]},
]}


def test_points_clearly_said_with_the_others_untouched_are_not_flagged_with_three_points() -> None:
    grade = grade_text("The cat is the one that chases the mice, and the dog guards the house.", THREE, 1.0)
    assert grade.score == pytest.approx(0.67) and grade.reasons == (), grade
    named = grade_text("The cat is the one that chases the mice, and the bird is small and brown.", THREE, 1.0)
    assert named.score == pytest.approx(0.34) and any("partial credit" in r for r in named.reasons), named


def test_a_point_met_in_passing_without_its_subject_or_topic_is_flagged() -> None:
    speed = {"rubric": [
        {"points": 0.5, "concept": "it saves memory", "topic": ["memory"], "accept": ["fewer (reads|writes)"]},
        {"points": 0.5, "concept": "it is faster on the gpu", "topic": ["gpus?"], "accept": ["fast\\w*"]},
    ]}
    sure = grade_text("It makes the whole attention step run much faster on the GPU.", speed, 1.0)
    assert sure.score == 0.5 and sure.reasons == (), sure
    passing = grade_text("It fixes the vanishing gradient of deep models with a fast normalisation.", speed, 1.0)
    assert passing.score == 0.5 and any("partial credit" in r for r in passing.reasons), passing


def test_vietnamese_without_diacritics_no_is_it_and_chua_is_holds_unless_not_yet() -> None:
    from grader.answers.text import negations, read
    def said(text: str) -> list[str]:
        t = read(text)
        return [t.folded[a:b] for a, b in negations(t)]
    assert said("causal mask chan token tuong lai de no chi nhin qua khu") == []   # "nó"
    assert said("ma tran chua diem attention") == []                               # "chứa"
    assert said("luc inference chua co token do") == ["chua"]                      # "chưa"
    assert said("there is no future token") == ["no"]


def test_a_comma_list_of_terms_scores_zero_even_with_a_formula_in_it() -> None:
    assert _grade("cats, mice, chase, O(1), dogs, guard").score == 0.0
    assert _grade("cats chase mice, dogs guard the house, both are pets").score == 1.0


def test_a_question_that_asks_to_name_items_accepts_a_list() -> None:
    many = {"rubric": [{"points": 0.5, "concept": c, "accept": [c]} for c in ("cats", "dogs", "mice")]}
    assert grade_text("cats, dogs, mice", many, 1.0).score == 1.0


@pytest.mark.parametrize("text", ["Chắc là cats chase mice and dogs guard the house.",
                                  "I believe cats chase mice and dogs guard the house."])
def test_a_hedged_answer_that_earns_points_is_flagged(text: str) -> None:
    grade = _grade(text)
    assert grade.score > 0 and grade.reasons
