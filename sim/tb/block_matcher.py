"""cocotb testbench of :class:`rtl.sic.block_matcher.BlockMatcher` (spec 4.2; style R8).

Run through :func:`sim.runner.run_cocotb`, which passes the parameters as JSON in
``FOCUS_PARAMS``. Two tests:

- ``job``: the data path of ``sim.block_match``/``sim.sic``/``sim.block_match.run_jobs`` with
  ``simulator="icarus"``/``"verilator"``. It reads the jobs from the ``.npz`` named by
  ``FOCUS_JOB`` (:func:`sim.block_match.save_jobs`), runs them with the job file's stalls and seed,
  and writes the raw record (transfer cycles, output beats, counter snapshots) to ``FOCUS_JOB_OUT``.
- ``regression``: ``FOCUS_JOBS`` (default 8) mixed jobs from
  :func:`sim.block_match.regression_jobs`, with bad jobs between them (FS + HS + 1 = window, a
  repeated position, a decreasing last position; on a build without the mean unit, a ``mean``
  job), checked job by job against
  :func:`golden.block_match`, under the four stall patterns (none, 30 % input idles only, 30 %
  output back-pressure only, both), with protocol monitors on all three stream ports, the error
  flag and the comparator-cycle counters checked. The seed is ``FOCUS_SEED`` (default 1).

The driver protocol is :mod:`sim.block_match`'s: threshold table first, then the configuration beats
and the tokens offered at once, the output received until the block is idle again.
"""

import os

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, RisingEdge, with_timeout

from rtl.sic.block_matcher import (
    match_config_layout,
    match_input_layout,
    match_output_layout,
    matcher_rounds,
)

from ..block_match import (
    Job,
    _payloads,
    _split,
    check_results,
    load_jobs,
    regression_jobs,
    save_raw,
)
from ..cocotb_streams import PERIOD_NS, StreamMonitor, StreamSink, StreamSource, start_bench
from .settings import PARAMS, SEED, env_int

JOBS = env_int("FOCUS_JOBS", 8)

PORTS = ("cfg_stream", "i_stream", "o_stream")


def _cycle(ns):
    return int(ns // PERIOD_NS)


class TB:
    """Drivers (:class:`StreamSource` on ``cfg_stream`` and ``i_stream``, the threshold write
    port), monitors (:class:`StreamMonitor` on all three stream ports), a sink with back-pressure
    and an observer of the configuration transfers and counters. :func:`sim.block_match.golden_job`
    is the model; :func:`check` is the checker."""

    def __init__(self, dut, params, seed, idles=0.0, backpressure=0.0):
        self.dut, self.params = dut, params
        dut._log.info("params %s, input idles %s, output back-pressure %s, seed %d", params.tag,
                      idles, backpressure, seed)
        self.cfg = StreamSource(dut, "cfg_stream", match_config_layout(params), idles, seed)
        self.tokens = StreamSource(dut, "i_stream", match_input_layout(params), idles, seed)
        self.sink = StreamSink(dut, "o_stream", match_output_layout(params), backpressure, seed)
        self.monitors = {port: StreamMonitor(dut, port) for port in PORTS}
        dut.theta_we.value = 0

    async def start(self):
        await start_bench(self.dut, self.monitors.values())

    def _snapshot(self):
        dut = self.dut
        return {"active": dut.active.value.to_unsigned(), "gated": dut.gated.value.to_unsigned(),
                "uniques": dut.uniques.value.to_unsigned(), "error": int(str(dut.error.value))}

    async def _receive(self, beats, cycles):
        sink = self.sink
        while True:
            ready = not sink.stalls()
            sink.ready.value = int(ready)
            await FallingEdge(self.dut.clk)
            if ready and str(sink.valid.value) == "1":
                beats.append(sink.value(sink.payload.value.to_unsigned()))
                cycles.append(_cycle(get_sim_time("ns")))
            await RisingEdge(self.dut.clk)

    async def _observe(self, snapshots):
        dut = self.dut
        while True:
            await FallingEdge(dut.clk)
            if str(dut.cfg_stream__valid.value) == "1" and str(dut.cfg_stream__ready.value) == "1":
                snapshots.append(self._snapshot())

    async def _host(self, thetas, cfgs):
        dut = self.dut
        for layer, value in enumerate(thetas):
            dut.theta_we.value = 1
            dut.theta_addr.value = layer
            dut.theta_data.value = value
            await RisingEdge(dut.clk)
        dut.theta_we.value = 0
        await self.cfg.send(cfgs)

    async def _finish(self, host, feeder):
        await host
        await feeder
        idle = 0
        while idle < 2:
            await FallingEdge(self.dut.clk)
            idle = idle + 1 if str(self.dut.busy.value) == "0" else 0

    async def run(self, jobs, thetas, max_cycles):
        """Run ``jobs``; returns the raw record of :func:`sim.block_match._split`."""
        cfgs, tokens = _payloads(jobs)
        beats, out_cycles, snapshots = [], [], []
        receiver = cocotb.start_soon(self._receive(beats, out_cycles))
        observer = cocotb.start_soon(self._observe(snapshots))
        host = cocotb.start_soon(self._host(thetas, cfgs))
        feeder = cocotb.start_soon(self.tokens.send(tokens))
        # A hang is a failure, never a loop.
        await with_timeout(cocotb.start_soon(self._finish(host, feeder)),
                           max_cycles * PERIOD_NS, "ns")
        snapshots.append(self._snapshot())
        receiver.cancel()
        observer.cancel()
        for monitor in self.monitors.values():
            monitor.check()
        transfers = {port: [_cycle(t) for t in self.monitors[port].transfers] for port in PORTS}
        if transfers["o_stream"] != out_cycles:
            raise AssertionError("the sink and the o_stream monitor disagree on the transfers")
        return {"cfg_cycles": transfers["cfg_stream"], "in_cycles": transfers["i_stream"],
                "out_cycles": out_cycles, "beats": beats, "snapshots": snapshots}


def _bad_jobs(params, jobs):
    """Bad jobs made from good ones: FS + HS + 1 = window, a repeated position, a last position
    that goes back, and (``representatives = "first"``) a job asking for ``mean``."""
    j0, j1, j2 = jobs[0], jobs[1 % len(jobs)], jobs[2 % len(jobs)]
    fs = params.window // 2
    bad_cfg = Job(j0.vectors[:5], j0.positions[:5], fs, params.window - 1 - fs)
    pos = j1.positions.copy()
    pos[len(pos) // 2] = pos[len(pos) // 2 - 1]
    repeated = Job(j1.vectors, pos, j1.frame_stride, j1.row_stride, j1.layer, j1.mean)
    pos = j2.positions.copy()
    pos[-1] = pos[-2] - 1
    back = Job(j2.vectors, pos, j2.frame_stride, j2.row_stride, j2.layer, j2.mean)
    bad = [bad_cfg, repeated, back]
    if not params.mean_unit:
        bad.append(Job(j0.vectors, j0.positions, j0.frame_stride, j0.row_stride, j0.layer, True))
    return bad


@cocotb.test(skip="FOCUS_JOB" not in os.environ)
async def job(dut):
    """Jobs from ``FOCUS_JOB``; the raw record to ``FOCUS_JOB_OUT``."""
    jobs, thetas, stalls, seed, max_cycles = load_jobs(os.environ["FOCUS_JOB"])
    tb = TB(dut, PARAMS, seed, idles=stalls, backpressure=stalls)
    await tb.start()
    raw = await tb.run(jobs, thetas, max_cycles)
    save_raw(os.environ["FOCUS_JOB_OUT"], raw, PARAMS.dim)


@cocotb.test(skip="FOCUS_JOB" in os.environ)
@cocotb.parametrize(idles=[0.0, 0.3], backpressure=[0.0, 0.3])
async def regression(dut, idles, backpressure):
    """Mixed jobs and bad jobs against golden, job by job, with ``idles`` on the input streams
    and ``backpressure`` on the output (the four stall patterns)."""
    p = PARAMS
    good, thetas = regression_jobs(p, JOBS, seed=SEED)
    bad = _bad_jobs(p, good)
    jobs, expect_error = [], []
    for n, g in enumerate(good):
        jobs.append(g)
        expect_error.append(False)
        if n < len(bad):
            jobs.append(bad[n])
            expect_error.append(True)
    dut._log.info("regression: %d good jobs (FOCUS_JOBS), %d bad, %d tokens, seed %d "
                  "(FOCUS_SEED)", len(good), len(bad), sum(len(j.positions) for j in jobs), SEED)
    tb = TB(dut, p, SEED, idles=idles, backpressure=backpressure)
    await tb.start()
    tokens = sum(len(j.positions) for j in jobs)
    stalls = max(idles, backpressure)
    budget = 2000 + int(tokens * (matcher_rounds(p) + p.elem_bits + 4) * 4 / (1 - stalls) ** 2)
    raw = await tb.run(jobs, thetas, budget)
    check_results(p, jobs, thetas, _split(jobs, raw), expect_error)
    dut._log.info("regression passed: %d jobs, %d cycles", len(jobs),
                  raw["out_cycles"][-1] - raw["in_cycles"][0] + 1)
