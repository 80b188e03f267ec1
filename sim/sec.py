"""SEC's importance analyzer and top-k selector behind the signatures of :func:`golden.importance`
and :func:`golden.topk_mask` (spec 3.1, 3.2 and 6).

:func:`importance` runs :class:`rtl.sec.importance_analyzer.ImportanceAnalyzer` (with ``readout=1``)
and :func:`topk_mask` runs :class:`rtl.sec.topk_selector.TopKSelector` (with the vector on
``i_stream``) in the Amaranth simulator, or their emitted Verilog under cocotb on Icarus or
Verilator (:mod:`sim.tb.importance_topk`). Both return what ``golden`` returns for the same
arguments and raise the same ``ValueError`` for the same bad input.

The lower-level pieces are shared with the tests and the cocotb testbench: the beat builders
(:func:`score_beats`, :func:`vector_beats`), the decoders (:func:`vector_from_beats`,
:func:`mask_from_beats`), the configuration payloads, and :func:`run_jobs`, which runs several
jobs back to back in one Amaranth simulation with a protocol monitor on every stream port and a
per-cycle record of ``error``/``busy``/``done``.
"""

import itertools
import os

import numpy as np
from amaranth.sim import Simulator

from golden.sec import MODES, _unsigned, check_keep, check_scores
from rtl.params import FocusParams, check_limit
from rtl.sec.importance_analyzer import ROWS_BITS, Dataflow, ImportanceAnalyzer
from rtl.sec.topk_selector import TopKSelector

from .streams import (
    CLOCK_PERIOD,
    rtl_failures,
    stall_sources,
    stream_get,
    stream_monitor,
    stream_put,
)

__all__ = ["SIMULATORS", "importance", "topk_mask", "fit_params", "score_beats", "vector_beats",
           "vector_from_beats", "mask_from_beats", "analyzer_config", "selector_config",
           "run_jobs", "check_vector", "topk_cases", "importance_cases", "SCORE_KINDS"]

SIMULATORS = ("amaranth", "icarus", "verilator")

_job_numbers = itertools.count()


# ---- input checks and parameters ----------------------------------------------------------------

def check_vector(s):
    """The importance vector as an unsigned 1-D array; ``ValueError`` as in golden.topk_mask."""
    a = np.asarray(s)
    if a.ndim != 1:
        raise ValueError(f"s must be 1-D (one score per token), not shape {a.shape}")
    if a.size == 0:
        raise ValueError("s is empty: M must be >= 1")
    return _unsigned(a, "s")


def _check_simulator(simulator):
    if simulator not in SIMULATORS:
        raise ValueError(f"Unknown simulator {simulator!r}: it must be one of "
                         f"{', '.join(SIMULATORS)}")


def _needed_bits(a):
    return max(1, int(a.max()).bit_length()) if a.size else 1


def fit_params(M, score_bits_needed=1, sorter="bubble"):
    """The :class:`FocusParams` used when none is given: the default with ``tokens`` raised to M
    and ``score_bits`` raised to what the data needs (up to 32)."""
    check_limit("tokens", M, "M")
    if score_bits_needed > 32:
        raise ValueError(f"scores need {score_bits_needed} bits; at most 32 are supported")
    d = FocusParams()
    return d.replace(tokens=max(d.tokens, M), score_bits=max(d.score_bits, score_bits_needed),
                     sorter=sorter)


def _check_params(params, M, a, what):
    if not isinstance(params, FocusParams):
        raise TypeError(f"params must be a FocusParams, not {params!r}")
    if M > params.tokens:
        raise ValueError(f"M = {M} > tokens = {params.tokens}: the importance buffer holds at most "
                         f"tokens scores")
    if a.size and int(a.max()) >> params.score_bits:
        raise ValueError(f"{what} must fit in score_bits = {params.score_bits} bits: the largest "
                         f"is {int(a.max())}")


# ---- payloads -----------------------------------------------------------------------------------

def _pad(values, lanes):
    values = [int(v) for v in values]
    return {"scores": values + [0] * (lanes - len(values))}


def score_beats(scores, mode, lanes):
    """The ``i_stream`` beats of an [R, M] score matrix in ``mode`` (spec 3.1), padded with 0."""
    scores = np.asarray(scores)
    R, M = scores.shape
    if mode == "spatial":
        return [_pad(scores[r, b:b + lanes], lanes) for r in range(R) for b in range(0, M, lanes)]
    return [_pad(scores[b:b + lanes, j], lanes) for j in range(M) for b in range(0, R, lanes)]


def vector_beats(s, lanes):
    """The ceil(M/lanes) beats of an importance vector, padded with 0."""
    return [_pad(s[b:b + lanes], lanes) for b in range(0, len(s), lanes)]


def vector_from_beats(beats, M):
    """The importance vector from ``o_stream`` beats; the padding lanes must be 0."""
    values = [v for beat in beats for v in beat["scores"]]
    if any(values[M:]):
        raise AssertionError(f"padding lanes past M = {M} are not 0: {values[M:]}")
    return np.array(values[:M], dtype=np.uint64)


def mask_from_beats(beats, M, lanes):
    """The bool mask from mask beats; checks ``last`` (only on the final beat) and zero padding."""
    bits = []
    for n, beat in enumerate(beats):
        if beat["last"] != (n == len(beats) - 1):
            raise AssertionError(f"mask beat {n} of {len(beats)} has last = {beat['last']}")
        bits += [(beat["keep"] >> i) & 1 for i in range(lanes)]
    if any(bits[M:]):
        raise AssertionError(f"mask padding bits past M = {M} are not 0: {bits[M:]}")
    return np.array(bits[:M], dtype=bool)


def analyzer_config(M, R, mode, readout=1):
    return {"M": int(M), "R": int(R), "mode": Dataflow[mode.upper()], "readout": int(readout)}


def selector_config(params, M, keep, preloaded=0):
    """The selector's configuration beat; ``keep`` saturates at the field's largest value (which
    is >= tokens >= M, so the meaning is unchanged)."""
    return {"M": int(M), "keep": min(int(keep), (1 << params.count_bits) - 1),
            "preloaded": int(preloaded)}


# ---- the Amaranth simulator ---------------------------------------------------------------------

def run_jobs(dut, jobs, *, stalls=0.0, seed=0, max_cycles=None, watch=("error", "busy", "done")):
    """Run ``jobs`` back to back on ``dut`` (an analyzer or a selector) in one simulation.

    Each job is a dict with ``cfg`` (the configuration payload), ``beats`` (``i_stream``
    payloads) and ``outputs`` (``o_stream`` beats expected). A job's configuration beat is sent
    once the previous job's outputs have all arrived, and its beats right after it. ``stalls`` (a
    probability, or a ``{port: Stalls or float}`` dict) idles the ``cfg_stream``/``i_stream``
    sources and back-pressures ``o_stream``. A protocol monitor watches all three ports.

    Returns ``(results, trace)``: per job a dict with ``outputs`` (plain payloads), ``cycles``
    (first ``i_stream`` transfer to last ``o_stream`` transfer, inclusive; 0 without either),
    ``cfg_cycle``, ``first_input``, ``last_input``, ``last_output``; and ``trace``, per watched
    member the list of its value in every cycle (cycle n ends with the n-th clock edge).
    """
    ports = ("cfg_stream", "i_stream", "o_stream")
    sources = stall_sources(stalls, ports, seed)
    if max_cycles is None:
        beats = sum(len(j["beats"]) + j["outputs"] + 1 for j in jobs)
        p = max(s.p for s in sources.values())
        max_cycles = 2000 + int(4 * beats / (1.0 - p))
    watch = [name for name in watch if hasattr(dut, name)]
    transfers = {port: [] for port in ports}
    trace = {name: [] for name in watch}
    received = []
    state = {"finished": False}

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    for port in ports:
        sim.add_testbench(stream_monitor(getattr(dut, port), port, transfers[port]),
                          background=True)

    async def driver(ctx):
        for n, job in enumerate(jobs):
            while len(received) < n:
                await ctx.tick()
            await stream_put(ctx, dut.cfg_stream, [job["cfg"]], sources["cfg_stream"])
            await stream_put(ctx, dut.i_stream, job["beats"], sources["i_stream"])

    async def sink(ctx):
        for job in jobs:
            received.append(await stream_get(ctx, dut.o_stream, job["outputs"],
                                             sources["o_stream"]))
        # Let a job without outputs (a rejected one) finish its configuration beat.
        while len(transfers["cfg_stream"]) < len(jobs):
            await ctx.tick()
        await ctx.tick()
        state["finished"] = True

    async def recorder(ctx):
        while True:
            sampled = await ctx.tick().sample(*(getattr(dut, name) for name in watch))
            for name, value in zip(watch, sampled[2:], strict=True):
                trace[name].append(int(value))

    async def watchdog(ctx):
        for _ in range(max_cycles):
            await ctx.tick()
        raise AssertionError(
            f"{type(dut).__name__} timed out after {max_cycles} cycles (transfers: "
            + ", ".join(f"{port} {len(t)}" for port, t in transfers.items())
            + f"; jobs done {len(received)}/{len(jobs)})")

    sim.add_testbench(driver)
    sim.add_testbench(sink)
    sim.add_testbench(recorder, background=True)
    sim.add_testbench(watchdog, background=True)
    sim.run()

    results = []
    i_at = o_at = 0
    for n, job in enumerate(jobs):
        ins = transfers["i_stream"][i_at:i_at + len(job["beats"])]
        outs = transfers["o_stream"][o_at:o_at + job["outputs"]]
        i_at += len(job["beats"])
        o_at += job["outputs"]
        results.append({
            "outputs": received[n],
            "cycles": outs[-1] - ins[0] + 1 if ins and outs else 0,
            "cfg_cycle": transfers["cfg_stream"][n],
            "first_input": ins[0] if ins else None,
            "last_input": ins[-1] if ins else None,
            "last_output": outs[-1] if outs else None,
        })
    return results, trace


# ---- the drivers --------------------------------------------------------------------------------

def _cocotb_job(block, params, simulator, arrays):
    """Run one job under cocotb (:mod:`sim.tb.importance_topk`, test ``job``); returns the
    output arrays."""
    from .runner import case_dir, run_cocotb

    directory = case_dir(block, params, simulator, "sec")
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"job-{os.getpid()}-{next(_job_numbers)}"
    job_in, job_out = stem.with_suffix(".in.npz"), stem.with_suffix(".out.npz")
    np.savez(job_in, **arrays)
    job_out.unlink(missing_ok=True)
    run_cocotb(block, params, test_module="sim.tb.importance_topk", simulator=simulator, case="sec",
               testcase="job", extra_env={"FOCUS_JOB": str(job_in), "FOCUS_JOB_OUT": str(job_out)})
    with np.load(job_out) as out:
        result = {key: out[key] for key in out.files}
    job_in.unlink()
    job_out.unlink()
    return result


def importance(scores, mode="spatial", *, params=None, simulator="amaranth", stalls=0.0,
               stats=None, seed=0):
    """The importance vector ``s[j] = max_r scores[r, j]``, computed by the RTL analyzer; the same
    result as :func:`golden.importance`.

    The scores stream in ``mode`` order (spec 3.1), ``lanes`` per beat; the analyzer then streams
    the vector out (``readout=1``).

    Parameters
    ----------
    scores : integer array [R, M]
    mode : str
        ``"spatial"`` or ``"temporal"``.
    params : FocusParams or None
        None fits them to the data (:func:`fit_params`). M > tokens, R > 65535 or scores wider
        than ``score_bits`` raise ``ValueError``.
    simulator : str
        ``"amaranth"``, ``"icarus"`` or ``"verilator"``.
    stalls : float
        Probability of an input idle and of an output back-pressure cycle (seeded by ``seed``).
    stats : dict or None
        Filled with ``cycles`` (first score beat in to last vector beat out, inclusive) and
        ``done_latency`` (cycles from the last score beat to ``done``; Amaranth only).

    Returns
    -------
    numpy.ndarray [M], the unsigned dtype of ``scores`` in native byte order (as golden).
    """
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r} is not allowed: it must be 'spatial' or 'temporal'")
    a = check_scores(scores)
    _check_simulator(simulator)
    R, M = a.shape
    if params is None:
        params = fit_params(M, _needed_bits(a))
    _check_params(params, M, a, "scores")
    if R >= 1 << ROWS_BITS:
        raise ValueError(f"R = {R} is out of range: the analyzer counts at most "
                         f"{(1 << ROWS_BITS) - 1} rows")
    with rtl_failures("sim.importance"):
        lanes = params.lanes
        beats = score_beats(a, mode, lanes)
        N = -(-M // lanes)
        if simulator == "amaranth":
            job = {"cfg": analyzer_config(M, R, mode), "beats": beats, "outputs": N}
            (result,), trace = run_jobs(ImportanceAnalyzer(params), [job], stalls=stalls, seed=seed)
            vector = vector_from_beats(result["outputs"], M)
            last = result["last_input"]
            run = {"cycles": result["cycles"], "done_latency": trace["done"].index(1, last) - last}
        else:
            out = _cocotb_job("importance_analyzer", params, simulator, {
                "kind": "importance", "scores": a.astype(np.int64), "mode": mode,
                "stalls": float(stalls), "seed": int(seed)})
            vector = out["vector"].astype(np.uint64)
            run = {"cycles": int(out["cycles"])}
    if stats is not None:
        stats.update(run)
    return vector.astype(a.dtype.newbyteorder("="))    # golden's max(axis=0) is native


def topk_mask(s, keep, *, params=None, simulator="amaranth", stalls=0.0, stats=None, seed=0):
    """The keep mask of the ``keep`` most important tokens, computed by the RTL selector
    (``params.sorter``); the same result as :func:`golden.topk_mask`.

    The vector streams in on ``i_stream`` (ceil(M/lanes) beats) and the mask comes back from
    ``o_stream``. Parameters as :func:`importance`; ``stats`` gets ``cycles``, from the first
    vector beat in to the last mask beat out, inclusive.
    """
    a = check_vector(s)
    keep = check_keep(keep)
    _check_simulator(simulator)
    M = a.size
    if params is None:
        params = fit_params(M, _needed_bits(a))
    _check_params(params, M, a, "s")
    with rtl_failures("sim.topk_mask"):
        lanes = params.lanes
        if simulator == "amaranth":
            job = {"cfg": selector_config(params, M, keep), "beats": vector_beats(a, lanes),
                   "outputs": -(-M // lanes)}
            passes = -(-min(keep, M) // lanes)
            (result,), _ = run_jobs(TopKSelector(params), [job], stalls=stalls, seed=seed,
                                    max_cycles=4000 + int(4 * (passes + 6) * (M + 64)
                                                          / (1.0 - stalls)))
            mask = mask_from_beats(result["outputs"], M, lanes)
            run = {"cycles": result["cycles"]}
        else:
            out = _cocotb_job("topk_selector", params, simulator, {
                "kind": "topk", "s": a.astype(np.int64), "keep": keep, "stalls": float(stalls),
                "seed": int(seed)})
            mask = out["mask"].astype(bool)
            run = {"cycles": int(out["cycles"])}
    if stats is not None:
        stats.update(run)
    return mask


# ---- test cases ---------------------------------------------------------------------------------

def _pick_M(rng, params):
    a, tokens = params.lanes, params.tokens
    choices = sorted({1, min(a - 1, tokens) or 1, min(a, tokens), min(a + 1, tokens), tokens,
                      max(1, tokens - 1)})
    if rng.random() < 0.4:
        return int(rng.choice(choices))
    return int(rng.integers(1, tokens + 1))


def _scores(rng, params, shape, kind):
    top = (1 << params.score_bits) - 1
    if kind == "uniform":
        return rng.integers(0, top + 1, shape, dtype=np.int64)
    if kind == "four":           # heavy ties: 4 values, including the extremes
        values = np.array(sorted({0, top, int(rng.integers(0, top + 1)),
                                  int(rng.integers(0, top + 1))}))
        return rng.choice(values, shape)
    if kind == "equal":
        return np.full(shape, int(rng.choice([0, top, int(rng.integers(0, top + 1))])), np.int64)
    # "distinct": a permutation (as far as the width allows), no ties at all
    n = int(np.prod(shape))
    values = rng.permutation(min(n, top + 1))
    return np.resize(values, shape).astype(np.int64)


SCORE_KINDS = ("uniform", "four", "equal", "distinct")


def topk_cases(params, n, seed=0):
    """``n`` selector jobs ``(s, keep)`` that mix what matters: M at 1, around ``lanes`` and at
    ``tokens``, or random; scores uniform, from 4 values (heavy ties), all equal, or distinct;
    keep 0, 1, M, beyond M, around multiples of ``lanes``, the field's largest, or random.
    Deterministic for a given ``seed``."""
    rng = np.random.default_rng(seed)
    a = params.lanes
    cases = []
    for i in range(n):
        M = _pick_M(rng, params)
        s = _scores(rng, params, M, SCORE_KINDS[i % len(SCORE_KINDS)])
        keeps = [0, 1, M, M + 1 + int(rng.integers(0, 5)), max(0, a - 1), a, a + 1, 2 * a + 1,
                 (1 << params.count_bits) - 1, int(rng.integers(0, M + 1)),
                 int(rng.integers(0, M + 1))]
        cases.append((s, int(keeps[int(rng.integers(0, len(keeps)))])))
    return cases


def importance_cases(params, n, seed=0, max_rows=None):
    """``n`` analyzer jobs ``(scores [R, M], mode)``: M as in :func:`topk_cases`, R from 1 to
    ``max_rows`` (default 2*lanes + 3: one beat per column, a padded last beat, several beats),
    both dataflows, and the same score kinds."""
    rng = np.random.default_rng(seed)
    max_rows = max_rows or 2 * params.lanes + 3
    cases = []
    for i in range(n):
        M = _pick_M(rng, params)
        R = int(rng.choice([1, min(params.lanes, max_rows), int(rng.integers(1, max_rows + 1))]))
        scores = _scores(rng, params, (R, M), SCORE_KINDS[i % len(SCORE_KINDS)])
        cases.append((scores, MODES[i // len(SCORE_KINDS) % 2]))
    return cases
