"""The Focus GEMM's scatter stage: the output-stationary accumulation buffer (paper, section VI).

For every row s of an output tile and every chunk j of the reduction dimension, the stage adds the
partial-sum row ``P_j[map_j[s]]`` into row s of an ``tile`` x ``dim`` int32 buffer, ``scatter_rows``
rows per cycle; on the tile's last chunk it sends the sums out instead of writing them back.
"""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from .systolic_array import min_acc_bits

__all__ = ["ScatterStage", "psum_row_layout", "map_beat_layout", "result_beat_layout",
           "scatter_latency"]


def psum_row_layout(p):
    """One row of partial sums of the ``dim`` x ``dim`` array: ``dim`` signed values of the array's
    exact width (:func:`rtl.tile.systolic_array.min_acc_bits`)."""
    return data.ArrayLayout(signed(min_acc_bits(p.dim, p.elem_bits)), p.dim)


def map_beat_layout(p):
    """``scatter_rows`` map entries: entry i of beat b is ``map_j[b*scatter_rows + i]``, the index
    (within the chunk's unique vectors) of the partial-sum row that output row
    ``b*scatter_rows + i`` adds. ``last`` marks the chunk's final beat; ``final`` (the same on
    every beat of a chunk) marks the tile's last chunk, whose sums leave on ``o_stream``."""
    return data.StructLayout({
        "index": data.ArrayLayout(unsigned(p.gemm_index_bits), p.scatter_rows),
        "last": 1,
        "final": 1,
    })


def result_beat_layout(p):
    """``scatter_rows`` finished output rows of ``dim`` int32 values: row i of beat b is output row
    ``b*scatter_rows + i`` of the tile (rows past the tile's m are padding). ``last`` marks the
    tile's final beat."""
    return data.StructLayout({
        "y": data.ArrayLayout(data.ArrayLayout(signed(p.gemm_out_bits), p.dim), p.scatter_rows),
        "last": 1,
    })


def scatter_latency():
    """Cycles from a final-chunk map beat's transfer to its result beat on ``o_stream`` (no
    back-pressure): the buffer read, its data registered, the forwarding of the writes the read
    missed, then the adders into the output register."""
    return 4


class ScatterStage(FocusBlock):
    """Adds gathered partial-sum rows into the accumulation buffer, ``scatter_rows`` rows a cycle.

    Each ``map_stream`` beat is one word of the buffer (``scatter_rows`` consecutive output rows).
    The beat's entries are issued as ``scatter_rows`` reads of the partial-sum buffer
    (``p_addr``, ``p_en``; the data returns on ``p_data`` the next cycle) together with the read of
    the buffer word; the next cycle both are registered as they leave the memories, the cycle
    after that the buffer word takes the writes its read missed (forwarding) and is registered
    again, and the cycle after that the ``scatter_rows * dim`` adders form ``acc + P[index]``
    (just ``P[index]`` on the first chunk of a tile) and write it back, or, on the tile's
    ``final`` chunk, load it into the output register. The first chunk after reset and
    after every final chunk starts a tile. Rows of a tile are m <= ``tile``; every chunk of a tile
    must have the same ``ceil(m / scatter_rows)`` beats (at most ``gemm_words``), and every entry
    must index a row of the chunk's partial sums (otherwise that row's value is unspecified).

    The buffer is ``scatter_rows`` memories (one per row of a word, all at the word's address) of
    ``gemm_words`` rows of ``dim`` int32 values.

    A beat is taken only when ``bank_ready`` says the chunk's partial sums are complete;
    ``chunk_done`` pulses in the cycle the chunk's ``last`` beat is taken (its reads are then
    issued, so the partial-sum bank may be refilled from the next cycle).

    Latency :func:`scatter_latency` (4) cycles from a final-chunk beat to its result beat;
    throughput one beat (``scatter_rows`` rows) per cycle. Back-pressure: while a result waits on
    ``o_stream`` the whole stage holds (``map_stream.ready`` low, no write). A read of the word
    written in the same cycle returns the new value (a transparent port), and a word read one or
    two cycles before a write of it takes the written value after its read data are registered
    (the later write winning), so back-to-back chunks of one, two or three beats accumulate
    correctly. The read data go into a register before any of this logic (issue 14); on the
    ECP5, Yosys still emulates the transparent read with one LUT per read-data bit in front of
    that register (a non-transparent port with the same-cycle write forwarded removes it, but
    cost more routing than it saved in one trial).

    Members
    -------
    map_stream : In(stream.Signature(map_beat_layout(p)))
    bank_ready : In(1)
        The partial sums of the chunk whose map is next are complete.
    p_addr : Out(ArrayLayout(unsigned(gemm_index_bits), scatter_rows))
        Partial-sum rows to read (within the chunk's bank), issued when ``p_en``.
    p_en : Out(1)
        Read enable of the partial-sum buffer's ports: while low, ``p_data`` holds.
    p_data : In(ArrayLayout(psum_row_layout(p), scatter_rows))
        The rows read, one cycle after ``p_en``.
    chunk_done : Out(1)
    o_stream : Out(stream.Signature(result_beat_layout(p)))
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "map_stream": In(stream.Signature(map_beat_layout(p))),
            "bank_ready": In(1),
            "p_addr": Out(data.ArrayLayout(unsigned(p.gemm_index_bits), p.scatter_rows)),
            "p_en": Out(1),
            "p_data": In(data.ArrayLayout(psum_row_layout(p), p.scatter_rows)),
            "chunk_done": Out(1),
            "o_stream": Out(stream.Signature(result_beat_layout(p))),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        rows, width = p.scatter_rows, p.gemm_out_bits
        row_layout = data.ArrayLayout(signed(width), p.dim)
        # The buffer: one memory per row of a word (lane), all at the same address. Each lane's
        # read port is transparent for its write port.
        acc_w, acc_r = [], []
        for r in range(rows):
            lane = memory.Memory(shape=row_layout, depth=p.gemm_words, init=[])
            m.submodules[f"acc_{r}"] = lane
            acc_w.append(lane.write_port())
            acc_r.append(lane.read_port(transparent_for=(acc_w[-1],)))
        beat, out = self.map_stream, self.o_stream

        # One pipeline, stalled as a whole by a result waiting on o_stream.
        advance = ~out.valid | out.ready
        issue = beat.valid & beat.ready
        word = Signal(range(p.gemm_words), name="word")     # buffer word of the beat
        fresh = Signal(init=1, name="fresh")                 # the next chunk starts a tile
        for port in acc_r:
            m.d.comb += [port.addr.eq(word), port.en.eq(advance)]
        m.d.comb += [
            beat.ready.eq(self.bank_ready & advance),
            self.p_addr.eq(beat.payload.index),
            self.p_en.eq(advance),
            self.chunk_done.eq(issue & beat.payload.last),
        ]
        with m.If(issue):
            with m.If(beat.payload.last):
                m.d.sync += [word.eq(0), fresh.eq(beat.payload.final)]
            with m.Else():
                m.d.sync += word.eq(word + 1)

        # Stage B: the reads are back in the memories' data registers. They go into registers
        # (stage C's) before the forwarding and the adders, so that none of that follows a
        # block RAM's clock-to-output delay (issue 14).
        b_valid = Signal(name="b_valid")
        b_first = Signal(name="b_first")
        b_final = Signal(name="b_final")
        b_last = Signal(name="b_last")
        b_word = Signal.like(word, name="b_word")
        with m.If(advance):
            m.d.sync += [b_valid.eq(issue), b_first.eq(fresh), b_final.eq(beat.payload.final),
                         b_last.eq(beat.payload.last), b_word.eq(word)]
        # Stage C: the buffer word as read (c_read) and the partial-sum rows. The read took the
        # writes up to its own cycle (a transparent port) but missed the two after it: the one
        # stage D made in the cycle the read data were registered (kept in w_*) and the one it
        # makes now. They are forwarded here, the later one winning, into D's registers.
        c_valid = Signal(name="c_valid")
        c_first = Signal(name="c_first")
        c_final = Signal(name="c_final")
        c_last = Signal(name="c_last")
        c_word = Signal.like(word, name="c_word")
        c_read = [Signal(row_layout, name=f"c_read_{r}") for r in range(rows)]
        c_new = [Signal(psum_row_layout(p), name=f"c_new_{r}") for r in range(rows)]
        with m.If(advance):
            m.d.sync += [c_valid.eq(b_valid), c_first.eq(b_first), c_final.eq(b_final),
                         c_last.eq(b_last), c_word.eq(b_word)]
            for r in range(rows):
                m.d.sync += [c_read[r].eq(acc_r[r].data), c_new[r].eq(self.p_data[r])]
        # Stage D: add and write back, or send out. w_* keep D's write of the cycle before.
        d_valid = Signal(name="d_valid")
        d_final, d_last = Signal(name="d_final"), Signal(name="d_last")
        d_word = Signal.like(word, name="d_word")
        d_old = [Signal(row_layout, name=f"d_old_{r}") for r in range(rows)]
        d_new = [Signal(psum_row_layout(p), name=f"d_new_{r}") for r in range(rows)]
        sums = [Signal(row_layout, name=f"sum_{r}") for r in range(rows)]
        w_valid = Signal(name="w_valid")
        w_word = Signal.like(word, name="w_word")
        w_data = [Signal(row_layout, name=f"w_data_{r}") for r in range(rows)]
        d_writes = d_valid & ~d_final
        d_write = d_writes & advance
        forward_d = d_writes & (d_word == c_word)
        forward_w = w_valid & (w_word == c_word)
        with m.If(advance):
            m.d.sync += [d_valid.eq(c_valid), d_final.eq(c_final), d_last.eq(c_last),
                         d_word.eq(c_word), w_valid.eq(d_writes), w_word.eq(d_word)]
            for r in range(rows):
                m.d.sync += [
                    d_old[r].eq(Mux(c_first, 0,
                                    Mux(forward_d, sums[r], Mux(forward_w, w_data[r], c_read[r])))),
                    d_new[r].eq(c_new[r]),
                    w_data[r].eq(sums[r]),
                ]
        for r in range(rows):
            for c in range(p.dim):
                m.d.comb += sums[r][c].eq(d_old[r][c] + d_new[r][c])
            m.d.comb += [
                acc_w[r].addr.eq(d_word),
                acc_w[r].data.eq(sums[r]),
                acc_w[r].en.eq(d_write),
            ]
        with m.If(advance):
            m.d.sync += [out.valid.eq(d_valid & d_final), out.payload.last.eq(d_last)]
            m.d.sync += [out.payload.y[r].eq(sums[r]) for r in range(rows)]
        return m
