"""The complete SEC (:class:`rtl.sec.semantic_concentrator.SemanticConcentrator`) behind the
signature of :func:`golden.sec` (spec 3 and 6).

:func:`sec` streams an [R, M] score matrix into the RTL, in either dataflow, and returns the keep
mask and the offset code it produces: the same ``(mask, words, nbits)`` as :func:`golden.sec` for
the same arguments, and the same ``ValueError`` for the same bad input. It runs the Amaranth
simulator, or the emitted Verilog under cocotb on Icarus or Verilator
(:mod:`sim.tb.semantic_concentrator`).

The lower level, shared with the tests and the cocotb testbench:

- :func:`sec_config` and :func:`sec_job` build a job's payloads, :func:`config_is_good` says
  whether SEC accepts its settings;
- :func:`run_sec_jobs` runs jobs back to back (each configuration beat is offered as soon as the
  previous job's beats are sent; SEC takes it when idle) with seeded input idles and output
  back-pressure on every port and a stream-rule monitor on every port, and returns per job the
  outputs, the cycle numbers, ``done`` and the ``error``/``cause``/``kept``/``nbits``/``order``
  outputs (:func:`collect` turns the raw record into these, for both simulators);
- :func:`sec_cases` gives regression jobs that mix the edges.

``stats["cycles"]`` counts from the job's first score beat in to its last output (mask beat or
code word, whichever is later) out, inclusive.
"""

import itertools
import json
import os

import numpy as np

from golden.offsets import check_order, check_word_bits
from golden.sec import MODES, check_keep, check_scores
from rtl.params import FocusParams
from rtl.sec.importance_analyzer import ROWS_BITS, Dataflow

from .sec import SCORE_KINDS, _pick_M, _scores, fit_params, mask_from_beats, score_beats
from .streams import CLOCK_PERIOD, rtl_failures, stall_sources, stream_monitor, unpack

__all__ = ["SIMULATORS", "PORTS", "sec", "sec_config", "sec_job", "config_is_good",
           "run_sec_jobs", "collect", "code_from_words", "sec_cases", "job_budget"]

SIMULATORS = ("amaranth", "icarus", "verilator")
#: SEC's stream ports: (inputs, outputs).
PORTS = (("cfg_stream", "i_stream"), ("mask_stream", "code_stream"))
#: The per-cycle outputs recorded by :func:`run_sec_jobs` (as strings of digits).
TRACED = ("busy", "done", "error", "cause")

_job_numbers = itertools.count()


# ---- payloads -----------------------------------------------------------------------------------

def sec_config(params, M, R, mode, keep, order):
    """SEC's configuration payload; ``order`` None is adaptive. ``keep`` saturates at the field's
    largest value (>= tokens >= M, so its meaning is unchanged)."""
    return {"M": int(M), "R": int(R), "mode": Dataflow[mode.upper()],
            "keep": min(int(keep), (1 << params.count_bits) - 1),
            "order": 0 if order is None else int(order), "adaptive": int(order is None)}


def config_is_good(params, cfg):
    """Whether SEC accepts the settings (1 <= M <= tokens, R >= 1)."""
    return 1 <= cfg["M"] <= params.tokens and cfg["R"] >= 1


def sec_job(params, scores, mode, keep, order):
    """``{"cfg": payload, "beats": [payload, ...]}`` of one job on an [R, M] score matrix."""
    R, M = np.asarray(scores).shape
    return {"cfg": sec_config(params, M, R, mode, keep, order),
            "beats": score_beats(scores, mode, params.lanes)}


def code_from_words(words):
    """``(words uint64 array, nbits)`` from ``code_stream`` payloads of one job, checking the
    framing: ``last`` on the final word only, the same ``nbits`` on every word."""
    if not words or not words[-1]["last"] or any(w["last"] for w in words[:-1]):
        raise AssertionError(f"bad word framing: last flags {[w['last'] for w in words]}")
    nbits = {w["nbits"] for w in words}
    if len(nbits) != 1:
        raise AssertionError(f"nbits differs between the words of one job: {sorted(nbits)}")
    return np.array([w["word"] for w in words], np.uint64), nbits.pop()


def job_budget(params, jobs, p=0.0):
    """A generous cycle limit for ``jobs`` under stall probability ``p``."""
    a = params.lanes
    work = 0
    for job in jobs:
        M = min(job["cfg"]["M"], params.tokens)
        k = min(job["cfg"]["keep"], M)
        sort = -(-k // a) * M if params.sorter == "bubble" else 10 * -(-M // a)
        work += 200 + 2 * len(job["beats"]) + 2 * sort + 8 * M
    return 4000 + int(work / (1.0 - p) ** 2)


# ---- the record of a run -> per-job results -----------------------------------------------------

def _groups(transfers):
    """Split ``[(cycle, payload), ...]`` of one output into jobs at the ``last`` flags."""
    groups, current = [], []
    for cycle, payload in transfers:
        current.append((cycle, payload))
        if payload["last"]:
            groups.append(current)
            current = []
    return groups, current


def collect(params, jobs, transfers, trace, values):
    """Per-job results from a run's record.

    ``transfers`` is ``{port: [cycle, ...]}`` for the inputs and ``{port: [(cycle, payload),
    ...]}`` for the outputs; ``trace`` is ``{name: "0101..."}`` (one digit per cycle) for
    :data:`TRACED`; ``values`` is ``[(cycle, kept, nbits, order), ...]`` sampled in every cycle
    ``done`` was high.

    Returns per job a dict: ``good`` (SEC should accept the settings), ``mask_beats``,
    ``words`` (output payloads; empty for a rejected job), ``cfg_cycle``, ``first_input``,
    ``last_input``, ``last_output``, ``cycles``, ``error`` and ``cause`` (in the cycle after the
    configuration beat, and at the job's end), ``done`` (the cycle of the job's ``done`` pulse or
    None) and ``kept``/``nbits``/``order`` sampled then.
    """
    masks, mask_rest = _groups(transfers["mask_stream"])
    codes, code_rest = _groups(transfers["code_stream"])
    if mask_rest or code_rest:
        raise AssertionError(f"outputs after the last flagged job: {len(mask_rest)} mask beats, "
                             f"{len(code_rest)} code words")
    good = [config_is_good(params, job["cfg"]) for job in jobs]
    if len(masks) != sum(good) or len(codes) != sum(good):
        raise AssertionError(f"{len(masks)} masks and {len(codes)} codes for {sum(good)} "
                             f"accepted jobs")
    done_cycles = [n for n, d in enumerate(trace["done"]) if d == "1"]
    by_cycle = {c: (kept, nbits, order) for c, kept, nbits, order in values}
    results, at, g = [], 0, 0
    cfg_cycles = transfers["cfg_stream"]
    for n, job in enumerate(jobs):
        cfg_cycle = cfg_cycles[n]
        ins = transfers["i_stream"][at:at + len(job["beats"])]
        at += len(job["beats"])
        result = {"good": good[n], "cfg_cycle": cfg_cycle,
                  "first_input": ins[0] if ins else None, "last_input": ins[-1] if ins else None,
                  "error": int(trace["error"][cfg_cycle + 1]),
                  "cause": int(trace["cause"][cfg_cycle + 1]),
                  "mask_beats": [], "words": [], "last_output": None, "cycles": 0,
                  "done": None, "kept": None, "nbits": None, "order": None}
        if good[n]:
            mask, code = masks[g], codes[g]
            g += 1
            last = max(mask[-1][0], code[-1][0])
            result.update(mask_beats=[b for _, b in mask], words=[w for _, w in code],
                          last_output=last, cycles=last - ins[0] + 1 if ins else 0)
            following = [c for c in done_cycles if c > cfg_cycle]
            if following:
                done = following[0]
                result.update(done=done, end_error=int(trace["error"][done]),
                              end_cause=int(trace["cause"][done]))
                result.update(zip(("kept", "nbits", "order"), by_cycle[done], strict=True))
        results.append(result)
    return results


# ---- the Amaranth simulator ---------------------------------------------------------------------

def run_sec_jobs(params, jobs, *, simulator="amaranth", stalls=0.0, seed=0, max_cycles=None,
                 dut=None, trace=None):
    """Run ``jobs`` (each ``{"cfg": payload, "beats": [payload, ...]}``, see :func:`sec_job`)
    back to back through SEC; returns :func:`collect`'s per-job results.

    ``stalls``: a probability for every port, or ``{port: float or Stalls}``; seeded per port
    from ``seed``. Every port has a stream-rule monitor; a hang is an ``AssertionError`` after
    ``max_cycles`` (default :func:`job_budget`). ``dut`` replaces the SEC built from ``params``
    (Amaranth only). ``trace``, a dict, is filled with the per-cycle values of :data:`TRACED`
    (lists of ints; cycle n ends with the n-th clock edge, as the ``*_cycle`` results count).
    """
    if simulator != "amaranth":
        return _run_cocotb(params, jobs, simulator, stalls, seed, trace)
    from amaranth.sim import Simulator

    from rtl.sec.semantic_concentrator import SemanticConcentrator

    inputs, outputs = PORTS
    sources = stall_sources(stalls, (*inputs, *outputs), seed)
    if max_cycles is None:
        max_cycles = job_budget(params, jobs, max(s.p for s in sources.values()))
    dut = dut if dut is not None else SemanticConcentrator(params)
    expected = sum(config_is_good(params, job["cfg"]) for job in jobs)
    transfers = {port: [] for port in (*inputs, *outputs)}
    record = {name: [] for name in TRACED}
    values = []
    state = {"sent": False}

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    for port in (*inputs, *outputs):
        sim.add_testbench(stream_monitor(getattr(dut, port), port), background=True)

    async def driver(ctx):
        for job in jobs:
            for port, payloads in (("cfg_stream", [job["cfg"]]), ("i_stream", job["beats"])):
                stream = getattr(dut, port)
                shape = stream.payload.shape()
                for payload in payloads:
                    while sources[port]():
                        await ctx.tick()
                    ctx.set(stream.payload, shape.const(payload))
                    ctx.set(stream.valid, 1)
                    while True:
                        _, _, ready = await ctx.tick().sample(stream.ready)
                        if ready:
                            break
                    ctx.set(stream.valid, 0)
        state["sent"] = True

    def sink(port):
        async def testbench(ctx):
            stream = getattr(dut, port)
            while True:
                ctx.set(stream.ready, not sources[port]())
                await ctx.tick()
        return testbench

    watched = [dut.busy, dut.done, dut.error, dut.cause, dut.kept, dut.nbits, dut.order]
    streams = [getattr(dut, port) for port in (*inputs, *outputs)]
    sampled = [s for stream in streams for s in (stream.valid, stream.ready, stream.payload)]

    async def recorder(ctx):
        cycle = 0
        while True:
            got = (await ctx.tick().sample(*watched, *sampled))[2:]
            busy, done, error, cause, kept, nbits, order = (
                int(v.value if hasattr(v, "value") else v) for v in got[:7])
            for name, v in zip(TRACED, (busy, done, error, cause), strict=True):
                record[name].append(str(v))
            if done:
                values.append((cycle, kept, nbits, order))
            for k, port in enumerate((*inputs, *outputs)):
                valid, ready, payload = got[7 + 3 * k:10 + 3 * k]
                if valid and ready:
                    transfers[port].append(cycle if port in inputs
                                           else (cycle, unpack(payload)))
            cycle += 1

    async def finish(ctx):
        while True:
            await ctx.tick()
            lasts = [sum(1 for _, p in transfers[port] if p["last"]) for port in outputs]
            if state["sent"] and all(n >= expected for n in lasts) \
                    and len(transfers["cfg_stream"]) == len(jobs):
                break
        for _ in range(3):              # the last job's done pulse, and the error after a bad one
            await ctx.tick()

    async def watchdog(ctx):
        for _ in range(max_cycles):
            await ctx.tick()
        raise AssertionError(
            f"SEC timed out after {max_cycles} cycles (transfers: "
            + ", ".join(f"{port} {len(t)}" for port, t in transfers.items()) + ")")

    sim.add_testbench(driver)
    for port in outputs:
        sim.add_testbench(sink(port), background=True)
    sim.add_testbench(recorder, background=True)
    sim.add_testbench(finish)
    sim.add_testbench(watchdog, background=True)
    sim.run()
    return _collect(params, jobs, transfers, {k: "".join(v) for k, v in record.items()}, values,
                    trace)


def _collect(params, jobs, transfers, record, values, trace):
    if trace is not None:
        trace.update({name: [int(c) for c in digits] for name, digits in record.items()})
    return collect(params, jobs, transfers, record, values)


# ---- cocotb -------------------------------------------------------------------------------------

def _json_job(job):
    cfg = dict(job["cfg"], mode=job["cfg"]["mode"].name.lower())
    return {"cfg": cfg, "beats": [b["scores"] for b in job["beats"]]}


def _run_cocotb(params, jobs, simulator, stalls, seed, trace):
    """The jobs under cocotb (:mod:`sim.tb.semantic_concentrator`, test ``job``) on the emitted
    ``sec``."""
    from .runner import case_dir, run_cocotb

    if isinstance(stalls, dict):
        raise ValueError("per-port stalls are supported in the Amaranth simulator only")
    directory = case_dir("sec", params, simulator, "main")
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"job-{os.getpid()}-{next(_job_numbers)}"
    job_in, job_out = stem.with_suffix(".in.json"), stem.with_suffix(".out.json")
    job_in.write_text(json.dumps({"jobs": [_json_job(j) for j in jobs], "stalls": float(stalls),
                                  "seed": seed, "budget": job_budget(params, jobs, stalls)}))
    job_out.unlink(missing_ok=True)
    run_cocotb("sec", params, test_module="sim.tb.semantic_concentrator", simulator=simulator,
               case="main", testcase="job",
               extra_env={"FOCUS_JOB": str(job_in), "FOCUS_JOB_OUT": str(job_out)})
    record = json.loads(job_out.read_text())
    job_in.unlink()
    job_out.unlink()
    transfers = {port: record["transfers"][port] for port in PORTS[0]}
    transfers.update({port: [tuple(t) for t in record["transfers"][port]] for port in PORTS[1]})
    return _collect(params, jobs, transfers, record["trace"],
                    [tuple(v) for v in record["values"]], trace)


# ---- the spec 6 API -----------------------------------------------------------------------------

def sec(scores, keep, *, mode="spatial", order=None, word_bits=32, params=None,
        simulator="amaranth", stalls=0.0, stats=None, seed=0):
    """The whole SEC job on the RTL: importance, top-k and offset code; the same
    ``(mask, words, nbits)`` as :func:`golden.sec`.

    Parameters
    ----------
    scores : integer array [R, M]
        Non-negative attention scores (fp16 bit patterns or integers).
    keep : int
        k >= 0.
    mode : str
        ``"spatial"`` or ``"temporal"``: the order in which the scores stream in.
    order : int or None
        The Exp-Golomb order 0..7, or None for the adaptive one.
    word_bits : int
        8 to 64; must equal ``params.word_bits`` when ``params`` is given.
    params : FocusParams or None
        None: the default with ``tokens`` raised to M, ``score_bits`` to what the scores need and
        this ``word_bits``. M > tokens, R > 65535, scores wider than ``score_bits`` or a
        ``word_bits`` mismatch raise ``ValueError``. ``params.sorter`` picks the sorter.
    simulator : str
        ``"amaranth"``, ``"icarus"`` or ``"verilator"``.
    stalls : float
        Probability of an input idle and of an output back-pressure cycle, on every port (seeded
        by ``seed``).
    stats : dict or None
        Filled with ``cycles`` (first score beat in to last output out, inclusive), ``kept``
        (n), ``nbits`` and ``order`` (the e used), read from SEC's outputs at ``done``.

    Returns
    -------
    (mask, words, nbits)
        bool [M], uint64 [ceil(nbits / word_bits)], int.
    """
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r} is not allowed: it must be 'spatial' or 'temporal'")
    a = check_scores(scores)
    keep = check_keep(keep)
    order = check_order(order)
    word_bits = check_word_bits(word_bits)
    if simulator not in SIMULATORS:
        raise ValueError(f"Unknown simulator {simulator!r}: it must be one of "
                         f"{', '.join(SIMULATORS)}")
    R, M = a.shape
    if params is None:
        params = fit_params(M, max(1, int(a.max()).bit_length())).replace(word_bits=word_bits)
    if not isinstance(params, FocusParams):
        raise TypeError(f"params must be a FocusParams, not {params!r}")
    if M > params.tokens:
        raise ValueError(f"M = {M} > tokens = {params.tokens}: the importance buffer holds at most "
                         f"tokens scores")
    if int(a.max()) >> params.score_bits:
        raise ValueError(f"scores must fit in score_bits = {params.score_bits} bits: the largest "
                         f"is {int(a.max())}")
    if R >= 1 << ROWS_BITS:
        raise ValueError(f"R = {R} is out of range: the analyzer counts at most "
                         f"{(1 << ROWS_BITS) - 1} rows")
    if params.word_bits != word_bits:
        raise ValueError(f"params.word_bits = {params.word_bits} does not match word_bits = "
                         f"{word_bits}")
    with rtl_failures("sim.sec"):
        (result,) = run_sec_jobs(params, [sec_job(params, a, mode, keep, order)],
                                 simulator=simulator, stalls=stalls, seed=seed)
        if result["error"]:
            raise AssertionError(f"SEC raised error (cause {result['cause']}) on a valid job")
        mask = mask_from_beats(result["mask_beats"], M, params.lanes)
        words, nbits = code_from_words(result["words"])
    if stats is not None:
        stats.update(cycles=result["cycles"], kept=result["kept"], nbits=result["nbits"],
                     order=result["order"])
    return mask, words, nbits


# ---- regression jobs ----------------------------------------------------------------------------

def sec_cases(params, n, seed=0, max_rows=None):
    """``n`` jobs ``(scores [R, M], mode, keep, order)``: M at 1, around ``lanes`` and at
    ``tokens``, or random; R from 1 to ``max_rows`` (default 2*lanes + 3); scores uniform, from 4
    values (heavy ties), all equal (zeros included), or distinct; keep 0, 1, M, beyond M, around
    multiples of ``lanes``, or random; both dataflows; orders adaptive and 0..7 in turn."""
    rng = np.random.default_rng(seed)
    a = params.lanes
    max_rows = max_rows or 2 * a + 3
    orders = [None, *range(8)]
    cases = []
    for i in range(n):
        M = _pick_M(rng, params)
        R = int(rng.choice([1, min(a, max_rows), int(rng.integers(1, max_rows + 1))]))
        scores = _scores(rng, params, (R, M), SCORE_KINDS[i % len(SCORE_KINDS)])
        keeps = [0, 1, M, M + 1 + int(rng.integers(0, 5)), max(0, a - 1), a, a + 1,
                 int(rng.integers(0, M + 1)), int(rng.integers(0, M + 1))]
        keep = int(keeps[int(rng.integers(0, len(keeps)))])
        cases.append((scores, MODES[(i // len(SCORE_KINDS)) % 2], keep,
                      orders[i % len(orders)]))
    return cases
