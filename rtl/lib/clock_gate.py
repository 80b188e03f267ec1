"""Clock gating: clock enables for FPGAs and simulation, or integrated clock-gate (ICG) cells.

``gating="enable"`` keeps every register in the ``sync`` domain and gives the gated ones a clock
enable. ``gating="icg"`` puts them in a local domain clocked by an :class:`ClockGate` instance, a
latch-and-AND ICG whose behavioural Verilog, :func:`icg_verilog`, ships with the emitted Verilog.
To use a library cell, emit with a different ``icg_cell`` name (or replace the ``focus_icg`` module)
with ports ``CLK``, ``EN`` and ``GCLK``.

The Amaranth simulator cannot run a Verilog ``Instance``, and a clock made by combinational logic
races there, so a block built with ``icg_cell=None`` models the ICG as a clock enable: the cycle
behaviour is the same. The real ICG is exercised by cocotb on the emitted Verilog.
"""

from amaranth.hdl import ClockDomain, ClockSignal, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ICG_CELL", "ClockGate", "icg_verilog", "add_gated"]

ICG_CELL = "focus_icg"


def icg_verilog(name=ICG_CELL):
    """Behavioural latch-and-AND clock gate: GCLK = CLK & (EN latched while CLK is low)."""
    return f"""\
// Behavioural integrated clock gate. Replace with a standard cell (ports CLK, EN, GCLK) for ASIC.
module {name} (
    input  wire CLK,
    input  wire EN,
    output wire GCLK
);
    reg en_latch;
    /* verilator lint_off LATCH */
    always @(CLK or EN)
        if (!CLK)
            en_latch = EN;
    /* verilator lint_on LATCH */
    assign GCLK = CLK & en_latch;
endmodule
"""


class ClockGate(wiring.Component):
    """An instance of the ICG cell ``cell`` on the ``sync`` clock.

    Members
    -------
    en : In(1)
        Enable, sampled while the clock is low; the next rising edge passes when it is high.
    gclk : Out(1)
        The gated clock.
    """

    en: In(1)
    gclk: Out(1)

    def __init__(self, cell=ICG_CELL):
        self._cell = cell
        super().__init__()

    @property
    def cell(self):
        return self._cell

    def elaborate(self, platform):
        m = Module()
        m.submodules.icg = Instance(self._cell, i_CLK=ClockSignal("sync"), i_EN=self.en,
                                    o_GCLK=self.gclk)
        return m


def add_gated(m, name, enable, statements, *, gating, icg_cell=ICG_CELL):
    """Add ``statements`` (datapath register updates) that take effect only in cycles with
    ``enable`` high: through a clock enable, or through an ICG-clocked domain called ``name``.

    Gated registers are reset-less: they hold datapath values whose validity is tracked by
    (ungated) control registers.

    The enable is a signal named ``<name>_en`` in either case (no logic of its own), so that a
    simulation's waveform gives each gate's enable rate (:mod:`rtl.flow.power` reads it).
    """
    en = Signal(name=f"{name}_en")
    m.d.comb += en.eq(enable)
    if gating == "icg" and icg_cell is not None:
        domain = ClockDomain(name, local=True, reset_less=True)
        m.domains += domain
        gate = m.submodules[f"{name}_icg"] = ClockGate(icg_cell)
        m.d.comb += [gate.en.eq(en), domain.clk.eq(gate.gclk)]
        m.d[name] += statements
    else:
        with m.If(en):
            m.d.sync += statements
