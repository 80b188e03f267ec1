"""A stream zip: two input streams joined beat by beat into one stream of pairs."""

from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StreamZip", "zip_layout"]


def zip_layout(a_shape, b_shape):
    """The payload of :class:`StreamZip`'s ``o_stream``: ``a`` and ``b``, one beat of each."""
    return data.StructLayout({"a": a_shape, "b": b_shape})


class StreamZip(wiring.Component):
    """Pairs the k-th beat of ``a_stream`` with the k-th beat of ``b_stream``: one ``o_stream``
    beat (payload ``{"a": ..., "b": ...}``) whenever both inputs have a beat.

    No registers: latency 0, one pair per cycle while both inputs offer beats and ``o_stream``
    is ready. ``o_stream.valid`` is ``a_stream.valid & b_stream.valid``; both inputs are ready
    only in the cycle the pair is taken (``ready = o_stream.valid & o_stream.ready``), so an input
    that arrives first waits, unchanged, for the other, and back-pressure on ``o_stream`` stalls
    both. The inputs' ``ready`` depends combinationally on both ``valid`` and on
    ``o_stream.ready``; ``o_stream.valid`` never depends on ``ready``, so the stream rules hold on
    ``o_stream`` when they hold on the inputs. The payload is the inputs' payloads, passed through
    (also while not valid).

    Parameters
    ----------
    a_shape, b_shape : shape-like
        The input payload shapes.

    Members
    -------
    a_stream : In(stream.Signature(a_shape))
    b_stream : In(stream.Signature(b_shape))
    o_stream : Out(stream.Signature(zip_layout(a_shape, b_shape)))
    """

    def __init__(self, a_shape, b_shape):
        super().__init__({
            "a_stream": In(stream.Signature(a_shape)),
            "b_stream": In(stream.Signature(b_shape)),
            "o_stream": Out(stream.Signature(zip_layout(a_shape, b_shape))),
        })

    def elaborate(self, platform):
        m = Module()
        a, b, o = self.a_stream, self.b_stream, self.o_stream
        m.d.comb += [
            o.valid.eq(a.valid & b.valid),
            o.payload.a.eq(a.payload),
            o.payload.b.eq(b.payload),
            a.ready.eq(o.valid & o.ready),
            b.ready.eq(o.valid & o.ready),
        ]
        return m
