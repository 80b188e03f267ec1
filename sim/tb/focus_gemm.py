"""cocotb testbench of :class:`rtl.tile.focus_gemm.FocusGemm` (style R8).

Run through :func:`sim.runner.run_cocotb`, which passes the parameters as JSON in
``FOCUS_PARAMS``. Two tests:

- ``job``: the data path of ``sim.focus_gemm(..., simulator="icarus"/"verilator")``. It reads the
  beats of the three input streams from the ``.npz`` named by ``FOCUS_JOB`` (as
  :func:`sim.gemm.job_beats` makes them), drives them concurrently with the job's stalls and seed,
  with a protocol monitor on every port, and writes the result beats, ``cycles`` and the transfers
  per port to ``FOCUS_JOB_OUT``.
- ``monitor_catches_violations``: the protocol monitor itself records a planted violation.
"""

import os

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, RisingEdge, with_timeout

from rtl.tile.focus_gemm import (
    map_beat_layout,
    result_beat_layout,
    unique_beat_layout,
    weight_beat_layout,
)

from ..cocotb_streams import (
    PERIOD_NS,
    StreamMonitor,
    StreamSink,
    StreamSource,
    reset,
    start_clock,
    transfer_cycles,
)
from .settings import PARAMS

INPUTS = ("w_stream", "u_stream", "map_stream")
PORTS = (*INPUTS, "o_stream")


class TB:
    """Drivers (one :class:`StreamSource` per input stream), the sink, and monitors on all four
    ports of one FocusGemm."""

    def __init__(self, dut, params, stalls, seed):
        self.dut, self.params = dut, params
        dut._log.info("params %s, stalls %s, seed %d", params.tag, stalls, seed)
        layouts = {"w_stream": weight_beat_layout(params), "u_stream": unique_beat_layout(params),
                   "map_stream": map_beat_layout(params)}
        self.sources = {port: StreamSource(dut, port, layouts[port], stalls, seed)
                        for port in INPUTS}
        self.sink = StreamSink(dut, "o_stream", result_beat_layout(params), stalls, seed)
        self.monitors = {port: StreamMonitor(dut, port) for port in PORTS}

    async def start(self):
        start_clock(self.dut)
        await reset(self.dut)
        for monitor in self.monitors.values():
            monitor.start()

    async def run(self, beats, count, stalls):
        """Drive ``beats`` ({port: [payload, ...]}), receive ``count`` result beats."""
        sends = [cocotb.start_soon(self.sources[port].send(beats[port])) for port in INPUTS]
        total = sum(len(b) for b in beats.values()) + count
        budget = int(6 * total / (1.0 - stalls) ** 2 + 200 + 8 * self.params.dim) * PERIOD_NS
        received = await with_timeout(cocotb.start_soon(self.sink.recv(count)), budget, "ns")
        for send in sends:
            await send
        await RisingEdge(self.dut.clk)
        for monitor in self.monitors.values():
            monitor.check()
        first = min((m for m in (self.monitors[p] for p in INPUTS) if m.transfers),
                    key=lambda m: m.transfers[0])
        stats = {"cycles": transfer_cycles(first, self.monitors["o_stream"]),
                 **{f"transfers_{port}": len(self.monitors[port].transfers) for port in PORTS}}
        return received, stats


def _job_beats(job):
    w, u, u_last = job["w"], job["u"], job["u_last"]
    index, m_last, m_final = job["index"], job["m_last"], job["m_final"]
    return {
        "w_stream": [{"w": row} for row in w.tolist()],
        "u_stream": [{"x": row, "last": int(last)} for row, last in zip(u.tolist(), u_last,
                                                                         strict=True)],
        "map_stream": [{"index": row, "last": int(last), "final": int(final)}
                       for row, last, final in zip(index.tolist(), m_last, m_final, strict=True)],
    }


@cocotb.test(skip="FOCUS_JOB" not in os.environ)
async def job(dut):
    """One ``sim.focus_gemm`` job: beats from ``FOCUS_JOB``, results to ``FOCUS_JOB_OUT``."""
    with np.load(os.environ["FOCUS_JOB"]) as data:
        job = {key: data[key] for key in data.files}
    stalls, seed, count = float(job["stalls"]), int(job["seed"]), int(job["count"])
    tb = TB(dut, PARAMS, stalls, seed)
    await tb.start()
    received, stats = await tb.run(_job_beats(job), count, stalls)
    y = np.array([r["y"] for r in received], np.int64).reshape(count, PARAMS.scatter_rows,
                                                                PARAMS.dim)
    last = np.array([r["last"] for r in received], np.int64)
    np.savez(os.environ["FOCUS_JOB_OUT"], y=y, last=last, **stats)


@cocotb.test()
async def monitor_catches_violations(dut):
    """The weight monitor records a payload that changes while ``valid`` waits for ``ready``."""
    tb = TB(dut, PARAMS, 0.0, 0)
    await tb.start()
    source, monitor = tb.sources["w_stream"], tb.monitors["w_stream"]
    row = {"w": [1] * PARAMS.dim}
    await source.send([row] * PARAMS.dim)       # one chunk's weights: the array then waits
    dut.w_stream__payload.value = source.bits(row)
    dut.w_stream__valid.value = 1               # not taken: the chunk's vectors are owed first
    await ClockCycles(dut.clk, 2)
    dut.w_stream__payload.value = source.bits({"w": [2] * PARAMS.dim})
    await ClockCycles(dut.clk, 2)
    assert len(monitor.errors) == 1, monitor.errors
    assert monitor.errors[0].startswith("w_stream: payload changed while waiting"), monitor.errors
    assert len(monitor.transfers) == PARAMS.dim
