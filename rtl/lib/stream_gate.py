"""A stream gate: passes, holds back or drains a stream under control of its owner."""

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..block import stage_members

__all__ = ["StreamGate", "connect_valid_gated"]


class StreamGate(wiring.Component):
    """Connects ``i_stream`` to ``o_stream`` while ``open``; otherwise holds its beats back, or,
    with ``drain``, takes and discards them.

    No registers: latency 0, one beat per cycle while open. Open: ``o_stream.valid =
    i_stream.valid`` and ``i_stream.ready = o_stream.ready``. Closed: ``o_stream.valid`` is low,
    and ``i_stream.ready`` is ``drain`` (every beat on offer is dropped). A beat already offered
    on ``o_stream`` is withdrawn if ``open`` falls before it is taken, so the owner must change
    ``open`` only where its consumer allows that (a consumer that has not seen the beat yet, or
    one that is reset at the same time). On ``i_stream`` the stream rules hold whatever
    ``open`` and ``drain`` do.

    Parameters
    ----------
    shape : shape-like
        The payload shape.

    Members
    -------
    i_stream : In(stream.Signature(shape))
    o_stream : Out(stream.Signature(shape))
    open : In(1)
        Pass beats through.
    drain : In(1)
        While closed: take the input's beats and drop them.
    """

    def __init__(self, shape):
        super().__init__(stage_members(
            shape, shape,
            open=In(1),
            drain=In(1),
        ))

    def elaborate(self, platform):
        m = Module()
        i, o = self.i_stream, self.o_stream
        m.d.comb += [
            o.valid.eq(i.valid & self.open),
            o.payload.eq(i.payload),
            i.ready.eq(Mux(self.open, o.ready, self.drain)),
        ]
        return m


def connect_valid_gated(m, source, sink, open):
    """Connects stream ``source`` to ``sink`` in ``m`` with ``valid`` passed only while
    ``open``; ``ready`` and the payload pass unchanged, so no ready path gets longer. For a
    source that is reset whenever it is closed: a beat it thinks it sent then is never seen."""
    m.d.comb += [sink.valid.eq(source.valid & open), sink.payload.eq(source.payload),
                 source.ready.eq(sink.ready)]
