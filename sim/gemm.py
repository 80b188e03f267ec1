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
from dataclasses import dataclass

import numpy as np

from golden.gemm import (
    ELEM_BITS_MAX,
    check_coded_counts,
    check_coded_inputs,
    check_gemm_inputs,
    check_layer_inputs,
    decode_tile_maps,
    gemm_tiles,
)
from golden.results import LayerResult
from rtl.params import FocusParams
from rtl.sic.map_decoder import MapDecodeError
from rtl.tile.focus_gemm import FocusGemm
from rtl.top.focus_gemm_coded import FocusGemmCoded

from . import streams
from .focus import fit_params as unit_params
from .focus import focus
from .map_code import word_beats
from .runner import SIMULATORS, case_dir, check_simulator, run_cocotb
from .streams import RTLFailure, rtl_failures, run_streams

__all__ = ["SIMULATORS", "focus_gemm", "focus_layer", "fit_params", "check_params", "job_beats",
           "assemble", "focus_gemm_coded", "CodedJob", "coded_job", "run_coded_jobs"]


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
    a, orig, w = check_layer_inputs(scores, tokens, weights, frame_stride=frame_stride,
                                    row_stride=row_stride, theta_q=theta_q,
                                    theta_bits=theta_bits, tile=tile, window=window,
                                    representative=representative, dim=dim)
    if params is None:
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
    return LayerResult(mask, y)


# ---- the coded variant: FocusGemmCoded ------------------------------------------------------

_CODED_INPUTS = ("cfg_stream", "w_stream", "u_stream", "code_stream", "pos_stream")


@dataclass
class CodedJob:
    """One :class:`FocusGemmCoded` job as the RTL gets it: ``beats`` ({input port: payloads}),
    ``tiles`` (the output blocks in result order, as :func:`job_beats` gives them), ``count``
    (result beats) and ``rows``, ``n`` (the result's shape)."""
    beats: dict
    tiles: list
    count: int
    rows: int
    n: int


def coded_job(us, codes, pos, w, fs, hs, params, counts):
    """The beats of one coded job (arguments checked by :func:`golden.gemm.check_coded_inputs`):
    per output block and chunk, the weight rows, the chunk's unique vectors (``counts[t][c]`` of
    them, the next ones of ``us[c]``; a count of None, for a code golden rejects, sends one zero
    vector instead: the RTL must reject that code), the code's words and the rows' positions."""
    p = params
    dim, tile = p.dim, p.tile
    n = w.shape[1]
    cols = -(-n // dim)
    wp = np.pad(w, ((0, 0), (0, cols * dim - n)))
    columns = len(us)
    beats = {"cfg_stream": [{"frame_stride": fs, "row_stride": hs, "columns": columns,
                             "passes": len(codes) * cols}],
             "w_stream": [], "u_stream": [], "code_stream": [], "pos_stream": []}
    tiles = []
    first = [0] * columns
    for t, row in enumerate(codes):
        start, stop = t * tile, min((t + 1) * tile, pos.size)
        vectors = []
        for c, count in enumerate(counts[t]):
            if count is None:
                vectors.append([[0] * dim])
            else:
                vectors.append(us[c][first[c]:first[c] + count].tolist())
                first[c] += count
        for col in range(cols):
            tiles.append((start, stop, col))
            for c, (words, nbits) in enumerate(row):
                block = wp[c * dim:(c + 1) * dim, col * dim:(col + 1) * dim]
                beats["w_stream"].extend({"w": r} for r in block.tolist())
                beats["u_stream"].extend({"x": v, "last": int(i == len(vectors[c]) - 1)}
                                         for i, v in enumerate(vectors[c]))
                beats["code_stream"].extend(word_beats(words, nbits, p.word_bits))
                beats["pos_stream"].extend({"position": int(q), "last": int(q_i == stop - 1)}
                                           for q_i, q in enumerate(pos[start:stop], start))
    return CodedJob(beats, tiles, _result_beats(tiles, p.scatter_rows), pos.size, n)


def run_coded_jobs(params, jobs, *, stalls=0.0, seed=0, max_cycles=None):
    """Run :class:`CodedJob` s through one simulation of :class:`FocusGemmCoded` (every input
    port fed back to back, the protocol monitor on every stream port). Returns, per job, a dict
    with ``y`` (int64 [rows, n], assembled from its result beats), ``error`` and ``cause``
    (the flags as the job ended: at the next job's configuration beat, or at the end), ``cycles``
    (its first input to its last result, inclusive) and ``transfers``; and ``idle`` (``busy``
    low at the end)."""
    dut = FocusGemmCoded(params)
    run = streams.run_jobs(dut, [{**j.beats, "o_stream": j.count} for j in jobs],
                           inputs=_CODED_INPUTS, outputs=("o_stream",), feed="parallel",
                           stalls=stalls, seed=seed, max_cycles=max_cycles,
                           count_from=_CODED_INPUTS[1:], trace=("error", "cause"),
                           probes=("error", "cause", "busy"), linger=2)
    cfg = run.transfers["cfg_stream"]
    results = []
    for k, (job, record) in enumerate(zip(jobs, run.jobs, strict=True)):
        if k + 1 < len(jobs):
            error, cause = run.trace["error"][cfg[k + 1]], run.trace["cause"][cfg[k + 1]]
        else:
            error, cause = run.final["error"], run.final["cause"]
        y = assemble(record["outputs"]["o_stream"], job.tiles, job.rows, job.n, params)
        results.append({"y": y, "error": bool(error),
                        "cause": MapDecodeError(streams._plain(cause)).name,
                        "cycles": record["cycles"],
                        "transfers": {port: len(c) for port, c in record["inputs"].items()},
                        "idle": not run.final["busy"]})
    return results


def focus_gemm_coded(uniques, map_codes, positions, weights, *, frame_stride, row_stride, tile,
                     window=256, word_bits=32, params=None, stalls=0.0, stats=None, seed=0):
    """:func:`golden.gemm.focus_gemm_coded`, computed by
    :class:`rtl.top.focus_gemm_coded.FocusGemmCoded` (Amaranth simulator): the same int64
    [S, N] result, and the same ``ValueError`` for input that is bad for any code.

    A code the RTL rejects raises ``ValueError("<CAUSE>: the tile's map decoder rejected a map
    code")`` (golden's message starts with the same cause; with several faults in one code the
    cause can differ, see :class:`rtl.sic.map_decoder.MapDecoder`); ``RTLFailure`` when the RTL
    and golden disagree on whether the job is valid.

    Parameters
    ----------
    uniques, map_codes, positions, weights, frame_stride, row_stride, tile, window, word_bits
        As for :func:`golden.gemm.focus_gemm_coded`.
    params : FocusParams or None
        None: :func:`fit_params` with this ``tile``, ``window`` and ``word_bits``; given ones must
        match them and fit the data (:func:`check_params`).
    stalls, seed
        As for :func:`focus_gemm` (the inputs are ``cfg_stream``, ``w_stream``, ``u_stream``,
        ``code_stream`` and ``pos_stream``).
    stats : dict or None
        Filled with ``cycles`` (first weight row, vector, word or position in to last result
        out, inclusive) and ``transfers`` per input port.
    """
    us, codes, pos, w, fs, hs, tile, window, word_bits = check_coded_inputs(
        uniques, map_codes, positions, weights, frame_stride=frame_stride,
        row_stride=row_stride, tile=tile, window=window, word_bits=word_bits)
    # Golden's verdict, per code: the groups it opens, or None if decode_map rejects it.
    counts, rejected = [], None
    for t, row in enumerate(codes):
        counts.append([])
        for code in row:
            try:
                _, (opened,) = decode_tile_maps([[code]], pos[t * tile:(t + 1) * tile], 1,
                                                frame_stride=fs, row_stride=hs, tile=tile,
                                                window=window, word_bits=word_bits)
                counts[-1].append(opened[0])
            except ValueError as exc:
                rejected = rejected or str(exc)
                counts[-1].append(None)
    if rejected is None:
        check_coded_counts(us, counts)
    if params is None:
        needed = max(_signed_bits(w), *(_signed_bits(u) for u in us))
        params = fit_params(us[0].shape[1], tile, min(ELEM_BITS_MAX, needed)).replace(
            window=window, word_bits=word_bits)
    for name, want in (("tile", tile), ("window", window), ("word_bits", word_bits)):
        if getattr(params, name) != want:
            raise ValueError(f"params.{name} = {getattr(params, name)} does not match "
                             f"{name} = {want}")
    check_params(params, us, w)
    if pos.size == 0:
        if stats is not None:
            stats.update(cycles=0)
        return np.zeros((0, w.shape[1]), np.int64)
    job = coded_job(us, codes, pos, w, fs, hs, params, counts)
    with rtl_failures("sim.gemm.focus_gemm_coded"):
        (result,) = run_coded_jobs(params, [job], stalls=stalls, seed=seed)
    if result["error"] != (rejected is not None) or not result["idle"]:
        raise RTLFailure(f"FocusGemmCoded: error = {result['error']} ({result['cause']}), "
                         f"idle = {result['idle']}, but golden "
                         f"{'rejects: ' + rejected if rejected else 'accepts the job'}")
    if result["error"]:
        raise ValueError(f"{result['cause']}: the tile's map decoder rejected a map code")
    if stats is not None:
        stats.update(cycles=result["cycles"], transfers=result["transfers"])
    return result["y"]
