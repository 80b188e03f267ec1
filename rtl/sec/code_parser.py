"""Stage 1 of the SEC offset decoder (spec 3.3): the code words in, one parsed header or code per
cycle out, for :class:`rtl.sec.offset_decoder.OffsetDecoder`."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, enum, stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import offset_word_layout
from .offset_encoder import HEADER_FIXED_BITS, code_header_members, rice_limit_bits

__all__ = ["CodeParser", "DecodeError", "parsed_code_layout", "leading_zero_limit",
           "decode_field_bits", "window_words"]


class DecodeError(enum.Enum, shape=4):
    """Why :class:`rtl.sec.offset_decoder.OffsetDecoder` raised ``error`` (its ``cause`` output).

    :class:`CodeParser` raises those found while parsing (``COUNT``, ``ZEROS``, ``TRUNCATED``,
    ``TRAILING`` for bits after a header with n = 0, ``UNARY``) on its own ``cause``."""
    NONE = 0
    #: The config beat's ``tokens`` (the job's M) is 0 or larger than ``params.tokens``.
    CONFIG = 1
    #: ``nbits`` is shorter than the header (``HEADER_FIXED_BITS`` = 5, plus bit_length(M) bits).
    HEADER = 2
    #: The job's words (up to ``last``) hold fewer than ``nbits`` bits.
    SHORT = 3
    #: The header's count n is larger than M.
    COUNT = 4
    #: A code has :func:`leading_zero_limit` or more leading zeros: whatever follows, its index
    #: would be >= M (the golden model reports these as an index >= M, more than 31 leading
    #: zeros, or a code running past nbits, whichever it meets first).
    ZEROS = 5
    #: A code runs past ``nbits``.
    TRUNCATED = 6
    #: A code gives an index >= M.
    INDEX = 7
    #: The n codes end before ``nbits``.
    TRAILING = 8
    #: A Rice code's unary part has 2 * bit_length(M) or more zeros.
    UNARY = 9


class _Phase(enum.Enum, shape=2):
    """The parser's phase within a job."""
    #: The header is next.
    HDR = 0
    #: One code per cycle.
    CODES = 1
    #: The n codes are parsed.
    FIN = 2


def leading_zero_limit(p):
    """Z = bit_length(tokens): an Exp-Golomb code with Z leading zeros has v >= 2**(Z+e), so its
    gap is at least 2**Z - 1 >= tokens >= M and its index is out of range. Z <= 17 < 31."""
    return p.tokens.bit_length()


def decode_field_bits(p):
    """Longest field the decoder must see at once: an Exp-Golomb code with Z - 1 leading zeros at
    order 7 (2*Z + 6 bits), a Rice code with the longest unary part (2*Z - 1 zeros) at order 7
    (2*Z + 7 bits), or the header (5 + bit_length(tokens) bits)."""
    return max(2 * leading_zero_limit(p) + 6, rice_limit_bits(p) + 8,
               HEADER_FIXED_BITS + p.count_bits)


def window_words(p):
    """Words in :class:`CodeParser`'s window: enough that, with the next code starting in the
    first word, the whole code (up to :func:`decode_field_bits` bits) is in the window."""
    return 1 + -(-(decode_field_bits(p) - 1) // p.word_bits)


def parsed_code_layout(p):
    """One parsed code, from :class:`CodeParser` to the decoder's stage 2: ``top``, the bit
    buffer's top :func:`decode_field_bits` bits when the code was found (the code left-aligned);
    ``shift``, that width less the code's length (``top >> shift`` is the code's value v);
    ``quotient``, a Rice code's unary part (0 for Exp-Golomb: the gap is v + (quotient - 1) *
    2**e); ``last``, the job's n-th code; ``trail``, the n-th code does not end the string."""
    fw = decode_field_bits(p)
    win = rice_limit_bits(p) + 1
    return data.StructLayout({
        "top": unsigned(fw),
        "shift": range(fw + 1),
        "quotient": range(win),
        "last": 1,
        "trail": 1,
    })


class CodeParser(FocusBlock):
    """The offset decoder's stage 1: takes the job's code words and finds, each cycle, the header
    or one code, without computing its value (the decoder's stage 2 does, a cycle later).

    The words go into a window of :func:`window_words` whole words (K), each loaded into a fixed
    slot (the first free one); the next code starts at a bit pointer ``ptr`` into it, and once
    the pointer has passed the first word, the window moves on by one word (a fixed shift). A
    lookahead stage finds, every cycle and for every position of the window, the code that
    would start there: its length less 1 + e, whether it is whole within the string bits then in
    the window (for Rice, within the allowed unary parts), and whether its search window holds no
    allowed leading one. It registers them at the positions they have in the next cycle's window,
    so that the parse loop is only a select at ``ptr`` and one addition: ``ptr`` + 1 + e (a
    register sum) + the code's registered length. A code is therefore parsed from the bits that
    were in the window the cycle before (one that reaches into the word loaded last waits a
    cycle). Whether a word can be loaded is an AND of registers and ``i_stream.valid``.

    A job starts with ``start`` (the decoder's config beat: ``nbits``, and from the next cycle
    on the registered ``tokens`` = M and ``hb`` = bit_length(M)). The header (at the window's
    start) is parsed once ``5 + hb`` string bits are in (``order``, ``dropped``, ``rice``,
    ``kept`` valid from the cycle after); the cycle after it the lookahead reads the header's
    order and family, and from the next the n codes follow, one per cycle, each into the output
    register (``o_stream``, :func:`parsed_code_layout`) once that is free. Latency: a code
    leaves two cycles after its words are in the window (one for the lookahead) and the
    register is free; throughput one code per cycle. ``o_stream`` back-pressure holds the parse;
    ``i_stream`` sees back-pressure while the window is full and the pointer is in its first
    word. The last code's ``trail`` (the n-th code does not end the string) is formed from
    the pointer after it, and holds while that code is on offer.

    ``fail`` (with ``cause``) is high, combinationally, in the cycle the parser meets a
    malformed header or code (COUNT, ZEROS, UNARY, TRUNCATED, or TRAILING for bits after a
    header of n = 0), ``short`` in the cycle the word flagged ``last`` is taken although the
    words hold fewer than ``nbits`` bits. While ``error`` (the decoder's flag) is high it parses
    nothing more and takes every word up to ``last`` (``in_done`` then rises); ``o_stream`` is
    emptied at ``start``. ``fin``: the n codes are parsed and the last has left ``o_stream``.

    Members
    -------
    i_stream : In(stream.Signature(offset_word_layout(params)))
        The code words (their ``nbits`` field is ignored).
    o_stream : Out(stream.Signature(parsed_code_layout(params)))
        The parsed codes.
    start : In(1)
        A job starts (its ``nbits`` on ``nbits``).
    nbits : In(params.nbits_bits)
    tokens : In(params.count_bits)
        M (registered by the decoder at ``start``).
    hb : In(range(count_bits + 1))
        bit_length(M) (registered likewise).
    running, error : In(1)
        The decoder runs a job; the job has failed.
    order, dropped, rice : Out(3), Out(1), Out(1)
        The header's fields (0 until the header is parsed).
    kept : Out(range(tokens + 1))
        The kept count: n, or M - n for a dropped-set code.
    fail : Out(1)
    cause : Out(DecodeError)
    short : Out(1)
    fin : Out(1)
    in_done : Out(1)
        The job's last word has been taken.
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "i_stream": In(stream.Signature(offset_word_layout(p))),
            "o_stream": Out(stream.Signature(parsed_code_layout(p))),
            "start": In(1),
            "nbits": In(p.nbits_bits),
            "tokens": In(p.count_bits),
            "hb": In(range(p.count_bits + 1)),
            "running": In(1),
            "error": In(1),
            **code_header_members(p),
            "fail": Out(1),
            "cause": Out(DecodeError),
            "short": Out(1),
            "fin": Out(1),
            "in_done": Out(1),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i = self.i_stream
        wb, cb = p.word_bits, p.count_bits
        win = rice_limit_bits(p) + 1    # the search window (Rice: 2Z, Exp-Golomb: Z)
        nwin = window_words(p)
        wbits = nwin * wb
        hb, running, error, start = self.hb, self.running, self.error, self.start

        e, s, f = Signal(3, name="e"), Signal(name="s"), Signal(name="f")
        kept = Signal(range(p.tokens + 1))
        m.d.comb += [self.order.eq(e), self.kept.eq(kept), self.dropped.eq(s), self.rice.eq(f)]
        in_done = Signal()              # the job's last word has been accepted
        m.d.comb += self.in_done.eq(in_done)
        # The phase is an enum, not an m.FSM: a start restarts it from any value, so the parser
        # leaves even its unused code (the formal proof's induction relies on this).
        phase = Signal(_Phase)
        codes_left = Signal(range(p.tokens + 1))

        wnd = Signal(wbits)             # bit q: the string's bit at window position q
        words = Signal(range(nwin + 1))  # words loaded into the window
        ptr = Signal(range(wbits + 1))  # the next header or code starts here
        have = Signal(range(wbits + 1))  # string bits in the window (from position 0)
        # ... less 1 + e, kept beside ``have``: a code of q + 1 + e bits from position 0 fits
        # when q <= room (``fit_at``, its decoded thermometer).
        room = Signal(signed(len(have) + 2), name="room")
        need = Signal(p.nbits_bits)     # string bits not yet loaded
        all_in = Signal()               # need == 0
        last_word = Signal()            # need <= word_bits: the next word loads the rest
        rice_ok = Signal(win)           # bit k: a Rice unary part of k zeros is allowed (k < 2hb)
        rice_lim = Signal(range(2 * cb + 1))
        with m.If(start):
            m.d.sync += [
                in_done.eq(0), phase.eq(_Phase.HDR), codes_left.eq(0),
                e.eq(0), s.eq(0), f.eq(0), kept.eq(0),
                wnd.eq(0), words.eq(0), ptr.eq(0), have.eq(0), room.eq(-1),
                need.eq(self.nbits),
                last_word.eq(self.nbits <= wb), all_in.eq(self.nbits == 0),
            ]
        m.d.sync += [rice_lim.eq(2 * hb),
                     rice_ok.eq(Cat(*(k < rice_lim for k in range(win))))]

        # The window moves on by a word once the pointer has left the first one.
        step = Signal()
        m.d.comb += step.eq((ptr >= wb) & (have >= wb) & (words != 0))
        step_bits = Mux(step, wb, 0)

        # ---- words into the window's first free slot --------------------------------------------
        m.d.comb += i.ready.eq(running & ~in_done & (error | all_in | (words < nwin) | step))
        load = Signal()                 # an AND of registers and valid
        m.d.comb += load.eq(i.valid & running & ~in_done & ~error & ~all_in
                            & ((words < nwin) | step))
        word = Cat(*(i.payload.word[wb - 1 - k] for k in range(wb)))    # first bit at 0
        slot = Signal(range(nwin + 1))
        m.d.comb += slot.eq(words - step)
        moved = Signal(wbits)
        m.d.comb += moved.eq(Mux(step, wnd >> wb, wnd))
        loaded_bits = Mux(last_word, need, wb)     # string bits in the word
        hdr_e = _header_order(wnd)
        room_kept, room_more, room_next = (Signal.like(room, name=name)
                                           for name in ("room_kept", "room_more", "room_next"))
        m.d.comb += [room_kept.eq(room - step_bits),
                     room_more.eq(room_kept + loaded_bits),
                     room_next.eq(Mux(load, room_more, room_kept))]
        fit_at = self._fit_thresholds(m, load, room_kept, room_more)
        have_next = Signal.like(have, name="have_next")
        m.d.comb += have_next.eq(have - step_bits + Mux(load, loaded_bits, 0))
        # While the header is read (no step is taken before it), ``room`` follows the order in
        # the window's first bits (the word loaded into slot 0 if it is loaded now), so that it
        # is right from the cycle after the header; the thresholds read only the register.
        e_next = Mux(load & (slot == 0), _header_order(word), hdr_e)
        less_order = Signal(signed(5), name="less_order")
        m.d.comb += less_order.eq(Cat(~e_next, Const(0b11, 2)))
        # ``have`` as the lookahead saw it, in today's positions, less the zeros' limit (a
        # Rice code's allowed unary parts, or Z): a code's search window was all string bits
        # when it starts at or before this.
        seen_less = Signal(signed(len(have) + 2), name="seen_less")
        limit = Mux(f, rice_lim, leading_zero_limit(p))
        all_seen = Signal()             # ... and all the string's bits were in it
        with m.If(running & ~start):
            m.d.sync += [
                wnd.eq(Cat(*(Mux(load & (slot == j), word, moved[j * wb:(j + 1) * wb])
                             for j in range(nwin)))),
                words.eq(words - step + load),
                have.eq(have_next),
                room.eq(Mux(phase == _Phase.HDR, have_next + less_order, room_next)),
                seen_less.eq(have - step_bits - limit),
                all_seen.eq(all_in),
                all_in.eq(all_in | (load & last_word)),
            ]
            with m.If(load):
                m.d.sync += [need.eq(Mux(need > wb, need - wb, 0)),
                             last_word.eq(need <= 2 * wb)]
        m.d.comb += self.short.eq(i.valid & i.ready & i.payload.last & ~last_word)
        with m.If(i.valid & i.ready & i.payload.last):
            m.d.sync += in_done.eq(1)

        # ---- the lookahead, and the parse loop ---------------------------------------------------
        lengths, fits, none = _lookahead(m, p, wnd, fit_at, rice_ok, f, step)
        sbits = len(lengths) // (wbits + 1)
        code_s = Signal(sbits)          # the code's length less 1 + e
        m.d.comb += code_s.eq(lengths.word_select(ptr, sbits))
        base = Signal(range(wbits + 9))     # ptr after this cycle's step, + 1 + e
        m.d.comb += base.eq(ptr - step_bits + 1 + e)
        end = Signal.like(base)         # the pointer after the code
        m.d.comb += end.eq(base + code_s)
        trailing = Signal()             # string bits follow the last code parsed
        m.d.comb += trailing.eq(~all_in | (have != ptr))
        zeros_at = Signal()             # the search window's bits were all string bits
        m.d.comb += zeros_at.eq(ptr <= seen_less)
        hl = HEADER_FIXED_BITS + hb     # the header's length
        take_hdr, take_code = self._parse_step(
            m, phase=phase, codes_left=codes_left, wnd=wnd, have=have, hdr_e=hdr_e,
            e=e, s=s, f=f, kept=kept, hl=hl, ptr=ptr, code_s=code_s,
            fits=fits.bit_select(ptr, 1), none=none.bit_select(ptr, 1), zeros_at=zeros_at,
            all_seen=all_seen, trailing=trailing)
        with m.If(running & ~start):
            with m.If(take_code):
                m.d.sync += ptr.eq(end)
            with m.Elif(take_hdr):
                m.d.sync += ptr.eq(hl)
            with m.Else():
                m.d.sync += ptr.eq(ptr - step_bits)
        return m

    def _fit_thresholds(self, m, load, room_kept, room_more):
        """A register ``fit_at``: bit q is high when a code of q + 1 + e bits from the window's
        start is whole within its string bits in the next cycle (those bits less 1 + e:
        ``room_more`` with ``load``, else ``room_kept``), decoded from each value's high and
        low halves (:func:`_thermometer`) and chosen by ``load``."""
        p = self._params
        wbits = window_words(p) * p.word_bits
        size = wbits + 2 * leading_zero_limit(p) + rice_limit_bits(p) + 1
        fit_at = Signal(size, name="fit_at")
        m.d.sync += fit_at.eq(Mux(load, _thermometer(m, room_more, size, "more"),
                                  _thermometer(m, room_kept, size, "kept")))
        return fit_at

    def _parse_step(self, m, *, phase, codes_left, wnd, have, hdr_e, e, s, f, kept, hl, ptr,
                    code_s, fits, none, zeros_at, all_seen, trailing):
        """One step of the parse, by ``phase``: the header (at the window's start, ``hl`` = 5 +
        hb bits) into the header registers once ``have`` covers it; then, from the cycle after
        the next, one code per cycle (the lookahead's ``code_s``, ``fits`` and ``none`` at
        ``ptr``) into the output register while it is free, ``codes_left`` counting down to the
        FIN phase; ``fail`` and ``cause`` on a malformed header or code. Returns ``(take_hdr,
        take_code)``."""
        p = self._params
        cb = p.count_bits
        fw = decode_field_bits(p)
        o, tokens, hb = self.o_stream, self.tokens, self.hb
        take_hdr, take_code = Signal(name="take_hdr"), Signal(name="take_code")
        fail, cause = self.fail, self.cause
        active = self.running & ~self.error
        o_go = o.valid & o.ready        # the code in the output register leaves
        count_field = Cat(*(wnd[HEADER_FIXED_BITS + cb - 1 - k] for k in range(cb)))
        hdr_n, unused = Signal(cb), Signal(range(cb + 1), name="count_unused")
        m.d.comb += [unused.eq(cb - hb), hdr_n.eq(count_field >> unused)]
        # n > M as the count field (n and the bits after it) against (M + 1) << unused, a
        # register of the job's settings: no shift before the compare.
        count_limit = Signal(cb + 1, name="count_limit")
        m.d.sync += count_limit.eq((tokens + 1) << unused)
        hdr_s, hdr_f = wnd[3], wnd[4]
        ready = Signal()                # the lookahead has read the header's order and family
        m.d.sync += ready.eq(~self.start & (phase == _Phase.CODES))
        with m.Switch(phase):
            with m.Case(_Phase.HDR):
                with m.If(active & (have >= hl)):
                    m.d.comb += take_hdr.eq(1)
                    m.d.sync += [e.eq(hdr_e), s.eq(hdr_s), f.eq(hdr_f),
                                 codes_left.eq(hdr_n),
                                 kept.eq(Mux(hdr_s, tokens - hdr_n, hdr_n))]
                    with m.If(count_field >= count_limit):
                        m.d.comb += [fail.eq(1), cause.eq(DecodeError.COUNT)]
                    with m.Else():
                        m.d.sync += phase.eq(_Phase.CODES)
            with m.Case(_Phase.CODES):
                with m.If(active & (codes_left == 0)):
                    # Only for n = 0: the header must be the whole string.
                    with m.If(~trailing):
                        m.d.sync += phase.eq(_Phase.FIN)
                    with m.Else():
                        m.d.comb += [fail.eq(1), cause.eq(DecodeError.TRAILING)]
                with m.Elif(active & ready & (~o.valid | o_go)):
                    with m.If(fits):
                        m.d.comb += take_code.eq(1)
                        m.d.sync += codes_left.eq(codes_left - 1)
                        with m.If(codes_left == 1):
                            m.d.sync += phase.eq(_Phase.FIN)
                    with m.Elif(zeros_at & none):
                        m.d.comb += [fail.eq(1),
                                     cause.eq(Mux(f, DecodeError.UNARY, DecodeError.ZEROS))]
                    with m.Elif(all_seen):
                        # Every string bit was in the window and the code still does not fit.
                        m.d.comb += [fail.eq(1), cause.eq(DecodeError.TRUNCATED)]
        o_top, o_shift = Signal(fw, name="o_top"), Signal(range(fw + 1), name="o_shift")
        o_quotient = Signal.like(o.payload.quotient, name="o_quotient")
        o_last = Signal(name="o_last")
        top = Cat(wnd, Const(0, fw)).bit_select(ptr, fw)
        with m.If(take_code):
            m.d.sync += [o.valid.eq(1), o_top.eq(Cat(*(top[fw - 1 - k] for k in range(fw)))),
                         o_shift.eq(fw - 1 - e - code_s),
                         o_quotient.eq(Mux(f, code_s, 0)),
                         o_last.eq(codes_left == 1)]
        with m.Elif(o_go):
            m.d.sync += o.valid.eq(0)
        with m.If(self.start):
            m.d.sync += o.valid.eq(0)
        m.d.comb += [o.payload.top.eq(o_top), o.payload.shift.eq(o_shift),
                     o.payload.quotient.eq(o_quotient), o.payload.last.eq(o_last),
                     o.payload.trail.eq(o_last & trailing)]
        m.d.comb += self.fin.eq((phase == _Phase.FIN) & ~o.valid)
        return take_hdr, take_code


def _header_order(bits):
    """The header's order e from the string's first three bits (bit 0 first, most significant)."""
    return Cat(bits[2], bits[1], bits[0])


def _thermometer(m, value, size, name):
    """Bit q (q < ``size``) of the result: ``value`` >= q, for a signed ``value``. From the
    value's high part h and low part l (``half`` bits): q = qh * 2**half + ql is at most the
    value when h > qh, or h == qh and l >= ql, so each bit is one LUT after two small decodes."""
    half = max(1, (size - 1).bit_length() // 2)
    top = -(-size >> half)
    low, high = value[:half], value[half:]
    negative = value[-1]
    h_gt = [Signal(name=f"{name}_gt{k}") for k in range(top)]
    h_eq = [Signal(name=f"{name}_eq{k}") for k in range(top)]
    l_ge = [Signal(name=f"{name}_ge{k}") for k in range(1 << half)]
    # Equalities ORed, not compares: a few-bit decode is a LUT, not a carry chain.
    high_is = [high == k for k in range(top)]
    low_is = [low == k for k in range(1 << half)]
    for k in range(top):
        m.d.comb += [h_gt[k].eq(~negative & ~Cat(*high_is[:k + 1]).any()), h_eq[k].eq(high_is[k])]
    for k in range(1 << half):
        m.d.comb += l_ge[k].eq(Cat(*low_is[k:]).any())
    return Cat(*(h_gt[q >> half] | (h_eq[q >> half] & l_ge[q & ((1 << half) - 1)])
                 for q in range(size)))


def _leading_zeros(bits):
    """``(any, count)`` over a list of bits, the first at index 0: whether one is set, and how
    many are clear before the first set one (any value when none is). A radix-4 tree: each
    level is a LUT's decode of four flags and a 4:1 priority select, not a chain over all bits."""
    if len(bits) == 1:
        return bits[0], Const(0, 0)
    if len(bits) <= 4:
        any_ = Cat(*bits).any()
        b0, b1, b2 = (bits + [Const(1)] * 2)[:3]
        return any_, Cat(~b0 & (b1 | ~b2), ~b0 & ~b1)
    chunk = 4
    while 4 * chunk < len(bits):
        chunk *= 4
    groups = [_leading_zeros(bits[j:j + chunk]) for j in range(0, len(bits), chunk)]
    flags = [g[0] for g in groups]
    low = groups[-1][1]
    for flag, count in reversed(groups[:-1]):
        low = Mux(flag, count, low)
    any_, high = _leading_zeros(flags)
    return any_, Cat(low, high)


def _lookahead(m, p, wnd, fit_at, rice_ok, f, step):
    """For every position q of the window ``wnd``, the code that would start there, in the
    family ``f`` (1: Rice), registered at the position it has in the next cycle (q - word_bits
    when the window ``step``s): its length less 1 + e (k for Rice, 2k for Exp-Golomb, k its
    leading zeros); whether it fits (``fit_at``, from :meth:`CodeParser._fit_thresholds`: the
    whole code within the string bits; for Rice an allowed unary part, ``rice_ok``); and
    whether no allowed leading one is in its search window (Z bits for Exp-Golomb, Z =
    :func:`leading_zero_limit`, else the allowed unary parts). A bit past the window reads as
    0. Returns three registers, each a flat array over the window's positions and one more
    (always 0), the lengths ``sbits`` wide: ``(lengths, fits, none)``."""
    zmax = leading_zero_limit(p)
    win = len(rice_ok)
    wb, wbits = p.word_bits, len(wnd)
    sbits = (win - 1).bit_length()
    ext = Cat(wnd, Const(0, win))
    at = []
    for q in range(wbits):
        bits = [ext[q + k] for k in range(win)]
        # k leading zeros: the length less 1 + e is k (Rice) or 2k (Exp-Golomb); with no one
        # within the family's limit the code is not taken and the length is not used.
        _, zeros = _leading_zeros(bits)
        code_s = Signal(sbits, name=f"s{q}")
        m.d.comb += code_s.eq(Mux(f, zeros, Cat(Const(0, 1), zeros)))
        fits = Signal(name=f"fits{q}")
        m.d.comb += fits.eq(Mux(
            f, Cat(*(bits[k] & rice_ok[k] & fit_at[q + k] for k in range(win))).any(),
            Cat(*(bits[k] & fit_at[q + 2 * k] for k in range(zmax))).any()))
        none = Signal(name=f"none{q}")
        m.d.comb += none.eq(Mux(f, ~Cat(*(bits[k] & rice_ok[k] for k in range(win))).any(),
                                ~Cat(*bits[:zmax]).any()))
        at.append((code_s, fits, none))
    lengths = Signal((wbits + 1) * sbits, name="lengths")
    fits_r = Signal(wbits + 1, name="fits_at_pos")
    none_r = Signal(wbits + 1, name="none_at_pos")
    for q in range(wbits):
        here = at[q]
        ahead = at[q + wb] if q + wb < wbits else (Const(0, sbits), Const(0), Const(0))
        m.d.sync += [lengths.word_select(q, sbits).eq(Mux(step, ahead[0], here[0])),
                     fits_r[q].eq(Mux(step, ahead[1], here[1])),
                     none_r[q].eq(Mux(step, ahead[2], here[2]))]
    return lengths, fits_r, none_r
