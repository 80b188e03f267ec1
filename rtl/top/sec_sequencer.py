"""The SEC side of the Focus unit: SEC jobs from the register file to the SEC core, the code memory
and the unit's ``scores``, ``mask`` and ``code`` ports."""

from amaranth.hdl import Module, Mux, ResetInserter, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import mask_beat_layout, offset_word_layout, score_beat_layout
from ..lib.stream_buffer import StreamBuffer
from ..lib.stream_gate import StreamGate, connect_valid_gated
from ..sec.importance_analyzer import ROWS_BITS
from ..sec.semantic_concentrator import SecError, SemanticConcentrator, sec_config_layout
from .code_memory import CodeWriteSignature
from .register_file import JobControlSignature, settings_layout
from .registers import ErrorFlag

__all__ = ["SecSequencer"]


class SecSequencer(FocusBlock):
    """Runs SEC jobs: a granted start (``ctrl.start``) sends the settings registers as the SEC
    core's configuration beat (one cycle later, through an output register), then the scores flow
    in and the keep mask and the offset code out, each code word also into the code memory, and
    the job ends with SEC's ``done`` (the code is committed) or ``error``.

    Latency and throughput are SEC's (:class:`SemanticConcentrator`); a score offered early
    transfers 2 cycles after the cycle of ``ctrl.start``. Back-pressure: ``mask`` and ``code``
    may stall at any time (the memory takes a word in the cycle ``code`` does). ``scores`` is
    SEC's input, closed while a start is requested or its configuration beat is on its way (SEC
    drains stray beats after a rejected job and must not take the next job's first ones).

    Settings out of range become ones SEC rejects, never truncated ones: M > tokens becomes 0,
    R >= 2**ROWS_BITS becomes 0; k > tokens becomes tokens.

    ``ctrl.abort`` resets the job state and the configuration beat at once, SEC a cycle later
    from a register (its ports closed in that cycle): idle in the next cycle, beats on offer
    withdrawn, and a start in the next cycle runs on a reset SEC. The counters are not reset by
    it; ``ctrl.start`` zeroes the SEC counters, ``ctrl.clear`` all of them.

    Members
    -------
    ctrl : In(JobControlSignature(settings_layout("sec")))
    scores : In(stream.Signature(score_beat_layout(params)))
    mask : Out(stream.Signature(mask_beat_layout(params)))
    code : Out(stream.Signature(offset_word_layout(params)))
    store : Out(CodeWriteSignature(params))
        To the code memory.
    cycles, kept, nbits, order, cause : Out
        The ``SEC_CYCLES``, ``KEPT``, ``NBITS``, ``ORDER`` registers and ``CAUSE.SEC``.
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "ctrl": In(JobControlSignature(settings_layout("sec"))),
            "scores": In(stream.Signature(score_beat_layout(p))),
            "mask": Out(stream.Signature(mask_beat_layout(p))),
            "code": Out(stream.Signature(offset_word_layout(p))),
            "store": Out(CodeWriteSignature(p)),
            "cycles": Out(32),
            "kept": Out(range(p.tokens + 1)),
            "nbits": Out(p.nbits_bits),
            "order": Out(3),
            "cause": Out(SecError),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        ctrl, store, s = self.ctrl, self.store, self.ctrl.settings

        # ---- job control, reset by ABORT -------------------------------------------------------
        # The job's state is reset in the cycle of the ABORT write; the core a cycle later, from
        # a register, with its ports closed in between (the core's reset reaches thousands of
        # flip-flops, too many for the bus decoder to drive within the cycle).
        ctl = Module()
        m.submodules.control = ResetInserter(ctrl.abort)(ctl)
        abort_q = Signal()
        m.d.sync += abort_q.eq(ctrl.abort)
        core = SemanticConcentrator(p)
        m.submodules.core = ResetInserter(abort_q)(core)
        ctl.submodules.config = config = StreamBuffer(sec_config_layout(p))
        wiring.connect(m, config.o_stream, core.cfg_stream)
        cfg = config.i_stream
        m.d.comb += [
            cfg.valid.eq(ctrl.start),
            cfg.payload.M.eq(Mux(s.sec_m > p.tokens, 0, s.sec_m)),
            cfg.payload.R.eq(Mux(s.sec_r >> ROWS_BITS != 0, 0, s.sec_r)),
            cfg.payload.mode.eq(s.sec_mode.temporal),
            cfg.payload.keep.eq(Mux(s.sec_keep > p.tokens, p.tokens, s.sec_keep)),
            cfg.payload.order.eq(s.sec_order.order),
            cfg.payload.adaptive.eq(s.sec_order.adaptive),
        ]
        with ctl.FSM(name="job", init="IDLE") as fsm:
            idle, run = fsm.ongoing("IDLE"), fsm.ongoing("RUN")
            with ctl.State("IDLE"):
                with ctl.If(ctrl.start):
                    ctl.next = "CONFIG"
            with ctl.State("CONFIG"):
                with ctl.If(config.o_stream.valid & config.o_stream.ready):
                    ctl.next = "RUN"
            with ctl.State("RUN"):
                with ctl.If(core.done | core.error):
                    ctl.next = "IDLE"
        m.d.comb += ctrl.busy.eq(~idle)

        # ---- streams: scores in, mask and code out, code words into the code memory -----------
        m.submodules.score_gate = gate = StreamGate(score_beat_layout(p))
        wiring.connect(m, wiring.flipped(self.scores), gate.i_stream)
        wiring.connect(m, gate.o_stream, core.i_stream)
        m.d.comb += gate.open.eq(~(ctrl.request | config.o_stream.valid | abort_q))
        # The outputs' valid is closed while the core's reset is pending; their ready is not
        # (whatever the core thinks it sent then is reset away), so no ready path gets longer.
        for core_out, port in ((core.mask_stream, self.mask), (core.code_stream, self.code)):
            connect_valid_gated(m, core_out, port, ~abort_q)
        code_fire = self.code.valid & self.code.ready
        m.d.comb += [
            store.rewind.eq(ctrl.start),
            store.word.valid.eq(run & code_fire),
            store.word.payload.eq(self.code.payload.word),
            store.commit.valid.eq(run & core.done),
            store.commit.payload.m.eq(config.o_stream.payload.M),
            store.commit.payload.kept.eq(core.kept),
            store.commit.payload.nbits.eq(core.nbits),
        ]

        # ---- counters and errors (not reset by ABORT) ------------------------------------------
        started = Signal()
        mask_done = Signal()
        code_done = Signal()
        score_fire = self.scores.valid & self.scores.ready
        mask_last = self.mask.valid & self.mask.ready & self.mask.payload.last
        code_last = code_fire & self.code.payload.last
        with m.If(run & (started | score_fire) & ~(mask_done & code_done) & ~core.error):
            m.d.sync += [self.cycles.eq(self.cycles + 1), started.eq(1)]
        with m.If(run & mask_last):
            m.d.sync += mask_done.eq(1)
        with m.If(run & code_last):
            m.d.sync += code_done.eq(1)
        with m.If(run & core.done):
            m.d.sync += [self.kept.eq(core.kept), self.nbits.eq(core.nbits),
                         self.order.eq(core.order)]
            with m.If(store.overflow):
                m.d.comb += ctrl.flags.eq(ErrorFlag.SEC_STREAM)
        with m.Elif(run & core.error):
            m.d.sync += self.cause.eq(core.cause)
            with m.If(core.cause == SecError.ANALYZER):
                m.d.comb += ctrl.flags.eq(ErrorFlag.SEC_CONFIG)
            with m.Else():
                m.d.comb += ctrl.flags.eq(ErrorFlag.SEC_STREAM)
        with m.If(ctrl.clear):
            m.d.sync += [self.cycles.eq(0), self.kept.eq(0), self.nbits.eq(0), self.order.eq(0),
                         self.cause.eq(0)]
        with m.If(ctrl.start):
            m.d.sync += [self.cycles.eq(0), started.eq(0), mask_done.eq(0), code_done.eq(0),
                         self.kept.eq(0), self.nbits.eq(0), self.order.eq(0)]
        return m
