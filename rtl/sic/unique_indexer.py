"""The block matcher's map lookup: each token's unique index, from its best candidate's."""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import memory
from amaranth.lib.wiring import Out

from ..block import FocusBlock
from .match_layouts import best_layout, indexed_layout, matcher_stage_members, tile_index_bits
from .window_buffer import window_slots

__all__ = ["UniqueIndexer"]


class UniqueIndexer(FocusBlock):
    """Resolves tokens in input order: a token with a similar best candidate joins that
    candidate's group, any other opens a new group, and map indices are ``tile base +
    tile-local index``, counted from 0 at the start of the job.

    The window slot of each resolved token keeps its tile-local unique index (a memory of
    ``2**window_bits`` entries of ``tile_index_bits``). A token's read of its candidate's slot
    is issued as it enters the stage's register and is write-through, so the token resolved in
    the same cycle is seen: a candidate is always resolved before any token that matches it
    needs its index, since tokens leave in order and a later token with the candidate's slot
    comes after every token that can match the candidate (offsets are below ``window``).

    Latency 1, throughput one token per cycle. Back-pressure: the register holds while
    ``o_stream`` is not ready; ``i_stream.ready`` is low while it is full and not taken.

    Parameters
    ----------
    params : FocusParams
        Uses ``window``, ``tile`` and ``position_bits``.

    Members
    -------
    i_stream : In(stream.Signature(best_layout(params)))
    o_stream : Out(stream.Signature(indexed_layout(params)))
    clear : In(1)
        The job starts: unique indices count from 0 again.
    flush : In(1)
        Drops the token held (the counts keep their values: a flushed job ends with its error). An
        abort: a beat being offered on ``o_stream`` is withdrawn, so the consumer must be flushed in
        the same cycle.
    uniques : Out(position_bits)
        Unique vectors of the job so far (tokens that opened a group and have left).
    """

    #: Cycles from a token's input transfer to its map entry being offered.
    latency = 1
    #: Tokens held at most.
    capacity = 1

    def __init__(self, params=None):
        super().__init__(params, lambda p: matcher_stage_members(
            best_layout(p), indexed_layout(p),
            uniques=Out(p.position_bits),
        ))

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        pb = p.position_bits

        m.submodules.uids = uids = memory.Memory(shape=unsigned(tile_index_bits(p)),
                                                 depth=window_slots(p), init=[])
        uid_wp = uids.write_port()
        uid_rp = uids.read_port(transparent_for=(uid_wp,))

        valid = Signal()
        held = Signal(best_layout(p))
        advance = Signal()
        m.d.comb += [
            advance.eq(~valid | o.ready),
            i.ready.eq(advance),
            uid_rp.addr.eq(i.payload.slot),
            uid_rp.en.eq(advance),
        ]
        with m.If(advance):
            m.d.sync += [valid.eq(i.valid), held.eq(i.payload)]
        with m.If(self.flush):
            m.d.sync += valid.eq(0)

        tag, match = held.tag, held.match
        base = Signal(pb)                           # the current tile's first unique index
        tile_count = Signal(range(p.tile + 1))      # unique vectors of the current tile
        base_eff = Signal(pb)
        count_eff = Signal(range(p.tile + 1))
        u = Signal(tile_index_bits(p))              # the token's tile-local unique index
        move = Signal()
        m.d.comb += [
            base_eff.eq(Mux(tag.tile_first, self.uniques, base)),
            count_eff.eq(Mux(tag.tile_first, 0, tile_count)),
            u.eq(Mux(match, uid_rp.data, count_eff)),
            move.eq(o.valid & o.ready),
            uid_wp.en.eq(move),
            uid_wp.addr.eq(tag.own_slot),
            uid_wp.data.eq(u),
            o.valid.eq(valid),
            o.payload.map.eq(base_eff + u),
            o.payload.index.eq(u),
            o.payload.new.eq(~match),
            o.payload.code.eq(Mux(match, held.code, 0)),
            o.payload.position.eq(tag.position),
            o.payload.base.eq(base_eff),
            o.payload.count.eq(count_eff + ~match),
            o.payload.tile_last.eq(tag.tile_last),
            o.payload.job_last.eq(tag.job_last),
        ]
        with m.If(move):
            m.d.sync += [
                base.eq(base_eff),
                tile_count.eq(count_eff + ~match),
                self.uniques.eq(self.uniques + ~match),
            ]
        with m.If(self.clear):
            m.d.sync += [self.uniques.eq(0), base.eq(0), tile_count.eq(0)]
        return m
