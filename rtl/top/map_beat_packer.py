"""Map entries (one per row, from :class:`rtl.sic.map_decoder.MapDecoder`) into the scatter
stage's map beats (``scatter_rows`` entries each, :func:`rtl.tile.scatter_stage.map_beat_layout`).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..sic.map_decoder import map_entry_layout
from ..tile.scatter_stage import map_beat_layout

__all__ = ["MapBeatPacker"]


class MapBeatPacker(FocusBlock):
    """Packs a chunk's map entries, in row order, into beats of ``scatter_rows`` entries: entry i
    goes to lane ``i mod scatter_rows``; a beat leaves when its lanes are full or with the chunk's
    ``last`` entry (the lanes after it are 0, as :func:`sim.gemm.job_beats` pads them). Each beat
    takes ``final`` as it is at the chunk's entries (the consumer holds it for the chunk).

    Filling: while ``fill`` is high the packer makes the chunk's remaining entries itself (index 0,
    ``last`` on entry ``rows - 1``), so a chunk whose decoding stopped part way still has the
    beats the scatter stage waits for. ``closed`` pulses when a chunk's last entry is taken (from
    ``i_stream`` or filled); ``fill`` must then fall (the entry count restarts at 0).

    Latency: a beat is offered the cycle after its last entry is taken. Throughput: one entry per
    cycle (a beat every ``scatter_rows`` entries). Back-pressure: while a beat waits on
    ``o_stream``, ``i_stream`` waits; an entry is taken in the cycle the waiting beat leaves.

    Members
    -------
    i_stream : In(stream.Signature(map_entry_layout(params)))
    o_stream : Out(stream.Signature(map_beat_layout(params)))
    final : In(1)
    fill : In(1)
    rows : In(range(params.tile + 1))
    closed : Out(1)
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "i_stream": In(stream.Signature(map_entry_layout(p))),
            "o_stream": Out(stream.Signature(map_beat_layout(p))),
            "final": In(1),
            "fill": In(1),
            "rows": In(range(p.tile + 1)),
            "closed": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        sr = p.scatter_rows
        i, o = self.i_stream, self.o_stream
        lane = Signal(range(sr), name="lane")
        count = Signal(range(p.tile + 1), name="count")     # entries of the chunk so far
        made = Signal(name="made")                           # this cycle's entry is a filler
        valid, last = Signal(name="valid"), Signal(name="last")
        index = Signal.like(o.payload.index[0])
        take = Signal()
        m.d.comb += [
            made.eq(self.fill & (count < self.rows)),
            valid.eq(made | i.valid),
            index.eq(Mux(made, 0, i.payload.map)),
            last.eq(Mux(made, count + 1 == self.rows, i.payload.last)),
            take.eq(~o.valid | o.ready),
            i.ready.eq(take & ~made),
        ]
        with m.If(o.valid & o.ready):
            m.d.sync += o.valid.eq(0)
        with m.If(valid & take):
            for k in range(sr):
                with m.If(lane == k):
                    m.d.sync += o.payload.index[k].eq(index)
                with m.Elif(lane == 0):
                    m.d.sync += o.payload.index[k].eq(0)
            with m.If(last | (lane == sr - 1)):
                m.d.sync += [o.valid.eq(1), o.payload.last.eq(last),
                             o.payload.final.eq(self.final), lane.eq(0)]
            with m.Else():
                m.d.sync += lane.eq(lane + 1)
            with m.If(last):
                m.d.comb += self.closed.eq(1)
                m.d.sync += count.eq(0)
            with m.Else():
                m.d.sync += count.eq(count + 1)
        return m
