"""cocotb testbench of SEC's importance analyzer and top-k selector (spec 3.1, 3.2; style R8).

Run through :func:`sim.runner.run_cocotb` on the block ``importance_analyzer`` or
``topk_selector`` (the test names say which), with the parameters as JSON in ``FOCUS_PARAMS``.

- ``job``: the data path of ``sim.importance`` / ``sim.topk_mask`` on a simulator: one job from
  the ``.npz`` named by ``FOCUS_JOB`` (``kind`` = ``importance`` or ``topk``), its outputs and
  ``cycles`` written to ``FOCUS_JOB_OUT``.
- ``importance_regression``, ``topk_regression``: ``FOCUS_JOBS`` (default 40) mixed jobs from
  :func:`sim.sec.importance_cases` / :func:`sim.sec.topk_cases` (both dataflows, M at 1, around
  lanes and at tokens, heavy ties, k at its edges), back to back, each checked against golden,
  without stalls (then also the exact cycle count of the model) and with 30 % input idles and
  output back-pressure. Protocol monitors on all three stream ports. Seed ``FOCUS_SEED``.
- ``bad_settings``: M = 0, M > tokens and (analyzer) R = 0 raise ``error``, leave the block idle
  and drop stray beats; a good job follows and is right.
"""

import os

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, RisingEdge, with_timeout

import golden
from golden.cycles import importance_cycles, topk_cycles
from rtl.layouts import mask_beat_layout, score_beat_layout
from rtl.sec.importance_analyzer import analyzer_config_layout
from rtl.sec.topk_selector import selector_config_layout

from ..cocotb_streams import PERIOD_NS, StreamMonitor, StreamSink, StreamSource, start_bench
from ..sec import (
    analyzer_config,
    importance_cases,
    mask_from_beats,
    score_beats,
    selector_config,
    topk_cases,
    vector_beats,
    vector_from_beats,
)
from .settings import PARAMS, SEED, env_int

JOBS = env_int("FOCUS_JOBS", 40)
PORTS = ("cfg_stream", "i_stream", "o_stream")


def cdiv(a, b):
    return -(-a // b)


class TB:
    """Drivers (:class:`StreamSource` on ``cfg_stream`` and ``i_stream``), sink, monitors on all
    three ports, and a job runner for either block."""

    def __init__(self, dut, analyzer, stalls, seed):
        self.dut, self.p = dut, PARAMS
        out_layout = score_beat_layout(PARAMS) if analyzer else mask_beat_layout(PARAMS)
        cfg_layout = (analyzer_config_layout if analyzer else selector_config_layout)(PARAMS)
        dut._log.info("params %s, stalls %s, seed %d", PARAMS.tag, stalls, seed)
        self.cfg = StreamSource(dut, "cfg_stream", cfg_layout, stalls, seed)
        self.src = StreamSource(dut, "i_stream", score_beat_layout(PARAMS), stalls, seed)
        self.sink = StreamSink(dut, "o_stream", out_layout, stalls, seed)
        self.monitors = {port: StreamMonitor(dut, port) for port in PORTS}
        self.stalls = stalls

    async def start(self):
        await start_bench(self.dut, self.monitors.values())

    async def run(self, cfg, beats, outputs, budget):
        """One job; returns (output payloads, cycles from its first beat in to its last beat
        out)."""
        i_at = len(self.monitors["i_stream"].transfers)
        o_at = len(self.monitors["o_stream"].transfers)
        await self.cfg.send([cfg])
        send = cocotb.start_soon(self.src.send(beats))
        timeout = int((budget + 100) * 3 / (1.0 - self.stalls)) * PERIOD_NS
        received = await with_timeout(cocotb.start_soon(self.sink.recv(outputs)), timeout, "ns")
        await send
        await RisingEdge(self.dut.clk)
        ins = self.monitors["i_stream"].transfers[i_at:]
        outs = self.monitors["o_stream"].transfers[o_at:]
        cycles = round((outs[-1] - ins[0]) / PERIOD_NS) + 1 if ins and outs else 0
        return received, cycles

    def check_monitors(self):
        for monitor in self.monitors.values():
            monitor.check()


async def importance_job(tb, scores, mode):
    R, M = scores.shape
    beats = score_beats(scores, mode, tb.p.lanes)
    out, cycles = await tb.run(analyzer_config(M, R, mode), beats, cdiv(M, tb.p.lanes),
                               importance_cycles(R, M, tb.p.lanes, mode))
    return vector_from_beats(out, M), cycles


async def topk_job(tb, s, keep):
    M = len(s)
    out, cycles = await tb.run(selector_config(tb.p, M, keep), vector_beats(s, tb.p.lanes),
                               cdiv(M, tb.p.lanes),
                               topk_cycles(M, keep, tb.p.lanes, tb.p.score_bits, tb.p.sorter))
    return mask_from_beats(out, M, tb.p.lanes), cycles


@cocotb.test(skip="FOCUS_JOB" not in os.environ)
async def job(dut):
    """One ``sim.importance`` / ``sim.topk_mask`` job: ``FOCUS_JOB`` in, ``FOCUS_JOB_OUT`` out."""
    with np.load(os.environ["FOCUS_JOB"]) as job:
        arrays = {key: job[key] for key in job.files}
    kind = str(arrays["kind"])
    tb = TB(dut, kind == "importance", float(arrays["stalls"]), int(arrays["seed"]))
    await tb.start()
    if kind == "importance":
        vector, cycles = await importance_job(tb, arrays["scores"], str(arrays["mode"]))
        result = {"vector": vector}
    else:
        mask, cycles = await topk_job(tb, arrays["s"], int(arrays["keep"]))
        result = {"mask": mask}
    tb.check_monitors()
    np.savez(os.environ["FOCUS_JOB_OUT"], cycles=cycles, **result)


async def check_importance(tb, cases, stalls):
    for n, (scores, mode) in enumerate(cases):
        got, cycles = await importance_job(tb, scores, mode)
        want = golden.importance(scores, mode)
        assert (got == want).all(), (f"job {n} ({mode}, R = {scores.shape[0]}, M = "
                                     f"{scores.shape[1]}): {got.tolist()} != {want.tolist()}")
        if stalls == 0.0:
            model = importance_cycles(*scores.shape, PARAMS.lanes, mode)
            assert cycles == model, f"job {n}: {cycles} cycles, model {model}"


async def check_topk(tb, cases, stalls):
    for n, (s, keep) in enumerate(cases):
        got, cycles = await topk_job(tb, s, keep)
        want = golden.topk_mask(s, keep)
        assert (got == want).all(), (f"job {n} (M = {len(s)}, keep = {keep}, s = {s.tolist()}):"
                                     f" {got.astype(int).tolist()} != {want.astype(int).tolist()}")
        if stalls == 0.0:
            model = topk_cycles(len(s), keep, PARAMS.lanes, PARAMS.score_bits, PARAMS.sorter)
            assert cycles == model, f"job {n}: {cycles} cycles, model {model}"


async def regression(dut, analyzer):
    """The mixed jobs without stalls, then (a fresh job list, the same testbench) with 30 %
    idles and back-pressure: the sources and the sink switch their stall generators."""
    cases = (importance_cases if analyzer else topk_cases)(PARAMS, JOBS, seed=SEED)
    check = check_importance if analyzer else check_topk
    tb = TB(dut, analyzer, 0.0, SEED)
    await tb.start()
    await check(tb, cases, 0.0)
    stalled = TB(dut, analyzer, 0.3, SEED + 1)
    stalled.monitors = tb.monitors
    cases = (importance_cases if analyzer else topk_cases)(PARAMS, JOBS, seed=SEED + 1)
    await check(stalled, cases, 0.3)
    tb.check_monitors()
    dut._log.info("regression passed: %d jobs without stalls, %d with, seed %d", JOBS, JOBS,
                  SEED)


@cocotb.test()
async def importance_regression(dut):
    await regression(dut, analyzer=True)


@cocotb.test()
async def topk_regression(dut):
    await regression(dut, analyzer=False)


@cocotb.test()
async def bad_settings(dut):
    """Rejected configuration beats raise error, keep the block idle and drop stray beats; the
    next good job is right and clears the error."""
    analyzer = "analyzer" in os.environ.get("FOCUS_BLOCK", "")
    tb = TB(dut, analyzer, 0.0, SEED)
    await tb.start()
    p = PARAMS
    rng = np.random.default_rng(SEED)
    M = min(p.tokens, 2 * p.lanes + 1)
    scores = rng.integers(0, 1 << min(p.score_bits, 16), (3, M))
    if analyzer:
        bad = [analyzer_config(0, 3, "spatial"), analyzer_config(p.tokens + 1, 3, "temporal"),
               analyzer_config(M, 0, "spatial")]
    else:
        bad = [selector_config(p, 0, 2), selector_config(p, p.tokens + 1, 2)]
    for cfg in bad:
        if cfg["M"] >= 1 << p.count_bits:
            continue                        # M > tokens does not fit the field: nothing to test
        await tb.cfg.send([cfg])
        await tb.src.send(score_beats(scores, "spatial", p.lanes)[:2])   # stray, dropped
        await ClockCycles(dut.clk, 3)
        assert dut.error.value == 1, f"{cfg}: error not raised"
        assert dut.busy.value == 0, f"{cfg}: busy after a rejected configuration"
        assert not tb.monitors["o_stream"].transfers
    if analyzer:
        got, _ = await importance_job(tb, scores, "temporal")
        assert (got == scores.max(axis=0)).all()
    else:
        got, _ = await topk_job(tb, scores[0], 3)
        assert (got == golden.topk_mask(scores[0], 3)).all()
    assert dut.error.value == 0
    tb.check_monitors()

