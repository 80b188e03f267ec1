"""cocotb testbench of :class:`rtl.top.focus_gemm_coded.FocusGemmCoded` (style R8).

Run through :func:`sim.runner.run_job` on block ``focus_gemm_coded`` (parameters as JSON in
``FOCUS_PARAMS``). Test ``job``: the JSON file named by ``FOCUS_JOB`` holds ``beats`` ({input
port: payloads}, several jobs back to back, as :func:`sim.gemm.coded_job` makes them), ``count``
(result beats), ``stalls`` and ``seed``. Every input is driven at once with seeded idles, the
results taken with seeded back-pressure, a stream-rule monitor on every port; written to
``FOCUS_JOB_OUT``: the result beats, ``error`` and ``cause`` as each job ended (sampled as the
next job's configuration beat is taken, and at the end), ``busy`` at the end, the transfers.
"""

import json
import os

import cocotb
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge, with_timeout

from rtl.sic.map_decoder import map_position_layout
from rtl.sic.match_layouts import map_word_layout
from rtl.tile.focus_gemm import result_beat_layout, unique_beat_layout, weight_beat_layout
from rtl.top.focus_gemm_coded import coded_gemm_config_layout

from ..cocotb_streams import PERIOD_NS, StreamMonitor, StreamSink, StreamSource, reset, start_clock
from .settings import PARAMS

INPUTS = ("cfg_stream", "w_stream", "u_stream", "code_stream", "pos_stream")
PORTS = (*INPUTS, "o_stream")


def _layouts(p):
    return {"cfg_stream": coded_gemm_config_layout(p), "w_stream": weight_beat_layout(p),
            "u_stream": unique_beat_layout(p), "code_stream": map_word_layout(p),
            "pos_stream": map_position_layout(p)}


@cocotb.test(skip="FOCUS_JOB" not in os.environ)
async def job(dut):
    with open(os.environ["FOCUS_JOB"]) as f:
        job = json.load(f)
    p, stalls, seed, count = PARAMS, float(job["stalls"]), int(job["seed"]), int(job["count"])
    dut._log.info("params %s, stalls %s, seed %d", p.tag, stalls, seed)
    start_clock(dut)
    await reset(dut)
    monitors = {port: StreamMonitor(dut, port).start() for port in PORTS}
    layouts = _layouts(p)
    flags = []

    async def at_configuration():
        """error and cause as each configuration beat after the first is taken."""
        taken = 0
        while True:
            await FallingEdge(dut.clk)
            if str(dut.cfg_stream__valid.value) == "1" and str(dut.cfg_stream__ready.value) == "1":
                if taken:
                    flags.append((int(dut.error.value), int(dut.cause.value)))
                taken += 1

    watcher = cocotb.start_soon(at_configuration())
    sources = {port: StreamSource(dut, port, layouts[port], stalls, seed) for port in INPUTS}
    sink = StreamSink(dut, "o_stream", result_beat_layout(p), stalls, seed)
    sends = [cocotb.start_soon(sources[port].send(job["beats"][port])) for port in INPUTS]
    total = sum(len(b) for b in job["beats"].values()) + count
    budget = int(8 * total / (1.0 - stalls) ** 2 + 400 + 8 * p.dim) * PERIOD_NS
    received = await with_timeout(cocotb.start_soon(sink.recv(count)), budget, "ns")
    for send in sends:
        await send
    await ClockCycles(dut.clk, 3)
    await RisingEdge(dut.clk)
    watcher.cancel()
    for monitor in monitors.values():
        monitor.check()
    flags.append((int(dut.error.value), int(dut.cause.value)))
    out = {"results": received, "flags": flags, "busy": int(dut.busy.value),
           "transfers": {port: len(monitors[port].transfers) for port in PORTS}}
    with open(os.environ["FOCUS_JOB_OUT"], "w") as f:
        json.dump(out, f)
