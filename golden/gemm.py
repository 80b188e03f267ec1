"""The Focus GEMM (paper, section VI): the bit-exact model of
:class:`rtl.tile.focus_gemm.FocusGemm`.

SIC turns the input X [S, K] of a GEMM into C = K/V columns of sub-vectors, and each column c into
a few unique vectors ``uniques[c]`` [p_c, V] and a map ``maps[:, c]`` (row s's sub-vector is
replaced by ``uniques[c][maps[s, c]]``). The GEMM multiplies only the unique vectors by the weights
and scatters the partial sums back to every row::

    Y = sum_c uniques[c][maps[:, c]] @ W[c*V:(c+1)*V]          (int64 [S, N], exact)

which is exactly ``X' @ W`` for the concentrated input X' (:func:`concentrate`), and ``X @ W`` when
every row is unique and the maps are the identity (:func:`dense_inputs`).

K not a multiple of V: pad X with zero columns and W with zero rows to the next multiple of V
(:func:`pad_reduction`); zero columns add nothing, so the product is unchanged. N needs no padding
here; the RTL driver pads the last ``dim``-wide column tile itself.

Tiling (what the hardware is fed, :func:`gemm_tiles`): rows go in output tiles of at most ``tile``
consecutive rows; for each tile and column c the tile's unique vectors are the indices its rows
reference, in increasing order, and its local map is each row's position in that list. For SIC's
own output with the same tile those are exactly SIC's uniques of that tile (a token only matches
an earlier token of its tile), so the local map is ``maps - first index of the tile``.
"""

import numbers

import numpy as np

from .block_match import _check_int, check_config
from .focus import check_focus_inputs, focus
from .map_code import check_word_bits, decode_map
from .offsets import _check_words
from .results import LayerResult

__all__ = ["focus_gemm", "concentrate", "dense_inputs", "pad_reduction", "gemm_tiles",
           "check_gemm_inputs", "focus_layer", "ELEM_BITS_MAX", "focus_gemm_coded",
           "check_coded_inputs", "decode_tile_maps", "check_coded_counts"]

#: Widest signed element of the unique vectors and weights (FocusParams.elem_bits <= 16), so that
#: every product and every sum of up to 2**31 of them is exact in int64.
ELEM_BITS_MAX = 16


def _check_ints(a, name, ndim, what):
    orig = np.asarray(a)
    if orig.dtype == bool or not np.issubdtype(orig.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array, not dtype {orig.dtype}")
    if orig.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D integer array {what}, not shape {orig.shape}")
    return orig.astype(np.int64)


def _check_range(a, name, bits):
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if a.size and (a.min() < low or a.max() > high):
        raise ValueError(f"{name} has elements outside the signed {bits}-bit range [{low}, "
                         f"{high}]: min {a.min()}, max {a.max()}")


def _check_vectors(uniques):
    """The unique vectors of every column as int64 arrays [p_c, V] of one V >= 1, and V."""
    us = [_check_ints(u, f"uniques[{c}]", 2, "[p_c, V]") for c, u in enumerate(uniques)]
    dim = us[0].shape[1]
    for c, u in enumerate(us):
        if u.shape[1] != dim or dim < 1:
            raise ValueError(f"uniques[{c}] has shape {u.shape}: every column needs vectors of the "
                             f"same V >= 1 (uniques[0] has V = {dim})")
        _check_range(u, f"uniques[{c}]", ELEM_BITS_MAX)
    return us, dim


def _check_weights(weights, columns, dim):
    """``weights`` as an int64 array [C*V, N >= 1] within :data:`ELEM_BITS_MAX`."""
    w = _check_ints(weights, "weights", 2, "[C*V, N]")
    if w.shape[0] != columns * dim or w.shape[1] < 1:
        raise ValueError(f"weights must have shape [C*V, N] = [{columns * dim}, N >= 1] for C = "
                         f"{columns} columns of V = {dim}, not {w.shape}")
    _check_range(w, "weights", ELEM_BITS_MAX)
    return w


def _check_uniques_maps(uniques, maps):
    mp = _check_ints(maps, "maps", 2, "[S tokens, C columns]")
    if mp.shape[1] < 1:
        raise ValueError(f"maps must have at least one column, not shape {mp.shape}")
    columns = mp.shape[1]
    if isinstance(uniques, np.ndarray) or not hasattr(uniques, "__len__"):
        raise ValueError(f"uniques must be a list of {columns} arrays [p_c, V] (one per column of "
                         f"maps), not {type(uniques).__name__}")
    if len(uniques) != columns:
        raise ValueError(f"uniques has {len(uniques)} arrays but maps has C = {columns} columns: "
                         f"there must be one per column")
    us, dim = _check_vectors(uniques)
    for c, u in enumerate(us):
        col = mp[:, c]
        if col.size and (col.min() < 0 or col.max() >= len(u)):
            bad = int(np.flatnonzero((col < 0) | (col >= len(u)))[0])
            raise ValueError(f"maps[{bad}, {c}] = {col[bad]} is out of range: column {c} has "
                             f"{len(u)} unique vectors")
    return us, mp, dim


def check_gemm_inputs(uniques, maps, weights):
    """``(uniques, maps, weights)`` as int64 arrays, checked; ``ValueError`` naming the argument.

    ``maps`` must be [S, C] with C >= 1 and every entry in ``[0, len(uniques[c]))``; ``uniques`` a
    sequence of C arrays [p_c, V] of one V >= 1; ``weights`` [C*V, N] with N >= 1. Elements of
    ``uniques`` and ``weights`` must fit in signed 16 bits (:data:`ELEM_BITS_MAX`).
    """
    us, mp, dim = _check_uniques_maps(uniques, maps)
    columns = mp.shape[1]
    w = _check_weights(weights, columns, dim)
    return us, mp, w


def focus_gemm(uniques, maps, weights):
    """The Focus GEMM: ``sum_c uniques[c][maps[:, c]] @ weights[c*V:(c+1)*V]``, exactly.

    Parameters
    ----------
    uniques : list of C integer arrays [p_c, V]
        As :func:`golden.sic` returns them (signed, at most 16 bits).
    maps : integer array [S, C]
        As :func:`golden.sic` returns it: ``maps[s, c]`` indexes ``uniques[c]``.
    weights : integer array [C*V, N]
        The weights (int8 in the paper; at most 16 bits).

    Returns
    -------
    int64 array [S, N]: ``X' @ W`` for the concentrated input X' (:func:`concentrate`).

    Raises
    ------
    ValueError
        Wrong shapes or dtypes, a map entry outside its column's unique vectors, elements outside
        signed 16 bits.
    """
    us, mp, w = check_gemm_inputs(uniques, maps, weights)
    dim = us[0].shape[1]
    y = np.zeros((mp.shape[0], w.shape[1]), dtype=np.int64)
    for c, u in enumerate(us):
        y += u[mp[:, c]] @ w[c * dim:(c + 1) * dim]
    return y


def check_coded_inputs(uniques, map_codes, positions, weights, *, frame_stride, row_stride,
                       tile, window=256, word_bits=32):
    """The arguments of :func:`focus_gemm_coded` checked for what is wrong with any code
    (``ValueError`` naming the argument); returns ``(uniques, codes, positions, weights, fs, hs,
    tile, window, word_bits)`` with ``codes[t][c] = (word list, nbits)``. What only decoding
    finds (the causes of :func:`golden.map_code.decode_map`) is left to :func:`decode_tile_maps`.
    """
    fs, hs, _, _, tile, window = check_config(frame_stride, row_stride, 0, 8, tile, window,
                                              "first")
    word_bits = check_word_bits(word_bits)
    if isinstance(uniques, np.ndarray) or not hasattr(uniques, "__len__") or not len(uniques):
        raise ValueError(f"uniques must be a list of C >= 1 arrays [p_c, V] (one per column), "
                         f"not {type(uniques).__name__}")
    us, dim = _check_vectors(uniques)
    columns = len(us)
    w = _check_weights(weights, columns, dim)
    pos = np.asarray(positions)
    if pos.ndim != 1 or pos.dtype == bool or not np.issubdtype(pos.dtype, np.integer):
        raise ValueError(f"positions must be a 1-D integer array (one per row), not shape "
                         f"{pos.shape} dtype {pos.dtype}")
    if pos.size and (pos.min() < 0 or pos.max() >= 1 << 32):
        raise ValueError(f"positions must be in [0, 2**32): min {pos.min()}, max {pos.max()}")
    pos = pos.astype(np.int64)
    blocks = -(-pos.size // tile)
    if isinstance(map_codes, np.ndarray) or not hasattr(map_codes, "__len__") \
            or len(map_codes) != blocks:
        raise ValueError(f"map_codes must be a list of ceil(S / tile) = {blocks} lists (one per "
                         f"row tile) of C = {columns} codes (words, nbits)")
    codes = []
    for t, row in enumerate(map_codes):
        if not hasattr(row, "__len__") or len(row) != columns:
            raise ValueError(f"map_codes[{t}] must hold C = {columns} codes (words, nbits), one "
                             f"per column")
        codes.append([])
        for c, code in enumerate(row):
            try:
                words, nbits = code
            except (TypeError, ValueError):
                raise ValueError(f"map_codes[{t}][{c}] must be a pair (words, nbits)") from None
            values = _check_words(words, word_bits)
            if not values:
                raise ValueError(f"map_codes[{t}][{c}] has no words: a map code holds at least "
                                 f"its header")
            if isinstance(nbits, bool) or not isinstance(nbits, numbers.Integral) \
                    or not 0 <= nbits < 1 << 32:
                raise ValueError(f"map_codes[{t}][{c}]: nbits must be an integer in [0, 2**32), "
                                 f"not {nbits!r}")
            codes[-1].append((values, int(nbits)))
    return us, codes, pos, w, fs, hs, tile, window, word_bits


def decode_tile_maps(codes, positions, columns, *, frame_stride, row_stride, tile, window,
                     word_bits):
    """Each row tile's map codes (checked, :func:`check_coded_inputs`) decoded with
    :func:`golden.map_code.decode_map`: ``(maps, counts)``, ``maps`` int64 [S, C] with the
    tiles' local indices offset by the groups of the tiles before (the job's map, as
    :func:`focus_gemm` takes it) and ``counts[t][c]`` the groups code (t, c) opens.

    A code ``decode_map`` rejects raises ``ValueError("<CAUSE>: rows a:b, column c: ...")``
    (``CAUSE`` the :class:`rtl.sic.map_decoder.MapDecodeError` name), tile by tile, column by
    column.
    """
    maps = np.zeros((positions.size, columns), np.int64)
    counts = []
    first = [0] * columns
    for t, row in enumerate(codes):
        start, stop = t * tile, min((t + 1) * tile, positions.size)
        counts.append([])
        for c, (words, nbits) in enumerate(row):
            try:
                local, symbols = decode_map(words, nbits, positions[start:stop],
                                            frame_stride=frame_stride, row_stride=row_stride,
                                            tile=tile, window=window, word_bits=word_bits)
            except ValueError as exc:
                cause, _, rest = str(exc).partition(": ")
                raise ValueError(f"{cause}: rows {start}:{stop}, column {c}: {rest}") from None
            maps[start:stop, c] = local + first[c]
            opened = int((symbols == 0).sum())
            first[c] += opened
            counts[-1].append(opened)
    return maps, counts


def focus_gemm_coded(uniques, map_codes, positions, weights, *, frame_stride, row_stride, tile,
                     window=256, word_bits=32):
    """The Focus GEMM with its map given as map codes (spec 4.5), the model of
    :class:`rtl.top.focus_gemm_coded.FocusGemmCoded`: the row tiles' codes decoded
    (:func:`decode_tile_maps`), then :func:`focus_gemm`.

    Parameters
    ----------
    uniques : list of C integer arrays [p_c, V]
        Column c's unique vectors, tile by tile in the order the codes open them.
    map_codes : list of ceil(S / tile) lists of C pairs (words, nbits)
        ``map_codes[t][c]``: :func:`golden.map_code.encode_map` of the symbols of rows
        ``t*tile .. min((t+1)*tile, S) - 1`` in column c (the code of a matcher job of that one
        tile: its unique indices count from 0).
    positions : integer array [S]
        The rows' positions (each tile's strictly increasing), as the matcher had them.
    weights : integer array [C*V, N]
    frame_stride, row_stride, tile, window, word_bits
        As for :func:`golden.map_code.decode_map`; ``tile`` is also the output tile.

    Returns
    -------
    int64 array [S, N]

    Raises
    ------
    ValueError
        Bad arguments (:func:`check_coded_inputs`); a code ``decode_map`` rejects (the message
        starts with the cause); ``uniques[c]`` not holding exactly the groups column c's codes
        open.
    """
    us, codes, pos, w, fs, hs, tile, window, word_bits = check_coded_inputs(
        uniques, map_codes, positions, weights, frame_stride=frame_stride,
        row_stride=row_stride, tile=tile, window=window, word_bits=word_bits)
    maps, counts = decode_tile_maps(codes, pos, len(us), frame_stride=fs, row_stride=hs,
                                    tile=tile, window=window, word_bits=word_bits)
    check_coded_counts(us, counts)
    return focus_gemm(us, maps, w)


def check_coded_counts(uniques, counts):
    """``ValueError`` unless ``uniques[c]`` has exactly the groups column c's codes open."""
    for c, u in enumerate(uniques):
        opened = sum(row[c] for row in counts)
        if len(u) != opened:
            raise ValueError(f"uniques[{c}] has {len(u)} vectors but column {c}'s map codes open "
                             f"{opened} groups: there must be one vector per group")


def concentrate(uniques, maps):
    """X' [S, C*V] (int64): every sub-vector replaced by its group's unique vector,
    ``X'[s, c*V:(c+1)*V] = uniques[c][maps[s, c]]``."""
    us, mp, _ = _check_uniques_maps(uniques, maps)
    return np.hstack([u[mp[:, c]] for c, u in enumerate(us)])


def dense_inputs(x, dim):
    """``(maps, uniques)`` of a dense GEMM (every row unique, maps the identity) for X [S, K],
    K a positive multiple of ``dim``: ``focus_gemm(uniques, maps, W) == X @ W``."""
    dim = _check_int(dim, "dim", 1)
    a = _check_ints(x, "x", 2, "[S, K]")
    if a.shape[1] == 0 or a.shape[1] % dim:
        raise ValueError(f"x's K = {a.shape[1]} must be a positive multiple of dim = {dim} (pad "
                         f"it with pad_reduction)")
    columns = a.shape[1] // dim
    maps = np.repeat(np.arange(a.shape[0], dtype=np.int64)[:, None], columns, axis=1)
    return maps, [a[:, c * dim:(c + 1) * dim].copy() for c in range(columns)]


def pad_reduction(x, weights, dim):
    """X [S, K] and W [K, N] padded with zero columns / zero rows to K' = ceil(K/dim)*dim, the
    documented treatment of a K that is not a multiple of V (the product is unchanged)."""
    dim = _check_int(dim, "dim", 1)
    a = _check_ints(x, "x", 2, "[S, K]")
    w = _check_ints(weights, "weights", 2, "[K, N]")
    if w.shape[0] != a.shape[1]:
        raise ValueError(f"weights has {w.shape[0]} rows but x has K = {a.shape[1]} columns")
    extra = -a.shape[1] % dim
    return np.pad(a, ((0, 0), (0, extra))), np.pad(w, ((0, extra), (0, 0)))


def gemm_tiles(maps, tile):
    """The output tiles the hardware computes, in order: a list of ``(start, stop, chunks)`` for
    rows ``start:stop`` (at most ``tile`` rows each), where ``chunks[c] = (refs, local)``: the
    sorted unique indices of column c the tile's rows reference (p_c = len(refs) vectors go
    through the array) and each row's index into ``refs`` (the map the scatter stage uses)."""
    tile = _check_int(tile, "tile", 1)
    mp = _check_ints(maps, "maps", 2, "[S tokens, C columns]")
    tiles = []
    for start in range(0, mp.shape[0], tile):
        stop = min(start + tile, mp.shape[0])
        chunks = []
        for c in range(mp.shape[1]):
            refs = np.unique(mp[start:stop, c])
            chunks.append((refs, np.searchsorted(refs, mp[start:stop, c]).astype(np.int64)))
        tiles.append((start, stop, chunks))
    return tiles


def check_layer_inputs(scores, tokens, weights, **settings):
    """The inputs of :func:`focus_layer` checked (``settings``: the SIC keywords of
    :func:`golden.focus.check_focus_inputs`): (scores, tokens, weights) as arrays, or
    ``ValueError`` naming the bad one."""
    a, orig, _ = check_focus_inputs(scores, tokens, **settings)
    w = _check_ints(weights, "weights", 2, "[D, N]")
    if w.shape[0] != orig.shape[1] or w.shape[1] < 1:
        raise ValueError(f"weights must have shape [D, N] = [{orig.shape[1]}, N >= 1] for tokens "
                         f"of D = {orig.shape[1]}, not {w.shape}")
    _check_range(w, "weights", ELEM_BITS_MAX)
    return a, orig, w


def focus_layer(scores, tokens, weights, keep, *, mode="spatial", order=None, word_bits=32,
                frame_stride, row_stride, theta_q, theta_bits=8, tile=1024, window=256,
                representative="first", dim=32):
    """One layer's GEMM through the whole Focus dataflow: SEC keeps tokens, SIC concentrates
    their sub-vectors, the Focus GEMM multiplies the unique vectors and scatters back.

    ``mask, _, _, maps, uniques = golden.focus(scores, tokens, keep, ...)`` then
    ``y = focus_gemm(uniques, maps, weights)``: row i of ``y`` is the output of the i-th kept token.

    Parameters
    ----------
    scores, tokens, keep, mode, order, word_bits, frame_stride, row_stride, theta_q, theta_bits,
    tile, window, representative, dim
        As for :func:`golden.focus`.
    weights : integer array [D, N]
        D = tokens' width (a multiple of ``dim``; see :func:`pad_reduction`).

    Returns
    -------
    (mask, y) : bool [M], int64 [n_kept, N].
    """
    _, _, w = check_layer_inputs(scores, tokens, weights, frame_stride=frame_stride,
                                 row_stride=row_stride, theta_q=theta_q, theta_bits=theta_bits,
                                 tile=tile, window=window, representative=representative, dim=dim)
    mask, _, _, maps, uniques = focus(scores, tokens, keep, mode=mode, order=order,
                                      word_bits=word_bits, frame_stride=frame_stride,
                                      row_stride=row_stride, theta_q=theta_q,
                                      theta_bits=theta_bits, tile=tile, window=window,
                                      representative=representative, dim=dim)
    return LayerResult(mask, focus_gemm(uniques, maps, w))
