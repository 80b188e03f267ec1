"""golden.similarity: the exact integer cosine test (spec 4.1) against float and rational checks."""

from fractions import Fraction

import numpy as np
import pytest

from golden.similarity import better, dot, similar, sqnorm


def float_cos(x, y):
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    num = np.sum(x * y, axis=-1)
    den = np.sqrt(np.sum(x * x, axis=-1) * np.sum(y * y, axis=-1))
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def rational_similar(x, y, theta_q, theta_bits):
    """cos(x, y) > theta_q / 2**F with Fractions: dot > 0 and dot**2 / (nx*ny) > theta**2."""
    d = sum(int(a) * int(b) for a, b in zip(x, y, strict=True))
    nx = sum(int(a) ** 2 for a in x)
    ny = sum(int(b) ** 2 for b in y)
    if nx == 0 or ny == 0 or d <= 0:
        return False
    return Fraction(d * d, nx * ny) > Fraction(theta_q, 1 << theta_bits) ** 2


def correlated_pairs(rng, n, v, low=-128, high=127):
    """Pairs whose cosines spread over [-1, 1]: y = a*x + noise with a random mix."""
    x = rng.integers(low, high + 1, (n, v))
    noise = rng.integers(low, high + 1, (n, v))
    a = rng.uniform(-1, 1, (n, 1))
    y = np.clip(np.round(a * x + (1 - np.abs(a)) * noise), low, high).astype(np.int64)
    dtype = np.int8 if -128 <= low and high <= 127 else np.int16
    return x.astype(dtype), y.astype(dtype)


@pytest.mark.parametrize("v", [1, 4, 32])
@pytest.mark.parametrize("theta_q", [0, 1, 128, 200, 230, 255])
def test_random_pairs_match_float_cosine(v, theta_q):
    rng = np.random.default_rng(1000 * v + theta_q)
    x, y = correlated_pairs(rng, 4000, v)
    x[:20] = 0                                          # some zero vectors too
    theta = theta_q / 256
    cos = float_cos(x, y)
    clear = np.abs(cos - theta) >= 1e-6
    got = similar(x, y, theta_q)
    assert got.shape == (4000,) and got.dtype == bool
    want = cos > theta
    assert np.array_equal(got[clear], want[clear])
    assert want[clear].sum() > 50 and (~want[clear]).sum() > 50      # not vacuous


@pytest.mark.parametrize("theta_bits", [1, 4, 8, 12, 16])
def test_random_pairs_match_rational_check(theta_bits):
    rng = np.random.default_rng(theta_bits)
    x, y = correlated_pairs(rng, 300, 5, -8, 7)
    tqs = rng.integers(0, 1 << theta_bits, 300)
    for xi, yi, tq in zip(x, y, tqs, strict=True):
        assert bool(similar(xi, yi, int(tq), theta_bits)) == rational_similar(xi, yi, tq,
                                                                             theta_bits)


def check_exact_threshold(x, y, cos_squared, theta_bits=8):
    """Sweep theta_q over its whole range: similar exactly when (theta_q / 2**F)**2 < cos**2."""
    for tq in range(1 << theta_bits):
        expect = Fraction(tq, 1 << theta_bits) ** 2 < cos_squared
        assert bool(similar(x, y, tq, theta_bits)) == expect, (x, y, tq)


def test_cos_one_half_is_not_above_128():
    x, y = [1, 0, 0, 0], [1, 1, 1, 1]                   # cos = 1 / sqrt(4) = 1/2 exactly
    assert not similar(x, y, 128)                       # strict: 1/2 > 128/256 is false
    assert similar(x, y, 127)
    assert not similar([2, 0, 0, 0], [3, 3, 3, 3], 128)
    assert similar([2, 0, 0, 0], [3, 3, 3, 3], 127)
    check_exact_threshold(x, y, Fraction(1, 4))
    assert not similar(x, y, 2048, 12)                  # 2048 / 4096 = 1/2 again
    assert similar(x, y, 2047, 12)


def test_cos_three_quarters_is_not_above_192():
    x, y = [1, 0, 0, 0, 0], [3, 2, 1, 1, 1]             # dot 3, ny 16: cos = 3/4 exactly
    assert float_cos(x, y) == 0.75
    assert not similar(x, y, 192)
    assert similar(x, y, 191)
    check_exact_threshold(x, y, Fraction(9, 16))


def test_cos_three_fifths_between_representable_thresholds():
    x, y = [1, 0], [3, 4]                               # cos = 3/5; 0.6 * 256 = 153.6
    assert similar(x, y, 153)                           # 153/256 < 0.6
    assert not similar(x, y, 154)                       # 154/256 > 0.6
    check_exact_threshold(x, y, Fraction(9, 25))
    check_exact_threshold([-3, 5, 0], [-3, 5, 0], Fraction(1))
    for tq in range(256):
        assert bool(similar(x, y, tq)) == rational_similar(x, y, tq, 8)


def test_orthogonal_and_opposite_never_similar():
    for x, y in [([1, 0], [0, 1]), ([1, 1], [1, -1]), ([5, -3, 2], [3, 5, 0])]:
        assert dot(x, y) == 0
        assert not similar(x, y, 0)                     # cos = 0 is not > 0
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (500, 32)).astype(np.int8)
    x[np.all(x == 0, axis=1)] = 1
    y = np.clip(-x.astype(np.int64), -128, 127).astype(np.int8)
    assert not similar(x, y, 0).any()                   # negative dot, any threshold
    x2, y2 = correlated_pairs(np.random.default_rng(7), 2000, 8)
    neg = dot(x2, y2) < 0
    assert neg.sum() > 100
    assert not similar(x2[neg], y2[neg], 0).any()


def test_identical_vectors_are_always_similar():
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (200, 32)).astype(np.int8)
    x[0] = -128                                          # the extreme element
    x[np.all(x == 0, axis=1)] = 5
    assert similar(x, x, 255).all()
    assert similar(x, x, (1 << 16) - 1, 16).all()
    assert similar(x, 2 * x.astype(np.int64) // 2, 255).all()


def test_zero_vectors_never_similar():
    z = np.zeros(8, np.int8)
    y = np.arange(1, 9, dtype=np.int8)
    for tq in (0, 1, 255):
        assert not similar(z, y, tq)
        assert not similar(y, z, tq)
        assert not similar(z, z, tq)


def test_broadcasting_over_leading_dims():
    rng = np.random.default_rng(11)
    x = rng.integers(-3, 4, (5, 1, 6))
    y = rng.integers(-3, 4, (1, 4, 6))
    got = similar(x, y, 100)
    assert got.shape == (5, 4)
    for i in range(5):
        for j in range(4):
            assert got[i, j] == rational_similar(x[i, 0], y[0, j], 100, 8)
    assert similar(x[0, 0], y[0], 100).shape == (4,)
    assert similar(x[0, 0], y[0, 0], 100).shape == ()
    assert dot(x, y).shape == (5, 4) and sqnorm(x).shape == (5, 1)


def test_better_matches_float_cosine():
    rng = np.random.default_rng(5)
    x, y1 = correlated_pairs(rng, 5000, 32)
    _, y2 = correlated_pairs(rng, 5000, 32)
    y2 = np.where(rng.random((5000, 1)) < 0.5, y2, np.clip(x.astype(np.int64) + rng.integers(
        -20, 21, x.shape), -128, 127)).astype(np.int8)
    both = similar(x, y1, 0) & similar(x, y2, 0)
    x, y1, y2 = x[both], y1[both], y2[both]
    c1, c2 = float_cos(x, y1), float_cos(x, y2)
    clear = np.abs(c1 - c2) >= 1e-9
    got = better(dot(x, y1), sqnorm(y1), dot(x, y2), sqnorm(y2))
    assert clear.sum() > 500
    assert np.array_equal(got[clear], (c1 > c2)[clear])
    assert not better(dot(x, y1), sqnorm(y1), dot(x, y1), sqnorm(y1)).any()   # strict
    # equal cosines from different vectors: y and 2*y
    y = np.array([1, 2, 3])
    xx = np.array([3, 2, 1])
    assert not better(dot(xx, y), sqnorm(y), dot(xx, 2 * y), sqnorm(2 * y))
    assert not better(dot(xx, 2 * y), sqnorm(2 * y), dot(xx, y), sqnorm(y))


def test_errors():
    x = np.ones(4, np.int8)
    with pytest.raises(ValueError, match=r"theta_q = 256 is out of range"):
        similar(x, x, 256)
    with pytest.raises(ValueError, match=r"theta_q = -1 is out of range"):
        similar(x, x, -1)
    with pytest.raises(ValueError, match=r"theta_q = 16 is out of range.*theta_bits = 4"):
        similar(x, x, 16, 4)
    with pytest.raises(ValueError, match=r"theta_q must be an integer"):
        similar(x, x, 0.5)
    with pytest.raises(ValueError, match=r"theta_q must be an integer"):
        similar(x, x, True)
    with pytest.raises(ValueError, match=r"same V"):
        similar(x, np.ones(5, np.int8), 0)
    with pytest.raises(ValueError, match=r"x must be an integer array"):
        similar(x.astype(np.float32), x, 0)
    with pytest.raises(ValueError, match=r"y must be an integer array"):
        similar(x, x.astype(bool), 0)


@pytest.mark.parametrize("big", [np.array([2**31, 1], np.int64), np.array([2**63, 1], np.uint64),
                                 np.array([-32769, 0]), np.array([32768, 0], np.uint16)],
                         ids=["int64-2**31", "uint64-2**63", "-32769", "uint16-32768"])
def test_elements_outside_16_bits_are_rejected(big):
    """Elements must fit the widest elem_bits (16): beyond it the products are not the ones the
    hardware computes, and int64 could overflow; the message gives the range and the data's own
    min and max (a uint64 value above 2**63 is not wrapped to a negative one first)."""
    ok = np.ones(2, np.int64)
    low, high = int(big.min()), int(big.max())
    message = (rf"^x has elements outside the signed 16-bit range \[-32768, 32767\]: "
               rf"min {low}, max {high}$")
    with pytest.raises(ValueError, match=message):
        similar(big, ok, 1)
    with pytest.raises(ValueError, match=message.replace("^x", "^y")):
        similar(ok, big, 1)


def test_the_16_bit_extremes_are_accepted():
    x = np.array([-32768, 32767, -32768], np.int16)
    assert similar(x, x, 255)                                    # cos = 1
    assert not similar(x, np.array([32767, -32767, 32767]), 0)   # opposite: dot < 0


@pytest.mark.parametrize("values, bits", [([-32768], 16), ([32767], 16), ([-32768, 32767], 16),
                                          ([32768], 17), ([-32769], 17), ([-128, -128], 8),
                                          ([-129], 9), ([0], 1), ([-1], 1), ([1], 2), ([], 0)])
def test_signed_bits(values, bits):
    from golden.similarity import signed_bits

    assert signed_bits(np.array(values, np.int64)) == bits


THETA_BITS_BAD = [(True, r"must be an integer, not True"), (None, r"must be an integer, not None"),
                  (1.5, r"must be an integer, not 1\.5"),
                  (0, r"= 0 is out of range: it must be in \[1, 16\]"),
                  (-1, r"= -1 is out of range: it must be in \[1, 16\]"),
                  (17, r"= 17 is out of range: it must be in \[1, 16\]"),
                  (40, r"= 40 is out of range: it must be in \[1, 16\]")]


@pytest.mark.parametrize("theta_bits, message", THETA_BITS_BAD,
                         ids=[repr(t) for t, _ in THETA_BITS_BAD])
def test_theta_bits_is_validated(theta_bits, message):
    """theta_bits (F) is an integer in 1..16, as FocusParams allows; anything else is a ValueError
    naming theta_bits, not a shift error or a silently wrong threshold."""
    x = np.ones(4, np.int8)
    with pytest.raises(ValueError, match=rf"^theta_bits {message}$"):
        similar(x, x, 0, theta_bits)


def test_theta_bits_takes_numpy_integers():
    x, y = np.array([3, 1, 0, 0]), np.array([3, 0, 1, 0])    # cos = 9/10
    assert similar(x, y, np.int64(57), np.int64(6))           # 57/64 < 0.9 < 58/64
    assert not similar(x, y, np.int64(58), np.int64(6))


def test_leading_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"^x and y do not broadcast: leading shapes \(2, 4\) and "
                                         r"\(3, 1\) \(the dimensions before V must be equal or "
                                         r"1\)$"):
        similar(np.ones((2, 4, 3), int), np.ones((3, 1, 3), int), 1)
