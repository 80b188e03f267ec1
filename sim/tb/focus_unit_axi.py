"""cocotb testbench of :class:`rtl.top.axi_wrapper.FocusUnitAXI` with cocotbext-axi's bus models
(spec 5.6; style R8).

Run through :func:`sim.runner.run_cocotb` (parameters as JSON in ``FOCUS_PARAMS``; the job list
in the JSON file named by ``FOCUS_AXI_JOBS``; results written into the folder named by
``FOCUS_AXI_OUT``), all tests in one simulator run, so one build per simulator. The host side is
``AxiLiteMaster`` on ``s_axi_ctrl``, ``AxiStreamSource`` on ``s_axis_*`` and ``AxiStreamSink``
on ``m_axis_*`` (whole beats: ``byte_lanes=1``), with the project's stream-rule monitor on every
AXI4-Stream port beside them (cocotbext-axi's does not check that ``tvalid``, ``tdata`` and
``tlast`` hold until ``tready``).

Tests:

- ``registers``: reads every address 0..255 (data and response) and writes the bad ones (read
  only, unmapped, a partial strobe); results to ``registers.json``, checked by pytest.
- ``jobs`` (x 4 pause patterns: none, source pauses, sink pauses, both): the jobs of
  ``FOCUS_AXI_JOBS`` back to back through :func:`sim.focus.focus_program`, with every response
  OKAY; records, beats and transfers to ``jobs-<pattern>.json``, compared with ``golden.focus``
  by pytest.
- ``interrupts``: ``irq`` and ``IRQ_STATUS`` after a rejected job (SEC_CONFIG), with the events
  masked and then enabled, write-1-to-clear, and after a good job's SEC and SIC ends.
"""

import itertools
import json
import logging
import os
from pathlib import Path

import cocotb
from amaranth.lib.wiring import In
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, with_timeout
from cocotbext.axi import (
    AxiLiteBus,
    AxiLiteMaster,
    AxiResp,
    AxiStreamBus,
    AxiStreamSink,
    AxiStreamSource,
)

from rtl.codecs import from_bits, to_bits
from rtl.top.axi_wrapper import AXI_CTRL, axis_ports
from rtl.top.registers import REGISTER, Ctrl, Irq, Reg

from ..cocotb_streams import PERIOD_NS, StreamMonitor
from ..focus import _budget, focus_program, wait_idle
from ..streams import Stalls
from .settings import PARAMS

#: The pause patterns, crossed: (sources pause, sinks pause).
PATTERNS = {"none": (False, False), "idle": (True, False), "backpressure": (False, True),
            "both": (True, True)}
#: Probability of a pause cycle on a paused side.
PAUSE = 0.3


def _pauses(seed):
    stalls = Stalls(PAUSE, seed)
    return (int(stalls()) for _ in itertools.count())


class AxiIO:
    """The host I/O of :func:`sim.focus.focus_program` over the AXI ports (the interface of
    :class:`sim.focus.AmaranthIO`): ``write``/``read`` are AXI4-Lite transactions at byte
    address ``4 * reg`` (every response is kept in :attr:`responses`), ``send`` queues payloads
    as AXI4-Stream frames (a frame ends at each payload with ``last``), ``beats`` is every
    payload of the completed frames received on an output port."""

    def __init__(self, dut, params, pattern="none", seed=0):
        self.dut, self.params = dut, params
        self.ports = axis_ports(params)
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, AXI_CTRL), dut.aclk,
                                    dut.aresetn, reset_active_level=False)
        self.sources, self.sinks, self.monitors = {}, {}, {}
        source_pause, sink_pause = PATTERNS[pattern]
        for name, (prefix, flow, _, _, has_last) in self.ports.items():
            bus = AxiStreamBus.from_prefix(dut, prefix)
            if flow == In:
                end = AxiStreamSource(bus, dut.aclk, dut.aresetn, reset_active_level=False,
                                      byte_lanes=1)
                self.sources[name] = end
                paused = source_pause
            else:
                end = AxiStreamSink(bus, dut.aclk, dut.aresetn, reset_active_level=False,
                                    byte_lanes=1)
                self.sinks[name] = end
                paused = sink_pause
            if paused:
                end.set_pause_generator(_pauses(f"{seed}:{name}"))
            held = [getattr(dut, f"{prefix}_tdata")]
            if has_last:
                held.append(getattr(dut, f"{prefix}_tlast"))
            self.monitors[name] = StreamMonitor(dut, prefix, clock=dut.aclk, signals={
                "valid": getattr(dut, f"{prefix}_tvalid"),
                "ready": getattr(dut, f"{prefix}_tready"), "payload": held})
        # cocotbext-axi logs every transaction at INFO: thousands of lines per job.
        for model in (self.master.write_if, self.master.read_if, *self.sources.values(),
                      *self.sinks.values()):
            model.log.setLevel(logging.WARNING)
        self.received = {name: [] for name in self.sinks}
        self.responses = []

    async def start(self):
        Clock(self.dut.aclk, PERIOD_NS, unit="ns").start()
        self.dut.aresetn.value = 0
        for _ in range(4):
            await RisingEdge(self.dut.aclk)
        self.dut.aresetn.value = 1
        await RisingEdge(self.dut.aclk)
        for monitor in self.monitors.values():
            monitor.start()

    async def write(self, addr, value, length=4):
        """Write ``value`` to register ``addr`` (``length`` bytes from its byte 0: fewer than 4
        is a partial strobe); returns the response code."""
        data = (int(value) & 0xFFFFFFFF).to_bytes(4, "little")[:length]
        resp = (await self.master.write(4 * int(addr), data)).resp
        self.responses.append(("write", int(addr), int(resp)))
        return int(resp)

    async def read_resp(self, addr):
        """(value, response code) of a read of register ``addr``."""
        result = await self.master.read(4 * int(addr), 4)
        self.responses.append(("read", int(addr), int(result.resp)))
        return int.from_bytes(result.data, "little"), int(result.resp)

    async def read(self, addr):
        return (await self.read_resp(addr))[0]

    def send(self, port, payloads):
        _, _, layout, _, has_last = self.ports[port]
        width = layout.size
        frame = []
        for payload in payloads:
            bits = to_bits(layout, payload)
            frame.append(bits & ((1 << (width - 1)) - 1) if has_last else bits)
            if has_last and bits >> (width - 1):
                self.sources[port].send_nowait(frame)
                frame = []
        if frame:
            self.sources[port].send_nowait(frame)

    async def wait_sent(self, port):
        await self.sources[port].wait()

    def beats(self, port):
        _, _, layout, _, has_last = self.ports[port]
        sink, out = self.sinks[port], self.received[port]
        while not sink.empty():
            frame = list(sink.recv_nowait().tdata)
            last = (1 << (layout.size - 1)) if has_last else 0
            out += [from_bits(layout, word | (last if i == len(frame) - 1 else 0))
                    for i, word in enumerate(frame)]
        return out

    async def irq(self):
        """``irq`` sampled at the next falling edge."""
        await FallingEdge(self.dut.aclk)
        return int(self.dut.irq.value)

    def finish(self):
        for monitor in self.monitors.values():
            monitor.stop()
            monitor.check()
        return {port: [int(t // PERIOD_NS) for t in self.monitors[port].transfers]
                for port in self.monitors}


def _out(name):
    return Path(os.environ["FOCUS_AXI_OUT"]) / name


def _jobs():
    return json.loads(Path(os.environ["FOCUS_AXI_JOBS"]).read_text())


@cocotb.test(skip="FOCUS_AXI_OUT" not in os.environ)
async def registers(dut):
    """Every address read (value, response); bad writes answered (response); after them the
    readable registers again and STATUS."""
    io = AxiIO(dut, PARAMS)
    await io.start()
    reads = [await io.read_resp(addr) for addr in range(256)]
    writes = {}
    for addr in (Reg.ID, Reg.STATUS, Reg.KEPT, 0x03, 0x0F, 0x1B, 0x1E, 0xFF):
        writes[f"{int(addr):#04x}"] = await io.write(addr, 0xFFFFFFFF)
    writes["partial SEC_M"] = await io.write(Reg.SEC_M, 0x12345678, length=2)
    writes["SEC_M"] = await io.write(Reg.SEC_M, 0x12345678)
    writes["SEC_MODE"] = await io.write(Reg.SEC_MODE, 0xFFFFFFFF)
    writes["IRQ_ENABLE"] = await io.write(Reg.IRQ_ENABLE, 0xFFFFFFFF)
    after = {name: await io.read_resp(Reg[name])
             for name in ("ID", "STATUS", "SEC_M", "SEC_MODE", "KEPT", "IRQ_ENABLE",
                          "IRQ_STATUS")}
    io.finish()
    _out("registers.json").write_text(json.dumps({"reads": reads, "writes": writes,
                                                  "after": after}))


@cocotb.test(skip="FOCUS_AXI_OUT" not in os.environ)
@cocotb.parametrize(pattern=list(PATTERNS))
async def jobs(dut, pattern):
    """The jobs back to back under the pause pattern; every response OKAY; irq not asserted
    (IRQ_ENABLE is 0) though IRQ_STATUS records the job ends."""
    jobs_ = _jobs()
    io = AxiIO(dut, PARAMS, pattern, seed=len(pattern))
    await io.start()
    records = []
    for job in jobs_:
        budget = _budget(PARAMS, job, PAUSE if pattern != "none" else 0.0)
        records.append(await with_timeout(cocotb.start_soon(focus_program(io, PARAMS, job)),
                                          4 * budget * PERIOD_NS, "ns"))
        assert not await io.irq()
    assert await io.read(Reg.IRQ_STATUS) == Irq.SEC_DONE | Irq.SIC_DONE
    bad = [r for r in io.responses if r[2] != AxiResp.OKAY]
    assert not bad, f"responses not OKAY: {bad[:5]}"
    beats = {port: io.beats(port) for port in io.sinks}
    transfers = io.finish()
    _out(f"jobs-{pattern}.json").write_text(json.dumps({"records": records, "beats": beats,
                                                        "transfers": transfers}))


@cocotb.test(skip="FOCUS_AXI_OUT" not in os.environ)
async def interrupts(dut):
    """A rejected SEC job (M = 0) raises SEC_DONE and ERROR: with IRQ_ENABLE 0 irq stays low,
    enabling ERROR raises it, clearing ERROR lowers it, enabling SEC_DONE raises it again; a
    good job's SEC and SIC ends raise irq with SEC_DONE | SIC_DONE enabled."""
    io = AxiIO(dut, PARAMS, "both", seed=7)
    await io.start()
    assert await io.irq() == 0 and await io.read(Reg.IRQ_STATUS) == 0
    await io.write(Reg.SEC_M, 0)
    await io.write(Reg.SEC_R, 1)
    await io.write(Reg.CTRL, Ctrl.START_SEC)
    status = await wait_idle(io)
    assert status & REGISTER["STATUS"].field("SEC_CONFIG").mask
    for _ in range(8):
        assert await io.irq() == 0                  # nothing enabled
    assert await io.read(Reg.IRQ_STATUS) == Irq.SEC_DONE | Irq.ERROR
    await io.write(Reg.IRQ_ENABLE, Irq.ERROR)
    assert await io.irq() == 1
    await io.write(Reg.IRQ_STATUS, Irq.ERROR)       # write 1 to clear
    assert await io.irq() == 0
    assert await io.read(Reg.IRQ_STATUS) == Irq.SEC_DONE
    await io.write(Reg.IRQ_ENABLE, Irq.SEC_DONE)
    assert await io.irq() == 1
    await io.write(Reg.IRQ_STATUS, Irq.SEC_DONE | Irq.SIC_DONE | Irq.ERROR)
    assert await io.irq() == 0
    await io.write(Reg.CTRL, Ctrl.CLEAR)
    # A good job: SEC and SIC ends, irq high at the end.
    await io.write(Reg.IRQ_ENABLE, Irq.SEC_DONE | Irq.SIC_DONE)
    job = _jobs()[0]
    await with_timeout(cocotb.start_soon(focus_program(io, PARAMS, job)),
                       4 * _budget(PARAMS, job, PAUSE) * PERIOD_NS, "ns")
    assert await io.irq() == 1
    assert await io.read(Reg.IRQ_STATUS) == Irq.SEC_DONE | Irq.SIC_DONE
    await io.write(Reg.IRQ_STATUS, Irq.SEC_DONE)
    assert await io.irq() == 1                      # SIC_DONE still pending
    await io.write(Reg.IRQ_STATUS, Irq.SIC_DONE)
    assert await io.irq() == 0
    io.finish()
    _out("interrupts.json").write_text(json.dumps({"done": True}))
