"""An IEEE 754 binary32 adder: the accumulator of the fp16 reference array's processing elements."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["FP32Adder", "FP32_QNAN", "leading_one"]

#: The one NaN the fp units return (quiet, positive, no payload), whatever NaN came in.
FP32_QNAN = 0x7FC00000


def leading_one(m, value, name):
    """A signal holding the index of the highest set bit of ``value`` (0 when ``value`` is 0),
    as a priority encoder: later assignments win, so the highest set bit's index stays."""
    width = len(value)
    index = Signal(range(width), name=name)
    for bit in range(width):
        with m.If(value[bit]):
            m.d.comb += index.eq(bit)
    return index


class FP32Adder(wiring.Component):
    """``s = a + b`` in IEEE 754 binary32 (fp32), rounded to nearest, ties to even.

    Combinational: latency 0, one addition per cycle; no stream, no back-pressure (the caller's
    registers hold the operands).

    Every input is handled as IEEE 754 defines, with no flush to zero: subnormal inputs are
    added exactly and a subnormal result is returned as a subnormal (gradual underflow). A sum
    of magnitude at or beyond ``2**128 * (1 - 2**-25)`` overflows to an infinity of its sign.
    An exact zero sum is ``+0`` unless both operands are ``-0``. ``inf + x = inf`` for finite or
    like-signed infinite ``x``; ``inf + -inf`` and any NaN operand give the quiet NaN
    :data:`FP32_QNAN` (NaN payloads and signs are not propagated). No exception flags.

    Method: the operands are ordered by magnitude; the smaller significand is shifted right by
    the exponent difference into guard, round and sticky bits; the significands are added or
    subtracted; the sum is normalized (one right shift after a carry, or a left shift by its
    leading zeros, limited so that the exponent does not drop below that of the subnormals);
    the rounding increment is added to the packed exponent and fraction, so that rounding that
    carries out of the fraction raises the exponent, up to infinity.

    Members
    -------
    a, b : In(32)
        The operands, binary32 bit patterns.
    s : Out(32)
        The rounded sum, a binary32 bit pattern.
    """

    a: In(32)
    b: In(32)
    s: Out(32)

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b

        def unpack(x):
            exp, frac = x[23:31], x[0:23]
            return {"sign": x[31], "exp": exp, "frac": frac,
                    "inf": (exp == 0xFF) & (frac == 0), "nan": (exp == 0xFF) & (frac != 0),
                    # Hidden bit and effective exponent: a subnormal is 0.frac * 2**(1 - 127).
                    "sig": Cat(frac, exp != 0), "eff": Mux(exp == 0, 1, exp)}

        ua, ub = unpack(a), unpack(b)
        # Order by magnitude: |big| >= |small| (the bit patterns order like the magnitudes).
        swap = b[0:31] > a[0:31]
        big_sign, small_sign = Mux(swap, b[31], a[31]), Mux(swap, a[31], b[31])
        big_sig = Mux(swap, ub["sig"], ua["sig"])
        small_sig = Mux(swap, ua["sig"], ub["sig"])
        big_exp = Mux(swap, ub["eff"], ua["eff"])
        diff = big_exp - Mux(swap, ua["eff"], ub["eff"])

        # Align: the small significand << 27, shifted right by min(diff, 27); the top 27 bits
        # are it with 3 bits below the unit in the last place (guard, round), the rest sticky.
        shift = Signal(range(28))
        m.d.comb += shift.eq(Mux(diff > 27, 27, diff))
        shifted = Signal(51)
        m.d.comb += shifted.eq(Cat(Const(0, 27), small_sig) >> shift)
        small = Cat(shifted[24] | (shifted[0:24] != 0), shifted[25:51])
        big = Cat(Const(0, 3), big_sig)

        subtract = big_sign ^ small_sign
        total = Signal(28)
        m.d.comb += total.eq(Mux(subtract, big - small, big + small))

        # Normalize so that the leading one is at bit 26 (3 bits below the 24-bit significand).
        top = leading_one(m, total, "top")
        norm = Signal(27)
        exp = Signal(9)   # biased, with room above 255
        left = Signal(range(27))
        with m.If(total[27]):
            m.d.comb += [norm.eq(total[1:28] | total[0]), exp.eq(big_exp + 1)]
        with m.Else():
            # A left shift of 26 - top, but the exponent stops at 1 (subnormal results).
            want = 26 - top
            m.d.comb += left.eq(Mux(want > big_exp - 1, big_exp - 1, want)[0:len(left)])
            m.d.comb += [norm.eq(total << left), exp.eq(big_exp - left)]

        # Round to nearest even on the packed exponent and fraction. A result left without its
        # leading one is subnormal: exponent field 0.
        exp_field = Mux(norm[26], exp, 0)
        packed = Cat(norm[3:26], exp_field)
        guard, rest, lsb = norm[2], norm[0:2] != 0, norm[3]
        rounded = Signal(32)
        m.d.comb += rounded.eq(packed + (guard & (rest | lsb)))

        inf_in = ua["inf"] | ub["inf"]
        nan = ua["nan"] | ub["nan"] | (ua["inf"] & ub["inf"] & (a[31] != b[31]))
        with m.If(nan):
            m.d.comb += self.s.eq(FP32_QNAN)
        with m.Elif(inf_in):
            m.d.comb += self.s.eq(Cat(Const(0, 23), Const(0xFF, 8), big_sign))
        with m.Elif(total == 0):
            m.d.comb += self.s.eq(Cat(Const(0, 31), a[31] & b[31]))
        with m.Elif((exp >= 0xFF) | (rounded[23:31] == 0xFF)):
            m.d.comb += self.s.eq(Cat(Const(0, 23), Const(0xFF, 8), big_sign))
        with m.Else():
            m.d.comb += self.s.eq(Cat(rounded[0:31], big_sign))
        return m
