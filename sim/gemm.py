"""The Focus GEMM's RTL (:class:`rtl.tile.focus_gemm.FocusGemm`) behind :func:`golden.focus_gemm`,
and the whole Focus dataflow (FocusUnit into FocusGemm) behind :func:`golden.focus_layer`.

:func:`focus_gemm` feeds the RTL the way a host would (:func:`job_beats`): rows in output tiles of
``params.tile`` rows (:func:`golden.gemm.gemm_tiles`), each tile once per ``dim``-wide column tile
of W (the last one padded with zero columns, dropped from the result), and per chunk c of K the
``dim`` rows of W's block, the tile's unique vectors of column c, and its local map. It returns
what :func:`golden.focus_gemm` returns and raises the same ``ValueError`` for the same bad input.
"""

import itertools
import os

import numpy as np

from golden.gemm import ELEM_BITS_MAX, check_gemm_inputs, gemm_tiles
from rtl.params import FocusParams
from rtl.tile.focus_gemm import FocusGemm

from .runner import SIMULATORS, case_dir, check_simulator, run_cocotb
from .streams import run_streams

__all__ = ["SIMULATORS", "focus_gemm", "focus_layer", "fit_params", "check_params", "job_beats",
           "assemble"]


_BLOCK = "focus_gemm"
_job_numbers = itertools.count()
_INT32 = (1 << 31) - 1


def _bits(value):
    """Bits of the narrowest signed type holding ``value``."""
    return (value if value >= 0 else -value - 1).bit_length() + 1


def _signed_bits(a):
    """Bits of the narrowest signed type (at least 2) holding every element of ``a``."""
    a = np.asarray(a)
    return max(2, _bits(int(a.min())), _bits(int(a.max()))) if a.size else 2


def fit_params(dim, rows, elem_bits_needed, scatter_rows=2):
    """The :class:`FocusParams` :func:`focus_gemm` uses when given none: ``dim`` = V,
    ``tile`` = min(rows, 1024) (at least 1), ``elem_bits`` 8 (or wider, as the data needs), and
    ``scatter_rows``."""
    return FocusParams(dim=dim, tile=max(1, min(rows, 1024)), elem_bits=max(8, elem_bits_needed),
                       scatter_rows=scatter_rows)


def check_params(params, us, w):
    """``ValueError`` unless ``params`` (a :class:`FocusParams`) fits the job: ``dim`` = V, the
    elements within ``elem_bits``, and every result within the int32 buffer (bounded by
    ``|X'| @ |W|``; with int8 data any K up to 131 071 fits)."""
    if not isinstance(params, FocusParams):
        raise TypeError(f"params must be a FocusParams, not {params!r}")
    dim = us[0].shape[1]
    if params.dim != dim:
        raise ValueError(f"params.dim = {params.dim} does not match V = {dim} of uniques")
    for name, a in [*((f"uniques[{c}]", u) for c, u in enumerate(us)), ("weights", w)]:
        if _signed_bits(a) > params.elem_bits:
            raise ValueError(f"{name} has elements outside the signed {params.elem_bits}-bit range "
                             f"of params.elem_bits: min {a.min()}, max {a.max()}")
    # The largest |result| is at most sum_k max|X'[:, k]| * |W[k, n]|.
    peak = np.concatenate([np.abs(u).max(axis=0) if len(u) else np.zeros(dim, np.int64)
                           for u in us])
    bound = int((peak.astype(object) @ np.abs(w).astype(object)).max())
    if bound > _INT32:
        raise ValueError(f"results may reach {bound}, beyond the int32 accumulation buffer "
                         f"(|uniques| @ |weights| bounds them): split K")


def job_beats(us, mp, w, params):
    """The beats of one job: ``(beats, tiles)`` with ``beats`` = {port: [payload, ...]} for
    ``w_stream``, ``u_stream`` and ``map_stream``, and ``tiles`` the list of ``(start, stop, col)``
    output blocks in the order their results leave (see the module doc)."""
    p = params
    dim, sr = p.dim, p.scatter_rows
    n = w.shape[1]
    cols = -(-n // dim)
    wp = np.pad(w, ((0, 0), (0, cols * dim - n)))
    beats = {"w_stream": [], "u_stream": [], "map_stream": []}
    tiles = []
    for start, stop, chunks in gemm_tiles(mp, p.tile):
        for col in range(cols):
            tiles.append((start, stop, col))
            for c, (refs, local) in enumerate(chunks):
                block = wp[c * dim:(c + 1) * dim, col * dim:(col + 1) * dim]
                beats["w_stream"].extend({"w": row} for row in block.tolist())
                vectors = us[c][refs].tolist()
                beats["u_stream"].extend({"x": v, "last": int(i == len(vectors) - 1)}
                                         for i, v in enumerate(vectors))
                index = np.pad(local, (0, -len(local) % sr)).reshape(-1, sr).tolist()
                final = int(c == len(chunks) - 1)
                beats["map_stream"].extend({"index": e, "last": int(i == len(index) - 1),
                                            "final": final} for i, e in enumerate(index))
    return beats, tiles


def _result_beats(tiles, sr):
    return sum(-(-(stop - start) // sr) for start, stop, _ in tiles)


def assemble(results, tiles, rows, n, params):
    """Y [rows, n] (int64) from the result beats (each ``{"y": [[...] * dim] * sr, "last"}``) of
    the output blocks ``tiles``; checks each block ends with ``last``."""
    dim, sr = params.dim, params.scatter_rows
    y = np.zeros((rows, -(-n // dim) * dim), np.int64)
    at = 0
    for start, stop, col in tiles:
        count = -(-(stop - start) // sr)
        block = results[at:at + count]
        at += count
        if [b["last"] for b in block] != [0] * (count - 1) + [1]:
            raise AssertionError(f"rows {start}:{stop}, column tile {col}: the result beats' last "
                                 f"flags are {[b['last'] for b in block]}")
        values = np.array([b["y"] for b in block], np.int64).reshape(count * sr, dim)
        y[start:stop, col * dim:(col + 1) * dim] = values[:stop - start]
    return y[:, :n]


def focus_gemm(uniques, maps, weights, *, params=None, simulator="amaranth", stalls=0.0,
               stats=None, seed=0):
    """:func:`golden.focus_gemm`, computed by :class:`rtl.tile.focus_gemm.FocusGemm`: the same int64
    [S, N] result for the same arguments, and the same ``ValueError`` for the same bad input.

    Parameters
    ----------
    uniques, maps, weights
        As for :func:`golden.focus_gemm`.
    params : FocusParams or None
        None fits them to the data (:func:`fit_params`); given ones must have ``dim`` = V, hold
        the elements in ``elem_bits`` and the results in int32 (:func:`check_params`). ``tile``
        is the output tile's rows, ``scatter_rows`` the scatter stage's rows per cycle.
    simulator : str
        ``"amaranth"``, ``"icarus"`` or ``"verilator"``.
    stalls : float or dict
        Probability of an input idle (on each of the three input streams) and of an output
        back-pressure cycle, seeded by ``seed``; with ``simulator="amaranth"`` also a
        ``{port: probability or sim.streams.Stalls}`` dict (ports not named never stall), as
        :func:`sim.streams.run_streams` takes it.
    stats : dict or None
        Filled with ``cycles`` (first weight row in to last result out, inclusive: equal to
        :func:`golden.gemm_cycles.focus_gemm_cycles` without stalls), ``chunks``, ``vectors``
        (unique vectors through the array), ``rows`` (rows scattered, over all chunks) and
        ``transfers`` per port.

    Returns
    -------
    int64 array [S, N].
    """
    us, mp, w = check_gemm_inputs(uniques, maps, weights)
    check_simulator(simulator)
    rows, n = mp.shape[0], w.shape[1]
    if params is None:
        needed = max(_signed_bits(w), *(_signed_bits(u) for u in us))
        params = fit_params(us[0].shape[1], rows, min(ELEM_BITS_MAX, needed))
    check_params(params, us, w)
    if rows == 0:
        if stats is not None:
            stats.update(cycles=0, chunks=0, vectors=0, rows=0)
        return np.zeros((0, n), np.int64)
    beats, tiles = job_beats(us, mp, w, params)
    count = _result_beats(tiles, params.scatter_rows)
    if simulator == "amaranth":
        outputs, run = run_streams(FocusGemm(params), beats, {"o_stream": count}, stalls=stalls,
                                   seed=seed)
        results = outputs["o_stream"]
    else:
        results, run = _cocotb_run(params, beats, count, simulator, stalls, seed)
    if stats is not None:
        scattered = sum(stop - start for start, stop, _ in tiles) * mp.shape[1]
        stats.update(cycles=run["cycles"], chunks=len(tiles) * mp.shape[1],
                     vectors=len(beats["u_stream"]), rows=scattered,
                     transfers=run["transfers"])
    return assemble(results, tiles, rows, n, params)


def _cocotb_run(params, beats, count, simulator, stalls, seed):

    directory = case_dir(_BLOCK, params, simulator, "job")
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"job-{os.getpid()}-{next(_job_numbers)}"
    job_in, job_out = stem.with_suffix(".in.npz"), stem.with_suffix(".out.npz")
    sr = params.scatter_rows
    u = beats["u_stream"]
    mb = beats["map_stream"]
    np.savez(job_in,
             w=np.array([b["w"] for b in beats["w_stream"]], np.int64).reshape(-1, params.dim),
             u=np.array([b["x"] for b in u], np.int64).reshape(-1, params.dim),
             u_last=np.array([b["last"] for b in u], np.int64),
             index=np.array([b["index"] for b in mb], np.int64).reshape(-1, sr),
             m_last=np.array([b["last"] for b in mb], np.int64),
             m_final=np.array([b["final"] for b in mb], np.int64),
             count=int(count), stalls=float(stalls), seed=int(seed))
    job_out.unlink(missing_ok=True)
    run_cocotb(_BLOCK, params, test_module="sim.tb.focus_gemm", simulator=simulator,
               case="job", testcase="job",
               extra_env={"FOCUS_JOB": str(job_in), "FOCUS_JOB_OUT": str(job_out)})
    with np.load(job_out) as out:
        ys, lasts = out["y"], out["last"]
        run = {"cycles": int(out["cycles"]),
               "transfers": {port: int(out[f"transfers_{port}"])
                             for port in ("w_stream", "u_stream", "map_stream", "o_stream")}}
    job_in.unlink()
    job_out.unlink()
    results = [{"y": y.tolist(), "last": int(last)} for y, last in zip(ys, lasts, strict=True)]
    return results, run


def focus_layer(scores, tokens, weights, keep, *, mode="spatial", order=None, word_bits=32,
                frame_stride, row_stride, theta_q, theta_bits=8, tile=1024, window=256,
                representative="first", dim=32, params=None, simulator="amaranth", stalls=0.0,
                stats=None, seed=0):
    """:func:`golden.focus_layer` on the RTL: the job runs through
    :class:`rtl.top.focus_unit.FocusUnit` (:func:`sim.focus`), and the unit's own keep mask, maps
    and unique vectors go into :class:`rtl.tile.focus_gemm.FocusGemm` (:func:`focus_gemm`), both on
    ``simulator`` and under ``stalls``, built for the one ``params`` (the unit's SIC tile is the
    GEMM's output tile).

    ``stats`` gets ``unit`` (the stats of :func:`sim.focus`), ``gemm`` (those of
    :func:`focus_gemm`) and ``cycles`` (their sum: the two run one after the other here).

    Returns
    -------
    (mask, y), as :func:`golden.focus_layer`.
    """
    from golden.focus import check_focus_inputs
    from golden.gemm import _check_ints, _check_range

    from .focus import focus

    a, orig, _ = check_focus_inputs(scores, tokens, frame_stride=frame_stride,
                                    row_stride=row_stride, theta_q=theta_q,
                                    theta_bits=theta_bits, tile=tile, window=window,
                                    representative=representative, dim=dim)
    w = _check_ints(weights, "weights", 2, "[D, N]")
    if w.shape[0] != orig.shape[1] or w.shape[1] < 1:
        raise ValueError(f"weights must have shape [D, N] = [{orig.shape[1]}, N >= 1] for tokens "
                         f"of D = {orig.shape[1]}, not {w.shape}")
    _check_range(w, "weights", ELEM_BITS_MAX)
    if params is None:
        from .focus import fit_params as unit_params

        score_bits = max(1, int(a.max()).bit_length())
        elem_bits = max(_signed_bits(np.asarray(orig, np.int64)), _signed_bits(w))
        params = unit_params(a.shape[1], score_bits, min(ELEM_BITS_MAX, elem_bits),
                             word_bits=word_bits, theta_bits=theta_bits, tile=tile,
                             window=window, dim=dim)
    unit_stats, gemm_stats = {}, {}
    mask, _, _, maps, uniques = focus(scores, tokens, keep, mode=mode, order=order,
                                      word_bits=word_bits, frame_stride=frame_stride,
                                      row_stride=row_stride, theta_q=theta_q,
                                      theta_bits=theta_bits, tile=tile, window=window,
                                      representative=representative, dim=dim, params=params,
                                      simulator=simulator, stalls=stalls, stats=unit_stats,
                                      seed=seed)
    y = focus_gemm(uniques, maps, w, params=params, simulator=simulator, stalls=stalls,
                   stats=gemm_stats, seed=seed)
    if stats is not None:
        stats.update(unit=unit_stats, gemm=gemm_stats,
                     cycles=unit_stats.get("cycles", 0) + gemm_stats["cycles"])
    return mask, y
