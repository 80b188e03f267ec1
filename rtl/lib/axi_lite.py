"""An AXI4-Lite target in front of the unit's register bus (:mod:`rtl.lib.register_bus`).

No maintained AXI4-Lite slave fits Amaranth 0.5 from PyPI without pulling in more than it gives
(maia-hdl's ``Axi4LiteRegisterBridge`` brings SciPy and its own register abstraction), so this is
a small one, checked formally (``tests/test_formal_axi_lite.py``) and with cocotbext-axi's
``AxiLiteMaster`` on Icarus and Verilator.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .register_bus import ADDR_BITS, DATA_BITS, RegisterSignature

__all__ = ["AXI4LiteSignature", "AXI4LiteToRegisters", "RESP_OKAY", "RESP_SLVERR"]

#: ``BRESP``/``RRESP`` codes (AMBA AXI, A3.4.4).
RESP_OKAY = 0b00
RESP_SLVERR = 0b10


class AXI4LiteSignature(wiring.Signature):
    """An AXI4-Lite interface seen from the manager, with the AMBA channel names in lower case.

    ``addr_width`` is in bytes (the register bus's 256 words are 1 KiB: 10 bits); data is 32
    bits. ``awprot``/``arprot`` are carried for completeness and ignored by the target.
    """

    def __init__(self, addr_width=ADDR_BITS + 2, data_width=DATA_BITS):
        super().__init__({
            "awaddr": Out(addr_width), "awprot": Out(3), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wvalid": Out(1),
            "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_width), "arprot": Out(3), "arvalid": Out(1), "arready": In(1),
            "rdata": In(data_width), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
        })


def _address_set(addresses):
    words = set(int(a) for a in addresses)
    if any(not 0 <= a < 2 ** ADDR_BITS for a in words):
        raise ValueError(f"register addresses must be word addresses in 0 .. {2 ** ADDR_BITS - 1}")
    return Const(sum(1 << a for a in words), 2 ** ADDR_BITS)


class AXI4LiteToRegisters(wiring.Component):
    """Bridges an AXI4-Lite target port (``axi``) to the single-cycle register bus (``bus``).

    Parameters
    ----------
    readable, writable : iterable of int
        The word addresses that may be read and written. A read of any other address answers
        ``SLVERR`` with ``RDATA`` 0, and a write to any other address answers ``SLVERR``; neither
        reaches the register bus, so a bad access has no side effect. A write whose ``WSTRB`` is
        not all ones also answers ``SLVERR`` and writes nothing: every register is one 32-bit
        word. Byte address bits 1..0 are ignored; bits above the word address are ignored too
        (the map repeats).

    Behaviour: one read and one write may be outstanding at a time (AXI4-Lite allows a target to
    take them one by one). The write address and data channels are accepted independently, in
    any order; once both are held and no write response is waiting, the write goes to the bus
    and ``BVALID`` rises the next cycle. A read address is accepted when no read is in flight
    and no write is going to the bus in that cycle (writes first; a write needs ``BREADY`` before
    the next, so reads are never starved); ``RVALID`` rises two cycles later (the bus's read
    latency plus the response register), with the data and ``RRESP``. Every response holds until
    its ``READY``. Throughput: a write every 2 cycles, a read every 3, with the manager ready.

    Members
    -------
    axi : In(AXI4LiteSignature())
    bus : Out(RegisterSignature())
    """

    def __init__(self, readable, writable):
        self._readable = _address_set(readable)
        self._writable = _address_set(writable)
        super().__init__({"axi": In(AXI4LiteSignature()), "bus": Out(RegisterSignature())})

    def elaborate(self, platform):
        m = Module()
        axi, bus = self.axi, self.bus

        aw_full, aw_addr = Signal(name="aw_full"), Signal(ADDR_BITS, name="aw_addr")
        w_full = Signal()
        w_data = Signal(DATA_BITS)
        w_strb = Signal(DATA_BITS // 8)
        m.d.comb += [axi.awready.eq(~aw_full), axi.wready.eq(~w_full)]
        with m.If(axi.awvalid & axi.awready):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(axi.awaddr[2:2 + ADDR_BITS])]
        with m.If(axi.wvalid & axi.wready):
            m.d.sync += [w_full.eq(1), w_data.eq(axi.wdata), w_strb.eq(axi.wstrb)]

        # The write goes to the bus in the cycle both halves are held and B is free.
        write = Signal()
        write_ok = self._writable.bit_select(aw_addr, 1) & (w_strb == 2 ** len(w_strb) - 1)
        m.d.comb += write.eq(aw_full & w_full & ~axi.bvalid)
        with m.If(write):
            m.d.comb += [bus.w_en.eq(write_ok), bus.w_data.eq(w_data)]
            m.d.sync += [aw_full.eq(0), w_full.eq(0), axi.bvalid.eq(1),
                         axi.bresp.eq(Mux(write_ok, RESP_OKAY, RESP_SLVERR))]
        with m.Elif(axi.bvalid & axi.bready):
            m.d.sync += axi.bvalid.eq(0)

        # Reads: accept, read the bus, register the response.
        reading, read_ok = Signal(name="reading"), Signal(name="read_ok")
        ar_addr = axi.araddr[2:2 + ADDR_BITS]
        m.d.comb += axi.arready.eq(~write & ~reading & ~axi.rvalid)
        m.d.sync += reading.eq(axi.arvalid & axi.arready)
        with m.If(axi.arvalid & axi.arready):
            m.d.comb += bus.r_en.eq(self._readable.bit_select(ar_addr, 1))
            m.d.sync += read_ok.eq(self._readable.bit_select(ar_addr, 1))
        with m.If(reading):
            m.d.sync += [axi.rvalid.eq(1), axi.rdata.eq(Mux(read_ok, bus.r_data, 0)),
                         axi.rresp.eq(Mux(read_ok, RESP_OKAY, RESP_SLVERR))]
        with m.Elif(axi.rvalid & axi.rready):
            m.d.sync += axi.rvalid.eq(0)

        m.d.comb += bus.addr.eq(Mux(write, aw_addr, ar_addr))
        return m
