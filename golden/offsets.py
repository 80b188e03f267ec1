"""The SEC offset code (spec 3.3): variable-length Exp-Golomb gaps between kept tokens.

The kept indices j_0 < j_1 < ... < j_(n-1) of a mask of M tokens become gaps::

    g_0 = j_0,    g_i = j_i - j_(i-1) - 1        (dropped tokens before each kept one)

and the bit string, MSB first, is::

    e (3 bits) | n (bit_length(M) bits) | EG_e(g_0) | ... | EG_e(g_(n-1))

where the order-e Exp-Golomb code of g is, with v = g + 2**e and L = bit_length(v), L - 1 - e
zeros followed by v in L bits; its length is ``2*L - 1 - e`` bits. For e = 0 this is H.264's
ue(v). The string is packed MSB first into ``word_bits``-bit words, the last one zero-padded;
``nbits`` is the length before padding.

The order is fixed (0..7) or adaptive: the e in 0..7 with the fewest bits for this mask, ties to
the smaller e.
"""

from numbers import Integral

import numpy as np

__all__ = [
    "ORDER_BITS", "MAX_ORDER", "MAX_LEADING_ZEROS", "MAX_TOKENS",
    "encode_offsets", "decode_offsets",
    "gaps_from_mask", "header_bits", "expgolomb_bits", "code_bits", "all_code_bits",
    "adaptive_order", "check_mask", "check_word_bits", "check_order",
]

ORDER_BITS = 3          # width of the order field in the header
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
    """Bits of the header for a job of M tokens: ``3 + bit_length(M)`` (order, then count n)."""
    return ORDER_BITS + _check_tokens(M, "M").bit_length()


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


def all_code_bits(mask_or_gaps, tokens=None):
    """``nbits`` of the offset code for every order e = 0..7, as an int64 array of shape [8].

    ``nbits(e) = header_bits(M) + sum_i expgolomb_bits(g_i, e)``. A bool ``mask_or_gaps`` is a
    mask (M = its length); an integer one is the gaps, and then ``tokens`` (M) is required
    because the header's count field is bit_length(M) bits wide.
    """
    gaps, M = _as_gaps(mask_or_gaps, tokens)
    if M is None:
        raise ValueError("code_bits of gaps needs tokens (the job's M): the header's count field "
                         "is bit_length(M) bits wide")
    body = [int(expgolomb_bits(gaps, e).sum()) for e in range(MAX_ORDER + 1)]
    return header_bits(M) + np.array(body, dtype=np.int64)


def code_bits(mask_or_gaps, order, tokens=None):
    """``nbits``, the length of the offset code before padding, for one order.

    ``nbits = 3 + bit_length(M) + sum_i (2*bit_length(g_i + 2**e) - 1 - e)``.

    Parameters
    ----------
    mask_or_gaps : array_like
        A bool mask (M = its length) or integer gaps (then ``tokens`` = M is required).
    order : int or None
        0..7, or None for the adaptive order (the smallest length over 0..7).
    tokens : int, optional
        M, when gaps are given.
    """
    order = check_order(order)
    sizes = all_code_bits(mask_or_gaps, tokens)
    return int(sizes.min() if order is None else sizes[order])


def adaptive_order(mask_or_gaps):
    """The adaptive order: ``argmin_e nbits(e)`` over e = 0..7, ties to the smaller e.

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


def encode_offsets(mask, order=None, word_bits=32):
    """Encode a keep mask as the offset code of spec 3.3.

    ``e (3) | n (bit_length(M)) | EG_e(g_0) ... EG_e(g_(n-1))``, MSB first, packed into
    ``word_bits``-bit words, the last one zero-padded; EG_e(g) is L - 1 - e zeros then
    v = g + 2**e in L = bit_length(v) bits.

    Parameters
    ----------
    mask : array_like of bool, shape [M]
        The keep mask of one job, M >= 1 (an integer array of 0s and 1s is accepted).
    order : int or None
        The Exp-Golomb order e, 0..7; None picks the adaptive order (:func:`adaptive_order`).
    word_bits : int
        8 to 64.

    Returns
    -------
    words : numpy.ndarray of uint64, shape [ceil(nbits / word_bits)]
        Each word holds ``word_bits`` bits of the string, its first bit in the word's MSB.
    nbits : int
        The string's length before padding, ``code_bits(mask, e)``.

    Raises
    ------
    ValueError
        For a mask that is not 1-D bool (or 0/1), an empty mask, an order outside 0..7, or
        ``word_bits`` outside 8..64.
    """
    mask = check_mask(mask)
    order = check_order(order)
    word_bits = check_word_bits(word_bits)
    M = mask.size
    gaps = gaps_from_mask(mask)
    e = adaptive_order(gaps) if order is None else order
    count_bits = M.bit_length()
    values = np.concatenate([[(e << count_bits) | gaps.size], gaps + (1 << e)])
    widths = np.concatenate([[ORDER_BITS + count_bits], expgolomb_bits(gaps, e)])
    return _pack(values, widths, word_bits)


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


def decode_offsets(words, nbits, tokens, word_bits=32):
    """Decode an offset code (spec 3.3) back into the keep mask of a job of ``tokens`` tokens.

    Reads ``e`` (3 bits), ``n`` (bit_length(M) bits, M = ``tokens``), then n order-e Exp-Golomb
    codes: z zeros, a one, and z + e more bits, giving v; the gap is g = v - 2**e and the index
    j_i = j_(i-1) + 1 + g (j_(-1) = -1). Bits past ``nbits`` (the padding, and any extra words)
    are ignored.

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
    numpy.ndarray of bool, shape [tokens].

    Raises
    ------
    ValueError
        Naming the problem and the bit position (0 = first bit of the string) for malformed
        input: ``nbits`` larger than the words hold; a header truncated by ``nbits``; a count
        n > M; a code with more than 31 leading zeros; a code that runs past ``nbits``; an index
        >= M; codes that end before ``nbits`` (trailing bits). Also for bad argument types and
        ranges.
    """
    word_bits = check_word_bits(word_bits)
    M = _check_tokens(tokens)
    values = _check_words(words, word_bits)
    if isinstance(nbits, bool) or not isinstance(nbits, Integral) or nbits < 0:
        raise ValueError(f"nbits must be an integer >= 0, not {nbits!r}")
    nbits = int(nbits)
    capacity = len(values) * word_bits
    if nbits > capacity:
        raise ValueError(f"nbits = {nbits} is larger than the {len(values)} word(s) hold "
                         f"({capacity} bits at word_bits = {word_bits})")
    count_bits = M.bit_length()
    head = ORDER_BITS + count_bits
    if nbits < head:
        raise ValueError(f"header truncated: nbits = {nbits} but the header needs {head} bits "
                         f"(3 for the order, {count_bits} for the count at M = {M})")
    stream = "".join(format(w, f"0{word_bits}b") for w in values)[:nbits]
    e = int(stream[:ORDER_BITS], 2)
    n = int(stream[ORDER_BITS:head], 2)
    if n > M:
        raise ValueError(f"count n = {n} > M = {M} (header count field at bit position "
                         f"{ORDER_BITS})")
    mask = np.zeros(M, dtype=bool)
    pos, prev = head, -1
    for i in range(n):
        start = pos
        one = stream.find("1", pos, min(nbits, pos + MAX_LEADING_ZEROS + 1))
        if one < 0:
            if nbits - pos > MAX_LEADING_ZEROS:
                raise ValueError(f"code {i} has more than {MAX_LEADING_ZEROS} leading zeros "
                                 f"(code starts at bit position {start})")
            raise ValueError(f"code {i} runs past nbits = {nbits}: its prefix of zeros starting "
                             f"at bit position {start} never ends")
        z = one - pos
        end = one + 1 + z + e
        if end > nbits:
            raise ValueError(f"code {i} runs past nbits = {nbits}: it starts at bit position "
                             f"{start} and needs {end - start} bits")
        v = int(stream[one:end], 2)
        j = prev + 1 + v - (1 << e)
        if j >= M:
            raise ValueError(f"code {i} at bit position {start} gives index {j} >= M = {M}")
        mask[j] = True
        prev, pos = j, end
    if pos != nbits:
        raise ValueError(f"trailing bits: the {n} code(s) end at bit position {pos} but "
                         f"nbits = {nbits}")
    return mask
