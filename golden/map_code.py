"""The compressed similarity map (spec 4.5) and per-frame match statistics (spec 4.6).

The block matcher's map (spec 4.2) follows from one *symbol* per token: 0 when the token opened a
new group, else c in 1..7, the candidate it matched (:func:`match_codes`). A consumer that knows
the positions, FS, HS and the tile length rebuilds the map exactly (:func:`decode_map`): symbol 0
takes the next unique index, symbol c takes the map entry of the token at position
``p - offset_c`` of the same tile.

The string, MSB first, packed into ``word_bits`` words like the offset code (spec 3.3)::

    variable (1 bit) | [ranking: 8 symbols x 3 bits, variable only] | one code per token

- fixed (``variable = 0``): each symbol in 3 bits;
- variable (``variable = 1``): the ranking lists the 8 symbols from rank 0 to rank 7 (a
  permutation of 0..7), and the symbol of rank r is sent as the prefix code ``RANK_CODES[r]``:
  rank 0 ``0``; ranks 1..3 ``100``, ``101``, ``110``; ranks 4..7 ``11100`` .. ``11111``.
  :func:`adaptive_ranking` ranks the symbols by their counts in the job (ties: the smaller
  symbol first).

``nbits`` is the string's length before padding.
"""

from numbers import Integral

import numpy as np

from .block_match import (
    _best_match,
    _candidates,
    _check_int,
    _check_matrix,
    candidate_offsets,
    check_config,
    check_positions,
)
from .offsets import _check_words, _pack, check_word_bits

__all__ = [
    "SYMBOLS", "SYMBOL_BITS", "RANKING_BITS", "RANK_CODES", "match_codes", "symbol_counts",
    "adaptive_ranking", "header_bits", "map_code_bits", "encode_map", "decode_map",
    "entropy_bits", "frame_stats", "check_ranking",
]

SYMBOLS = 8             # 0 = new, 1..7 = candidate c
SYMBOL_BITS = 3         # the fixed code, and one ranking entry
RANKING_BITS = SYMBOLS * SYMBOL_BITS
#: (value, length) of the prefix code of rank r = 0..7 (the variable code).
RANK_CODES = ((0b0, 1), (0b100, 3), (0b101, 3), (0b110, 3),
              (0b11100, 5), (0b11101, 5), (0b11110, 5), (0b11111, 5))


def match_codes(vectors, positions, *, frame_stride, row_stride, theta_q, theta_bits=8,
                tile=1024, window=256):
    """Each token's symbol for :func:`golden.block_match` with the same arguments: 0 when it
    does not match (a new group), else its best candidate's c (1..7). Where two candidates are
    the same token (offsets that coincide, possible only with FS or HS at most 1), the smaller c.

    Returns an int64 array [S] of values 0..7; ``ValueError`` as for ``block_match``.
    """
    fs, hs, tq, tb, tile, _ = check_config(frame_stride, row_stride, theta_q, theta_bits, tile,
                                            window, "first")
    _, vec = _check_matrix(vectors, "vectors")
    pos = check_positions(positions, vec.shape[0])
    if vec.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = candidate_offsets(fs, hs)
    best = _best_match(vec, pos, offsets, tile, tq, tb)
    cand = _candidates(pos, offsets, tile)
    codes = np.zeros(vec.shape[0], dtype=np.int64)
    for k in range(len(offsets) - 1, -1, -1):       # the smallest c naming the best token wins
        hit = (best >= 0) & (cand[k] == best)
        codes[hit] = k + 1
    return codes


def _check_codes(codes):
    a = np.asarray(codes)
    if a.ndim != 1:
        raise ValueError(f"codes must be 1-D (one symbol per token), not shape {a.shape}")
    if a.size and (a.dtype == bool or not np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"codes must be an integer array, not dtype {a.dtype}")
    a = a.astype(np.int64)
    bad = (a < 0) | (a >= SYMBOLS)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"codes must be symbols 0..7: codes[{i}] = {a[i]}")
    return a


def symbol_counts(codes):
    """How often each symbol 0..7 occurs: int64 [8]."""
    return np.bincount(_check_codes(codes), minlength=SYMBOLS).astype(np.int64)


def adaptive_ranking(codes):
    """The ranking for the variable code: symbols by decreasing count, ties to the smaller
    symbol (a tuple of 8 symbols, rank 0 first)."""
    counts = symbol_counts(codes)
    return tuple(int(s) for s in sorted(range(SYMBOLS), key=lambda s: (-counts[s], s)))


def check_ranking(ranking):
    """``ranking`` as a tuple of the 8 symbols (a permutation of 0..7), else ``ValueError``."""
    try:
        values = list(ranking)
    except TypeError:
        raise ValueError(f"ranking must be a permutation of 0..7, not {ranking!r}") from None
    if len(values) != SYMBOLS or any(isinstance(v, bool) or not isinstance(v, Integral)
                                     for v in values) \
            or sorted(int(v) for v in values) != list(range(SYMBOLS)):
        raise ValueError(f"ranking must be a permutation of 0..7, not {ranking!r}")
    return tuple(int(v) for v in values)


def _check_variable(variable):
    if not isinstance(variable, bool):
        raise ValueError(f"variable must be True or False, not {variable!r}")
    return variable


def header_bits(variable):
    """Header length: 1 (fixed) or 1 + 24 (variable: the ranking)."""
    return 1 + (RANKING_BITS if _check_variable(variable) else 0)


def _lengths(codes, variable, ranking):
    if not variable:
        return np.full(codes.size, SYMBOL_BITS, dtype=np.int64)
    rank_of = np.empty(SYMBOLS, dtype=np.int64)
    rank_of[list(ranking)] = np.arange(SYMBOLS)
    table = np.array([length for _, length in RANK_CODES], dtype=np.int64)
    return table[rank_of[codes]]


def map_code_bits(codes, variable=False, ranking=None):
    """``nbits`` of :func:`encode_map` for these arguments (the header included)."""
    codes = _check_codes(codes)
    variable = _check_variable(variable)
    ranking = adaptive_ranking(codes) if ranking is None else check_ranking(ranking)
    return header_bits(variable) + int(_lengths(codes, variable, ranking).sum())


def encode_map(codes, *, variable=False, ranking=None, word_bits=32):
    """Encode a job's symbols (:func:`match_codes`) as the map code of spec 4.5.

    Parameters
    ----------
    codes : integer array [S], values 0..7
    variable : bool
        False: 3 bits per symbol. True: the ranking, then the prefix code of each symbol's rank.
    ranking : sequence of 8 ints or None
        A permutation of 0..7 (rank 0 first), for ``variable``; None: :func:`adaptive_ranking`.
        Ignored when ``variable`` is False.
    word_bits : int
        8 to 64.

    Returns
    -------
    (words uint64 [ceil(nbits / word_bits)], nbits)
    """
    codes = _check_codes(codes)
    variable = _check_variable(variable)
    ranking = adaptive_ranking(codes) if ranking is None else check_ranking(ranking)
    word_bits = check_word_bits(word_bits)
    if variable:
        head = 1
        for s in ranking:
            head = (head << SYMBOL_BITS) | s
        rank_of = np.empty(SYMBOLS, dtype=np.int64)
        rank_of[list(ranking)] = np.arange(SYMBOLS)
        values = np.array([v for v, _ in RANK_CODES], dtype=np.int64)[rank_of[codes]]
    else:
        head, values = 0, codes
    return _pack(np.concatenate([[head], values]),
                 np.concatenate([[header_bits(variable)], _lengths(codes, variable, ranking)]),
                 word_bits)


def decode_map(words, nbits, positions, *, frame_stride, row_stride, tile=1024, window=256,
               word_bits=32):
    """Rebuild the map (and the symbols) from a map code and the tokens' positions.

    Parameters
    ----------
    words, nbits
        The code (:func:`encode_map`); exactly ceil(nbits / word_bits) words, bits past
        ``nbits`` ignored.
    positions : integer array [S]
        The tokens' positions (>= 0, strictly increasing), one symbol each.
    frame_stride, row_stride, tile, window
        As for :func:`golden.block_match` (FS + HS + 1 < ``window``).

    Returns
    -------
    (map int64 [S], codes int64 [S])

    Raises
    ------
    ValueError
        Bad arguments; ``LENGTH``: not ceil(nbits / word_bits) words; ``HEADER``: nbits shorter
        than the header, or a ranking that is not a permutation; ``SHORT``: a symbol runs past
        nbits; ``CANDIDATE``: a symbol names a candidate that is not a token of the tile (or has
        offset 0); ``TRAILING``: bits left after the last token's symbol; ``POSITION``: positions
        not strictly increasing. The message starts with the cause (the names of
        :class:`rtl.sic.map_decoder.MapDecodeError`) and gives the bit position.
    """
    fs, hs, _, _, tile, _ = check_config(frame_stride, row_stride, 0, 8, tile, window, "first")
    word_bits = check_word_bits(word_bits)
    values = _check_words(words, word_bits)
    nbits = _check_int(nbits, "nbits", 0)
    if np.ndim(positions) != 1:
        raise ValueError(f"positions must be 1-D (one per token), not shape "
                         f"{np.shape(positions)}")
    raw = np.asarray(positions)
    if raw.size > 1 and np.issubdtype(raw.dtype, np.integer) and np.any(raw[1:] <= raw[:-1]):
        i = int(np.flatnonzero(raw[1:] <= raw[:-1])[0]) + 1
        raise ValueError(f"POSITION: positions must be strictly increasing: positions[{i}] = "
                         f"{raw[i]} is not greater than positions[{i - 1}] = {raw[i - 1]}")
    pos = check_positions(positions, np.shape(positions)[0])
    if len(values) != -(-nbits // word_bits):
        raise ValueError(f"LENGTH: nbits = {nbits} needs {-(-nbits // word_bits)} word(s) of "
                         f"{word_bits} bits, not {len(values)}")
    bits = "".join(format(w, f"0{word_bits}b") for w in values)[:nbits]
    at = 0

    def take(n, what):
        nonlocal at
        if at + n > nbits:
            raise ValueError(f"{what} runs past nbits = {nbits}: it starts at bit position {at}")
        v = int(bits[at:at + n], 2)
        at += n
        return v

    if nbits < 1:
        raise ValueError("HEADER: nbits = 0 leaves no room for the header's variable flag")
    variable = bool(take(1, "HEADER: the variable flag"))
    ranking = None
    if variable:
        if nbits < header_bits(True):
            raise ValueError(f"HEADER: nbits = {nbits} is shorter than the variable code's "
                             f"header ({header_bits(True)} bits)")
        ranking = [take(SYMBOL_BITS, "HEADER") for _ in range(SYMBOLS)]
        if sorted(ranking) != list(range(SYMBOLS)):
            raise ValueError(f"HEADER: the ranking {ranking} (bit positions 1 to 24) is not a "
                             f"permutation of 0..7")
    offsets = candidate_offsets(fs, hs)
    count = pos.shape[0]
    mp = np.zeros(count, dtype=np.int64)
    codes = np.zeros(count, dtype=np.int64)
    where = {}
    unique = 0
    for s in range(count):
        start = at
        what = f"SHORT: the symbol of token {s}"
        if variable:
            if take(1, what) == 0:
                rank = 0
            else:
                two = take(2, what)
                rank = 1 + two if two < 3 else 4 + take(2, what)
            c = ranking[rank]
        else:
            c = take(SYMBOL_BITS, what)
        if s % tile == 0:
            where = {}
        if c == 0:
            mp[s] = unique
            unique += 1
        else:
            q = int(pos[s]) - int(offsets[c - 1])
            if offsets[c - 1] == 0 or q not in where:
                raise ValueError(f"CANDIDATE: token {s} (position {pos[s]}, symbol at bit "
                                 f"position {start}) names candidate {c} at position {q}, which "
                                 f"is not a token of its tile")
            mp[s] = mp[where[q]]
        codes[s] = c
        where[int(pos[s])] = s
    if at != nbits:
        raise ValueError(f"TRAILING: the {count} symbol(s) end at bit position {at} but "
                         f"nbits = {nbits}")
    return mp, codes


def entropy_bits(codes):
    """The empirical (order-0) entropy of the symbols, in bits per symbol: -sum p log2 p over
    the symbols' frequencies in ``codes`` (0.0 for an empty or one-symbol job)."""
    counts = symbol_counts(codes)
    total = counts.sum()
    if total == 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(-(p * np.log2(p)).sum()) + 0.0


def frame_stats(codes, positions, frame_stride):
    """Per frame f = 0 .. position[-1] // FS (the whole job is frame 0 when FS = 0): how many
    tokens have ``position // FS == f``, how many of them matched (symbol != 0), and how many
    matched a candidate of the previous frame (symbol >= 4).

    Returns an int64 array [F, 3] (tokens, matched, previous); F = 0 for an empty job.
    """
    codes = _check_codes(codes)
    pos = check_positions(positions, codes.size)
    fs = _check_int(frame_stride, "frame_stride", 0)
    if codes.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    frame = pos // fs if fs else np.zeros_like(pos)
    frames = int(frame[-1]) + 1
    out = np.zeros((frames, 3), dtype=np.int64)
    np.add.at(out[:, 0], frame, 1)
    np.add.at(out[:, 1], frame, (codes != 0).astype(np.int64))
    np.add.at(out[:, 2], frame, (codes >= 4).astype(np.int64))
    return out
