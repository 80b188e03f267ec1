"""A stream FIFO: :class:`amaranth.lib.fifo.SyncFIFOBuffered` behind ``lib.stream`` ports."""

from amaranth.hdl import Module, Shape
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import Out

from ..block import stage_members

__all__ = ["StreamQueue"]


class StreamQueue(wiring.Component):
    """A first-in first-out queue of ``depth`` beats.

    A thin wrapper of :class:`amaranth.lib.fifo.SyncFIFOBuffered`, joined through its
    ``w_stream``/``r_stream``, so it has that FIFO's timing (measured by the tests):

    - ``depth >= 3``: latency 2 (a beat written into an empty queue in cycle t can be taken from
      ``o_stream`` in cycle t + 2), one beat per cycle in and out at once;
    - ``depth == 2``: latency 2, one beat every other cycle (the FIFO's memory holds one beat);
    - ``depth == 1``: latency 1, one beat every other cycle (a single register).

    Back-pressure: ``i_stream.ready`` is high while the queue has room and is a register: it does
    not depend on ``o_stream.ready`` in the same cycle, so a full queue takes a beat only in the
    cycle after one has left. ``o_stream`` is the FIFO's output register, so the stream rules
    hold on it whatever its consumer does. The memory reads synchronously, so an FPGA tool may
    map it to block RAM.

    Parameters
    ----------
    shape : shape-like
        The payload shape (stored as its bits).
    depth : int
        Capacity in beats, 1 or more.

    Members
    -------
    i_stream : In(stream.Signature(shape))
    o_stream : Out(stream.Signature(shape))
    level : Out(range(depth + 1))
        Beats stored (the one on offer at ``o_stream`` included).
    """

    def __init__(self, shape, depth):
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise ValueError(f"depth must be a positive integer, not {depth!r}")
        self._shape = shape
        self._depth = depth
        super().__init__(stage_members(
            shape, shape,
            level=Out(range(depth + 1)),
        ))

    @property
    def shape(self):
        """The payload shape."""
        return self._shape

    @property
    def depth(self):
        """Capacity in beats."""
        return self._depth

    def elaborate(self, platform):
        m = Module()
        width = Shape.cast(self._shape).width
        m.submodules.fifo = queue = fifo.SyncFIFOBuffered(width=width, depth=self._depth)
        wiring.connect(m, wiring.flipped(self.i_stream), queue.w_stream)
        wiring.connect(m, queue.r_stream, wiring.flipped(self.o_stream))
        m.d.comb += self.level.eq(queue.level)
        return m
