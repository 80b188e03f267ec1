"""The SEC offset code (spec 3.3): variable-length gaps between coded tokens.

The code stores one of two sets of token indices: the kept tokens (``coded = 0``) or the
dropped ones (``coded = 1``, shorter when most tokens are kept). Its indices
j_0 < j_1 < ... < j_(n-1) become gaps::

    g_0 = j_0,    g_i = j_i - j_(i-1) - 1        (tokens of the other set before each one)

and the bit string, MSB first, is::

    e (3 bits) | s (1 bit) | f (1 bit) | n (bit_length(M) bits) | C(g_0) | ... | C(g_(n-1))

where s is the coded set (0 kept, 1 dropped), f the family (0 Exp-Golomb, 1 Rice), e the order,
n the number of coded indices, and C the family's code of order e:

- Exp-Golomb: with v = g + 2**e and L = bit_length(v), L - 1 - e zeros followed by v in L bits;
  ``2*L - 1 - e`` bits. For e = 0 this is H.264's ue(v).
- Rice (Golomb with m = 2**e): q = g >> e zeros, a one, then the e low bits of g;
  ``q + 1 + e`` bits. A Rice code is valid only when q < :func:`rice_quotient_limit` (M) =
  2 * bit_length(M): a longer unary part is malformed, and a mask with such a gap cannot use that
  order.

The string is packed MSB first into ``word_bits``-bit words, the last one zero-padded; ``nbits``
is the length before padding.

The scheme (s, f, e) is fixed or adaptive: of the 32 schemes, the eligible one with the fewest
bits for this mask; ties go to the lowest index ``16*s + 8*f + e`` (kept before dropped,
Exp-Golomb before Rice, then the smaller order). The fixed schemes of the earlier format (kept
set, Exp-Golomb, order e) are ``order=e`` with the default ``coded`` and ``family``.
"""

from numbers import Integral
from typing import NamedTuple

import numpy as np

from .results import OffsetCode


class Scheme(NamedTuple):
    """An offset code's scheme: the coded set (``KEPT``/``DROPPED``), the family
    (``EXPGOLOMB``/``RICE``) and the order 0..7. Its index is ``16*coded + 8*family + order``."""

    coded: int
    family: int
    order: int

    @property
    def index(self):
        return 16 * self.coded + 8 * self.family + self.order


#: The 32 schemes in index order (the adaptive choice's tie order).
SCHEMES = tuple(Scheme(s, f, e) for s in (0, 1) for f in (0, 1) for e in range(8))

#: The scheme families an encoder may be built with (``schemes=``, the RTL's
#: ``FocusParams.offset_schemes``): ``"all"`` the 32 schemes, ``"kept-exp-golomb"`` the kept set
#: in Exp-Golomb, orders 0..7 (indices 0..7: the code before the dropped set and Rice were added).
#: The header is the same either way (s = 0 and f = 0 under ``"kept-exp-golomb"``).
SCHEME_SETS = {"all": SCHEMES, "kept-exp-golomb": SCHEMES[:8]}

__all__ = [
    "ORDER_BITS", "SCHEME_BITS", "MAX_ORDER", "MAX_LEADING_ZEROS", "MAX_TOKENS",
    "KEPT", "DROPPED", "EXPGOLOMB", "RICE", "SCHEMES", "SCHEME_SETS", "Scheme",
    "encode_offsets", "decode_offsets",
    "gaps_from_mask", "header_bits", "expgolomb_bits", "rice_bits", "rice_quotient_limit",
    "code_bits", "all_code_bits", "scheme_bits", "adaptive_order", "adaptive_scheme",
    "check_mask", "check_word_bits", "check_order", "check_scheme", "check_schemes", "check_code",
]

ORDER_BITS = 3          # width of the order field in the header
SCHEME_BITS = 2         # the set bit s and the family bit f, after the order
KEPT, DROPPED = 0, 1    # the coded set (the header's s)
EXPGOLOMB, RICE = 0, 1  # the family (the header's f)
MAX_ORDER = 7           # orders 0 .. 7
MAX_LEADING_ZEROS = 31  # the decoder rejects a code with more leading zeros
MAX_TOKENS = 1 << 32    # a job's M: indices are 32-bit (the RTL's SIC positions, position_bits)


# ---- validation ----------------------------------------------------------------------------------

def check_mask(mask, name="mask"):
    """Return ``mask`` as a 1-D bool array of length M >= 1.

    Accepts a bool array or an integer array of 0s and 1s; anything else raises ``ValueError``.
    """
    a = np.asarray(mask)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one flag per token), not shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} is empty: a job has M >= 1 tokens")
    if a.dtype == bool:
        return a
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must be a bool array, not dtype {a.dtype}")
    bad = (a != 0) & (a != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must hold only 0 and 1 (or be bool): {int(bad.sum())} other "
                         f"value(s), first at index {i}: {a[i].item()}")
    return a.astype(bool)


def check_word_bits(word_bits):
    if isinstance(word_bits, bool) or not isinstance(word_bits, Integral):
        raise ValueError(f"word_bits must be an integer in [8, 64], not {word_bits!r}")
    if not 8 <= word_bits <= 64:
        raise ValueError(f"word_bits = {word_bits} is out of range: it must be in [8, 64]")
    return int(word_bits)


def check_order(order, allow_none=True):
    """Return ``order`` as an int 0..7 (or None for adaptive when ``allow_none``)."""
    if order is None and allow_none:
        return None
    if isinstance(order, bool) or not isinstance(order, Integral) \
            or not 0 <= order <= MAX_ORDER:
        what = "None (adaptive) or " if allow_none else ""
        raise ValueError(f"order must be {what}an integer in [0, {MAX_ORDER}], not {order!r}")
    return int(order)


_SETS = {"kept": KEPT, "dropped": DROPPED}
_FAMILIES = {"expgolomb": EXPGOLOMB, "rice": RICE}


def check_schemes(schemes):
    """``schemes`` (a key of :data:`SCHEME_SETS`) checked: ``ValueError`` naming it otherwise."""
    if not isinstance(schemes, str) or schemes not in SCHEME_SETS:
        allowed = " or ".join(repr(k) for k in SCHEME_SETS)
        raise ValueError(f"schemes must be {allowed}, not {schemes!r}")
    return schemes


def check_scheme(order=None, coded=None, family=None, schemes="all"):
    """The scheme a caller asks for: None (adaptive: ``order``, ``coded`` and ``family`` all
    None) or a :class:`Scheme`. ``coded`` is ``"kept"`` (default) or ``"dropped"`` (or 0/1),
    ``family`` ``"expgolomb"`` (default) or ``"rice"`` (or 0/1); both need a fixed ``order``.
    A fixed scheme outside :data:`SCHEME_SETS` [``schemes``] raises ``ValueError``."""
    schemes = check_schemes(schemes)
    scheme = _check_scheme(order, coded, family)
    if scheme is not None and scheme not in SCHEME_SETS[schemes]:
        names = ("kept" if scheme.coded == KEPT else "dropped",
                 "expgolomb" if scheme.family == EXPGOLOMB else "rice")
        raise ValueError(f"the scheme coded = {names[0]!r}, family = {names[1]!r} is not "
                         f"available with schemes = {schemes!r}: it has only the kept set in "
                         f"Exp-Golomb")
    return scheme


def _check_scheme(order, coded, family):
    order = check_order(order)
    if order is None:
        if coded is not None or family is not None:
            raise ValueError(f"coded = {coded!r} and family = {family!r} need a fixed order "
                             f"(order = None is the adaptive scheme, which picks them)")
        return None

    def pick(value, names, what):
        if value is None:
            return 0
        if isinstance(value, str) and value in names:
            return names[value]
        if not isinstance(value, bool) and isinstance(value, Integral) and value in (0, 1):
            return int(value)
        raise ValueError(f"{what} must be one of {sorted(names)} (or 0/1), not {value!r}")

    return Scheme(pick(coded, _SETS, "coded"), pick(family, _FAMILIES, "family"), order)


def _check_tokens(tokens, name="tokens"):
    """``tokens`` (a job's M) as an int in 1..2**32 (:data:`MAX_TOKENS`), checked before anything
    of that size is allocated."""
    if isinstance(tokens, bool) or not isinstance(tokens, Integral):
        raise ValueError(f"{name} (the job's M) must be an integer >= 1, not {tokens!r}")
    if not 1 <= tokens <= MAX_TOKENS:
        raise ValueError(f"{name} (the job's M) = {tokens} is out of range: it must be in "
                         f"[1, 2**32]")
    return int(tokens)


# ---- sizes ---------------------------------------------------------------------------------------

def header_bits(M):
    """Bits of the header for a job of M tokens: ``5 + bit_length(M)`` (order, set, family, then
    the count n)."""
    return ORDER_BITS + SCHEME_BITS + _check_tokens(M, "M").bit_length()


def rice_quotient_limit(M):
    """A Rice code's quotient (its unary part, in zeros) must be below ``2 * bit_length(M)``."""
    return 2 * _check_tokens(M, "M").bit_length()


def gaps_from_mask(mask):
    """The gaps of a keep mask: ``g_0 = j_0``, ``g_i = j_i - j_(i-1) - 1``. int64, shape [n]."""
    idx = np.flatnonzero(check_mask(mask))
    return (np.diff(idx, prepend=-1) - 1).astype(np.int64)


def _bit_length(v):
    """bit_length of each positive int64 v < 2**53, vectorised (frexp is exact there)."""
    return np.frexp(v.astype(np.float64))[1].astype(np.int64)


def _check_gaps(gaps):
    g = np.asarray(gaps)
    if g.dtype == bool or not np.issubdtype(g.dtype, np.integer):
        raise ValueError(f"gaps must be an integer array, not dtype {g.dtype}")
    g = g.astype(np.int64)
    if g.size and g.min() < 0:
        raise ValueError(f"gaps must be >= 0: found {int(g.min())}")
    if g.size and g.max() >= 1 << 52:
        raise ValueError(f"gap {int(g.max())} is too large (the largest is 2**52 - 1)")
    return g


def expgolomb_bits(g, e):
    """Length of the order-e Exp-Golomb code of each gap: ``2*bit_length(g + 2**e) - 1 - e``.

    Vectorised over ``g`` (any shape of non-negative integers); returns int64 of that shape.
    """
    e = check_order(e, allow_none=False)
    g = _check_gaps(g)
    return 2 * _bit_length(g + (1 << e)) - 1 - e


def rice_bits(g, e, limit=None):
    """Length of the order-e Rice code of each gap: ``(g >> e) + 1 + e``. With ``limit``, a gap
    whose quotient g >> e is ``limit`` or more has no code: its length is -1."""
    e = check_order(e, allow_none=False)
    g = _check_gaps(g)
    out = (g >> e) + 1 + e
    if limit is not None:
        out = np.where((g >> e) >= limit, -1, out)
    return out


def _code_lengths(g, scheme_family, e, limit):
    return (rice_bits(g, e, limit) if scheme_family == RICE else expgolomb_bits(g, e))


def _as_gaps(mask_or_gaps, tokens=None):
    """(gaps, M) from a bool mask (M = its length) or from gaps (M = tokens, may be None)."""
    a = np.asarray(mask_or_gaps)
    if a.dtype == bool:
        mask = check_mask(a)
        if tokens is not None and _check_tokens(tokens) != mask.size:
            raise ValueError(f"tokens = {tokens} does not match the mask length {mask.size}")
        return gaps_from_mask(mask), mask.size
    if a.ndim != 1:
        raise ValueError(f"gaps must be 1-D, not shape {a.shape}")
    gaps = _check_gaps(a)
    if tokens is not None:
        tokens = _check_tokens(tokens)
        need = int(gaps.sum()) + gaps.size
        if need > tokens:
            raise ValueError(f"the gaps need {need} tokens but tokens = {tokens}")
    return gaps, tokens


def _as_mask(mask_or_gaps, tokens=None):
    """The mask from a bool mask, or from gaps and ``tokens`` (M; required)."""
    gaps, M = _as_gaps(mask_or_gaps, tokens)
    if M is None:
        raise ValueError("code_bits of gaps needs tokens (the job's M): the header's count field "
                         "is bit_length(M) bits wide")
    mask = np.zeros(M, dtype=bool)
    mask[np.cumsum(gaps + 1) - 1] = True
    return mask


def scheme_bits(mask_or_gaps, tokens=None):
    """``nbits`` of the offset code for every scheme, an int64 array of shape [2, 2, 8] indexed
    (coded, family, order); -1 where the scheme cannot code this mask (a Rice quotient at or
    above :func:`rice_quotient_limit`).

    A bool ``mask_or_gaps`` is a mask (M = its length); an integer one is the kept gaps, and
    then ``tokens`` (M) is required.
    """
    mask = _as_mask(mask_or_gaps, tokens)
    M = mask.size
    limit = rice_quotient_limit(M)
    out = np.zeros((2, 2, MAX_ORDER + 1), dtype=np.int64)
    for s, coded in ((KEPT, mask), (DROPPED, ~mask)):
        gaps = gaps_from_mask(coded)
        for f in (EXPGOLOMB, RICE):
            for e in range(MAX_ORDER + 1):
                lengths = _code_lengths(gaps, f, e, limit)
                out[s, f, e] = -1 if (lengths < 0).any() else header_bits(M) + int(lengths.sum())
    return out


def all_code_bits(mask_or_gaps, tokens=None):
    """``nbits`` of the kept-set Exp-Golomb code for every order e = 0..7 (shape [8]).

    ``nbits(e) = header_bits(M) + sum_i expgolomb_bits(g_i, e)`` over the kept gaps. A bool
    ``mask_or_gaps`` is a mask (M = its length); an integer one is the gaps, and then ``tokens``
    (M) is required because the header's count field is bit_length(M) bits wide.
    """
    gaps, M = _as_gaps(mask_or_gaps, tokens)
    if M is None:
        raise ValueError("code_bits of gaps needs tokens (the job's M): the header's count field "
                         "is bit_length(M) bits wide")
    body = [int(expgolomb_bits(gaps, e).sum()) for e in range(MAX_ORDER + 1)]
    return header_bits(M) + np.array(body, dtype=np.int64)


def adaptive_scheme(mask_or_gaps, tokens=None, schemes="all"):
    """The adaptive :class:`Scheme`: the eligible scheme of :data:`SCHEME_SETS` [``schemes``]
    with the fewest bits, ties to the lowest index ``16*coded + 8*family + order``. The kept-set
    Exp-Golomb schemes are always eligible."""
    allowed = {c.index for c in SCHEME_SETS[check_schemes(schemes)]}
    flat = scheme_bits(mask_or_gaps, tokens).reshape(-1)
    best = min((int(b), k) for k, b in enumerate(flat) if b >= 0 and k in allowed)
    return SCHEMES[best[1]]


def code_bits(mask_or_gaps, order, tokens=None, *, coded=None, family=None, schemes="all"):
    """``nbits``, the length of the offset code before padding, for one scheme.

    Parameters
    ----------
    mask_or_gaps : array_like
        A bool mask (M = its length) or integer kept gaps (then ``tokens`` = M is required).
    order : int or None
        0..7, or None for the adaptive scheme (the fewest bits over the ``schemes``).
    tokens : int, optional
        M, when gaps are given.
    coded, family, schemes : as :func:`encode_offsets`.

    Raises ``ValueError`` for a Rice scheme the mask cannot use.
    """
    scheme = check_scheme(order, coded, family, schemes)
    sizes = scheme_bits(mask_or_gaps, tokens)
    if scheme is None:
        return int(sizes.reshape(-1)[adaptive_scheme(mask_or_gaps, tokens, schemes).index])
    size = int(sizes[scheme])
    if size < 0:
        raise ValueError(_ineligible(scheme, mask_or_gaps, tokens))
    return size


def _ineligible(scheme, mask_or_gaps, tokens=None):
    mask = _as_mask(mask_or_gaps, tokens)
    coded = mask if scheme.coded == KEPT else ~mask
    gaps = gaps_from_mask(coded)
    limit = rice_quotient_limit(mask.size)
    i = int(np.flatnonzero((gaps >> scheme.order) >= limit)[0])
    what = "kept" if scheme.coded == KEPT else "dropped"
    return (f"the Rice code of order {scheme.order} cannot code this mask: {what} gap {i} "
            f"({int(gaps[i])}) has a quotient {int(gaps[i]) >> scheme.order} >= "
            f"{limit} = 2 * bit_length(M)")


def adaptive_order(mask_or_gaps):
    """The best kept-set Exp-Golomb order: ``argmin_e nbits(e)`` over e = 0..7, ties to the
    smaller e (the adaptive choice before the set and the family were added).

    The header has the same length for every e, so gaps alone suffice.
    """
    gaps, _ = _as_gaps(mask_or_gaps)
    body = [int(expgolomb_bits(gaps, e).sum()) for e in range(MAX_ORDER + 1)]
    return int(np.argmin(body))  # argmin returns the first (smallest e) of equal minima


# ---- encoder -------------------------------------------------------------------------------------

def _pack(values, widths, word_bits):
    """Pack fields (value in width bits each, MSB first) into words; return (words, nbits).

    Each value must be < 2**width and < 2**53. Only the value's own bit_length bits are placed:
    the leading bits of a field are zero.
    """
    values = np.asarray(values, dtype=np.int64)
    widths = np.asarray(widths, dtype=np.int64)
    ends = np.cumsum(widths)
    nbits = int(ends[-1])
    nwords = -(-nbits // word_bits)
    bits = np.zeros(nwords * word_bits, dtype=np.uint8)
    nz = values > 0
    v, lengths, ends = values[nz], _bit_length(values[nz]), ends[nz]
    if v.size:
        # bit t (0 = MSB) of value v, which has L bits, sits at position end - L + t.
        field = np.repeat(np.arange(v.size), lengths)
        first = np.cumsum(lengths) - lengths
        t = np.arange(field.size) - first[field]
        shift = lengths[field] - 1 - t
        pos = ends[field] - lengths[field] + t
        bits[pos] = (v[field] >> shift) & 1
    weights = np.left_shift(np.uint64(1), np.arange(word_bits - 1, -1, -1, dtype=np.uint64))
    rows = bits.reshape(nwords, word_bits).astype(np.uint64) * weights
    return np.bitwise_or.reduce(rows, axis=1), nbits


def encode_offsets(mask, order=None, word_bits=32, *, coded=None, family=None, schemes="all"):
    """Encode a keep mask as the offset code of spec 3.3.

    ``e (3) | s (1) | f (1) | n (bit_length(M)) | C(g_0) ... C(g_(n-1))``, MSB first, packed
    into ``word_bits``-bit words, the last one zero-padded; the g are the gaps of the coded set
    (kept or dropped tokens) and C the family's order-e code (module doc).

    Parameters
    ----------
    mask : array_like of bool, shape [M]
        The keep mask of one job, M >= 1 (an integer array of 0s and 1s is accepted).
    order : int or None
        The order e, 0..7; None picks the adaptive scheme (:func:`adaptive_scheme`: set, family
        and order).
    word_bits : int
        8 to 64.
    coded : "kept" (default) or "dropped", or None
        With a fixed order: the set the code lists.
    family : "expgolomb" (default) or "rice", or None
        With a fixed order: the code family.
    schemes : "all" (default) or "kept-exp-golomb"
        The schemes the encoder has (:data:`SCHEME_SETS`; the RTL's
        ``FocusParams.offset_schemes``): the adaptive choice is made among them, and a fixed
        scheme outside them raises ``ValueError``.

    Returns
    -------
    words : numpy.ndarray of uint64, shape [ceil(nbits / word_bits)]
        Each word holds ``word_bits`` bits of the string, its first bit in the word's MSB.
    nbits : int
        The string's length before padding, ``code_bits(mask, ...)``.

    Raises
    ------
    ValueError
        For a mask that is not 1-D bool (or 0/1), an empty mask, an order outside 0..7,
        ``word_bits`` outside 8..64, a bad ``coded`` or ``family`` (or one given with the
        adaptive order, or one outside ``schemes``), a bad ``schemes``, or a fixed Rice scheme
        the mask cannot use (a quotient >= 2 * bit_length(M)).
    """
    mask = check_mask(mask)
    scheme = check_scheme(order, coded, family, schemes)
    word_bits = check_word_bits(word_bits)
    M = mask.size
    if scheme is None:
        scheme = adaptive_scheme(mask, schemes=schemes)
    s, f, e = scheme
    gaps = gaps_from_mask(mask if s == KEPT else ~mask)
    lengths = _code_lengths(gaps, f, e, rice_quotient_limit(M))
    if (lengths < 0).any():
        raise ValueError(_ineligible(scheme, mask))
    count_bits = M.bit_length()
    head = (((e << SCHEME_BITS) | (s << 1) | f) << count_bits) | gaps.size
    if f == RICE:
        codes = (1 << e) | (gaps & ((1 << e) - 1))
    else:
        codes = gaps + (1 << e)
    values = np.concatenate([[head], codes])
    widths = np.concatenate([[ORDER_BITS + SCHEME_BITS + count_bits], lengths])
    return OffsetCode(*_pack(values, widths, word_bits))


# ---- decoder -------------------------------------------------------------------------------------

def _check_words(words, word_bits):
    # A list is read as Python integers: np.asarray would turn [1, 2**64 - 1] into float64.
    a = words if isinstance(words, np.ndarray) else np.asarray(words, dtype=object)
    if a.ndim != 1:
        raise ValueError(f"words must be 1-D, not shape {a.shape}")
    if a.dtype == object:
        for i, w in enumerate(a):
            if isinstance(w, bool) or not isinstance(w, Integral):
                raise ValueError(f"words must be integers: words[{i}] = {w!r}")
        values = [int(w) for w in a]
    elif a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"words must be an integer array, not dtype {a.dtype}")
    else:
        values = a.tolist()
    for i, w in enumerate(values):
        if not 0 <= w < 1 << word_bits:
            raise ValueError(f"words[{i}] = {w} does not fit in word_bits = {word_bits} "
                             f"(it must be in [0, 2**{word_bits}))")
    return values


def check_code(words, nbits, tokens, word_bits):
    """The arguments of :func:`decode_offsets` checked for type and range (not the code itself):
    (the words as a list of int, nbits, M, word_bits), or ``ValueError`` naming the bad one."""
    word_bits = check_word_bits(word_bits)
    M = _check_tokens(tokens)
    values = _check_words(words, word_bits)
    if isinstance(nbits, bool) or not isinstance(nbits, Integral) or nbits < 0:
        raise ValueError(f"nbits must be an integer >= 0, not {nbits!r}")
    return values, int(nbits), M, word_bits


def decode_offsets(words, nbits, tokens, word_bits=32):
    """Decode an offset code (spec 3.3) back into the keep mask of a job of ``tokens`` tokens.

    Reads ``e`` (3 bits), ``s`` and ``f`` (1 bit each), ``n`` (bit_length(M) bits, M =
    ``tokens``), then n codes of family f and order e: z zeros and a one, then e more bits r
    (Rice: g = (z << e) + r) or z + e more bits giving v = 1 followed by them (Exp-Golomb:
    g = v - 2**e); the index is j_i = j_(i-1) + 1 + g (j_(-1) = -1). The n indices are the kept
    tokens (s = 0) or the dropped ones (s = 1). Bits past ``nbits`` (the padding, and any extra
    words) are ignored.

    Parameters
    ----------
    words : array_like of int, shape [W]
        Code words, each in [0, 2**word_bits), the string's first bit in the MSB of ``words[0]``.
    nbits : int
        The string's length.
    tokens : int
        M, the job's token count, 1 to 2**32 (:data:`MAX_TOKENS`).
    word_bits : int
        8 to 64.

    Returns
    -------
    numpy.ndarray of bool, shape [tokens]: the keep mask.

    Raises
    ------
    ValueError
        Naming the problem and the bit position (0 = first bit of the string) for malformed
        input: ``nbits`` larger than the words hold; a header truncated by ``nbits``; a count
        n > M; an Exp-Golomb code with more than 31 leading zeros; a Rice code whose unary part
        has 2 * bit_length(M) or more zeros; a code that runs past ``nbits``; an index >= M;
        codes that end before ``nbits`` (trailing bits). Also for bad argument types and ranges.
    """
    values, nbits, M, word_bits = check_code(words, nbits, tokens, word_bits)
    capacity = len(values) * word_bits
    if nbits > capacity:
        raise ValueError(f"nbits = {nbits} is larger than the {len(values)} word(s) hold "
                         f"({capacity} bits at word_bits = {word_bits})")
    count_bits = M.bit_length()
    head = ORDER_BITS + SCHEME_BITS + count_bits
    if nbits < head:
        raise ValueError(f"header truncated: nbits = {nbits} but the header needs {head} bits "
                         f"(3 for the order, 2 for the set and the family, {count_bits} for the "
                         f"count at M = {M})")
    stream = "".join(format(w, f"0{word_bits}b") for w in values)[:nbits]
    e = int(stream[:ORDER_BITS], 2)
    s = int(stream[ORDER_BITS])
    f = int(stream[ORDER_BITS + 1])
    n = int(stream[ORDER_BITS + SCHEME_BITS:head], 2)
    if n > M:
        raise ValueError(f"count n = {n} > M = {M} (header count field at bit position "
                         f"{ORDER_BITS + SCHEME_BITS})")
    limit = rice_quotient_limit(M) if f == RICE else MAX_LEADING_ZEROS + 1
    coded = np.zeros(M, dtype=bool)
    pos, prev = head, -1
    for i in range(n):
        start = pos
        one = stream.find("1", pos, min(nbits, pos + limit))
        if one < 0:
            if nbits - pos >= limit:
                if f == RICE:
                    raise ValueError(f"code {i} has a unary part of {limit} or more zeros (the "
                                     f"Rice limit 2 * bit_length(M) at M = {M}; code starts at "
                                     f"bit position {start})")
                raise ValueError(f"code {i} has more than {MAX_LEADING_ZEROS} leading zeros "
                                 f"(code starts at bit position {start})")
            raise ValueError(f"code {i} runs past nbits = {nbits}: its prefix of zeros starting "
                             f"at bit position {start} never ends")
        z = one - pos
        end = one + 1 + (e if f == RICE else z + e)
        if end > nbits:
            raise ValueError(f"code {i} runs past nbits = {nbits}: it starts at bit position "
                             f"{start} and needs {end - start} bits")
        v = int(stream[one:end], 2)
        gap = (z << e) + v - (1 << e) if f == RICE else v - (1 << e)
        j = prev + 1 + gap
        if j >= M:
            raise ValueError(f"code {i} at bit position {start} gives index {j} >= M = {M}")
        coded[j] = True
        prev, pos = j, end
    if pos != nbits:
        raise ValueError(f"trailing bits: the {n} code(s) end at bit position {pos} but "
                         f"nbits = {nbits}")
    return coded if s == KEPT else ~coded
