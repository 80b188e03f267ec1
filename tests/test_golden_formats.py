"""Number formats of the golden model (spec section 2): fp16 scores, quantization, thresholds."""

import numpy as np
import pytest

from golden.formats import default_scale, depth_thresholds, quantize, scores_from_fp16, theta_q

# ---- scores_from_fp16 ----------------------------------------------------------------------------


def _all_nonnegative_fp16():
    """Every finite non-negative fp16 value: the bit patterns 0x0000 .. 0x7BFF."""
    return np.arange(0x7C00, dtype=np.uint16).view(np.float16)


def test_fp16_order_preserved_exhaustive():
    x = _all_nonnegative_fp16()
    rng = np.random.default_rng(1)
    x = x[rng.permutation(x.size)]
    s = scores_from_fp16(x)
    assert s.dtype == np.uint16 and s.shape == x.shape
    # Sorting the values and sorting the scores give the same sequence.
    assert np.array_equal(scores_from_fp16(np.sort(x)), np.sort(s))
    # And the order of every pair agrees, including equality (sampled pairs).
    i, j = rng.integers(0, x.size, (2, 20000))
    xf = x.astype(np.float64)
    assert np.array_equal(np.sign(xf[i] - xf[j]), np.sign(s[i].astype(int) - s[j].astype(int)))


def test_fp16_from_float32_and_float64_rounds_to_fp16():
    rng = np.random.default_rng(2)
    x = rng.random(1000) * rng.choice([1e-6, 1e-3, 1.0, 1e3], 1000)
    for dtype in (np.float32, np.float64):
        xs = x.astype(dtype)
        assert np.array_equal(scores_from_fp16(xs), xs.astype(np.float16).view(np.uint16))
    assert np.array_equal(np.argsort(scores_from_fp16(x), kind="stable"),
                          np.argsort(x.astype(np.float16), kind="stable"))


def test_fp16_known_patterns_and_negative_zero():
    x = np.array([-0.0, 0.0, 2.0 ** -24, 1.0, 2.0, 65504.0], dtype=np.float16)
    assert scores_from_fp16(x).tolist() == [0, 0, 1, 0x3C00, 0x4000, 0x7BFF]
    assert scores_from_fp16([[0.5, 0]]).shape == (1, 2)
    assert scores_from_fp16(np.array([3, 0])).tolist() == [0x4200, 0]  # integer input


def test_fp16_rejects_negative():
    with pytest.raises(ValueError, match=r"negative values: 2 value\(s\) \(first at index 1: "
                                         r"-0\.5\)"):
        scores_from_fp16([1.0, -0.5, 2.0, -3.0])


def test_fp16_rejects_nan():
    with pytest.raises(ValueError, match=r"NaN: 1 value\(s\) \(first at index \(1, 0\)"):
        scores_from_fp16(np.array([[1.0, 2.0], [np.nan, 0.0]], dtype=np.float16))


def test_fp16_rejects_inf():
    with pytest.raises(ValueError, match=r"infinite values: 1 value\(s\) \(first at index 2"):
        scores_from_fp16([0.0, 1.0, np.inf])


def test_fp16_rejects_overflow():
    assert scores_from_fp16([65519.0]).tolist() == [0x7BFF]  # still rounds to 65504
    with pytest.raises(ValueError, match=r"overflow fp16 \(largest finite 65504\)"):
        scores_from_fp16([65520.0])


def test_fp16_rejects_bad_dtype():
    with pytest.raises(ValueError, match=r"real \(float or integer\) array, not dtype bool"):
        scores_from_fp16([True, False])
    with pytest.raises(ValueError, match=r"not dtype complex128"):
        scores_from_fp16([1j])


# ---- quantize ------------------------------------------------------------------------------------


def test_quantize_rounds_half_away_from_zero():
    x = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 0.25, -0.75, 0.0, -0.0]
    assert quantize(x, scale=1.0).tolist() == [1, 2, 3, -1, -2, -3, 0, 0, -1, 0, 0]


def test_quantize_saturates_symmetrically():
    x = [126.5, 127.4, 127.5, 128.0, 1000.0, -127.5, -128.0, -1e300]
    q = quantize(x, scale=1.0)
    assert q.dtype == np.int8
    assert q.tolist() == [127, 127, 127, 127, 127, -127, -127, -127]  # never -128
    assert quantize([1e300], scale=1e-300).tolist() == [127]          # x / scale overflows


def test_quantize_default_scale():
    x = np.array([[127.0, -63.5], [31.75, 0.0]])
    assert default_scale(x) == 1.0
    assert quantize(x).tolist() == [[127, -64], [32, 0]]
    # The largest magnitude maps to the top code, with either sign.
    assert quantize([-3.0, 1.0]).tolist() == [-127, 42]
    assert quantize([0.0, 0.0]).tolist() == [0, 0] and default_scale([0.0]) == 1.0
    rng = np.random.default_rng(3)
    y = rng.normal(size=1000)
    assert np.abs(quantize(y)).max() == 127


def test_quantize_other_widths():
    q = quantize([7.0, 3.5, -3.5, 8.0, -100.0], scale=1.0, elem_bits=4)
    assert q.dtype == np.int8 and q.tolist() == [7, 4, -4, 7, -7]
    q = quantize([2047.5, -5000.0, 10.5], scale=1.0, elem_bits=12)
    assert q.dtype == np.int16 and q.tolist() == [2047, -2047, 11]
    q = quantize([1.0, -1.0], elem_bits=16)
    assert q.dtype == np.int16 and q.tolist() == [32767, -32767]
    q = quantize([5.0, -2.0, 1.0], scale=2.0, elem_bits=2)
    assert q.tolist() == [1, -1, 1]


def test_quantize_rejects_non_finite():
    with pytest.raises(ValueError, match=r"non-finite values: 1 value\(s\) \(first at index 1"):
        quantize([1.0, np.nan])
    with pytest.raises(ValueError, match=r"non-finite values"):
        quantize([1.0, -np.inf], scale=1.0)


@pytest.mark.parametrize("scale", [0.0, -1.0, np.inf, np.nan])
def test_quantize_rejects_bad_scale(scale):
    with pytest.raises(ValueError, match=r"scale = .* is not allowed: it must be a finite "
                                         r"number > 0"):
        quantize([1.0], scale=scale)


def test_quantize_rejects_bad_scale_type_and_width():
    with pytest.raises(ValueError, match=r"scale must be a real number > 0 \(or None\)"):
        quantize([1.0], scale="1")
    with pytest.raises(ValueError, match=r"elem_bits = 1 is out of range: it must be in "
                                         r"\[2, 16\]"):
        quantize([1.0], elem_bits=1)
    with pytest.raises(ValueError, match=r"elem_bits = 17 is out of range"):
        quantize([1.0], elem_bits=17)


# ---- theta_q -------------------------------------------------------------------------------------


def test_theta_q_values():
    assert theta_q(0.9) == 230                      # 230.4
    assert theta_q(0.85) == 218 and theta_q(0.95) == 243
    assert theta_q(0) == 0 and theta_q(0.0) == 0
    assert theta_q(255 / 256) == 255
    assert theta_q(1 / 512) == 1 and theta_q(3 / 512) == 2   # halves go up (away from zero)
    assert theta_q(0.25, theta_bits=1) == 1                  # 0.5 -> 1
    assert theta_q(0.9, theta_bits=16) == 58982              # 58982.4
    assert theta_q(np.float32(0.5)) == 128
    assert isinstance(theta_q(0.9), int)


def test_theta_q_rounds_to_one():
    with pytest.raises(ValueError, match=r"theta = 0\.999 rounds to 1\.0 at theta_bits = 8"):
        theta_q(0.999)
    with pytest.raises(ValueError, match=r"rounds to 1\.0 at theta_bits = 1"):
        theta_q(0.75, theta_bits=1)
    assert theta_q(0.998) == 255                             # 255.488


@pytest.mark.parametrize("theta", [1.0, 1.5, -0.1, -1e-300, float("nan"), float("inf")])
def test_theta_q_rejects_out_of_range(theta):
    with pytest.raises(ValueError, match=r"theta = .* is out of range: it must be in \[0, 1\)"):
        theta_q(theta)


def test_theta_q_rejects_bad_types():
    with pytest.raises(ValueError, match=r"theta must be a real number in \[0, 1\)"):
        theta_q("0.9")
    with pytest.raises(ValueError, match=r"theta_bits = 0 is out of range"):
        theta_q(0.5, theta_bits=0)
    with pytest.raises(ValueError, match=r"theta_bits must be an integer"):
        theta_q(0.5, theta_bits=8.0)


# ---- depth_thresholds ----------------------------------------------------------------------------


def test_depth_thresholds_endpoints_and_shape():
    for layers in (2, 3, 28, 32, 256):
        t = depth_thresholds(layers)
        assert t.shape == (layers,) and t.dtype == np.uint16
        assert t[0] == theta_q(0.95) == 243 and t[-1] == theta_q(0.85) == 218
        assert np.all(np.diff(t.astype(int)) <= 0)   # stricter in shallow layers
    assert depth_thresholds(1).tolist() == [243]
    assert depth_thresholds(5).tolist() == [243, 237, 230, 224, 218]  # 243.2 .. 217.6 in steps
    assert depth_thresholds(4, 0.9, 0.9).tolist() == [230] * 4          # the paper's constant
    assert depth_thresholds(3, 0.5, 0.75, theta_bits=4).tolist() == [8, 10, 12]  # may rise


def test_depth_thresholds_matches_float_schedule():
    """Away from exact halves the exact schedule equals the obvious float one."""
    t = depth_thresholds(32, 0.95, 0.85, theta_bits=12)
    f = 0.95 + (0.85 - 0.95) * np.arange(32) / 31
    assert np.array_equal(t, np.floor(f * 4096 + 0.5).astype(int))


def test_depth_thresholds_errors():
    with pytest.raises(ValueError, match=r"layers = 0 is out of range: it must be >= 1"):
        depth_thresholds(0)
    with pytest.raises(ValueError, match=r"layers must be an integer"):
        depth_thresholds(2.0)
    with pytest.raises(ValueError, match=r"shallow = 1\.0 is out of range"):
        depth_thresholds(4, shallow=1.0)
    with pytest.raises(ValueError, match=r"deep = -0\.5 is out of range"):
        depth_thresholds(4, deep=-0.5)
    with pytest.raises(ValueError, match=r"shallow = 0\.99 rounds to 1\.0 at theta_bits = 4"):
        depth_thresholds(4, shallow=0.99, theta_bits=4)
