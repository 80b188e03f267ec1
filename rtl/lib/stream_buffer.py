"""A stream register stage: an output register, or a skid buffer that also registers ``ready``."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring

from ..block import stage_members

__all__ = ["StreamBuffer"]


class StreamBuffer(wiring.Component):
    """One register stage between ``i_stream`` and ``o_stream``: every beat leaves, in order,
    exactly once, one cycle or more after it arrived.

    ``skid=False``, an **output register** (the stream docs' ``ValueNegator`` stage): latency 1,
    one beat per cycle while ``o_stream`` is ready, and one beat of storage. ``i_stream.ready`` is
    ``~o_stream.valid | o_stream.ready``: it depends combinationally on ``o_stream.ready``, so
    back-pressure passes through in the same cycle.

    ``skid=True``, a **skid buffer**: latency 1, one beat per cycle while ``o_stream`` is ready,
    and two beats of storage (the output register and a skid register that takes the beat that
    arrives in the cycle the output stalls). ``i_stream.ready`` is a register (it is low exactly
    while the skid register is full), so no combinational path runs from ``o_stream.ready`` to
    ``i_stream.ready``: back-pressure reaches the input one cycle later.

    Either way ``o_stream.valid`` and ``o_stream.payload`` are registers, so the stream rules hold
    on ``o_stream`` whatever ``o_stream.ready`` does, and on ``i_stream`` ``ready`` never waits for
    anything but ``o_stream``. The output payload register keeps the last beat after it has left.

    Parameters
    ----------
    shape : shape-like
        The payload shape.
    skid : bool
        Build a skid buffer (registered ``ready``) instead of a plain output register.

    Members
    -------
    i_stream : In(stream.Signature(shape))
    o_stream : Out(stream.Signature(shape))
    """

    def __init__(self, shape, *, skid=False):
        if not isinstance(skid, bool):
            raise TypeError(f"skid must be a bool, not {skid!r}")
        self._shape = shape
        self._skid = skid
        super().__init__(stage_members(shape, shape))

    @property
    def shape(self):
        """The payload shape."""
        return self._shape

    @property
    def skid(self):
        """Whether this is a skid buffer (registered ``i_stream.ready``)."""
        return self._skid

    def elaborate(self, platform):
        m = Module()
        i, o = self.i_stream, self.o_stream
        if not self._skid:
            with m.If(i.valid & (~o.valid | o.ready)):
                m.d.comb += i.ready.eq(1)
                m.d.sync += [o.payload.eq(i.payload), o.valid.eq(1)]
            with m.Elif(o.ready):
                m.d.sync += o.valid.eq(0)
            return m

        # The skid register takes the beat that arrives while the output register stalls; the
        # input is ready exactly while the skid register is empty.
        skid = Signal.like(i.payload, name="skid")
        skid_valid = Signal()
        m.d.comb += i.ready.eq(~skid_valid)
        # Internal state a formal harness may reach (the proof's invariant), not an interface.
        self.probes = {"skid": skid, "skid_valid": skid_valid}
        with m.If(~o.valid | o.ready):
            with m.If(skid_valid):
                m.d.sync += [o.payload.eq(skid), o.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += o.valid.eq(i.valid)
                with m.If(i.valid):
                    m.d.sync += o.payload.eq(i.payload)
        with m.Elif(i.valid & i.ready):
            m.d.sync += [skid.eq(i.payload), skid_valid.eq(1)]
        return m
