"""The authoring API: what an assignment's test files use.

Tests are plain pytest functions. Besides `assert`, they call these helpers so that a
failure carries a message a student can act on and numbers the report can show:

    from grader.testing import assert_close, call_both, returned_pair, seeded_randn

    def test_matches_reference(student, reference, device):
        "scaled_dot_product_attention matches the reference"
        q, k, v = (seeded_randn(2, 5, 8, seed=s, device=device) for s in (1, 2, 3))
        mine, (_, ref_w) = call_both(student.scaled_dot_product_attention,
                                     reference.scaled_dot_product_attention, q, k, v)
        _, w = returned_pair(mine, "scaled_dot_product_attention")
        assert_close(w, ref_w, what="attention weights",
                     hint="is the softmax taken over the key axis (dim=-1)?")

`compare` holds the verdicts (`fail`, `assert_close`), `helpers` what every lesson's
tests share (seeded inputs, pairing with the reference, what the student's code raised,
shape checks). What one lesson's tests share goes in its support module (`support:` in
the assignment YAML), which tests receive as the `support` fixture.
"""

from grader.testing.compare import (
    GradingFailure,
    KnownBugs,
    assert_close,
    dtype_name,
    fail,
    heatmap_panel,
    matches,
    mismatch_evidence,
    show_figures,
)
from grader.testing.helpers import (
    call_both,
    check_dtype,
    check_shape,
    check_tensor,
    expect_raise,
    raised_by_student,
    returned_pair,
    said,
    seeded_randn,
    worst,
)

__all__ = ["GradingFailure", "KnownBugs", "assert_close", "call_both", "check_dtype",
           "check_shape", "check_tensor", "dtype_name", "expect_raise", "fail", "heatmap_panel",
           "matches", "mismatch_evidence", "raised_by_student", "returned_pair", "said",
           "seeded_randn", "show_figures", "worst"]
