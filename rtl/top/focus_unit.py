"""The Focus unit's top level (spec 5): SEC joined to SIC through the offset code; registers."""

import enum as py_enum

from amaranth.hdl import Const, Module, Mux, ResetInserter, Signal, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import mask_beat_layout, offset_word_layout, score_beat_layout
from ..lib.clock_gate import ICG_CELL
from ..lib.register_bus import RegisterSignature
from ..sec.importance_analyzer import ROWS_BITS
from ..sec.offset_decoder import DecodeError, OffsetDecoder
from ..sec.semantic_concentrator import SecError, SemanticConcentrator, sec_config_layout
from ..sic.block_matcher import BlockMatcher, match_config_layout, match_output_layout
from ..sic.similarity_comparator import vector_layout

__all__ = ["FocusUnit", "Reg", "Ctrl", "Status", "ErrorFlag", "FOCUS_ID", "token_layout",
           "ERROR_SHIFT", "READABLE", "WRITABLE", "SIC_SETTINGS"]

#: The constant in register ``ID``.
FOCUS_ID = 0xF0C05001


class Reg(py_enum.IntEnum):
    """Word addresses of the Focus unit's registers (see :class:`FocusUnit` for the map)."""
    ID = 0x00
    CTRL = 0x01
    STATUS = 0x02
    SEC_M = 0x04
    SEC_R = 0x05
    SEC_KEEP = 0x06
    SEC_MODE = 0x07
    SEC_ORDER = 0x08
    SIC_FRAME_STRIDE = 0x09
    SIC_ROW_STRIDE = 0x0A
    SIC_LAYER = 0x0B
    SIC_REPR = 0x0C
    THETA_ADDR = 0x0D
    THETA_DATA = 0x0E
    SEC_CYCLES = 0x10
    SIC_CYCLES = 0x11
    KEPT = 0x12
    NBITS = 0x13
    ORDER = 0x14
    UNIQUES = 0x15
    ACTIVE = 0x16
    GATED = 0x17
    CAUSE = 0x18
    SIC_TOKENS = 0x19
    CODE_WORDS = 0x1A


class Ctrl(py_enum.IntFlag):
    """Bits of a ``CTRL`` write."""
    START_SEC = 1 << 0
    START_SIC = 1 << 1
    CLEAR = 1 << 2
    #: Stop the running job at once and return to idle (see :class:`FocusUnit`).
    ABORT = 1 << 3


#: Bit of ``STATUS`` holding :class:`ErrorFlag` bit 0.
ERROR_SHIFT = 8


class ErrorFlag(py_enum.IntFlag):
    """The sticky error flags (``STATUS`` bits ``ERROR_SHIFT + n``), cleared by ``CTRL.CLEAR``."""
    #: An SEC job's settings were rejected: M = 0, M > tokens, R = 0 or R > 65535.
    SEC_CONFIG = 1 << 0
    #: SEC's selector or encoder raised its error (internal; not expected), or the code memory
    #: overflowed (not possible: it holds the longest code).
    SEC_STREAM = 1 << 1
    #: The offset decoder rejected the stored code (internal; not expected).
    DECODER = 1 << 2
    #: A SIC job's settings were rejected: FS + HS + 1 >= window, or layer >= layers.
    MATCHER = 1 << 3
    #: The ``tokens`` stream's ``last`` did not come with the decoder's last index.
    TOKENS = 1 << 4
    #: A write to a read-only or unmapped address, a read of an unmapped address, or a
    #: ``THETA_DATA`` write with ``THETA_ADDR >= layers`` or a value >= 2**theta_bits.
    BUS = 1 << 5
    #: A start that cannot run: a start while a job runs, both starts in one write, or
    #: ``START_SIC`` with no valid code in the code memory.
    COMMAND = 1 << 6
    #: ``CTRL.ABORT`` stopped a running job: its outputs are incomplete.
    ABORTED = 1 << 7


class Status(py_enum.IntFlag):
    """Bits of ``STATUS`` (besides the error flags)."""
    SEC_BUSY = 1 << 0
    SIC_BUSY = 1 << 1
    #: The code memory holds the code of the last SEC job, which finished without error.
    CODE_VALID = 1 << 2


_RW = (Reg.SEC_M, Reg.SEC_R, Reg.SEC_KEEP, Reg.SEC_MODE, Reg.SEC_ORDER, Reg.SIC_FRAME_STRIDE,
       Reg.SIC_ROW_STRIDE, Reg.SIC_LAYER, Reg.SIC_REPR, Reg.THETA_ADDR)
_WO = (Reg.CTRL, Reg.THETA_DATA)
_RO = (Reg.ID, Reg.STATUS, Reg.SEC_CYCLES, Reg.SIC_CYCLES, Reg.KEPT, Reg.NBITS, Reg.ORDER,
       Reg.UNIQUES, Reg.ACTIVE, Reg.GATED, Reg.CAUSE, Reg.SIC_TOKENS, Reg.CODE_WORDS)
#: Addresses a read may use without a bus error (write-only ones read as 0).
READABLE = frozenset(_RW + _WO + _RO)
#: The SIC settings: absent (unmapped) in a unit built with ``sic=False``.
SIC_SETTINGS = frozenset((Reg.SIC_FRAME_STRIDE, Reg.SIC_ROW_STRIDE, Reg.SIC_LAYER, Reg.SIC_REPR,
                          Reg.THETA_ADDR, Reg.THETA_DATA))
#: Addresses a write may use without a bus error.
WRITABLE = frozenset(_RW + _WO)


def token_layout(p):
    """One kept token's sub-vector (one column of V elements) on ``FocusUnit.tokens``; ``last``
    on the job's final token."""
    return data.StructLayout({"vector": vector_layout(p), "last": 1})


class FocusUnit(FocusBlock):
    """The Focus unit: SEC (:class:`rtl.sec.semantic_concentrator.SemanticConcentrator`) joined to
    SIC (:class:`rtl.sic.block_matcher.BlockMatcher`) the way the paper does it, through the offset
    code and :class:`rtl.sec.offset_decoder.OffsetDecoder`, with a register interface.

    Data flow. An **SEC job** (``CTRL.START_SEC``) sends the SEC settings registers as SEC's
    configuration beat; the attention scores arrive on ``scores``; the keep mask leaves on
    ``mask`` and the offset code on ``code``, and every code word is also written, as it leaves,
    into the code memory (``params.code_words`` words: the longest code of any job). A **SIC
    job** (``CTRL.START_SIC``) handles one sub-vector column: it configures the decoder (the
    stored code's M and nbits) and the block matcher (the SIC settings registers), replays the
    code memory into the decoder, one word per cycle, and zips the decoder's kept indices with
    the ``tokens`` stream, one index per token, into the matcher (position = index). The
    matcher's map and unique vectors leave on ``sic``. A token of D = c*V elements is c SIC jobs;
    the code is replayed for each. Only one job runs at a time. A SIC job whose code kept no
    token takes no tokens, emits nothing and ends at once.

    Latency and throughput, with no stalls (checked by the tests): SEC as
    :class:`SemanticConcentrator`, one score beat per cycle; a score offered early transfers 2
    cycles after the cycle of the ``START_SEC`` write (the configuration beat goes out in
    between). SIC: a token offered early transfers 5 cycles after the cycle of the
    ``START_SIC`` write (code word read, decoder header and first code, index register); from
    then on one token per ``rounds = ceil(7/comparators)`` cycles, the matcher's rate (the
    decoder is built without its mask output and gives one index per cycle whatever the gaps; the
    zip is combinational and adds no cycle), and a token's map beat leaves ``matcher_latency +
    rounds - 1`` cycles (11 with 7 comparators) after the token. ``SIC_CYCLES`` of a job of S
    tokens is therefore ``S * rounds + 11`` (``golden.cycles.block_match_cycles``; plus the
    drains with ``mean``), and ``SEC_CYCLES`` is SEC's own job time.

    Back-pressure: ``mask``, ``code`` and ``sic`` may stall at any time; nothing is lost or
    duplicated (the code memory writes a word only in the cycle ``code`` takes it). ``scores``
    is ready only during an SEC job, and while SEC drains a rejected job's stray beats (so after
    a rejected job, offer the next job's scores only from its ``START_SEC`` write on);
    ``tokens`` only during a SIC job, and only when the decoder has the token's index and the
    matcher can take it. Otherwise a producer may offer data before the job's start.

    Errors (sticky flags in ``STATUS``, :class:`ErrorFlag`; ``error`` is their OR; ``CAUSE`` holds
    the sub-block codes): rejected SEC settings (SEC drains the job's score beats until the next
    start), rejected SIC settings (the matcher drops the job's tokens up to ``last``), and a
    ``tokens`` stream whose ``last`` does not come with the last index. Then the pair with the
    first ``last`` still goes to the matcher with ``last`` set (its job ends well formed, so
    ``sic`` ends with ``last``); the other side is drained up to its own ``last`` (surplus tokens
    are dropped, missing tokens' indices discarded); the job ends, the flag is set, and the next
    job is unaffected. Should the decoder fail (it does not, on codes SEC wrote), a zero
    terminator token (position 2**32 - 1, ``last``) ends the matcher's job and the tokens are
    drained to ``last``. Every job ends within a bounded number of cycles once its inputs have
    arrived. Flags are set when the job ends, or in the cycle of the bad bus access.

    Abort: a job whose inputs never come (a host that died mid-job, tokens that were never sent)
    waits for them, as a stream block must. ``CTRL.ABORT`` ends it: in the cycle after the write
    the unit is idle, SEC, the decoder and the matcher are reset, ``scores`` and ``tokens`` are
    not ready, and a beat on offer on ``mask``, ``code`` or ``sic`` is withdrawn (the one
    exception to the stream rules: the aborted job's outputs are incomplete and must be
    discarded). ``ABORTED`` is set when a job was running. The threshold table, the settings and
    a valid code survive (an aborted SEC job leaves no valid code, as any SEC start does), so the
    next job runs as usual; the producer must not offer the aborted job's remaining beats.

    Register map (32-bit words at word addresses, :class:`Reg`; an RW register reads back what
    was written, masked to its documented bits):

    ======  ==================  ==  ==========================================================
    addr    name                    contents
    ======  ==================  ==  ==========================================================
    0x00    ID                  RO  0xF0C05001
    0x01    CTRL                WO  bit 0 START_SEC, bit 1 START_SIC, bit 2 CLEAR (errors,
                                    causes and counters; the code memory stays valid), bit 3
                                    ABORT (a start in the same write is refused: COMMAND)
    0x02    STATUS              RO  bit 0 SEC busy, bit 1 SIC busy, bit 2 code valid;
                                    bits 8..15 sticky errors: SEC_CONFIG, SEC_STREAM, DECODER,
                                    MATCHER, TOKENS, BUS, COMMAND, ABORTED
    0x04    SEC_M               RW  M, 1..tokens (0 or > tokens: SEC_CONFIG)
    0x05    SEC_R               RW  R, 1..65535 (otherwise SEC_CONFIG)
    0x06    SEC_KEEP            RW  k >= 0 (k >= M keeps every token)
    0x07    SEC_MODE            RW  bit 0: 0 spatial, 1 temporal
    0x08    SEC_ORDER           RW  bits 2..0 order e, bit 3 adaptive
    0x09    SIC_FRAME_STRIDE    RW  FS (FS + HS + 1 >= window: MATCHER)
    0x0A    SIC_ROW_STRIDE      RW  HS
    0x0B    SIC_LAYER           RW  threshold table entry (>= layers: MATCHER)
    0x0C    SIC_REPR            RW  bit 0: 0 first, 1 mean
    0x0D    THETA_ADDR          RW  threshold table entry for THETA_DATA
    0x0E    THETA_DATA          WO  theta_q of entry THETA_ADDR; THETA_ADDR then increments
                                    (THETA_ADDR >= layers or theta_q >= 2**F: ignored, BUS)
    0x10    SEC_CYCLES          RO  last SEC job: first score transfer to the later of the last
                                    mask and the last code transfer, inclusive
    0x11    SIC_CYCLES          RO  last SIC job: first token transfer to the last ``sic``
                                    transfer, inclusive (to the job's end if nothing left)
    0x12    KEPT                RO  last SEC job's kept count n
    0x13    NBITS               RO  last SEC job's code length in bits
    0x14    ORDER               RO  last SEC job's Exp-Golomb order
    0x15    UNIQUES             RO  last SIC job's unique vectors
    0x16    ACTIVE              RO  last SIC job's active comparator-cycles
    0x17    GATED               RO  last SIC job's gated comparator-cycles
    0x18    CAUSE               RO  bits 1..0 SEC cause (:class:`SecError`), bits 7..4 decoder
                                    cause (:class:`DecodeError`), of the last such error
    0x19    SIC_TOKENS          RO  tokens taken by the last SIC job (drained ones included)
    0x1A    CODE_WORDS          RO  words of the code in the code memory
    ======  ==================  ==  ==========================================================

    A write to an RO or unmapped address is ignored and sets ``BUS``; a read of an unmapped
    address returns 0 and sets ``BUS``; a write-only register reads as 0. SEC counters are zeroed
    by ``START_SEC``, SIC counters by ``START_SIC``, and all by ``CLEAR``. A job copies the
    settings at its start: writing them during a job affects the next one.

    Parameters
    ----------
    params : FocusParams
    icg_cell : str or None
        Clock-gate cell of the matcher's comparators with ``gating="icg"`` (``None`` models it as
        a clock enable, for the Amaranth simulator).
    sic : bool
        False builds the unit without SIC (no decoder, no matcher): for a device too small for
        both, such as the iCE40 UP5K of the iCEBreaker. The ports are the same; ``START_SIC`` is
        refused (``COMMAND``), ``tokens`` is never ready, ``sic`` never valid, the SIC counters
        read 0, and the SIC settings (:data:`SIC_SETTINGS`, threshold table included) are
        unmapped: an access sets ``BUS``.

    Members
    -------
    bus : In(RegisterSignature())
    scores : In(stream.Signature(score_beat_layout(params)))
    tokens : In(stream.Signature(token_layout(params)))
    mask : Out(stream.Signature(mask_beat_layout(params)))
    code : Out(stream.Signature(offset_word_layout(params)))
    sic : Out(stream.Signature(match_output_layout(params)))
    busy : Out(1)
        A job is running.
    error : Out(1)
        Any sticky error flag is set.
    """

    def __init__(self, params=None, *, icg_cell=ICG_CELL, sic=True):
        self._icg_cell = icg_cell
        self._sic = bool(sic)
        super().__init__(params, lambda p: {
            "bus": In(RegisterSignature()),
            "scores": In(stream.Signature(score_beat_layout(p))),
            "tokens": In(stream.Signature(token_layout(p))),
            "mask": Out(stream.Signature(mask_beat_layout(p))),
            "code": Out(stream.Signature(offset_word_layout(p))),
            "sic": Out(stream.Signature(match_output_layout(p))),
            "busy": Out(1),
            "error": Out(1),
        })

    @property
    def has_sic(self):
        """Whether the unit was built with SIC (the ``sic`` argument)."""
        return self._sic

    @property
    def readable(self):
        """The addresses a read may use without a bus error: :data:`READABLE`, less
        :data:`SIC_SETTINGS` without SIC."""
        return READABLE if self._sic else READABLE - SIC_SETTINGS

    @property
    def writable(self):
        """The addresses a write may use without a bus error: :data:`WRITABLE`, less
        :data:`SIC_SETTINGS` without SIC."""
        return WRITABLE if self._sic else WRITABLE - SIC_SETTINGS

    def elaborate(self, platform):
        p = self._params
        m = Module()
        bus = self.bus
        ctrl = bus.w_en & (bus.addr == Reg.CTRL)
        abort = Signal()
        m.d.comb += abort.eq(ctrl & bus.w_data[3])
        # ABORT resets the job logic; the memories (threshold table, code, buffers) keep their
        # contents, so the threshold table and a valid code survive it.
        m.submodules.sec = sec = ResetInserter(abort)(SemanticConcentrator(p))
        if self._sic:
            m.submodules.decoder = dec = ResetInserter(abort)(OffsetDecoder(p, mask=False))
            m.submodules.matcher = mat = ResetInserter(abort)(
                BlockMatcher(p, icg_cell=self._icg_cell))
        m.submodules.code_memory = code_mem = memory.Memory(
            shape=unsigned(p.word_bits), depth=p.code_words, init=[])
        code_wp = code_mem.write_port()
        code_rp = code_mem.read_port()

        # ---- registers ------------------------------------------------------------------------
        rw = {reg: Signal(32, name=reg.name.lower()) for reg in _RW
              if reg in self.writable}
        rw_width = {Reg.SEC_MODE: 1, Reg.SEC_ORDER: 4, Reg.SIC_REPR: 1}
        sec_cycles = Signal(32)
        sic_cycles = Signal(32)
        kept = Signal(range(p.tokens + 1))
        nbits = Signal(p.nbits_bits)
        order = Signal(3)
        uniques = Signal(32)
        active = Signal(32)
        gated = Signal(32)
        sic_tokens = Signal(32)
        sec_cause = Signal(SecError)
        dec_cause = Signal(DecodeError)
        errors = Signal(len(ErrorFlag))
        set_err = Signal(len(ErrorFlag))    # flags raised this cycle
        # The stored code: valid after an SEC job without error, until the next START_SEC.
        code_valid = Signal()
        code_m = Signal(p.count_bits)
        code_kept = Signal(range(p.tokens + 1))
        code_nbits = Signal(p.nbits_bits)
        code_nwords = Signal(range(p.code_words + 1))

        # ---- bus: writes, commands ------------------------------------------------------------
        w_fire = bus.w_en
        start_sec_req = ctrl & bus.w_data[0]
        start_sic_req = ctrl & bus.w_data[1]
        clear = Signal()
        m.d.comb += clear.eq(ctrl & bus.w_data[2])
        sec_idle = Signal()
        sic_idle = Signal()
        both_idle = sec_idle & sic_idle
        start_sec = Signal()
        start_sic = Signal()
        m.d.comb += [
            start_sec.eq(start_sec_req & ~start_sic_req & both_idle & ~abort),
            start_sic.eq(start_sic_req & ~start_sec_req & both_idle & code_valid & ~abort
                         & self._sic),
        ]
        bad_cmd = (start_sec_req | start_sic_req) & ~start_sec & ~start_sic

        writable = Const(0)
        for reg in self.writable:
            writable = writable | (bus.addr == reg)
        bad_write = w_fire & ~writable
        with m.If(w_fire):
            for reg, sig in rw.items():
                with m.If(bus.addr == reg):
                    m.d.sync += sig.eq(bus.w_data[:rw_width.get(reg, 32)])

        theta_bad = Const(0)
        if self._sic:
            theta_write = w_fire & (bus.addr == Reg.THETA_DATA)
            theta_addr = rw[Reg.THETA_ADDR]
            theta_ok = (theta_addr < p.layers) & (bus.w_data <= p.theta_max)
            theta_bad = theta_write & ~theta_ok
            m.d.comb += [
                mat.theta_we.eq(theta_write & theta_ok),
                mat.theta_addr.eq(theta_addr[:len(mat.theta_addr)]),
                mat.theta_data.eq(bus.w_data[:p.theta_bits]),
            ]
            with m.If(theta_write):
                m.d.sync += theta_addr.eq(theta_addr + 1)

        # ---- bus: reads -----------------------------------------------------------------------
        sec_busy = ~sec_idle
        sic_busy = ~sic_idle
        status = Signal(32)
        m.d.comb += status.eq(sec_busy | (sic_busy << 1) | (code_valid << 2)
                              | (errors << ERROR_SHIFT))
        readable = {
            Reg.ID: Const(FOCUS_ID, 32), Reg.STATUS: status,
            Reg.SEC_CYCLES: sec_cycles, Reg.SIC_CYCLES: sic_cycles, Reg.KEPT: kept,
            Reg.NBITS: nbits, Reg.ORDER: order, Reg.UNIQUES: uniques, Reg.ACTIVE: active,
            Reg.GATED: gated, Reg.CAUSE: sec_cause.as_value() | (dec_cause.as_value() << 4),
            Reg.SIC_TOKENS: sic_tokens, Reg.CODE_WORDS: code_nwords,
            **rw,
        }
        bad_read = Signal()
        m.d.sync += bus.r_data.eq(0)
        with m.If(bus.r_en):
            with m.Switch(bus.addr):
                for reg, value in readable.items():
                    with m.Case(reg):
                        m.d.sync += bus.r_data.eq(value)
                with m.Case(*(reg for reg in _WO if reg in self.writable)):
                    pass
                with m.Default():
                    m.d.comb += bad_read.eq(1)

        # ---- SEC jobs -------------------------------------------------------------------------
        S_IDLE, S_CFG, S_RUN = range(3)
        sec_state = Signal(range(3))
        m.d.comb += sec_idle.eq(sec_state == S_IDLE)
        sec_cfg = Signal(sec_config_layout(p))
        sec_cfg_valid = Signal()
        m.d.comb += [sec.cfg_stream.valid.eq(sec_cfg_valid), sec.cfg_stream.payload.eq(sec_cfg)]
        reg_m, reg_r, reg_k = rw[Reg.SEC_M], rw[Reg.SEC_R], rw[Reg.SEC_KEEP]
        with m.If(start_sec):
            # Out-of-range settings become ones SEC rejects (M = 0, R = 0), never truncated.
            m.d.sync += [
                sec_cfg.M.eq(Mux(reg_m > p.tokens, 0, reg_m)),
                sec_cfg.R.eq(Mux(reg_r >> ROWS_BITS != 0, 0, reg_r)),
                sec_cfg.mode.eq(rw[Reg.SEC_MODE][0]),
                sec_cfg.keep.eq(Mux(reg_k > p.tokens, p.tokens, reg_k)),
                sec_cfg.order.eq(rw[Reg.SEC_ORDER][:3]),
                sec_cfg.adaptive.eq(rw[Reg.SEC_ORDER][3]),
                sec_cfg_valid.eq(1),
                sec_state.eq(S_CFG),
                code_valid.eq(0),
            ]
        with m.If(sec.cfg_stream.valid & sec.cfg_stream.ready):
            m.d.sync += [sec_cfg_valid.eq(0), sec_state.eq(S_RUN)]

        # Scores go to SEC, except while a new job's configuration beat is on its way: SEC drains
        # stray beats after a rejected job, and must not take the next job's first ones.
        sec_start_pending = start_sec_req | sec_cfg_valid
        m.d.comb += [
            sec.i_stream.payload.eq(self.scores.payload),
            sec.i_stream.valid.eq(self.scores.valid & ~sec_start_pending),
            self.scores.ready.eq(sec.i_stream.ready & ~sec_start_pending),
        ]
        wiring.connect(m, sec.mask_stream, wiring.flipped(self.mask))
        m.d.comb += [
            self.code.valid.eq(sec.code_stream.valid),
            self.code.payload.eq(sec.code_stream.payload),
            sec.code_stream.ready.eq(self.code.ready),
        ]

        sec_run = sec_state == S_RUN
        wptr = Signal(range(p.code_words + 1))
        overflow = Signal()
        code_fire = self.code.valid & self.code.ready
        m.d.comb += [
            code_wp.addr.eq(wptr),
            code_wp.data.eq(self.code.payload.word),
            code_wp.en.eq(sec_run & code_fire & (wptr < p.code_words)),
        ]
        with m.If(code_wp.en):
            m.d.sync += wptr.eq(wptr + 1)
        with m.If(sec_run & code_fire & (wptr == p.code_words)):
            m.d.sync += overflow.eq(1)

        sec_started = Signal()
        mask_done = Signal()
        code_done = Signal()
        score_fire = self.scores.valid & self.scores.ready
        mask_last = self.mask.valid & self.mask.ready & self.mask.payload.last
        code_last = code_fire & self.code.payload.last
        sec_finished = mask_done & code_done
        with m.If(sec_run & (sec_started | score_fire) & ~sec_finished & ~sec.error):
            m.d.sync += [sec_cycles.eq(sec_cycles + 1), sec_started.eq(1)]
        with m.If(sec_run & mask_last):
            m.d.sync += mask_done.eq(1)
        with m.If(sec_run & code_last):
            m.d.sync += code_done.eq(1)

        with m.If(sec_run & sec.done):
            m.d.sync += [
                sec_state.eq(S_IDLE),
                kept.eq(sec.kept), nbits.eq(sec.nbits), order.eq(sec.order),
                code_valid.eq(~overflow),
                code_m.eq(sec_cfg.M), code_kept.eq(sec.kept), code_nbits.eq(sec.nbits),
                code_nwords.eq(wptr),
            ]
            with m.If(overflow):
                m.d.comb += set_err.eq(ErrorFlag.SEC_STREAM)
        with m.Elif(sec_run & sec.error):
            m.d.sync += [sec_state.eq(S_IDLE), sec_cause.eq(sec.cause)]
            with m.If(sec.cause == SecError.ANALYZER):
                m.d.comb += set_err.eq(ErrorFlag.SEC_CONFIG)
            with m.Else():
                m.d.comb += set_err.eq(ErrorFlag.SEC_STREAM)

        if self._sic:
            # ---- SIC jobs: decoder and matcher configuration, code replay ----------------------
            C_IDLE, C_RUN = range(2)
            sic_state = Signal(range(2))
            m.d.comb += sic_idle.eq(sic_state == C_IDLE)
            sic_run = sic_state == C_RUN
            dec_cfg_valid = Signal()
            mat_cfg = Signal(match_config_layout(p))
            mat_cfg_valid = Signal()
            layer = rw[Reg.SIC_LAYER]
            fs = rw[Reg.SIC_FRAME_STRIDE]
            m.d.comb += [
                dec.cfg_stream.valid.eq(dec_cfg_valid),
                dec.cfg_stream.payload.tokens.eq(code_m),
                dec.cfg_stream.payload.nbits.eq(code_nbits),
                mat.cfg_stream.valid.eq(mat_cfg_valid),
                mat.cfg_stream.payload.eq(mat_cfg),
            ]
            with m.If(dec.cfg_stream.valid & dec.cfg_stream.ready):
                m.d.sync += dec_cfg_valid.eq(0)
            with m.If(mat.cfg_stream.valid & mat.cfg_stream.ready):
                m.d.sync += mat_cfg_valid.eq(0)

            ZIP_JOIN, ZIP_TERM, ZIP_DRAIN_TOK, ZIP_DRAIN_IDX, ZIP_DONE = range(5)
            zip_state = Signal(range(5))
            mismatch = Signal()
            rptr = Signal(range(p.code_words + 1))
            rd_valid = Signal()
            rd_last = Signal()
            sic_started = Signal()
            sic_finished = Signal()
            with m.If(start_sic):
                m.d.sync += [uniques.eq(0), active.eq(0), gated.eq(0), sic_cycles.eq(0),
                             sic_tokens.eq(0), sic_started.eq(0), sic_finished.eq(0)]
                with m.If(code_kept != 0):
                    # A bad layer is sent as a bad geometry: the matcher's layer field may be too
                    # narrow to show it, and the matcher must reject the job and drop its tokens.
                    m.d.sync += [
                        sic_state.eq(C_RUN), dec_cfg_valid.eq(1), mat_cfg_valid.eq(1),
                        mat_cfg.frame_stride.eq(Mux(layer < p.layers, fs, (1 << 32) - 1)),
                        mat_cfg.row_stride.eq(rw[Reg.SIC_ROW_STRIDE]),
                        mat_cfg.layer.eq(layer[:len(mat_cfg.layer)]),
                        mat_cfg.mean.eq(rw[Reg.SIC_REPR][0]),
                        rptr.eq(0), rd_valid.eq(0), zip_state.eq(ZIP_JOIN), mismatch.eq(0),
                    ]

            di = dec.i_stream
            issue = sic_run & (rptr < code_nwords) & (~rd_valid | di.ready)
            m.d.comb += [
                code_rp.addr.eq(rptr),
                code_rp.en.eq(issue),
                di.valid.eq(rd_valid),
                di.payload.word.eq(code_rp.data),
                di.payload.nbits.eq(code_nbits),
                di.payload.last.eq(rd_last),
            ]
            with m.If(issue):
                m.d.sync += [rptr.eq(rptr + 1), rd_valid.eq(1), rd_last.eq(rptr == code_nwords - 1)]
            with m.Elif(di.ready):
                m.d.sync += rd_valid.eq(0)

            # ---- the zip: decoder indices x tokens -> matcher ----------------------------------
            tok, idx, mi = self.tokens, dec.idx_stream, mat.i_stream
            term = zip_state == ZIP_TERM
            m.d.comb += [
                mi.payload.vector.eq(Mux(term, 0, tok.payload.vector.as_value())),
                mi.payload.position.eq(Mux(term, (1 << p.position_bits) - 1, idx.payload.index)),
                mi.payload.last.eq(term | tok.payload.last | idx.payload.last),
            ]
            dec_gone = ~dec_cfg_valid & ~dec.busy & ~idx.valid     # no more indices will come
            tok_fire = tok.valid & tok.ready
            with m.If(sic_run):
                with m.Switch(zip_state):
                    with m.Case(ZIP_JOIN):
                        both = tok.valid & idx.valid
                        m.d.comb += [mi.valid.eq(both), tok.ready.eq(both & mi.ready),
                                     idx.ready.eq(both & mi.ready)]
                        with m.If(both & mi.ready):
                            with m.If(tok.payload.last & idx.payload.last):
                                m.d.sync += zip_state.eq(ZIP_DONE)
                            with m.Elif(idx.payload.last):
                                m.d.sync += [zip_state.eq(ZIP_DRAIN_TOK), mismatch.eq(1)]
                            with m.Elif(tok.payload.last):
                                m.d.sync += [zip_state.eq(ZIP_DRAIN_IDX), mismatch.eq(1)]
                        with m.Elif(dec_gone):
                            m.d.sync += zip_state.eq(ZIP_TERM)
                    with m.Case(ZIP_TERM):
                        m.d.comb += mi.valid.eq(1)
                        with m.If(mi.ready):
                            m.d.sync += zip_state.eq(ZIP_DRAIN_TOK)
                    with m.Case(ZIP_DRAIN_TOK):
                        m.d.comb += tok.ready.eq(1)
                        with m.If(tok.valid & tok.payload.last):
                            m.d.sync += zip_state.eq(ZIP_DONE)
                    with m.Case(ZIP_DRAIN_IDX):
                        m.d.comb += idx.ready.eq(1)
                        with m.If((idx.valid & idx.payload.last) | dec_gone):
                            m.d.sync += zip_state.eq(ZIP_DONE)
            with m.If(tok_fire):
                m.d.sync += sic_tokens.eq(sic_tokens + 1)

            wiring.connect(m, mat.o_stream, wiring.flipped(self.sic))
            sic_last = self.sic.valid & self.sic.ready & self.sic.payload.last
            with m.If(sic_run & (sic_started | tok_fire) & ~sic_finished):
                m.d.sync += [sic_cycles.eq(sic_cycles + 1), sic_started.eq(1)]
            with m.If(sic_run & sic_last):
                m.d.sync += sic_finished.eq(1)

            sic_end = (sic_run & (zip_state == ZIP_DONE) & ~dec_cfg_valid & ~mat_cfg_valid
                       & ~dec.busy & ~mat.busy & ~rd_valid)
            with m.If(sic_end):
                m.d.sync += [sic_state.eq(C_IDLE), uniques.eq(mat.uniques), active.eq(mat.active),
                             gated.eq(mat.gated)]
                with m.If(dec.error):
                    m.d.sync += dec_cause.eq(dec.cause)
            sic_err = Signal(len(ErrorFlag))
            m.d.comb += sic_err.eq(Mux(sic_end & dec.error, ErrorFlag.DECODER, 0)
                                   | Mux(sic_end & mat.error, ErrorFlag.MATCHER, 0)
                                   | Mux(sic_end & mismatch, ErrorFlag.TOKENS, 0))
        else:
            # Built without SIC: START_SIC is refused (COMMAND), ``tokens`` is never ready and
            # ``sic`` never valid; the SIC counters read 0.
            m.d.comb += sic_idle.eq(1)
            sic_err = Const(0, len(ErrorFlag))

        # ---- abort: last assignment wins over the job logic above -------------------------------
        with m.If(abort):
            m.d.sync += [sec_state.eq(S_IDLE), sec_cfg_valid.eq(0)]
            if self._sic:
                m.d.sync += [sic_state.eq(C_IDLE), dec_cfg_valid.eq(0), mat_cfg_valid.eq(0),
                             rd_valid.eq(0)]
        abort_err = Mux(abort & ~both_idle, ErrorFlag.ABORTED, 0)

        # ---- sticky errors, clear -------------------------------------------------------------
        bus_err = Mux(bad_write | bad_read | theta_bad, ErrorFlag.BUS, 0)
        cmd_err = Mux(bad_cmd, ErrorFlag.COMMAND, 0)
        all_err = set_err | sic_err | bus_err | cmd_err | abort_err
        m.d.sync += errors.eq(Mux(clear, 0, errors) | all_err)
        with m.If(clear):
            m.d.sync += [sec_cycles.eq(0), sic_cycles.eq(0), kept.eq(0), nbits.eq(0), order.eq(0),
                         uniques.eq(0), active.eq(0), gated.eq(0), sic_tokens.eq(0),
                         sec_cause.eq(0), dec_cause.eq(0)]
        with m.If(start_sec):
            m.d.sync += [sec_cycles.eq(0), sec_started.eq(0), mask_done.eq(0),
                         code_done.eq(0), kept.eq(0), nbits.eq(0), order.eq(0), wptr.eq(0),
                         overflow.eq(0)]

        m.d.comb += [self.busy.eq(sec_busy | sic_busy), self.error.eq(errors != 0)]
        # Internal state a simulation test may reach (fault injection), not an interface.
        self.probes = {"code_nbits": code_nbits}
        return m
