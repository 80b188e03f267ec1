"""The SEC offset encoder (spec 3.3): keep mask in, offset code (kept or dropped set, Exp-Golomb or
Rice gaps) out."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock, job_status_members
from ..layouts import mask_beat_layout, offset_word_layout
from ..lib.arith import full_add
from ..lib.bit_packer import BitPacker, packer_field_layout
from ..lib.bounds import at_most, outside_1_to
from ..lib.ready_slice import ReadySlice

__all__ = ["OffsetEncoder", "EncodeError", "encoder_config_layout", "code_field_bits",
           "bit_length", "rice_limit_bits", "scheme_count", "code_header_members", "SCHEME_COUNT",
           "HEADER_FIXED_BITS"]

#: Orders 0..7; the order field of the header is 3 bits wide.
_ORDERS = 8
#: Schemes (coded set, family, order): 2 * 2 * 8, index 16*set + 8*family + order.
SCHEME_COUNT = 32
#: Header bits besides the count: the order (3), the set (1) and the family (1).
HEADER_FIXED_BITS = 5


def scheme_count(p):
    """The schemes the encoder is built with (``params.offset_schemes``): 32 for ``"all"``, 8 for
    ``"kept-exp-golomb"`` (indices 0..7, the kept set in Exp-Golomb). The choice takes this many
    cycles plus one."""
    return SCHEME_COUNT if p.offset_schemes == "all" else _ORDERS


def rice_limit_bits(p):
    """The longest Rice unary part the format allows at M = ``p.tokens``: 2 * bit_length(tokens)
    - 1 zeros (a quotient must be below 2 * bit_length(M); golden.offsets.rice_quotient_limit)."""
    return 2 * p.count_bits - 1


def code_header_members(p):
    """The members that give a code's scheme and kept count, as the encoder chose them or the
    decoder read them from the header: ``order`` (0..7, ``Out(3)``), ``dropped`` and ``rice``
    (``Out(1)`` each: the dropped set is coded; Rice, not Exp-Golomb) and ``kept`` (``Out(range(
    tokens + 1))``: the kept count, n or M - n), in that order."""
    return {"order": Out(3), "dropped": Out(1), "rice": Out(1), "kept": Out(range(p.tokens + 1))}


class EncodeError(enum.Enum, shape=3):
    """Why :class:`OffsetEncoder` raised ``error`` (its ``cause`` output)."""
    NONE = 0
    #: The config beat's ``tokens`` (the job's M) is 0 or larger than ``params.tokens``.
    CONFIG = 1
    #: A mask beat's ``last`` flag disagrees with M: set before beat ceil(M/lanes) - 1, or clear
    #: on it.
    LAST = 2
    #: A padding bit (token index >= M) of the final mask beat is set.
    PADDING = 3
    #: A fixed Rice scheme was asked for, and a gap of the coded set has a quotient of
    #: 2 * bit_length(M) or more: that scheme cannot code the mask.
    QUOTIENT = 4
    #: A fixed scheme with the dropped set or Rice was asked for from an encoder built with
    #: ``offset_schemes = "kept-exp-golomb"``, which has neither.
    SCHEME = 5


def encoder_config_layout(p):
    """The encoder's configuration beat, one per job.

    ``tokens`` is the job's M (1 .. ``params.tokens``); ``adaptive`` picks the scheme (set, family,
    order) with the fewest bits (ties to the lowest index 16*set + 8*family + order), otherwise
    the scheme ``dropped`` (0: the kept set), ``rice`` (0: Exp-Golomb) and ``order`` (0..7) is
    used."""
    return data.StructLayout({
        "tokens": unsigned(p.count_bits),
        "order": unsigned(3),
        "adaptive": 1,
        "dropped": 1,
        "rice": 1,
    })


def code_field_bits(p):
    """Widest field the encoder packs: the header (5 + bit_length(tokens) bits), the longest
    Exp-Golomb code of a gap <= tokens at any order, or the longest Rice code (a unary part of
    :func:`rice_limit_bits` zeros, the one, 7 remainder bits)."""
    longest = max(2 * (p.tokens + (1 << e)).bit_length() - 1 - e for e in range(_ORDERS))
    return max(HEADER_FIXED_BITS + p.count_bits, longest, rice_limit_bits(p) + 1 + 7)


def leading_one_code(value, codes):
    """``codes[value.bit_length() - 1]`` for an unsigned Amaranth value (0 when ``value`` is 0):
    the leading one found at every bit at once (the bit is set and none above it is), then the
    constant of its position encoded by ORs. So the depth grows with the log of the width, not
    with the width as a chain of multiplexers would, and a function of the bit length needs no
    adder after it. ``codes`` holds one non-negative integer per bit of ``value``."""
    width = len(value)
    assert len(codes) == width and min(codes, default=0) >= 0
    leading = [value[i] & ~value[i + 1:].any() if i + 1 < width else value[i]
               for i in range(width)]
    out_bits = max(max(codes, default=0).bit_length(), 1)
    return Cat(*(Cat(*(leading[i] for i in range(width) if codes[i] >> b & 1)).any()
                 for b in range(out_bits)))


def bit_length(value):
    """``value.bit_length()`` of an unsigned Amaranth value (:func:`leading_one_code`)."""
    return leading_one_code(value, [i + 1 for i in range(len(value))])


class OffsetEncoder(FocusBlock):
    """Encodes one keep mask per job as the offset code of spec 3.3, bit-exact to
    :func:`golden.offsets.encode_offsets`.

    A job is one ``cfg_stream`` beat (:func:`encoder_config_layout`: M, a fixed scheme or
    adaptive) and ceil(M/lanes) ``i_stream`` mask beats (:func:`rtl.layouts.mask_beat_layout`,
    ``last`` on the final one, padding bits 0). The job's words leave on ``o_stream``
    (:func:`rtl.layouts.offset_word_layout`): the string ``e | s | f | n | codes`` packed MSB
    first, the final word zero-padded and flagged ``last``: the gaps of the kept (s = 0) or the
    dropped (s = 1) tokens, in Exp-Golomb (f = 0) or Rice (f = 1) of order e. ``nbits`` is valid
    on *every* word (the encoder knows it before the first word leaves), so a consumer such as the
    offset decoder can take its configuration from the first word.

    How it buffers: the header needs the count n, and the adaptive scheme needs the code lengths
    of every gap, before the first code can be written. The encoder therefore keeps the kept
    *gaps* (not the mask) in a ``tokens`` x ``index_bits + 1`` memory, then the tail (the tokens
    after the last kept one):

    1. **Ingest.** Each cycle it takes the lowest set bit of the current mask beat, forms its gap
       (kept index minus the previous kept index minus 1) and writes it to the gap memory; after
       the final beat, the tail. A second stage turns each gap into its code length in all 32
       schemes and a third adds them to 32 totals: for the dropped set a kept gap g > 0 is g
       dropped tokens, the first with the run of kept tokens before it as its gap, the others
       with gap 0 (e + 1 bits in either family). A Rice scheme is marked unable to code the mask
       when a quotient reaches 2 * bit_length(M). A beat with p set bits takes max(1, p) cycles
       (an empty beat one cycle); the next beat is accepted in the cycle the current one runs
       out, so ``i_stream`` sees back-pressure only from beats with 2 or more kept tokens.
    2. **Choose.** 33 cycles (:func:`scheme_count` + 1), one scheme per cycle (read, then
       compared a cycle later): the scheme (the fixed one, or the first
       minimum among the schemes that can code the mask) and ``nbits = 5 + bit_length(M) +
       total``. (A minimum over many in one cycle is a chain of compares and was once the
       encoder's critical path.)
    3. **Emit.** The header, then one field per cycle read back from the gap memory (through a
       gap register, a code register holding the code's value, a
       :class:`rtl.lib.ready_slice.ReadySlice` that keeps the packer's ready out of those
       stages' enables, and a field register adding its length), go into a
       :class:`rtl.lib.bit_packer.BitPacker` that writes at most one word
       per cycle: one code per kept gap for the kept set; for the dropped set a walk over the
       gaps and the tail up to the last non-zero one, a gap g > 0 giving g codes in g cycles
       and a gap of 0 one cycle without a code (:func:`golden.cycles.encode_fields`). Codes
       longer than a word hold the packer for ceil(length/word_bits) cycles: emission is
       ``max(fields, words)`` cycles.

    Latency and throughput: with no stalls a job of M tokens takes ``sum over beats of max(1,
    kept in the beat) + max(fields, ceil(nbits/word_bits)) + 45`` to ``+ 46`` cycles from its
    config beat to its last word, inclusive (44 when no code follows the header; 24 fewer with
    ``offset_schemes = "kept-exp-golomb"``; the tests check this; compare
    :func:`golden.cycles.encode_cycles`, an estimate). Jobs do not overlap,
    except that the next config beat is accepted from the cycle after the previous job's last
    word is first offered, even while it still waits in the output register. Under
    ``o_stream`` back-pressure the packer holds; nothing is lost or duplicated.

    Restricted build: with ``params.offset_schemes = "kept-exp-golomb"`` the encoder has only
    the 8 kept-set Exp-Golomb schemes (indices 0..7): 8 totals (no dropped-set or Rice
    counters, no "cannot code" flags), an 8-step choice (9 cycles), and an emitter without the
    dropped-set walk and the Rice codes; ``dropped`` and ``rice`` are always 0, and the adaptive
    scheme is the best of the 8 (:func:`golden.offsets.encode_offsets` with ``schemes``). A
    fixed scheme with ``dropped`` or ``rice`` set is refused (``SCHEME``, like ``CONFIG``).

    Errors: a config beat with M = 0 or M > ``tokens`` (``EncodeError.CONFIG``) or a fixed
    scheme the encoder was not built with (``SCHEME``), a mask beat whose
    ``last`` disagrees with M (``LAST``), a set padding bit (``PADDING``), or a fixed Rice scheme
    that cannot code the mask (``QUOTIENT``, found once the mask is counted) raise ``error`` with
    its ``cause``. The job is dropped: no word is written for it, the rest of its mask beats are
    accepted and discarded up to the beat flagged ``last``, and the encoder is idle one cycle
    after that beat (at once when the bad beat itself carries ``last``; after the choice for
    ``QUOTIENT``). ``error`` and ``cause`` hold until the next config beat is accepted.

    Parameters
    ----------
    params : FocusParams
        Uses ``tokens``, ``lanes``, ``word_bits`` and ``offset_schemes`` (and the derived
        ``count_bits``, ``index_bits``, ``nbits_bits``).

    Members
    -------
    cfg_stream : In(stream.Signature(encoder_config_layout(params)))
        One beat per job; accepted only while the encoder is idle.
    i_stream : In(stream.Signature(mask_beat_layout(params)))
        The keep mask, ``lanes`` bits per beat, token b*lanes + i in bit i of beat b.
    o_stream : Out(stream.Signature(offset_word_layout(params)))
        The offset code words.
    busy : Out(1)
        A job is in progress or its last word has not been taken yet.
    error : Out(1)
        The last job was malformed (see above); held until the next config beat.
    cause : Out(EncodeError)
        Why ``error`` is set (``NONE`` otherwise).
    order : Out(3)
        The job's order e (valid from the first word on).
    dropped : Out(1)
        The job's code lists the dropped set (valid from the first word on).
    rice : Out(1)
        The job's code is a Rice code (valid from the first word on).
    kept : Out(range(tokens + 1))
        The job's kept count (final once ingest ends).
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(encoder_config_layout(p))),
            "i_stream": In(stream.Signature(mask_beat_layout(p))),
            "o_stream": Out(stream.Signature(offset_word_layout(p))),
            **job_status_members(EncodeError),
            **code_header_members(p),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        cfg, i = self.cfg_stream, self.i_stream
        cb = p.count_bits
        fw = code_field_bits(p)         # widest packed field
        # offset_schemes = "kept-exp-golomb": the set and the family are always 0.
        narrow = scheme_count(p) != SCHEME_COUNT

        # ---- job settings -----------------------------------------------------------------------
        tokens = Signal(cb)
        hb = Signal(range(cb + 1))      # bit_length(M): width of the header's count field
        adaptive = Signal()
        fixed = Signal(5)               # the fixed scheme's index
        e = Signal(3)
        s, f = (Const(0, 1), Const(0, 1)) if narrow else (Signal(name="s"), Signal(name="f"))
        nbits = Signal(p.nbits_bits)
        n = Signal(range(p.tokens + 1))
        m.d.comb += [self.kept.eq(n), self.order.eq(e), self.dropped.eq(s), self.rice.eq(f)]

        # ---- gap memory: the n kept gaps, then the tail (tokens after the last kept one) -------
        gaps = memory.Memory(shape=unsigned(p.index_bits + 1), depth=p.tokens, init=[])
        m.submodules.gaps = gaps
        wr = gaps.write_port()
        rd = gaps.read_port(domain="sync")

        # ---- ingest registers -------------------------------------------------------------------
        ing = _IngestRegisters(p)

        # ---- emission: the field register feeds the bit packer ----------------------------------
        m.submodules.packer = packer = BitPacker(p, fw)
        wiring.connect(m, packer.o_stream, wiring.flipped(self.o_stream))
        field = stream.Signature(packer_field_layout(fw)).create(path=("field",))
        wiring.connect(m, field, packer.i_stream)

        # ---- control ----------------------------------------------------------------------------
        # IDLE -> INGEST -> CHOOSE -> EMIT -> IDLE; DRAIN discards the rest of a malformed job.
        cfg_fire = cfg.valid & cfg.ready
        bad_m = outside_1_to(cfg.payload.tokens, p.tokens)
        # A fixed scheme this encoder was not built with.
        bad_scheme = (~cfg.payload.adaptive & (cfg.payload.dropped | cfg.payload.rice)
                      if narrow else Const(0))
        bad_cfg = bad_m | bad_scheme
        beat_fire = Signal()            # an ingest beat is accepted ...
        bad_beat = Signal()             # ... and it is malformed
        counting = Signal()             # stage B or C still holds a gap
        ingested = ing.got_final & ing.tail_sent & ~ing.cur_valid & ~ing.a_valid & ~counting
        chosen, refused = Signal(name="chosen"), Signal(name="refused")
        # The emission ends a cycle after the packer's final word: its ``done`` comes through
        # the flush and the output handshake, too long a path into the state's enable.
        emitted = Signal()
        m.d.sync += emitted.eq(packer.done)
        idle, ingest, choose, emit, drain = _control(
            m, start=cfg_fire, bad_cfg=bad_cfg, bad_beat=beat_fire & bad_beat,
            last=i.payload.last, ingested=ingested, chosen=chosen, refused=refused,
            emitted=emitted, drained=i.valid & i.payload.last)

        error = Signal()
        cause = Signal(EncodeError)
        m.d.comb += [self.error.eq(error), self.cause.eq(cause),
                     self.busy.eq(~idle | self.o_stream.valid)]

        m.d.comb += cfg.ready.eq(idle)
        with m.If(cfg_fire):
            c = cfg.payload
            m.d.sync += [
                tokens.eq(c.tokens), hb.eq(bit_length(c.tokens)), adaptive.eq(c.adaptive),
                fixed.eq(Cat(c.order, c.rice, c.dropped)), e.eq(c.order),
                n.eq(0), ing.in_base.eq(0), ing.in_left.eq(c.tokens),
                ing.left_le.eq(Cat(*(at_most(c.tokens, k) for k in range(p.lanes + 1)))),
                ing.got_final.eq(0),
                ing.tail_sent.eq(0), ing.cur_valid.eq(0), ing.prev_end.eq(0), ing.a_valid.eq(0),
                error.eq(bad_cfg),
                cause.eq(Mux(bad_m, EncodeError.CONFIG,
                             Mux(bad_scheme, EncodeError.SCHEME, EncodeError.NONE))),
            ]
            if not narrow:
                m.d.sync += [s.eq(c.dropped), f.eq(c.rice)]

        # ---- ingest: stage A picks one kept token per cycle, then the tail ----------------------
        self._pick_gaps(m, ing, run=ingest, drain=drain, tokens=tokens, beat_fire=beat_fire,
                        bad_beat=bad_beat, error=error, cause=cause)

        # ---- ingest: stage B stores the gap; B and C count its bits in all 32 schemes ----------
        # Stage B's and C's registers are cleared in the cycle after the config beat's (the
        # first gap reaches stage B two cycles after that, at the earliest), so that the
        # producer's valid does not run into their enables.
        started = Signal()
        m.d.sync += started.eq(cfg_fire)
        last_end, totals, bad = self._store_gaps(m, wr, ing, start=started, run=ingest, n=n,
                                                 hb=hb, counting=counting)

        # ---- choose: the scheme and nbits, once the last gap is counted -------------------------
        best_c, best = self._choose(m, totals, bad, start=ingest & ingested, run=choose,
                                    chosen=chosen)
        pick = Mux(adaptive, best_c, fixed)
        # Registered 32-way selects.
        fixed_total, fixed_bad = Signal.like(best, name="fixed_total"), Signal(name="fixed_bad")
        index = fixed[:3] if narrow else fixed      # a narrow job's fixed scheme is 0..7
        m.d.sync += [fixed_total.eq(totals[index]), fixed_bad.eq(bad[index])]
        m.d.comb += refused.eq(~adaptive & fixed_bad)
        with m.If(chosen):
            m.d.sync += [e.eq(pick[:3]),
                         nbits.eq(HEADER_FIXED_BITS + hb + Mux(adaptive, best, fixed_total))]
            if not narrow:
                m.d.sync += [f.eq(pick[3]), s.eq(pick[4])]
            with m.If(refused):
                m.d.sync += [error.eq(1), cause.eq(EncodeError.QUOTIENT)]

        # ---- emit: gap memory -> fields -> packer -> output word ---------------------------------
        fields_done = self._feed_fields(m, rd, field, start=cfg_fire, run=emit, e=e, s=s, f=f,
                                        hb=hb, n=n, tokens=tokens, last_end=last_end)
        # The flush is registered: it is needed no earlier than two cycles after the last field
        # leaves the code register (that field then passes the field register and the packer's
        # own), so the packer flushes in the same cycle as with the combinational flag, and the
        # flag's AND of the stages' valids is out of the packer's output enable.
        flush = Signal()
        m.d.sync += flush.eq(emit & fields_done)
        m.d.comb += [packer.nbits.eq(nbits), packer.flush.eq(flush)]
        return m

    def _pick_gaps(self, m, ing, *, run, drain, tokens, beat_fire, bad_beat, error, cause):
        """The ingest's stage A, in the registers ``ing`` (:class:`_IngestRegisters`): while
        ``run``, one kept token of the current mask beat per cycle, its gap (kept index minus
        the previous kept index minus 1) to stage B, then, after the final beat, the tail (the
        tokens after the last kept one, up to M = ``tokens``); the next beat is accepted in the
        cycle the current one runs out (and every beat while ``drain``, to discard it). Drives
        ``beat_fire`` (a beat is accepted) and ``bad_beat`` (it is malformed), and on a bad beat
        ``error`` and ``cause`` (:attr:`EncodeError.LAST`, :attr:`EncodeError.PADDING`)."""
        i, lanes = self.i_stream, self._params.lanes
        lowest = _lowest_set(m, ing.cur_bits)
        rest = ing.cur_bits & (ing.cur_bits - 1)
        # At most one kept token left: the beat ends this cycle. With more than two lanes this is
        # kept in a register (``cur_multi``); with one or two it is a single gate, and the
        # register cost sec at the board preset 2 % of its UP5K clock (3 seeds, 35.2 against
        # 36.0 MHz).
        registered_end = lanes > 2
        if registered_end:
            cur_done = ~ing.cur_multi
            # The next cur_multi: after a pick (rest holds two or more: cur_bits holds three or
            # more), or from the arriving beat.
            left3 = _count_at_least(m, ing.cur_bits, 3, "left3")
            beat2 = _count_at_least(m, i.payload.keep, 2, "beat2")
        else:
            cur_done = ~_count_at_least(m, ing.cur_bits, 2, "end")
        if lanes & (lanes - 1) == 0:
            # cur_base is a multiple of lanes: its low bits are 0, so the sum is a Cat.
            pos = Cat(lowest[:(lanes - 1).bit_length()], ing.cur_base[(lanes - 1).bit_length():])
        else:
            pos = ing.cur_base + lowest

        with m.If(run & ing.cur_valid):
            m.d.sync += [ing.a_valid.eq(ing.cur_bits != 0), ing.a_tail.eq(0)]
            with m.If(ing.cur_bits != 0):
                m.d.sync += [ing.a_gap.eq(pos - ing.prev_end), ing.a_zero.eq(pos == ing.prev_end),
                             ing.prev_end.eq(pos + 1), ing.cur_bits.eq(rest)]
                if registered_end:
                    m.d.sync += ing.cur_multi.eq(left3)
            with m.If(cur_done):
                m.d.sync += ing.cur_valid.eq(0)
        with m.Elif(run & ing.got_final & ~ing.tail_sent):
            # The tokens after the last kept one: the dropped set's last codes.
            m.d.sync += [ing.a_valid.eq(1), ing.a_tail.eq(1), ing.a_gap.eq(tokens - ing.prev_end),
                         ing.a_zero.eq(tokens == ing.prev_end), ing.tail_sent.eq(1)]
        with m.Else():
            m.d.sync += ing.a_valid.eq(0)

        m.d.comb += i.ready.eq((run & ~ing.got_final & (~ing.cur_valid | cur_done)) | drain)
        beat_final, bad_last, bad_padding = self._check_beat(ing.left_le)
        m.d.comb += [beat_fire.eq(run & i.valid & i.ready), bad_beat.eq(bad_last | bad_padding)]
        with m.If(beat_fire):
            with m.If(bad_last):
                m.d.sync += [error.eq(1), cause.eq(EncodeError.LAST)]
            with m.Elif(bad_padding):
                m.d.sync += [error.eq(1), cause.eq(EncodeError.PADDING)]
            with m.Else():
                if registered_end:
                    m.d.sync += ing.cur_multi.eq(beat2)
                m.d.sync += [ing.cur_bits.eq(i.payload.keep), ing.cur_valid.eq(1),
                             ing.cur_base.eq(ing.in_base), ing.in_base.eq(ing.in_base + lanes),
                             ing.in_left.eq(ing.in_left - lanes), ing.got_final.eq(beat_final),
                             ing.left_le.eq(Cat(*(at_most(ing.in_left, k + lanes)
                                                  for k in range(lanes + 1))))]

    def _store_gaps(self, m, wr, ing, *, start, run, n, hb, counting):
        """The ingest's stage B: while ``run``, each kept gap from stage A (``ing``) is written
        to the gap memory (write port ``wr``) at address ``n``, the kept count it increments,
        and the tail after them unless it is 0; stages B and C count the gap's bits in every
        scheme (:meth:`_count`). ``start`` begins a job. Returns ``(last_end, totals, bad)``:
        the entries up to the last non-zero gap (the dropped set's walk), and :meth:`_count`'s
        totals and "cannot code" flags."""
        p = self._params
        store = run & ing.a_valid & (~ing.a_tail | ~ing.a_zero)
        m.d.comb += [wr.addr.eq(n), wr.data.eq(ing.a_gap), wr.en.eq(store)]
        with m.If(run & ing.a_valid & ~ing.a_tail):
            m.d.sync += n.eq(n + 1)
        # The dropped set's codes end with the last non-zero gap: the kept tokens after it need
        # no code, and the packer must see the job's last field just before it flushes.
        last_end = Signal(range(p.tokens + 1))
        with m.If(start):
            m.d.sync += last_end.eq(0)
        with m.Elif(store & ~ing.a_zero):
            m.d.sync += last_end.eq(n + 1)
        totals, bad = self._count(m, start=start, go=run & ing.a_valid, tail=ing.a_tail,
                                  gap=ing.a_gap, zero=ing.a_zero, hb=hb, counting=counting)
        return last_end, totals, bad

    def _check_beat(self, left_le):
        """The checks of the mask beat on ``i_stream``, from ``left_le`` (bit k: at most k
        tokens of the job, M minus the index of the beat's lane 0, are still to come). Returns
        ``(final, bad_last, bad_padding)``: the beat is the job's final one by M; its ``last``
        flag disagrees with that (:attr:`EncodeError.LAST`); it keeps a lane at or past M
        (:attr:`EncodeError.PADDING`)."""
        lanes, beat = self._params.lanes, self.i_stream.payload
        final = left_le[lanes]
        pad = left_le[:lanes]           # lanes at or past M on this beat
        return final, beat.last != final, (beat.keep & pad) != 0

    def _count(self, m, *, start, go, tail, gap, zero, hb, counting):
        """The bit counts of the 32 schemes, two stages: while ``go``, stage B turns ``gap`` (a
        kept gap, or with ``tail`` the tokens after the last kept one; ``zero``: it is 0) into
        the code lengths it adds to each scheme (registered), and stage C adds them to the
        totals. For the dropped set a kept gap g > 0 is g dropped tokens: the first one's gap is
        the run of kept tokens before it (``ones``), the others' 0 (e + 1 bits in either
        family). Returns the 32 totals and their "cannot code" flags (a Rice quotient >= 2 *
        bit_length(M)), both indexed by scheme; ``counting`` is high while B or C holds a gap.
        Built with ``offset_schemes = "kept-exp-golomb"``, only the 8 kept-set Exp-Golomb totals
        (indices 0..7) exist, and no scheme is ever "cannot code"."""
        p = self._params
        count = scheme_count(p)
        totals = Array(Signal(p.nbits_bits, name=f"total{c}") for c in range(count))
        bad = Array(Signal(name=f"bad{c}") if c >= 8 else Const(0, 1) for c in range(count))
        inc = [Signal(p.nbits_bits, name=f"inc{c}") for c in range(count)]
        ones = Signal(p.count_bits)     # kept tokens since the last dropped one
        # Per order e, the Exp-Golomb code length of ``ones`` less e + 1 (2 * bit_length(ones +
        # 2**e) - 2 - 2e), kept beside ``ones`` (from its next value), so that no priority chain
        # and no adder stand between ``ones`` and the code lengths.
        ones_eg = [Signal(range(2 * max(p.count_bits, _ORDERS) + 1), name=f"ones_eg{e}")
                    for e in range(_ORDERS)] if count > _ORDERS else []
        limit = Signal(range(2 * p.count_bits + 1))
        b_valid = Signal()
        m.d.comb += counting.eq(b_valid)
        m.d.sync += limit.eq(2 * hb)
        # Stage C adds every cycle: the code lengths are cleared when stage B takes no gap, so
        # that no enable of the 32 totals hangs off one flag (its fanout was the critical path
        # of the standard-cell netlist).
        m.d.sync += [totals[c].eq(totals[c] + inc[c]) for c in range(count)]
        m.d.sync += [n.eq(0) for n in inc]
        with m.If(start):
            m.d.sync += [ones.eq(0), b_valid.eq(0)]
            m.d.sync += [n.eq(0) for n in ones_eg]
            m.d.sync += [t.eq(0) for t in totals] + [b.eq(0) for b in bad[8:]]
        run = ~zero
        for e in range(_ORDERS):
            # 2 * bit_length(gap + 2**e) - 1 - e; the sum is at least 2**e, so the length is
            # at least e + 1 and the code length's constants are positive.
            v = gap + (1 << e)
            keg = leading_one_code(v, [max(2 * (i + 1) - 1 - e, 0) for i in range(len(v))])
            with m.If(go):
                m.d.sync += inc[e].eq(Mux(tail, 0, keg))
            if count == _ORDERS:
                continue
            # The g dropped tokens of a gap g > 0: the first one's code (the run of kept tokens
            # before it), then g - 1 codes of 0 at e + 1 bits each; g * (e + 1) as shifts and
            # adds (no multiplier), the - (e + 1) folded into the constants.
            width = len(inc[16 + e])
            krice = (gap >> e) + 1 + e
            drice = ones >> e
            with m.If(go):
                m.d.sync += [
                    inc[8 + e].eq(Mux(tail, 0, krice)),
                    inc[16 + e].eq(Mux(run, _plus_times(ones_eg[e], gap, e + 1, width), 0)),
                    inc[24 + e].eq(Mux(run, _plus_times(drice, gap, e + 1, width), 0)),
                ]
                with m.If(~tail & ((gap >> e) >= limit)):
                    m.d.sync += bad[8 + e].eq(1)
                with m.If(run & ((ones >> e) >= limit)):
                    m.d.sync += bad[24 + e].eq(1)
        with m.If(go):
            m.d.sync += [b_valid.eq(1), ones.eq(Mux(run, 1, ones + 1))]
            for e, n in enumerate(ones_eg):
                # ones + 1 + 2**e with its leading one at bit i: 2 * (i + 1) - 2 - 2e.
                v = ones + (1 + (1 << e))
                m.d.sync += n.eq(Mux(run, 2 * (1 + (1 << e)).bit_length() - 2 - 2 * e,
                                     leading_one_code(v, [max(2 * i - 2 * e, 0)
                                                          for i in range(len(v))])))
        with m.Elif(b_valid):
            m.d.sync += b_valid.eq(0)
        return totals, bad

    def _feed_fields(self, m, rd, field, *, start, run, e, s, f, hb, n, tokens, last_end):
        """The field register ``field`` (a stream to the bit packer): while ``run``, the header
        ``e | s | f | count`` first, then the codes, one per cycle, from the gap memory (read
        port ``rd``): for the kept set one code per kept gap; for the dropped set, walking the
        kept gaps and the tail up to the last non-zero one (``last_end`` entries), g codes for a
        gap g > 0 (the run of kept tokens before it, then zeros) and none (one cycle) for a gap
        of 0. ``start`` begins a job. Returns a signal that
        is high once the last field has been taken (the packer may flush)."""
        p = self._params
        hdr_pending = Signal()
        rd_ptr = Signal(range(p.tokens + 1))
        entries = Signal(range(p.tokens + 1))
        m.d.comb += entries.eq(Mux(s, last_end, n))
        m_valid = Signal()              # rd.data holds a gap not yet moved to g
        # The gap register: the memory's read data is registered before the code is computed
        # from it (the block RAM's clock-to-output delay was most of the encoder's critical path).
        g_valid = Signal()
        g_data = Signal.like(rd.data)
        g_first = Signal()              # dropped set: g_data is a whole gap, no code sent yet
        ones = Signal(p.count_bits)     # dropped set: kept tokens since the last dropped one
        # The code register: a field's value, and its length unless it is an Exp-Golomb code.
        # That one's length, 2 * bit_length(v) - 1 - e with v = x + 2**e, is found without the
        # sum: with w = x | (2**e - 1), bit_length(v) = bit_length(w) + (w is all ones), both
        # registered here and added on the way to the field register. (The sum, then the
        # leading one after it, was the encoder's critical path, and then the leading one of
        # the registered v.)
        # w holds 2**e - 1 whatever the gaps' width (e is up to 7).
        w = Signal(max(len(g_data), _ORDERS - 1))
        c_layout = data.StructLayout({
            "value": field.payload.value.shape(),
            "length": field.payload.length.shape(),
            "eg": 1,
            "eg_bits": range(len(w) + 1),
            "eg_ones": 1,
        })
        c_valid = Signal()
        c = Signal(c_layout)
        # The code register reaches the field register through a ready slice, so that the
        # packer's ready (its output handshake) stops there and does not run on through the
        # code, gap and read stages' enables (sec's and the encoder's UP5K limit). The slice
        # passes a beat straight on and holds one only while the field register stalls, so it
        # adds no latency; but in a stall the stages before it move on by one code, and a
        # dropped-set walk goes on through its gaps of 0 (cycles without a code). Such a job
        # may then end a few cycles earlier than without the slice, never later (still within
        # the cycle range of the class docstring).
        m.submodules.code_cut = cut = ReadySlice(c_layout)
        with m.If(start):
            m.d.sync += [hdr_pending.eq(1), rd_ptr.eq(0), m_valid.eq(0), g_valid.eq(0),
                         c_valid.eq(0), field.valid.eq(0), ones.eq(0)]

        f_free = ~field.valid | field.ready
        cc = cut.o_stream.payload
        m.d.comb += [cut.i_stream.valid.eq(run & c_valid), cut.i_stream.payload.eq(c),
                     cut.o_stream.ready.eq(run & f_free)]
        with m.If(run & f_free):
            m.d.sync += [
                field.valid.eq(cut.o_stream.valid),
                field.payload.value.eq(cc.value),
                field.payload.length.eq(Mux(cc.eg, 2 * (cc.eg_bits + cc.eg_ones) - 1 - e,
                                            cc.length)),
            ]
        c_free = ~c_valid | cut.i_stream.ready
        x = Signal.like(g_data)         # the value to code
        m.d.comb += x.eq(Mux(s, Mux(g_first, ones, 0), g_data))
        rice_value = (1 << e) | (x & ((1 << e) - 1))
        m.d.comb += w.eq(x | ((1 << e) - 1))
        rice_len = (x >> e) + 1 + e
        skip = s & (g_data == 0)        # dropped set, a kept token with gap 0: no code
        last_code = ~s | (g_data == 1)  # the gap's last code
        g_take = Signal()
        m.d.comb += g_take.eq(run & c_free & ~hdr_pending & g_valid & (skip | last_code))
        count = Mux(s, tokens - n, n)
        with m.If(run & c_free):
            with m.If(hdr_pending):
                m.d.sync += [c_valid.eq(1), c.eg.eq(0),
                             c.value.eq((Cat(f, s, e) << hb) | count),
                             c.length.eq(HEADER_FIXED_BITS + hb), hdr_pending.eq(0)]
            with m.Elif(g_valid & ~skip):
                m.d.sync += [c_valid.eq(1), c.eg.eq(~f),
                             c.value.eq(Mux(f, rice_value, x + (1 << e))),
                             c.length.eq(rice_len),
                             c.eg_bits.eq(bit_length(w)), c.eg_ones.eq(_is_low_mask(w))]
            with m.Else():
                m.d.sync += c_valid.eq(0)
        with m.If(run & c_free & ~hdr_pending & g_valid & s):
            with m.If(skip):
                m.d.sync += ones.eq(ones + 1)
            with m.Else():
                m.d.sync += [g_data.eq(g_data - 1), g_first.eq(0)]
                with m.If(last_code):
                    m.d.sync += ones.eq(1)

        g_load = run & m_valid & (~g_valid | g_take)
        with m.If(g_load):
            m.d.sync += [g_valid.eq(1), g_data.eq(rd.data), g_first.eq(1)]
        with m.Elif(g_take):
            m.d.sync += g_valid.eq(0)

        m_adv = run & (~m_valid | g_load)
        m.d.comb += [rd.addr.eq(rd_ptr), rd.en.eq(m_adv)]
        with m.If(m_adv):
            m.d.sync += m_valid.eq(rd_ptr != entries)
            with m.If(rd_ptr != entries):
                m.d.sync += rd_ptr.eq(rd_ptr + 1)
        # The end of the entries, compared a cycle late, so that the packer's flush and the
        # encoder's end of job do not wait on the compare: rd_ptr stops at entries, which is
        # fixed during the emission, and the last read's gap is still in m, g or c the cycle
        # after, so the flag is never late; before the header has passed, hdr_pending or
        # c_valid holds the result low.
        at_end = Signal()
        m.d.sync += at_end.eq(rd_ptr == entries)
        return ~hdr_pending & ~m_valid & ~g_valid & ~c_valid & ~cut.o_stream.valid & at_end

    def _choose(self, m, totals, bad, *, start, run, chosen):
        """The first minimum of the schemes' ``totals`` among those that can code the mask (not
        ``bad``), one scheme per cycle (:func:`scheme_count` + 1 cycles: 33, or 9 for
        ``"kept-exp-golomb"``): a scheme's total is read (a 32-way select, registered) in one
        cycle and compared with the best in the next, since a minimum over many in one cycle is
        a chain of compares and was the encoder's critical path. Scheme 0 (kept set,
        Exp-Golomb, order 0) can always code the mask. ``start`` begins it; while ``run``,
        ``chosen`` rises in the cycle the returned (scheme, total) is final."""
        p = self._params
        count = len(totals)
        sel = count.bit_length() - 1    # bits of a scheme index (count is a power of two)
        best_c = Signal(5)
        best = Signal(p.nbits_bits)
        ck = Signal(range(count + 1))
        cand_v = Signal()
        cand_ok = Signal()
        cand_c = Signal(5)
        cand = Signal(p.nbits_bits)
        with m.If(start):
            m.d.sync += [ck.eq(1), best_c.eq(0), best.eq(totals[0]), cand_v.eq(0)]
        with m.If(run):
            m.d.sync += [cand_v.eq(ck != count), cand_c.eq(ck[:sel]),
                         cand.eq(totals[ck[:sel]]), cand_ok.eq(~bad[ck[:sel]])]
            with m.If(ck != count):
                m.d.sync += ck.eq(ck + 1)
            with m.If(cand_v & cand_ok & (cand < best)):
                m.d.sync += [best_c.eq(cand_c), best.eq(cand)]
        m.d.comb += chosen.eq(run & (ck == count) & ~cand_v)
        return best_c, best


class _IngestRegisters:
    """The encoder's ingest registers: where the job's mask beats are, the beat stage A works
    on, and the gap it hands to stage B."""

    def __init__(self, p):
        cb = p.count_bits
        #: Token index of the next beat's lane 0.
        self.in_base = Signal(cb + 1, name="in_base")
        #: M - in_base.
        self.in_left = Signal(cb + 1, name="in_left")
        #: Bit k: in_left <= k (k = 0 .. lanes), registered with in_left, so that the checks
        #: of the beat on the input are no compare.
        self.left_le = Signal(p.lanes + 1, name="left_le")
        #: The job's final beat (by M) has been accepted.
        self.got_final = Signal(name="got_final")
        #: The tail gap has gone to stage B.
        self.tail_sent = Signal(name="tail_sent")
        #: The current beat's kept tokens not yet picked, its valid and its lane 0's index.
        self.cur_bits = Signal(p.lanes, name="cur_bits")
        #: cur_bits has two or more bits set, registered with it (more than two lanes only): the
        #: beat's end, and so the input's ready, then need no carry chain (``cur_bits &
        #: (cur_bits - 1)``) and zero test (with 32 lanes the path from cur_bits through ready
        #: back into cur_bits was the encoder's longest).
        self.cur_multi = Signal(name="cur_multi")
        self.cur_valid = Signal(name="cur_valid")
        self.cur_base = Signal(cb + 1, name="cur_base")
        #: Previous kept index + 1 (0 before the first).
        self.prev_end = Signal(cb + 1, name="prev_end")
        #: Stage A -> B: one gap (or, with ``a_tail``, the tail).
        self.a_valid = Signal(name="a_valid")
        self.a_tail = Signal(name="a_tail")
        self.a_gap = Signal(p.index_bits + 1, name="a_gap")
        #: a_gap == 0, found beside it (stage B's code lengths and stores depend on it).
        self.a_zero = Signal(name="a_zero")


def _control(m, *, start, bad_cfg, bad_beat, last, ingested, chosen, refused, emitted,
             drained):
    """The encoder's states, IDLE -> INGEST -> CHOOSE -> EMIT -> IDLE, and DRAIN, which
    discards the rest of a malformed job (a bad config beat, or a bad mask beat without
    ``last``). Returns ``(idle, ingest, choose, emit, drain)``, one flag per state.

    The states are one-hot, each flag a register: they gate the emission's and the ingest's
    handshakes, whose enables then need no decode of a state code (on the UP5K that decode
    led both encoder and SEC critical paths)."""
    idle, ingest, choose, emit, drain = (
        Signal(name=name, init=name == "idle")
        for name in ("idle", "ingest", "choose", "emit", "drain"))

    def go(src, dst):
        m.d.sync += [src.eq(0), dst.eq(1)]

    with m.If(idle & start):
        with m.If(bad_cfg):
            go(idle, drain)
        with m.Else():
            go(idle, ingest)
    with m.If(ingest):
        # ``ingested`` first: once it is high no beat is taken, and CHOOSE's enable then does
        # not wait on the input handshake and the beat's checks.
        with m.If(ingested):
            go(ingest, choose)
        with m.Elif(bad_beat):
            with m.If(last):
                go(ingest, idle)
            with m.Else():
                go(ingest, drain)
    with m.If(choose & chosen):
        with m.If(refused):
            go(choose, idle)
        with m.Else():
            go(choose, emit)
    with m.If(emit & emitted):
        go(emit, idle)
    with m.If(drain & drained):
        go(drain, idle)
    return idle, ingest, choose, emit, drain


def _plus_times(base, value, k, width):
    """``base + value * k`` modulo 2**width, for unsigned values and a constant k in 1..8:
    ``value * k`` as at most two shifted copies (k = 7: 8v - v, that is 8v + ~v + 1), the three
    terms reduced by one carry-save step to two before a single adder, so that no carry chain
    follows another (the encoder's stage B on the UP5K)."""
    def widen(x):
        return Cat(x, Const(0, max(width - len(x), 0)))[:width]
    v = widen(value)
    if k & (k - 1) == 0:
        return (widen(base) + widen(v << (k.bit_length() - 1)))[:width]
    if k == 7:
        terms, carry_in = [widen(v << 3), ~v], 1
    else:
        low = k & -k
        terms = [widen(v << (low.bit_length() - 1)), widen(v << ((k - low).bit_length() - 1))]
        carry_in = 0
    total, carry = full_add(widen(base), *terms)
    return (total + Cat(Const(carry_in, 1), carry[:width - 1]))[:width]


def _is_low_mask(value):
    """Whether ``value`` is 2**k - 1 for some k (no 0 bit below a 1 bit): pairs of adjacent
    bits, with no carry chain (``value & (value + 1) == 0`` needs one)."""
    return Cat(*(~value[i + 1] | value[i] for i in range(len(value) - 1))).all()


def _count_at_least(m, bits, k, name):
    """Whether ``k`` (1 to 3) or more bits of ``bits`` are set: a balanced tree of counts that
    saturate at 3 (each node a function of its two children's 2-bit counts, one LUT level), no
    carry chain. Each node is a signal of its own: a node uses its children's bits more than
    once, so nested expressions would grow by a factor of about 12 per level."""
    assert 1 <= k <= 3

    def walk(lo, hi):
        if hi - lo == 1:
            return Cat(bits[lo], Const(0, 1))
        mid = (lo + hi) // 2
        (l0, l1), (r0, r1) = walk(lo, mid), walk(mid, hi)
        node = Signal(2, name=f"{name}_{lo}_{hi}")
        # min(left + right, 3) as logic, not an adder: bit 1 is "2 or more"; bit 0 is "odd,
        # or 3 or more".
        any0 = l0 | r0
        m.d.comb += node.eq(Cat((l0 ^ r0) | (l1 & r1) | ((l1 | r1) & any0),
                                l1 | r1 | (l0 & r0)))
        return node
    return walk(0, len(bits)) >= k


def _lowest_set(m, bits):
    """The index of the lowest set bit of ``bits`` (when none is set, the top index: callers
    use it only when some bit is set): a balanced tree of (any, index) pairs, each level a 2:1
    select of the lower half's index or the upper half's, so its depth is log2(len(bits))
    selects, not a priority chain of len(bits) (with 32 lanes that chain led the encoder's
    ingest on both FPGAs)."""
    def walk(lo, size):
        if size == 1:
            return bits[lo] if lo < len(bits) else Const(0, 1), Const(0, 0)
        half = size // 2
        (any_l, idx_l), (any_r, idx_r) = walk(lo, half), walk(lo + half, half)
        return any_l | any_r, Mux(any_l, Cat(idx_l, Const(0, 1)), Cat(idx_r, Const(1, 1)))
    size = 1 << max(len(bits) - 1, 0).bit_length()
    lowest = Signal(range(max(size, 2)), name="lowest")
    m.d.comb += lowest.eq(walk(0, size)[1])
    return lowest
