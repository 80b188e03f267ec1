"""SEC, the semantic concentrator (spec 3): attention scores in, keep mask and offset code out."""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock, job_status_members
from ..layouts import mask_beat_layout, offset_word_layout, score_beat_layout
from ..lib.bounds import outside_1_to
from ..lib.ready_slice import ReadySlice
from ..lib.stream_fork import StreamFork
from .importance_analyzer import ROWS_BITS, Dataflow, ImportanceAnalyzer
from .importance_buffer import ImportanceBuffer
from .offset_encoder import OffsetEncoder
from .topk_selector import TopKSelector

__all__ = ["SemanticConcentrator", "SecError", "sec_config_layout"]


class SecError(enum.Enum, shape=2):
    """Which sub-block raised :class:`SemanticConcentrator`'s ``error`` (its ``cause`` output)."""
    NONE = 0
    #: The job's settings were rejected: M = 0, M > tokens or R = 0. The analyzer, the first
    #: block to see them, rejects them and drains stray score beats.
    ANALYZER = 1
    #: The selector raised its error flag. It checks the same M the analyzer accepted, so this
    #: does not happen; it is reported, not recovered from.
    SELECTOR = 2
    #: The encoder raised its error flag (M, or the framing of the selector's mask). The
    #: selector's mask is well framed, so this does not happen; it is reported, not recovered
    #: from.
    ENCODER = 3


def sec_config_layout(p):
    """One SEC job's settings: ``M`` tokens (1 .. tokens), ``R`` attention rows (>= 1), the
    dataflow ``mode``, ``keep`` (k >= 0; k >= M keeps every token), and the offset code's
    ``order`` (0..7, a kept-set Exp-Golomb code, used when ``adaptive`` is 0; ``adaptive`` = 1
    picks the scheme, set, family and order, with the fewest bits, spec 3.3)."""
    return data.StructLayout({
        "M": unsigned(p.count_bits),
        "R": unsigned(ROWS_BITS),
        "mode": Dataflow,
        "keep": unsigned(p.count_bits),
        "order": unsigned(3),
        "adaptive": 1,
    })


class SemanticConcentrator(FocusBlock):
    """The complete SEC: attention scores in; the keep mask of the ``keep`` most important
    tokens and its offset code out, bit-exact to :func:`golden.sec`.

    Composition. :class:`rtl.sec.importance_analyzer.ImportanceAnalyzer` (``buffer="external"``,
    ``readout=0``) builds the importance vector in one two-client
    :class:`rtl.sec.importance_buffer.ImportanceBuffer`; at the analyzer's ``done`` the buffer is
    handed to :class:`rtl.sec.topk_selector.TopKSelector` (``buffer="external"``, ``preloaded=1``),
    which reads it in place (no copy) and streams the mask in index order; a
    :class:`rtl.lib.stream_fork.StreamFork` gives every mask beat to ``mask_stream`` and,
    through a :class:`rtl.lib.ready_slice.ReadySlice`, to the
    :class:`rtl.sec.offset_encoder.OffsetEncoder`, whose words leave on ``code_stream``. The
    selector's and encoder's configuration beats are issued by SEC from its own one.

    A job: one ``cfg_stream`` beat (:func:`sec_config_layout`), then exactly the analyzer's
    beats on ``i_stream`` (``R * ceil(M/lanes)`` spatial, ``M * ceil(R/lanes)`` temporal,
    padding lanes ignored; spec 3.1). Out come ceil(M/lanes) ``mask_stream`` beats
    (:func:`rtl.layouts.mask_beat_layout`, ``last`` on the final one) and the offset code on
    ``code_stream`` (:func:`rtl.layouts.offset_word_layout`, ``nbits`` on every word, ``last`` on
    the final one). The two outputs are independent streams: either may finish first.

    Latency and throughput. The stages run one after the other (one buffer: the next job's
    analysis cannot overlap this job's selection). With no stalls, a, M, R, k as usual:

    - scores: one beat per cycle, sustained; ``i_stream`` is always ready during the analysis;
    - the selector's and the encoder's configuration beats go out in the cycle of the
      analyzer's ``done``, 3 cycles after the last score beat;
    - the selector then runs as on its own, minus the loading (``preloaded``), and streams the
      mask one beat per cycle, except that the encoder takes one kept token per cycle: a mask
      beat with p >= 2 kept tokens holds the encoder for p - 1 more cycles, and the mask too
      once it is two beats ahead (the fork moves a beat on only when both have taken it, and
      the encoder's input has a one-beat ready slice);
    - after the final mask beat the encoder writes the header and one code per cycle, at most
      one word per cycle.

    Measured, from the first score beat in to the last output out (the tests check it for every
    job of a mixed regression, both sorters, lanes 1 to 32, word_bits 8 to 32; the 39 to 41 is
    the encoder's 33-cycle choice of the scheme, its counting stages and its packer; 40 to 42
    when a code follows the header, for the encoder's gap register; fields is
    :func:`golden.cycles.encode_fields`, n + 1 for a kept-set code)::

        cycles = importance_cycles(R, M, a, mode) - ceil(M/a)       # the analyzer, no readout
               + topk_cycles(M, k, a, score_bits, sorter) - ceil(M/a)   # the selector's sweep
               + sum over mask beats of max(1, kept in the beat)         # mask out, encoder in
               + max(fields, words) + (39 to 41, 40 to 42 with a code)   # the code

    with the models of :mod:`golden.cycles`. It differs from the plain sum of the three blocks'
    models: inside SEC there is no importance readout and no vector loading (fewer cycles), but
    the encoder's one kept token per cycle is on the mask's path (more cycles when mask beats
    carry several kept tokens: at lanes = 32, M = 1024, 40 % kept, about 11 % above the sum).

    Back-pressure: on ``mask_stream`` or ``code_stream`` it only delays the job; a beat is never
    lost or repeated on either output. ``cfg_stream`` is ready only while SEC is idle, so a
    producer may send the next job's beat at any time: it is taken in the cycle ``done`` pulses.

    Errors: a configuration beat with M = 0, M > ``tokens`` or R = 0 raises ``error`` (cause
    ``ANALYZER``) from the next cycle; no output is produced, SEC stays idle and drops stray
    ``i_stream`` beats (so no producer hangs) until the next configuration beat, which clears
    ``error``.

    Parameters
    ----------
    params : FocusParams
        Uses ``tokens``, ``lanes``, ``score_bits``, ``sorter`` and ``word_bits``.

    Members
    -------
    cfg_stream : In(stream.Signature(sec_config_layout(params)))
        One beat per job; accepted only while idle.
    i_stream : In(stream.Signature(score_beat_layout(params)))
        The attention scores, ``lanes`` per beat, spatial or temporal.
    mask_stream : Out(stream.Signature(mask_beat_layout(params)))
        The keep mask, ceil(M/lanes) beats.
    code_stream : Out(stream.Signature(offset_word_layout(params)))
        The offset-code words.
    done : Out(1)
        One-cycle pulse, the cycle after the job's last output transfer (the later of the last
        mask beat and the last code word).
    busy : Out(1)
        From the cycle after the configuration beat until the job's last output has
        transferred (low in the cycle ``done`` pulses).
    error : Out(1)
        Held until the next configuration beat is accepted.
    cause : Out(SecError)
        Which sub-block raised ``error`` (``NONE`` otherwise).
    kept : Out(range(tokens + 1))
        The last finished job's kept count n = min(k, M).
    nbits : Out(nbits_bits)
        The last finished job's offset-code length in bits.
    order : Out(3)
        The last finished job's code order (the adaptive scheme's, or the fixed kept-set
        Exp-Golomb one).

    ``kept``, ``nbits`` and ``order`` are valid from ``done`` until the end of the next job.
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(sec_config_layout(p))),
            "i_stream": In(stream.Signature(score_beat_layout(p))),
            "mask_stream": Out(stream.Signature(mask_beat_layout(p))),
            "code_stream": Out(stream.Signature(offset_word_layout(p))),
            "done": Out(1),
            **job_status_members(SecError),
            "kept": Out(range(p.tokens + 1)),
            "nbits": Out(p.nbits_bits),
            "order": Out(3),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        m.submodules.analyzer = an = ImportanceAnalyzer(p, buffer="external")
        m.submodules.buffer = buf = ImportanceBuffer(p, clients=2)
        m.submodules.selector = se = TopKSelector(p, buffer="external")
        m.submodules.fork = fork = StreamFork(mask_beat_layout(p), 2)
        m.submodules.encoder = enc = OffsetEncoder(p)

        wiring.connect(m, an.buffer, buf.clients[0])
        wiring.connect(m, se.buffer, buf.clients[1])
        wiring.connect(m, wiring.flipped(self.i_stream), an.i_stream)
        wiring.connect(m, se.o_stream, fork.i_stream)
        wiring.connect(m, fork.o_streams[0], wiring.flipped(self.mask_stream))
        # The encoder's ``i_stream.ready`` follows its current beat's kept tokens: a ready slice
        # keeps that out of the fork and the selector's sweep.
        m.submodules.encoder_input = cut = ReadySlice(mask_beat_layout(p))
        wiring.connect(m, fork.o_streams[1], cut.i_stream)
        wiring.connect(m, cut.o_stream, enc.i_stream)
        wiring.connect(m, enc.o_stream, wiring.flipped(self.code_stream))
        # Unused directions: the analyzer never reads out, the selector is always preloaded.
        m.d.comb += [an.o_stream.ready.eq(0), se.i_stream.valid.eq(0)]

        cfg = self.cfg_stream
        c = cfg.payload
        M = Signal(p.count_bits)
        keep = Signal(p.count_bits)
        order = Signal(3)
        adaptive = Signal()
        owner = Signal()                    # the buffer's owner: 0 analyzer, 1 selector
        sel_pending = Signal()              # the selector's / encoder's configuration beat
        enc_pending = Signal()              # waits for its handshake
        mask_done = Signal()                # the job's last mask beat / code word has left
        code_done = Signal()
        code_nbits = Signal(p.nbits_bits)
        error = Signal()
        cause = Signal(SecError)

        accept = cfg.valid & cfg.ready
        bad = outside_1_to(c.M, p.tokens) | (c.R == 0)
        launch = Signal()                   # the vector is complete: selector and encoder start
        finish = Signal()                   # the job's last output has left
        # IDLE -> ANALYZE (the analyzer builds the vector) -> RUN (selector and encoder) -> IDLE.
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(accept & ~bad):
                    m.next = "ANALYZE"
            with m.State("ANALYZE"):
                with m.If(launch):
                    m.next = "RUN"
            with m.State("RUN"):
                with m.If(finish):
                    m.next = "IDLE"
        idle, analyze, run = (fsm.ongoing(state) for state in ("IDLE", "ANALYZE", "RUN"))

        # Configuration: SEC's beat goes straight to the analyzer (readout = 0), which checks it
        # and drains stray score beats after a bad one; SEC keeps the rest of the settings.
        m.d.comb += [
            an.cfg_stream.valid.eq(cfg.valid & idle),
            an.cfg_stream.payload.M.eq(c.M), an.cfg_stream.payload.R.eq(c.R),
            an.cfg_stream.payload.mode.eq(c.mode), an.cfg_stream.payload.readout.eq(0),
            cfg.ready.eq(idle & an.cfg_stream.ready),
        ]
        with m.If(accept):
            m.d.sync += [
                M.eq(c.M), keep.eq(c.keep), order.eq(c.order), adaptive.eq(c.adaptive),
                owner.eq(0), mask_done.eq(0), code_done.eq(0),
                error.eq(bad), cause.eq(Mux(bad, SecError.ANALYZER, SecError.NONE)),
            ]

        # Hand-over: at the analyzer's done the vector is complete in the buffer; the selector
        # and the encoder get their configuration beats from that cycle on (both are idle: the
        # previous job ended with its last output).
        m.d.comb += [
            launch.eq(analyze & an.done),
            buf.owner.eq(owner),
            se.cfg_stream.valid.eq(sel_pending | launch),
            se.cfg_stream.payload.M.eq(M), se.cfg_stream.payload.keep.eq(keep),
            se.cfg_stream.payload.preloaded.eq(1),
            enc.cfg_stream.valid.eq(enc_pending | launch),
            enc.cfg_stream.payload.tokens.eq(M), enc.cfg_stream.payload.order.eq(order),
            enc.cfg_stream.payload.adaptive.eq(adaptive),
        ]
        with m.If(launch):
            m.d.sync += owner.eq(1)
        with m.If(se.cfg_stream.valid & se.cfg_stream.ready):
            m.d.sync += sel_pending.eq(0)
        with m.Elif(launch):
            m.d.sync += sel_pending.eq(1)
        with m.If(enc.cfg_stream.valid & enc.cfg_stream.ready):
            m.d.sync += enc_pending.eq(0)
        with m.Elif(launch):
            m.d.sync += enc_pending.eq(1)

        # The job ends with the later of the last mask beat and the last code word.
        ms, cs = self.mask_stream, self.code_stream
        mask_last = ms.valid & ms.ready & ms.payload.last
        code_last = cs.valid & cs.ready & cs.payload.last
        m.d.comb += finish.eq(run & (mask_done | mask_last) & (code_done | code_last))
        with m.If(run & mask_last):
            m.d.sync += mask_done.eq(1)
        with m.If(run & code_last):
            m.d.sync += [code_done.eq(1), code_nbits.eq(cs.payload.nbits)]
        m.d.sync += self.done.eq(finish)
        with m.If(finish):
            m.d.sync += [
                self.kept.eq(enc.kept), self.order.eq(enc.order),
                self.nbits.eq(Mux(code_last, cs.payload.nbits, code_nbits)),
            ]
        with m.If(run & se.error):
            m.d.sync += [error.eq(1), cause.eq(SecError.SELECTOR)]
        with m.If(run & enc.error):
            m.d.sync += [error.eq(1), cause.eq(SecError.ENCODER)]

        m.d.comb += [self.busy.eq(~idle), self.error.eq(error), self.cause.eq(cause)]
        return m
