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
    anything but ``o_stream``. With ``keep_last`` the output payload register keeps the last beat
    after it has left; without, it loads whatever ``i_stream`` offers whenever it has room, beat
    or not, so that ``i_stream.valid`` reaches only ``o_stream.valid``, not the enable of every
    payload flip-flop (a late ``valid`` and a wide payload made that enable a long path), and
    ``o_stream.payload`` means nothing while ``o_stream.valid`` is low.

    Parameters
    ----------
    shape : shape-like
        The payload shape.
    skid : bool
        Build a skid buffer (registered ``ready``) instead of a plain output register.
    keep_last : bool
        Load the output payload register on transfers only, so it keeps the last beat (default);
        False loads it whenever it has room. The skid register loads whatever is offered while
        it is empty, either way; only its valid flag waits for a stalled output.

    Members
    -------
    i_stream : In(stream.Signature(shape))
    o_stream : Out(stream.Signature(shape))
    """

    def __init__(self, shape, *, skid=False, keep_last=True):
        for name, value in (("skid", skid), ("keep_last", keep_last)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, not {value!r}")
        self._shape = shape
        self._skid = skid
        self._keep_last = keep_last
        super().__init__(stage_members(shape, shape))

    @property
    def shape(self):
        """The payload shape."""
        return self._shape

    @property
    def skid(self):
        """Whether this is a skid buffer (registered ``i_stream.ready``)."""
        return self._skid

    @property
    def keep_last(self):
        """Whether the output payload register loads on transfers only."""
        return self._keep_last

    def elaborate(self, platform):
        m = Module()
        i, o = self.i_stream, self.o_stream
        if not self._skid:
            if not self._keep_last:
                m.d.comb += i.ready.eq(~o.valid | o.ready)
                with m.If(i.ready):
                    m.d.sync += [o.payload.eq(i.payload), o.valid.eq(i.valid)]
                return m
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
                if self._keep_last:
                    with m.If(i.valid):
                        m.d.sync += o.payload.eq(i.payload)
                else:
                    m.d.sync += o.payload.eq(i.payload)
        with m.Elif(i.valid & i.ready):
            m.d.sync += skid_valid.eq(1)
        # The skid register loads whatever is offered while it is empty: only ``skid_valid``
        # waits for ``o_stream.ready``, not the enable of every payload flip-flop.
        with m.If(i.ready):
            m.d.sync += skid.eq(i.payload)
        return m
