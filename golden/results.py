"""The named results of the spec 6 API: what ``golden`` and ``sim`` return (the same classes in
both). Each is a ``NamedTuple``, so it still unpacks and indexes as the plain tuple it replaces:
``mask, words, nbits = golden.sec(...)`` and ``golden.sec(...).nbits`` both work."""

from typing import NamedTuple

import numpy as np

__all__ = ["OffsetCode", "SecResult", "MatchResult", "SicResult", "FocusResult", "LayerResult"]


class OffsetCode(NamedTuple):
    """``encode_offsets``: the code words (``uint64``, MSB first) and the code length in bits."""

    words: np.ndarray
    nbits: int


class SecResult(NamedTuple):
    """``sec``: the bool keep mask [M], the offset code's words and its length in bits."""

    mask: np.ndarray
    words: np.ndarray
    nbits: int


class MatchResult(NamedTuple):
    """``block_match``: each token's unique-vector number [S] and the unique vectors [U, V]."""

    map: np.ndarray
    uniques: np.ndarray


class SicResult(NamedTuple):
    """``sic``: the map [S, D/V] (one column per sub-vector column) and a list of D/V unique
    vector arrays."""

    maps: np.ndarray
    uniques: list


class FocusResult(NamedTuple):
    """``focus``: SEC's mask, words and nbits, then SIC's maps and uniques of the kept tokens."""

    mask: np.ndarray
    words: np.ndarray
    nbits: int
    maps: np.ndarray
    uniques: list


class LayerResult(NamedTuple):
    """``focus_layer``: the keep mask [M] and the GEMM output of the kept tokens [n, N]."""

    mask: np.ndarray
    y: np.ndarray
