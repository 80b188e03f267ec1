# amaranth: UnusedElaboratable=no
"""A formal check of the AXI4-Lite target (:class:`rtl.lib.axi_lite.AXI4LiteToRegisters`) with
yowasp-sby and z3.

The manager is free in every cycle but for the AXI rules it must obey (a raised VALID and its
payload hold until READY); the register bus's read data is free. Properties, by bounded model
checking:

- every write (an AW and a W handshake) is answered by exactly one B, and no B comes without a
  write; every AR by exactly one R, and no R without a read; one write in flight (the next one's
  address and data may be buffered behind its response) and one read;
- B and R obey the same rules (VALID and payload hold until READY);
- the bus sees exactly one ``w_en`` per write answered OKAY, with the manager's address and
  data, and none for a write answered SLVERR (an address not writable, or a partial strobe);
- a read of a readable address answers OKAY with the bus's data from the cycle after ``r_en``;
  any other read answers SLVERR with 0 and no ``r_en``;
- a response follows its request within a bounded number of cycles when the manager is ready.

The cover task reaches an OKAY and a SLVERR write, an OKAY and a SLVERR read, and a write and a
read in flight together, so the proof cannot pass vacuously.
"""

import pytest
from amaranth.asserts import AnySeq, Initial
from amaranth.hdl import Assert, Assume, ClockDomain, Cover, Elaboratable, Module, Mux, Signal
from helpers import check_bmc_and_cover

from rtl.lib.axi_lite import RESP_OKAY, RESP_SLVERR, AXI4LiteToRegisters

pytestmark = pytest.mark.synth

DEPTH = 14
READABLE = {0, 2, 3}
WRITABLE = {1, 3}

def _held(m, rst, valid, ready, payload):
    """Assume (manager side) that a raised ``valid`` and its payload hold until ``ready``."""
    waiting = Signal()
    held = Signal.like(payload)
    m.d.sync += [waiting.eq(valid & ~ready), held.eq(payload)]
    return waiting & ~rst, valid & (payload == held)


def _queue2(m, push, value, pop):
    """A two-entry shadow queue of the monitor: ``value`` pushed on ``push``, the head dropped on
    ``pop``; returns the head (the oldest entry)."""
    head, tail, count = Signal.like(value), Signal.like(value), Signal(2)
    with m.If(push & pop):
        m.d.sync += [head.eq(Mux(count == 1, value, tail)), tail.eq(value)]
    with m.Elif(push):
        m.d.sync += count.eq(count + 1)
        with m.If(count == 0):
            m.d.sync += head.eq(value)
        with m.Else():
            m.d.sync += tail.eq(value)
    with m.Elif(pop):
        m.d.sync += [count.eq(count - 1), head.eq(tail)]
    return head


class AXILiteProperties(Elaboratable):
    def __init__(self):
        self.domain = ClockDomain("sync")

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = cd = self.domain
        m.submodules.dut = dut = AXI4LiteToRegisters(READABLE, WRITABLE)
        axi, bus = dut.axi, dut.bus
        rst = cd.rst

        # A free manager and bus, within the rules.
        for name in ("awaddr", "awprot", "awvalid", "wdata", "wstrb", "wvalid", "bready",
                     "araddr", "arprot", "arvalid", "rready"):
            port = getattr(axi, name)
            m.d.comb += port.eq(AnySeq(len(port)))
        m.d.comb += bus.r_data.eq(AnySeq(32))
        m.d.comb += Assume(rst == Initial())
        for valid, ready, payload in ((axi.awvalid, axi.awready, axi.awaddr),
                                      (axi.wvalid, axi.wready, axi.wdata),
                                      (axi.wvalid, axi.wready, axi.wstrb),
                                      (axi.arvalid, axi.arready, axi.araddr)):
            when, holds = _held(m, rst, valid, ready, payload)
            with m.If(when):
                m.d.comb += Assume(holds)
        # The target's responses, under the same rules.
        for valid, ready, payload in ((axi.bvalid, axi.bready, axi.bresp),
                                      (axi.rvalid, axi.rready, axi.rdata),
                                      (axi.rvalid, axi.rready, axi.rresp)):
            when, holds = _held(m, rst, valid, ready, payload)
            with m.If(when):
                m.d.comb += Assert(holds)

        # Writes: the last AW and W of the manager, and what is owed.
        aw_hs, w_hs = axi.awvalid & axi.awready, axi.wvalid & axi.wready
        b_hs, ar_hs = axi.bvalid & axi.bready, axi.arvalid & axi.arready
        r_hs = axi.rvalid & axi.rready
        aw_n, w_n, b_n, ar_n, r_n, ok_writes = (Signal(4) for _ in range(6))
        aw_addr = _queue2(m, aw_hs, axi.awaddr[2:10], b_hs)        # the write being answered
        w_data = _queue2(m, w_hs, axi.wdata, b_hs)
        w_strb = _queue2(m, w_hs, axi.wstrb, b_hs)
        with m.If(aw_hs):
            m.d.sync += aw_n.eq(aw_n + 1)
        with m.If(w_hs):
            m.d.sync += w_n.eq(w_n + 1)
        with m.If(b_hs):
            m.d.sync += b_n.eq(b_n + 1)
        pairs = Signal(4)                                               # min(aw_n, w_n)
        m.d.comb += pairs.eq(Mux(aw_n < w_n, aw_n, w_n))
        owed_b = Signal(4)
        m.d.comb += owed_b.eq(pairs - b_n)
        with m.If(~rst):
            # One write in flight plus the next one's halves buffered behind its response.
            m.d.comb += [Assert(owed_b <= 2), Assert(aw_n - b_n <= 2), Assert(w_n - b_n <= 2)]
            with m.If(axi.bvalid):
                m.d.comb += Assert(owed_b >= 1)

        # The bus write: once per OKAY write, with the manager's address and data.
        writable = sum(1 << a for a in WRITABLE)
        good = (((writable >> aw_addr) & 1) == 1) & (w_strb == 0xF)
        with m.If(bus.w_en & ~rst):
            m.d.comb += [Assert(owed_b >= 1), Assert(~axi.bvalid), Assert(good),
                         Assert(bus.addr == aw_addr), Assert(bus.w_data == w_data)]
            m.d.sync += ok_writes.eq(ok_writes + 1)
        with m.If(b_hs & ~rst):
            m.d.comb += Assert((axi.bresp == RESP_OKAY) == good)
            m.d.comb += Assert((axi.bresp == RESP_OKAY) | (axi.bresp == RESP_SLVERR))
        with m.If(~rst & ~axi.bvalid):
            m.d.comb += Assert(ok_writes <= b_n + 1)

        # Reads: the address accepted, the bus data of the cycle after r_en, and what is owed.
        ar_addr, r_expect, read_good, r_en_seen = Signal(8), Signal(32), Signal(), Signal()
        readable = sum(1 << a for a in READABLE)
        with m.If(ar_hs):
            m.d.sync += [ar_n.eq(ar_n + 1), ar_addr.eq(axi.araddr[2:10]),
                         read_good.eq(((readable >> axi.araddr[2:10]) & 1) == 1)]
            with m.If(~rst):
                m.d.comb += [Assert(bus.r_en == (((readable >> axi.araddr[2:10]) & 1) == 1)),
                             Assert(bus.addr == axi.araddr[2:10])]
        with m.Elif(~rst):
            m.d.comb += Assert(~bus.r_en)
        m.d.sync += r_en_seen.eq(bus.r_en)
        with m.If(r_en_seen):
            m.d.sync += r_expect.eq(bus.r_data)
        with m.If(r_hs):
            m.d.sync += r_n.eq(r_n + 1)
        owed_r = Signal(4)
        m.d.comb += owed_r.eq(ar_n - r_n)
        with m.If(~rst):
            m.d.comb += Assert(owed_r <= 1)
            with m.If(axi.rvalid):
                m.d.comb += Assert(owed_r == 1)
        with m.If(r_hs & ~rst):
            with m.If(read_good):
                m.d.comb += [Assert(axi.rresp == RESP_OKAY), Assert(axi.rdata == r_expect)]
            with m.Else():
                m.d.comb += [Assert(axi.rresp == RESP_SLVERR), Assert(axi.rdata == 0)]

        # Bounded response: with the manager ready, a held request is answered within 3 cycles.
        wait_b, wait_r = Signal(3), Signal(3)
        m.d.sync += [wait_b.eq(Mux(owed_b.any() & ~axi.bvalid, wait_b + 1, 0)),
                     wait_r.eq(Mux(owed_r.any() & ~axi.rvalid, wait_r + 1, 0))]
        with m.If(~rst):
            m.d.comb += [Assert(wait_b <= 2), Assert(wait_r <= 2)]

        m.d.comb += [
            Cover(b_hs & (axi.bresp == RESP_OKAY) & (aw_addr == 3)),
            Cover(b_hs & (axi.bresp == RESP_SLVERR)),
            Cover(r_hs & (axi.rresp == RESP_OKAY) & (axi.rdata == 0x12345678)),
            Cover(r_hs & (axi.rresp == RESP_SLVERR)),
            Cover((owed_b == 1) & (owed_r == 1)),
        ]
        return m


@pytest.mark.slow
def test_formal_axi_lite():
    check_bmc_and_cover("axi_lite", AXILiteProperties(), DEPTH, covers=5, engine="smtbmc z3")
