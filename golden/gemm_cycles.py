"""The analytic cycle model of the Focus GEMM (:class:`rtl.tile.focus_gemm.FocusGemm`).

A job is a sequence of chunks in stream order (output tile after output tile, each tile's chunks
in K order). Chunk j has p_j unique vectors and belongs to a tile of m_j rows. With R = ``dim``
(the array is R x R), L = 2R (:func:`rtl.tile.systolic_array.array_latency` of the array with its
product register) and B_j = ceil(m_j / scatter_rows), the RTL without stalls follows exactly::

    v_j = max(w_j + R, a_{j-2} + B_{j-2})   first unique vector in: after the chunk's R weight
                                            rows, and once its partial-sum bank (the one chunk j-2
                                            used) has been read by the scatter stage
    e_j = v_j + p_j - 1 + L                 last partial-sum row written
    w_{j+1} = e_j + 1                       next weight row: the array has drained
    a_j = max(e_j + 1, a_{j-1} + B_{j-1})   first map beat: the bank is full, the stage is free

from w_0 = 0 (the first weight row is the job's first input transfer), and the last result leaves
``SCATTER_LATENCY`` cycles after the last chunk's last map beat: ``cycles = a_n + B_n + 1``
counted inclusively from cycle 0, i.e. the job's ``stats["cycles"]``.

So a chunk costs the array ``p_j + 3R`` cycles (``chunk_overhead = 3R``: R weight rows and the
drain) and the scatter stage B_j; the two overlap through the two banks, and a long run of equal
chunks costs ``max(p + 3R, ceil(m / scatter_rows))`` cycles each.

:func:`gemm_cycles` takes ``(count, p, m)`` runs of equal chunks and is exact for any count: the
recurrence's state, relative to its latest time, becomes periodic after a few chunks, and whole
periods are then skipped, so a whole model's layers (millions of chunks) take microseconds.
"""

from .block_match import _check_int
from .gemm import gemm_tiles

__all__ = ["SCATTER_LATENCY", "chunk_overhead", "gemm_cycles", "job_chunks", "focus_gemm_cycles",
           "dense_gemm_cycles", "tile_rows", "steady_chunk_cycles"]

#: Cycles from the last chunk's last map beat to the last result beat on o_stream, the beat's own
#: cycle not counted (the buffer read, its data registered, the forwarding of the writes the read
#: missed, then the adders into the output register):
#: rtl.tile.scatter_stage.scatter_latency().
SCATTER_LATENCY = 4

_NEVER = float("-inf")


def _cdiv(a, b):
    return -(-a // b)


def chunk_overhead(dim):
    """Array cycles of a chunk besides its p unique vectors: ``dim`` weight rows and the
    ``2*dim`` cycles of the drain, ``3*dim``."""
    return 3 * _check_int(dim, "dim", 1)


def steady_chunk_cycles(p, m, dim, scatter_rows):
    """Cycles per chunk in a long run of equal chunks: ``max(p + 3*dim, ceil(m/scatter_rows))``
    (the array or the scatter stage, whichever is slower)."""
    return max(p + chunk_overhead(dim), _cdiv(m, _check_int(scatter_rows, "scatter_rows", 1)))


def gemm_cycles(runs, dim, scatter_rows):
    """Cycles of a Focus GEMM job without stalls, from the first weight row in to the last result
    out, inclusive.

    Parameters
    ----------
    runs : iterable of (count, p, m)
        Runs of ``count`` equal chunks, in stream order, each with ``p`` >= 1 unique vectors in a
        tile of ``m`` >= 1 rows (p <= m).
    dim, scatter_rows : int
        The array's rows and columns, and the scatter stage's rows per cycle.

    Returns
    -------
    int (0 for no chunks).
    """
    R = _check_int(dim, "dim", 1)
    rows = _check_int(scatter_rows, "scatter_rows", 1)
    L = 2 * R
    # State: next weight row w, end of the scatter stage's last chunk, the bank-free times of the
    # last two chunks (older first).
    w, stage, free = 0, _NEVER, (_NEVER, _NEVER)
    any_chunk = False
    for count, p, m in runs:
        count, p, m = _check_int(count, "count", 0), _check_int(p, "p", 1), _check_int(m, "m", 1)
        if count == 0:
            continue
        any_chunk = True
        B = _cdiv(m, rows)
        seen = {}
        j = 0
        while j < count:
            key = (stage - w, free[0] - w, free[1] - w)
            if key in seen and all(x != _NEVER for x in key):
                j0, w0 = seen[key]
                period, shift = j - j0, w - w0
                skip = (count - j) // period
                if skip:
                    delta = skip * shift
                    w, stage = w + delta, stage + delta
                    free = (free[0] + delta, free[1] + delta)
                    j += skip * period
                    seen = {}
                    continue
            seen[key] = (j, w)
            v = max(w + R, free[0])
            e = v + p - 1 + L
            a = max(e + 1, stage)
            w, stage, free = e + 1, a + B, (free[1], a + B)
            j += 1
    if not any_chunk:
        return 0
    # The last map beat was taken at stage - 1; its results leave SCATTER_LATENCY cycles later.
    return int(stage - 1 + SCATTER_LATENCY + 1)


def tile_rows(rows, tile):
    """Rows of each output tile when ``rows`` rows go in tiles of ``tile``: ``(count, m)`` runs."""
    rows, tile = _check_int(rows, "rows", 0), _check_int(tile, "tile", 1)
    full, rest = divmod(rows, tile)
    return [(n, m) for n, m in ((full, tile), (1, rest)) if n and m]


def job_chunks(maps, tile, n_cols, dim):
    """The ``(1, p, m)`` chunk runs of a Focus GEMM job in the order the RTL driver streams them:
    output row tile by row tile (:func:`golden.gemm.gemm_tiles`), then column tile by column tile
    (``ceil(n_cols / dim)`` of them), then chunk by chunk."""
    n_tiles = _cdiv(_check_int(n_cols, "n_cols", 1), _check_int(dim, "dim", 1))
    runs = []
    for start, stop, chunks in gemm_tiles(maps, tile):
        for _ in range(n_tiles):
            runs.extend((1, len(refs), stop - start) for refs, _ in chunks)
    return runs


def focus_gemm_cycles(maps, n_cols, params):
    """Cycles of ``sim.focus_gemm(uniques, maps, weights)`` with N = ``n_cols`` without stalls,
    for :class:`rtl.params.FocusParams` ``params`` (``dim``, ``tile``, ``scatter_rows``)."""
    return gemm_cycles(job_chunks(maps, params.tile, n_cols, params.dim), params.dim,
                       params.scatter_rows)


def dense_gemm_cycles(rows, k, n_cols, params):
    """Cycles of the dense GEMM (every row unique, maps the identity) of X [rows, k] by
    W [k, n_cols] on the same hardware: every chunk has p = m."""
    rows, k = _check_int(rows, "rows", 0), _check_int(k, "k", 1)
    chunks = _cdiv(k, params.dim) * _cdiv(_check_int(n_cols, "n_cols", 1), params.dim)
    return gemm_cycles([(count * chunks, m, m) for count, m in tile_rows(rows, params.tile)],
                       params.dim, params.scatter_rows)
