"""golden.reference: the float64 model agrees with the exact model away from the threshold."""

import numpy as np
import pytest

from golden import reference as ref
from golden.block_match import block_match, candidate_offsets, sic
from golden.photo import photo_tokens
from golden.similarity import better, dot, similar, sqnorm


def candidate_pairs(positions, fs, hs, tile):
    """(token, candidate) index pairs of every existing candidate (zero or not)."""
    pairs = []
    pos = [int(p) for p in positions]
    offsets = [int(o) for o in candidate_offsets(fs, hs)]
    for start in range(0, len(pos), tile):
        where = {p: i for i, p in enumerate(pos[start:start + tile], start)}
        for s in range(start, min(start + tile, len(pos))):
            for off in offsets:
                if off and pos[s] - off in where:
                    pairs.append((s, where[pos[s] - off]))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def assert_not_borderline(vectors, positions, fs, hs, tile, theta_q):
    """The precondition for float and exact to agree: no cosine within 1e-6 of the threshold,
    and two similar candidates of one token are either exactly tied or 1e-9 apart."""
    pairs = candidate_pairs(positions, fs, hs, tile)
    x, y = vectors[pairs[:, 0]], vectors[pairs[:, 1]]
    cos = ref.cosine(x, y)
    live = (sqnorm(x) > 0) & (sqnorm(y) > 0)
    assert np.all(np.abs(cos[live] - theta_q / 256) >= 1e-6)
    sim = similar(x, y, theta_q)
    for s in np.unique(pairs[sim, 0]):
        rows = np.flatnonzero(sim & (pairs[:, 0] == s))
        for a in rows:
            for b in rows:
                if a < b and abs(cos[a] - cos[b]) < 1e-9:
                    d1, d2 = dot(x[a], y[a]), dot(x[b], y[b])
                    assert not better(d1, sqnorm(y[a]), d2, sqnorm(y[b]))
                    assert not better(d2, sqnorm(y[b]), d1, sqnorm(y[a]))
                    assert cos[a] == cos[b]
    return int(sim.sum())


def round_half_away(a):
    return np.sign(a) * np.floor(np.abs(a) + 0.5)


def compare(vectors, positions, fs, hs, theta_q, tile=1024, representative="first"):
    assert_not_borderline(vectors, positions, fs, hs, tile, theta_q)
    m, u = block_match(vectors, positions, frame_stride=fs, row_stride=hs, theta_q=theta_q,
                       tile=tile, representative=representative)
    mf, uf = ref.block_match(vectors, positions, frame_stride=fs, row_stride=hs,
                             theta=theta_q / 256, tile=tile, representative=representative)
    assert mf.dtype == np.int64 and uf.dtype == np.float64
    assert np.array_equal(m, mf)
    if representative == "first":
        assert np.array_equal(u, uf)
    else:
        assert np.array_equal(u, round_half_away(uf))
    return m, u


@pytest.mark.parametrize("frames", [2, 6])
@pytest.mark.parametrize("theta_q", [192, 230, 243])
@pytest.mark.parametrize("representative", ["first", "mean"])
def test_photo_tokens_agree(frames, theta_q, representative):
    v, pos = photo_tokens(frames=frames)
    m, u = compare(v, pos, 196, 14, theta_q, tile=512, representative=representative)
    assert 0 < len(pos) - len(u) < len(pos)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_correlated_tokens_agree(seed):
    rng = np.random.default_rng(seed)
    base = rng.integers(-128, 128, (1, 8, 8, 32))
    v = np.clip(base + rng.integers(-50, 51, (5, 8, 8, 32)), -128, 127)
    v = v.reshape(-1, 32).astype(np.int8)
    v[::17] = 0
    pos = np.sort(rng.choice(320, 260, replace=False))
    for tq in (200, 230):
        for rep in ("first", "mean"):
            m, u = compare(v[pos], pos, 64, 8, tq, tile=100, representative=rep)
            assert 0 < 260 - len(u) < 260


def test_sic_agrees():
    v, pos = photo_tokens(frames=3, dim=64)
    maps, uniques = sic(v, pos, frame_stride=196, row_stride=14, theta_q=230)
    mf, uf = ref.sic(v, pos, frame_stride=196, row_stride=14, theta=230 / 256)
    assert mf.shape == maps.shape == (588, 2)
    assert np.array_equal(maps, mf)
    assert all(np.array_equal(a, b) for a, b in zip(uniques, uf, strict=True))


def test_float_inputs_and_float_ties():
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.5, 0.1], [2.0, 0.0]])
    # token 3 (position 3) has candidates 2 (c=1), 1 (c=2, HS=2 -> offset 2), 0 (c=3)
    m, u = ref.block_match(v, np.arange(4), frame_stride=0, row_stride=2, theta=0.5)
    assert np.array_equal(m, [0, 0, 0, 0])
    m, u = ref.block_match(v, np.arange(4), frame_stride=0, row_stride=2, theta=0.99,
                           representative="mean")
    assert np.array_equal(m, [0, 0, 1, 0])
    assert np.allclose(u, [[4 / 3, 0], [0.5, 0.1]])


def test_empty_and_tile_one():
    m, u = ref.block_match(np.zeros((0, 8)), np.zeros(0, np.int64), frame_stride=4,
                           row_stride=2, theta=0.5)
    assert m.shape == (0,) and u.shape == (0, 8)
    maps, uniques = ref.sic(np.zeros((0, 64)), np.zeros(0, np.int64), frame_stride=4,
                            row_stride=2, theta=0.5)
    assert maps.shape == (0, 2) and [x.shape for x in uniques] == [(0, 32), (0, 32)]
    m, u = ref.block_match(np.ones((5, 3)), np.arange(5), frame_stride=1, row_stride=1,
                           theta=0.5, tile=1)
    assert np.array_equal(m, np.arange(5)) and u.shape == (5, 3)
    m, u = ref.block_match(np.zeros((5, 3)), np.arange(5), frame_stride=1, row_stride=1,
                           theta=0.0, representative="mean")
    assert np.array_equal(m, np.arange(5)) and not u.any()


def test_cosine_edges():
    assert ref.cosine([0, 0], [1, 2]) == 0.0
    assert ref.cosine([0, 0], [0, 0]) == 0.0
    assert ref.cosine([3, 4], [3, 4]) == pytest.approx(1.0)
    assert ref.cosine([1, 0], [3, 4]) == pytest.approx(0.6)
    assert ref.cosine([1, 0], [-1, 0]) == -1.0
    c = ref.cosine(np.ones((3, 1, 4)), np.ones((1, 5, 4)))
    assert c.shape == (3, 5) and np.allclose(c, 1.0)
    assert not ref.similar([1, 0], [0, 1], 0.0)
    assert ref.similar([1, 0], [3, 4], 0.59) and not ref.similar([1, 0], [3, 4], 0.61)
    assert not ref.similar([0, 0], [0, 0], 0.0)


def test_similar_agrees_with_exact_away_from_threshold():
    rng = np.random.default_rng(8)
    x = rng.integers(-128, 128, (3000, 16))
    y = np.clip(x + rng.integers(-128, 128, (3000, 16)) * rng.random((3000, 1)), -128, 127)
    y = y.astype(np.int64)
    for tq in (0, 128, 230):
        cos = ref.cosine(x, y)
        clear = np.abs(cos - tq / 256) >= 1e-6
        assert np.array_equal(ref.similar(x, y, tq / 256)[clear], similar(x, y, tq)[clear])


def test_importance_and_topk():
    scores = np.array([[0.1, 0.5, 0.2], [0.3, 0.0, 0.2]])
    assert np.array_equal(ref.importance(scores), [0.3, 0.5, 0.2])
    assert np.array_equal(ref.importance(scores[:1]), scores[0])
    s = np.array([1.0, 3.0, 3.0, 2.0, 3.0])
    assert np.array_equal(ref.topk_mask(s, 2), [False, True, True, False, False])
    assert np.array_equal(ref.topk_mask(s, 4), [False, True, True, True, True])
    assert not ref.topk_mask(s, 0).any()
    assert ref.topk_mask(s, 99).all()
    assert ref.topk_mask(np.zeros(0), 3).shape == (0,)


def test_errors():
    v = np.ones((4, 2))
    kw = dict(frame_stride=1, row_stride=1, theta=0.9)
    with pytest.raises(ValueError, match=r"theta = 1.0 is out of range"):
        ref.similar([1], [1], 1.0)
    with pytest.raises(ValueError, match=r"theta = -0.1 is out of range"):
        ref.block_match(v, np.arange(4), frame_stride=1, row_stride=1, theta=-0.1)
    with pytest.raises(ValueError, match=r"same last axis"):
        ref.cosine([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=r"finite"):
        ref.cosine([np.nan, 1.0], [1, 2])
    with pytest.raises(ValueError, match=r"strictly increasing: positions\[2\]"):
        ref.block_match(v, np.array([0, 2, 1, 3]), **kw)
    with pytest.raises(ValueError, match=r"must be less than window"):
        ref.block_match(v, np.arange(4), frame_stride=200, row_stride=60, theta=0.5)
    with pytest.raises(ValueError, match=r"representative must be"):
        ref.block_match(v, np.arange(4), representative="max", **kw)
    with pytest.raises(ValueError, match=r"vectors must be a 2-D array"):
        ref.block_match(np.ones(4), np.arange(4), **kw)
    with pytest.raises(ValueError, match=r"positions must have shape \(4,\)"):
        ref.block_match(v, np.arange(3), **kw)
    with pytest.raises(ValueError, match=r"scores must be a 2-D array"):
        ref.importance(np.ones(3))
    with pytest.raises(ValueError, match=r"keep must be an integer >= 0"):
        ref.topk_mask(np.ones(3), -1)
    with pytest.raises(ValueError, match=r"positive multiple of dim = 32"):
        ref.sic(np.ones((4, 40)), np.arange(4), **kw)
