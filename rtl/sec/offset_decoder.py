"""The SEC offset decoder (spec 3.3): offset code in (kept or dropped set, Exp-Golomb or Rice gaps),
keep mask and kept indices out."""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock, job_status_members
from ..layouts import mask_beat_layout, offset_word_layout
from ..lib.bounds import outside_1_to
from .code_parser import (
    CodeParser,
    DecodeError,
    decode_field_bits,
    leading_zero_limit,
    parsed_code_layout,
)
from .mask_builder import INDEX_FIFO_DEPTH, MaskBuilder
from .offset_encoder import HEADER_FIXED_BITS, bit_length, code_header_members, rice_limit_bits

__all__ = ["OffsetDecoder", "DecodeError", "decoder_config_layout", "index_layout",
           "leading_zero_limit", "decode_field_bits", "DECODE_DRAIN_CYCLES", "INDEX_FIFO_DEPTH"]

#: Cycles from the decision that ends a job (error, or the last mask beat written) to ``busy``
#: low, once the job's last word has been accepted and the output registers are empty.
DECODE_DRAIN_CYCLES = 2


def decoder_config_layout(p):
    """The decoder's configuration beat, one per job: the job's M (``tokens``, 1 ..
    ``params.tokens``) and the string's length ``nbits``."""
    return data.StructLayout({
        "tokens": unsigned(p.count_bits),
        "nbits": unsigned(p.nbits_bits),
    })


def index_layout(p):
    """A kept index (ascending within a job); ``last`` marks the job's final kept index."""
    return data.StructLayout({
        "index": unsigned(p.index_bits),
        "last": 1,
    })


class OffsetDecoder(FocusBlock):
    """Decodes the offset code of spec 3.3 back into the keep mask and the kept indices, exactly
    as :func:`golden.offsets.decode_offsets` does, and flags every string golden rejects.

    A job is one ``cfg_stream`` beat (:func:`decoder_config_layout`: M and ``nbits``) and the
    code's words on ``i_stream`` (:func:`rtl.layouts.offset_word_layout`; the word's own ``nbits``
    field is ignored), up to and including the word flagged ``last``. As in golden, bits past
    ``nbits`` (the padding, and any further words) are ignored; the words must hold at least
    ``nbits`` bits. Outputs, both for every job (tie a ``ready`` high to discard one):

    - ``o_stream``: the mask, ceil(M/lanes) beats of :func:`rtl.layouts.mask_beat_layout`, padding
      bits 0, ``last`` on the final beat;
    - ``idx_stream``: the kept indices in ascending order (:func:`index_layout`), ``last`` on the
      final one; a job with no kept token sends none.

    The code lists the kept or the dropped tokens, in Exp-Golomb or Rice gaps (the header says
    which); both outputs always give the kept tokens.

    Datapath, three stages. Stage 1 (the parse, :class:`rtl.sec.code_parser.CodeParser`, joined
    to ``i_stream`` and to stage 2 with ``wiring.connect``): the words go into a window of whole
    words, each into a fixed slot, and a lookahead finds, every cycle and for every position of
    the window, the code that would start there (its length from a one-hot leading-one detect
    over 2Z bits, Z = bit_length(tokens): Exp-Golomb codes use the first Z, Rice ones the first
    2 * bit_length(M); whether it is whole within the string bits; whether its search window
    holds no allowed leading one), registered at the positions the next cycle's window has for
    them. The parse loop is then a select at the bit pointer and one addition, one code per
    cycle. Stage 2a, the next cycle: the code's value ``top >> shift`` and its offset,
    registered. Stage 2b, the cycle after: the index (previous index + 1 + gap) and the index
    checks (INDEX, TRAILING); the INDEX test compares the value with a registered M -
    (previous index + 1) less the code's offset, so it does not wait on the index's
    three-input sum. A kept-set index goes
    from stage 2b to the outputs; a dropped-set one to a walker that steps over the positions 0 ..
    M-1, one per cycle, emitting the ones that are not dropped (each held a cycle until the next
    is found, so the last one carries ``last``). A kept index goes to ``idx_stream``'s register
    and, in the same cycle, to a
    :class:`rtl.sec.mask_builder.MaskBuilder` (through its queue of :data:`INDEX_FIFO_DEPTH`),
    which writes one mask beat per cycle: the decoder composes the two with ``wiring.connect``,
    starts the builder with the config beat, holds it aborted while no job runs or after an
    error, and tells it when the codes are all decoded. Throughput: one code per cycle while
    the window holds it (codes average fewer than ``word_bits`` bits; a code that reaches into
    the word loaded in the cycle before waits a cycle), ``idx_stream`` takes it and
    the queue has room; the mask side writes one beat per cycle, so a gap that skips b whole beats
    costs about b cycles there, absorbed by the queue. Back-pressure on either output holds
    stage 2b, which holds stage 2a and stage 1 (no code is lost or repeated).

    Cycles with no stalls, for a valid kept-set code of w words and n kept tokens, from the
    config beat to the last output transfer, inclusive: at least ``max(w, n, ceil(M/lanes)) + 8``
    (+ 5 for n = 0) and at most ``w + n + ceil(M/lanes) + 8``
    (:func:`golden.cycles.decode_cycles`); near the lower end unless the queue overflows on gaps
    of many whole beats (clustered masks). For a dropped-set code the walk replaces n by M:
    between ``max(w, M, ceil(M/lanes)) + 8`` and ``w + M + ceil(M/lanes) + 11``.

    Malformed input (:class:`DecodeError`): M = 0 or M > ``tokens``, ``nbits`` shorter than the
    header, words ending before ``nbits``, a count n > M, an Exp-Golomb code with Z or more
    leading zeros (so also more than 31), a Rice code with 2 * bit_length(M) or more (UNARY), a
    code running past ``nbits``, an index >= M, or codes ending before ``nbits``. Each is found
    in the cycle the decoder reaches it (the config beat, the word flagged ``last``, or the
    offending header or code; the index checks two cycles later, in stage 2b, which also wins
    over a stage-1 error of a later code). Then ``error`` rises with its ``cause``; the rest of the
    job is dropped: no further index or mask beat is written (beats already written are valid
    positions < M, but the job is incomplete: consumers must discard it), the queue is cleared,
    and ``i_stream.ready`` stays high until the job's ``last`` word. The decoder is idle
    (``busy`` low) :data:`DECODE_DRAIN_CYCLES` cycles after the later of the error and the
    ``last`` word's transfer, once a beat already offered on an output has been taken (stream
    rules forbid withdrawing it). With always-valid words and always-ready outputs, a job of w
    words that writes i <= M indices is idle within ``w + i + ceil(M/lanes) + 11`` cycles of its
    config beat (``w + M + ceil(M/lanes) + 11`` for a dropped-set code), error or not (the fuzz
    tests check this bound on thousands of streams; the formal test proves at a small size that
    every job ends). ``error`` and ``cause`` hold until the next config beat. The decoder never
    writes an index >= M, more than ceil(M/lanes) mask beats, or a set padding bit, and never
    waits for words it cannot get.

    Parameters
    ----------
    params : FocusParams
        Uses ``tokens``, ``lanes`` and ``word_bits`` (and the derived widths).
    mask : bool
        False leaves out the mask builder (and its queue) and ``o_stream``: the decoder proper,
        code words to indices, with the same ports otherwise. It gives the kept indices at one
        per cycle whatever the gaps (a gap no longer costs a cycle per skipped beat), and a job
        of w words and n indices takes ``max(w, n) + 8`` cycles or fewer (``max(w, M) + 10`` for
        a dropped-set code, the walk over M positions).
        :class:`rtl.top.focus_unit.FocusUnit` uses this: the SIC layouter needs positions, not
        the mask. Errors and their causes are the same.

    Members
    -------
    cfg_stream : In(stream.Signature(decoder_config_layout(params)))
        One beat per job; accepted only while no job is running.
    i_stream : In(stream.Signature(offset_word_layout(params)))
        The offset code words, first bit in the MSB of the first word.
    o_stream : Out(stream.Signature(mask_beat_layout(params)))
        The keep mask (absent with ``mask=False``).
    idx_stream : Out(stream.Signature(index_layout(params)))
        The kept indices, ascending.
    busy : Out(1)
        A job is running, or an output beat is still waiting to be taken.
    error : Out(1)
        The last job was malformed; held until the next config beat.
    cause : Out(DecodeError)
        Why ``error`` is set (``NONE`` otherwise).
    order : Out(3)
        The order e read from the header.
    dropped : Out(1)
        The header's set bit: the code lists the dropped tokens.
    rice : Out(1)
        The header's family bit: Rice codes.
    kept : Out(range(tokens + 1))
        The kept count: the header's count n, or M - n for a dropped-set code.
    """

    def __init__(self, params=None, *, mask=True):
        self._mask = bool(mask)
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(decoder_config_layout(p))),
            "i_stream": In(stream.Signature(offset_word_layout(p))),
            **({"o_stream": Out(stream.Signature(mask_beat_layout(p)))} if mask else {}),
            "idx_stream": Out(stream.Signature(index_layout(p))),
            **job_status_members(DecodeError),
            **code_header_members(p),
        })

    @property
    def has_mask(self):
        """Whether the decoder has the mask output ``o_stream`` (the ``mask`` argument)."""
        return self._mask

    def elaborate(self, platform):
        p = self._params
        m = Module()
        cfg, x = self.cfg_stream, self.idx_stream
        cb = p.count_bits
        zmax = leading_zero_limit(p)
        win = rice_limit_bits(p) + 1    # the parser's one-hot search window

        # ---- job settings and state -------------------------------------------------------------
        tokens = Signal(cb)
        hb = Signal(range(cb + 1))
        running = Signal()
        prev_end = Signal(cb + 1)       # previous index + 1
        rest = Signal(signed(cb + 2))   # tokens - prev_end: the index test compares v with it
        error = Signal()
        cause = Signal(DecodeError)
        m.d.comb += [self.error.eq(error), self.cause.eq(cause)]

        # ---- stage 1: the words, parsed into the header and one code per cycle ------------------
        m.submodules.parser = parser = CodeParser(p)
        wiring.connect(m, wiring.flipped(self.i_stream), parser.i_stream)
        s = parser.dropped
        m.d.comb += [self.order.eq(parser.order), self.kept.eq(parser.kept),
                     self.dropped.eq(s), self.rice.eq(parser.rice)]

        # ---- a new job --------------------------------------------------------------------------
        cfg_fire = cfg.valid & cfg.ready
        m.d.comb += cfg.ready.eq(~running)
        m.d.comb += [parser.start.eq(cfg_fire), parser.nbits.eq(cfg.payload.nbits),
                     parser.tokens.eq(tokens), parser.hb.eq(hb), parser.running.eq(running),
                     parser.error.eq(error)]
        with m.If(cfg_fire):
            cfg_m, cfg_hb = cfg.payload.tokens, bit_length(cfg.payload.tokens)
            bad_m = outside_1_to(cfg_m, p.tokens)
            short = cfg.payload.nbits < HEADER_FIXED_BITS + cfg_hb
            m.d.sync += [
                running.eq(1), prev_end.eq(0), rest.eq(cfg_m), tokens.eq(cfg_m), hb.eq(cfg_hb),
                error.eq(bad_m | short),
                cause.eq(Mux(bad_m, DecodeError.CONFIG,
                             Mux(short, DecodeError.HEADER, DecodeError.NONE))),
            ]

        # ---- the outputs' room: idx_stream's register and, with the mask, the mask builder's
        # queue (each index goes to both in the same cycle, only when both have room, so
        # `to_mask.valid` waits for `ready`, which is safe: the builder's ready is its queue's
        # room and never depends on valid).
        room = ~x.valid | x.ready
        if self._mask:
            m.submodules.mask_builder = builder = MaskBuilder(p)
            to_mask = stream.Signature(unsigned(p.index_bits)).create(path=("to_mask",))
            wiring.connect(m, to_mask, builder.i_stream)
            wiring.connect(m, builder.o_stream, wiring.flipped(self.o_stream))
            room = room & to_mask.ready

        # ---- stages 2a and 2b: the value of the code parsed before, then its index -------------
        # Stage 1 only finds where each code ends; stage 2a registers its value and offset, and
        # stage 2b forms the index and its checks from those registers. A kept index goes to
        # the outputs; a dropped one to the walker, which gives the kept ones.
        code = stream.Signature(parsed_code_layout(p)).flip().create(path=("code",))
        wiring.connect(m, parser.o_stream, code)
        s2_go = Signal(name="s2_go")    # stage 2b is done with its code
        s2_valid, c, v, off = self._value_stage(m, code, order=parser.order, start=cfg_fire,
                                                go=s2_go)
        # The gap is v + off, both registered in stage 2a, so stage 2b adds only three
        # registered values.
        j = Signal(max(cb + 1, zmax + 8, win.bit_length() + 9) + 2)
        m.d.comb += j.eq(prev_end + v + off)
        # j >= tokens as v >= rest - off, so the test waits only on the shift (the subtraction
        # runs beside it) and not on the three-input sum.
        limit = Signal(signed(max(len(rest), len(off)) + 1))
        m.d.comb += limit.eq(rest - off)
        walk_room = Signal()            # the walker takes a dropped index this cycle
        s2_room = Mux(s, walk_room, room)
        m.d.comb += s2_go.eq(s2_valid & (error | s2_room))
        ok2, fail2 = Signal(name="ok2"), Signal(name="fail2")
        fail2_cause = Signal(DecodeError)
        with m.If(running & ~error & s2_valid & s2_room):
            with m.If(v >= limit):
                m.d.comb += [fail2.eq(1), fail2_cause.eq(DecodeError.INDEX)]
            with m.Elif(c.trail):
                m.d.comb += [fail2.eq(1), fail2_cause.eq(DecodeError.TRAILING)]
            with m.Else():
                m.d.comb += ok2.eq(1)
                m.d.sync += [prev_end.eq(j + 1), rest.eq(limit - v - 1)]

        # Stage 2's code comes before stage 1's, so its error wins.
        with m.If(running & ~error & (fail2 | parser.fail | parser.short)):
            m.d.sync += [error.eq(1), cause.eq(
                Mux(fail2, fail2_cause, Mux(parser.fail, parser.cause.as_value(),
                                            DecodeError.SHORT)))]
        fin = parser.fin & ~s2_valid     # stage 2b is done with the last code

        # ---- outputs: the index register (and the mask builder), and the end of a job ----------
        push, out_idx, out_last, walked = self._walk(
            m, start=cfg_fire, active=running & ~error & s, room=room, coded=ok2 & s, j=j,
            coded_done=fin, tokens=tokens, walk_room=walk_room)
        with m.If(Mux(s, push, ok2)):
            m.d.sync += [x.valid.eq(1), x.payload.index.eq(Mux(s, out_idx, j)),
                         x.payload.last.eq(Mux(s, out_last, c.last))]
        with m.Elif(x.ready):
            m.d.sync += x.valid.eq(0)
        done = Mux(s, walked, fin)      # every kept index is decided
        busy = running | x.valid
        finished = done
        if self._mask:
            m.d.comb += [
                to_mask.valid.eq(Mux(s, push, ok2)), to_mask.payload.eq(Mux(s, out_idx, j)),
                builder.start.eq(cfg_fire), builder.M.eq(tokens),
                builder.abort.eq(~running | error), builder.i_done.eq(done),
            ]
            busy = busy | self.o_stream.valid
            finished = ~builder.busy
        m.d.comb += self.busy.eq(busy)
        with m.If(running & parser.in_done & (error | finished)):
            m.d.sync += running.eq(0)
        return m

    def _value_stage(self, m, code, *, order, start, go):
        """The code's value ``v`` (``top >> shift``) registered, with the code's ``off``,
        ``last`` and ``trail``, between the parser and the index stage: a one-entry stage that
        takes a code when empty or when its entry leaves (``go``), emptied at ``start``.
        Returns (valid, the registered code, v, and the offset ``off``: v + off is the gap)."""
        p = self._params
        zmax = leading_zero_limit(p)
        s2_valid = Signal(name="s2_valid")
        c = Signal(parsed_code_layout(p), name="s2_code")
        v = Signal(zmax + 8, name="s2_v")
        off = Signal(signed(len(c.quotient) + 9), name="s2_off")
        m.d.comb += code.ready.eq(~s2_valid | go)
        with m.If(code.valid & code.ready):
            m.d.sync += [s2_valid.eq(1), c.eq(code.payload),
                         v.eq(code.payload.top >> code.payload.shift),
                         off.eq((code.payload.quotient - 1) << order)]
        with m.Elif(go):
            m.d.sync += s2_valid.eq(0)
        with m.If(start):
            m.d.sync += s2_valid.eq(0)
        return s2_valid, c, v, off

    def _walk(self, m, *, start, active, room, coded, j, coded_done, tokens, walk_room):
        """The kept indices of a dropped-set code: a walk over the positions 0 .. M-1, one per
        cycle, that emits each position that is not the next dropped index (``j``, taken when
        ``coded``; ``walk_room`` says the walker has room for it) and steps over the one that
        is. Each kept index waits in a register until the next one is found or the walk ends
        (``coded_done``: no further dropped index), so that the final one carries ``last``.
        Returns (``push``: an index for the outputs, which have ``room``; the index; its
        ``last``; ``walked``: every kept index has been pushed)."""
        p = self._params
        cb = p.count_bits
        wpos = Signal(cb + 1)           # the next position to walk
        # The next dropped index, and the last kept index found.
        d_valid, d_idx = Signal(name="d_valid"), Signal(cb + 1, name="d_idx")
        pend_valid, pend = Signal(name="pend_valid"), Signal(cb + 1, name="pend")
        push, out_last = Signal(name="push"), Signal(name="out_last")
        with m.If(start):
            m.d.sync += [wpos.eq(0), d_valid.eq(0), pend_valid.eq(0)]
        # Compares, not equalities, so that the walk moves on from any state (a dropped index at
        # or behind the walk is used up; nothing at or past M is emitted): the formal proof's
        # induction relies on it.
        at_drop = d_valid & ((wpos >= d_idx) | (wpos >= tokens))
        below = (wpos < tokens) & Mux(d_valid, wpos < d_idx, coded_done)
        d_take = active & at_drop
        found = active & ~at_drop & below & (~pend_valid | room)
        flush = active & ~d_valid & coded_done & (wpos >= tokens) & pend_valid & room
        m.d.comb += walk_room.eq(~d_valid | d_take)
        with m.If(found | (d_take & (wpos == d_idx))):
            m.d.sync += wpos.eq(wpos + 1)
        with m.If(coded):
            m.d.sync += [d_valid.eq(1), d_idx.eq(j)]
        with m.Elif(d_take):
            m.d.sync += d_valid.eq(0)
        with m.If(found):
            m.d.sync += [pend_valid.eq(1), pend.eq(wpos)]
        with m.Elif(flush):
            m.d.sync += pend_valid.eq(0)
        m.d.comb += [push.eq((found & pend_valid) | flush), out_last.eq(flush)]
        walked = ~d_valid & coded_done & (wpos >= tokens) & ~pend_valid
        return push, pend, out_last, walked
