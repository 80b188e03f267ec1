"""An fp16 weight-stationary systolic array (fp16 multiply, fp32 accumulate, as the paper's Table
I): the second area reference of ``focus-rtl synth``."""

from amaranth.hdl import unsigned

from .fp16_multiplier import FP16Multiplier
from .fp32_adder import FP32Adder
from .systolic_array import SystolicArray

__all__ = ["SystolicArrayFp16"]


class SystolicArrayFp16(SystolicArray):
    """A ``rows`` x ``cols`` weight-stationary systolic array computing ``y = x @ W`` with fp16
    activations and weights and fp32 partial sums and results.

    The structure, timing and stream behaviour are :class:`rtl.tile.systolic_array.SystolicArray`'s
    (same registers, skew and deskew; 16-bit activations and weights, 32-bit partial sums):
    latency ``rows + cols - 1`` cycles, throughput one vector per cycle; back-pressure on
    ``o_stream`` holds the whole array and ``i_stream.ready`` is low meanwhile; a weight load
    waits for the array to drain. Each processing element is an
    :class:`rtl.tile.fp16_multiplier.FP16Multiplier` (exact fp16 x fp16 -> fp32 product) and an
    :class:`rtl.tile.fp32_adder.FP32Adder` (round to nearest even), combinational between the
    PE's registers, so one PE's multiply-add takes one cycle.

    Accumulation order (what a reference must reproduce): column ``c`` of the result is
    ``((p0 + p1) + p2) + ... + p(rows-1)`` with ``pr = float32(x[r]) * float32(W[r, c])``
    exact and each ``+`` rounded to fp32; row 0's product is taken as it is (not added to a
    zero, so ``-0`` products stay ``-0``). NaNs come out as :data:`rtl.tile.fp32_adder.FP32_QNAN`.
    Subnormal fp16 inputs are handled exactly unless ``flush_subnormals``; the fp32 sums handle
    subnormals too (a sum of fp16 products is a multiple of ``2**-48``, so it is never an fp32
    subnormal, and it cannot overflow: 32 products are below ``2**37``).

    Parameters
    ----------
    rows, cols : int
        The array's shape (at least 1 each).
    flush_subnormals : bool
        Multipliers that treat subnormal fp16 inputs as zeros (see
        :class:`rtl.tile.fp16_multiplier.FP16Multiplier`).

    Members
    -------
    w_stream : In(stream.Signature(StructLayout({"w": ArrayLayout(unsigned(16), cols)})))
        One row of weights per beat, as fp16 bit patterns.
    i_stream : In(stream.Signature(StructLayout({"x": ArrayLayout(unsigned(16), rows)})))
        One activation vector per beat, fp16 bit patterns.
    o_stream : Out(stream.Signature(StructLayout({"y": ArrayLayout(unsigned(32), cols)})))
        The results, fp32 bit patterns, in order.
    busy : Out(1)
        An activation is in flight.
    """

    def __init__(self, rows=32, cols=32, *, flush_subnormals=False):
        if not isinstance(flush_subnormals, bool):
            raise ValueError(f"SystolicArrayFp16 flush_subnormals = {flush_subnormals!r}: it "
                             f"must be True or False")
        self.flush_subnormals = flush_subnormals
        super().__init__(rows, cols, data_bits=16, acc_bits=32)

    def _shapes(self):
        return unsigned(16), unsigned(32)

    def _product(self, m, r, c, act, weight):
        mul = m.submodules[f"mul_{r}_{c}"] = FP16Multiplier(
            flush_subnormals=self.flush_subnormals)
        m.d.comb += [mul.a.eq(act), mul.b.eq(weight)]
        return mul.p

    def _add(self, m, r, c, above, product):
        add = m.submodules[f"add_{r}_{c}"] = FP32Adder()
        m.d.comb += [add.a.eq(above), add.b.eq(product)]
        return add.s
