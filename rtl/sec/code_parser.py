"""Stage 1 of the SEC offset decoder (spec 3.3): the code words in, one parsed header or code per
cycle out, for :class:`rtl.sec.offset_decoder.OffsetDecoder`."""

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, enum, stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import offset_word_layout
from .offset_encoder import HEADER_FIXED_BITS, code_header_members, rice_limit_bits

__all__ = ["CodeParser", "DecodeError", "parsed_code_layout", "leading_zero_limit",
           "decode_field_bits"]


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


def parsed_code_layout(p):
    """One parsed code, from :class:`CodeParser` to the decoder's stage 2: ``top``, the bit
    buffer's top :func:`decode_field_bits` bits when the code was found (the code left-aligned);
    ``shift``, that width less the code's length (``top >> shift`` is the code's value v);
    ``off``, what to add to v for the gap (-2**e for Exp-Golomb, (quotient << e) - 2**e for
    Rice); ``last``, the job's n-th code; ``trail``, the n-th code does not end the string."""
    fw = decode_field_bits(p)
    win = rice_limit_bits(p) + 1
    return data.StructLayout({
        "top": unsigned(fw),
        "shift": range(fw + 1),
        "off": signed(win.bit_length() + 9),
        "last": 1,
        "trail": 1,
    })


class CodeParser(FocusBlock):
    """The offset decoder's stage 1: takes the job's code words and finds, each cycle, the header
    or one code at the top of a bit buffer, without computing its value (the decoder's stage 2
    does, a cycle later).

    A job starts with ``start`` (the decoder's config beat: ``nbits``, and from the next cycle
    on the registered ``tokens`` = M and ``hb`` = bit_length(M)). The parser then loads one word
    per cycle from ``i_stream`` while its buffer (:func:`decode_field_bits` + ``word_bits`` bits)
    has room, parses the header (``order``, ``dropped``, ``rice``, ``kept`` valid from the
    cycle after), then the n codes, one per cycle, each into its output register
    (``o_stream``, :func:`parsed_code_layout`) once that is free: a one-hot leading-one detect
    over 2Z bits (Z = :func:`leading_zero_limit`), the fit test against registered bit counts
    (compares with constants), and the consumption as one select of precomputed shifts by the
    code's whole length (the registered order decoded into the selects), so that its loop has
    no adder, no barrel shifter and no two shifts in series. Whether a word fits (``fill <=
    field bits``) and whether the next word is the string's last are registers, so the word's
    load enable is an AND of registers and ``i_stream.valid``. Latency: a code leaves the
    cycle after it is whole in the buffer and the register is free; throughput one code per
    cycle. ``o_stream``
    back-pressure holds the parse; ``i_stream`` sees back-pressure while the buffer is full.

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
        i, o = self.i_stream, self.o_stream
        wb, cb = p.word_bits, p.count_bits
        zmax = leading_zero_limit(p)
        win = rice_limit_bits(p) + 1    # the one-hot search window (Rice: 2Z, Exp-Golomb: Z)
        fw = decode_field_bits(p)
        bb = fw + wb                    # bit buffer: a word fits in whenever fill <= fw
        hb, running, error = self.hb, self.running, self.error

        e, s, f = Signal(3, name="e"), Signal(name="s"), Signal(name="f")
        n = Signal(range(p.tokens + 1))
        kept = Signal(range(p.tokens + 1))
        m.d.comb += [self.order.eq(e), self.kept.eq(kept), self.dropped.eq(s), self.rice.eq(f)]
        in_done = Signal()              # the job's last word has been accepted
        m.d.comb += self.in_done.eq(in_done)
        # The phase is an enum, not an m.FSM: a start restarts it from any value, so the parser
        # leaves even its unused code (the formal proof's induction relies on this).
        phase = Signal(_Phase)
        codes_left = Signal(range(p.tokens + 1))

        buf = Signal(bb)                # left-aligned: bit bb-1 is the next bit of the string
        fill = Signal(range(bb + 1))    # bits loaded into buf (string and padding)
        room = Signal()                 # fill <= fw (a word fits), registered with fill
        rem = Signal(p.nbits_bits)      # string bits not yet consumed
        need = Signal(p.nbits_bits)     # string bits not yet loaded
        all_in = Signal()               # need == 0
        last_word = Signal()            # need <= word_bits: the next word loads the rest
        # String bits in the buffer: all of them (rem <= fill) once the string is all loaded,
        # else the whole fill (fill < rem); and avail - 1 - e, so that a code with k leading
        # zeros fits when slack >= 2*k (Rice: k) (compares with constants in the parser's loop).
        avail = Signal.like(fill)
        slack = Signal(signed(len(fill) + 2))
        rice_ok = Signal(win)           # bit k: a Rice unary part of k zeros is allowed (k < 2hb)
        rice_lim = Signal(range(2 * cb + 1))

        start = self.start
        with m.If(start):
            m.d.sync += [
                in_done.eq(0), phase.eq(_Phase.HDR), codes_left.eq(0),
                e.eq(0), s.eq(0), f.eq(0), n.eq(0), kept.eq(0),
                buf.eq(0), fill.eq(0), room.eq(1), rem.eq(self.nbits), need.eq(self.nbits),
                last_word.eq(self.nbits <= wb),
                all_in.eq(self.nbits == 0), avail.eq(0), slack.eq(-1),
            ]
        m.d.sync += [rice_lim.eq(2 * hb),
                     rice_ok.eq(Cat(*(k < rice_lim for k in range(win))))]

        first, fits_eg, fits_rice = _code_starts(m, p, buf, slack, win)
        hl, hdr, hdr_n = _header_fields(m, p, buf, hb)
        lz, code_len, fits, no_one, zeros_at = _code_at_top(
            m, p, buf, first, fits_eg, fits_rice, e=e, f=f, avail=avail, rice_ok=rice_ok,
            rice_lim=rice_lim)

        hdr_e = (hdr >> (hb + 2))[:3]
        take_hdr, take_code = self._parse_step(
            m, phase=phase, codes_left=codes_left, rem=rem, all_in=all_in, avail=avail, buf=buf,
            hl=hl, hdr=hdr, hdr_n=hdr_n, hdr_e=hdr_e, e=e, s=s, f=f, n=n, kept=kept,
            lz=lz, code_len=code_len, fits=fits, no_one=no_one, zeros_at=zeros_at)

        # ---- the buffer: load a word below the string bits, then consume ------------------------
        m.d.comb += i.ready.eq(running & ~in_done & (error | all_in | room))
        word_fire = i.valid & i.ready
        load = Signal()                 # an AND of registers and valid: it selects every bit
        m.d.comb += load.eq(i.valid & running & ~in_done & ~error & ~all_in & room)
        loaded = Signal(bb)             # fill <= fw when a word is taken, so it fits
        m.d.comb += loaded.eq(Mux(load, buf | ((i.payload.word << fw) >> fill), buf))
        skip = _code_lengths(m, f, first, zmax)
        after_code = _consume(m, loaded, e, skip)
        # The next avail and slack: after this cycle's word, less what this cycle consumes.
        all_in_next = all_in | (load & last_word)
        fill_next = Signal.like(fill)
        m.d.comb += fill_next.eq(fill + Mux(load, wb, 0))
        base = Signal.like(fill)
        m.d.comb += base.eq(Mux(all_in_next, rem[:len(fill)], fill_next))
        # A code is s + 1 + e bits long (the one-hot skip[s]). Each count's value less 1 + e is
        # formed beside the code's search, so the search is followed by one subtraction of s
        # (no adder on the code's length before the counts' own; ``room`` is a compare of s).
        s_code = Signal(range(win))
        m.d.comb += s_code.eq(Cat(*(_or_all(skip[k] for k in range(win) if k >> b & 1)
                                    for b in range(len(s_code)))))
        wide = signed(len(fill) + 2)
        rem_c, fill_c, base_c, slack_c, room_c = (
            Signal.like(rem, name="rem_c"), *(Signal(wide, name=n)
                                              for n in ("fill_c", "base_c", "slack_c", "room_c")))
        m.d.comb += [rem_c.eq(rem - 1 - e), fill_c.eq(fill_next - 1 - e),
                     base_c.eq(base - 1 - e), slack_c.eq(base - 2 - 2 * e),
                     room_c.eq(fill_next - 1 - e - fw)]
        with m.If(running & ~start):
            m.d.sync += all_in.eq(all_in_next)
            with m.If(take_code):
                m.d.sync += [rem.eq(rem_c - s_code), fill.eq(fill_c - s_code),
                             room.eq(s_code >= room_c), avail.eq(base_c - s_code),
                             slack.eq(slack_c - s_code)]
            with m.Elif(take_hdr):
                m.d.sync += [rem.eq(rem - hl), fill.eq(fill_next - hl),
                             room.eq(fill_next - hl <= fw), avail.eq(base - hl),
                             slack.eq(base - 1 - hdr_e - hl)]
            with m.Else():
                m.d.sync += [fill.eq(fill_next), room.eq(fill_next <= fw), avail.eq(base),
                             slack.eq(base - 1 - e)]
            with m.If(take_hdr):
                with m.Switch(hb):      # a select by a register, not a shifter
                    for h in range(cb + 1):
                        with m.Case(h):
                            m.d.sync += buf.eq(loaded << HEADER_FIXED_BITS + h)
            with m.Elif(take_code):
                m.d.sync += buf.eq(after_code)
            with m.Else():
                m.d.sync += buf.eq(loaded)
            with m.If(load):
                m.d.sync += [need.eq(Mux(need > wb, need - wb, 0)),
                             last_word.eq(need <= 2 * wb)]
        m.d.comb += self.short.eq(word_fire & i.payload.last & ~last_word)
        with m.If(word_fire & i.payload.last):
            m.d.sync += in_done.eq(1)
        with m.If(start):
            m.d.sync += o.valid.eq(0)
        return m

    def _parse_step(self, m, *, phase, codes_left, rem, all_in, avail, buf, hl, hdr, hdr_n, hdr_e,
                    e, s, f, n, kept, lz, code_len, fits, no_one, zeros_at):
        """One step of the parse, by ``phase``: the header (``hl`` bits, :func:`_header_fields`)
        into the header registers ``e``, ``s``, ``f``, ``n`` and ``kept`` once ``avail`` string
        bits cover it; then one code per cycle (:func:`_code_at_top`) into the output register
        while it is free, ``codes_left`` counting down to the FIN phase; ``fail`` and ``cause``
        on a malformed header or code. Returns ``(take_hdr, take_code)``: the header, or a code
        of ``code_len`` bits, is consumed from ``buf`` this cycle."""
        p = self._params
        fw = decode_field_bits(p)
        bb = len(buf)
        o, tokens = self.o_stream, self.tokens
        take_hdr, take_code = Signal(name="take_hdr"), Signal(name="take_code")
        fail, cause = self.fail, self.cause
        active = self.running & ~self.error
        o_go = o.valid & o.ready        # the code in the output register leaves
        hdr_s, hdr_f = (hdr >> (self.hb + 1))[0], (hdr >> self.hb)[0]
        with m.Switch(phase):
            with m.Case(_Phase.HDR):
                with m.If(active & (avail >= hl)):
                    m.d.comb += take_hdr.eq(1)
                    m.d.sync += [e.eq(hdr_e), s.eq(hdr_s), f.eq(hdr_f), n.eq(hdr_n),
                                 codes_left.eq(hdr_n),
                                 kept.eq(Mux(hdr_s, tokens - hdr_n, hdr_n))]
                    with m.If(hdr_n > tokens):
                        m.d.comb += [fail.eq(1), cause.eq(DecodeError.COUNT)]
                    with m.Else():
                        m.d.sync += phase.eq(_Phase.CODES)
            with m.Case(_Phase.CODES):
                with m.If(active & (codes_left == 0)):
                    # Only for n = 0: the header must be the whole string.
                    with m.If(rem == 0):
                        m.d.sync += phase.eq(_Phase.FIN)
                    with m.Else():
                        m.d.comb += [fail.eq(1), cause.eq(DecodeError.TRAILING)]
                with m.Elif(active & (~o.valid | o_go)):
                    with m.If(fits):
                        m.d.comb += take_code.eq(1)
                        m.d.sync += codes_left.eq(codes_left - 1)
                        with m.If(codes_left == 1):
                            m.d.sync += phase.eq(_Phase.FIN)
                    with m.Elif(zeros_at & no_one):
                        m.d.comb += [fail.eq(1),
                                     cause.eq(Mux(f, DecodeError.UNARY, DecodeError.ZEROS))]
                    with m.Elif(all_in):
                        # Every string bit is in the buffer and the code still does not fit.
                        m.d.comb += [fail.eq(1), cause.eq(DecodeError.TRUNCATED)]
        with m.If(take_code):
            m.d.sync += [o.valid.eq(1), o.payload.top.eq(buf[bb - fw:]),
                         o.payload.shift.eq(fw - code_len),
                         o.payload.off.eq(Mux(f, lz << e, 0) - (1 << e)),
                         o.payload.last.eq(codes_left == 1),
                         o.payload.trail.eq((codes_left == 1) & (rem != code_len))]
        with m.Elif(o_go):
            m.d.sync += o.valid.eq(0)
        m.d.comb += self.fin.eq((phase == _Phase.FIN) & ~o.valid)

        return take_hdr, take_code

def _or_all(values):
    """The OR of an iterable of values."""
    values = list(values)
    out = values[0]
    for value in values[1:]:
        out = out | value
    return out


def _code_starts(m, p, buf, slack, win):
    """Where the code at the top of the bit buffer ``buf`` ends, at order ``e``: ``first[k]`` is
    high when it has exactly k leading zeros (k < ``win``; none is high when the top ``win`` bits
    are all zero), ``fits_eg[k]`` when an Exp-Golomb code of that many leading zeros, ``2*k + 1 +
    e`` bits (k < Z = :func:`leading_zero_limit`), and ``fits_rice[k]`` when a Rice code of
    ``k + 1 + e`` bits is within the string bits in the buffer (``slack`` = those bits - 1 - e).
    All come straight from registers, so they are the first steps of the parser's loop."""
    zmax, bb = leading_zero_limit(p), len(buf)
    assert zmax <= 31
    first, fits_eg, fits_rice = [], [], []
    for k in range(win):
        f = Signal(name=f"first{k}")
        zeros = ~buf[bb - k:].any() if k else 1
        m.d.comb += f.eq(buf[bb - 1 - k] & zeros)
        first.append(f)
        fr = Signal(name=f"fits_rice{k}")
        m.d.comb += fr.eq(slack >= k)
        fits_rice.append(fr)
        if k < zmax:
            fe = Signal(name=f"fits{k}")
            m.d.comb += fe.eq(slack >= 2 * k)
            fits_eg.append(fe)
    return first, fits_eg, fits_rice


def _code_at_top(m, p, buf, first, fits_eg, fits_rice, *, e, f, avail, rice_ok, rice_lim):
    """The code at the top of the bit buffer ``buf``, from :func:`_code_starts`' flags, at order
    ``e`` in the family ``f`` (1: Rice): ``lz``, its leading zeros (valid when it fits);
    ``code_len``, its length; ``fits``, the whole code is in the buffer (for Rice within the
    allowed unary parts ``rice_ok``); ``no_one``, the search window holds no allowed leading one;
    ``zeros_at``, the ``avail`` string bits reach past the zeros' limit (``rice_lim``, or Z =
    :func:`leading_zero_limit` for Exp-Golomb). Returns ``(lz, code_len, fits, no_one,
    zeros_at)``."""
    zmax, win, bb = leading_zero_limit(p), len(first), len(buf)
    # The leading zeros, from the one-hot first[] by ORs (a binary encoder, not a priority
    # chain: at most one first[k] is high). Used only when a code fits, so some first[k] is.
    lz = Signal(range(win + 1))
    m.d.comb += lz.eq(Cat(*(_or_all(first[k] for k in range(win) if k >> b & 1)
                            for b in range(len(lz)) if any(k >> b & 1 for k in range(win)))))
    code_len = Signal(range(decode_field_bits(p) + 1))
    m.d.comb += code_len.eq(Mux(f, lz, 2 * lz) + 1 + e)
    # Whether the code fits, without the leading-one search: each bound on k (``fits_eg``,
    # ``fits_rice``, ``rice_ok``) holds for every k up to some limit, so a one anywhere within
    # the limit means the leading one is within it too (on the UP5K, 5 % fewer LUTs).
    top = [buf[bb - 1 - k] for k in range(win)]
    fits = Signal()                     # a whole code is in the buffer
    m.d.comb += fits.eq(Mux(
        f, Cat(*(top[k] & rice_ok[k] & fits_rice[k] for k in range(win))).any(),
        Cat(*(top[k] & fits_eg[k] for k in range(zmax))).any()))
    no_one = Mux(f, ~Cat(*(top[k] & rice_ok[k] for k in range(win))).any(),
                 ~buf[bb - zmax:].any())
    zeros_at = Mux(f, avail >= rice_lim, avail >= zmax)
    return lz, code_len, fits, no_one, zeros_at

def _code_lengths(m, f, first, zmax):
    """The code's length, one-hot: ``skip[s]`` when it is s + 1 + e bits long, its leading
    zeros k (``first[k]``) plus k (Rice, ``f``) or 2 * k (Exp-Golomb)."""
    skip = []
    for s in range(len(first)):
        sel = Signal(name=f"skip{s}")
        rice = f & first[s]
        eg = (~f & first[s // 2]) if s % 2 == 0 and s // 2 < zmax else 0
        m.d.comb += sel.eq(rice | eg)
        skip.append(sel)
    return skip


def _consume(m, loaded, e, skip):
    """The buffer after the code at its top: shifted by its whole length (``skip``, from
    :func:`_code_lengths`), as one one-hot select over the total shifts. The family and the
    order (a register) are folded into the selects, so the loop has no barrel shifter, no shift
    by e in series and no final choice between the families."""
    bb, win = len(loaded), len(skip)
    order_is = [e == v for v in range(8)]
    terms = []
    for t in range(1, win + 8):
        sel = Signal(name=f"shift{t}")
        m.d.comb += sel.eq(_or_all(order_is[v] & skip[t - 1 - v]
                                   for v in range(8) if 0 <= t - 1 - v < win))
        terms.append(loaded.shift_left(t) & sel.replicate(bb))
    return _or_all(terms)


def _header_fields(m, p, buf, hb):
    """The header at the top of ``buf`` for a count field of ``hb`` bits: its length
    ``5 + hb``, the header's bits (order, set, family, then count) and the count n."""
    cb, bb = p.count_bits, len(buf)
    hl = Signal(range(cb + HEADER_FIXED_BITS + 1))  # header length (registered, set with hb)
    m.d.sync += hl.eq(HEADER_FIXED_BITS + hb)
    hdr_shift = Signal(range(bb + 1))
    m.d.comb += hdr_shift.eq(bb - hl)
    hdr = Signal(HEADER_FIXED_BITS + cb)
    m.d.comb += hdr.eq(buf >> hdr_shift)
    hdr_n = Signal(cb)
    m.d.comb += hdr_n.eq(hdr & ((1 << hb) - 1))
    return hl, hdr, hdr_n
