"""The block matcher's input register: a token's norm, its place in its tile, its rounds."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from .match_layouts import match_input_layout, matcher_rounds, round_layout, tile_index_bits
from .vector_norm import VectorNorm

__all__ = ["TokenRegister"]


class TokenRegister(FocusBlock):
    """Registers each token and offers it as ``rounds = ceil(7 / comparators)`` round beats, one
    per group of ``comparators`` candidates, with its squared norm
    (:class:`~rtl.sic.vector_norm.VectorNorm`, combinational on the register) and its place in
    its tile.

    Tiles are runs of ``tile`` tokens in input order (a job's last token also ends a tile). Each
    round carries the token's distance from its tile's first position, clipped to
    ``2**window_bits - 1``: a candidate at offset d is in the tile exactly when d <= distance.

    Latency 1 (a token taken at a clock edge is offered after it), throughput one token per
    ``rounds`` cycles: the next token is taken in the cycle the last round leaves. Back-pressure:
    a round waits for ``o_stream.ready``; ``i_stream.ready`` is low while a token has rounds
    left to send.

    Parameters
    ----------
    params : FocusParams
        Uses ``dim``, ``elem_bits``, ``tile``, ``window`` and ``comparators``.

    Members
    -------
    i_stream : In(stream.Signature(match_input_layout(params)))
    o_stream : Out(stream.Signature(round_layout(params)))
    clear : In(1)
        The job starts: the next token opens a tile.
    flush : In(1)
        Drops the token held (the tile count is kept: a flushed job ends with its error). An abort:
        a beat being offered on ``o_stream`` is withdrawn, so the consumer must be flushed in the
        same cycle.
    """

    #: Cycles from a token's input transfer to its first round being offered.
    latency = 1
    #: Tokens held at most.
    capacity = 1

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "i_stream": In(stream.Signature(match_input_layout(p))),
            "o_stream": Out(stream.Signature(round_layout(p))),
            "clear": In(1),
            "flush": In(1),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        rounds = matcher_rounds(p)
        wb = p.window_bits

        valid = Signal()
        held = Signal(round_layout(p))          # the token (its norm and round are added below)
        rnd = Signal(range(rounds))
        tile_idx = Signal(tile_index_bits(p))   # tokens of the current tile taken so far
        tile_p0 = Signal(p.position_bits)       # the current tile's first position
        m.submodules.norm = norm = VectorNorm(p)
        m.d.comb += [
            norm.x.eq(held.x),
            o.valid.eq(valid),
            o.payload.eq(held),
            o.payload.nx.eq(norm.norm),
            o.payload.round.eq(rnd),
        ]

        last_round = rnd == rounds - 1
        done = Signal()             # the token's last round leaves
        m.d.comb += [
            done.eq(o.valid & o.ready & last_round),
            i.ready.eq(~valid | done),
        ]
        with m.If(o.valid & o.ready):
            m.d.sync += rnd.eq(Mux(last_round, 0, rnd + 1))
        with m.If(done):
            m.d.sync += valid.eq(0)

        pos = i.payload.position
        first = tile_idx == 0
        distance = Signal(p.position_bits)
        m.d.comb += distance.eq(pos - Mux(first, pos, tile_p0))
        with m.If(i.valid & i.ready):
            tile_last = (tile_idx == p.tile - 1) | i.payload.last
            m.d.sync += [
                valid.eq(1),
                held.x.eq(i.payload.vector),
                held.position.eq(pos),
                held.distance.eq(Mux(distance >> wb != 0, (1 << wb) - 1, distance[:wb])),
                held.tile_first.eq(first),
                held.tile_last.eq(tile_last),
                held.job_last.eq(i.payload.last),
                tile_idx.eq(Mux(tile_last, 0, tile_idx + 1)),
                tile_p0.eq(Mux(first, pos, tile_p0)),
            ]
        with m.If(self.clear):
            m.d.sync += tile_idx.eq(0)
        with m.If(self.flush):
            m.d.sync += [valid.eq(0), rnd.eq(0)]
        return m
