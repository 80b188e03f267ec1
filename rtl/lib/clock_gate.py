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

__all__ = ["ICG_CELL", "ClockGate", "icg_verilog", "add_gated", "gated_pipeline",
           "ACTIVITY_BITS", "activity_members", "count_activity"]

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


def gated_pipeline(m, i, o, depth, work, *, flush=None, tag=None):
    """The ungated control of a ``depth``-stage pipeline from stream ``i`` to stream ``o`` whose
    datapath registers are gated with :func:`add_gated`.

    Each stage has a ``valid<k>`` flag and a ``nonzero<k>`` flag (the beat has work to do: the
    stage's datapath is clocked only for such beats), and with ``tag`` (a width) a ``tag<k>``
    that moves with them and reaches ``o.payload.tag``, so it always leaves with its own beat.
    The pipeline moves, one stage a cycle, whenever its last stage is empty or ``o`` takes it:
    ``i.ready`` is that condition, so it stalls as a whole. ``flush`` (a signal) empties every
    stage at the clock edge, including a beat taken in the same cycle.

    Drives ``i.ready`` and ``o.valid``; returns ``(advance, valid, nonzero)``, the move condition
    and the per-stage flag lists (stage 1 first).
    """
    valid = [Signal(name=f"valid{k}") for k in range(1, depth + 1)]
    nonzero = [Signal(name=f"nonzero{k}") for k in range(1, depth + 1)]
    advance = Signal()
    m.d.comb += [advance.eq(~valid[-1] | o.ready), i.ready.eq(advance), o.valid.eq(valid[-1])]
    with m.If(advance):
        m.d.sync += [valid[0].eq(i.valid), nonzero[0].eq(i.valid & work)]
        m.d.sync += [valid[k].eq(valid[k - 1]) for k in range(1, depth)]
        m.d.sync += [nonzero[k].eq(nonzero[k - 1]) for k in range(1, depth)]
    if flush is not None:
        with m.If(flush):
            m.d.sync += [v.eq(0) for v in valid]
    if tag is not None:
        tags = [Signal(tag, name=f"tag{k}") for k in range(1, depth + 1)]
        with m.If(advance):
            m.d.sync += tags[0].eq(i.payload.tag)
            m.d.sync += [tags[k].eq(tags[k - 1]) for k in range(1, depth)]
        m.d.comb += o.payload.tag.eq(tags[-1])
    return advance, valid, nonzero


#: Width of the activity counters ``active`` and ``gated`` (they wrap after 2**32 beats).
ACTIVITY_BITS = 32


def activity_members():
    """The members ``active`` and ``gated``, ``Out(ACTIVITY_BITS)`` each: the counters that
    :func:`count_activity` drives (or that a block forwards from its parts)."""
    return {"active": Out(ACTIVITY_BITS), "gated": Out(ACTIVITY_BITS)}


def count_activity(m, i, work, *, active, gated, clear):
    """Count the beats ``i`` transfers into ``active`` (``work`` high) or ``gated`` (low);
    ``clear`` zeroes both."""
    with m.If(clear):
        m.d.sync += [active.eq(0), gated.eq(0)]
    with m.Elif(i.valid & i.ready):
        with m.If(work):
            m.d.sync += active.eq(active + 1)
        with m.Else():
            m.d.sync += gated.eq(gated + 1)
