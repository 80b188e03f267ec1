"""The SEC offset encoder (spec 3.3): keep mask in, Exp-Golomb offset code out."""

from amaranth.hdl import Array, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import mask_beat_layout, offset_word_layout
from ..lib.bit_packer import BitPacker, packer_field_layout

__all__ = ["OffsetEncoder", "EncodeError", "encoder_config_layout", "code_field_bits",
           "bit_length"]

#: Orders 0..7; the order field of the header is 3 bits wide.
_ORDERS = 8


class EncodeError(enum.Enum, shape=2):
    """Why :class:`OffsetEncoder` raised ``error`` (its ``cause`` output)."""
    NONE = 0
    #: The config beat's ``tokens`` (the job's M) is 0 or larger than ``params.tokens``.
    CONFIG = 1
    #: A mask beat's ``last`` flag disagrees with M: set before beat ceil(M/lanes) - 1, or clear
    #: on it.
    LAST = 2
    #: A padding bit (token index >= M) of the final mask beat is set.
    PADDING = 3


def encoder_config_layout(p):
    """The encoder's configuration beat, one per job.

    ``tokens`` is the job's M (1 .. ``params.tokens``); ``adaptive`` picks the order with the fewest
    bits (ties to the smaller e), otherwise ``order`` (0..7) is used."""
    return data.StructLayout({
        "tokens": unsigned(p.count_bits),
        "order": unsigned(3),
        "adaptive": 1,
    })


def code_field_bits(p):
    """Widest field the encoder packs: the header (3 + bit_length(tokens) bits) or the longest
    Exp-Golomb code of a gap <= tokens - 1 at any order."""
    longest = max(2 * (p.tokens - 1 + (1 << e)).bit_length() - 1 - e for e in range(_ORDERS))
    return max(3 + p.count_bits, longest)


def bit_length(value):
    """``value.bit_length()`` of an unsigned Amaranth value, as a combinational priority chain."""
    width = len(value)
    result = 0
    for i in range(width):
        result = Mux(value[i], i + 1, result)
    return result


class OffsetEncoder(FocusBlock):
    """Encodes one keep mask per job as the offset code of spec 3.3, bit-exact to
    :func:`golden.offsets.encode_offsets`.

    A job is one ``cfg_stream`` beat (:func:`encoder_config_layout`: M, fixed order or adaptive)
    and ceil(M/lanes) ``i_stream`` mask beats (:func:`rtl.layouts.mask_beat_layout`, ``last`` on
    the final one, padding bits 0). The job's words leave on ``o_stream``
    (:func:`rtl.layouts.offset_word_layout`): the string ``e | n | EG_e(g_0) ...`` packed MSB first,
    the final word zero-padded and flagged ``last``. ``nbits`` is valid on *every* word (the
    encoder knows it before the first word leaves), so a consumer such as the offset decoder can
    take its configuration from the first word.

    How it buffers: the header needs the count n, and the adaptive order needs the code lengths of
    every gap, before the first code can be written. The encoder therefore keeps the *gaps* (not
    the mask) in a ``tokens`` x ``index_bits`` memory:

    1. **Ingest.** Each cycle it takes the lowest set bit of the current mask beat, forms its gap
       (kept index minus the previous kept index minus 1), writes it to the gap memory and adds
       its Exp-Golomb length for all eight orders to eight running totals. A beat with p set bits
       takes max(1, p) cycles (an empty beat one cycle); the next beat is accepted in the cycle
       the current one runs out, so ``i_stream`` sees back-pressure only from beats with 2 or
       more kept tokens. Ingest costs ``n + (empty beats)`` cycles, between max(ceil(M/lanes), n)
       and ceil(M/lanes) + n.
    2. **Choose.** Eight cycles, one order per cycle: the order (the fixed one, or the first
       minimum of the eight totals) and ``nbits = 3 + bit_length(M) + total[e]``. (In one cycle
       the seven compares were the encoder's critical path: 10.5 MHz on the iCE40, against 31
       MHz now.)
    3. **Emit.** The header, then one code per cycle read back from the gap memory, go into a
       :class:`rtl.lib.bit_packer.BitPacker` that writes at most one word per cycle. Codes
       longer than a word hold the packer for ceil(length/word_bits) cycles: emission is
       ``max(n + 1, words)`` cycles.

    Latency and throughput: with no stalls a job of M tokens, n kept, takes
    ``sum over beats of max(1, kept in the beat) + max(n + 1, ceil(nbits/word_bits)) + 14`` to
    ``+ 16`` cycles from its config beat to its last word, inclusive (the tests check this; compare
    :func:`golden.cycles.encode_cycles`, whose ``max(ceil(M/lanes), n) + ceil(nbits/word_bits)``
    assumes codes formed while the mask streams in). Jobs do not overlap, except that the next
    config beat is accepted while the previous job's last word still waits in the output
    register. Under ``o_stream`` back-pressure the packer holds; nothing is lost or duplicated.

    Errors: a config beat with M = 0 or M > ``tokens`` (``EncodeError.CONFIG``), a mask beat whose
    ``last`` disagrees with M (``LAST``) or a set padding bit (``PADDING``) raise ``error`` with
    its ``cause``. The job is dropped: no word is written for it, the rest of its mask beats are
    accepted and discarded up to the beat flagged ``last``, and the encoder is idle one cycle
    after that beat (at once when the bad beat itself carries ``last``). ``error`` and ``cause``
    hold until the next config beat is accepted.

    Parameters
    ----------
    params : FocusParams
        Uses ``tokens``, ``lanes`` and ``word_bits`` (and the derived ``count_bits``,
        ``index_bits``, ``nbits_bits``).

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
    kept : Out(range(tokens + 1))
        The job's kept count n (final once ingest ends).
    order : Out(3)
        The job's order e (valid from the first word on).
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(encoder_config_layout(p))),
            "i_stream": In(stream.Signature(mask_beat_layout(p))),
            "o_stream": Out(stream.Signature(offset_word_layout(p))),
            "busy": Out(1),
            "error": Out(1),
            "cause": Out(EncodeError),
            "kept": Out(range(p.tokens + 1)),
            "order": Out(3),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        cfg, i = self.cfg_stream, self.i_stream
        lanes, cb = p.lanes, p.count_bits
        fw = code_field_bits(p)         # widest packed field

        # ---- job settings -----------------------------------------------------------------------
        tokens = Signal(cb)
        hb = Signal(range(cb + 1))      # bit_length(M): width of the header's count field
        adaptive = Signal()
        fixed = Signal(3)
        e = Signal(3)
        nbits = Signal(p.nbits_bits)
        n = Signal(range(p.tokens + 1))
        m.d.comb += [self.kept.eq(n), self.order.eq(e)]

        # ---- gap memory -------------------------------------------------------------------------
        gaps = memory.Memory(shape=unsigned(p.index_bits), depth=p.tokens, init=[])
        m.submodules.gaps = gaps
        wr = gaps.write_port()
        rd = gaps.read_port(domain="sync")

        # ---- ingest registers -------------------------------------------------------------------
        in_base = Signal(cb + 1)        # token index of the next beat's lane 0
        got_final = Signal()            # the job's final beat (by M) has been accepted
        cur_bits = Signal(lanes)
        cur_valid = Signal()
        cur_base = Signal(cb + 1)
        prev_end = Signal(cb + 1)       # previous kept index + 1 (0 before the first)
        a_valid = Signal()              # stage A -> B: one gap
        a_gap = Signal(p.index_bits)
        totals = Array(Signal(p.nbits_bits, name=f"total{k}") for k in range(_ORDERS))

        # ---- emission: the field register feeds the bit packer ----------------------------------
        m.submodules.packer = packer = BitPacker(p, fw)
        wiring.connect(m, packer.o_stream, wiring.flipped(self.o_stream))
        field = stream.Signature(packer_field_layout(fw)).create(path=("field",))
        wiring.connect(m, field, packer.i_stream)

        # ---- control ----------------------------------------------------------------------------
        # IDLE -> INGEST -> CHOOSE -> EMIT -> IDLE; DRAIN discards the rest of a malformed job.
        cfg_fire = cfg.valid & cfg.ready
        bad_cfg = (cfg.payload.tokens == 0) | (cfg.payload.tokens > p.tokens)
        beat_fire = Signal()            # an ingest beat is accepted ...
        bad_beat = Signal()             # ... and it is malformed
        ingested = got_final & ~cur_valid & ~a_valid    # the last gap is counted
        chosen = Signal()
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(cfg_fire & bad_cfg):
                    m.next = "DRAIN"
                with m.Elif(cfg_fire):
                    m.next = "INGEST"
            with m.State("INGEST"):
                with m.If(beat_fire & bad_beat):
                    with m.If(i.payload.last):
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "DRAIN"
                with m.Elif(ingested):
                    m.next = "CHOOSE"
            with m.State("CHOOSE"):
                with m.If(chosen):
                    m.next = "EMIT"
            with m.State("EMIT"):
                with m.If(packer.done):
                    m.next = "IDLE"
            with m.State("DRAIN"):
                with m.If(i.valid & i.payload.last):
                    m.next = "IDLE"
        idle, ingest, choose, emit, drain = (
            fsm.ongoing(state) for state in ("IDLE", "INGEST", "CHOOSE", "EMIT", "DRAIN"))

        error = Signal()
        cause = Signal(EncodeError)
        m.d.comb += [self.error.eq(error), self.cause.eq(cause),
                     self.busy.eq(~idle | self.o_stream.valid)]

        m.d.comb += cfg.ready.eq(idle)
        with m.If(cfg_fire):
            m.d.sync += [
                tokens.eq(cfg.payload.tokens),
                hb.eq(bit_length(cfg.payload.tokens)),
                adaptive.eq(cfg.payload.adaptive),
                fixed.eq(cfg.payload.order),
                e.eq(cfg.payload.order),
                n.eq(0), in_base.eq(0), got_final.eq(0), cur_valid.eq(0), prev_end.eq(0),
                a_valid.eq(0),
                error.eq(bad_cfg),
                cause.eq(Mux(bad_cfg, EncodeError.CONFIG, EncodeError.NONE)),
            ]
            m.d.sync += [totals[k].eq(0) for k in range(_ORDERS)]

        # ---- ingest: stage A picks one kept token per cycle --------------------------------------
        lowest = _lowest_set(m, cur_bits)
        rest = cur_bits & (cur_bits - 1)
        cur_done = rest == 0            # at most one kept token left: the beat ends this cycle
        pos = cur_base + lowest

        with m.If(ingest & cur_valid):
            m.d.sync += a_valid.eq(cur_bits != 0)
            with m.If(cur_bits != 0):
                m.d.sync += [a_gap.eq(pos - prev_end), prev_end.eq(pos + 1), cur_bits.eq(rest)]
            with m.If(cur_done):
                m.d.sync += cur_valid.eq(0)
        with m.Else():
            m.d.sync += a_valid.eq(0)

        m.d.comb += i.ready.eq((ingest & ~got_final & (~cur_valid | cur_done)) | drain)
        beat_final = in_base + lanes >= tokens
        pad = Signal(lanes)             # lanes at or past M on this beat
        for k in range(lanes):
            m.d.comb += pad[k].eq(in_base + k >= tokens)
        m.d.comb += [beat_fire.eq(ingest & i.valid & i.ready),
                     bad_beat.eq((i.payload.last != beat_final) | ((i.payload.keep & pad) != 0))]
        with m.If(beat_fire):
            with m.If(i.payload.last != beat_final):
                m.d.sync += [error.eq(1), cause.eq(EncodeError.LAST)]
            with m.Elif((i.payload.keep & pad) != 0):
                m.d.sync += [error.eq(1), cause.eq(EncodeError.PADDING)]
            with m.Else():
                m.d.sync += [cur_bits.eq(i.payload.keep), cur_valid.eq(1), cur_base.eq(in_base),
                             in_base.eq(in_base + lanes), got_final.eq(beat_final)]

        # ---- ingest: stage B stores the gap and adds its length at every order -----------------
        m.d.comb += [wr.addr.eq(n), wr.data.eq(a_gap), wr.en.eq(ingest & a_valid)]
        with m.If(ingest & a_valid):
            m.d.sync += n.eq(n + 1)
            for k in range(_ORDERS):
                v = a_gap + (1 << k)
                m.d.sync += totals[k].eq(totals[k] + 2 * bit_length(v) - 1 - k)

        # ---- choose: the order and nbits, once the last gap is counted ---------------------------
        best_e, best = self._choose_order(m, totals, start=ingest & ingested, run=choose,
                                          chosen=chosen)
        with m.If(chosen):
            m.d.sync += [e.eq(Mux(adaptive, best_e, fixed)),
                         nbits.eq(3 + hb + Mux(adaptive, best, totals[fixed]))]

        # ---- emit: gap memory -> fields -> packer -> output word ---------------------------------
        fields_done = self._feed_fields(m, rd, field, start=cfg_fire, run=emit, e=e, hb=hb, n=n)
        m.d.comb += [packer.nbits.eq(nbits), packer.flush.eq(emit & fields_done)]
        return m

    def _feed_fields(self, m, rd, field, *, start, run, e, hb, n):
        """The field register ``field`` (a stream to the bit packer): while ``run``, the header
        ``e | n`` first, then one code per cycle from the ``n`` gaps in the gap memory (read port
        ``rd``). ``start`` begins a job. Returns a signal that is high once the last field has
        been taken (the packer may flush)."""
        p = self._params
        hdr_pending = Signal()
        rd_ptr = Signal(range(p.tokens + 1))
        m_valid = Signal()              # rd.data holds a gap not yet moved to g
        # The gap register: the memory's read data is registered before the code is computed
        # from it (the block RAM's clock-to-output delay was most of the encoder's critical path).
        g_valid = Signal()
        g_data = Signal.like(rd.data)
        with m.If(start):
            m.d.sync += [hdr_pending.eq(1), rd_ptr.eq(0), m_valid.eq(0), g_valid.eq(0),
                         field.valid.eq(0)]

        f_free = ~field.valid | field.ready
        v = Signal(p.index_bits + 8)
        vlen = Signal(range(len(v) + 1))
        m.d.comb += [v.eq(g_data + (1 << e)), vlen.eq(bit_length(v))]
        g_take = run & f_free & ~hdr_pending & g_valid
        with m.If(run & f_free):
            with m.If(hdr_pending):
                m.d.sync += [field.valid.eq(1), field.payload.value.eq((e << hb) | n),
                             field.payload.length.eq(3 + hb), hdr_pending.eq(0)]
            with m.Elif(g_valid):
                m.d.sync += [field.valid.eq(1), field.payload.value.eq(v),
                             field.payload.length.eq(2 * vlen - 1 - e)]
            with m.Else():
                m.d.sync += field.valid.eq(0)

        g_load = run & m_valid & (~g_valid | g_take)
        with m.If(g_load):
            m.d.sync += [g_valid.eq(1), g_data.eq(rd.data)]
        with m.Elif(g_take):
            m.d.sync += g_valid.eq(0)

        m_adv = run & (~m_valid | g_load)
        m.d.comb += [rd.addr.eq(rd_ptr), rd.en.eq(m_adv)]
        with m.If(m_adv):
            m.d.sync += m_valid.eq(rd_ptr != n)
            with m.If(rd_ptr != n):
                m.d.sync += rd_ptr.eq(rd_ptr + 1)
        return ~hdr_pending & ~m_valid & ~g_valid & (rd_ptr == n)

    def _choose_order(self, m, totals, *, start, run, chosen):
        """The first minimum of the eight ``totals``, one order per cycle (8 cycles): one compare
        a cycle, since a first minimum over all eight in one cycle was a chain of seven compares
        and the encoder's critical path. ``start`` begins it; while ``run``, ``chosen`` rises in
        the cycle the returned (order, total) is final."""
        best_e = Signal(3)
        best = Signal(self._params.nbits_bits)
        ck = Signal(range(_ORDERS + 1))
        with m.If(start):
            m.d.sync += [ck.eq(1), best_e.eq(0), best.eq(totals[0])]
        with m.If(run & (ck != _ORDERS)):
            with m.If(totals[ck[:3]] < best):
                m.d.sync += [best_e.eq(ck[:3]), best.eq(totals[ck[:3]])]
            m.d.sync += ck.eq(ck + 1)
        m.d.comb += chosen.eq(run & (ck == _ORDERS))
        return best_e, best


def _lowest_set(m, bits):
    """The index of the lowest set bit of ``bits`` (0 when none is set)."""
    lowest = Signal(range(len(bits)), name="lowest")
    for k in reversed(range(len(bits))):
        with m.If(bits[k]):
            m.d.comb += lowest.eq(k)
    return lowest
