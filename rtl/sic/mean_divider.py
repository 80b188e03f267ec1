"""The block matcher's mean divider: a group's rounded mean, bit-serially (spec 4.2, ``mean``)."""

from amaranth.hdl import Cat, Module, Mux, Signal

from ..block import FocusBlock, stage_members
from .match_layouts import group_sum_layout
from .similarity_comparator import vector_layout

__all__ = ["MeanDivider"]


class MeanDivider(FocusBlock):
    """The rounded mean of a group of c tokens from its ``dim`` element sums t:
    ``sign(t) * ((2|t| + c) // (2c))``, exactly (halves round away from zero), for
    ``1 <= c <= tile`` and ``|t| <= c * 2**(elem_bits-1)``, so that each result is a signed
    ``elem_bits`` element.

    Restoring division of ``2|t| + c`` by ``2c``, one quotient bit per cycle for all elements at
    once (the quotient has ``elem_bits`` bits). A group of one (c = 1) is its own mean and skips
    the division.

    Latency ``elem_bits + 1`` cycles from the input transfer to the result being offered (1 for
    c = 1); one group at a time: ``i_stream.ready`` is high only while idle, so a group per
    ``elem_bits + 2`` cycles (2 for c = 1) when the result is taken at once. Back-pressure: the
    result is held until ``o_stream.ready``.

    Parameters
    ----------
    params : FocusParams
        Uses ``dim``, ``elem_bits`` and ``tile``.

    Members
    -------
    i_stream : In(stream.Signature(group_sum_layout(params)))
    o_stream : Out(stream.Signature(vector_layout(params)))
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: stage_members(group_sum_layout(p), vector_layout(p)))

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        e, V = p.elem_bits, p.dim

        rem_bits = (p.tile * ((1 << e) + 1)).bit_length()      # 2|t| + c <= c * (2**e + 1)
        rems = [Signal(rem_bits, name=f"rem{n}") for n in range(V)]
        quots = [Signal(e, name=f"quot{n}") for n in range(V)]
        negs = [Signal(name=f"neg{n}") for n in range(V)]
        divisor = Signal(rem_bits)
        step = Signal(range(e))
        m.d.comb += [o.payload[n].eq(Mux(negs[n], -quots[n], quots[n])) for n in range(V)]

        with m.FSM(name="divide"):
            with m.State("IDLE"):
                m.d.comb += i.ready.eq(1)
                count = i.payload.count
                single = count == 1
                with m.If(i.valid):
                    for n in range(V):
                        t = i.payload.sums[n]
                        magnitude = Mux(t < 0, -t, t).as_unsigned()
                        m.d.sync += [
                            negs[n].eq(t < 0),
                            rems[n].eq((magnitude << 1) + count),
                            quots[n].eq(Mux(single, magnitude, 0)),
                        ]
                    m.d.sync += [divisor.eq(count << e), step.eq(0)]
                    with m.If(single):
                        m.next = "DONE"
                    with m.Else():
                        m.next = "DIVIDE"
            with m.State("DIVIDE"):
                # Quotient bit e-1-step: does 2c * 2**(e-1-step) fit in the remainder?
                for n in range(V):
                    fits = rems[n] >= divisor
                    with m.If(fits):
                        m.d.sync += rems[n].eq(rems[n] - divisor)
                    m.d.sync += quots[n].eq(Cat(fits, quots[n][:-1]))
                m.d.sync += [divisor.eq(divisor >> 1), step.eq(step + 1)]
                with m.If(step == e - 1):
                    m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += o.valid.eq(1)
                with m.If(o.ready):
                    m.next = "IDLE"
        return m
