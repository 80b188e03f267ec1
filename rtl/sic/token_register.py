"""The block matcher's input register: a token's norm, its place in its tile, its rounds."""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from .match_layouts import (
    match_input_layout,
    matcher_rounds,
    matcher_stage_members,
    offsets_layout,
    round_layout,
    round_offsets,
    tile_index_bits,
)
from .similarity_comparator import vector_layout
from .vector_norm import VectorNorm

__all__ = ["TokenRegister"]


class TokenRegister(FocusBlock):
    """Registers each token and offers it as ``rounds = ceil(7 / comparators)`` round beats, one
    per group of ``comparators`` candidates, with its squared norm and its place in its tile.

    The norm (:class:`~rtl.sic.vector_norm.VectorNorm`) is spread over the rounds: with one
    round, V squarers in that cycle; with R > 1 rounds, ceil(V / (R - 1)) squarers, one step in
    each of the first R - 1 rounds, and the sum of registers on the last, so the last round's
    ``nx`` (written into the window and carried to the comparators in that cycle) comes from
    registers through one carry chain (earlier rounds carry partial sums, which no stage uses).

    Vectors: two registers, ``x_store``, written in turn (``xsel`` on the round beats says
    which holds the token), so that the next token can be taken while the candidate fetch still
    reads the previous one's vector for its last lookup (the fetch carries ``xsel`` through its
    first stage and copies the vector as a round leaves it: at most two tokens are between this
    register and that copy).

    Each round beat carries its lanes' candidate offsets (:func:`round_offsets` of the job's
    ``offsets``). With several rounds they are a register, loaded with the first round's while
    the register has room (so as a token is taken) and with the next round's as each round
    leaves, so that the candidate fetch's address subtraction starts from a register, not
    from a select by the round number (on the block matcher's longest ECP5 path before).

    The data registers (the free vector register, the held fields, the offsets, the norm's
    operands) load whatever ``i_stream`` carries whenever ``i_stream.ready`` is high, offered or
    not; only ``valid``, ``xsel`` and the tile bookkeeping wait for a transfer. So the job
    control's position check, which gates ``i_stream.valid``, reaches no data register's
    enable. A load without a transfer is never read: no round beat is offered until a transfer.

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
    x_store : Out(ArrayLayout(vector_layout(params), 2))
        The two vector registers (``x_store[xsel]`` is a round beat's ``x``).
    offsets : In(offsets_layout(params))
        The job's candidate offsets (held during the job).
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
        super().__init__(params, lambda p: matcher_stage_members(
            match_input_layout(p), round_layout(p),
            x_store=Out(data.ArrayLayout(vector_layout(p), 2)),
            offsets=In(offsets_layout(p)),
        ))

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        rounds = matcher_rounds(p)
        wb = p.window_bits

        valid = Signal()
        held = Signal(round_layout(p))          # the token (its x, norm and round: below)
        rnd = Signal(range(rounds))
        tile_idx = Signal(tile_index_bits(p))   # tokens of the current tile taken so far
        tile_p0 = Signal(p.position_bits)       # the current tile's first position
        x = self.x_store[held.xsel]
        # With several rounds the norm takes the first rounds - 1 and is a register on the last.
        steps = max(1, rounds - 1)
        m.submodules.norm_unit = norm = VectorNorm(p, steps, registered=rounds > 1)
        m.d.comb += [
            norm.x.eq(x),
            o.valid.eq(valid),
            o.payload.eq(held),
            o.payload.x.eq(x),
            o.payload.nx.eq(norm.norm),
            o.payload.round.eq(rnd),
        ]
        last_round = rnd == rounds - 1
        if rounds > 1:
            m.d.comb += [norm.step.eq(rnd), norm.advance.eq(o.valid & o.ready & ~last_round),
                         norm.load.eq(i.ready), norm.x_next.eq(i.payload.vector)]

        done = Signal()             # the token's last round leaves
        m.d.comb += [
            done.eq(o.valid & o.ready & last_round),
            i.ready.eq(~valid | done),
        ]
        # The round's offsets: with one round, the job's (held during the job); with several,
        # a register loaded with the first round's as a token is taken and with the next
        # round's as a round leaves.
        per_round = [round_offsets(p, self.offsets, r) for r in range(rounds)]
        if rounds == 1:
            m.d.comb += [o.payload.offsets[j].eq(off) for j, off in enumerate(per_round[0])]
        else:
            following = Array(per_round[1:] + per_round[:1])[rnd]
            with m.If(i.ready):
                m.d.sync += [held.offsets[j].eq(off) for j, off in enumerate(per_round[0])]
            with m.Elif(o.valid & o.ready):
                m.d.sync += [held.offsets[j].eq(following[j]) for j in range(p.comparators)]
        with m.If(o.valid & o.ready):
            m.d.sync += rnd.eq(Mux(last_round, 0, rnd + 1))
        with m.If(done):
            m.d.sync += valid.eq(0)

        # The distance from the tile's first position, capped at 2**wb - 1: the low bits'
        # difference, and beside it a compare with the tile's first position + 2**wb, so that no
        # carry chain follows another (``first``, tile_idx == 0 for the next token, a register).
        pos = i.payload.position
        first = Signal(init=1)
        tile_far = Signal(p.position_bits + 1)      # tile_p0 + 2**wb
        far = Signal()
        m.d.comb += far.eq(pos >= tile_far)
        tile_last = (tile_idx == p.tile - 1) | i.payload.last
        # The data registers load whatever is offered while there is room (``i.ready``, which
        # does not wait on ``i.valid``: the job control's position check gates that, and it
        # would otherwise reach every data register's enable); only ``valid`` and the tile
        # bookkeeping wait for a transfer. The other vector register is free then: the current
        # one may still be read for the last lookup.
        with m.If(i.ready):
            with m.If(held.xsel):
                m.d.sync += self.x_store[0].eq(i.payload.vector)
            with m.Else():
                m.d.sync += self.x_store[1].eq(i.payload.vector)
            m.d.sync += [
                held.x_nonzero.eq(i.payload.vector.as_value().any()),
                held.position.eq(pos),
                held.distance.eq(Mux(first, 0, Mux(far, (1 << wb) - 1,
                                                   (pos[:wb] - tile_p0[:wb])[:wb]))),
                held.tile_first.eq(first),
                held.tile_last.eq(tile_last),
                held.job_last.eq(i.payload.last),
            ]
        with m.If(i.valid & i.ready):
            m.d.sync += [
                valid.eq(1),
                held.xsel.eq(~held.xsel),
                tile_idx.eq(Mux(tile_last, 0, tile_idx + 1)),
                first.eq(tile_last),
            ]
            with m.If(first):
                m.d.sync += [tile_p0.eq(pos), tile_far.eq(pos + (1 << wb))]
        with m.If(self.clear):
            m.d.sync += [tile_idx.eq(0), first.eq(1)]
        with m.If(self.flush):
            m.d.sync += [valid.eq(0), rnd.eq(0)]
        return m
