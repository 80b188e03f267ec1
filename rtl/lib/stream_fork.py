"""A stream fork: one input stream delivered, beat by beat, to several output streams.

``amaranth.lib.stream`` (0.5) has only ``Signature`` and ``Interface``, no fork; this is the small
one the project uses (SEC forks its keep mask to ``mask_stream`` and to the offset encoder).
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StreamFork"]


class StreamFork(wiring.Component):
    """Delivers every ``i_stream`` beat exactly once to each of ``outputs`` output streams.

    No registers on the data path: latency 0, throughput one beat per cycle when every consumer
    is ready. Each output offers the current input beat until it has taken it; an output that has
    taken the beat offers nothing more until the next one, and the input beat is consumed in the
    cycle its last outstanding output takes it. So back-pressure on any output stalls the input,
    a fast consumer may take a beat before a slow one (one beat of slip, no more), and nothing is
    lost or duplicated. ``i_stream.ready`` depends combinationally on the outputs' ``ready``;
    no output ``valid`` depends on its own ``ready``, so the stream rules hold on every port when
    they hold on the input.

    Parameters
    ----------
    shape : shape-like
        The payload shape (a ``data.StructLayout`` for the project's streams).
    outputs : int
        Number of outputs, 1 or more.

    Members
    -------
    i_stream : In(stream.Signature(shape))
    o_streams : Out(stream.Signature(shape)).array(outputs)
        ``o_streams[k]`` carries every input beat, in order.
    """

    def __init__(self, shape, outputs=2):
        if not isinstance(outputs, int) or isinstance(outputs, bool) or outputs < 1:
            raise ValueError(f"outputs must be a positive integer, not {outputs!r}")
        self._outputs = outputs
        super().__init__({
            "i_stream": In(stream.Signature(shape)),
            "o_streams": Out(stream.Signature(shape)).array(outputs),
        })

    @property
    def outputs(self):
        return self._outputs

    def elaborate(self, platform):
        m = Module()
        i, outs = self.i_stream, list(self.o_streams)
        sent = Signal(self._outputs)        # output k has taken the current input beat
        m.d.comb += i.ready.eq(Cat(sent[k] | o.ready for k, o in enumerate(outs)).all())
        for k, o in enumerate(outs):
            m.d.comb += [o.valid.eq(i.valid & ~sent[k]), o.payload.eq(i.payload)]
        with m.If(i.valid & i.ready):
            m.d.sync += sent.eq(0)
        with m.Else():
            m.d.sync += sent.eq(Cat(sent[k] | (o.valid & o.ready) for k, o in enumerate(outs)))
        return m
