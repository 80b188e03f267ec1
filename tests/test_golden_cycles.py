"""The analytic cycle model: hand values, scaling, and the spec's bounds where they hold."""

import itertools

import pytest

from golden import cycles
from golden.cycles import (
    block_match_cycles,
    block_match_target,
    decode_cycles,
    encode_cycles,
    importance_cycles,
    similar_cycles,
    topk_cycles,
    topk_paper,
    topk_target,
)


def test_similar_cycles():
    assert similar_cycles(0) == 0
    assert similar_cycles(1) == 1 + cycles.SIMILAR_LATENCY == 8
    # one comparison per cycle in steady state
    assert [similar_cycles(n + 1) - similar_cycles(n) for n in range(1, 10)] == [1] * 9


def test_importance_cycles_hand_values():
    L = cycles.IMPORTANCE_LATENCY
    # R = 3 rows of M = 10 tokens on a = 4 lanes: 3 beats per row (the last padded), 3 out.
    assert importance_cycles(3, 10, 4, "spatial") == 9 + L + 3
    # temporal: 10 columns of ceil(3/4) = 1 beat each.
    assert importance_cycles(3, 10, 4, "temporal") == 10 + L + 3
    # M smaller than a: one (padded) beat per row.
    assert importance_cycles(5, 2, 32, "spatial") == 5 + L + 1
    assert importance_cycles(1, 1, 1, "temporal") == 1 + L + 1
    # the paper's shape: 32 heads x 64 text tokens = 2048 rows, 576 tokens, a = 32.
    assert importance_cycles(2048, 576, 32) == 2048 * 18 + L + 18


def test_importance_dataflows_agree_when_one_lane():
    for R, M in [(1, 1), (3, 7), (64, 5)]:
        assert importance_cycles(R, M, 1, "spatial") == importance_cycles(R, M, 1, "temporal")


def test_importance_cycles_monotonic():
    for mode in ("spatial", "temporal"):
        prev = 0
        for M in range(1, 70):
            c = importance_cycles(7, M, 8, mode)
            assert c >= prev
            prev = c
    assert importance_cycles(8, 20, 8, "spatial") > importance_cycles(7, 20, 8, "spatial")
    # temporal: 7 and 8 rows are both one beat per column; the 9th row adds a beat per column
    assert importance_cycles(8, 20, 8, "temporal") == importance_cycles(7, 20, 8, "temporal")
    assert importance_cycles(9, 20, 8, "temporal") == importance_cycles(8, 20, 8, "temporal") + 20


def test_topk_bubble_hand_values():
    L, B = cycles.TOPK_LATENCY, cycles.BUBBLE_SORT_LATENCY
    # M = 10, a = 4, k = 5: 2 back-to-back passes of 10 cycles, the threshold, then 3 mask beats.
    assert topk_cycles(10, 5, 4, sorter="bubble") == 2 * 10 + B + 3 + L
    assert topk_cycles(10, 0, 4) == 3 + L            # no pass: only the mask
    assert topk_cycles(10, 10, 4) == topk_cycles(10, 99, 4) == 3 * 10 + B + 3 + L


def test_topk_bubble_steps_with_passes():
    # Cycles only change when ceil(k/a) does.
    values = [topk_cycles(100, k, 8) for k in range(0, 101)]
    steps = [k for k in range(1, 101) if values[k] != values[k - 1]]
    assert steps == [1 + 8 * p for p in range(13)]
    assert all(b >= a for a, b in itertools.pairwise(values))


def test_topk_radix_independent_of_k():
    L, G, K = cycles.TOPK_LATENCY, cycles.RADIX_DIGIT_GAP, cycles.RADIX_MASK_LATENCY
    # 4 digit passes + 1 mask pass of ceil(M/a) words, a gap after each digit pass.
    assert topk_cycles(1024, 1, 32, 16, "radix") == 5 * 32 + 4 * G + L + K
    radix = {topk_cycles(1000, k, 4, 16, "radix") for k in (0, 1, 500, 1000, 5000)}
    assert radix == {5 * 250 + 4 * G + L + K}
    assert topk_cycles(64, 3, 4, 9, "radix") == 4 * 16 + 3 * G + L + K  # ceil(9/4) = 3 passes + 1


def test_topk_targets_and_paper():
    assert topk_target(1024, 100, 32) == (105 * 4 * 1024) // 100 + 64 == 4364
    assert topk_target(1024, 100, 32, 16, "radix") == 5 * 32 + 64
    assert topk_paper(1024, 100, 32) == 3200
    assert topk_paper(1024, 5000, 32) == 1024 * 1024 // 32      # k clamps to M
    assert topk_paper(10, 3, 4) == 8                              # ceil(30 / 4)


def test_topk_model_within_target_at_paper_shape():
    """At the paper's shape (a = 32, M = 1024) the bubble model meets the spec for every k."""
    for k in range(0, 1025):
        assert topk_cycles(1024, k, 32) <= topk_target(1024, k, 32), k
        # and is never faster than the paper's estimate
        assert topk_cycles(1024, k, 32) >= topk_paper(1024, k, 32)


def test_topk_radix_model_within_target():
    for M in (1, 3, 31, 32, 33, 1024, 12736):
        for a in (1, 4, 32):
            for sb in (1, 4, 5, 16, 32):
                assert topk_cycles(M, 7, a, sb, "radix") <= topk_target(M, 7, a, sb, "radix")


def test_encode_decode_cycles():
    EL, DL = cycles.ENCODE_LATENCY, cycles.DECODE_LATENCY
    # M = 1024 on 4 lanes: 256 mask beats dominate 100 codes; 300 bits = 10 words.
    assert encode_cycles(1024, 100, 300, 4, 32) == 256 + 10 + EL
    # 32 lanes: 32 mask beats, but 500 codes at one per cycle dominate.
    assert encode_cycles(1024, 500, 900, 32, 32) == 500 + 29 + EL
    assert decode_cycles(300, 100, 1024, 4, 32) == 10 + 100 + 256 + DL
    assert decode_cycles(33, 0, 1, 1, 32) == 2 + 0 + 1 + DL
    # A dropped-set code: the walk over all M positions, not the n kept ones.
    assert decode_cycles(300, 900, 1024, 4, 32, dropped=True) == (
        10 + 1024 + 256 + DL + cycles.DECODE_WALK_LATENCY)
    # wider words never cost more
    assert encode_cycles(1024, 100, 300, 4, 64) < encode_cycles(1024, 100, 300, 4, 8)


def test_block_match_cycles():
    BL = cycles.BLOCK_MATCH_LATENCY
    assert block_match_cycles(0) == 0
    assert block_match_cycles(1024, 7) == 1024 + BL
    assert block_match_cycles(1024, 1) == 7 * 1024 + BL
    assert block_match_cycles(100, 2) == 4 * 100 + BL and block_match_cycles(100, 4) == 200 + BL
    for S in (1, 10, 1024, 65536):
        c = [block_match_cycles(S, k) for k in range(1, 8)]
        assert all(a >= b for a, b in itertools.pairwise(c))     # more comparators never slower
        for k in range(1, 8):
            assert block_match_cycles(S, k) <= block_match_target(S, k)
    assert block_match_target(1000, 7) == 1100 + 64
    # The FocusUnit's SIC column: the matcher and the one register before it; nothing for S = 0.
    assert cycles.sic_cycles(0) == 0 and cycles.sic_cycles(0, 1) == 0
    assert cycles.sic_cycles(196, 1) == 7 * 196 + BL + 1 == 1404
    assert cycles.sic_cycles(49, 2) == 4 * 49 + BL + 1 == 228
    assert block_match_target(1000, 1) == 8000 + 64


def test_cycle_model_errors():
    with pytest.raises(ValueError, match=r"mode = 'rows' is not allowed"):
        importance_cycles(1, 1, 1, "rows")
    with pytest.raises(ValueError, match=r"sorter = 'heap' is not allowed"):
        topk_cycles(10, 1, 4, 16, "heap")
    with pytest.raises(ValueError, match=r"R = 0 is out of range: it must be >= 1"):
        importance_cycles(0, 4, 4)
    with pytest.raises(ValueError, match=r"lanes = 0 is out of range"):
        topk_cycles(10, 1, 0)
    with pytest.raises(ValueError, match=r"keep = -1 is out of range"):
        topk_target(10, -1, 4)
    with pytest.raises(ValueError, match=r"n_pairs must be an integer, not 1\.5"):
        similar_cycles(1.5)
    with pytest.raises(ValueError, match=r"n_kept = 11 > M = 10"):
        encode_cycles(10, 11, 40, 4)
    with pytest.raises(ValueError, match=r"comparators = 8 is out of range: it must be in "
                                         r"\[1, 7\]"):
        block_match_cycles(10, 8)
