"""SEC behind the signatures of :func:`golden.importance`, :func:`golden.topk_mask` and
:func:`golden.sec` (spec 3 and 6).

:func:`importance` runs :class:`rtl.sec.importance_analyzer.ImportanceAnalyzer` (with
``readout=1``), :func:`topk_mask` runs :class:`rtl.sec.topk_selector.TopKSelector` (with the vector
on ``i_stream``) and :func:`sec` runs the whole
:class:`rtl.sec.semantic_concentrator.SemanticConcentrator` (importance, top-k and offset code), in
the Amaranth simulator or as emitted Verilog under cocotb on Icarus or Verilator
(:mod:`sim.tb.importance_topk`, :mod:`sim.tb.semantic_concentrator`). They return what ``golden``
returns for the same arguments and raise the same ``ValueError`` for the same bad input.

The lower level, shared with the tests and the cocotb testbenches:

- the beats (:func:`score_beats`, :func:`vector_beats`, :func:`vector_from_beats`,
  :func:`mask_from_beats`, :func:`code_from_words`, from :mod:`rtl.codecs`) and the configuration
  payloads (:func:`analyzer_config`, :func:`selector_config`, :func:`sec_config`,
  :func:`sec_job`; :func:`config_is_good` says whether SEC accepts a job's settings);
- :func:`run_jobs` runs analyzer or selector jobs back to back (each waits for the previous one's
  outputs) and :func:`run_sec_jobs` SEC jobs (each configuration beat offered as soon as the
  previous job's beats are sent; SEC takes it when idle), both on the shared
  :func:`sim.streams.run_jobs` (seeded idles and back-pressure, a stream-rule monitor on every
  port, a watchdog) with a per-cycle record of the status outputs; :func:`collect` turns a SEC
  run's record into per-job results, for both simulators;
- :func:`importance_cases`, :func:`topk_cases` and :func:`sec_cases` give regression jobs that mix
  the edges.

``stats["cycles"]`` counts from a job's first score (or vector) beat in to its last output out
(for SEC: mask beat or code word, whichever is later), inclusive.
"""

import numpy as np

from golden.offsets import check_order, check_schemes, check_word_bits
from golden.results import SecResult
from golden.sec import MODES, _unsigned, check_keep, check_scores
from rtl.codecs import (
    code_from_words,
    mask_from_beats,
    score_beats,
    vector_beats,
    vector_from_beats,
)
from rtl.params import FocusParams, check_limit, check_scores_fit
from rtl.sec.importance_analyzer import ROWS_BITS, Dataflow, ImportanceAnalyzer
from rtl.sec.semantic_concentrator import SemanticConcentrator
from rtl.sec.topk_selector import TopKSelector

from . import streams
from .runner import check_simulator, run_job
from .streams import rtl_failures

__all__ = ["importance", "topk_mask", "sec", "fit_params", "score_beats", "vector_beats",
           "vector_from_beats", "mask_from_beats", "code_from_words", "analyzer_config",
           "selector_config", "sec_config", "sec_job", "config_is_good", "run_jobs",
           "run_sec_jobs", "collect", "job_budget", "check_vector", "PORTS", "TRACED",
           "topk_cases", "importance_cases", "sec_cases", "SCORE_KINDS"]

#: SEC's stream ports: (inputs, outputs).
PORTS = (("cfg_stream", "i_stream"), ("mask_stream", "code_stream"))
#: The per-cycle outputs of SEC in a run's record (as strings of digits).
TRACED = ("busy", "done", "error", "cause")


# ---- input checks and parameters ----------------------------------------------------------------

def check_vector(s):
    """The importance vector as an unsigned 1-D array; ``ValueError`` as in golden.topk_mask."""
    a = np.asarray(s)
    if a.ndim != 1:
        raise ValueError(f"s must be 1-D (one score per token), not shape {a.shape}")
    if a.size == 0:
        raise ValueError("s is empty: M must be >= 1")
    return _unsigned(a, "s")


def _check_mode(mode):
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r} is not allowed: it must be 'spatial' or 'temporal'")


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
    check_scores_fit(params, a, what)


def _check_rows(R):
    if R >= 1 << ROWS_BITS:
        raise ValueError(f"R = {R} is out of range: the analyzer counts at most "
                         f"{(1 << ROWS_BITS) - 1} rows")


# ---- configuration payloads ---------------------------------------------------------------------

def analyzer_config(M, R, mode, readout=1):
    return {"M": int(M), "R": int(R), "mode": Dataflow[mode.upper()], "readout": int(readout)}


def selector_config(params, M, keep, preloaded=0):
    """The selector's configuration beat; ``keep`` saturates at the field's largest value (which
    is >= tokens >= M, so the meaning is unchanged)."""
    return {"M": int(M), "keep": min(int(keep), (1 << params.count_bits) - 1),
            "preloaded": int(preloaded)}


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


def job_budget(params, jobs, p=0.0):
    """A generous cycle limit for SEC ``jobs`` under stall probability ``p``."""
    a = params.lanes
    work = 0
    for job in jobs:
        M = min(job["cfg"]["M"], params.tokens)
        k = min(job["cfg"]["keep"], M)
        sort = -(-k // a) * M if params.sorter == "bubble" else 10 * -(-M // a)
        work += 200 + 2 * len(job["beats"]) + 2 * sort + 8 * M
    return 4000 + int(work / (1.0 - p) ** 2)


# ---- the analyzer and the selector in the Amaranth simulator ------------------------------------

def run_jobs(dut, jobs, *, stalls=0.0, seed=0, max_cycles=None, watch=("error", "busy", "done")):
    """Run ``jobs`` back to back on ``dut`` (an analyzer or a selector) in one simulation.

    Each job is a dict with ``cfg`` (the configuration payload), ``beats`` (``i_stream``
    payloads) and ``outputs`` (``o_stream`` beats expected). A job's configuration beat is sent
    once the previous job's outputs have all arrived (and one idle cycle), and its beats right
    after it. ``stalls`` (a probability, or a ``{port: Stalls or float}`` dict) idles the
    ``cfg_stream``/``i_stream`` sources and back-pressures ``o_stream``; every stream port has a
    protocol monitor.

    Returns ``(results, trace)``: per job a dict with ``outputs`` (plain payloads), ``cycles``
    (first ``i_stream`` transfer to last ``o_stream`` transfer, inclusive; 0 without either),
    ``cfg_cycle``, ``first_input``, ``last_input``, ``last_output``; and ``trace``, per watched
    member the list of its value in every cycle (cycle n ends with the n-th clock edge).
    """
    ports = ("cfg_stream", "i_stream", "o_stream")
    if max_cycles is None:
        beats = sum(len(j["beats"]) + j["outputs"] + 1 for j in jobs)
        p, _ = streams.stall_bounds(stalls, ports)
        max_cycles = 2000 + int(4 * beats / (1.0 - p))
    run = streams.run_jobs(
        dut, [{"cfg_stream": [j["cfg"]], "i_stream": j["beats"], "o_stream": j["outputs"]}
              for j in jobs],
        inputs=ports[:2], outputs=ports[2:], stalls=stalls, seed=seed, max_cycles=max_cycles,
        count_from=("i_stream",), trace=[name for name in watch if hasattr(dut, name)],
        # The last configuration beat may belong to a job without outputs (a rejected one).
        until=lambda run: run.ended() and len(run.transfers["cfg_stream"]) == len(jobs),
        linger=1)
    results = [{"outputs": job["outputs"]["o_stream"], "cycles": job["cycles"],
                "cfg_cycle": job["inputs"]["cfg_stream"][0], "first_input": job["first_input"],
                "last_input": job["last_input"], "last_output": job["last_output"]}
               for job in run.jobs]
    return results, run.trace


# ---- SEC: the record of a run -> per-job results ------------------------------------------------

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


# ---- SEC in either simulator -------------------------------------------------------------------

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
        record = _sec_cocotb(params, jobs, simulator, stalls, seed)
    else:
        record = _sec_amaranth(params, jobs, stalls, seed, max_cycles, dut)
    transfers, digits, values = record
    if trace is not None:
        trace.update({name: [int(c) for c in digits[name]] for name in TRACED})
    return collect(params, jobs, transfers, digits, values)


def _sec_amaranth(params, jobs, stalls, seed, max_cycles, dut):
    inputs, outputs = PORTS
    if max_cycles is None:
        max_cycles = job_budget(params, jobs, streams.stall_bounds(stalls, (*inputs, *outputs))[0])
    expected = sum(config_is_good(params, job["cfg"]) for job in jobs)

    def until(run):
        return (run.sent and len(run.transfers["cfg_stream"]) == len(jobs)
                and all(sum(b["last"] for b in run.beats[port]) >= expected for port in outputs))

    run = streams.run_jobs(
        SemanticConcentrator(params) if dut is None else dut,
        [{"cfg_stream": [job["cfg"]], "i_stream": job["beats"]} for job in jobs],
        inputs=inputs, outputs=outputs, end=None, stalls=stalls, seed=seed,
        max_cycles=max_cycles, trace=(*TRACED, "kept", "nbits", "order"), until=until,
        linger=3)               # the last job's done pulse, and the error after a bad one
    transfers = {port: run.transfers[port] for port in inputs}
    transfers.update({port: list(zip(run.transfers[port], run.beats[port], strict=True))
                      for port in outputs})
    digits = {name: "".join(map(str, run.trace[name])) for name in TRACED}
    t = run.trace
    values = [(cycle, kept, nbits, order) for cycle, (done, kept, nbits, order)
              in enumerate(zip(t["done"], t["kept"], t["nbits"], t["order"], strict=True))
              if done]
    return transfers, digits, values


def _json_job(job):
    cfg = dict(job["cfg"], mode=job["cfg"]["mode"].name.lower())
    return {"cfg": cfg, "beats": [b["scores"] for b in job["beats"]]}


def _sec_cocotb(params, jobs, simulator, stalls, seed):
    """The jobs under cocotb (:mod:`sim.tb.semantic_concentrator`, test ``job``) on the emitted
    ``sec``."""
    if isinstance(stalls, dict):
        raise ValueError("per-port stalls are supported in the Amaranth simulator only")
    record = run_job("sec", params, {"jobs": [_json_job(j) for j in jobs],
                                     "stalls": float(stalls), "seed": seed,
                                     "budget": job_budget(params, jobs, stalls)},
                     test_module="sim.tb.semantic_concentrator", simulator=simulator,
                     case="main")
    transfers = {port: record["transfers"][port] for port in PORTS[0]}
    transfers.update({port: [tuple(t) for t in record["transfers"][port]] for port in PORTS[1]})
    return transfers, record["trace"], [tuple(v) for v in record["values"]]


def _cocotb_job(block, params, simulator, arrays):
    """Run one analyzer or selector job under cocotb (:mod:`sim.tb.importance_topk`, test
    ``job``); returns the output arrays."""
    return run_job(block, params, arrays, test_module="sim.tb.importance_topk",
                   simulator=simulator, case="sec")


# ---- the spec 6 API -----------------------------------------------------------------------------

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
    _check_mode(mode)
    a = check_scores(scores)
    check_simulator(simulator)
    R, M = a.shape
    if params is None:
        params = fit_params(M, _needed_bits(a))
    _check_params(params, M, a, "scores")
    _check_rows(R)
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
    check_simulator(simulator)
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


def sec(scores, keep, *, mode="spatial", order=None, word_bits=32, schemes="all", params=None,
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
    schemes : "all" (default) or "kept-exp-golomb"
        As :func:`golden.sec`; must equal ``params.offset_schemes`` when ``params`` is given.
    params : FocusParams or None
        None: the default with ``tokens`` raised to M, ``score_bits`` to what the scores need,
        this ``word_bits`` and ``schemes``. M > tokens, R > 65535, scores wider than
        ``score_bits`` or a ``word_bits`` or ``schemes`` mismatch raise ``ValueError``.
        ``params.sorter`` picks the sorter.
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
    _check_mode(mode)
    a = check_scores(scores)
    keep = check_keep(keep)
    order = check_order(order)
    word_bits = check_word_bits(word_bits)
    schemes = check_schemes(schemes)
    check_simulator(simulator)
    R, M = a.shape
    if params is None:
        params = fit_params(M, _needed_bits(a)).replace(word_bits=word_bits,
                                                        offset_schemes=schemes)
    _check_params(params, M, a, "scores")
    _check_rows(R)
    if params.word_bits != word_bits:
        raise ValueError(f"params.word_bits = {params.word_bits} does not match word_bits = "
                         f"{word_bits}")
    if params.offset_schemes != schemes:
        raise ValueError(f"params.offset_schemes = {params.offset_schemes!r} does not match "
                         f"schemes = {schemes!r}")
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
    return SecResult(mask, words, nbits)


# ---- regression jobs ----------------------------------------------------------------------------

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
