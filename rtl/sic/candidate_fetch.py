"""The block matcher's candidate lookups: the window buffer's reads, a round per cycle."""

from amaranth.hdl import Array, Const, Module, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In

from ..block import FocusBlock
from .match_layouts import (
    compare_layout,
    matcher_rounds,
    matcher_stage_members,
    round_candidates,
    round_layout,
    round_tag_layout,
)
from .similarity_comparator import vector_layout
from .window_buffer import WindowBuffer

__all__ = ["CandidateFetch"]


class CandidateFetch(FocusBlock):
    """Looks up each round's ``comparators`` candidates in the
    :class:`~rtl.sic.window_buffer.WindowBuffer` and offers them, with the token, as one
    comparison beat.

    Lane j of round r looks up candidate c = r * comparators + j + 1 at the position
    ``offsets[c - 1]`` before the token's (the round beat's ``offsets[j]``); it exists when c <=
    7, its offset is not 0 and it is in the tile (offset <= the round's ``distance``), and it is
    then found when the window holds it (a missing candidate has norm 0, which the comparators
    skip). The token itself enters the window as its last round is taken, so every later token
    sees it.

    Two stages, D and E, moving together. D: the window's read (its synchronous read ports)
    with the token's side data beside it. E: the read data registered straight out of the
    memory (a block RAM's data leave 5.8 ns after the clock on the ECP5, so nothing may follow
    them in that cycle), the window's tag compare after them, and the token's vector copied from
    the token register's ``x_store[xsel]`` as the round leaves D (the token register may
    overwrite that register with the token after next once the round has left D). The
    comparators register the lookups (and ``x``) as their first stage: the memory's read path
    and a dot product in one cycle limited the matcher to about 38 MHz on the ECP5. A lookup
    reads the memory in the cycle its round is taken, when every earlier token is written (a
    token enters the window as its last round is taken): the registered read needs no
    forwarding. Latency 2, throughput one round per cycle. Back-pressure: D and E hold under
    ``o_stream`` back-pressure (no lookup is issued and the window's two stages hold);
    ``i_stream.ready`` falls while E is full and not taken.

    Parameters
    ----------
    params : FocusParams
        Uses ``dim``, ``elem_bits``, ``window`` and ``comparators``.

    Members
    -------
    i_stream : In(stream.Signature(round_layout(params)))
    o_stream : Out(stream.Signature(compare_layout(params)))
    x_store : In(ArrayLayout(vector_layout(params), 2))
        The token register's two vector registers.
    clear : In(1)
        The job starts: the window forgets every token.
    flush : In(1)
        Drops the rounds in flight. An abort: a beat being offered on ``o_stream`` is withdrawn, so
        the consumer must be flushed in the same cycle.
    """

    #: Cycles from a round's input transfer to its comparison beat being offered.
    latency = 2
    #: Rounds held at most.
    capacity = 2

    def __init__(self, params=None):
        super().__init__(params, lambda p: matcher_stage_members(
            round_layout(p), compare_layout(p),
            x_store=In(data.ArrayLayout(vector_layout(p), 2)),
        ))

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        k, rounds, wb = p.comparators, matcher_rounds(p), p.window_bits
        rnd = i.payload.round

        d_valid, e_valid = Signal(name="d_valid"), Signal(name="e_valid")
        advance, go = Signal(name="advance"), Signal(name="go")
        m.d.comb += [
            advance.eq(~e_valid | o.ready),     # D and E move together
            i.ready.eq(advance),
            go.eq(i.valid & advance),           # a round's lookups are issued
        ]

        m.submodules.window = window = WindowBuffer(p, k)
        m.d.comb += [
            window.clear.eq(self.clear),
            window.w_en.eq(go & (rnd == rounds - 1)),
            window.w_pos.eq(i.payload.position),
            window.w_vec.eq(i.payload.x),
            window.w_norm.eq(i.payload.nx),
            window.w_nonzero.eq(i.payload.x_nonzero),
            window.r_en.eq(advance),
            window.r_pos.eq(i.payload.position),
        ]
        for j in range(k):
            off = i.payload.offsets[j]          # a register (the token register's)
            m.d.comb += [
                window.r_offset[j].eq(off),
                window.r_want[j].eq((off != 0) & (i.payload.distance >= off)),
            ]

        # D: the window is reading; the token's side data waits beside it.
        d_xsel = Signal()
        d_x_nonzero = Signal()
        d_nx = Signal(p.norm_bits)
        d_tag = Signal(round_tag_layout(p))
        d_round = Signal.like(rnd)
        # E: the window's read data registered; the token's vector copied from the token
        # register (which may overwrite it with the token after next once the round leaves D).
        e_x = Signal(vector_layout(p))
        e_x_nonzero = Signal()
        e_nx = Signal(p.norm_bits)
        e_tag = Signal(round_tag_layout(p))
        e_round = Signal.like(rnd)
        with m.If(advance):
            m.d.sync += [
                d_valid.eq(go),
                d_xsel.eq(i.payload.xsel),
                d_x_nonzero.eq(i.payload.x_nonzero),
                d_nx.eq(i.payload.nx),
                d_tag.first.eq(rnd == 0),
                d_tag.last.eq(rnd == rounds - 1),
                d_tag.tile_first.eq(i.payload.tile_first),
                d_tag.tile_last.eq(i.payload.tile_last),
                d_tag.job_last.eq(i.payload.job_last),
                d_tag.own_slot.eq(i.payload.position[:wb]),
                d_tag.position.eq(i.payload.position),
                d_round.eq(rnd),
                e_valid.eq(d_valid),
                e_x.eq(self.x_store[d_xsel]),
                e_x_nonzero.eq(d_x_nonzero),
                e_nx.eq(d_nx),
                e_tag.eq(d_tag),
                e_round.eq(d_round),
            ]
        m.d.comb += [
            o.valid.eq(e_valid),
            o.payload.x.eq(e_x),
            o.payload.x_nonzero.eq(e_x_nonzero),
            o.payload.nx.eq(e_nx),
            o.payload.tag.eq(e_tag),
        ]
        for j in range(k):
            m.d.comb += [
                o.payload.lanes[j].y.eq(window.y[j]),
                o.payload.lanes[j].ny.eq(window.ny[j]),
                o.payload.lanes[j].nonzero.eq(window.nonzero[j]),
                o.payload.lanes[j].slot.eq(window.slot[j]),
            ]
            codes = [Const(round_candidates(p, r)[j], 3) for r in range(rounds)]
            m.d.comb += o.payload.lanes[j].code.eq(Array(codes)[e_round] if rounds > 1
                                                   else codes[0])

        with m.If(self.flush):
            m.d.sync += [d_valid.eq(0), e_valid.eq(0)]
        return m
