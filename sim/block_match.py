"""The block matcher's RTL behind :func:`golden.block_match` and :func:`golden.sic` (spec 4.2, 6).

:func:`block_match` and :func:`sic` run :class:`rtl.sic.block_matcher.BlockMatcher` in the Amaranth
simulator, or its emitted Verilog under cocotb on Icarus or Verilator, and return what ``golden``
returns for the same arguments. :func:`run_jobs` is the lower-level driver: several jobs (any
settings, also bad ones) through one simulation (in the Amaranth simulator, the shared
:func:`sim.streams.run_jobs`), returning each job's output beats, counters and error flag.
:func:`regression_jobs` makes the mixed jobs the tests and the cocotb testbench use.

Protocol (the same in both simulators): the threshold table is written first through the write
port; then the configuration beats and the tokens of all jobs are offered on ``cfg_stream`` and
``i_stream`` at once (the block takes a job's configuration beat only when idle, and its tokens
only after it); ``o_stream`` is received until the block is idle again after the last job. A
monitor checks the stream rules on all three ports. A job's output beats are those between its
configuration beat and the next job's.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from golden.block_match import _check_matrix, check_columns, check_config, check_positions
from golden.block_match import block_match as golden_block_match
from golden.results import MatchResult, SicResult
from golden.similarity import signed_bits
from rtl.codecs import decode_beats
from rtl.params import FocusParams, check_limit
from rtl.sic.block_matcher import BlockMatcher, matcher_rounds

from . import streams
from .runner import check_simulator, run_job
from .streams import rtl_failures

__all__ = ["Job", "JobResult", "block_match", "sic", "run_jobs", "fit_params",
           "regression_jobs", "decode_beats"]

_BLOCK = "block_matcher"
#: The stream ports, in the order the runner drives them; the counters read at each job's end.
_PORTS = ("cfg_stream", "i_stream", "o_stream")
_COUNTERS = ("active", "gated", "uniques", "error")
_COUNT_NAMES = tuple(f"code_count{s}" for s in range(8))


@dataclass
class Job:
    """One block-matcher job: its tokens and settings, exactly as the RTL gets them (no checks:
    bad settings and bad positions are allowed, to test the error path)."""
    vectors: np.ndarray             # [S, V] integers within elem_bits, S >= 1
    positions: np.ndarray           # [S] integers in [0, 2**position_bits)
    frame_stride: int
    row_stride: int
    layer: int = 0
    mean: bool = False
    variable: bool = False          # the map code (a matcher built with map_code): spec 4.5
    ranking: tuple = tuple(range(8))


@dataclass
class JobResult:
    """What the RTL did with one job."""
    beats: list                     # output beats (dicts of match_output_layout), in order
    error: bool
    active: int
    gated: int
    uniques: int                    # the block's unique counter at the end of the job
    cycles: int                     # first input transfer to last output transfer, inclusive
    stats: dict = field(default_factory=dict)
    words: list = field(default_factory=list)       # code_stream beats (with map_code)
    frames: list = field(default_factory=list)      # frame_stream beats (with frame_stats)
    counts: list = field(default_factory=list)      # code_counts at the job's end
    code_error: int = 0                             # code_error at the job's end (0: none)


def fit_params(vectors, theta_bits=8, tile=1024, window=256):
    """The :class:`FocusParams` used when none is given: ``dim`` = V, ``theta_bits``, ``tile``,
    ``window``, one threshold layer, and ``elem_bits`` = 8 or wider (up to 16) when the data needs
    it. V, ``tile`` or ``window`` beyond the RTL's range raise ``ValueError`` naming the argument
    and the range (:func:`rtl.params.check_limit`)."""
    elem_bits = max(8, signed_bits(vectors))
    return FocusParams(dim=check_limit("dim", vectors.shape[1], "V (the vectors' length)"),
                       elem_bits=min(elem_bits, 16), theta_bits=theta_bits,
                       tile=check_limit("tile", tile), window=check_limit("window", window),
                       layers=1)


def _check_params(params, vec, theta_bits, tile, window):
    if not isinstance(params, FocusParams):
        raise TypeError(f"params must be a FocusParams, not {params!r}")
    for name, want in (("dim", vec.shape[1]), ("theta_bits", theta_bits), ("tile", tile),
                       ("window", window)):
        if getattr(params, name) != want:
            raise ValueError(f"params.{name} = {getattr(params, name)} does not match "
                             f"{name} = {want}")
    low, high = -(1 << (params.elem_bits - 1)), (1 << (params.elem_bits - 1)) - 1
    if vec.size and (vec.min() < low or vec.max() > high):
        raise ValueError(f"vectors has elements outside the signed {params.elem_bits}-bit range "
                         f"[{low}, {high}] of params.elem_bits: min {vec.min()}, max {vec.max()}")


def _check_job_inputs(vectors, positions, frame_stride, row_stride, theta_q, theta_bits, tile,
                      window, representative, params, simulator):
    """golden's checks (same messages), then the RTL's own limits.

    Returns (orig, vec, pos, params)."""
    check_config(frame_stride, row_stride, theta_q, theta_bits, tile, window, representative)
    orig, vec = _check_matrix(vectors, "vectors")
    pos = check_positions(positions, vec.shape[0])
    check_simulator(simulator)
    if params is None:
        params = fit_params(vec, theta_bits, tile, window)
    else:
        _check_params(params, vec, theta_bits, tile, window)
    check_representative_built(params, representative)
    if pos.size and pos.max() >= 1 << params.position_bits:
        raise ValueError(f"positions must be < 2**{params.position_bits} (the RTL's position "
                         f"width): max {pos.max()}")
    if frame_stride >= 1 << params.position_bits or row_stride >= 1 << params.position_bits:
        raise ValueError(f"frame_stride and row_stride must be < 2**{params.position_bits}")
    return orig, vec, pos, params


def check_representative_built(params, representative):
    """``ValueError`` when ``representative`` is ``mean`` but the unit built for ``params`` has
    no mean unit (``FocusParams.representatives = "first"``)."""
    if representative == "mean" and not params.mean_unit:
        raise ValueError(f"representative 'mean' needs a block matcher built with it, but "
                         f"params.representatives = {params.representatives!r}: use "
                         f"FocusParams.representatives = 'first+mean'")


def block_match(vectors, positions, *, frame_stride, row_stride, theta_q, theta_bits=8,
                tile=1024, window=256, representative="first", params=None, simulator="amaranth",
                stalls=0.0, stats=None, seed=0):
    """:func:`golden.block_match`, computed by the RTL: the same result for the same arguments.

    The job runs with ``theta_q`` written at layer 0 of the threshold table. An empty input (S = 0)
    returns golden's empty result without running the RTL (a job is at least one token: the
    stream's ``last`` flag ends it), with ``cycles`` 0.

    Parameters
    ----------
    vectors, positions, frame_stride, row_stride, theta_q, theta_bits, tile, window,
    representative
        As for :func:`golden.block_match`; the same bad input raises the same ``ValueError``.
        Positions, FS and HS must also fit in ``position_bits`` (32) bits.
    params : FocusParams or None
        None fits them to the data (:func:`fit_params`); given parameters must match ``dim``,
        ``theta_bits``, ``tile`` and ``window``, hold the elements in ``elem_bits``, and have
        the ``mean`` unit (``representatives = "first+mean"``) for ``representative="mean"``
        (else ``ValueError``, as golden raises for a bad argument: the RTL would reject the
        job).
    simulator : str
        ``"amaranth"``, ``"icarus"`` or ``"verilator"``.
    stalls : float
        Probability of an input idle and of an output back-pressure cycle (seeded by ``seed``).
    stats : dict or None
        Filled with ``cycles``, ``active`` and ``gated`` (comparator-cycles) and ``uniques``.

    Returns
    -------
    (map int64 [S], uniques [U, V] with the dtype of ``vectors``)
    """
    orig, vec, pos, params = _check_job_inputs(vectors, positions, frame_stride, row_stride,
                                               theta_q, theta_bits, tile, window,
                                               representative, params, simulator)
    if vec.shape[0] == 0:
        if stats is not None:
            stats.update(cycles=0, active=0, gated=0, uniques=0)
        return MatchResult(np.zeros(0, dtype=np.int64), orig[:0].copy())
    with rtl_failures("sim.block_match"):
        job = Job(vec, pos, int(frame_stride), int(row_stride), 0, representative == "mean")
        (result,) = run_jobs(params, [job], thetas=[int(theta_q)], simulator=simulator,
                             stalls=stalls, seed=seed)
        if result.error:
            raise RuntimeError("the block matcher raised its error flag on a job the golden "
                               "model accepts")
        mp, uniques = decode_beats(result.beats, params.dim, job.mean)
    if stats is not None:
        stats.update(cycles=result.cycles, active=result.active, gated=result.gated,
                     uniques=result.uniques)
    return MatchResult(mp, uniques.astype(orig.dtype))


def sic(tokens, positions, *, frame_stride, row_stride, theta_q, theta_bits=8, tile=1024,
        window=256, representative="first", dim=32, params=None, simulator="amaranth",
        stalls=0.0, stats=None, seed=0):
    """:func:`golden.sic`, computed by the RTL: the D/V columns of the tokens are D/V consecutive
    block-matcher jobs of one simulation.

    ``stats`` gets ``cycles`` (first input transfer of the first column to the last output
    transfer of the last), ``column_cycles`` (each job's), and the summed ``active``, ``gated``
    and ``uniques``. Other arguments as for :func:`block_match`.

    Returns
    -------
    (maps int64 [S, D/V], list of D/V unique arrays [U_j, V])
    """
    check_config(frame_stride, row_stride, theta_q, theta_bits, tile, window, representative)
    orig, dim, columns = check_columns(tokens, dim)
    if params is None:
        check_limit("dim", dim)
    checked = [_check_job_inputs(orig[:, j * dim:(j + 1) * dim], positions, frame_stride,
                                 row_stride, theta_q, theta_bits, tile, window, representative,
                                 params, simulator) for j in range(columns)]
    if params is None:
        # One netlist for every column: wide enough for all of them.
        params = checked[0][3].replace(elem_bits=max(c[3].elem_bits for c in checked))
    pos = checked[0][2]
    count = orig.shape[0]
    maps = np.zeros((count, columns), dtype=np.int64)
    if count == 0:
        if stats is not None:
            stats.update(cycles=0, column_cycles=[0] * columns, active=0, gated=0, uniques=0)
        return SicResult(maps, [orig[:0, :dim].copy() for _ in range(columns)])
    mean = representative == "mean"
    jobs = [Job(c[1], pos, int(frame_stride), int(row_stride), 0, mean) for c in checked]
    with rtl_failures("sim.block_match"):
        results = run_jobs(params, jobs, thetas=[int(theta_q)], simulator=simulator, stalls=stalls,
                           seed=seed)
        uniques = []
        for j, result in enumerate(results):
            if result.error:
                raise RuntimeError(f"the block matcher raised its error flag on column {j}, which "
                                   f"the golden model accepts")
            maps[:, j], u = decode_beats(result.beats, params.dim, mean)
            uniques.append(u.astype(orig.dtype))
    if stats is not None:
        stats.update(cycles=_span(results),
                     column_cycles=[r.cycles for r in results],
                     active=sum(r.active for r in results), gated=sum(r.gated for r in results),
                     uniques=sum(r.uniques for r in results))
    return SicResult(maps, uniques)


def _span(results):
    first = results[0].stats["first_input"]
    last = results[-1].stats["last_output"]
    return last - first + 1


# ---- the job runner -----------------------------------------------------------------------------

def _payloads(jobs):
    cfgs = [{"frame_stride": j.frame_stride, "row_stride": j.row_stride, "layer": j.layer,
             "mean": int(bool(j.mean))} for j in jobs]
    tokens = []
    for job in jobs:
        vec = np.asarray(job.vectors, dtype=np.int64)
        pos = np.asarray(job.positions, dtype=np.int64)
        count = len(pos)
        if count < 1 or vec.shape[0] != count:
            raise ValueError("every job needs at least one token and one position per vector")
        tokens += [{"vector": v, "position": int(q), "last": int(i == count - 1)}
                   for i, (v, q) in enumerate(zip(vec.tolist(), pos.tolist(), strict=True))]
    return cfgs, tokens


def _cycle_budget(params, jobs, stalls):
    tokens = sum(len(j.positions) for j in jobs)
    per = matcher_rounds(params) + params.elem_bits + 4      # a mean drain may follow each token
    p, forced = streams.stall_bounds(stalls, _PORTS)
    return 2000 + forced + int((tokens * per + 40 * len(jobs)) * 4 / (1.0 - p) ** 2)


def _between(cycles, begin, end):
    return [n for n, c in enumerate(cycles) if c >= begin and (end is None or c < end)]


def _split(jobs, raw):
    """Per-job results from a run's raw record (transfer cycles, beats, snapshots)."""
    cfg_cycles, in_cycles = raw["cfg_cycles"], raw["in_cycles"]
    extra = raw.get("extra", {})
    beats, out_cycles, snaps = raw["beats"], raw["out_cycles"], raw["snapshots"]
    if len(cfg_cycles) != len(jobs):
        raise RuntimeError(f"{len(cfg_cycles)} of {len(jobs)} configuration beats were taken")
    results = []
    start = 0
    for j, job in enumerate(jobs):
        begin = cfg_cycles[j]
        end = cfg_cycles[j + 1] if j + 1 < len(jobs) else None
        picked = [n for n, c in enumerate(out_cycles) if c >= begin and (end is None or c < end)]
        first_in = in_cycles[start] if start < len(in_cycles) else None
        start += len(job.positions)
        last_out = out_cycles[picked[-1]] if picked else None
        cycles = last_out - first_in + 1 if picked and first_in is not None else 0
        snap = snaps[j + 1]
        result = JobResult(
            beats=[beats[n] for n in picked], error=bool(snap["error"]),
            active=int(snap["active"]), gated=int(snap["gated"]), uniques=int(snap["uniques"]),
            cycles=cycles, stats={"first_input": first_in, "last_output": last_out})
        for port, attr in (("code_stream", "words"), ("frame_stream", "frames")):
            if port in extra:
                got, when = extra[port]
                setattr(result, attr, [got[n] for n in _between(when, begin, end)])
        if "code_error" in snap:
            result.counts = [int(snap[name]) for name in _COUNT_NAMES]
            result.code_error = int(snap["code_error"])
        results.append(result)
    return results


def run_jobs(params, jobs, *, thetas=(), simulator="amaranth", stalls=0.0, seed=0, vcd=None,
             gate=True, max_cycles=None, map_code=False, frame_stats=False):
    """Run ``jobs`` (a list of :class:`Job`) through one simulation of the block matcher.

    Parameters
    ----------
    params : FocusParams
    jobs : list of Job
        Not checked: bad settings or positions exercise the error path.
    thetas : sequence of int
        Threshold table entries written before the first job (entry i is layer i).
    simulator : str
        ``"amaranth"``, ``"icarus"`` or ``"verilator"``.
    stalls : float or dict
        Probability of an idle / back-pressure cycle on every stream port (seeded by ``seed``);
        Amaranth also takes ``{port: probability or sim.streams.Stalls}`` (for forced stall
        windows, such as a long consumer stall).
    vcd : path or None
        Amaranth only: write a VCD of the whole run there.
    gate : bool
        Amaranth only: False builds the comparators without clock gating (the baseline for the
        register toggle comparison).
    max_cycles : int or None
        A hang is a failure: the run raises ``AssertionError`` after this many cycles
        (default: a generous bound from the job sizes and ``stalls``).
    map_code, frame_stats : bool
        Amaranth only: build the matcher with its map coder (each job's ``variable`` and
        ``ranking`` are set on ``code_cfg`` for its configuration beat; the words land in
        ``JobResult.words``, the symbol counts and the coder's cause in ``counts`` and
        ``code_error``) and / or its frame statistics (``JobResult.frames``).

    Returns
    -------
    list of :class:`JobResult`, one per job.
    """
    check_simulator(simulator)
    if simulator != "amaranth" and isinstance(stalls, Mapping):
        raise ValueError("per-port stalls are supported by the Amaranth simulator only")
    if simulator != "amaranth" and (map_code or frame_stats):
        raise ValueError("map_code and frame_stats are supported by the Amaranth simulator only")
    if max_cycles is None:
        max_cycles = _cycle_budget(params, jobs, stalls)
    cfgs, tokens = _payloads(jobs)
    thetas = [int(t) for t in thetas]
    if simulator == "amaranth":
        raw = _run_amaranth(params, thetas, cfgs, tokens, stalls, seed, max_cycles, vcd, gate,
                            jobs if map_code else None, frame_stats)
    else:
        raw = _run_cocotb(params, thetas, jobs, simulator, stalls, seed, max_cycles)
    return _split(jobs, raw)


def _run_amaranth(params, thetas, cfgs, tokens, stalls, seed, max_cycles, vcd, gate,
                  code_jobs=None, frame_stats=False):
    map_code = code_jobs is not None
    dut = BlockMatcher(params, icg_cell=None, gate=gate, map_code=map_code,
                       frame_stats=frame_stats)
    outputs = _PORTS[2:] + (("code_stream",) if map_code else ()) \
        + (("frame_stream",) if frame_stats else ())
    counters = _COUNTERS + (("code_error",) + _COUNT_NAMES if map_code else ())
    signals = [(name, getattr(dut, name)) for name in _COUNTERS + ("code_error",)[:map_code]]
    signals += [(name, dut.code_counts[s]) for s, name in enumerate(_COUNT_NAMES)] \
        if map_code else []
    helpers = []
    if map_code:
        def code_setting(k):
            job = code_jobs[min(k, len(code_jobs) - 1)]
            return {"variable": int(bool(job.variable)), "ranking": [int(s) for s in job.ranking]}

        async def code_settings(ctx):
            """code_cfg holds job k's setting until job k's configuration beat is taken."""
            k = 0
            ctx.set(dut.code_cfg, code_setting(0))
            async for _, _, valid, ready in ctx.tick().sample(dut.cfg_stream.valid,
                                                               dut.cfg_stream.ready):
                if valid and ready:
                    k += 1
                    ctx.set(dut.code_cfg, code_setting(k))
        helpers.append(code_settings)

    async def write_thetas(ctx):
        for layer, value in enumerate(thetas):
            ctx.set(dut.theta_we, 1)
            ctx.set(dut.theta_addr, layer)
            ctx.set(dut.theta_data, value)
            await ctx.tick()
        ctx.set(dut.theta_we, 0)

    idle = 0

    def until(run):
        """Every beat offered and taken, and the block idle for two cycles."""
        nonlocal idle
        idle = idle + 1 if run.sent and not run.get(dut.busy) else 0
        return run.sent and idle >= 2

    # Configuration beats and tokens are offered at once: the block takes a job's configuration
    # beat only when idle, and its tokens only after it.
    run = streams.run_jobs(dut, [{"cfg_stream": cfgs, "i_stream": tokens}], inputs=_PORTS[:2],
                           outputs=outputs, feed="parallel", end=None, stalls=stalls,
                           seed=seed, max_cycles=max_cycles, trace=signals,
                           probes=dict(signals), before=write_thetas, until=until, vcd=vcd,
                           helpers=helpers)
    # Snapshots: one at each configuration transfer (the values before that edge: the previous
    # job's), and one at the end; job j's counters are snapshots[j + 1].
    cfg_cycles = run.transfers["cfg_stream"]
    snapshots = [{name: run.trace[name][c] for name in counters} for c in cfg_cycles]
    final = {name: streams._plain(v) for name, v in run.final.items()}
    extra = {port: (run.beats[port], run.transfers[port]) for port in outputs[1:]}
    return {"cfg_cycles": cfg_cycles, "in_cycles": run.transfers["i_stream"],
            "out_cycles": run.transfers["o_stream"], "beats": run.beats["o_stream"],
            "snapshots": snapshots + [final], "extra": extra}


def _run_cocotb(params, thetas, jobs, simulator, stalls, seed, max_cycles):
    out = run_job(_BLOCK, params, _job_arrays(jobs, thetas, stalls, seed, max_cycles),
                  test_module="sim.tb.block_matcher", simulator=simulator, case="jobs")
    return _raw_from_arrays(out)


def _job_arrays(jobs, thetas, stalls, seed, max_cycles):
    return dict(
        vectors=np.concatenate([np.asarray(j.vectors, np.int64) for j in jobs]),
        positions=np.concatenate([np.asarray(j.positions, np.int64) for j in jobs]),
        counts=np.array([len(j.positions) for j in jobs], np.int64),
        cfg=np.array([[j.frame_stride, j.row_stride, j.layer, int(bool(j.mean))] for j in jobs],
                     np.int64),
        thetas=np.array(thetas, np.int64), stalls=float(stalls), seed=int(seed),
        max_cycles=int(max_cycles))


def _raw_from_arrays(f):
    beats = [{"map": int(mp), "vector": vec.tolist(), "token": int(fl[0]), "unique": int(fl[1]),
              "last": int(fl[2])}
             for mp, vec, fl in zip(f["map"], f["vector"], f["flags"], strict=True)]
    snaps = [dict(zip(_COUNTERS, (int(v) for v in s), strict=True)) for s in f["snapshots"]]
    return {"cfg_cycles": f["cfg_cycles"].tolist(), "in_cycles": f["in_cycles"].tolist(),
            "out_cycles": f["out_cycles"].tolist(), "beats": beats, "snapshots": snaps}


def save_jobs(path, jobs, thetas, stalls, seed, max_cycles):
    """Write jobs for the cocotb testbench (``sim.tb.block_matcher``'s ``job`` test)."""
    np.savez(path, **_job_arrays(jobs, thetas, stalls, seed, max_cycles))


def load_jobs(path):
    """(jobs, thetas, stalls, seed, max_cycles) from :func:`save_jobs`' file."""
    with np.load(path) as f:
        bounds = np.concatenate([[0], np.cumsum(f["counts"])])
        jobs = [Job(f["vectors"][a:b], f["positions"][a:b], int(c[0]), int(c[1]), int(c[2]),
                    bool(c[3])) for a, b, c in zip(bounds[:-1], bounds[1:], f["cfg"], strict=True)]
        return (jobs, [int(t) for t in f["thetas"]], float(f["stalls"]), int(f["seed"]),
                int(f["max_cycles"]))


def save_raw(path, raw, dim):
    beats = raw["beats"]
    np.savez(path,
             cfg_cycles=np.array(raw["cfg_cycles"], np.int64),
             in_cycles=np.array(raw["in_cycles"], np.int64),
             out_cycles=np.array(raw["out_cycles"], np.int64),
             map=np.array([b["map"] for b in beats], np.int64),
             vector=np.array([b["vector"] for b in beats], np.int64).reshape(len(beats), dim),
             flags=np.array([[b["token"], b["unique"], b["last"]] for b in beats],
                            np.int64).reshape(len(beats), 3),
             snapshots=np.array([[s["active"], s["gated"], s["uniques"], s["error"]]
                                 for s in raw["snapshots"]], np.int64))


def load_raw(path):
    with np.load(path) as f:
        return _raw_from_arrays(f)


# ---- test jobs ----------------------------------------------------------------------------------

def golden_job(params, job, thetas):
    """golden.block_match of a (good) job, with its layer's threshold."""
    return golden_block_match(job.vectors, job.positions, frame_stride=job.frame_stride,
                              row_stride=job.row_stride, theta_q=thetas[job.layer],
                              theta_bits=params.theta_bits, tile=params.tile,
                              window=params.window,
                              representative="mean" if job.mean else "first")


def check_results(params, jobs, thetas, results, errors=None):
    """Assert the results of ``jobs`` (in order): each one's error flag is as ``errors`` says
    (default: none fails); each good job's map and unique vectors equal :func:`golden_job`'s,
    and its comparator slots add up (active + gated = comparators * rounds * tokens). Returns
    golden's unique vectors of each job (None for one expected to fail), for further checks."""
    errors = errors or [False] * len(jobs)
    slots = params.comparators * matcher_rounds(params)
    uniques = []
    for n, (job, result, error) in enumerate(zip(jobs, results, errors, strict=True)):
        assert result.error == error, f"job {n}: error flag {result.error}, expected {error}"
        if error:
            uniques.append(None)
            continue
        want_map, want_uniques = golden_job(params, job, thetas)
        got_map, got_uniques = decode_beats(result.beats, params.dim, job.mean)
        assert np.array_equal(got_map, want_map), (
            f"job {n} (FS {job.frame_stride}, HS {job.row_stride}, mean {job.mean}): map differs "
            f"from golden at tokens {np.flatnonzero(got_map != want_map)[:10].tolist()}"
            if got_map.shape == want_map.shape else f"job {n}: {len(got_map)} map entries, "
            f"golden has {len(want_map)}")
        assert np.array_equal(got_uniques, want_uniques), f"job {n}: unique vectors differ"
        assert result.active + result.gated == slots * len(job.positions), (
            f"job {n}: active {result.active} + gated {result.gated} != "
            f"{slots * len(job.positions)}")
        uniques.append(want_uniques)
    return uniques


def regression_jobs(params, count, seed=0, tokens=(20, 90)):
    """``count`` mixed good jobs and a threshold table for ``params`` (deterministic in ``seed``).

    Each job has a random geometry (FS and HS from 0 up to FS + HS + 1 = window - 1, small
    and large, grids whose rows and frames do not align with the tiles), pruned positions (random
    gaps), and vectors drawn from a few prototypes with noise, so that most tokens have several
    similar candidates; some are exact copies of a neighbour (exact ties between candidates),
    some are all zero, and some are random. Thresholds: 0, 2**F - 1 and typical values; both
    representatives (``first`` only when ``params`` has no ``mean`` unit). Returns (jobs,
    thetas).
    """
    rng = np.random.default_rng(seed)
    v, f = params.dim, params.theta_bits
    high = (1 << (params.elem_bits - 1)) - 1
    full = (1 << f) - 1
    thetas = [0, full] + [min(full, round(c * (1 << f))) for c in (0.5, 0.8, 0.9, 0.95)]
    thetas = (thetas * params.layers)[:params.layers]
    jobs = []
    for n in range(count):
        limit = params.window - 2                       # FS + HS <= window - 2
        shape = n % 4
        if shape == 0:                                  # the largest look-back
            fs = int(rng.integers(limit // 2, limit + 1))
            hs = limit - fs
        elif shape == 1:                                # small strides
            hs = int(rng.integers(0, 4))
            fs = int(rng.integers(0, min(limit - hs, 8) + 1))
        else:                                           # a grid: FS = rows * HS
            hs = int(rng.integers(2, max(3, limit // 3)))
            fs = min(limit - hs, hs * int(rng.integers(1, 4)))
        size = int(rng.integers(tokens[0], tokens[1] + 1))
        keep = rng.choice([1.0, 0.9, 0.6])
        gaps = np.where(rng.random(size) < keep, 1, rng.integers(2, 6, size))
        positions = int(rng.integers(0, 50)) + np.cumsum(gaps) - 1
        protos = rng.integers(-high, high + 1, (int(rng.integers(1, 4)), v))
        noise = rng.choice([0, 1, 2, max(1, high // 8)])
        vectors = protos[rng.integers(0, len(protos), size)] + rng.integers(-noise, noise + 1,
                                                                            (size, v))
        kind = rng.random(size)
        vectors[kind < 0.08] = 0                                    # zero vectors
        rand = (kind >= 0.08) & (kind < 0.18)
        vectors[rand] = rng.integers(-high, high + 1, (int(rand.sum()), v))
        copies = np.flatnonzero((kind >= 0.18) & (kind < 0.35))    # exact copies: ties
        for i in copies:
            if i:
                vectors[i] = vectors[i - int(rng.integers(1, min(i, 3) + 1))]
        vectors = np.clip(vectors, -high - 1, high)
        jobs.append(Job(vectors, positions.astype(np.int64), fs, hs,
                        layer=int(rng.integers(0, params.layers)),
                        mean=bool(n % 2) and params.mean_unit))
    return jobs, thetas
