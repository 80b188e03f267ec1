"""Exact integer cosine similarity (spec 4.1), the model of
:class:`rtl.sic.similarity_comparator.SimilarityComparator`.

For sub-vectors x and y of V signed integers, with dot = sum(x*y), nx = sum(x*x), ny = sum(y*y)::

    similar(x, y)  <=>  nx > 0 and ny > 0 and dot > 0 and dot**2 * 2**(2F) > theta_q**2 * nx * ny

which is cos(x, y) > theta_q / 2**F, exactly, with no division or square root. Of two similar
candidates y1, y2 of one x, y1 is better exactly when dot1**2 * ny2 > dot2**2 * ny1.

All arithmetic is on Python integers (``dtype=object``) where int64 could overflow, so the model is
exact for any ``elem_bits``, ``dim`` and ``theta_bits`` that :class:`rtl.params.FocusParams` allows.
"""

from numbers import Integral

import numpy as np

__all__ = ["similar", "dot", "sqnorm", "better", "check_vectors", "check_pair", "check_theta_q",
           "check_theta_bits", "signed_bits", "ELEM_BITS_MAX", "THETA_BITS_MAX"]

#: The widest signed element (:class:`rtl.params.FocusParams` allows elem_bits 2..16): every dot
#: product and squared norm of such elements is exact in int64.
ELEM_BITS_MAX = 16
#: The most fraction bits of the threshold (FocusParams.theta_bits is 1..16).
THETA_BITS_MAX = 16


def signed_bits(a):
    """Bits of the narrowest signed (two's complement) type that holds every element of ``a``, 0
    for an empty array: ``bit_length(v) + 1`` for v >= 0 and ``bit_length(~v) + 1`` for v < 0,
    so -2**(b-1) .. 2**(b-1) - 1 need b bits."""
    a = np.asarray(a)
    if not a.size:
        return 0
    return max((v if v >= 0 else ~v).bit_length() + 1 for v in (int(a.min()), int(a.max())))


def check_vectors(x, name="x", elem_bits=ELEM_BITS_MAX):
    """Return ``x`` as an int64 array; raise ``ValueError`` for non-integer data, a 0-d array,
    or elements outside the signed ``elem_bits``-bit range (checked on the input's own dtype,
    before the cast, so that no value wraps)."""
    a = np.asarray(x)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array (signed sub-vector elements), "
                         f"not dtype {a.dtype}")
    if a.ndim < 1:
        raise ValueError(f"{name} must have at least one dimension (the V elements), "
                         f"not shape {a.shape}")
    if a.size:
        low, high = -(1 << (elem_bits - 1)), (1 << (elem_bits - 1)) - 1
        least, most = int(a.min()), int(a.max())
        if least < low or most > high:
            raise ValueError(f"{name} has elements outside the signed {elem_bits}-bit range "
                             f"[{low}, {high}]: min {least}, max {most}")
    return a.astype(np.int64)


def check_pair(x, y):
    """``(x, y, leading shape)`` for :func:`similar`: both checked by :func:`check_vectors`, the
    same V, and leading shapes that broadcast; ``ValueError`` naming the problem otherwise."""
    x = check_vectors(x, "x")
    y = check_vectors(y, "y")
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"x and y must have the same V (last axis): {x.shape[-1]} != "
                         f"{y.shape[-1]}")
    try:
        shape = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    except ValueError:
        raise ValueError(f"x and y do not broadcast: leading shapes {x.shape[:-1]} and "
                         f"{y.shape[:-1]} (the dimensions before V must be equal or 1)") from None
    return x, y, shape


def check_theta_bits(theta_bits):
    """Return ``theta_bits`` (F) as an int in 1..16; ``ValueError`` naming it otherwise."""
    if isinstance(theta_bits, bool) or not isinstance(theta_bits, Integral):
        raise ValueError(f"theta_bits must be an integer, not {theta_bits!r}")
    if not 1 <= theta_bits <= THETA_BITS_MAX:
        raise ValueError(f"theta_bits = {theta_bits} is out of range: it must be in "
                         f"[1, {THETA_BITS_MAX}]")
    return int(theta_bits)


def check_theta_q(theta_q, theta_bits):
    if isinstance(theta_q, bool) or not isinstance(theta_q, (int, np.integer)):
        raise ValueError(f"theta_q must be an integer, not {theta_q!r}")
    if not 0 <= int(theta_q) < (1 << theta_bits):
        raise ValueError(f"theta_q = {theta_q} is out of range: it must be in "
                         f"[0, {(1 << theta_bits) - 1}] for theta_bits = {theta_bits}")
    return int(theta_q)


def dot(x, y):
    """Exact sum(x*y) over the last axis, as int64 (exact for |elements| <= 2**15, V <= 2**32)."""
    return np.einsum("...i,...i->...", np.asarray(x, np.int64), np.asarray(y, np.int64))


def sqnorm(x):
    """Exact sum(x*x) over the last axis, as int64."""
    return dot(x, x)


def _as_object(a):
    return np.asarray(a, dtype=np.int64).astype(object)


def similar(x, y, theta_q, theta_bits=8):
    """cos(x, y) > theta_q / 2**theta_bits, exactly, over the last axis (V); broadcasts leading
    dims.

    Returns a bool array of the broadcast leading shape (a 0-d array for single vectors). Raises
    ``ValueError`` for non-integer vectors, elements outside the signed 16-bit range
    (:data:`ELEM_BITS_MAX`), mismatched V, leading shapes that do not broadcast, theta_bits not
    an integer in 1..16, or theta_q outside [0, 2**F).
    """
    x, y, _ = check_pair(x, y)
    theta_bits = check_theta_bits(theta_bits)
    tq = check_theta_q(theta_q, theta_bits)
    d, nx, ny = dot(x, y), sqnorm(x), sqnorm(y)
    d, nx, ny = np.broadcast_arrays(d, nx, ny)
    lhs = _as_object(d) ** 2 * (1 << (2 * theta_bits))
    rhs = _as_object(nx) * _as_object(ny) * (tq * tq)
    out = (nx > 0) & (ny > 0) & (d > 0) & np.asarray(lhs > rhs, dtype=bool)
    return np.asarray(out, dtype=bool)


def better(dot1, ny1, dot2, ny2):
    """True where candidate 1 (dot1, ny1) has a strictly larger cosine than candidate 2.

    Both candidates must already be similar (dot > 0, ny > 0): the test is
    dot1**2 * ny2 > dot2**2 * ny1, exact.
    """
    d1, n1, d2, n2 = (_as_object(v) for v in (dot1, ny1, dot2, ny2))
    return np.asarray(d1 ** 2 * n2 > d2 ** 2 * n1, dtype=bool)
