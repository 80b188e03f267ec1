"""SIC block matcher (spec 4.2), the bit-exact model of the RTL block matcher.

Each token s is a sub-vector x_s of V signed integers with its original position p_s. Tiles are
consecutive runs of ``tile`` tokens in input order. Candidate c = 1..7 of the token at position p
is the token at position::

    q_c = p - (f*FS + dh*HS + dw),    f = c >> 2,  dh = (c >> 1) & 1,  dw = c & 1

when such a token exists in the same tile and its vector is not zero. The token matches the
similar candidate (``golden.similarity.similar``: cos > theta_q / 2**F, exact) with the largest
cosine (``golden.similarity.better``: dot1**2 * ny2 > dot2**2 * ny1), ties going to the smallest c.
Then ``map[s] = map[q]``; otherwise ``map[s]`` is the next new unique index, counted from 0 across
tiles in input order.

Decisions where the spec is silent:

- ``frame_stride`` and ``row_stride`` are integers >= 0. A candidate whose offset
  ``f*FS + dh*HS + dw`` is 0 (possible only with FS = 0 or HS = 0) would be the token itself: it
  never exists. A token only ever matches an earlier token of its tile.
- Positions must strictly increase over the whole input (not only inside each tile), and be >= 0.
- Vector elements must fit in signed 16 bits (the widest ``elem_bits`` that
  :class:`rtl.params.FocusParams` allows), so that every dot product is exact in int64.
- The unique vectors keep the dtype of ``vectors``: a group's mean, rounded, is always within the
  range of its members.
"""

import numpy as np

from .similarity import (
    ELEM_BITS_MAX,
    better,
    check_theta_bits,
    check_theta_q,
    check_vectors,
    dot,
    similar,
    sqnorm,
)

__all__ = ["block_match", "sic", "candidate_offsets", "REPRESENTATIVES", "check_config",
           "check_positions", "check_columns"]

REPRESENTATIVES = ("first", "mean")


def _check_int(value, name, low=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name} = {value} is out of range: it must be >= {low}")
    return value


def candidate_offsets(frame_stride, row_stride):
    """Position offsets of candidates c = 1..7: ``f*FS + dh*HS + dw`` (index 0 is c = 1).

    Returns an int64 array of 7 entries.
    """
    c = np.arange(1, 8)
    return ((c >> 2) * frame_stride + ((c >> 1) & 1) * row_stride + (c & 1)).astype(np.int64)


def check_config(frame_stride, row_stride, theta_q, theta_bits, tile, window, representative):
    """``(frame_stride, row_stride, theta_q, theta_bits, tile, window)`` checked; ``ValueError``
    for a bad job setting."""
    fs = _check_int(frame_stride, "frame_stride", 0)
    hs = _check_int(row_stride, "row_stride", 0)
    tb = check_theta_bits(theta_bits)
    tq = check_theta_q(theta_q, tb)
    tile = _check_int(tile, "tile", 1)
    window = _check_int(window, "window", 1)
    if fs + hs + 1 >= window:
        raise ValueError(f"frame_stride + row_stride + 1 = {fs} + {hs} + 1 = {fs + hs + 1} must be "
                         f"less than window = {window} (configuration error: the look-back does "
                         f"not reach the frame-behind neighbour)")
    if not isinstance(representative, str) or representative not in REPRESENTATIVES:
        raise ValueError(f"representative must be 'first' or 'mean', not {representative!r}")
    return fs, hs, tq, tb, tile, window


def check_positions(positions, count):
    """``positions`` as a strictly increasing int64 array of ``count`` values >= 0, else
    ``ValueError``."""
    pos = np.asarray(positions)
    if pos.dtype == bool or not np.issubdtype(pos.dtype, np.integer):
        raise ValueError(f"positions must be an integer array, not dtype {pos.dtype}")
    if pos.ndim != 1 or pos.shape[0] != count:
        raise ValueError(f"positions must have shape ({count},) (one per token), "
                         f"not {pos.shape}")
    if pos.dtype == np.uint64 and count and pos.max() > np.iinfo(np.int64).max:
        raise ValueError(f"positions must fit in int64: max {pos.max()}")
    pos = pos.astype(np.int64)
    if count:
        if pos.min() < 0:
            where = int(np.argmax(pos < 0))
            raise ValueError(f"positions must be >= 0: positions[{where}] = {pos[where]}")
        bad = np.flatnonzero(pos[1:] <= pos[:-1])
        if bad.size:
            i = int(bad[0]) + 1
            raise ValueError(f"positions must be strictly increasing: positions[{i}] = {pos[i]} "
                             f"is not greater than positions[{i - 1}] = {pos[i - 1]}")
    return pos


def _check_matrix(vectors, name):
    orig = np.asarray(vectors)
    if orig.ndim != 2:
        raise ValueError(f"{name} must be a 2-D integer array [S, V], not shape {orig.shape}")
    vec = check_vectors(orig, name, ELEM_BITS_MAX)
    if vec.shape[1] < 1:
        raise ValueError(f"{name} must have at least one element per vector, not shape "
                         f"{vec.shape}")
    return orig, vec


def _candidates(pos, offsets, tile):
    """Token index of each candidate, [7, S] int64, -1 where no token of the tile has position q."""
    count = pos.shape[0]
    idx = np.arange(count)
    tile_start = idx - idx % tile
    out = np.full((len(offsets), count), -1, dtype=np.int64)
    for k, off in enumerate(offsets):
        if off <= 0:
            continue                        # offset 0 would be the token itself: never a candidate
        q = pos - off
        j = np.searchsorted(pos, q, side="left")
        jc = np.minimum(j, count - 1)
        hit = (j < count) & (pos[jc] == q) & (jc >= tile_start)
        out[k] = np.where(hit, jc, -1)
    return out


def _best_match(vec, pos, offsets, tile, theta_q, theta_bits):
    """Index of the best similar candidate of each token, [S] int64, -1 when it does not match."""
    count = vec.shape[0]
    cand = _candidates(pos, offsets, tile)
    norms = sqnorm(vec)
    best = np.full(count, -1, dtype=np.int64)
    best_dot = np.zeros(count, dtype=np.int64)
    best_ny = np.zeros(count, dtype=np.int64)
    for k in range(len(offsets)):               # c = 1..7 in order: strict `better` keeps small c
        rows = np.flatnonzero(cand[k] >= 0)
        q = cand[k][rows]
        keep = norms[q] > 0                     # zero skip: a zero candidate does not exist
        rows, q = rows[keep], q[keep]
        if rows.size == 0:
            continue
        sim = similar(vec[rows], vec[q], theta_q, theta_bits)
        rows, q = rows[sim], q[sim]
        if rows.size == 0:
            continue
        d = dot(vec[rows], vec[q])
        ny = norms[q]
        take = (best[rows] < 0) | better(d, ny, best_dot[rows], best_ny[rows])
        rows, q, d, ny = rows[take], q[take], d[take], ny[take]
        best[rows] = q
        best_dot[rows] = d
        best_ny[rows] = ny
    return best


def _resolve(best):
    """Maps from match targets: new tokens count up from 0; a match takes its target's map."""
    count = best.shape[0]
    new = best < 0
    uid = np.cumsum(new) - 1
    root = np.where(new, np.arange(count), best)
    while True:                                 # pointer jumping: every target is an earlier token
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    return uid[root].astype(np.int64), new


def _representatives(orig, vec, mp, new, representative):
    if representative == "first":
        return orig[new].copy()
    groups = int(new.sum())
    total = np.zeros((groups, vec.shape[1]), dtype=np.int64)
    np.add.at(total, mp, vec)
    count = np.bincount(mp, minlength=groups).astype(np.int64)[:, None]
    mean = np.sign(total) * ((2 * np.abs(total) + count) // (2 * count))
    return mean.astype(orig.dtype)


def check_columns(tokens, dim):
    """``(tokens as an array, dim, D/V)`` for whole tokens [S, D] split into D/V columns of V."""
    dim = _check_int(dim, "dim", 1)
    orig = np.asarray(tokens)
    if orig.ndim != 2:
        raise ValueError(f"tokens must be a 2-D integer array [S, D], not shape {orig.shape}")
    width = orig.shape[1]
    if width == 0 or width % dim:
        raise ValueError(f"tokens' dimension D = {width} must be a positive multiple of "
                         f"dim = {dim}")
    return orig, dim, width // dim


def block_match(vectors, positions, *, frame_stride, row_stride, theta_q, theta_bits=8,
                tile=1024, window=256, representative="first"):
    """Block-match sub-vectors in 2x2x2 (frame, row, column) neighbourhoods (spec 4.2), exactly.

    Parameters
    ----------
    vectors : integer array [S, V]
        The tokens' sub-vectors, in input order (signed, at most 16 bits).
    positions : integer array [S]
        Original positions, >= 0 and strictly increasing; pruned positions are simply absent.
    frame_stride, row_stride : int
        FS and HS, >= 0, with FS + HS + 1 < ``window``.
    theta_q : int
        Threshold theta = theta_q / 2**theta_bits, 0 <= theta_q < 2**theta_bits.
    theta_bits : int
        F, fraction bits of the threshold, 1 to 16.
    tile : int
        Tokens per tile (>= 1); tiles are consecutive runs of the input, the last may be shorter.
    window : int
        Look-back of the layouter in tokens; only checked against FS + HS + 1.
    representative : str
        ``"first"``: a unique vector is its group's first original vector. ``"mean"``: the
        element-wise mean of the group's original vectors, rounded half away from zero,
        ``sign(t) * ((2*|t| + c) // (2*c))`` with t the sum and c the count.

    Returns
    -------
    map : int64 array [S]
        ``map[s] = map[q]`` when token s matches candidate q (the similar candidate with the
        largest cosine, ties to the smallest c), else the next new unique index.
    uniques : array [U, V]
        One vector per unique index, in index order, with the dtype of ``vectors``.

    Raises
    ------
    ValueError
        Wrong shapes or dtypes, positions not strictly increasing or negative, strides < 0,
        FS + HS + 1 >= window, theta_q out of range, tile < 1, unknown representative.
    """
    fs, hs, tq, tb, tile, _ = check_config(frame_stride, row_stride, theta_q, theta_bits, tile,
                                            window, representative)
    orig, vec = _check_matrix(vectors, "vectors")
    pos = check_positions(positions, vec.shape[0])
    if vec.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), orig[:0].copy()
    best = _best_match(vec, pos, candidate_offsets(fs, hs), tile, tq, tb)
    mp, new = _resolve(best)
    return mp, _representatives(orig, vec, mp, new, representative)


def sic(tokens, positions, *, frame_stride, row_stride, theta_q, theta_bits=8, tile=1024,
        window=256, representative="first", dim=32):
    """SIC over whole tokens: D/V independent sub-vector columns, each block-matched (spec 4.2).

    Column j of a token is its elements ``j*V .. j*V + V - 1`` with V = ``dim``;
    ``maps[:, j], uniques[j] = block_match(tokens[:, j*V:(j+1)*V], positions, ...)``.

    Parameters
    ----------
    tokens : integer array [S, D]
        D must be a positive multiple of ``dim``.
    positions, frame_stride, row_stride, theta_q, theta_bits, tile, window, representative
        As for :func:`block_match`.
    dim : int
        V, elements per sub-vector (>= 1).

    Returns
    -------
    maps : int64 array [S, D/V]
    uniques : list of D/V arrays [U_j, V]
    """
    check_config(frame_stride, row_stride, theta_q, theta_bits, tile, window, representative)
    orig, dim, columns = check_columns(tokens, dim)
    maps = np.zeros((orig.shape[0], columns), dtype=np.int64)
    uniques = []
    for j in range(columns):
        maps[:, j], u = block_match(orig[:, j * dim:(j + 1) * dim], positions,
                                    frame_stride=frame_stride, row_stride=row_stride,
                                    theta_q=theta_q, theta_bits=theta_bits, tile=tile,
                                    window=window, representative=representative)
        uniques.append(u)
    return maps, uniques
