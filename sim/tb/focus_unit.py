"""cocotb testbench of :class:`rtl.top.focus_unit.FocusUnit` (spec 5; style R8).

Run through :func:`sim.runner.run_cocotb` (parameters as JSON in ``FOCUS_PARAMS``). One test,
``job``: the data path of ``sim.focus(..., simulator="icarus"/"verilator")``. It reads the job,
the stall probability and the seed from the JSON file named by ``FOCUS_JOB``, runs the host
program :func:`sim.focus.focus_program` through :class:`CocotbIO` (register bus, feeders with
idles, sinks with back-pressure, a stream-rule monitor on every stream port), and writes the
record, the received beats and the transfer cycles to ``FOCUS_JOB_OUT``.
"""

import json
import os

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, RisingEdge, with_timeout

from rtl.layouts import mask_beat_layout, offset_word_layout, score_beat_layout
from rtl.sic.block_matcher import match_output_layout
from rtl.top.focus_unit import token_layout

from ..cocotb_streams import PERIOD_NS, StreamMonitor, StreamSink, StreamSource, start_bench
from ..focus import INPUTS, OUTPUTS, _budget, focus_program
from .settings import PARAMS


class CocotbIO:
    """The host I/O of :func:`sim.focus.focus_program` under cocotb (the interface of
    :class:`sim.focus.AmaranthIO`). Bus accesses start just after a rising edge; read data is
    sampled at the falling edge of the next cycle, so a read takes two cycles here."""

    def __init__(self, dut, params, stalls, seed):
        self.dut = dut
        layouts = {"scores": score_beat_layout(params), "tokens": token_layout(params),
                   "mask": mask_beat_layout(params), "code": offset_word_layout(params),
                   "sic": match_output_layout(params)}
        self.sources = {port: StreamSource(dut, port, layouts[port], stalls, seed)
                        for port in INPUTS}
        self.sinks = {port: StreamSink(dut, port, layouts[port], stalls, seed)
                      for port in OUTPUTS}
        self.monitors = {port: StreamMonitor(dut, port) for port in (*INPUTS, *OUTPUTS)}
        self.received = {port: [] for port in OUTPUTS}
        self.tasks = {}
        dut.bus__w_en.value = 0
        dut.bus__r_en.value = 0
        dut.bus__addr.value = 0
        dut.bus__w_data.value = 0

    async def start(self):
        await start_bench(self.dut, self.monitors.values())
        self.receivers = [cocotb.start_soon(self._receive(port)) for port in OUTPUTS]

    async def _receive(self, port):
        sink, out = self.sinks[port], self.received[port]
        while True:
            ready = not sink.stalls()
            sink.ready.value = int(ready)
            await FallingEdge(self.dut.clk)
            if ready and str(sink.valid.value) == "1":
                out.append(sink.value(sink.payload.value.to_unsigned()))
            await RisingEdge(self.dut.clk)

    async def write(self, addr, value):
        dut = self.dut
        dut.bus__addr.value = int(addr)
        dut.bus__w_data.value = int(value) & 0xFFFFFFFF
        dut.bus__w_en.value = 1
        await RisingEdge(dut.clk)
        dut.bus__w_en.value = 0

    async def read(self, addr):
        dut = self.dut
        dut.bus__addr.value = int(addr)
        dut.bus__r_en.value = 1
        await RisingEdge(dut.clk)
        dut.bus__r_en.value = 0
        await FallingEdge(dut.clk)
        value = dut.bus__r_data.value.to_unsigned()
        await RisingEdge(dut.clk)
        return value

    def send(self, port, payloads):
        previous = self.tasks.get(port)

        async def run():
            if previous is not None:
                await previous
            await self.sources[port].send(payloads)
        self.tasks[port] = cocotb.start_soon(run())

    async def wait_sent(self, port):
        task = self.tasks.get(port)
        if task is not None:
            await task

    def beats(self, port):
        return self.received[port]

    def finish(self):
        for task in self.receivers:
            task.cancel()
        for monitor in self.monitors.values():
            monitor.stop()
            monitor.check()
        return {port: [int(t // PERIOD_NS) for t in self.monitors[port].transfers]
                for port in self.monitors}


@cocotb.test(skip="FOCUS_JOB" not in os.environ)
async def job(dut):
    """The job of ``FOCUS_JOB``; the record, beats and transfers to ``FOCUS_JOB_OUT``."""
    spec = json.loads(open(os.environ["FOCUS_JOB"]).read())
    params, job_ = PARAMS, spec["job"]
    dut._log.info("params %s, stalls %s, seed %d", params.tag, spec["stalls"], spec["seed"])
    io = CocotbIO(dut, params, spec["stalls"], spec["seed"])
    await io.start()
    budget = _budget(params, job_, spec["stalls"])
    # A hang is a failure, never a loop.
    record = await with_timeout(cocotb.start_soon(focus_program(io, params, job_)),
                                2 * budget * PERIOD_NS, "ns")
    transfers = io.finish()
    with open(os.environ["FOCUS_JOB_OUT"], "w") as f:
        json.dump({"record": record, "beats": io.received, "transfers": transfers}, f)
    dut._log.info("job done at %g ns", get_sim_time("ns"))
