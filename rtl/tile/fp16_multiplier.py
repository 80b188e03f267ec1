"""An IEEE 754 binary16 multiplier with a binary32 product: the multiplier of the fp16 reference
array's processing elements."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .fp32_adder import FP32_QNAN, leading_one

__all__ = ["FP16Multiplier"]


class FP16Multiplier(wiring.Component):
    """``p = a * b`` for binary16 (fp16) ``a`` and ``b``, as a binary32 (fp32) ``p``.

    Combinational: latency 0, one product per cycle; no stream, no back-pressure.

    The product is **exact**: two 11-bit significands give at most 22 bits (fp32 has 24), and
    the product's exponent, from ``2**-48`` (two smallest subnormals) to below ``2**32`` (two
    largest normals), lies inside fp32's normal range. So there is no rounding, no overflow
    and no underflow: ``p`` equals ``float32(float64(a) * float64(b))``.

    Subnormal inputs are multiplied exactly by default (the product is normalized by its
    leading one, always to a normal fp32). With ``flush_subnormals=True`` a subnormal input
    counts as a zero of its sign (a smaller multiplier, without the normalizing shifter).
    Zeros give a zero whose sign is the XOR of the signs; an infinity times a non-zero finite
    number or an infinity gives an infinity of that sign; ``inf * 0`` and any NaN operand give
    the quiet NaN :data:`rtl.tile.fp32_adder.FP32_QNAN`. No exception flags.

    Parameters
    ----------
    flush_subnormals : bool
        Treat subnormal inputs as zeros.

    Members
    -------
    a, b : In(16)
        The operands, binary16 bit patterns.
    p : Out(32)
        The product, a binary32 bit pattern.
    """

    a: In(16)
    b: In(16)
    p: Out(32)

    def __init__(self, *, flush_subnormals=False):
        if not isinstance(flush_subnormals, bool):
            raise ValueError(f"FP16Multiplier flush_subnormals = {flush_subnormals!r}: it must "
                             f"be True or False")
        self.flush_subnormals = flush_subnormals
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        flush = self.flush_subnormals

        def unpack(x):
            exp, frac = x[10:15], x[0:10]
            zero = (exp == 0) & ((frac == 0) | flush)
            return {"exp": exp, "zero": zero, "inf": (exp == 0x1F) & (frac == 0),
                    "nan": (exp == 0x1F) & (frac != 0),
                    # Hidden bit and effective exponent: a subnormal is 0.frac * 2**(1 - 15).
                    "sig": Cat(frac, exp != 0), "eff": Mux(exp == 0, 1, exp)}

        ua, ub = unpack(a), unpack(b)
        sign = a[15] ^ b[15]
        product = Signal(22)
        m.d.comb += product.eq(ua["sig"] * ub["sig"])
        if flush:
            # Normal inputs: the leading one is bit 21 or bit 20.
            top = Signal(range(22))
            m.d.comb += top.eq(Mux(product[21], 21, 20))
        else:
            top = leading_one(m, product, "top")
        # The leading one moves to bit 21; the 21 bits below it are the top of the fraction.
        norm, lead = Signal(22, name="norm"), Signal(range(22), name="lead")
        m.d.comb += [lead.eq(21 - top), norm.eq(product << lead)]
        # value = product * 2**(ea + eb - 30 - 20); fp32 exponent ea + eb - 50 + top + 127.
        exp = Signal(8)
        m.d.comb += exp.eq(ua["eff"] + ub["eff"] + top + 77)

        with m.If(ua["nan"] | ub["nan"] | (ua["inf"] & ub["zero"]) | (ub["inf"] & ua["zero"])):
            m.d.comb += self.p.eq(FP32_QNAN)
        with m.Elif(ua["inf"] | ub["inf"]):
            m.d.comb += self.p.eq(Cat(Const(0, 23), Const(0xFF, 8), sign))
        with m.Elif(ua["zero"] | ub["zero"]):
            m.d.comb += self.p.eq(Cat(Const(0, 31), sign))
        with m.Else():
            m.d.comb += self.p.eq(Cat(Const(0, 2), norm[0:21], exp, sign))
        return m
