"""golden.block_match: the vectorised exact block matcher (spec 4.2) against a naive loop."""

import time

import numpy as np
import pytest

from golden.block_match import block_match, sic
from golden.photo import photo_tokens
from golden.similarity import similar


def naive_block_match(vectors, positions, fs, hs, theta_q, theta_bits, tile, representative,
                      stats=None):
    """Spec 4.2 read literally: per token, per c, a Python search of the tile; Python ints only."""
    vecs = [[int(e) for e in row] for row in np.asarray(vectors)]
    pos = [int(p) for p in positions]
    count = len(pos)
    maps, groups = [], []
    for s in range(count):
        start = s - s % tile
        x = vecs[s]
        nx = sum(e * e for e in x)
        best = None                                     # (dot, ny, j)
        for c in range(1, 8):
            f, dh, dw = c >> 2, (c >> 1) & 1, c & 1
            q = pos[s] - (f * fs + dh * hs + dw)
            if q == pos[s]:
                continue                                # offset 0: the token itself
            j = None
            for k in range(s - 1, start - 1, -1):       # earlier tokens of the tile
                if pos[k] == q:
                    j = k
                    break
                if pos[k] < q:
                    break
            if j is None:
                continue
            y = vecs[j]
            ny = sum(e * e for e in y)
            if ny == 0:
                continue
            d = sum(a * b for a, b in zip(x, y, strict=True))
            if not (nx > 0 and d > 0 and d * d * (1 << (2 * theta_bits))
                    > theta_q * theta_q * nx * ny):
                continue
            if best is not None and d * d * best[1] == best[0] ** 2 * ny and stats is not None:
                stats["ties"] = stats.get("ties", 0) + 1
            if best is None or d * d * best[1] > best[0] ** 2 * ny:
                best = (d, ny, j)
        if best is None:
            maps.append(len(groups))
            groups.append([s])
        else:
            maps.append(maps[best[2]])
            groups[maps[-1]].append(s)
    width = np.asarray(vectors).shape[1]
    uniques = []
    for g in groups:
        if representative == "first":
            uniques.append(vecs[g[0]])
        else:
            row = []
            for e in range(width):
                t = sum(vecs[s][e] for s in g)
                c = len(g)
                row.append((1 if t > 0 else -1 if t < 0 else 0) * ((2 * abs(t) + c) // (2 * c)))
            uniques.append(row)
    return np.array(maps, dtype=np.int64), np.array(uniques, dtype=np.int64).reshape(-1, width)


def run_both(vectors, positions, fs, hs, theta_q, theta_bits=8, tile=1024, window=256,
             representative="first"):
    got_map, got_u = block_match(vectors, positions, frame_stride=fs, row_stride=hs,
                                 theta_q=theta_q, theta_bits=theta_bits, tile=tile,
                                 window=window, representative=representative)
    stats = {}
    want_map, want_u = naive_block_match(vectors, positions, fs, hs, theta_q, theta_bits, tile,
                                         representative, stats)
    assert got_map.dtype == np.int64 and got_map.shape == (len(positions),)
    assert got_u.dtype == np.asarray(vectors).dtype
    assert np.array_equal(got_map, want_map)
    assert got_u.shape == want_u.shape and np.array_equal(got_u.astype(np.int64), want_u)
    return got_map, got_u, stats


def small_alphabet(rng, count, v, values):
    return rng.choice(np.array(values, dtype=np.int8), size=(count, v))


def pruned(rng, count, keep):
    return np.sort(rng.choice(count, size=int(count * keep), replace=False)).astype(np.int64)


@pytest.mark.parametrize("representative", ["first", "mean"])
@pytest.mark.parametrize("tile", [1, 7, 50, 1024])
@pytest.mark.parametrize("theta_q", [0, 128, 255])
def test_small_alphabet_against_naive(representative, tile, theta_q):
    rng = np.random.default_rng(tile * 7 + theta_q)
    fs, hs = 36, 6                                       # 6x6 frames
    v = small_alphabet(rng, 400, 3, [0, 1, 2])           # many equal vectors: exact ties
    m, u, stats = run_both(v, np.arange(400), fs, hs, theta_q, tile=tile,
                           representative=representative)
    if tile > 1:
        assert m.max() + 1 < 400                         # some matches
        if theta_q < 255:
            assert stats.get("ties", 0) > 0              # exact ties were resolved by c
    else:
        assert np.array_equal(m, np.arange(400))         # tile = 1: nothing to compare with


@pytest.mark.parametrize("representative", ["first", "mean"])
@pytest.mark.parametrize("keep", [0.4, 0.8])
def test_pruned_positions_against_naive(representative, keep):
    rng = np.random.default_rng(int(keep * 10))
    fs, hs = 64, 8
    pos = pruned(rng, 8 * fs, keep)
    v = small_alphabet(rng, len(pos), 4, [-1, 0, 1, 1, 2])
    m, _, _ = run_both(v, pos, fs, hs, 100, tile=97, representative=representative)
    assert 0 < len(pos) - (m.max() + 1) < len(pos)


def test_correlated_int8_against_naive():
    rng = np.random.default_rng(42)
    fs, hs = 100, 10
    base = rng.integers(-128, 128, (1, 10, 10, 16))
    drift = rng.integers(-30, 31, (4, 10, 10, 16))
    v = np.clip(base + np.cumsum(drift, axis=0), -128, 127).reshape(400, 16).astype(np.int8)
    v[::13] = 0                                          # zero vectors scattered about
    for tq in (0, 150, 230, 255):
        for rep in ("first", "mean"):
            m, _, _ = run_both(v, np.arange(400), fs, hs, tq, tile=150, representative=rep)
            if tq == 230:
                assert 0 < 400 - (m.max() + 1) < 400


def test_extreme_elements_are_exact():
    # int16 elements near full scale: dot**2 * ny overflows int64; results must stay exact.
    rng = np.random.default_rng(9)
    base = rng.choice(np.array([-32768, 32767, -32000, 31000], dtype=np.int16), size=(1, 32))
    v = np.repeat(base, 120, axis=0)
    flip = rng.random(v.shape) < 0.05
    v = np.where(flip, -v.astype(np.int64) // 2, v).astype(np.int16)
    for tq in (0, 200, 250, 255):
        for rep in ("first", "mean"):
            run_both(v, np.arange(120), 16, 4, tq, tile=64, representative=rep)
    # theta_bits = 16 with int8 extremes
    w = np.repeat(np.full((1, 32), -128, np.int8), 30, axis=0)
    w[5::3, 0] = 127
    run_both(w, np.arange(30), 9, 3, 65535, theta_bits=16)
    run_both(w, np.arange(30), 9, 3, 65000, theta_bits=16)


def test_all_zero_vectors():
    v = np.zeros((50, 8), np.int8)
    for rep in ("first", "mean"):
        m, u, _ = run_both(v, np.arange(50), 10, 3, 0, representative=rep)
        assert np.array_equal(m, np.arange(50))
        assert u.shape == (50, 8) and not u.any()


def test_zero_and_duplicate_offsets():
    # FS = 0 or HS = 0 make some offsets 0 (never a candidate) and others equal (tie to small c).
    rng = np.random.default_rng(2)
    v = small_alphabet(rng, 200, 2, [0, 1, 2])
    for fs, hs in [(0, 0), (0, 5), (5, 0), (1, 1), (0, 1), (2, 1)]:
        run_both(v, np.arange(200), fs, hs, 128, tile=40)
        run_both(v, np.arange(200), fs, hs, 0, tile=40, representative="mean")


def test_tile_boundaries_split_frames():
    # Identical tokens everywhere: within a tile all but the first match; no match across tiles.
    v = np.ones((100, 4), np.int8)
    for tile in (1, 10, 33, 100, 1024):
        m, u, _ = run_both(v, np.arange(100), 25, 5, 255, tile=tile)
        expected = np.arange(100) // tile
        assert np.array_equal(m, expected)
        assert len(u) == -(-100 // tile)


def test_mean_rounds_half_away_from_zero():
    v = np.array([[1, -1, 2, 3], [2, -2, 2, 3], [1, -1, 3, 3], [2, -2, 3, 4]], np.int8)
    # theta_q = 0: every positive-dot candidate is similar; all four tokens form one group.
    m, u = block_match(v, np.arange(4), frame_stride=2, row_stride=1, theta_q=0,
                       representative="mean")
    assert np.array_equal(m, [0, 0, 0, 0])
    # sums 6, -6, 10, 13 over 4: 1.5 -> 2, -1.5 -> -2, 2.5 -> 3, 3.25 -> 3
    assert np.array_equal(u, [[2, -2, 3, 3]])
    m, u = block_match(v, np.arange(4), frame_stride=2, row_stride=1, theta_q=0)
    assert np.array_equal(u, v[:1])


def test_comparisons_use_original_vectors():
    # Token 2 is similar to token 1 but not to token 0; token 1 matches token 0 (a chain).
    v = np.array([[10, 0], [10, 3], [10, 6]], np.int8)
    m, u = block_match(v, np.arange(3), frame_stride=1, row_stride=0, theta_q=240,
                       representative="mean")
    m_naive, u_naive = naive_block_match(v, np.arange(3), 1, 0, 240, 8, 1024, "mean")
    assert np.array_equal(m, m_naive) and np.array_equal(u, u_naive)
    assert np.array_equal(m, [0, 0, 0])
    assert not similar(v[0], v[2], 240) and similar(v[1], v[2], 240)
    assert np.array_equal(u, [[10, 3]])


def test_empty_input():
    m, u = block_match(np.zeros((0, 32), np.int8), np.zeros(0, np.int64), frame_stride=196,
                       row_stride=14, theta_q=230)
    assert m.shape == (0,) and m.dtype == np.int64
    assert u.shape == (0, 32)
    maps, us = sic(np.zeros((0, 64), np.int8), np.zeros(0, np.int64), frame_stride=196,
                   row_stride=14, theta_q=230)
    assert maps.shape == (0, 2) and [x.shape for x in us] == [(0, 32), (0, 32)]


@pytest.mark.parametrize("frames", [2, 4, 8])
def test_photo_tokens_against_naive(frames):
    v, pos = photo_tokens(frames=frames, grid=14, patch=8)
    for tq, rep in [(230, "first"), (200, "mean")]:
        m, u, _ = run_both(v, pos, 196, 14, tq, tile=1024, representative=rep)
        matched = len(pos) - len(u)
        assert 0.05 * len(pos) < matched < 0.95 * len(pos), matched


def test_photo_tokens_pruned_against_naive():
    v, pos = photo_tokens(frames=4, grid=14, patch=8)
    keep = np.sort(np.random.default_rng(0).choice(len(pos), 500, replace=False))
    m, u, _ = run_both(v[keep], pos[keep], 196, 14, 220, tile=256, representative="mean")
    assert 0 < 500 - len(u) < 500


def test_sic_columns_are_independent():
    rng = np.random.default_rng(4)
    base = small_alphabet(rng, 300, 12, [0, 1, 2])
    tokens = base.copy()
    tokens[:, 4:8] = -tokens[:, 4:8] + rng.integers(0, 2, (300, 4))
    maps, uniques = sic(tokens, np.arange(300), frame_stride=30, row_stride=5, theta_q=200,
                        dim=4, representative="mean")
    assert maps.shape == (300, 3) and maps.dtype == np.int64 and len(uniques) == 3
    for j in range(3):
        m, u = block_match(tokens[:, 4 * j:4 * j + 4], np.arange(300), frame_stride=30,
                           row_stride=5, theta_q=200, representative="mean")
        assert np.array_equal(maps[:, j], m) and np.array_equal(uniques[j], u)
    assert not np.array_equal(maps[:, 0], maps[:, 1])    # columns decide differently


def test_speed_10000_tokens():
    rng = np.random.default_rng(0)
    grid = 10
    frames = 100
    base = rng.integers(-128, 128, (1, grid, grid, 32))
    noise = rng.integers(-40, 41, (frames, grid, grid, 32))      # about a third stay unique
    v = np.clip(base + noise, -128, 127).reshape(-1, 32).astype(np.int8)
    assert v.shape == (10_000, 32)
    start = time.perf_counter()
    m, u = block_match(v, np.arange(10_000), frame_stride=grid * grid, row_stride=grid,
                       theta_q=230, representative="mean")
    elapsed = time.perf_counter() - start
    print(f"block_match on 10 000 tokens (V = 32): {elapsed:.3f} s, {len(u)} uniques")
    assert 1000 < len(u) < 9000
    assert elapsed < 10.0


def call(vectors=None, positions=None, **kw):
    args = dict(frame_stride=16, row_stride=4, theta_q=200)
    args.update(kw)
    if vectors is None:
        vectors = np.ones((8, 4), np.int8)
    if positions is None:
        positions = np.arange(len(vectors))
    return block_match(vectors, positions, **args)


def test_errors():
    with pytest.raises(ValueError, match=r"strictly increasing: positions\[3\] = 2 is not "
                                         r"greater than positions\[2\] = 2"):
        call(positions=np.array([0, 1, 2, 2, 4, 5, 6, 7]))
    with pytest.raises(ValueError, match=r"strictly increasing: positions\[1\]"):
        call(positions=np.array([5, 4, 6, 7, 8, 9, 10, 11]))
    with pytest.raises(ValueError, match=r"positions must be >= 0"):
        call(positions=np.arange(8) - 1)
    with pytest.raises(ValueError, match=r"must be less than window = 21"):
        call(window=21)
    with pytest.raises(ValueError, match=r"frame_stride \+ row_stride \+ 1 .* window"):
        call(frame_stride=196, row_stride=60, window=256)
    call(frame_stride=196, row_stride=58, window=256)    # 255 < 256 is fine
    with pytest.raises(ValueError, match=r"representative must be 'first' or 'mean'"):
        call(representative="median")
    with pytest.raises(ValueError, match=r"vectors must be a 2-D integer array"):
        call(vectors=np.ones(8, np.int8), positions=np.arange(8))
    with pytest.raises(ValueError, match=r"vectors must be a 2-D integer array"):
        call(vectors=np.ones((2, 4, 4), np.int8), positions=np.arange(2))
    with pytest.raises(ValueError, match=r"vectors must be an integer array"):
        call(vectors=np.ones((8, 4), np.float32))
    with pytest.raises(ValueError, match=r"positions must have shape \(8,\)"):
        call(positions=np.arange(7))
    with pytest.raises(ValueError, match=r"positions must have shape \(8,\)"):
        call(positions=np.arange(8).reshape(2, 4))
    with pytest.raises(ValueError, match=r"positions must be an integer array"):
        call(positions=np.arange(8.0))
    with pytest.raises(ValueError, match=r"outside the signed 16-bit range"):
        call(vectors=np.full((8, 4), 40000, np.int64))
    with pytest.raises(ValueError, match=r"frame_stride = -1 is out of range"):
        call(frame_stride=-1)
    with pytest.raises(ValueError, match=r"row_stride = -2 is out of range"):
        call(row_stride=-2)
    with pytest.raises(ValueError, match=r"frame_stride must be an integer"):
        call(frame_stride=1.5)
    with pytest.raises(ValueError, match=r"tile = 0 is out of range"):
        call(tile=0)
    with pytest.raises(ValueError, match=r"theta_q = 256 is out of range"):
        call(theta_q=256)
    with pytest.raises(ValueError, match=r"theta_q = 16 is out of range"):
        call(theta_q=16, theta_bits=4)
    with pytest.raises(ValueError, match=r"theta_q must be an integer"):
        call(theta_q=0.9)
    with pytest.raises(ValueError, match=r"theta_bits = 0 is out of range"):
        call(theta_bits=0)
    with pytest.raises(ValueError, match=r"D = 40 must be a positive multiple of dim = 32"):
        sic(np.ones((4, 40), np.int8), np.arange(4), frame_stride=1, row_stride=1, theta_q=0)
    with pytest.raises(ValueError, match=r"tokens must be a 2-D integer array"):
        sic(np.ones(32, np.int8), np.arange(1), frame_stride=1, row_stride=1, theta_q=0)
    with pytest.raises(ValueError, match=r"dim = 0 is out of range"):
        sic(np.ones((4, 32), np.int8), np.arange(4), frame_stride=1, row_stride=1, theta_q=0,
            dim=0)
    with pytest.raises(ValueError, match=r"must be less than window"):
        sic(np.ones((4, 32), np.int8), np.arange(4), frame_stride=200, row_stride=60,
            theta_q=0)
