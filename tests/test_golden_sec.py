"""SEC golden model (spec 3.1, 3.2): importance, top-k mask, and the whole job."""

import numpy as np
import pytest

from golden.offsets import decode_offsets, encode_offsets
from golden.sec import importance, sec, topk_mask

# ---- independent references (no golden code) -----------------------------------------------------


def ref_topk(s, keep):
    """Keep the first `keep` tokens ordered by (-score, index), via np.lexsort."""
    s = np.asarray(s).astype(np.int64)
    idx = np.arange(s.size)
    order = np.lexsort((idx, -s))  # last key is primary: score descending, then index ascending
    mask = np.zeros(s.size, dtype=bool)
    mask[order[:keep]] = True
    return mask


def ref_topk_rank(s, keep):
    """The same by definition: token j is kept when fewer than `keep` tokens come before it."""
    s = [int(v) for v in s]
    out = []
    for j, sj in enumerate(s):
        before = sum(1 for i, si in enumerate(s) if si > sj or (si == sj and i < j))
        out.append(before < keep)
    return np.array(out, dtype=bool)


def ref_importance(scores):
    R, M = len(scores), len(scores[0])
    out = []
    for j in range(M):
        best = scores[0][j]
        for r in range(1, R):
            if scores[r][j] > best:
                best = scores[r][j]
        out.append(int(best))
    return out


# ---- importance ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["spatial", "temporal"])
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (5, 1), (3, 4), (17, 33), (64, 250)])
def test_importance_matches_loop(mode, shape):
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    scores = rng.integers(0, 2**16, shape, dtype=np.uint16)
    s = importance(scores, mode=mode)
    assert s.shape == (shape[1],) and s.dtype == np.uint16
    assert s.tolist() == ref_importance(scores.tolist())


def test_importance_dtypes():
    s = importance([[1, 5, 0], [4, 2, 0]])          # list -> int64 -> uint64
    assert s.dtype == np.uint64 and s.tolist() == [4, 5, 0]
    big = np.array([[2**32 - 1, 0], [7, 2**31]], dtype=np.uint32)
    assert importance(big, "temporal").tolist() == [2**32 - 1, 2**31]
    assert importance(np.array([[3]], dtype=np.int8)).dtype == np.uint8


def test_importance_errors():
    with pytest.raises(ValueError, match=r"mode = 'rows' is not allowed: it must be 'spatial' "
                                         r"or 'temporal'"):
        importance([[1]], mode="rows")
    with pytest.raises(ValueError, match=r"scores must be 2-D \[R rows, M tokens\], not shape "
                                         r"\(3,\)"):
        importance([1, 2, 3])
    with pytest.raises(ValueError, match=r"must be 2-D .* not shape \(1, 2, 2\)"):
        importance(np.zeros((1, 2, 2), dtype=np.uint16))
    with pytest.raises(ValueError, match=r"scores has no rows \(shape \(0, 4\)\): R must be >= 1"):
        importance(np.zeros((0, 4), dtype=np.uint16))
    with pytest.raises(ValueError, match=r"scores has no tokens \(shape \(2, 0\)\): M must be "
                                         r">= 1"):
        importance(np.zeros((2, 0), dtype=np.uint16))
    with pytest.raises(ValueError, match=r"scores must be an unsigned integer array .* not dtype "
                                         r"float16"):
        importance(np.ones((2, 2), dtype=np.float16))
    with pytest.raises(ValueError, match=r"not dtype bool"):
        importance(np.ones((2, 2), dtype=bool))
    with pytest.raises(ValueError, match=r"scores must be >= 0: 1 negative value\(s\), first at "
                                         r"index \(1, 0\): -3"):
        importance([[1, 2], [-3, 4]])


# ---- topk_mask -----------------------------------------------------------------------------------


def test_topk_random_against_lexsort():
    rng = np.random.default_rng(10)
    for _ in range(300):
        M = int(rng.integers(1, 200))
        s = rng.integers(0, 2**16, M, dtype=np.uint16)
        keep = int(rng.integers(0, M + 3))
        mask = topk_mask(s, keep)
        assert mask.dtype == bool and mask.shape == (M,)
        assert np.array_equal(mask, ref_topk(s, keep))
        assert mask.sum() == min(keep, M)


def test_topk_heavy_ties():
    rng = np.random.default_rng(11)
    for _ in range(300):
        M = int(rng.integers(1, 120))
        s = rng.choice(np.array([0, 7, 7000, 65535], dtype=np.uint16), M)
        keep = int(rng.integers(0, M + 2))
        mask = topk_mask(s, keep)
        assert np.array_equal(mask, ref_topk(s, keep))
        assert np.array_equal(mask, ref_topk_rank(s, keep))


def test_topk_all_equal_keeps_lowest_indices():
    s = np.full(50, 123, dtype=np.uint16)
    for keep in (0, 1, 17, 50, 51):
        expect = np.arange(50) < keep
        assert np.array_equal(topk_mask(s, keep), expect)


def test_topk_keep_edges():
    s = np.array([5, 9, 1, 9, 0, 3], dtype=np.uint16)
    assert topk_mask(s, 0).tolist() == [False] * 6
    assert topk_mask(s, 1).tolist() == [False, True, False, False, False, False]
    assert topk_mask(s, 2).tolist() == [False, True, False, True, False, False]
    assert topk_mask(s, 3).tolist() == [True, True, False, True, False, False]
    assert topk_mask(s, 6).tolist() == [True] * 6
    assert topk_mask(s, 1000).tolist() == [True] * 6
    assert topk_mask(np.array([42], dtype=np.uint16), 0).tolist() == [False]
    assert topk_mask(np.array([42], dtype=np.uint16), 1).tolist() == [True]
    assert topk_mask(np.array([0], dtype=np.uint16), 5).tolist() == [True]
    assert topk_mask([3, 1], np.int64(1)).tolist() == [True, False]


def test_topk_wide_scores():
    """Full 32- and 64-bit unsigned ranges: no signed overflow in the ordering."""
    s = np.array([2**64 - 1, 0, 2**63, 2**63 - 1, 2**64 - 1], dtype=np.uint64)
    assert topk_mask(s, 3).tolist() == [True, False, True, False, True]
    s32 = np.array([2**32 - 1, 2**31, 5], dtype=np.uint32)
    assert topk_mask(s32, 2).tolist() == [True, True, False]


def test_topk_errors():
    s = np.array([1, 2, 3], dtype=np.uint16)
    with pytest.raises(ValueError, match=r"keep = -1 is out of range: it must be >= 0"):
        topk_mask(s, -1)
    with pytest.raises(ValueError, match=r"keep must be an integer >= 0, not 1\.5"):
        topk_mask(s, 1.5)
    with pytest.raises(ValueError, match=r"keep must be an integer >= 0, not True"):
        topk_mask(s, True)
    with pytest.raises(ValueError, match=r"s is empty: M must be >= 1"):
        topk_mask(np.array([], dtype=np.uint16), 1)
    with pytest.raises(ValueError, match=r"s must be 1-D \(one score per token\), not shape "
                                         r"\(2, 2\)"):
        topk_mask(np.ones((2, 2), dtype=np.uint16), 1)
    with pytest.raises(ValueError, match=r"s must be an unsigned integer array .* not dtype "
                                         r"float64"):
        topk_mask([0.5, 0.2], 1)
    with pytest.raises(ValueError, match=r"s must be >= 0: 1 negative value\(s\), first at index "
                                         r"2: -1"):
        topk_mask([4, 3, -1], 1)


# ---- sec -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["spatial", "temporal"])
def test_sec_composes(mode):
    rng = np.random.default_rng(12)
    for order, word_bits in [(None, 32), (0, 8), (3, 64), (7, 16)]:
        scores = rng.integers(0, 1024, (6, 77), dtype=np.uint16)
        keep = int(rng.integers(0, 80))
        mask, words, nbits = sec(scores, keep, mode=mode, order=order, word_bits=word_bits)
        assert np.array_equal(mask, ref_topk(ref_importance(scores.tolist()), keep))
        w2, n2 = encode_offsets(mask, order=order, word_bits=word_bits)
        assert nbits == n2 and np.array_equal(words, w2)
        assert np.array_equal(decode_offsets(words, nbits, 77, word_bits), mask)


def test_sec_errors():
    with pytest.raises(ValueError, match=r"keep = -2 is out of range"):
        sec(np.ones((2, 3), dtype=np.uint16), -2)
    with pytest.raises(ValueError, match=r"mode = 'diagonal' is not allowed"):
        sec(np.ones((2, 3), dtype=np.uint16), 1, mode="diagonal")
    with pytest.raises(ValueError, match=r"order must be None \(adaptive\) or an integer in "
                                         r"\[0, 7\], not 8"):
        sec(np.ones((2, 3), dtype=np.uint16), 1, order=8)
    with pytest.raises(ValueError, match=r"scores must be 2-D"):
        sec(np.ones(3, dtype=np.uint16), 1)
