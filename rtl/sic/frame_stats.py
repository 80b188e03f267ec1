"""Per-frame match statistics of a block-matcher job (spec 4.6), for skipping static frames."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from .match_layouts import frame_stats_layout, frame_symbol_layout

__all__ = ["FrameStats"]


class FrameStats(FocusBlock):
    """Counts, per frame f (the tokens with ``position // FS == f``; the whole job is frame 0
    when FS = 0), its tokens, those that matched (symbol != 0) and those that matched a
    candidate of the previous frame (symbol >= 4, i.e. c = 4..7), as
    :func:`golden.map_code.frame_stats`: one ``o_stream`` beat per frame, frames 0 up to the last
    token's, in order, empty frames included, ``last`` on the final one.

    A job: ``start`` pulses (``frame_stride`` is sampled), then symbols on ``i_stream`` (in
    position order) up to the one with ``last``; ``stop`` ends the job early, with a ``last``
    beat for the frame in progress (a token already taken is dropped). There is no division:
    the block keeps the next frame's first position and, while a token lies beyond it, closes
    the frame (one beat, one cycle) and moves on by FS; the token waits meanwhile. A token is
    first taken into a register, with its position compared there against the next two frames'
    first positions, so that no compare stands in front of the frame's close. So a token takes
    one cycle, plus one per frame it closes, and the final beat leaves two cycles after the last
    token is taken. Back-pressure: the beat register holds while ``o_stream`` is not ready, and
    ``i_stream`` waits while the held token waits (a frame to close, or the job's last token,
    while the beat register is full; other tokens are counted whatever ``o_stream`` does, so
    ``i_stream.ready`` does not depend on ``o_stream.ready``).
    ``idle`` is high when no job is in progress and no beat is on offer.

    Members
    -------
    i_stream : In(stream.Signature(frame_symbol_layout(params)))
    start, stop : In(1)
    frame_stride : In(position_bits)
    o_stream : Out(stream.Signature(frame_stats_layout(params)))
    idle : Out(1)
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "i_stream": In(stream.Signature(frame_symbol_layout(p))),
            "start": In(1),
            "stop": In(1),
            "frame_stride": In(p.position_bits),
            "o_stream": Out(stream.Signature(frame_stats_layout(p))),
            "idle": Out(1),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        pb = p.position_bits

        fs = Signal(pb)
        frame = Signal(pb)
        # The first position of the next frame, and the two after it (they stay below
        # 2**(pb + 2): a frame closes only while a position < 2**pb lies beyond it).
        bound = [Signal(pb + 2, name=f"boundary{k}") for k in range(3)]
        tokens = Signal(pb)
        matched = Signal(pb)
        previous = Signal(pb)
        running = Signal()
        stopping = Signal()                     # a stop waits for the beat register
        free = Signal()
        m.d.comb += [
            free.eq(~o.valid | o.ready),
            self.idle.eq(~running & ~o.valid),
        ]
        with m.If(o.valid & o.ready):
            m.d.sync += o.valid.eq(0)

        # The token register: the symbol waits here, with whether its position lies beyond the
        # next frame's first position and beyond the one after, compared as it was taken. A
        # frame's close then tests a register, and shifts the second flag into the first.
        held = Signal()
        h_code = Signal(3)
        h_last = Signal()
        h_pos = Signal(pb)
        beyond = Signal()
        beyond2 = Signal()

        def emit(last, counts=(tokens, matched, previous)):
            """Offer the beat of this frame with ``counts`` (tokens, matched, previous)."""
            n_tokens, n_matched, n_previous = counts
            m.d.sync += [
                o.valid.eq(1),
                o.payload.frame.eq(frame),
                o.payload.tokens.eq(n_tokens),
                o.payload.matched.eq(n_matched),
                o.payload.previous.eq(n_previous),
                o.payload.last.eq(last),
            ]

        active = running & ~stopping
        # The held token is counted. Only the job's last token needs the beat register (it is
        # counted into the job's last beat), so ``i_stream.ready`` depends on registers alone.
        count = active & held & ~beyond & (free | ~h_last)
        m.d.comb += i.ready.eq(active & (~held | (count & ~h_last)))
        with m.If(i.valid & i.ready):
            m.d.sync += [held.eq(1), h_code.eq(i.payload.code), h_last.eq(i.payload.last),
                         h_pos.eq(i.payload.position),
                         beyond.eq((fs != 0) & (i.payload.position >= bound[0])),
                         beyond2.eq((fs != 0) & (i.payload.position >= bound[1]))]
        with m.Elif(count):
            m.d.sync += held.eq(0)

        with m.If(self.stop):
            m.d.sync += stopping.eq(1)
        with m.If(self.start):
            # (Shifts and an add: a product by 3 was mapped to a DSP block.)
            stride = self.frame_stride
            m.d.sync += [running.eq(1), stopping.eq(0), fs.eq(stride), frame.eq(0),
                         bound[0].eq(stride), bound[1].eq(stride << 1),
                         bound[2].eq((stride << 1) + stride), tokens.eq(0), matched.eq(0),
                         previous.eq(0), held.eq(0)]
        with m.Elif(running & stopping):
            # The held token, if any, belongs to the job that stops.
            m.d.sync += held.eq(0)
            with m.If(free):
                emit(1)
                m.d.sync += [running.eq(0), stopping.eq(0)]
        with m.Elif(active & held & beyond & free):
            # Close this frame; the token waits for its own.
            emit(0)
            m.d.sync += [frame.eq(frame + 1), bound[0].eq(bound[1]), bound[1].eq(bound[2]),
                         bound[2].eq(bound[2] + fs), beyond.eq(beyond2),
                         beyond2.eq(h_pos >= bound[2]),
                         tokens.eq(0), matched.eq(0), previous.eq(0)]
        with m.Elif(count):
            now_tokens = tokens + 1
            now_matched = matched + (h_code != 0)
            now_previous = previous + (h_code >= 4)
            m.d.sync += [tokens.eq(now_tokens), matched.eq(now_matched),
                         previous.eq(now_previous)]
            with m.If(h_last):
                emit(1, (now_tokens, now_matched, now_previous))    # with this token
                m.d.sync += running.eq(0)
        return m
