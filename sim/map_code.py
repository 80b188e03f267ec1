"""The map code's RTL (spec 4.5, 4.6) behind :mod:`golden.map_code`.

- :func:`map_code`: the block matcher built with its map coder and frame statistics
  (``BlockMatcher(map_code=True, frame_stats=True)``) on one job: the words, ``nbits``, the
  symbol counts and the per-frame statistics, equal to ``golden.map_code.encode_map(
  match_codes(...))``, ``symbol_counts`` and ``frame_stats``.
- :func:`decode_map`: :class:`rtl.sic.map_decoder.MapDecoder` on one code, equal to
  :func:`golden.map_code.decode_map`; a code the RTL rejects raises ``ValueError`` starting with
  the RTL's cause (``MapDecodeError``), as golden's message does.
- :func:`run_decoder_jobs`: several decoder jobs (also malformed ones) through one simulation.

Amaranth simulator only. Every stream port has the project's protocol monitor.
"""

from dataclasses import dataclass

import numpy as np

from golden import map_code as gmc
from golden.block_match import check_config, check_positions
from rtl.codecs import decode_beats
from rtl.params import FocusParams
from rtl.sic.map_decoder import MapDecodeError, MapDecoder

from . import streams
from .block_match import Job, _check_job_inputs, run_jobs
from .streams import rtl_failures

__all__ = ["DecodeJob", "DecodeResult", "map_code", "decode_map", "run_decoder_jobs",
           "word_beats"]

_PORTS = ("cfg_stream", "i_stream", "pos_stream", "o_stream")


def map_code(vectors, positions, *, frame_stride, row_stride, theta_q, theta_bits=8, tile=1024,
             window=256, variable=False, ranking=None, params=None, stalls=0.0, seed=0):
    """The block matcher's map code of one job, from the RTL.

    Arguments as for :func:`sim.block_match.block_match`; ``variable`` and ``ranking`` as for
    :func:`golden.map_code.encode_map` (``ranking=None`` with ``variable``: the adaptive ranking
    of golden's symbols, given to the RTL as the job's setting). ``params.word_bits`` is the
    word width (default 32).

    Returns
    -------
    dict with ``words`` (list of int), ``nbits``, ``counts`` (8 symbol counts), ``frames``
    (int64 [F, 3]: tokens, matched, previous), ``map`` (the matcher's map) and ``cycles``.
    """
    orig, vec, pos, params = _check_job_inputs(vectors, positions, frame_stride, row_stride,
                                               theta_q, theta_bits, tile, window, "first",
                                               params, "amaranth")
    if vec.shape[0] == 0:
        raise ValueError("map_code needs at least one token: the RTL's job ends with the last "
                         "token's flag")
    if ranking is None:
        ranking = gmc.adaptive_ranking(gmc.match_codes(
            vec, pos, frame_stride=frame_stride, row_stride=row_stride, theta_q=theta_q,
            theta_bits=theta_bits, tile=tile, window=window)) if variable else tuple(range(8))
    ranking = gmc.check_ranking(ranking)
    job = Job(vec, pos, int(frame_stride), int(row_stride), variable=bool(variable),
              ranking=ranking)
    with rtl_failures("sim.map_code"):
        (result,) = run_jobs(params, [job], thetas=[int(theta_q)], stalls=stalls, seed=seed,
                             map_code=True, frame_stats=True)
        if result.error or result.code_error:
            raise RuntimeError("the block matcher or its map coder raised an error flag on a "
                               "job the golden model accepts")
    mp, _ = decode_beats(result.beats, params.dim, False)
    frames = np.array([[b["tokens"], b["matched"], b["previous"]] for b in result.frames],
                      dtype=np.int64).reshape(-1, 3)
    return {"words": [b["word"] for b in result.words], "nbits": result.words[-1]["nbits"],
            "counts": result.counts, "frames": frames, "map": mp, "cycles": result.cycles,
            "word_beats": result.words}


@dataclass
class DecodeJob:
    """One map-decoder job as the RTL gets it (no checks: malformed codes are allowed)."""
    words: list                     # ints of word_bits, at least one (the last carries nbits)
    nbits: int
    positions: np.ndarray           # [S >= 1]
    frame_stride: int
    row_stride: int


@dataclass
class DecodeResult:
    entries: list                   # o_stream beats (map, code, last)
    error: bool
    cause: str                      # MapDecodeError name ("NONE" without error)
    cycles: int


def word_beats(words, nbits, word_bits):
    """The ``i_stream`` beats of a code: ``nbits`` on the last word, the bits up to each word's
    end on the others (what the map coder writes)."""
    return [{"word": int(w), "nbits": int(nbits) if k == len(words) - 1 else (k + 1) * word_bits,
             "last": int(k == len(words) - 1)} for k, w in enumerate(words)]


def run_decoder_jobs(params, jobs, *, stalls=0.0, seed=0, max_cycles=None):
    """Run ``jobs`` (:class:`DecodeJob`) through one simulation of the map decoder; returns a
    list of :class:`DecodeResult`."""
    dut = MapDecoder(params)
    cfgs = [{"frame_stride": j.frame_stride, "row_stride": j.row_stride} for j in jobs]
    words, positions = [], []
    for j in jobs:
        if not j.words or not len(j.positions):
            raise ValueError("every decoder job needs at least one word and one position")
        words += word_beats(j.words, j.nbits, params.word_bits)
        count = len(j.positions)
        positions += [{"position": int(q), "last": int(n == count - 1)}
                      for n, q in enumerate(j.positions)]
    if max_cycles is None:
        p, forced = streams.stall_bounds(stalls, _PORTS)
        max_cycles = 2000 + forced + int(8 * (len(words) + len(positions) + 4 * len(jobs))
                                         / (1.0 - p) ** 2)
    idle = 0

    def until(run):
        nonlocal idle
        idle = idle + 1 if run.sent and not run.get(dut.busy) else 0
        return run.sent and idle >= 2

    run = streams.run_jobs(dut, [{"cfg_stream": cfgs, "i_stream": words,
                                  "pos_stream": positions}],
                           inputs=_PORTS[:3], outputs=_PORTS[3:], feed="parallel", end=None,
                           stalls=stalls, seed=seed, max_cycles=max_cycles,
                           trace=("error", "cause"), probes=("error", "cause"), until=until)
    cfg_cycles = run.transfers["cfg_stream"]
    if len(cfg_cycles) != len(jobs):
        raise RuntimeError(f"{len(cfg_cycles)} of {len(jobs)} configuration beats were taken")
    out_cycles, beats = run.transfers["o_stream"], run.beats["o_stream"]
    results = []
    for k in range(len(jobs)):
        begin = cfg_cycles[k]
        end = cfg_cycles[k + 1] if k + 1 < len(jobs) else None
        picked = [n for n, c in enumerate(out_cycles)
                  if c >= begin and (end is None or c < end)]
        if end is None:
            error, cause = run.final["error"], run.final["cause"]
        else:
            error, cause = run.trace["error"][end], run.trace["cause"][end]
        cycles = out_cycles[picked[-1]] - begin + 1 if picked else 0
        results.append(DecodeResult([beats[n] for n in picked], bool(error),
                                    MapDecodeError(streams._plain(cause)).name,
                                    cycles))
    return results


def decode_map(words, nbits, positions, *, frame_stride, row_stride, tile=1024, window=256,
               word_bits=32, params=None, stalls=0.0, seed=0):
    """:func:`golden.map_code.decode_map`, computed by the RTL: ``(map, codes)``.

    A code the RTL rejects raises ``ValueError("<CAUSE>: ...")``. Arguments that are bad for
    any code (geometry, positions' shape, words wider than ``word_bits``) raise golden's
    ``ValueError`` first. ``params`` must match ``tile``, ``window`` and ``word_bits`` (default:
    ``FocusParams(tile=tile, window=window, word_bits=word_bits)``).
    """
    check_config(frame_stride, row_stride, 0, 8, tile, window, "first")
    if np.ndim(positions) != 1:
        raise ValueError(f"positions must be 1-D (one per token), not shape "
                         f"{np.shape(positions)}")
    pos = check_positions(positions, np.shape(positions)[0])
    if params is None:
        params = FocusParams(tile=tile, window=window, word_bits=word_bits)
    for name, want in (("tile", tile), ("window", window), ("word_bits", word_bits)):
        if getattr(params, name) != want:
            raise ValueError(f"params.{name} = {getattr(params, name)} does not match "
                             f"{name} = {want}")
    values = [int(w) for w in words]
    if any(not 0 <= w < 1 << word_bits for w in values):
        raise ValueError(f"words must fit in word_bits = {word_bits}")
    if not values or not pos.size:
        raise ValueError("the RTL needs at least one word and one position (the streams' last "
                         "flags end a job)")
    with rtl_failures("sim.map_code"):
        (result,) = run_decoder_jobs(params, [DecodeJob(values, int(nbits), pos,
                                                        int(frame_stride), int(row_stride))],
                                     stalls=stalls, seed=seed)
    if result.error:
        raise ValueError(f"{result.cause}: the map decoder rejected the code")
    return (np.array([b["map"] for b in result.entries], dtype=np.int64),
            np.array([b["code"] for b in result.entries], dtype=np.int64))
