"""The block matcher's output register, with the ``mean`` sums and the end-of-tile mean drain."""

from amaranth.hdl import Const, Module, Mux, ResetInserter, Signal
from amaranth.lib import memory, stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from .match_layouts import group_sum_layout, indexed_layout, match_output_layout, tile_index_bits
from .mean_divider import MeanDivider
from .similarity_comparator import vector_layout

__all__ = ["OutputStage"]


class OutputStage(FocusBlock):
    """Joins each resolved token (``i_stream``) with its vector (``v_stream``, in the same order)
    into a map beat, and with ``mean`` emits each tile's unique vectors, the rounded means of its
    groups, after the tile's last map beat.

    The output register holds a token's map entry; its vector is not copied: a map beat's
    ``vector`` is ``v_stream``'s payload (the head of the block matcher's vector FIFO, whose
    read-data register is part of the FIFO's memory), taken when the beat leaves. A map beat is
    offered once both its entry and its vector are there.

    ``mean`` sums (only with ``representatives = "first+mean"``): a memory of ``tile`` entries
    (:func:`~rtl.sic.match_layouts.group_sum_layout`) holds each group's element sums and count.
    A token's entry is read as the token enters the output register, and read again every
    cycle while its vector is not there. In the first cycle both are there (normally the one
    after it entered), the entry and the vector are registered, and the sum is formed from
    those registers and written in the next cycle: no block-RAM read data or FIFO data run
    through an adder into the write port. The next token's read can come before that write
    lands, so the update being written is forwarded to a token reading the same group, and the
    read port is write-through for a write in its own cycle. The memory costs ``tile * (dim *
    mean_sum_bits + bit_length(tile))`` bits: 622 592 + 11 264 bits (77 KiB) with the default
    parameters. A build without ``mean`` has neither the memory, nor its adders, nor the divider;
    its ``mean`` input is ignored (the job control rejects such jobs).

    Drain: once a tile's last map beat has left (``mean`` only), the stage takes no token until
    its unique vectors have left: for each group in turn it reads the sums and divides them
    (:class:`~rtl.sic.mean_divider.MeanDivider`), one unique beat per ``elem_bits + 2`` cycles
    (2 for a group of one). The sums' read data are registered before the divider takes them (a
    block RAM's data leave 5.8 ns after the clock on the ECP5), so the first group reaches the
    divider two cycles after the drain starts (one more than without the register); the next
    group is read while the divider works, so the rate is unchanged.

    Latency 1 (a token taken at a clock edge is offered after it), throughput one beat per cycle
    outside the drain. Back-pressure: the output register holds until ``o_stream.ready``; a token
    is taken when the register is empty or leaving.

    Parameters
    ----------
    params : FocusParams
        Uses ``dim``, ``elem_bits``, ``tile``, ``position_bits`` and ``representatives``.

    Members
    -------
    i_stream : In(stream.Signature(indexed_layout(params)))
    v_stream : In(stream.Signature(vector_layout(params)))
        The tokens' vectors (a FIFO's output: only widths must match); a vector is taken when its
        map beat leaves.
    o_stream : Out(stream.Signature(match_output_layout(params)))
    mean : In(1)
        The job's representative is ``mean`` (held during the job).
    flush : In(1)
        Stops a drain and drops its state (the divider's registers a cycle later); a beat
        already offered is still delivered.
    v_flush : Out(1)
        Empty the vector FIFO at this clock edge: a register, high the cycle after ``flush``,
        or, when a map beat is still on offer after it or taken in with it (its vector is the
        FIFO's head), the cycle after that beat leaves. No vector enters the FIFO in between
        (the job control drops the rest of a flushed job, and takes the next job's
        configuration only once no beat is on offer), and none leaves it: the stage holds no
        beat then and takes no token until the FIFO is empty (so the position compare behind
        ``flush`` does not run into the FIFO's reset).
    """

    #: Cycles from a token's input transfer to its map beat being offered.
    latency = 1
    #: Tokens held at most (their vectors stay in the FIFO until their beats leave).
    capacity = 1

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "i_stream": In(stream.Signature(indexed_layout(p))),
            "v_stream": In(stream.Signature(vector_layout(p))),
            "o_stream": Out(stream.Signature(match_output_layout(p))),
            "mean": In(1),
            "flush": In(1),
            "v_flush": Out(1),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, v, out, flush = self.i_stream, self.v_stream, self.o_stream, self.flush
        mean = self.mean if p.mean_unit else Const(0)

        o_valid = Signal()
        o_beat = Signal(match_output_layout(p))     # its vector: v_stream's, or o_mean_vec
        o_tok = Signal(indexed_layout(p))           # the token in the register
        o_tile_last = Signal()                      # ... ends a tile (until its drain starts)
        drain = Signal()
        o_take = Signal()
        can_take = Signal()
        accept = Signal()
        # A flush empties the vector FIFO, but not under a map beat that stays on offer or is
        # taken in (it is delivered, with its vector, the FIFO's head): then the FIFO is emptied
        # as that beat leaves.
        v_flush_pending, v_keep = Signal(name="v_flush_pending"), Signal(name="v_keep")
        m.d.comb += v_keep.eq((o_valid & o_beat.token & ~o_take) | accept)
        m.d.sync += [v_flush_pending.eq((flush | v_flush_pending) & v_keep),
                     self.v_flush.eq((flush | v_flush_pending) & ~v_keep)]
        m.d.comb += [
            out.valid.eq(o_valid & (~o_beat.token | v.valid)),
            out.payload.eq(o_beat),
            out.payload.vector.eq(v.payload),
            v.ready.eq(o_take & o_beat.token),
            o_take.eq(out.valid & out.ready),
            can_take.eq(~drain & ~v_flush_pending & ~self.v_flush
                        & (~o_valid | (o_take & ~(o_tile_last & mean)))),
            i.ready.eq(can_take),
            accept.eq(can_take & i.valid),
        ]

        with m.If(accept):
            m.d.sync += [
                o_valid.eq(1),
                o_tok.eq(i.payload),
                o_beat.map.eq(i.payload.map),
                o_beat.token.eq(1),
                o_beat.unique.eq(i.payload.new & ~mean),
                o_beat.last.eq(i.payload.job_last & ~mean),
                o_tile_last.eq(i.payload.tile_last),
            ]
        with m.Elif(o_take):
            m.d.sync += [o_valid.eq(0), o_tile_last.eq(0)]
        with m.If(flush):
            m.d.sync += o_tile_last.eq(0)

        if p.mean_unit:
            self._mean(m, i, v, out, accept, o_valid, o_beat, o_tok, o_tile_last, o_take, drain)
        return m

    def _sum_update(self, m, sum_rp, sum_wp, o_tok, v, o_sum_pending):
        """The token's group entry and vector registered, then the sum written a cycle later;
        the sum being written is forwarded to the read data of the same group."""
        p = self._params
        u_valid = Signal(name="u_valid")
        u_entry = Signal.like(sum_rp.data, name="u_entry")
        u_vector = Signal(vector_layout(p), name="u_vector")
        u_index = Signal.like(o_tok.index, name="u_index")
        u_new = Signal(name="u_new")
        forward = Signal(name="u_forward")
        entry = Signal.like(sum_rp.data, name="u_entry_now")
        m.d.comb += [
            forward.eq(u_valid & (u_index == o_tok.index)),
            entry.eq(Mux(forward, sum_wp.data, sum_rp.data)),
            sum_wp.en.eq(u_valid),
            sum_wp.addr.eq(u_index),
            sum_wp.data.count.eq(Mux(u_new, 1, u_entry.count + 1)),
        ]
        for n in range(p.dim):
            x = u_vector[n]
            m.d.comb += sum_wp.data.sums[n].eq(Mux(u_new, x, u_entry.sums[n] + x))
        capture = o_sum_pending & v.valid
        m.d.sync += u_valid.eq(capture & ~self.flush)
        with m.If(capture):
            m.d.sync += [o_sum_pending.eq(0), u_entry.eq(entry), u_vector.eq(v.payload),
                         u_index.eq(o_tok.index), u_new.eq(o_tok.new)]

    def _mean(self, m, i, v, out, accept, o_valid, o_beat, o_tok, o_tile_last, o_take, drain):
        """The ``mean`` sums, the drain and the divider."""
        p = self._params
        mean, flush = self.mean, self.flush
        o_sum_pending = Signal()                    # the token's group sum is still to update
        o_mean_vec = Signal(vector_layout(p))       # a unique beat's mean
        with m.If(~o_beat.token):
            m.d.comb += out.payload.vector.eq(o_mean_vec)

        m.submodules.sums = sums = memory.Memory(shape=group_sum_layout(p), depth=p.tile, init=[])
        sum_wp = sums.write_port()
        sum_rp = sums.read_port(transparent_for=(sum_wp,))
        drain_u = Signal(tile_index_bits(p))                # the group being divided or emitted
        read_u = Signal(range(p.tile + 1))                  # the group whose sums are read next
        drain_read = Signal()
        m.d.comb += [
            sum_rp.addr.eq(Mux(drain, read_u, Mux(accept, i.payload.index, o_tok.index))),
            sum_rp.en.eq(Mux(drain, drain_read, accept | o_sum_pending)),
        ]
        self._sum_update(m, sum_rp, sum_wp, o_tok, v, o_sum_pending)
        # After the update's clear: a token taken in the cycle the last one's update is
        # captured is still pending.
        with m.If(accept):
            m.d.sync += o_sum_pending.eq(mean)

        # The drain: for u = 0 .. count-1, read the group's sums, register them, divide, emit.
        # The tile's base and unique count are those of its last token, still in o_tok. The
        # memory's read data go straight into a register (``d_sums``; on the ECP5 a block RAM's
        # data leave 5.8 ns after the clock), which the divider takes; the next group is read as
        # the divider takes one, so its sums wait in the register while it divides.
        divider = MeanDivider(p)
        # The divider is reset a cycle after ``flush``, from a register (its reset reaches all of
        # its registers): the drain stops at ``flush``, so nothing enters or leaves it between.
        divider_flush = Signal(name="divider_flush")
        m.d.sync += divider_flush.eq(flush)
        m.submodules.divider = ResetInserter({"sync": divider_flush})(divider)
        read_valid = Signal()       # the read data are a drain read's (issued the cycle before)
        d_sums = Signal.like(sum_rp.data, name="d_sums")
        loaded = Signal()           # d_sums holds a group for the divider
        m.d.comb += [divider.i_stream.valid.eq(loaded), divider.i_stream.payload.eq(d_sums)]
        m.d.sync += read_valid.eq(drain_read)
        with m.If(divider.i_stream.valid & divider.i_stream.ready):
            m.d.sync += loaded.eq(0)
            with m.If(read_u != o_tok.count):
                m.d.comb += drain_read.eq(1)
                m.d.sync += read_u.eq(read_u + 1)
        with m.If(read_valid):
            m.d.sync += [d_sums.eq(sum_rp.data), loaded.eq(1)]
        with m.FSM(name="drain"):
            with m.State("OFF"):
                with m.If(o_take & o_tile_last & mean & ~flush):
                    m.d.sync += [drain.eq(1), drain_u.eq(0), read_u.eq(0)]
                    m.next = "READ"
            with m.State("READ"):
                m.d.comb += drain_read.eq(1)
                m.d.sync += read_u.eq(1)
                m.next = "MEAN"
                with m.If(flush):
                    m.next = "OFF"
            with m.State("MEAN"):
                m.d.comb += divider.o_stream.ready.eq(~o_valid | o_take)
                with m.If(divider.o_stream.valid & divider.o_stream.ready):
                    done = drain_u == o_tok.count - 1
                    m.d.sync += [
                        o_valid.eq(1),
                        o_beat.map.eq(o_tok.base + drain_u),
                        o_mean_vec.eq(divider.o_stream.payload),
                        o_beat.token.eq(0),
                        o_beat.unique.eq(1),
                        o_beat.last.eq(o_tok.job_last & done),
                    ]
                    with m.If(done):
                        m.d.sync += drain.eq(0)
                        m.next = "OFF"
                    with m.Else():
                        m.d.sync += drain_u.eq(drain_u + 1)
                with m.If(flush):
                    m.next = "OFF"
        with m.If(flush):
            m.d.sync += [o_sum_pending.eq(0), drain.eq(0), loaded.eq(0), read_valid.eq(0)]
