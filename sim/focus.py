"""The Focus unit's RTL (:class:`rtl.top.focus_unit.FocusUnit`) behind :func:`golden.focus` (spec 5,
6).

:func:`focus` runs one whole job through the top level the way a host would: it writes the
settings and the threshold over the register bus, starts an SEC job (``CTRL.START_SEC``), streams
the scores, reads the keep mask and the offset code from the RTL, polls ``STATUS`` until idle and
reads the counters; then for each of the D/V sub-vector columns it starts a SIC job
(``CTRL.START_SIC``), streams the kept tokens (chosen by the RTL's mask) and collects the ``sic``
beats. It returns what :func:`golden.focus` returns and raises the same ``ValueError`` for the
same bad input.

The host side is one async program, :func:`focus_program`, written against a small I/O interface
(``write``, ``read``, ``send``, ``wait_sent``, ``beats``) that two adapters implement:
:class:`AmaranthIO` (the Amaranth simulator, :func:`run_program`) and
:class:`sim.tb.focus_unit.CocotbIO` (the emitted Verilog under cocotb). Tests write their own
programs (register accesses, bad jobs) against the same interface.
"""

import itertools
import json
import os

import numpy as np

from golden.block_match import REPRESENTATIVES
from golden.focus import check_focus_inputs
from golden.offsets import check_order, check_schemes, check_word_bits
from golden.results import FocusResult
from golden.sec import MODES, check_keep
from golden.similarity import signed_bits
from rtl.codecs import token_beats
from rtl.params import FocusParams, check_limit, check_scores_fit
from rtl.sec.importance_analyzer import ROWS_BITS
from rtl.top.focus_unit import FocusUnit
from rtl.top.registers import REGISTER, Ctrl, Reg, Status

from . import streams
from .block_match import check_representative_built, decode_beats
from .runner import SIMULATORS, case_dir, check_simulator, run_cocotb
from .sec import mask_from_beats, score_beats
from .streams import rtl_failures

__all__ = ["SIMULATORS", "INPUTS", "OUTPUTS", "COUNTERS", "focus", "fit_params",
           "focus_program", "wait_idle", "read_counters", "AmaranthIO", "run_program",
           "token_beats", "job_record", "sec_mode_word", "sec_order_word", "run_results"]

#: The FocusUnit's stream ports.
INPUTS = ("scores", "tokens")
OUTPUTS = ("mask", "code", "sic")
#: The counter registers read after each job, by name.
COUNTERS = ("SEC_CYCLES", "SIC_CYCLES", "KEPT", "NBITS", "ORDER", "UNIQUES", "ACTIVE", "GATED",
            "CAUSE", "SIC_TOKENS", "CODE_WORDS", "STATUS")

_job_numbers = itertools.count()


# ---- parameters and checks ---------------------------------------------------------------------

def _signed_bits(a):
    return max(2, signed_bits(a))


def fit_params(M, score_bits_needed, elem_bits_needed, *, word_bits=32, offset_schemes="all",
               theta_bits=8, tile=1024, window=256, dim=32):
    """The :class:`FocusParams` used when none is given: ``tokens`` = M, 4 lanes, ``score_bits``
    (16, or wider) and ``elem_bits`` (8, or wider) as the data needs, the given code and SIC
    settings, one threshold layer, the default comparators (one) and both representatives."""
    return FocusParams(tokens=M, lanes=4, score_bits=max(16, score_bits_needed),
                       word_bits=word_bits, offset_schemes=offset_schemes, dim=dim,
                       elem_bits=max(8, elem_bits_needed), theta_bits=theta_bits, layers=1,
                       window=window, tile=tile)


def _check_params(params, M, a, tok, settings):
    if not isinstance(params, FocusParams):
        raise TypeError(f"params must be a FocusParams, not {params!r}")
    for name, want in settings.items():
        if getattr(params, name) != want:
            argument = "schemes" if name == "offset_schemes" else name
            raise ValueError(f"params.{name} = {getattr(params, name)!r} does not match "
                             f"{argument} = {want!r}")
    check_scores_fit(params, a)
    if _signed_bits(tok) > params.elem_bits:
        raise ValueError(f"tokens has elements outside the signed {params.elem_bits}-bit range of "
                         f"params.elem_bits: min {tok.min()}, max {tok.max()}")


# ---- the host program ----------------------------------------------------------------------------

def sec_mode_word(mode):
    """The ``SEC_MODE`` word of ``mode`` (``"spatial"`` or ``"temporal"``)."""
    return REGISTER["SEC_MODE"].pack(temporal=int(mode == "temporal"))


def sec_order_word(order):
    """The ``SEC_ORDER`` word of ``order``: a fixed order 0..7, or None for the adaptive one."""
    if order is None:
        return REGISTER["SEC_ORDER"].pack(adaptive=1)
    return REGISTER["SEC_ORDER"].pack(order=order)


async def wait_idle(io, limit=1_000_000):
    """Poll ``STATUS`` until neither stage is busy; returns the last ``STATUS`` value."""
    for _ in range(limit):
        status = await io.read(Reg.STATUS)
        if not status & (Status.SEC_BUSY | Status.SIC_BUSY):
            return status
    raise AssertionError(f"the Focus unit stayed busy for {limit} STATUS polls")


async def read_counters(io):
    """``{name: value}`` of the :data:`COUNTERS` registers, read over the bus."""
    return {name: await io.read(Reg[name]) for name in COUNTERS}


def job_record(params, scores, tokens, keep, *, mode, order, frame_stride, row_stride, theta_q,
               representative):
    """One job for :func:`focus_program` as plain JSON-able data."""
    a = np.asarray(scores, dtype=np.int64)
    return {
        "M": int(a.shape[1]), "R": int(a.shape[0]), "keep": int(keep), "mode": mode,
        "order": order, "frame_stride": int(frame_stride), "row_stride": int(row_stride),
        "theta_q": int(theta_q), "mean": int(representative == "mean"),
        "scores": score_beats(a, mode, params.lanes),
        "tokens": np.asarray(tokens, dtype=np.int64).tolist(),
    }


async def focus_program(io, params, job):
    """The host's side of one Focus job (see the module doc); returns a record of the run:
    ``kept_mask`` (the RTL's mask, a bool list), ``mask`` and ``code`` (the index ranges of the
    job's beats on those ports), ``sec`` counters, per column ``columns`` (counters and the index
    range of its ``sic`` beats)."""
    p = params
    await io.write(Reg.THETA_ADDR, 0)
    await io.write(Reg.THETA_DATA, job["theta_q"])
    settings = [(Reg.SEC_M, job["M"]), (Reg.SEC_R, job["R"]), (Reg.SEC_KEEP, job["keep"]),
                (Reg.SEC_MODE, sec_mode_word(job["mode"])),
                (Reg.SEC_ORDER, sec_order_word(job["order"])),
                (Reg.SIC_FRAME_STRIDE, job["frame_stride"]),
                (Reg.SIC_ROW_STRIDE, job["row_stride"]), (Reg.SIC_LAYER, 0),
                (Reg.SIC_REPR, REGISTER["SIC_REPR"].pack(mean=job["mean"]))]
    for reg, value in settings:
        await io.write(reg, value)
    starts = {port: len(io.beats(port)) for port in ("mask", "code")}
    await io.write(Reg.CTRL, Ctrl.START_SEC)
    io.send("scores", job["scores"])
    await io.wait_sent("scores")
    await wait_idle(io)
    record = {"sec": await read_counters(io), "columns": [],
              **{port: [first, len(io.beats(port))] for port, first in starts.items()}}
    mask = mask_from_beats(io.beats("mask")[slice(*record["mask"])], job["M"], p.lanes)
    record["kept_mask"] = mask.tolist()
    kept = np.asarray(job["tokens"], dtype=np.int64).reshape(job["M"], -1)[mask]
    for column in range(len(job["tokens"][0]) // p.dim):
        first = len(io.beats("sic"))
        await io.write(Reg.CTRL, Ctrl.START_SIC)
        if len(kept):
            io.send("tokens", token_beats(kept, column, p.dim))
            await io.wait_sent("tokens")
        await wait_idle(io)
        record["columns"].append({"counters": await read_counters(io),
                                  "beats": [first, len(io.beats("sic"))]})
    return record


# ---- the Amaranth simulator ----------------------------------------------------------------------

class AmaranthIO:
    """The host I/O of :func:`focus_program` in the Amaranth simulator (see :func:`run_program`).

    ``write``/``read`` drive the register bus (one cycle each; a read returns the value on
    ``r_data`` the cycle after ``r_en``), ``send`` queues payloads for an input port (a feeder
    sends them with seeded idles), ``wait_sent`` waits until they have all transferred, ``beats``
    is every payload received so far on an output port (sinks with seeded back-pressure),
    ``tick`` waits cycles. ``transfers[port]`` holds every transfer's cycle number; ``cycle`` is
    the number of the current cycle (a bus access made now happens in that cycle).
    """

    def __init__(self, dut, ctx, run):
        self.dut, self.ctx, self.run = dut, ctx, run
        #: Every payload received so far, per output port, and every transfer's cycle number.
        self.received, self.transfers = run.beats, run.transfers

    @property
    def cycle(self):
        """The current cycle's number (the numbering of ``transfers``)."""
        return self.run.cycle

    async def write(self, addr, value):
        bus, ctx = self.dut.bus, self.ctx
        ctx.set(bus.addr, int(addr))
        ctx.set(bus.w_data, int(value) & 0xFFFFFFFF)
        ctx.set(bus.w_en, 1)
        await ctx.tick()
        ctx.set(bus.w_en, 0)

    async def read(self, addr):
        bus, ctx = self.dut.bus, self.ctx
        ctx.set(bus.addr, int(addr))
        ctx.set(bus.r_en, 1)
        await ctx.tick()
        ctx.set(bus.r_en, 0)
        return ctx.get(bus.r_data)

    async def access(self, addr, *, read=False, write=None):
        """One bus cycle with any of ``r_en`` and ``w_en``; returns the read data (or None)."""
        bus, ctx = self.dut.bus, self.ctx
        ctx.set(bus.addr, int(addr))
        ctx.set(bus.r_en, int(read))
        ctx.set(bus.w_en, int(write is not None))
        ctx.set(bus.w_data, 0 if write is None else int(write) & 0xFFFFFFFF)
        await ctx.tick()
        ctx.set(bus.r_en, 0)
        ctx.set(bus.w_en, 0)
        return ctx.get(bus.r_data) if read else None

    def send(self, port, payloads):
        self.run.send(port, payloads)

    def allow_withdrawal(self, port, cycle):
        """Lets output ``port`` drop its offered beat in ``cycle`` without failing the stream
        monitor (``CTRL.ABORT`` withdraws the unit's outputs the cycle after the write)."""
        self.run.withdrawals[port].allow(cycle)

    def withdrawn(self, port):
        """The cycles in which ``port`` dropped an offered beat under :meth:`allow_withdrawal`."""
        return list(self.run.withdrawals[port].done)

    async def wait_sent(self, port):
        while self.run.unsent[port]:
            await self.ctx.tick()

    def beats(self, port):
        return self.received[port]

    async def tick(self, cycles=1):
        for _ in range(cycles):
            await self.ctx.tick()

    def get(self, signal):
        return self.ctx.get(signal)


def run_program(params, program, *, stalls=0.0, seed=0, max_cycles=200_000, vcd=None,
                dut=None):
    """Run ``await program(io)`` (``io`` an :class:`AmaranthIO`) against a :class:`FocusUnit` in
    the Amaranth simulator, on the shared job runner (:func:`sim.streams.run_jobs`,
    ``feed="queue"``): feeders and sinks on its stream ports (seeded idles and back-pressure with
    probability ``stalls``, or a ``{port: probability or Stalls}`` dict) and a stream-rule monitor
    on every stream port. A run longer than ``max_cycles`` fails.

    Returns (the program's return value, io).
    """
    dut = dut if dut is not None else FocusUnit(params, icg_cell=None)

    async def host(ctx, run):
        io = AmaranthIO(dut, ctx, run)
        return await program(io), io

    return streams.run_jobs(dut, [], inputs=INPUTS, outputs=OUTPUTS, feed="queue", end=None,
                            stalls=stalls, seed=seed, max_cycles=max_cycles, program=host,
                            vcd=vcd, name="FocusUnit").result


# ---- the API -------------------------------------------------------------------------------------

def run_results(params, job, record, beats, transfers):
    """(mask, words, nbits, maps, uniques, stats) from a run of :func:`focus_program`: its
    record, the beats received on each output port and the transfer cycles of each port (any
    numbering: only differences count)."""
    mask = np.array(record["kept_mask"], dtype=bool)
    code = beats["code"][slice(*record["code"])]
    words = np.array([b["word"] for b in code], dtype=np.uint64)
    nbits = code[-1]["nbits"] if code else 0
    mean = bool(job["mean"])
    columns = record["columns"]
    n = int(mask.sum())
    maps, uniques = np.zeros((n, len(columns)), np.int64), []
    for j, column in enumerate(columns):
        a, b = column["beats"]
        mp, u = decode_beats(beats["sic"][a:b], params.dim, mean)
        if len(mp) != n:
            raise AssertionError(f"column {j}: {len(mp)} map entries for {n} kept tokens")
        maps[:, j] = mp
        uniques.append(u)
    first = transfers["scores"][0] if transfers["scores"] else None
    last = max((t[-1] for port, t in transfers.items() if port in OUTPUTS and t), default=None)
    stats = {
        "cycles": last - first + 1 if first is not None and last is not None else 0,
        "sec_cycles": record["sec"]["SEC_CYCLES"],
        "sic_cycles": [c["counters"]["SIC_CYCLES"] for c in columns],
        "kept": record["sec"]["KEPT"], "nbits": record["sec"]["NBITS"],
        "order": record["sec"]["ORDER"],
        "uniques": [c["counters"]["UNIQUES"] for c in columns],
        "active": sum(c["counters"]["ACTIVE"] for c in columns),
        "gated": sum(c["counters"]["GATED"] for c in columns),
        "registers": {"sec": record["sec"], "sic": [c["counters"] for c in columns]},
    }
    return mask, words, nbits, maps, uniques, stats


def _cocotb_run(params, job, simulator, stalls, seed):
    directory = case_dir("focus_unit", params, simulator, "focus")
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"job-{os.getpid()}-{next(_job_numbers)}"
    job_in, job_out = stem.with_suffix(".in.json"), stem.with_suffix(".out.json")
    job_in.write_text(json.dumps({"job": job, "stalls": float(stalls), "seed": int(seed)}))
    job_out.unlink(missing_ok=True)
    run_cocotb("focus_unit", params, test_module="sim.tb.focus_unit", simulator=simulator,
               case="focus", testcase="job",
               extra_env={"FOCUS_JOB": str(job_in), "FOCUS_JOB_OUT": str(job_out)})
    out = json.loads(job_out.read_text())
    job_in.unlink()
    job_out.unlink()
    return out["record"], out["beats"], out["transfers"]


def focus(scores, tokens, keep, *, mode="spatial", order=None, word_bits=32, schemes="all",
          frame_stride, row_stride, theta_q, theta_bits=8, tile=1024, window=256,
          representative="first", dim=32, params=None, simulator="amaranth", stalls=0.0,
          stats=None, seed=0):
    """:func:`golden.focus`, computed by :class:`rtl.top.focus_unit.FocusUnit`: the same result for
    the same arguments, and the same ``ValueError`` for the same bad input.

    Parameters
    ----------
    scores, tokens, keep, mode, order, word_bits, schemes, frame_stride, row_stride, theta_q,
    theta_bits, tile, window, representative, dim
        As for :func:`golden.focus`. ``theta_q`` goes to threshold table entry 0.
    params : FocusParams or None
        None fits them to the data (:func:`fit_params`); given ones must match ``word_bits``,
        ``schemes`` (their ``offset_schemes``), ``theta_bits``, ``tile``, ``window`` and
        ``dim``, have ``tokens >= M`` and hold the scores and elements.
    simulator : str
        ``"amaranth"``, ``"icarus"`` or ``"verilator"``.
    stalls : float
        Probability of an input idle and of an output back-pressure cycle (seeded by ``seed``).
    stats : dict or None
        Filled with ``cycles`` (first score transfer to the last output transfer of the last
        column, inclusive, host bus traffic between the jobs included), the counters read over
        the bus: ``sec_cycles``, ``sic_cycles`` (a list, one per column), ``kept``, ``nbits``,
        ``order``, ``uniques`` (per column), ``active`` and ``gated`` (summed over the columns),
        and ``registers`` (every counter register after each job).

    Returns
    -------
    (mask, words, nbits, maps, uniques), as :func:`golden.focus` (also for keep = 0: maps
    [0, D/V] and D/V empty unique arrays).

    Raises
    ------
    ValueError
        Bad input, before anything runs: golden's errors, and the RTL's limits.
    sim.streams.RTLFailure
        (a ``RuntimeError``) when the run fails on a job the checks accepted; the harness's
        ``AssertionError`` when the RTL breaks a stream rule or hangs.
    """
    a, tok, _ = check_focus_inputs(scores, tokens, frame_stride=frame_stride,
                                   row_stride=row_stride, theta_q=theta_q, theta_bits=theta_bits,
                                   tile=tile, window=window, representative=representative,
                                   dim=dim)
    keep = check_keep(keep)
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r} is not allowed: it must be 'spatial' or 'temporal'")
    order = check_order(order)
    word_bits = check_word_bits(word_bits)
    schemes = check_schemes(schemes)
    if representative not in REPRESENTATIVES:
        raise ValueError(f"representative must be 'first' or 'mean', not {representative!r}")
    check_simulator(simulator)
    R, M = a.shape
    dtype = tok.dtype
    tok = np.asarray(tok, dtype=np.int64)
    needed = max(1, int(a.max()).bit_length())
    settings = {"word_bits": word_bits, "offset_schemes": schemes, "theta_bits": theta_bits,
                "tile": tile, "window": window, "dim": dim}
    if params is None:
        check_limit("tokens", M, "M")
        for name in ("tile", "window", "dim"):
            check_limit(name, settings[name])
        if needed > 32:
            raise ValueError(f"scores need {needed} bits; at most 32 are supported")
        params = fit_params(M, needed, min(16, _signed_bits(tok)), **settings)
    _check_params(params, M, a, tok, settings)
    check_representative_built(params, representative)
    if R >= 1 << ROWS_BITS:
        raise ValueError(f"R = {R} is out of range: the analyzer counts at most "
                         f"{(1 << ROWS_BITS) - 1} rows")
    with rtl_failures("sim.focus"):
        job = job_record(params, a, tok, keep, mode=mode, order=order,
                         frame_stride=frame_stride, row_stride=row_stride, theta_q=theta_q,
                         representative=representative)
        if simulator == "amaranth":
            record, io = run_program(params, lambda io: focus_program(io, params, job),
                                     stalls=stalls, seed=seed,
                                     max_cycles=_budget(params, job, stalls))
            beats, transfers = io.received, io.transfers
        else:
            record, beats, transfers = _cocotb_run(params, job, simulator, stalls, seed)
        mask, words, nbits, maps, uniques, run = run_results(params, job, record, beats, transfers)
    if stats is not None:
        stats.update(run)
    return FocusResult(mask, words, nbits, maps, [u.astype(dtype) for u in uniques])


def _budget(params, job, stalls):
    """A generous cycle limit for one job (a hang is a failure, never a loop)."""
    p = params
    M, R = job["M"], job["R"]
    k = min(job["keep"], M)
    sort = (-(-k // p.lanes) + 1) * M + 4 * M
    columns = len(job["tokens"][0]) // p.dim
    sic = columns * (k * (7 + p.elem_bits + 4) + 200)
    return 5000 + int(4 * (len(job["scores"]) + sort + sic + 20 * R) / (1.0 - stalls) ** 2)
