"""The register-to-register timing harness that ``focus-rtl synth`` puts around a block for the FPGA
flows, so that every path nextpnr times starts and ends at a flip-flop."""


from amaranth.back import verilog
from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .blocks import build_block

HARNESS_NAME = "focus_harness"

# ---- the timing harness -------------------------------------------------------------------------

class TimingHarness(wiring.Component):
    """A wrapper that makes every path through ``block`` register to register, on four pins.

    Every input bit of ``block`` is driven from one stage of a shift chain fed by ``din``; every
    output bit is registered and XOR-reduced into ``dout`` through a tree of 4-input XORs with a
    register after each level. Nothing of the block can be optimised away (every output reaches
    ``dout``, every input depends on ``din``) and no path has an unconstrained I/O end. The pins
    are ``clk``, ``rst``, ``din`` and ``dout``. The harness's registers are reset-less.

    Parameters
    ----------
    block : wiring.Component
        The design under test (in the ``sync`` domain). It becomes submodule ``dut``.

    Members
    -------
    din : In(1)
        Serial input; enters the shift chain.
    dout : Out(1)
        XOR of all the block's registered outputs, a few cycles later.

    Attributes
    ----------
    in_bits, out_bits : int
        Input and output port bits of ``block``.
    overhead_ffs : int
        Flip-flops of the harness itself (shift chain, output register, XOR tree).
    """

    din: In(1)
    dout: Out(1)

    def __init__(self, block):
        self._block = block
        self._ins, self._outs = [], []
        for _path, member, value in block.signature.flatten(block):
            value = Value.cast(value)
            if len(value):
                (self._ins if member.flow == In else self._outs).append(value)
        self.in_bits = sum(len(v) for v in self._ins)
        self.out_bits = sum(len(v) for v in self._outs)
        tree, n = 0, self.out_bits
        while n > 1:
            n = (n + 3) // 4
            tree += n
        self.overhead_ffs = self.in_bits + self.out_bits + tree
        super().__init__()

    @property
    def block(self):
        """The design under test."""
        return self._block

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self._block
        if self.in_bits:
            chain = Signal(self.in_bits, reset_less=True)
            m.d.sync += chain.eq(Cat(self.din, chain[:-1]))
            m.d.comb += Cat(*self._ins).eq(chain)
        if not self.out_bits:
            return m
        level = Signal(self.out_bits, reset_less=True)
        m.d.sync += level.eq(Cat(*self._outs))
        depth = 0
        while len(level) > 1:
            depth += 1
            n = (len(level) + 3) // 4
            reduced = Signal(n, name=f"xor{depth}", reset_less=True)
            m.d.sync += reduced.eq(Cat(level[4 * i:4 * i + 4].xor() for i in range(n)))
            level = reduced
        m.d.comb += self.dout.eq(level)
        return m


def harness_verilog(block, params):
    """Verilog of :class:`TimingHarness` around registry block ``block`` (module
    ``focus_harness``; the block is module ``focus_harness.dut``), and the harness itself."""
    harness = TimingHarness(build_block(block, params, icg_cell=None))
    return verilog.convert(harness, name=HARNESS_NAME, emit_src=False), harness
