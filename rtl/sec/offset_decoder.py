"""The SEC offset decoder (spec 3.3): Exp-Golomb offset code in, keep mask and kept indices out."""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import mask_beat_layout, offset_word_layout
from .mask_builder import INDEX_FIFO_DEPTH, MaskBuilder
from .offset_encoder import bit_length

__all__ = ["OffsetDecoder", "DecodeError", "decoder_config_layout", "index_layout",
           "leading_zero_limit", "decode_field_bits", "DECODE_DRAIN_CYCLES", "INDEX_FIFO_DEPTH"]

#: Cycles from the decision that ends a job (error, or the last mask beat written) to ``busy``
#: low, once the job's last word has been accepted and the output registers are empty.
DECODE_DRAIN_CYCLES = 2


class DecodeError(enum.Enum, shape=4):
    """Why :class:`OffsetDecoder` raised ``error`` (its ``cause`` output)."""
    NONE = 0
    #: The config beat's ``tokens`` (the job's M) is 0 or larger than ``params.tokens``.
    CONFIG = 1
    #: ``nbits`` is shorter than the header (3 + bit_length(M) bits).
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


class _Phase(enum.Enum, shape=2):
    """The decoder's phase within a job."""
    #: The header is next.
    HDR = 0
    #: One code per cycle.
    CODES = 1
    #: The n codes are decoded.
    FIN = 2


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


def leading_zero_limit(p):
    """Z = bit_length(tokens): a code with Z leading zeros has v >= 2**(Z+e), so its gap is at
    least 2**Z - 1 >= tokens >= M and its index is out of range. Z <= 17 < 31."""
    return p.tokens.bit_length()


def decode_field_bits(p):
    """Longest field the decoder must see at once: a code with Z - 1 leading zeros at order 7
    (2*Z + 6 bits), or the header (3 + bit_length(tokens) bits)."""
    return max(2 * leading_zero_limit(p) + 6, 3 + p.count_bits)


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

    Datapath: a bit buffer of ``decode_field_bits + word_bits`` bits takes one word per cycle
    while it has room; each cycle the header, or one code, is decoded from its top (a leading
    zero count over Z = bit_length(tokens) bits, then a variable shift) and consumed. An index
    goes to ``idx_stream``'s register and, in the same cycle, to a
    :class:`rtl.sec.mask_builder.MaskBuilder` (through its queue of :data:`INDEX_FIFO_DEPTH`),
    which writes one mask beat per cycle: the decoder composes the two with ``wiring.connect``,
    starts the builder with the config beat, holds it aborted while no job runs or after an
    error, and tells it when the codes are all decoded. Throughput: one code per cycle while
    the buffer holds it (codes average fewer than ``word_bits`` bits), ``idx_stream`` takes it and
    the queue has room; the mask side writes one beat per cycle, so a gap that skips b whole beats
    costs about b cycles there, absorbed by the queue.

    Cycles with no stalls, for a valid code of w words and n kept tokens, from the config beat to
    the last output transfer, inclusive: at least ``max(w, n, ceil(M/lanes)) + 5`` and at most
    ``w + n + ceil(M/lanes) + 5`` (:func:`golden.cycles.decode_cycles`); near the lower end
    unless the queue overflows on gaps of many whole beats (clustered masks).

    Malformed input (:class:`DecodeError`): M = 0 or M > ``tokens``, ``nbits`` shorter than the
    header, words ending before ``nbits``, a count n > M, a code with Z or more leading zeros (so
    also more than 31), a code running past ``nbits``, an index >= M, or codes ending before
    ``nbits``. Each is found in the cycle the decoder reaches it (the config beat, the word
    flagged ``last``, or the offending header or code). Then ``error`` rises with its ``cause``;
    the rest of the job is dropped: no further index or mask beat is written (beats already
    written are valid positions < M, but the job is incomplete: consumers must discard it), the
    queue is cleared, and ``i_stream.ready`` stays high until the job's ``last`` word. The decoder
    is idle (``busy`` low) :data:`DECODE_DRAIN_CYCLES` cycles after the later of the error and the
    ``last`` word's transfer, once a beat already offered on an output has been taken (stream
    rules forbid withdrawing it). With always-valid words and always-ready outputs, a job of w
    words that writes i <= M indices is idle within ``w + i + ceil(M/lanes) + 8`` cycles of its
    config beat, error or not (the fuzz tests check this bound on thousands of streams; the formal
    test proves at a small size that every job ends). ``error`` and
    ``cause`` hold until the next config beat. The decoder never writes an index >= M, more
    than ceil(M/lanes) mask beats, or a set padding bit, and never waits for words it cannot get.

    Parameters
    ----------
    params : FocusParams
        Uses ``tokens``, ``lanes`` and ``word_bits`` (and the derived widths).
    mask : bool
        False leaves out the mask builder (and its queue) and ``o_stream``: the decoder proper,
        code words to indices, with the same ports otherwise. It gives the kept indices at one
        per cycle whatever the gaps (a gap no longer costs a cycle per skipped beat), and a job
        of w words and n indices takes ``max(w, n) + 5`` cycles or fewer.
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
    kept : Out(range(tokens + 1))
        The count n read from the header.
    """

    def __init__(self, params=None, *, mask=True):
        self._mask = bool(mask)
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(decoder_config_layout(p))),
            "i_stream": In(stream.Signature(offset_word_layout(p))),
            **({"o_stream": Out(stream.Signature(mask_beat_layout(p)))} if mask else {}),
            "idx_stream": Out(stream.Signature(index_layout(p))),
            "busy": Out(1),
            "error": Out(1),
            "cause": Out(DecodeError),
            "order": Out(3),
            "kept": Out(range(p.tokens + 1)),
        })

    @property
    def has_mask(self):
        """Whether the decoder has the mask output ``o_stream`` (the ``mask`` argument)."""
        return self._mask

    def elaborate(self, platform):
        p = self._params
        m = Module()
        cfg, i, x = self.cfg_stream, self.i_stream, self.idx_stream
        wb, cb = p.word_bits, p.count_bits
        zmax = leading_zero_limit(p)
        fw = decode_field_bits(p)
        bb = fw + wb                    # bit buffer: a word fits in whenever fill <= fw

        # ---- job settings and state -------------------------------------------------------------
        tokens = Signal(cb)
        hb = Signal(range(cb + 1))
        e = Signal(3)
        n = Signal(range(p.tokens + 1))
        m.d.comb += [self.order.eq(e), self.kept.eq(n)]
        running = Signal()
        in_done = Signal()              # the job's last word has been accepted
        # The phase is an enum, not an m.FSM: a config beat restarts it from any value, so the
        # decoder leaves even its unused code (the formal proof's induction relies on this).
        phase = Signal(_Phase)
        codes_left = Signal(range(p.tokens + 1))
        prev_end = Signal(cb + 1)       # previous index + 1
        error = Signal()
        cause = Signal(DecodeError)
        m.d.comb += [self.error.eq(error), self.cause.eq(cause)]

        buf = Signal(bb)                # left-aligned: bit bb-1 is the next bit of the string
        fill = Signal(range(bb + 1))    # bits loaded into buf (string and padding)
        rem = Signal(p.nbits_bits)      # string bits not yet consumed
        need = Signal(p.nbits_bits)     # string bits not yet loaded

        # ---- a new job --------------------------------------------------------------------------
        cfg_fire = cfg.valid & cfg.ready
        m.d.comb += cfg.ready.eq(~running)
        with m.If(cfg_fire):
            cfg_m, cfg_hb = cfg.payload.tokens, bit_length(cfg.payload.tokens)
            bad_m = (cfg_m == 0) | (cfg_m > p.tokens)
            short = cfg.payload.nbits < 3 + cfg_hb
            m.d.sync += [
                running.eq(1), in_done.eq(0), phase.eq(_Phase.HDR), codes_left.eq(0),
                prev_end.eq(0),
                tokens.eq(cfg_m), hb.eq(cfg_hb), e.eq(0), n.eq(0),
                buf.eq(0), fill.eq(0), rem.eq(cfg.payload.nbits), need.eq(cfg.payload.nbits),
                error.eq(bad_m | short),
                cause.eq(Mux(bad_m, DecodeError.CONFIG,
                             Mux(short, DecodeError.HEADER, DecodeError.NONE))),
            ]

        # ---- the mask builder, with the mask: each index goes to it and to idx_stream's register
        # in the same cycle, only when both have room (so `to_mask.valid` waits for `ready`, which
        # is safe: the builder's ready is its queue's room and never depends on valid).
        room = ~x.valid | x.ready
        if self._mask:
            m.submodules.mask_builder = builder = MaskBuilder(p)
            to_mask = stream.Signature(unsigned(p.index_bits)).create(path=("to_mask",))
            wiring.connect(m, to_mask, builder.i_stream)
            wiring.connect(m, builder.o_stream, wiring.flipped(self.o_stream))
            room = room & to_mask.ready

        # ---- decode one field from the top of the buffer ----------------------------------------
        avail = Signal.like(rem)        # string bits in the buffer
        m.d.comb += avail.eq(Mux(fill < rem, fill, rem))
        lz, code_len, j = _code_fields(m, p, buf, e, prev_end)
        hl, hdr, hdr_n = _header_fields(m, p, buf, hb)

        used = Signal(range(fw + 1))    # string bits consumed this cycle
        push, fail = Signal(name="push"), Signal(name="fail")
        fail_cause = Signal(DecodeError)
        active = running & ~error
        with m.Switch(phase):
            with m.Case(_Phase.HDR):
                with m.If(active & (avail >= hl)):
                    m.d.comb += used.eq(hl)
                    m.d.sync += [e.eq(hdr >> hb), n.eq(hdr_n), codes_left.eq(hdr_n)]
                    with m.If(hdr_n > tokens):
                        m.d.comb += [fail.eq(1), fail_cause.eq(DecodeError.COUNT)]
                    with m.Else():
                        m.d.sync += phase.eq(_Phase.CODES)
            with m.Case(_Phase.CODES):
                with m.If(active & (codes_left == 0)):
                    # Only for n = 0: the header must be the whole string.
                    with m.If(rem == 0):
                        m.d.sync += phase.eq(_Phase.FIN)
                    with m.Else():
                        m.d.comb += [fail.eq(1), fail_cause.eq(DecodeError.TRAILING)]
                with m.Elif(active & room):
                    one = (lz < avail) & (lz < zmax)
                    with m.If(one & (code_len <= avail)):
                        with m.If(j >= tokens):
                            m.d.comb += [fail.eq(1), fail_cause.eq(DecodeError.INDEX)]
                        with m.Elif((codes_left == 1) & (rem != code_len)):
                            m.d.comb += [fail.eq(1), fail_cause.eq(DecodeError.TRAILING)]
                        with m.Else():
                            m.d.comb += [used.eq(code_len), push.eq(1)]
                            m.d.sync += [prev_end.eq(j + 1), codes_left.eq(codes_left - 1)]
                            with m.If(codes_left == 1):
                                m.d.sync += phase.eq(_Phase.FIN)
                    with m.Elif(~one & (avail >= zmax)):
                        m.d.comb += [fail.eq(1), fail_cause.eq(DecodeError.ZEROS)]
                    with m.Elif(need == 0):
                        # Every string bit is in the buffer and the code still does not fit.
                        m.d.comb += [fail.eq(1), fail_cause.eq(DecodeError.TRUNCATED)]
        fin = phase == _Phase.FIN

        # ---- the buffer: consume, then load a word ----------------------------------------------
        m.d.comb += i.ready.eq(running & ~in_done & (error | (need == 0) | (fill <= fw)))
        word_fire = i.valid & i.ready
        load = word_fire & ~error & (need != 0)
        kept_fill = Signal.like(fill)
        m.d.comb += kept_fill.eq(fill - used)
        shifted = Signal(bb)
        m.d.comb += shifted.eq(buf << used)
        load_shift = Signal(range(bb + 1))
        m.d.comb += load_shift.eq(bb - wb - kept_fill)
        with m.If(running & ~cfg_fire):
            m.d.sync += rem.eq(rem - used)
            with m.If(load):
                m.d.sync += [buf.eq(shifted | (i.payload.word << load_shift)),
                             fill.eq(kept_fill + wb),
                             need.eq(Mux(need > wb, need - wb, 0))]
            with m.Else():
                m.d.sync += [buf.eq(shifted), fill.eq(kept_fill)]
        short = word_fire & i.payload.last & (need > wb)
        with m.If(word_fire & i.payload.last):
            m.d.sync += in_done.eq(1)

        with m.If(running & ~error & (fail | short)):
            m.d.sync += [error.eq(1), cause.eq(Mux(fail, fail_cause, DecodeError.SHORT))]

        # ---- outputs: the index register (and the mask builder), and the end of a job ----------
        with m.If(push):
            m.d.sync += [x.valid.eq(1), x.payload.index.eq(j), x.payload.last.eq(codes_left == 1)]
        with m.Elif(x.ready):
            m.d.sync += x.valid.eq(0)
        busy = running | x.valid
        finished = fin                  # every output of the job is decided
        if self._mask:
            m.d.comb += [
                to_mask.valid.eq(push), to_mask.payload.eq(j),
                builder.start.eq(cfg_fire), builder.M.eq(tokens),
                builder.abort.eq(~running | error), builder.i_done.eq(fin),
            ]
            busy = busy | self.o_stream.valid
            finished = ~builder.busy
        m.d.comb += self.busy.eq(busy)
        with m.If(running & in_done & (error | finished)):
            m.d.sync += running.eq(0)
        return m


def _code_fields(m, p, buf, e, prev_end):
    """The code at the top of the bit buffer ``buf``, at order ``e``: its leading zeros ``lz``
    (counted over Z = :func:`leading_zero_limit` bits, Z when all are zero), its length
    ``2*lz + 1 + e`` and the index ``j`` it gives after the previous index + 1, ``prev_end``."""
    zmax, fw, bb = leading_zero_limit(p), decode_field_bits(p), len(buf)
    assert zmax <= 31
    top = buf[bb - zmax:]           # the bits a leading zero count looks at
    lz = Signal(range(zmax + 1))
    m.d.comb += lz.eq(zmax)
    for k in reversed(range(zmax)):
        with m.If(top[zmax - 1 - k]):
            m.d.comb += lz.eq(k)
    code_len = Signal(range(fw + 1))
    m.d.comb += code_len.eq(2 * lz + 1 + e)
    code_shift = Signal(range(bb + 1))
    m.d.comb += code_shift.eq(bb - code_len)
    v = Signal(zmax + 8)
    m.d.comb += v.eq(buf >> code_shift)
    j = Signal(max(p.count_bits + 1, zmax + 8) + 1)
    m.d.comb += j.eq(prev_end + v - (1 << e))
    return lz, code_len, j


def _header_fields(m, p, buf, hb):
    """The header at the top of ``buf`` for a count field of ``hb`` bits: its length
    ``3 + hb``, the header's bits (order, then count) and the count n."""
    cb, bb = p.count_bits, len(buf)
    hl = Signal(range(cb + 4))      # header length
    m.d.comb += hl.eq(3 + hb)
    hdr_shift = Signal(range(bb + 1))
    m.d.comb += hdr_shift.eq(bb - hl)
    hdr = Signal(3 + cb)
    m.d.comb += hdr.eq(buf >> hdr_shift)
    hdr_n = Signal(cb)
    m.d.comb += hdr_n.eq(hdr & ((1 << hb) - 1))
    return hl, hdr, hdr_n
