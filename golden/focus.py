"""The whole Focus unit (spec 5, 6): SEC, then SIC on the kept tokens at their original positions.

::

    mask, words, nbits = sec(scores, keep, mode, order, word_bits)
    maps, uniques      = sic(tokens[mask], nonzero(mask), ...)

The positions SIC sees are the kept tokens' indices, which the hardware recovers from the offset
code (``decode_offsets(words, nbits, M) == mask``, so this model uses the mask directly).
"""

import numpy as np

from .block_match import _check_matrix, check_columns, check_config, sic
from .results import FocusResult
from .sec import check_scores, sec

__all__ = ["focus", "check_focus_inputs"]


def check_focus_inputs(scores, tokens, *, frame_stride, row_stride, theta_q, theta_bits, tile,
                       window, representative, dim):
    """Checks shared by ``golden.focus`` and ``sim.focus``; returns (scores, tokens, columns).

    Raises ``ValueError`` for bad scores (as ``golden.sec``), bad SIC settings (as
    ``golden.sic``), tokens that are not [M, D] with D a positive multiple of ``dim``, or a token
    count that differs from the scores' M.
    """
    a = check_scores(scores)
    check_config(frame_stride, row_stride, theta_q, theta_bits, tile, window, representative)
    orig, dim, columns = check_columns(tokens, dim)
    _check_matrix(orig, "tokens")
    if orig.shape[0] != a.shape[1]:
        raise ValueError(f"tokens has {orig.shape[0]} rows but scores has M = {a.shape[1]} "
                         f"columns: there must be one token per image token")
    return a, orig, columns


def focus(scores, tokens, keep, *, mode="spatial", order=None, word_bits=32, schemes="all",
          frame_stride, row_stride, theta_q, theta_bits=8, tile=1024, window=256,
          representative="first", dim=32):
    """One Focus job: the keep mask and offset code of SEC, then SIC on the kept tokens.

    Parameters
    ----------
    scores : integer array [R, M]
        Attention scores, spatial layout (``mode`` only changes the RTL's input order).
    tokens : integer array [M, D]
        All M image tokens; D a positive multiple of ``dim``.
    keep, mode, order, word_bits, schemes
        As for :func:`golden.sec` (``schemes``: the offset-code schemes of the unit modelled,
        its ``FocusParams.offset_schemes``).
    frame_stride, row_stride, theta_q, theta_bits, tile, window, representative, dim
        As for :func:`golden.sic`. Positions are the kept tokens' indices 0..M-1.

    Returns
    -------
    (mask, words, nbits, maps, uniques)
        ``mask`` bool [M], ``words`` and ``nbits`` the offset code, ``maps`` int64
        [n_kept, D/dim], ``uniques`` a list of D/dim arrays [U_j, dim].

    Raises
    ------
    ValueError
        Bad scores, keep, mode, order, word_bits, schemes, SIC settings or tokens, or a token
        count other than M.
    """
    check_focus_inputs(scores, tokens, frame_stride=frame_stride, row_stride=row_stride,
                       theta_q=theta_q, theta_bits=theta_bits, tile=tile, window=window,
                       representative=representative, dim=dim)
    mask, words, nbits = sec(scores, keep, mode=mode, order=order, word_bits=word_bits,
                             schemes=schemes)
    kept = np.asarray(tokens)[mask]
    maps, uniques = sic(kept, np.flatnonzero(mask), frame_stride=frame_stride,
                        row_stride=row_stride, theta_q=theta_q, theta_bits=theta_bits, tile=tile,
                        window=window, representative=representative, dim=dim)
    return FocusResult(mask, words, nbits, maps, uniques)
