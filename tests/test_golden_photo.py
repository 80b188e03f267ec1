"""golden.photo: real frames and tokens from matplotlib's sample photograph."""

import numpy as np
import pytest

from golden.formats import scores_from_fp16
from golden.photo import photo, photo_attention, photo_frames, photo_positions, photo_tokens
from golden.similarity import similar


def test_photo_loads():
    img = photo()
    assert img.shape == (600, 512, 3) and img.dtype == np.float64
    assert 0.0 <= img.min() and img.max() <= 1.0 and img.std() > 0.1


def test_frames_shape_and_motion():
    fr = photo_frames(frames=5, grid=14, patch=8)
    assert fr.shape == (5, 112, 112, 3) and fr.dtype == np.float64
    assert 0.0 <= fr.min() and fr.max() <= 1.0
    for f in range(4):
        assert not np.array_equal(fr[f], fr[f + 1])                  # the camera moves
    # pan (3, 2) output pixels per frame: frame 1 shifted back lines up with frame 0
    shifted = np.abs(fr[1, :-3, :-2] - fr[0, 3:, 2:]).mean()
    assert shifted < 0.25 * np.abs(fr[1] - fr[0]).mean()
    still = photo_frames(frames=3, pan=(0, 0))
    assert np.array_equal(still[0], still[2])
    zoomed = photo_frames(frames=3, pan=(0, 0), zoom=0.1)
    assert not np.array_equal(zoomed[0], zoomed[2])
    long = photo_frames(frames=40, grid=14, patch=8, pan=(5, 4))      # reflects at the edges
    assert long.shape == (40, 112, 112, 3)


def test_tokens_deterministic_and_typed():
    v1, p1 = photo_tokens(frames=3, seed=4)
    v2, p2 = photo_tokens(frames=3, seed=4)
    assert v1.tobytes() == v2.tobytes() and p1.tobytes() == p2.tobytes()
    v3, _ = photo_tokens(frames=3, seed=5)
    assert not np.array_equal(v1, v3)
    assert v1.shape == (3 * 196, 32) and v1.dtype == np.int8
    assert p1.dtype == np.int64 and np.array_equal(p1, np.arange(3 * 196))
    assert np.abs(v1.astype(np.int64)).max() == 127                # full-scale symmetric int8
    v4, p4 = photo_tokens(frames=2, grid=7, patch=4, dim=8, elem_bits=12)
    assert v4.shape == (98, 8) and v4.dtype == np.int16 and np.abs(v4).max() == 2047
    assert np.array_equal(p4, photo_positions(2, 7))


def test_positions_formula():
    p = photo_positions(3, 5).reshape(3, 5, 5)
    assert p[2, 3, 4] == 2 * 25 + 3 * 5 + 4


def test_adjacent_frames_are_correlated():
    v, _ = photo_tokens(frames=4)
    fs = 196
    adjacent = similar(v[fs:], v[:-fs], 200).mean()                 # same patch, next frame
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(v), (2, 5000))
    random = similar(v[a], v[b], 200).mean()
    assert adjacent > 0.3 and adjacent > 3 * random
    assert not np.array_equal(v[fs:2 * fs], v[:fs])


def test_attention_rows():
    att = photo_attention(frames=2, queries=3, seed=1)
    assert att.shape == (3, 392) and att.dtype == np.float64
    assert np.allclose(att.sum(axis=1), 1.0) and att.min() >= 0.0
    assert att.max() > 10 / 392                                     # not uniform
    assert np.array_equal(att, photo_attention(frames=2, queries=3, seed=1))
    s = scores_from_fp16(att)
    assert s.dtype == np.uint16 and s.shape == att.shape


def test_errors():
    with pytest.raises(ValueError, match=r"does not fit"):
        photo_frames(grid=40, patch=8)
    with pytest.raises(ValueError, match=r"frames must be an integer >= 1"):
        photo_frames(frames=0)
    with pytest.raises(ValueError, match=r"pan must be two finite numbers"):
        photo_frames(pan=(1, 2, 3))
    with pytest.raises(ValueError, match=r"zoom must be"):
        photo_frames(zoom=-0.5)
    with pytest.raises(ValueError, match=r"queries must be an integer >= 1"):
        photo_attention(queries=0)
