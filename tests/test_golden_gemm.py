"""golden.focus_gemm against independent references, the tiling the RTL driver uses, the end-to-end
golden.focus_layer, and the analytic cycle model (golden/gemm_cycles.py) against hand-worked counts
and a step-by-step re-implementation of its recurrence."""

import math

import numpy as np
import pytest

import golden
from golden.gemm import concentrate, dense_inputs, gemm_tiles, pad_reduction
from golden.gemm_cycles import (
    chunk_overhead,
    dense_gemm_cycles,
    focus_gemm_cycles,
    gemm_cycles,
    job_chunks,
    steady_chunk_cycles,
    tile_rows,
)
from rtl.params import FocusParams


def reconstruct(uniques, maps):
    """X' built element by element with Python loops (independent of golden.gemm)."""
    rows, columns = maps.shape
    dim = len(uniques[0][0]) if len(uniques[0]) else 0
    out = [[0] * (columns * dim) for _ in range(rows)]
    for s in range(rows):
        for c in range(columns):
            vector = uniques[c][int(maps[s, c])]
            for i in range(dim):
                out[s][c * dim + i] = int(vector[i])
    return np.array(out, dtype=np.int64).reshape(rows, columns * dim)


def test_equals_numpy_matmul_of_the_reconstructed_input():
    rng = np.random.default_rng(0)
    columns, dim = 3, 5
    uniques = [rng.integers(-128, 128, (int(rng.integers(1, 9)), dim), dtype=np.int8)
               for _ in range(columns)]
    maps = np.stack([rng.integers(0, len(u), 40) for u in uniques], axis=1)
    w = rng.integers(-128, 128, (columns * dim, 7), dtype=np.int8)
    x = reconstruct(uniques, maps)
    want = x.astype(np.float64) @ w.astype(np.float64)        # exact: |values| < 2**53
    got = golden.focus_gemm(uniques, maps, w)
    assert got.dtype == np.int64 and got.shape == (40, 7)
    np.testing.assert_array_equal(got, want.astype(np.int64))
    np.testing.assert_array_equal(concentrate(uniques, maps), x)


def test_sic_output_on_a_photograph():
    """What golden.sic returns goes in as is; identity maps give X @ W, SIC's give X' @ W."""
    x, pos = golden.photo.photo_tokens(frames=3, grid=6, dim=16)
    x = np.hstack([x, x[::-1]])                                     # D = 32: two columns of V = 16
    w = np.random.default_rng(1).integers(-128, 128, (32, 9))
    maps, uniques = golden.sic(x, pos, frame_stride=36, row_stride=6, theta_q=golden.theta_q(0.85),
                               tile=40, dim=16)
    assert sum(len(u) for u in uniques) < 2 * len(x)                # some sharing
    np.testing.assert_array_equal(golden.focus_gemm(uniques, maps, w),
                                  reconstruct(uniques, maps) @ w)
    np.testing.assert_array_equal(golden.focus_gemm(*reversed(dense_inputs(x, 16)), w),
                                  x.astype(np.int64) @ w)


def test_coded_equals_the_uncoded_golden_and_numpy():
    """golden.gemm.focus_gemm_coded on random jobs built forwards (helpers.coded_gemm_job: the
    generator's own map, not a decode) equals golden.focus_gemm on that map (the uncoded path is
    the reference) and X' @ W with X' rebuilt by Python loops."""
    from helpers import coded_gemm_job

    from golden.gemm import focus_gemm_coded

    rng = np.random.default_rng(40)
    for n in range(25):
        dim, tile = int(rng.integers(1, 6)), int(rng.integers(1, 12))
        S, C, N = int(rng.integers(1, 40)), int(rng.integers(1, 4)), int(rng.integers(1, 9))
        fs, hs = int(rng.integers(0, 8)), int(rng.integers(0, 4))
        wb = int(rng.choice([8, 16, 32]))
        uniques, codes, pos, maps, _ = coded_gemm_job(
            rng, S, C, dim, tile, frame_stride=fs, row_stride=hs, share=float(rng.random()),
            word_bits=wb, gap=int(rng.integers(1, 4)))
        w = rng.integers(-128, 128, (C * dim, N))
        got = focus_gemm_coded(uniques, codes, pos, w, frame_stride=fs, row_stride=hs, tile=tile,
                               window=16, word_bits=wb)
        assert got.dtype == np.int64 and got.shape == (S, N)
        np.testing.assert_array_equal(got, golden.focus_gemm(uniques, maps, w), err_msg=str(n))
        np.testing.assert_array_equal(got, reconstruct(uniques, maps) @ w, err_msg=str(n))


def test_coded_on_the_matchers_own_codes():
    """Per tile, the matcher's symbols (golden.map_code.match_codes on the tile's rows) coded and
    fed with golden.sic's unique vectors give golden.focus_gemm of golden.sic's maps."""
    from golden import map_code as gmc
    from golden.gemm import focus_gemm_coded

    x, pos = golden.photo.photo_tokens(frames=3, grid=6, dim=16)
    x = np.hstack([x, x[::-1]])
    w = np.random.default_rng(2).integers(-128, 128, (32, 5))
    kw = dict(frame_stride=36, row_stride=6, tile=40, window=256)
    tq = golden.theta_q(0.85)
    maps, uniques = golden.sic(x, pos, theta_q=tq, dim=16, **kw)
    codes = []
    for start in range(0, len(x), 40):
        rows = slice(start, start + 40)
        codes.append([gmc.encode_map(gmc.match_codes(x[rows, c * 16:(c + 1) * 16], pos[rows],
                                                     theta_q=tq, **kw), variable=c == 1)
                      for c in range(2)])
    got = focus_gemm_coded(uniques, codes, pos, w, **kw)
    np.testing.assert_array_equal(got, golden.focus_gemm(uniques, maps, w))
    assert sum(len(u) for u in uniques) < 2 * len(x)


def test_coded_rejections_name_the_cause_and_the_code():
    from golden import map_code as gmc
    from golden.gemm import focus_gemm_coded

    uniques = [np.ones((2, 2), int)]
    w = np.ones((2, 1), int)
    pos = np.array([0, 1, 5])
    kw = dict(frame_stride=4, row_stride=2, tile=2, window=16, word_bits=8)
    good = [[gmc.encode_map([0, 1], word_bits=8)], [([0], 4)]]      # symbols 0, 1 | 0
    assert [int(x) for x in good[0][0][0]] == [0b00000010] and good[0][0][1] == 7
    np.testing.assert_array_equal(focus_gemm_coded(uniques, good, pos, w, **kw), [[2], [2], [2]])
    cases = {"LENGTH": [good[0], [([0, 0], 4)]], "SHORT": [good[0], [([0], 3)]],
             "TRAILING": [good[0], [([0], 5)]], "CANDIDATE": [good[0], [([0b00010000], 4)]],
             "HEADER": [good[0], [([0b10000000], 5)]]}          # variable, no ranking
    for cause, codes in cases.items():
        with pytest.raises(ValueError, match=f"^{cause}: rows 2:3, column 0: "):
            focus_gemm_coded(uniques, codes, pos, w, **kw)
    with pytest.raises(ValueError, match=r"^POSITION: rows 0:2, column 0: "):
        focus_gemm_coded(uniques, good, np.array([1, 1, 5]), w, **kw)
    with pytest.raises(ValueError, match=r"^uniques\[0\] has 3 vectors but column 0's map codes "
                                         r"open 2 groups"):
        focus_gemm_coded([np.ones((3, 2), int)], good, pos, w, **kw)


def test_pad_reduction_keeps_the_product():
    rng = np.random.default_rng(2)
    x, w = rng.integers(-128, 128, (6, 37)), rng.integers(-128, 128, (37, 4))
    xp, wp = pad_reduction(x, w, 32)
    assert xp.shape == (6, 64) and wp.shape == (64, 4)
    assert not xp[:, 37:].any() and not wp[37:].any()
    np.testing.assert_array_equal(golden.focus_gemm(*reversed(dense_inputs(xp, 32)), wp), x @ w)
    with pytest.raises(ValueError, match=r"weights has 5 rows but x has K = 37 columns"):
        pad_reduction(x, w[:5], 32)
    with pytest.raises(ValueError, match=r"x's K = 37 must be a positive multiple of dim = 32"):
        dense_inputs(x, 32)


def test_gemm_tiles():
    """Each tile lists the unique indices its rows reference, sorted, and rows index into them;
    for SIC-shaped maps with the same tile the references are a contiguous range."""
    maps = np.array([[0, 0], [1, 0], [0, 1], [2, 1], [3, 2], [3, 3], [4, 3]])
    tiles = gemm_tiles(maps, 4)
    assert [(a, b) for a, b, _ in tiles] == [(0, 4), (4, 7)]
    refs, local = tiles[0][2][0]
    np.testing.assert_array_equal(refs, [0, 1, 2])
    np.testing.assert_array_equal(refs[local], maps[0:4, 0])
    np.testing.assert_array_equal(tiles[1][2][1][0], [2, 3])
    x, pos = golden.photo.photo_tokens(frames=2, grid=6, dim=8)
    mp, _ = golden.sic(x, pos, frame_stride=36, row_stride=6, theta_q=golden.theta_q(0.8),
                       tile=16, dim=8)
    for start, stop, chunks in gemm_tiles(mp, 16):
        refs, local = chunks[0]
        np.testing.assert_array_equal(refs, np.arange(refs[0], refs[0] + len(refs)))
        np.testing.assert_array_equal(local, mp[start:stop, 0] - refs[0])


def test_empty_and_bad():
    y = golden.focus_gemm([np.zeros((0, 4), np.int8)], np.zeros((0, 1), int), np.ones((4, 2), int))
    assert y.shape == (0, 2) and y.dtype == np.int64
    with pytest.raises(ValueError, match=r"^maps\[1, 0\] = 3 is out of range: column 0 has 2 "):
        golden.focus_gemm([np.ones((2, 4), int)], np.array([[0], [3]]), np.ones((4, 2), int))
    with pytest.raises(ValueError, match=r"^uniques\[0\] has elements outside the signed 16-bit"):
        golden.focus_gemm([np.full((1, 4), 1 << 15)], np.zeros((1, 1), int), np.ones((4, 2), int))
    with pytest.raises(ValueError, match=r"^weights must have shape \[C\*V, N\] = \[4, N >= 1\]"):
        golden.focus_gemm([np.ones((1, 4), int)], np.zeros((1, 1), int), np.ones((3, 2), int))


def test_focus_layer_is_focus_then_gemm():
    x, pos = golden.photo.photo_tokens(frames=3, grid=4, dim=8)
    attention = golden.photo.photo_attention(frames=3, grid=4, dim=8, queries=2, seed=1)
    scores = golden.scores_from_fp16(attention.astype(np.float16))
    w = np.random.default_rng(3).integers(-128, 128, (8, 6))
    args = dict(frame_stride=16, row_stride=4, theta_q=golden.theta_q(0.8), tile=24, window=32,
                dim=4)
    mask, y = golden.focus_layer(scores, x, w, 20, **args)
    want_mask, _, _, maps, uniques = golden.focus(scores, x, 20, **args)
    np.testing.assert_array_equal(mask, want_mask)
    np.testing.assert_array_equal(y, reconstruct(uniques, maps) @ w)
    assert y.shape == (20, 6)
    with pytest.raises(ValueError, match=r"^weights must have shape \[D, N\] = \[8, N >= 1\]"):
        golden.focus_layer(scores, x, w[:4], 20, **args)


# ---- the cycle model ----------------------------------------------------------------------------

def brute(chunks, R, rows):
    """The recurrence of golden/gemm_cycles.py's docstring, one chunk at a time, written out."""
    L = 2 * R
    w, a, e, B = [0], [], [], []
    for j, (p, m) in enumerate(chunks):
        B.append(math.ceil(m / rows))
        bank = a[j - 2] + B[j - 2] if j >= 2 else -10**9
        v = max(w[j] + R, bank)
        e.append(v + p - 1 + L)
        w.append(e[j] + 1)
        a.append(max(e[j] + 1, a[j - 1] + B[j - 1] if j else -10**9))
    return a[-1] + B[-1] - 1 + 4 + 1 if chunks else 0     # the scatter latency, 4


def test_model_by_hand():
    """dim 1, one chunk of p = m = 1: weight row at 0, vector at 1, its row written at 3 (latency
    2*1: the product, then the sum), map beat taken at 4, result at 8 (read, registered,
    forwarded, added): 9 cycles. dim 4, one chunk of p = 3 in a tile of m = 5 with 2 rows a
    cycle: vectors from 4, last row written at 4 + 2 + 8 = 14, three map beats from 15 to 17,
    result at 21: 22 cycles."""
    assert gemm_cycles([(1, 1, 1)], 1, 1) == 9
    assert gemm_cycles([(1, 3, 5)], 4, 2) == 22
    assert gemm_cycles([], 4, 2) == 0 and gemm_cycles([(0, 3, 5)], 4, 2) == 0
    assert chunk_overhead(32) == 96


def test_model_steady_state():
    """A long run of equal chunks costs max(p + 3R, ceil(m / rows)) each: array-bound and
    scatter-bound."""
    for p, m, R, rows in [(100, 300, 32, 2), (100, 300, 32, 1), (1, 1024, 32, 5), (50, 50, 8, 1)]:
        per = steady_chunk_cycles(p, m, R, rows)
        assert per == max(p + 3 * R, math.ceil(m / rows))
        n1, n2 = gemm_cycles([(1000, p, m)], R, rows), gemm_cycles([(2000, p, m)], R, rows)
        assert n2 - n1 == 1000 * per


@pytest.mark.parametrize("seed", range(6))
def test_model_skips_periods_exactly(seed):
    """Runs of equal chunks (periods skipped) give the same count as the chunk-by-chunk
    recurrence, for random runs."""
    rng = np.random.default_rng(seed)
    R, rows = int(rng.integers(1, 9)), int(rng.integers(1, 6))
    runs = []
    for _ in range(int(rng.integers(1, 5))):
        m = int(rng.integers(1, 60))
        runs.append((int(rng.integers(0, 40)), int(rng.integers(1, m + 1)), m))
    chunks = [(p, m) for count, p, m in runs for _ in range(count)]
    assert gemm_cycles(runs, R, rows) == brute(chunks, R, rows)
    assert gemm_cycles([(1, p, m) for p, m in chunks], R, rows) == brute(chunks, R, rows)


def test_job_chunks_and_dense():
    p = FocusParams(dim=4, tile=8, scatter_rows=2)
    maps = np.array([[0], [0], [1], [2], [2], [3], [4], [4], [5], [5]])
    assert job_chunks(maps, 8, 5, 4) == [(1, 5, 8), (1, 5, 8), (1, 1, 2), (1, 1, 2)]
    assert focus_gemm_cycles(maps, 5, p) == brute([(5, 8), (5, 8), (1, 2), (1, 2)], 4, 2)
    assert tile_rows(19, 8) == [(2, 8), (1, 3)] and tile_rows(16, 8) == [(2, 8)]
    assert tile_rows(0, 8) == []
    dense = [(8, 8)] * 6 + [(3, 3)] * 6
    assert dense_gemm_cycles(19, 12, 8, p) == brute(dense[:6] + dense[:6] + dense[6:], 4, 2)
