"""The SIC side of the Focus unit: SIC jobs from the register file through the offset decoder and
the block matcher, with the stored code replayed into the decoder and its kept indices zipped
with the unit's ``tokens``."""

from amaranth.hdl import Module, Mux, ResetInserter, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import offset_word_layout
from ..lib.clock_gate import ICG_CELL
from ..lib.ready_slice import ReadySlice
from ..lib.stream_buffer import StreamBuffer
from ..lib.stream_gate import StreamGate, connect_valid_gated
from ..lib.stream_zip import StreamZip
from ..sec.offset_decoder import DecodeError, OffsetDecoder, decoder_config_layout, index_layout
from ..sic.block_matcher import (
    BlockMatcher,
    match_config_layout,
    match_input_layout,
    match_output_layout,
)
from ..sic.similarity_comparator import vector_layout
from .code_memory import CodeReadSignature
from .register_file import JobControlSignature, ThetaWriteSignature, settings_layout
from .registers import ErrorFlag

__all__ = ["SicSequencer", "token_layout"]


def token_layout(p):
    """One kept token's sub-vector (one column of V elements) on ``FocusUnit.tokens``; ``last``
    on the job's final token."""
    return data.StructLayout({"vector": vector_layout(p), "last": 1})


class SicSequencer(FocusBlock):
    """Runs SIC jobs: a granted start (``ctrl.start``) with a stored code that kept a token sends
    the decoder its configuration (the code's M and nbits) and the matcher its (the settings
    registers), one cycle later through output registers; replays the code memory into the
    decoder, one word per cycle; and zips the decoder's kept indices with ``tokens``, one index
    per token, into the matcher (position = index). The matcher's beats leave on ``o_stream``.
    A start whose code kept no token does nothing (the job ends at once).

    Latency and throughput, with no stalls: a token offered early transfers 7 cycles after the
    cycle of ``ctrl.start`` (code word read, word register, decoder header, first code parsed,
    its index formed, index register);
    then one token per ``rounds = ceil(7/comparators)`` cycles, the matcher's rate (the decoder
    gives one index per cycle; the zip adds no cycle, nor does the ready slice that keeps the
    matcher's ``ready`` out of the decoder). A token reaches the matcher one cycle after its
    transfer, through a two-beat FIFO (``golden.cycles.SIC_INPUT_LATENCY``), so a column's first
    token to its last map beat takes ``golden.cycles.sic_cycles``. ``tokens`` is ready only
    during a job, when the decoder has the token's index and the FIFO before the matcher has
    room; ``o_stream`` may stall at any time.

    Mismatches: when ``last`` of ``tokens`` and of the indices do not come together, the pair
    with the first ``last`` still goes to the matcher with ``last`` set, the other side is
    drained up to its own ``last`` (or the decoder's end), and ``TOKENS`` is raised at the job's
    end. Should the decoder stop without a last index (an error), a terminator (zero vector,
    position 2**position_bits - 1, ``last``) ends the matcher's job and the tokens are drained.
    The job ends the cycle after the zip is done and the decoder, the matcher and the
    configuration beats are idle (a register says so); ``DECODER``, ``MATCHER`` and ``TOKENS``
    are raised then.

    ``ctrl.abort`` resets the job control (configuration beats, replay, zip state) at once, the
    decoder and the matcher a cycle later from a register (their outputs closed in that cycle;
    the threshold table keeps its contents): idle in the next cycle, and a start in the next
    cycle runs on a reset decoder and matcher. The counters are not reset by it; ``ctrl.start``
    zeroes them, ``ctrl.clear`` too.

    Parameters
    ----------
    params : FocusParams
    icg_cell : str or None
        The matcher's clock-gate cell (see :class:`BlockMatcher`).

    Members
    -------
    ctrl : In(JobControlSignature(settings_layout("sic")))
    theta : In(ThetaWriteSignature(params))
        The threshold table's write port.
    code : In(CodeReadSignature(params))
        The code memory.
    tokens : In(stream.Signature(token_layout(params)))
    o_stream : Out(stream.Signature(match_output_layout(params)))
    cycles, uniques, active, gated, taken, cause : Out
        The ``SIC_CYCLES``, ``UNIQUES``, ``ACTIVE``, ``GATED``, ``SIC_TOKENS`` registers and
        ``CAUSE.DECODER``.
    """

    def __init__(self, params=None, *, icg_cell=ICG_CELL):
        self._icg_cell = icg_cell
        super().__init__(params, lambda p: {
            "ctrl": In(JobControlSignature(settings_layout("sic"))),
            "theta": In(ThetaWriteSignature(p)),
            "code": In(CodeReadSignature(p)),
            "tokens": In(stream.Signature(token_layout(p))),
            "o_stream": Out(stream.Signature(match_output_layout(p))),
            "cycles": Out(32),
            "uniques": Out(32),
            "active": Out(32),
            "gated": Out(32),
            "taken": Out(32),
            "cause": Out(DecodeError),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        ctrl, code, s = self.ctrl, self.code, self.ctrl.settings

        # ---- job control, reset by ABORT -------------------------------------------------------
        # The job's state is reset in the cycle of the ABORT write; the decoder and the matcher
        # a cycle later, from a register, with their outputs closed in between (their reset
        # reaches thousands of flip-flops, too many for the bus decoder to drive in the cycle).
        ctl = Module()
        m.submodules.control = ResetInserter(ctrl.abort)(ctl)
        abort_q = Signal()
        m.d.sync += abort_q.eq(ctrl.abort)
        dec = OffsetDecoder(p, mask=False)
        mat = BlockMatcher(p, icg_cell=self._icg_cell)
        m.submodules.decoder = ResetInserter(abort_q)(dec)
        m.submodules.matcher = ResetInserter(abort_q)(mat)
        ctl.submodules.decoder_config = dec_cfg = StreamBuffer(decoder_config_layout(p))
        ctl.submodules.matcher_config = mat_cfg = StreamBuffer(match_config_layout(p))
        # The matcher's tokens through a two-beat FIFO: the matcher checks each token's position
        # and drops everything in flight on a bad one, so the zip, the index slice's select and
        # the job's state would otherwise run into every stage's flush in one cycle; and the
        # ready the zip sees is the FIFO's, from its level register, not the matcher's. Cycle
        # for cycle a skid buffer (a beat is offered the cycle after it is taken, and the input
        # is ready while fewer than two are held), but the matcher's ready moves only the read
        # pointer and the level, not the enables of registers as wide as a token.
        ctl.submodules.matcher_input = mat_fifo = fifo.SyncFIFO(
            width=match_input_layout(p).size, depth=2)
        mat_in, mat_out = mat_fifo.w_stream, mat_fifo.r_stream
        mat_in.payload = match_input_layout(p)(mat_fifo.w_data)
        mat_out.payload = match_input_layout(p)(mat_fifo.r_data)
        # The replay stage: its valid and last; the read port's data register is its word. The
        # word then goes through a register of its own: the block RAM's read data would
        # otherwise reach the decoder's bit buffer in the same cycle.
        ctl.submodules.replay = replay = StreamBuffer(data.StructLayout({"last": 1}))
        ctl.submodules.code_word = code_word = StreamBuffer(offset_word_layout(p))
        m.d.comb += [mat.theta_we.eq(self.theta.we), mat.theta_addr.eq(self.theta.addr),
                     mat.theta_data.eq(self.theta.data)]

        # A start whose code kept no token runs nothing. A bad layer is sent as a bad geometry:
        # the matcher's layer field may be too narrow to show it, and the matcher must reject
        # the job and drop its tokens.
        go = ctrl.start & (code.kept != 0)
        dc, mc = dec_cfg.i_stream, mat_cfg.i_stream
        m.d.comb += [
            dc.valid.eq(go), dc.payload.tokens.eq(code.m), dc.payload.nbits.eq(code.nbits),
            mc.valid.eq(go),
            mc.payload.frame_stride.eq(Mux(s.sic_layer < p.layers, s.sic_frame_stride,
                                           (1 << 32) - 1)),
            mc.payload.row_stride.eq(s.sic_row_stride),
            mc.payload.layer.eq(s.sic_layer[:p.layer_bits]),
            mc.payload.mean.eq(s.sic_repr.mean),
        ]
        wiring.connect(m, dec_cfg.o_stream, dec.cfg_stream)
        wiring.connect(m, mat_cfg.o_stream, mat.cfg_stream)

        # ---- the zip: decoder indices x tokens -> matcher --------------------------------------
        m.submodules.token_gate = tok_gate = StreamGate(token_layout(p))
        m.submodules.index_gate = idx_gate = StreamGate(index_layout(p))
        m.submodules.zip = zipper = StreamZip(token_layout(p), index_layout(p))
        # The decoder's indices reach the zip through a ready slice: the matcher's ready
        # would otherwise run through the zip into the decoder's bit buffer in one cycle.
        ctl.submodules.index_cut = idx_cut = ReadySlice(index_layout(p))
        wiring.connect(m, wiring.flipped(self.tokens), tok_gate.i_stream)
        wiring.connect(m, idx_cut.o_stream, idx_gate.i_stream)
        wiring.connect(m, tok_gate.o_stream, zipper.a_stream)
        wiring.connect(m, idx_gate.o_stream, zipper.b_stream)
        # Their outputs' valid is closed while their reset is pending; their ready is not
        # (whatever they think they sent then is reset away), so no ready path gets longer.
        for source, sink in ((dec.idx_stream, idx_cut.i_stream), (mat.o_stream, self.o_stream)):
            connect_valid_gated(m, source, sink, ~abort_q)
        m.d.comb += [mat.i_stream.valid.eq(mat_out.valid), mat.i_stream.payload.eq(mat_out.payload),
                     mat_out.ready.eq(mat.i_stream.ready)]
        tok, idx, pair, mi = self.tokens, idx_cut.o_stream, zipper.o_stream, mat_in
        dec_gone = ~dec_cfg.o_stream.valid & ~dec.busy & ~idx.valid   # no more indices will come
        idle, join, term, drain_tokens, drain_indices, mismatch, end = self._job_fsm(
            ctl, go=go, pair=pair, dec_gone=dec_gone, tok=tok, idx=idx, mi=mi,
            all_idle=(~dec_cfg.o_stream.valid & ~mat_cfg.o_stream.valid & ~dec.busy & ~mat.busy
                      & ~mat_out.valid & ~replay.o_stream.valid
                      & ~code_word.o_stream.valid))
        running = ~idle
        m.d.comb += [
            ctrl.busy.eq(running),
            tok_gate.open.eq(join), idx_gate.open.eq(join),
            tok_gate.drain.eq(drain_tokens), idx_gate.drain.eq(drain_indices),
            # The matcher takes the pairs, or the terminator.
            mi.valid.eq(pair.valid | term),
            pair.ready.eq(mi.ready),
            mi.payload.vector.eq(Mux(term, 0, pair.payload.a.vector.as_value())),
            mi.payload.position.eq(Mux(term, (1 << p.position_bits) - 1, pair.payload.b.index)),
            mi.payload.last.eq(term | pair.payload.a.last | pair.payload.b.last),
        ]

        # ---- code replay: one word per cycle into the decoder ----------------------------------
        self._code_replay(m, ctl, replay, code_word, dec, running=running, go=go)

        # ---- counters and errors (not reset by ABORT) ------------------------------------------
        self._counters(m, dec, mat, running=running, tok=tok, end=end, mismatch=mismatch)
        return m

    def _job_fsm(self, ctl, *, go, pair, dec_gone, tok, idx, mi, all_idle):
        """The job's states, in the job control module ``ctl``: IDLE; from ``go``, JOIN (the
        zip's ``pair`` goes to the matcher ``mi``); on a ``last`` of one side only, DRAIN_TOKENS
        or DRAIN_INDICES (``tok``, ``idx``) up to the other's; TERMINATE (the terminator) when
        the decoder is gone (``dec_gone``) without a last index; DONE until ``all_idle`` (the
        decoder, the matcher and the FIFO before it, the configuration beats and the
        replay) has been registered.
        Returns ``(idle, join, term, drain_tokens, drain_indices, mismatch, end)``: the state
        flags, the mismatch register (``last`` of one side only), and ``end``, the job's last
        cycle."""
        mismatch = Signal()
        end = Signal()
        quiet = Signal()                # in DONE: the decoder, the matcher and the replay were idle
        with ctl.FSM(name="job", init="IDLE") as fsm:
            idle, join, term = fsm.ongoing("IDLE"), fsm.ongoing("JOIN"), fsm.ongoing("TERMINATE")
            drain_tokens, drain_indices = fsm.ongoing("DRAIN_TOKENS"), fsm.ongoing("DRAIN_INDICES")
            with ctl.State("IDLE"):
                with ctl.If(go):
                    ctl.d.sync += mismatch.eq(0)
                    ctl.next = "JOIN"
            with ctl.State("JOIN"):
                with ctl.If(pair.valid & pair.ready):
                    with ctl.If(pair.payload.a.last & pair.payload.b.last):
                        ctl.next = "DONE"
                    with ctl.Elif(pair.payload.b.last):
                        ctl.d.sync += mismatch.eq(1)
                        ctl.next = "DRAIN_TOKENS"
                    with ctl.Elif(pair.payload.a.last):
                        ctl.d.sync += mismatch.eq(1)
                        ctl.next = "DRAIN_INDICES"
                with ctl.Elif(dec_gone):
                    ctl.next = "TERMINATE"
            with ctl.State("TERMINATE"):
                with ctl.If(mi.ready):
                    ctl.next = "DRAIN_TOKENS"
            with ctl.State("DRAIN_TOKENS"):
                with ctl.If(tok.valid & tok.payload.last):
                    ctl.next = "DONE"
            with ctl.State("DRAIN_INDICES"):
                with ctl.If((idx.valid & idx.payload.last) | dec_gone):
                    ctl.next = "DONE"
            with ctl.State("DONE"):
                # Nothing starts again once the job is here, so a register may say that all is
                # quiet: the job's end then loads the counters and raises the flags from
                # registers, not from the matcher's state (one cycle later).
                ctl.d.sync += quiet.eq(all_idle)
                ctl.d.comb += end.eq(quiet)
                with ctl.If(end):
                    ctl.d.sync += quiet.eq(0)
                    ctl.next = "IDLE"
        return idle, join, term, drain_tokens, drain_indices, mismatch, end

    def _code_replay(self, m, ctl, replay, code_word, dec, *, running, go):
        """The stored code into the decoder ``dec``, one word per cycle while ``running``: the
        read pointer (in ``ctl``, restarted by ``go``) addresses the code memory, the ``replay``
        stage holds the read's valid and last, and the ``code_word`` register the word."""
        p, code = self._params, self.code
        rptr = Signal(range(p.code_words + 1))
        ri, ro, wi = replay.i_stream, replay.o_stream, code_word.i_stream
        m.d.comb += [
            ri.valid.eq(running & (rptr < code.nwords)),
            ri.payload.last.eq(rptr == code.nwords - 1),
            code.addr.eq(rptr),
            code.en.eq(ri.valid & ri.ready),
            wi.valid.eq(ro.valid),
            wi.payload.word.eq(code.data),
            wi.payload.nbits.eq(code.nbits),
            wi.payload.last.eq(ro.payload.last),
            ro.ready.eq(wi.ready),
        ]
        wiring.connect(m, code_word.o_stream, dec.i_stream)
        with ctl.If(code.en):
            ctl.d.sync += rptr.eq(rptr + 1)
        with ctl.If(go):
            ctl.d.sync += rptr.eq(0)

    def _counters(self, m, dec, mat, *, running, tok, end, mismatch):
        """The job's counters and error flags (not reset by ABORT): ``taken`` counts the
        ``tokens`` transfers (``tok``), ``cycles`` the cycles from the first token up to the last
        matcher beat; at ``end`` the matcher's counts and the decoder's cause are loaded and the
        DECODER, MATCHER and TOKENS (``mismatch``) flags raised. ``ctrl.start`` zeroes them,
        ``ctrl.clear`` too."""
        ctrl = self.ctrl
        started, finished = Signal(name="started"), Signal(name="finished")
        tok_fire = tok.valid & tok.ready
        sic_last = self.o_stream.valid & self.o_stream.ready & self.o_stream.payload.last
        with m.If(ctrl.start):
            m.d.sync += [self.uniques.eq(0), self.active.eq(0), self.gated.eq(0),
                         self.cycles.eq(0), self.taken.eq(0), started.eq(0), finished.eq(0)]
        with m.If(tok_fire):
            m.d.sync += self.taken.eq(self.taken + 1)
        with m.If(running & (started | tok_fire) & ~finished):
            m.d.sync += [self.cycles.eq(self.cycles + 1), started.eq(1)]
        with m.If(running & sic_last):
            m.d.sync += finished.eq(1)
        with m.If(end):
            m.d.sync += [self.uniques.eq(mat.uniques), self.active.eq(mat.active),
                         self.gated.eq(mat.gated)]
            with m.If(dec.error):
                m.d.sync += self.cause.eq(dec.cause)
        m.d.comb += ctrl.flags.eq(Mux(end & dec.error, ErrorFlag.DECODER, 0)
                                  | Mux(end & mat.error, ErrorFlag.MATCHER, 0)
                                  | Mux(end & mismatch, ErrorFlag.TOKENS, 0))
        with m.If(ctrl.clear):
            m.d.sync += [self.cycles.eq(0), self.uniques.eq(0), self.active.eq(0),
                         self.gated.eq(0), self.taken.eq(0), self.cause.eq(0)]
