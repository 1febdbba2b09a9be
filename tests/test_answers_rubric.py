"""The rubric engine on a rubric that is not the lesson's: subjects, negation, opposites.

Everything lesson-specific lives in an answer key; these tests show the engine reads
claims in any subject, in English and Vietnamese.
"""

from __future__ import annotations

import pytest

from grader.answers import listing
from grader.answers.patterns import check_rubric, compile_key, reading, term
from grader.answers.rubric import grade_text
from grader.answers.text import FORMS, code_marks, hedged, read

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


def test_an_accept_and_a_reject_that_cross_both_stand() -> None:
    # "gradients are big" (the opposite) and "big ... saturates" (the point) share "big":
    # neither holds the other, so neither is the reading alone: a conflict for a person
    key = {"rubric": [{"points": 1.0, "concept": "large scores saturate the softmax",
                       "accept": ["big ... saturat\\w*"], "reject": ["gradients? (\\w+ )?big"]}]}
    crossed = grade_text("the gradients are big so the softmax saturates", key, 1.0)
    assert crossed.score == 0.0 and crossed.reasons, crossed
    held = grade_text("scores get big so the softmax saturates", key, 1.0)  # no rival: the point
    assert held.score == 1.0 and not held.reasons, held


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
    from grader.answers.negation import negations
    from grader.answers.text import read
    def said(text: str) -> list[str]:
        t = read(text)
        return [t.folded[a:b] for a, b in negations(t)]
    assert said("causal mask chan token tuong lai de no chi nhin qua khu") == []   # "nó"
    assert said("ma tran chua diem attention") == []                               # "chứa"
    assert said("luc inference chua co token do") == ["chua"]                      # "chưa"
    assert said("there is no future token") == ["no"]
    assert said("mỗi head một không gian con riêng") == []                          # "không gian": a space
    assert said("khong gian con khong doi") == ["khong"]
    assert said("khong giong RNN phai cho h_{t-1}") == []                           # "unlike an RNN"
    assert said("softmax isnt saturated") == ["isnt"]                             # typed without the apostrophe
    assert said("tốc độ hổng nhanh hơn đâu") == ["hong"]                           # southern "không"
    assert said("các head không giống nhau") == ["khong"]                          # not the same
    assert said("nen value 'bi hong' vao output") == []                           # "hỏng" (broken)
    assert said("em hong biet cai nay") == ["hong"]                                # "hông" (not)
    assert said("nhìn được tương lai, à không, ý là token phía sau") == []          # a correction
    assert said("và không cần giới hạn") == ["khong"]


def test_an_answer_with_a_few_marks_is_read_as_one_without_when_it_writes_common_words_plain() -> None:
    # "chặn" has its marks, "tuong lai" and "thi" do not: the writer types marks now and then
    assert not read("Causal mask chặn token tuong lai, padding mask thi chặn PAD.").accented
    assert read("Causal mask chặn token tương lai, padding mask thì chặn PAD.").accented


def test_words_struck_through_are_not_said() -> None:
    assert _grade("Cats ~~fear mice~~ chase mice, dogs guard the house.").score == 1.0
    assert _grade("Cats chase mice, dogs ~~guard the house~~ sleep.").score == 0.5


def test_a_comma_list_of_terms_scores_zero_even_with_a_formula_in_it() -> None:
    assert _grade("cats, mice, chase, O(1), dogs, guard").score == 0.0
    assert _grade("cats chase mice, dogs guard the house, both are pets").score == 1.0


def test_a_question_that_asks_to_name_items_accepts_a_list() -> None:
    many = {"rubric": [{"points": 0.5, "concept": c, "accept": [c]} for c in ("cats", "dogs", "mice")]}
    assert grade_text("cats, dogs, mice", many, 1.0).score == 1.0


def test_full_with_gives_full_points_from_that_many_items_and_their_own_below() -> None:
    seven = {"full_with": 2, "rubric": [{"points": 0.3, "concept": c, "accept": [c]} for c in ("cats", "dogs", "mice")]}
    check_rubric(seven["rubric"], 1.0, 2)  # items adding up to less than the question: full_with fills it
    assert grade_text("You need cats and dogs.", seven, 1.0).score == 1.0
    one = grade_text("You need cats in the house.", seven, 1.0)
    assert one.score == pytest.approx(0.3) and not one.reasons  # every item it names is read: a sure 0.3
    for text in ("You need cats, and a big garden.", "Cats and a big garden.", "Cats + a garden"):
        more = grade_text(text, seven, 1.0)  # an item no pattern reads may be another in other words
        assert more.score == pytest.approx(0.3) and more.reasons, text
    for bad in (0, 4, True, "2", 1.5):
        with pytest.raises(ValueError, match="full_with"):
            check_rubric(seven["rubric"], 1.0, bad)
    with pytest.raises(ValueError, match="add up to"):
        check_rubric(seven["rubric"], 1.0)


@pytest.mark.parametrize("text", ["Chắc là cats chase mice and dogs guard the house.",
                                  "I believe cats chase mice and dogs guard the house.",
                                  "Cats chase mice and dogs guard the house; the rest I don't remember.",
                                  "Cats chase mice, dogs guard the house, con phan sau thi em khong nho.",
                                  "Cats chase mice. Dogs guard the house, phần đó em chưa rõ lắm.",
                                  "Cats chase mice, and dogs guard the house somehow."])
def test_a_hedged_answer_that_earns_points_is_flagged(text: str) -> None:
    grade = _grade(text)
    assert grade.score > 0 and grade.reasons


@pytest.mark.parametrize("text", ["Cats guard the house and dogs chase mice, wait, no: cats chase mice, dogs guard the house.",
                                  "Cats chase mice, dogs chase mice too, I mean dogs guard the house.",
                                  "Chó đuổi chuột, à nhầm, con mèo mới là con đuổi chuột còn chó thì canh giữ nhà.",
                                  "Meo duoi chuot, cho canh nha, a khong, y em la cho canh giu nha."])
def test_an_answer_that_corrects_itself_goes_to_a_person(text: str) -> None:
    """How far back "wait, no" or "à nhầm" reaches (a word, a clause, the whole answer) is the
    reader's call: the answer may be right before or after it, so a person decides."""
    grade = _grade(text)
    assert grade.score > 0 and any("corrects itself" in r for r in grade.reasons), grade


def test_a_folded_word_that_reads_like_a_correction_is_none() -> None:
    """"à không," keeps its comma: "token A không ..." folds to the same letters."""
    assert hedged(read("Chó canh nhà, à không, mèo canh nhà.").folded)
    assert not hedged(read("Weight cao ở token A không chứng minh A là nguyên nhân.").folded)


def test_forgetting_said_of_something_else_is_no_hedge() -> None:
    assert _grade("Cats chase mice and dogs guard the house; mice don't remember the dogs.").reasons == ()


# --- how a sentence's shape changes what is claimed, on the same non-lesson rubric

SCALE = {"rubric": [
    {"points": 0.5, "concept": "without a lid the pot boils over", "topic": ["lid|nắp"],
     "accept": ["boil\\w* over|trào"], "reject": ["{not} (boil\\w* over|trào)"]},
    {"points": 0.5, "concept": "the lid keeps the heat in", "topic": ["heat|nhiệt"],
     "accept": ["(keeps?|giữ) ... (heat|nhiệt)"]},
]}


def test_a_negation_in_a_condition_does_not_reach_its_consequence() -> None:
    # "nếu không X thì Y" / "if not X then Y": the "không" belongs to the condition
    grade = grade_text("Nếu không đậy nắp thì nồi trào, nắp giữ nhiệt trong nồi.", SCALE, 1.0)
    assert (grade.score, grade.reasons) == (1.0, ()), grade
    assert grade_text("If there is no lid then it boils over; the lid keeps the heat in.", SCALE, 1.0).score == 1.0
    # without "thì"/"then" the negation is the claim's own
    assert grade_text("Nồi không trào, nắp giữ nhiệt.", SCALE, 1.0).score == 0.5


def test_not_equal_written_as_a_symbol_is_a_negation() -> None:
    for text in ("lid ≠ boils over; the lid keeps the heat in", "lid != boils over; the lid keeps the heat in"):
        grade = grade_text(text, SCALE, 1.0)
        assert grade.score == 0.5 and "without a lid the pot boils over" in grade.missed, text


def test_k_alone_is_a_negation_only_in_vietnamese() -> None:
    # "k" is texting for "không" between Vietnamese words; in English it is a letter ("q and k")
    assert grade_text("noi k bi trao, vi co nap giu nhiet", SCALE, 1.0).score == 0.5
    assert grade_text("With q and k boiling over the lid keeps the heat in.", SCALE, 1.0).score == 1.0
    # right after "q" it is the Key in Vietnamese too: "nếu q và k ..." denies nothing
    assert grade_text("nếu q và k trào thì nắp giữ nhiệt", SCALE, 1.0).score == 1.0
    assert grade_text("q, k trào, nắp giữ nhiệt", SCALE, 1.0).score == 1.0
    assert grade_text("em k biết q và k: nắp giữ nhiệt, nồi k trào", SCALE, 1.0).score == 0.5
    # "k là ...", "k: ..." define the Key
    assert grade_text("q la nap, k la thu giu nhiet, noi trao", SCALE, 1.0).score == 1.0


def test_con_without_its_accent_is_no_clause_word_in_an_accented_answer() -> None:
    # "con số" (a number) is not "còn" (as for): the clause goes on, its subject with it
    grade = _grade("Con mèo thì đuổi chuột, còn chó canh nhà.")
    assert grade.score == 1.0
    from grader.answers.text import read
    assert len(read("mấy con số trước softmax").clauses) == 1
    assert len(read("Value là nội dung còn Q với K thì khác").clauses) == 2
    assert len(read("Value la noi dung con Q va K thi khac").clauses) == 2  # no accent anywhere: "còn"
    assert len(read("model thay ca nhung token phia sau").clauses) == 1       # "những" (the plural)
    assert len(read("model thay token truoc nhung token sau thi khong").clauses) == 2  # "nhưng" (but)


def test_con_as_still_or_the_rest_opens_no_clause() -> None:
    # "không còn" (no more), "vẫn còn" (still), "còn lại" (the rest) are not "còn" (as for)
    from grader.answers.text import read
    assert len(read("sau attention thì không còn layer nào nữa").clauses) == 1
    assert len(read("sau attention thi khong con layer nao nua").clauses) == 1
    assert len(read("gradient vẫn còn đủ lớn để học").clauses) == 1
    assert len(read("cái còn lại thì che token tương lai").clauses) == 1
    assert len(read("padding mask che PAD, còn causal mask che tương lai").clauses) == 2


def test_one_and_the_other_are_not_said_of_the_last_subject() -> None:
    text = "Cats and dogs differ. The cat is a pet, the dog too. One guards the house, the other chases mice."
    grade = _grade(text)
    assert grade.score == 1.0 and not grade.opposite, grade
    assert _grade("Mèo và chó khác nhau: chó là vật nuôi. Một cái canh nhà, cái kia đuổi chuột.").score == 1.0


def test_an_opposite_set_aside_by_instead_of_is_not_claimed() -> None:
    grade = _grade("Cats chase mice instead of fearing mice, dogs guard.")
    assert (grade.score, grade.opposite) == (1.0, ()), grade


def test_a_number_list_does_not_cut_a_clause() -> None:
    from grader.answers.text import read
    assert len(read("row 1 can't see cols 2,3,4 because those are later").clauses) == 1


def test_no_before_a_vietnamese_word_is_it_not_a_negation_in_a_pattern() -> None:
    assert term("{not} ... causal").search("khong co nghia no la causal").start() == 0
    assert not term("{not} (\\w+ )?causal").search("no la causal")
    assert term("{not} ... causal").search("no causal link")
    assert not term("{not} (\\w+ )?(biet|know)").search("vi no biet truoc dap an")  # "nó biết": it knows
    assert not term("{not} ... sharp").search("chia cho no de attention sharp hon")  # "nó để": it, to
    assert not term("{not} (\\w+ )?(biết|know)", marked=True).search(code_marks("vì nó biết trước"))


def test_a_negation_in_a_clause_without_a_point_leaves_a_partial_sure() -> None:
    sure = grade_text("The cover keeps the heat inside the pot while cooking, which you cannot skip.", SCALE, 1.0)
    assert (sure.score, sure.reasons) == (0.5, ()), sure
    unsure = grade_text("It is not the cover alone that keeps the heat inside the pot.", SCALE, 1.0)
    assert unsure.reasons


def test_an_answer_written_with_diacritics_is_read_with_them() -> None:
    wait = {"rubric": [{"points": 1, "concept": "each step waits", "accept": ["chờ", "tầng"]}]}
    assert grade_text("Mỗi bước phải chờ bước trước.", wait, 1.0).score == 1.0
    assert grade_text("Ma trận này cho mỗi token một vector.", wait, 1.0).score == 0.0   # "cho" is "for"
    assert grade_text("Điểm tăng theo số chiều.", wait, 1.0).score == 0.0                # "tăng" is not "tầng"
    assert grade_text("moi buoc phai cho buoc truoc", wait, 1.0).score == 1.0             # without any: either
    # a plain letter in a pattern matches any diacritic; a tone may sit on either vowel
    plain = {"rubric": [{"points": 1, "concept": "c", "accept": ["khong the song song", "hóa"]}]}
    assert grade_text("RNN không thể song song.", plain, 1.0).score == 1.0
    assert grade_text("Chuẩn hoá điểm số.", plain, 1.0).score == 1.0


def test_tone_marks_move_onto_the_last_vowel_and_nothing_else_moves() -> None:
    from grader.answers.text import canon_tones
    assert canon_tones("hóa") == canon_tones("hoá") == "hoá"
    assert canon_tones("thủy tinh") == "thuỷ tinh"
    for text in ("người dùng", "Query là cái cần tìm", "plain english"):
        assert len(canon_tones(text)) == len(text)


def test_the_first_and_the_second_and_comparisons_are_not_said_of_the_last_subject() -> None:
    assert _grade("Cats chase mice. Dogs guard. So the first one chases mice, the second one guards.").score == 1.0
    grade = _grade("Cats chase mice. Dogs guard the house. Chasing mice vs sleeping all day.")
    assert (grade.score, grade.opposite) == (1.0, ()), grade


def test_not_in_a_pattern_is_also_its_contraction() -> None:
    assert term("not real").search("they aren't real") and term("not real").search("not real")
    assert not term("not real").search("knot real")
    assert term("{not} ... real").search("isn't real")  # {not} is untouched


def test_not_necessarily_is_a_claim_not_a_hedge() -> None:
    causal = {"rubric": [{"points": 1, "concept": "not a cause", "accept": ["{not} ... nguyên nhân"]}]}
    sure = grade_text("Trọng số cao chưa chắc là nguyên nhân của quyết định.", causal, 1.0)
    assert (sure.score, sure.reasons) == (1.0, ()), sure
    hedged = grade_text("Chắc là trọng số cao không phải nguyên nhân của quyết định.", causal, 1.0)
    assert hedged.score == 1.0 and any("hedge" in r for r in hedged.reasons)


def test_an_answer_that_only_sometimes_has_marks_is_read_without_them() -> None:
    wait = {"rubric": [{"points": 1, "concept": "each step waits", "accept": ["chờ"]}]}
    # "kiểu" has marks, but "la", "khong", "va" are typed plain: the writer drops marks
    assert grade_text("kiểu la buoc sau phai cho buoc truoc va khong song song", wait, 1.0).score == 1.0
    assert grade_text("Kiểu là bước sau phải cho bước trước.", wait, 1.0).score == 0.0


def test_both_says_a_point_of_every_subject() -> None:
    # "both" hands the cats' point to the dogs too: the dogs' opposite, flagged
    grade = _grade("Both chase mice; the dogs also guard the house.")
    assert "dogs guard the house" not in grade.found and grade.reasons, grade
    assert _grade("Cats chase mice; dogs guard the house.").reasons == ()


def test_a_sure_partial_says_its_point_where_it_names_the_topic() -> None:
    speed = {"rubric": [
        {"points": 0.5, "concept": "less memory", "topic": ["memory"], "accept": ["less memory"]},
        {"points": 0.5, "concept": "faster on the GPU", "topic": ["gpus?"], "accept": ["faster"]},
    ]}
    sure = grade_text("The GPU runs the whole thing faster than before, that is all.", speed, 1.0)
    assert (sure.score, sure.reasons) == (0.5, ()), sure
    unsure = grade_text("It fixes the network between GPUs in training, so syncing gets faster overall.", speed, 1.0)
    assert unsure.score == 0.5 and unsure.reasons, unsure


def test_an_opposite_inside_an_analogy_is_its_picture() -> None:
    grade = _grade("Cats are like hunters that chase mice, dogs guard the house.")
    assert grade.score == 1.0
    # the picture holds the words of an opposite ("fear mice"), not the claim
    assert _grade("Cats chase mice; it is like an elephant that fears mice. Dogs guard.").score == 1.0
    assert _grade("Cats fear mice; dogs guard.").score == 0.5


def test_not_only_adds_a_point_and_denies_none() -> None:
    assert _grade("Cats not only chase mice, dogs guard the house too.").score == 1.0
    assert _grade("Mèo không chỉ đuổi chuột, chó canh nhà.").score == 1.0
    assert _grade("Mèo không đuổi chuột, chó canh nhà.").score == 0.5


def test_a_denial_said_of_nothing_named_sets_two_subjects_side_by_side() -> None:
    # "no guarding: cats chase mice" denies it of the cats, so says it of the dogs; flagged
    grade = _grade("No guarding at all; cats only chase mice, all day long.")
    assert grade.score == 1.0 and any("negation" in r for r in grade.reasons), grade
    # said of a subject named before it, a denial is that subject's opposite, as ever
    assert _grade("Dogs never guard anything. Cats chase mice.").score == 0.5


PETS3 = {"rubric": [*PETS["rubric"], {"points": 0.5, "concept": "birds sing",
                                      "subject": ["birds?|chim"], "accept": ["sing\\w*|hót"]}]}


def test_a_clause_that_relates_two_other_points_swaps_no_role() -> None:
    text = "Cats chase mice. Dogs guard the house. Birds sing; guarding fits with chasing mice."
    grade = grade_text(text, PETS3, 1.5)
    assert (grade.score, grade.opposite) == (1.5, ()), grade
    # one other item's point said of the birds is still a swapped role
    assert "birds sing" in grade_text("Cats chase mice. Dogs guard. Birds guard the nest.", PETS3, 1.5).missed


def test_a_negation_that_a_patterns_gap_lets_in_still_turns_it_around() -> None:
    gappy = {"rubric": [{"points": 1.0, "concept": "cats chase mice", "accept": ["cats (\\w+ ){0,3}chase"]}]}
    assert grade_text("cats often chase mice", gappy, 1.0).score == 1.0
    for text in ("cats do not chase mice", "cats never really chase mice", "mèo ko hay chase chuột, cats k chase"):
        grade = grade_text(text, gappy, 1.0)
        assert grade.score == 0.0 and grade.reasons, (text, grade)
    # a pattern that writes its own negation owns it
    owned = {"rubric": [{"points": 1.0, "concept": "cats ignore dogs", "accept": ["cats (\\w+ )?{not} (\\w+ )?fear"]}]}
    assert grade_text("cats do not fear dogs", owned, 1.0).score == 1.0


def test_a_clause_that_names_no_subject_swaps_no_role_unless_the_answer_turns() -> None:
    # a clause without a subject of its own: the last one named is read as its subject, but
    # another item's point there tells how the two work together, not a swapped role
    text = "The dog guards the house, the cat chases mice; so the guarding keeps them in."
    assert (_grade(text).score, _grade(text).opposite) == (1.0, ()), _grade(text)
    assert _grade("Chó canh nhà, mèo đuổi chuột, nhờ vậy canh giữ được cả kho.").score == 1.0
    # an answer that turns on itself ("actually") may be saying it of that subject after all
    turned = "The dog guards the house, the cat chases mice; actually it guards them too."
    assert "cats chase mice" in _grade(turned).missed, _grade(turned)
    # a clause that names its subject swaps as ever
    assert "cats chase mice" in _grade("The dog guards the house, the cat guards it too.").missed


@pytest.mark.parametrize("pattern", ["chas\\w* ... mice", "guard\\w*", "canh (giu )?nha", "meo ... chuot",
                                     "{not} ... duoi", "(cho|meo) (\\w+ )?an"])
@pytest.mark.parametrize("text", ["Mèo đuổi chuột, còn chó canh giữ nhà.", "Mèo không đuổi chuột; chó ăn cơm.",
                                  "Cats chase mice; chó cũng ăn.", "Chờ đã: mèo thì đuổi, chó ăn."])
def test_a_pattern_without_marks_reads_the_folded_text_as_the_marked_one(pattern: str, text: str) -> None:
    """`reading` sends a pattern that writes no diacritics to the folded text: the same
    matches as its diacritics-aware regex on the marked text, at a fraction of its compile cost."""
    t = read(text)
    regex, on = reading(pattern, t)
    assert t.accented and on == t.folded
    marked = term(pattern, marked=True)
    assert [m.span() for m in regex.finditer(on)] == [m.span() for m in marked.finditer(t.marked)]


def test_a_pattern_with_marks_reads_the_marked_text() -> None:
    t = read("Con chờ mẹ, cho con ăn.")
    regex, on = reading("chờ", t)
    assert on == t.marked and [t.original[m.start():m.end()] for m in regex.finditer(on)] == ["chờ"]
    assert reading("chờ", read("con cho me"))[1] == read("con cho me").folded  # no marks: read folded


def test_the_marked_text_keeps_words_whole_and_each_letter_one_range() -> None:
    """`Text.marked` codes each marked letter (`code_marks`): the text keeps its length, a coded
    letter is still a word character (a gap "A ... B" crosses "sẽ rất"), and the forms of one
    letter are one run of codes, so a plain vowel's class is one range."""
    t = read("Không scale thì gradient sẽ rất nhỏ")
    regex, on = reading("gradients? ... (nhỏ|bé)", t)
    assert on == t.marked and len(on) == len(t.folded) and regex.search(on)
    for base, forms in FORMS.items():
        codes = sorted(code_marks(forms))
        assert "".join(codes) == "".join(map(chr, range(ord(codes[0]), ord(codes[-1]) + 1))), base
    coded_o = code_marks("ỏ")
    assert not reading("nhỏ", read("Gradient rất " + "nh" + coded_o + ", sẽ nhỏ"))[0].search(
        read("Gradient rất nh" + coded_o).marked)  # the code itself, written in an answer, is not "ỏ"


def test_compile_key_leaves_nothing_to_compile_while_grading() -> None:
    """What `grader.batch.template` relies on to compile once for every worker it forks."""
    key = {"quiz.pets": PETS, "other": {"answer": 3}}
    term.cache_clear()
    assert compile_key(key) == 7
    compiled = term.cache_info().currsize
    for text in ("Mèo đuổi chuột, còn chó canh giữ nhà.", "meo duoi chuot, cho canh nha", "Dogs guard."):
        grade_text(text, PETS, 1.0, "What do cats and dogs do?")
    assert term.cache_info().currsize == compiled


@pytest.mark.parametrize("pattern", ["(?P<ten>chờ)", "(?i:chờ)"])
def test_a_pattern_broken_only_in_its_diacritics_reading_is_a_broken_rubric(pattern: str) -> None:
    """An accented answer reads it with its vowels' marks (`term(marked=True)`): the key's
    check must fail on it, not the grading of the first student who types diacritics."""
    term(pattern)  # the plain reading compiles
    with pytest.raises(ValueError, match="not a valid regular expression"):
        check_rubric([{"points": 1, "concept": "wait", "accept": [pattern]}], 1)


MANY = {"rubric": [{"points": 0.5, "concept": c, "accept": [c]} for c in ("cats", "dogs", "mice")]}


@pytest.mark.parametrize("text", ["cats and dogs; mice thì không cần", "Cats and dogs. Mice is not needed.",
                                  "cats, dogs, mice isn't necessary", "cats, dogs, va mice khong can thiet"])
def test_a_term_said_then_denied_earns_nothing_and_is_flagged(text: str) -> None:
    grade = grade_text(text, MANY, 1.0)
    assert "mice" in grade.missed and any("negation" in r for r in grade.reasons), grade


def test_a_list_is_a_list_when_its_terms_hold_function_words_without_their_accents() -> None:
    """"tuan tu" is "tuần tự" (sequential), not "từ" (from): a term, not a sentence."""
    rubric = {"rubric": [{"points": 0.5, "concept": "sequential", "accept": ["tuần tự"]},
                         {"points": 0.5, "concept": "matrix", "accept": ["ma trận"]}]}
    assert grade_text("ma tran, gpu, tuan tu", rubric, 1.0).score == 0.0
    assert grade_text("Attention dùng ma trận, còn RNN thì tuần tự.", rubric, 1.0).score == 1.0


def test_bare_one_word_terms_for_a_question_that_asks_for_items_are_flagged() -> None:
    grade = grade_text("cats, dogs, mice", MANY, 1.0)
    assert grade.score == 1.0 and any("bare terms" in r for r in grade.reasons)
    grade = grade_text("keep cats indoors, walk the dogs, trap the mice", MANY, 1.0)
    assert grade.score == 1.0 and not any("bare terms" in r for r in grade.reasons)


@pytest.mark.parametrize("text", ["Keywords: cats, dogs, mice", "Từ khóa: cats/dogs, mice", "cats fed, dogs walked, mice"])
def test_bare_terms_after_a_label_or_between_slashes_are_flagged(text: str) -> None:
    """The label opening a list ("từ" is a function word), a slash and a word added to a term do
    not make a sentence."""
    grade = grade_text(text, MANY, 1.0)
    assert grade.score == 1.0 and any("bare terms" in r for r in grade.reasons), grade


@pytest.mark.parametrize("text", ["Some say cats chase mice and dogs guard the house, but that is a myth.",
                                  "Thầy giảng mèo đuổi chuột, chó canh nhà, nhưng thật ra không phải vậy.",
                                  "Cats chase mice and dogs guard the house... but actually none of that matters."])
def test_a_claim_reported_or_retracted_is_a_hedge(text: str) -> None:
    grade = _grade(text)
    assert grade.score > 0 and any("hedges" in r for r in grade.reasons), grade
    assert _grade("Cats chase mice, but dogs guard the house.").reasons == ()  # a "but" alone is no hedge


@pytest.mark.parametrize("text", ['Cats chase mice ("dinner?"), and dogs guard the house (who is there?).',
                                  "Cats chase mice and dogs guard the house, nhưng thực tế chó ngủ cả ngày.",
                                  "What do cats do? Cats chase mice. And dogs? Dogs guard the house."])
def test_a_quoted_rhetorical_question_or_in_reality_is_no_hedge(text: str) -> None:
    """A question mark in quotes or brackets is an example, a question answered in the next
    breath is rhetorical; "in reality" goes on with the claim."""
    assert _grade(text).reasons == (), _grade(text)


@pytest.mark.parametrize("text", ["Cats chase mice and dogs guard the house?",
                                  "Cats chase mice, dogs guard the house, đúng không ạ? Chó nhà em thì vậy.",
                                  "Cats chase mice and dogs guard the house, right? At least in my flat."])
def test_a_question_that_ends_the_answer_or_asks_the_reader_is_a_hedge(text: str) -> None:
    assert any("hedges" in r for r in _grade(text).reasons), _grade(text)


def test_a_wording_that_names_its_subject_is_said_of_it() -> None:
    """"Dogs also chase them" is said of the dogs, not of the cats named last before it."""
    rubric = {"rubric": [PETS["rubric"][0], {**PETS["rubric"][1], "reject": ["dogs? (\\w+ )?also chas\\w*"]}]}
    grade = grade_text("Dogs guard the house, cats chase mice. Dogs also chase them.", rubric, 1.0)
    assert grade.score == 0.5 and any("also its opposite" in r for r in grade.reasons), grade


def test_a_minus_sign_reads_as_a_hyphen() -> None:
    rubric = {"rubric": [{"points": 1, "concept": "the previous step", "accept": ["t ?- ?1"]}]}
    assert grade_text("Each step waits for step t−1 to finish first.", rubric, 1.0).score == 1.0


def test_a_list_whose_term_names_a_subject_and_says_its_point_is_flagged() -> None:
    """"RNN tuần tự, attention song song" reads as a list of terms (0), but each term is a short
    claim: a person decides. A list of bare terms stays a sure 0."""
    rubric = {"rubric": [{"points": 0.5, "concept": "cats hunt", "subject": ["cats?"], "accept": [r"hunt\w*"]},
                         {"points": 0.5, "concept": "dogs guard", "subject": ["dogs?"], "accept": [r"guard\w*"]}]}
    grade = grade_text("cats hunting, dogs guarding, mice", rubric, 1.0)
    assert grade.score == 0.0 and any("names a subject" in r for r in grade.reasons), grade
    grade = grade_text("hunting, guarding, O(n) quick mice", rubric, 1.0)  # "O(n)" is one word
    assert grade.score == 0.0 and not grade.reasons, grade


def test_a_listed_vietnamese_comparative_is_a_term_and_three_marked_syllables_a_bare_noun() -> None:
    """"nhanh hơn" (faster) closes a term, so "bộ nhớ, HBM, nhanh hơn" is a list, not a
    sentence; "kiểu dữ liệu" (data type) is one bare noun, "giới hạn seq_len" says what to do."""
    rubric = {"rubric": [{"points": 0.5, "concept": "memory", "accept": ["bộ nhớ"]},
                         {"points": 0.5, "concept": "fast", "accept": ["nhanh"]}]}
    assert grade_text("bo nho, HBM, SRAM, nhanh hon", rubric, 1.0).score == 0.0
    assert grade_text("Nó đọc ghi bộ nhớ ít hơn nên chạy nhanh hơn.", rubric, 1.0).score == 1.0
    assert listing.bare_terms(listing.bare_items(read("mask, kiểu dữ liệu, độ dài chuỗi, độ trễ"), []))
    assert not listing.bare_terms(listing.bare_items(read("mask, giới hạn seq_len, độ trễ"), []))
    assert not listing.bare_terms(listing.bare_items(read("mask, gioi han do, do tre"), []))  # no marks: unknown


def test_a_function_word_inside_a_two_word_listed_term_is_part_of_it() -> None:
    """"on dinh" is "ổn định" (stable) written plain, not English "on"; "no" still denies."""
    rubric = {"rubric": [{"points": 0.5, "concept": "variance", "accept": ["phương sai"]},
                         {"points": 0.5, "concept": "softmax", "accept": ["softmax"]}]}
    assert grade_text("on dinh, phuong sai, softmax", rubric, 1.0).score == 0.0
    assert grade_text("the variance, phuong sai, softmax", rubric, 1.0).score == 0.0
    assert listing.bare_items(read("no sqrt, phuong sai, softmax"), []) is None
    assert listing.bare_items(read("on dinh, softmax"), []) is None  # two terms: not yet a list
    assert listing.bare_items(read("on dinh, softmax,"), []) is None  # nor with a trailing comma


def test_four_listed_terms_may_have_four_words_each_unless_one_is_a_formula() -> None:
    """Vietnamese writes a noun in syllables: "ma trận tam giác" (triangular matrix) is one term
    of a list of four; three terms stay at three words, and a relation ("→", "≠") makes a claim."""
    rubric = {"rubric": [{"points": 0.5, "concept": "pad", "accept": ["pad"]},
                         {"points": 0.5, "concept": "triangle", "accept": ["tam giác"]}]}
    assert grade_text("PAD, ma trận tam giác, softmax, -inf", rubric, 1.0).score == 0.0
    assert grade_text("PAD, ma trận tam giác, softmax", rubric, 1.0).score == 1.0  # three: a term too long
    causes = {"rubric": [{"points": 0.5, "concept": "causes", "accept": ["nguyên nhân"]},
                         {"points": 0.5, "concept": "layers", "accept": ["ffn"]}]}
    assert grade_text("weight → nguyên nhân; phía sau còn FFN, residual, nhiều layer", causes, 1.0).score == 1.0


def test_a_word_joining_two_words_of_a_listed_term_is_part_of_it() -> None:
    """"SRAM với HBM" (SRAM with HBM) is one listed term of a list of key words, not a sentence;
    a negation there still makes one."""
    rubric = {"rubric": [{"points": 0.5, "concept": "memory", "accept": ["sram", "bộ nhớ"]},
                         {"points": 0.5, "concept": "tiles", "accept": ["tiling"]}]}
    assert grade_text("tiling, SRAM với HBM, kernel fusion, bộ nhớ", rubric, 1.0).score == 0.0
    assert grade_text("tiling, read and write, SRAM", rubric, 1.0).score == 0.0
    assert listing.bare_items(read("tiling, SRAM không HBM, kernel fusion"), []) is None
    assert listing.bare_items(read("tiling, SRAM HBM với, kernel fusion"), []) is None  # not between two words


def test_points_met_in_a_list_the_student_labels_as_key_words_go_to_a_person() -> None:
    """"Scenario: ... Keywords: mask, seq_len, eval": the list sits inside sentences, so it is not
    a list of key words as a whole, but its own label says it names terms."""
    grade = _grade("We watched the yard all day. Keywords: cats chase mice, dogs guard the house, yard.")
    assert grade.score > 0 and any("bare terms" in r for r in grade.reasons), grade
    assert _grade("Cats chase mice, dogs guard the house.").reasons == ()


def test_a_list_of_terms_with_one_thin_clause_after_it_goes_to_a_person() -> None:
    """"Memory, HBM, tiling, throughput, GPU, kernel; không có thì chậm": the last item is a
    clause, so the answer is not a list of terms as a whole, but the points it earns come from
    bare terms."""
    text = "cats chase mice, dogs guard, yard, house, fence; otherwise it is chaos"
    assert listing.bare_items(read(text), []) is None  # a sentence as a whole
    assert listing.mostly_terms(read(text), [])
    grade = _grade(text)
    assert grade.score > 0 and any("bare terms" in r for r in grade.reasons), grade
    assert not listing.mostly_terms(read("Cats chase mice, they are fast, dogs guard the house, yard, fence."), [])
    assert listing.mostly_terms(read("It is about cats, mice, dogs, yard, fence, barn. In short it is a farm."), [])
    assert not listing.mostly_terms(read("The mask is per row, e.g. [True, True, False, False], so PAD gets no weight."), [])


def test_khong_gian_in_a_listed_term_is_a_noun_not_a_negation() -> None:
    """"không gian con" is a subspace: the list "nhiều head, concat, không gian con, W_o" is key
    words, not a sentence that denies something."""
    assert listing.bare_items(read("nhiều head, concat, không gian con, W_o"), []) == [
        ["nhiều", "head"], ["concat"], ["không", "gian", "con"], ["w_o"]]
    assert listing.bare_items(read("nhiều head, không concat, W_o"), []) is None  # "không concat" denies


def test_headings_inside_a_structured_list_are_not_its_terms() -> None:
    """"Ý chính:" / "Tóm lại:" structure a bulleted list of key words; they are not terms
    (nor sentences), so the list still reads as one."""
    t = read("Ý chính:\n- num_heads\n- concat\n- W_O\nTóm lại: multi-head attention.")
    assert listing.bare_items(t, []) == [["num_heads"], ["concat"], ["w_o"], ["multi", "head", "attention"]]
    rubric = {"rubric": [{"points": 0.5, "concept": "concat", "accept": ["concat"]},
                         {"points": 0.5, "concept": "heads", "accept": ["num_heads"]}]}
    assert grade_text("Ý chính:\n- num_heads\n- concat\n- W_O\nTóm lại: multi-head attention.", rubric, 1.0).score == 0.0
    assert listing.bare_items(read("Ý chính: mỗi head học một quan hệ, concat, W_O"), []) is None  # a sentence


def test_listed_terms_are_read_after_a_label_with_a_big_o_as_one_word() -> None:
    t = read("Từ khóa: mask, O(n^2) cost / eval")
    assert listing.bare_items(t, []) == [["mask"], ["o(n^2)", "cost"], ["eval"]]
    assert listing.bare_terms(listing.bare_items(t, []))
    assert listing.bare_items(read("mask is tested, eval"), []) is None  # "is": a sentence
    assert listing.bare_items(read("các từ khóa: mask, O(n^2), eval"), []) == [["mask"], ["o(n^2)"], ["eval"]]
    assert listing.bare_items(read("Multi-head: h heads, concat, W_O"), []) == [["h", "heads"], ["concat"], ["w_o"]]


def test_a_subject_named_as_a_comparisons_measure_has_the_point_denied_of_the_other() -> None:
    # "A không có P như B": B has P; and the clauses after it go on about A, not B
    for text in ("Dogs don't chase mice like cats do; they guard the house.",
                 "Chó không đuổi chuột như mèo, mà canh giữ nhà.",
                 "cho khong duoi chuot nhu meo, ma canh nha"):
        grade = _grade(text)
        assert (grade.score, grade.opposite) == (1.0, ()), (text, grade)
    # without the comparison, the point is denied of the dogs and the next clause is said of the cats
    assert _grade("Dogs don't chase mice, but cats; they guard the house.").score < 1.0


def test_a_subject_set_equal_to_a_picture_nothing_reads_goes_to_a_person() -> None:
    grade = _grade("Cats = the night shift that keeps the pantry quiet; dogs = a doorbell with teeth and a tail")
    assert grade.score == 0.0 and any("picture" in r for r in grade.reasons), grade
    short = _grade("Cats = pets; dogs = pets too.")
    assert (short.score, short.reasons) == (0.0, ()), short


def test_a_vietnamese_word_that_folds_onto_an_english_function_word_is_still_a_term() -> None:
    # "ổn" folds to "on", "số" to "so": written with diacritics they are terms, not a sentence
    assert listing.bare_items(read("variance, sqrt(d_k), softmax, gradient, ổn định"), []) is not None
    assert listing.bare_items(read("Q K V, projection, W_q W_k W_v, dot product, softmax"), []) is not None
    assert listing.bare_items(read("nó ổn định hơn vì chia cho căn"), []) is None  # "vì", "cho": a sentence
    assert listing.bare_items(read("it is stable on any input"), []) is None


def test_a_point_inside_another_items_denial_is_part_of_that_denial() -> None:
    night = {"rubric": [
        {"points": 0.5, "concept": "cats hunt at night", "subject": ["cats?"], "accept": ["at night"]},
        {"points": 0.5, "concept": "dogs stay awake", "subject": ["dogs?"],
         "accept": ["{not} (\\w+ ){0,2}sleep\\w* (\\w+ ){0,3}at night"]},
    ]}
    # "at night" inside the dogs' denial is not the cats' point said of the dogs: the cats are
    # untouched, so the partial score is sure
    grade = grade_text("Dogs can't sleep a single hour at night, they guard.", night, 1.0)
    assert (grade.score, grade.found, grade.reasons) == (0.5, ("dogs stay awake",), ()), grade


def test_a_long_answer_that_contradicts_each_point_is_a_sure_zero() -> None:
    swapped = ("Dogs are the ones that chase the mice around the whole house all day long, while the cats"
               " are the animals that guard the house at night and bark at every stranger who comes near it.")
    grade = _grade(swapped)
    assert (grade.score, grade.reasons) == (0.0, ()), grade
    # a long answer that says nothing either way may put the points in words the patterns miss
    silent = ("Cats and dogs have lived with people for thousands of years and each has its own habits, which"
              " differ a lot from one breed to the next, so it is hard to say what they do in general.")
    assert any("long answer" in r for r in _grade(silent).reasons)


def test_a_point_that_starts_inside_another_items_denial_is_part_of_that_denial() -> None:
    house = {"rubric": [
        {"points": 0.5, "concept": "cats know the house", "subject": ["cats?"], "accept": ["know\\w* (\\w+ )?house"]},
        {"points": 0.5, "concept": "dogs are new to it", "subject": ["dogs?"], "accept": ["{not} know\\w*"]},
    ]}
    # "know the house" starts after the "not" of the dogs' "do not know": it is the dogs' point, and
    # the cats, never named, are untouched: a sure partial score
    grade = grade_text("The dogs are new here, so they do not know the house yet.", house, 1.0)
    assert (grade.score, grade.found, grade.reasons) == (0.5, ("dogs are new to it",), ()), grade


def test_a_point_that_is_the_object_of_another_items_denial_is_part_of_that_denial() -> None:
    exam = {"rubric": [
        {"points": 0.5, "concept": "in practice the answers are visible", "accept": ["answers? (\\w+ )?(visible|available)"]},
        {"points": 0.5, "concept": "at the exam they are missing", "accept": ["{not} (have|has)"]},
    ]}
    # "the answers available" is what "never has" denies, not the practice's point said on its own
    grade = grade_text("At the exam the student never has the answers available, so it goes badly.", exam, 1.0)
    assert (grade.score, grade.found) == (0.5, ("at the exam they are missing",)), grade
    # a point said after a pause is not the denial's object
    grade = grade_text("At the exam the student never has them; in practice the answers are visible.", exam, 1.0)
    assert grade.score == 1.0, grade


def test_overlapping_readings_are_settled_as_by_comparing_every_pair() -> None:
    """`_claims` looks only at matches near each one (linear in a long answer); the result is the
    one every pair of matches gives."""
    import random

    from grader.answers.binding import Match
    from grader.answers.rubric import _claims

    def every_pair(matches: list[Match]) -> list[Match]:
        def holds_and_wins(o: Match, m: Match) -> bool:  # o holds m and is the reading
            return o.start <= m.start and m.end <= o.end and (
                o.end - o.start > m.end - m.start or (o.end - o.start == m.end - m.start and o.kind == "reject"))
        return [m for m in matches if not any(
            holds_and_wins(o, m)
            for o in matches if o.item == m.item and o.kind != m.kind and o.start < m.end and m.start < o.end)]

    rng = random.Random(7)
    for _ in range(300):
        matches = []
        for _ in range(rng.randint(0, 30)):
            start = rng.randint(0, 200)
            matches.append(Match(start, start + rng.randint(1, 40), rng.randint(0, 2),
                                 rng.choice(("accept", "reject")), False))
        assert _claims(matches) == every_pair(matches)


def test_negations_come_in_order_and_a_cover_tells_what_lies_inside_a_match() -> None:
    """`within` and `Cover` (log time, for long answers) give what a scan of every span gives."""
    import random

    from grader.answers.binding import Cover, Match, within
    from grader.answers.negation import negations

    found = negations(read("It doesn't scale, không phải vì thế, never, and the model can't, không có."))
    assert found == sorted(found) and len(found) == 5
    rng = random.Random(11)
    for _ in range(200):
        spans = sorted((a, a + rng.randint(1, 6)) for a in rng.sample(range(300), rng.randint(0, 20)))
        matches = [Match(a, a + rng.randint(1, 60), 0, "accept") for a in rng.sample(range(300), rng.randint(0, 15))]
        cover = Cover((m.start, m.end) for m in matches)
        for _ in range(20):
            a = rng.randint(0, 300)
            b = a + rng.randint(0, 80)
            assert within(spans, a, b) == [(x, y) for x, y in spans if a <= x and y <= b]
            assert cover.holds(a, b) == any(m.start <= a and b <= m.end for m in matches)
            assert cover.meets(a, b) == any(m.start < b and a < m.end for m in matches)
