"""SEC, the semantic concentrator (spec 3.1 and 3.2): importance, top-k keep mask, offset code.

For attention scores ``I[r, j]`` (r < R rows, j < M image tokens), unsigned integers::

    s[j] = max_r I[r, j]                                          (importance)
    mask[j] = (rank(j) < k)                                       (top-k)

where ``rank`` orders tokens by score descending, then index ascending: a strict total order, so
the kept set is exactly the first k tokens in it (all of them when k >= M, none when k = 0). The
spatial and temporal dataflows stream the same matrix in different orders and give the same s.
"""

from numbers import Integral

import numpy as np

from .offsets import encode_offsets
from .results import SecResult

__all__ = ["MODES", "importance", "topk_mask", "sec", "check_scores", "check_keep"]

MODES = ("spatial", "temporal")


def _unsigned(a, name):
    """``a`` (integer dtype, all >= 0) as the unsigned dtype of the same width."""
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must be an unsigned integer array (use scores_from_fp16 for "
                         f"fp16 values), not dtype {a.dtype}")
    if np.issubdtype(a.dtype, np.signedinteger):
        if a.size and a.min() < 0:
            first = tuple(int(i) for i in np.argwhere(a < 0)[0])
            raise ValueError(f"{name} must be >= 0: {int((a < 0).sum())} negative value(s), "
                             f"first at index {first[0] if len(first) == 1 else first}: "
                             f"{a[first].item()}")
        a = a.astype(np.dtype(f"u{a.dtype.itemsize}"))
    return a


def check_scores(scores):
    """Return the [R, M] score matrix as an unsigned array; raise ``ValueError`` when invalid."""
    a = np.asarray(scores)
    if a.ndim != 2:
        raise ValueError(f"scores must be 2-D [R rows, M tokens], not shape {a.shape}")
    R, M = a.shape
    if R == 0:
        raise ValueError(f"scores has no rows (shape {a.shape}): R must be >= 1")
    if M == 0:
        raise ValueError(f"scores has no tokens (shape {a.shape}): M must be >= 1")
    return _unsigned(a, "scores")


def check_keep(keep):
    """Return ``keep`` as an int >= 0; raise ``ValueError`` otherwise."""
    if isinstance(keep, bool) or not isinstance(keep, Integral):
        raise ValueError(f"keep must be an integer >= 0, not {keep!r}")
    if keep < 0:
        raise ValueError(f"keep = {keep} is out of range: it must be >= 0")
    return int(keep)


def importance(scores, mode="spatial"):
    """The importance vector: ``s[j] = max over r of scores[r, j]``.

    Parameters
    ----------
    scores : array_like, shape [R, M]
        Non-negative integer attention scores (fp16 bit patterns, see
        :func:`golden.formats.scores_from_fp16`), R >= 1 rows, M >= 1 tokens.
    mode : str
        The dataflow, ``"spatial"`` (row by row) or ``"temporal"`` (column by column). Both give
        the same result; the mode only changes the RTL's input order and cycle count.

    Returns
    -------
    numpy.ndarray, shape [M]
        Unsigned, the width of the input dtype (a signed input becomes the unsigned dtype of the
        same size).

    Raises
    ------
    ValueError
        When ``scores`` is not 2-D, R == 0 or M == 0, the dtype is not integer, a value is
        negative, or ``mode`` is unknown.
    """
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r} is not allowed: it must be 'spatial' or 'temporal'")
    return check_scores(scores).max(axis=0)


def topk_mask(s, keep):
    """The keep mask of the ``keep`` most important tokens.

    Tokens are ordered by score descending, then index ascending; ``mask[j]`` is True for the
    first ``min(keep, M)`` tokens in that order::

        mask[j] = #{i : s[i] > s[j] or (s[i] == s[j] and i < j)} < keep

    Parameters
    ----------
    s : array_like, shape [M]
        Non-negative integer importance scores, M >= 1.
    keep : int
        k >= 0. k >= M keeps every token, k = 0 none.

    Returns
    -------
    numpy.ndarray of bool, shape [M], in index order.

    Raises
    ------
    ValueError
        When ``s`` is not 1-D, empty, not integer or negative, or ``keep`` is not an integer >= 0.
    """
    a = np.asarray(s)
    if a.ndim != 1:
        raise ValueError(f"s must be 1-D (one score per token), not shape {a.shape}")
    if a.size == 0:
        raise ValueError("s is empty: M must be >= 1")
    a = _unsigned(a, "s").astype(np.uint64)
    keep = check_keep(keep)
    # ~s reverses the order of unsigned values exactly; a stable sort keeps equal scores in
    # ascending index order.
    order = np.argsort(~a, kind="stable")
    mask = np.zeros(a.size, dtype=bool)
    mask[order[:keep]] = True
    return mask


def sec(scores, keep, *, mode="spatial", order=None, word_bits=32, schemes="all"):
    """The whole SEC job: importance, top-k, offset code.

    ``mask = topk_mask(importance(scores, mode), keep)`` and
    ``(words, nbits) = encode_offsets(mask, order, word_bits, schemes=schemes)`` (``schemes``:
    the encoder's schemes, ``FocusParams.offset_schemes`` of the RTL it models).

    Returns
    -------
    (mask, words, nbits)
        The bool keep mask [M], the code words (uint64) and the code length in bits.
    """
    mask = topk_mask(importance(scores, mode), keep)
    words, nbits = encode_offsets(mask, order=order, word_bits=word_bits, schemes=schemes)
    return SecResult(mask, words, nbits)
