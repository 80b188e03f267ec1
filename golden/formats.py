"""Number formats of the Focus unit (spec section 2): scores, sub-vector elements, thresholds.

- **Scores** are unsigned ``score_bits``-bit integers. For non-negative IEEE half-precision values,
  the bit pattern read as an unsigned integer has the same order as the value, so::

      scores_from_fp16(x) = bits(fp16(x))  as uint16,   x >= 0

  and softmax outputs in fp16 feed the unit unchanged.
- **Sub-vector elements** are signed ``elem_bits``-bit integers, from symmetric per-tensor
  quantization::

      q = clip(round_half_away(x / scale), -(2**(b-1) - 1), 2**(b-1) - 1)

- **The threshold** is theta = theta_q / 2**F with 0 <= theta_q < 2**F::

      theta_q = round_half_away(theta * 2**F)

All rounding here is exact: ``theta_q`` works on the exact binary value of ``theta`` (a
:class:`fractions.Fraction`), and ``quantize`` rounds the float quotient ``x / scale`` without
adding 0.5 in floating point.
"""

import math
from fractions import Fraction
from numbers import Integral, Real

import numpy as np

__all__ = ["scores_from_fp16", "quantize", "default_scale", "theta_q", "depth_thresholds"]

FP16_MAX = 65504.0


def _where(a, bad):
    """'n values (first at index i: v)' for the True entries of ``bad``."""
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    index = first[0] if len(first) == 1 else first
    return f"{int(bad.sum())} value(s) (first at index {index}: {a[first].item()!r})"


def _check_real_array(x, name):
    a = np.asarray(x)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.floating)
                               or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must be a real (float or integer) array, not dtype {a.dtype}")
    return a


def _check_int(value, name, low, high=None):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} = {value} is out of range: it must be {allowed}")
    return value


def scores_from_fp16(x):
    """The fp16 bit patterns of non-negative values, as order-preserving unsigned scores.

    ``s = bits(fp16(x))`` read as ``uint16``. For x, y >= 0: x < y  <=>  s(x) < s(y), and
    x == y  <=>  s(x) == s(y) (``-0.0`` is mapped to the pattern of ``+0.0``, 0).

    Parameters
    ----------
    x : array_like of float or int
        Any shape. Values that are not already ``float16`` are rounded to fp16 (round to nearest,
        ties to even, as ``numpy.astype`` does).

    Returns
    -------
    numpy.ndarray of uint16, the shape of ``x``.

    Raises
    ------
    ValueError
        For a non-real dtype, for NaN, infinite or negative values, and for values that overflow
        fp16 (round to infinity: |x| >= 65520). The message says how many and where the first is.
    """
    a = _check_real_array(x, "x")
    if np.issubdtype(a.dtype, np.floating):
        nan = np.isnan(a)
        if nan.any():
            raise ValueError(f"x has NaN: {_where(a, nan)}; scores must be finite and >= 0")
        inf = np.isinf(a)
        if inf.any():
            raise ValueError(f"x has infinite values: {_where(a, inf)}; scores must be finite "
                             f"and >= 0")
    neg = a < 0
    if neg.any():
        raise ValueError(f"x has negative values: {_where(a, neg)}; scores must be >= 0")
    with np.errstate(over="ignore"):
        h = a.astype(np.float16)
    over = np.isinf(h)
    if over.any():
        raise ValueError(f"x has values that overflow fp16 (largest finite {FP16_MAX:g}): "
                         f"{_where(a, over)}")
    bits = np.ascontiguousarray(h).view(np.uint16).copy()
    bits[bits == 0x8000] = 0  # -0.0 (the only pattern with the sign bit left) -> +0
    return bits


def _round_half_away(a):
    """round(a) with halves away from zero, exactly (no a + 0.5 in floating point)."""
    m = np.abs(a)
    r = np.floor(m)
    r = r + (m - r >= 0.5)  # m - floor(m) is exact in binary floating point
    return np.copysign(r, a)


def default_scale(x, elem_bits=8):
    """The default quantization scale: max|x| / (2**(elem_bits-1) - 1), or 1.0 when x is all zero.

    Raises ``ValueError`` for non-finite values and ``elem_bits`` outside 2..16.
    """
    a = _check_real_array(x, "x").astype(np.float64)
    elem_bits = _check_int(elem_bits, "elem_bits", 2, 16)
    if not np.isfinite(a).all():
        raise ValueError(f"x has non-finite values: {_where(a, ~np.isfinite(a))}")
    peak = float(np.abs(a).max()) if a.size else 0.0
    return peak / ((1 << (elem_bits - 1)) - 1) if peak > 0 else 1.0


def quantize(x, scale=None, elem_bits=8):
    """Symmetric per-tensor quantization of a float array to signed ``elem_bits``-bit integers.

    ``q = clip(round_half_away(x / scale), -Q, Q)`` with ``Q = 2**(elem_bits-1) - 1``.

    The range is symmetric: -Q .. Q (-127 .. 127 for 8 bits). The most negative two's complement
    code, -2**(elem_bits-1), is never produced, so negation never overflows and a value and its
    negation quantize to negated codes. Values beyond the range saturate to -Q or Q.

    Parameters
    ----------
    x : array_like of float or int
        Any shape; every value must be finite.
    scale : float, optional
        A finite value > 0. Default: ``max|x| / Q``, or 1.0 when ``x`` is all zeros (or empty);
        see :func:`default_scale`. With the default no value saturates.
    elem_bits : int
        2 to 16.

    Returns
    -------
    numpy.ndarray of int8 (elem_bits <= 8) or int16 (elem_bits <= 16), the shape of ``x``.

    Raises
    ------
    ValueError
        For non-finite values, a non-real dtype, a scale that is not a finite number > 0, or
        ``elem_bits`` outside 2..16.
    """
    a = _check_real_array(x, "x").astype(np.float64)
    elem_bits = _check_int(elem_bits, "elem_bits", 2, 16)
    if not np.isfinite(a).all():
        raise ValueError(f"x has non-finite values: {_where(a, ~np.isfinite(a))}; quantize needs "
                         f"finite input")
    if scale is None:
        scale = default_scale(a, elem_bits)
    elif isinstance(scale, bool) or not isinstance(scale, Real):
        raise ValueError(f"scale must be a real number > 0 (or None), not {scale!r}")
    scale = float(scale)
    if not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale = {scale!r} is not allowed: it must be a finite number > 0")
    qmax = (1 << (elem_bits - 1)) - 1
    with np.errstate(over="ignore"):  # x / tiny scale may overflow to inf: it saturates
        ratio = np.clip(a / scale, -qmax - 1, qmax + 1)  # bound first, so rounding stays finite
    q = np.clip(_round_half_away(ratio), -qmax, qmax)
    return q.astype(np.int8 if elem_bits <= 8 else np.int16)


def _exact(value):
    """The exact rational value of a real number (a float's binary value, not its decimal)."""
    try:
        return Fraction(value)
    except TypeError:  # numpy float32/float16 scalars: float() is exact for them
        return Fraction(float(value))


def _theta_q_exact(theta, theta_bits, name="theta"):
    if isinstance(theta, bool) or not isinstance(theta, Real):
        raise ValueError(f"{name} must be a real number in [0, 1), not {theta!r}")
    if not math.isfinite(float(theta)) or not 0 <= theta < 1:
        raise ValueError(f"{name} = {theta!r} is out of range: it must be in [0, 1)")
    scaled = _exact(theta) * (1 << theta_bits)
    q = math.floor(scaled + Fraction(1, 2))        # half away from zero (theta >= 0)
    if q == 1 << theta_bits:
        raise ValueError(f"{name} = {theta!r} rounds to 1.0 at theta_bits = {theta_bits} "
                         f"(theta_q would be 2**{theta_bits} = {q}); the largest threshold is "
                         f"{(1 << theta_bits) - 1}/{1 << theta_bits}")
    return q


def theta_q(theta, theta_bits=8):
    """The fixed-point threshold: ``theta_q = round_half_away(theta * 2**F)``, F = theta_bits.

    The comparator tests cos(x, y) > theta_q / 2**F. The rounding is exact (on the binary value of
    ``theta``): ``theta_q(0.9) == 230`` at F = 8.

    Returns
    -------
    int, in [0, 2**F).

    Raises
    ------
    ValueError
        When ``theta`` is not a real number in [0, 1), when it rounds to 2**F (1.0) at this F, or
        when ``theta_bits`` is not in 1..16.
    """
    theta_bits = _check_int(theta_bits, "theta_bits", 1, 16)
    return _theta_q_exact(theta, theta_bits)


def depth_thresholds(layers, shallow=0.95, deep=0.85, theta_bits=8):
    """A linear per-layer threshold table (spec 4.3): strict in shallow layers, loose in deep ones.

    For layer l = 0 .. layers-1::

        theta_l = shallow + (deep - shallow) * l / (layers - 1)      (theta_0 = shallow)
        table[l] = round_half_away(theta_l * 2**F)

    computed exactly in rational arithmetic, so ``table[0] == theta_q(shallow)`` and
    ``table[-1] == theta_q(deep)``. ``layers = 1`` gives ``[theta_q(shallow)]``;
    ``shallow == deep`` gives the constant table of the paper. ``deep > shallow`` is allowed (the
    schedule then rises).

    Returns
    -------
    numpy.ndarray of uint16, shape [layers].

    Raises
    ------
    ValueError
        When ``layers`` is not an integer >= 1, or ``shallow``/``deep`` are not valid thresholds
        for ``theta_bits`` (see :func:`theta_q`).
    """
    layers = _check_int(layers, "layers", 1)
    theta_bits = _check_int(theta_bits, "theta_bits", 1, 16)
    _theta_q_exact(shallow, theta_bits, "shallow")
    _theta_q_exact(deep, theta_bits, "deep")
    lo, hi = _exact(shallow), _exact(deep)
    one = 1 << theta_bits
    table = []
    for layer in range(layers):
        t = lo if layers == 1 else lo + (hi - lo) * Fraction(layer, layers - 1)
        table.append(math.floor(t * one + Fraction(1, 2)))
    return np.array(table, dtype=np.uint16)
