"""A ready slice: a zero-latency stream stage that registers only ``ready``."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring

from ..block import stage_members

__all__ = ["ReadySlice"]


class ReadySlice(wiring.Component):
    """Cuts the combinational ``ready`` path of a stream without delaying its beats (what AXI
    register slices call the "reverse" or ready-only mode).

    Latency 0: while it holds nothing, ``o_stream.valid`` and ``o_stream.payload`` are
    ``i_stream``'s, so a beat offered while ``o_stream`` is ready leaves in the same cycle.
    Throughput: one beat per cycle. Storage: one beat. Back-pressure: ``i_stream.ready`` is a
    register, high exactly while the slice holds nothing, so it never depends on
    ``o_stream.ready`` in the same cycle. A beat offered while ``o_stream`` stalls is taken into
    the holding register and offered from there until it leaves; the input waits meanwhile. A
    stall of n cycles therefore delays the stream by n cycles, as a wire would.

    The stream rules hold on ``o_stream`` when they hold on ``i_stream``: ``o_stream.valid`` is
    ``i_stream.valid`` or the holding register's, never ``o_stream.ready``'s. The forward path
    gains a multiplexer on ``payload`` (and an OR on ``valid``); put the slice where the stage
    after it registers what it receives.

    Parameters
    ----------
    shape : shape-like
        The payload shape.

    Members
    -------
    i_stream : In(stream.Signature(shape))
    o_stream : Out(stream.Signature(shape))
    """

    #: Cycles a beat spends in the slice when ``o_stream`` is ready.
    latency = 0
    #: Beats it can hold.
    capacity = 1

    def __init__(self, shape):
        self._shape = shape
        super().__init__(stage_members(shape, shape))

    @property
    def shape(self):
        """The payload shape."""
        return self._shape

    def elaborate(self, platform):
        m = Module()
        i, o = self.i_stream, self.o_stream
        # Without a reset: a reset (or a ResetInserter's flush) need only clear ``held_valid``.
        held = Signal.like(i.payload, name="held", reset_less=True)
        held_valid = Signal()
        # Internal state a formal harness may reach (the proof's invariant), not an interface.
        self.probes = {"held": held, "held_valid": held_valid}
        m.d.comb += [
            i.ready.eq(~held_valid),
            o.valid.eq(held_valid | i.valid),
        ]
        with m.If(held_valid):
            m.d.comb += o.payload.eq(held)
            with m.If(o.ready):
                m.d.sync += held_valid.eq(0)
        with m.Else():
            m.d.comb += o.payload.eq(i.payload)
            with m.If(i.valid & ~o.ready):
                m.d.sync += [held.eq(i.payload), held_valid.eq(1)]
        return m
