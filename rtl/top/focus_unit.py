"""The Focus unit's top level (spec 5): SEC joined to SIC through the offset code; registers."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import mask_beat_layout, offset_word_layout, score_beat_layout
from ..lib.clock_gate import ICG_CELL
from ..lib.register_bus import RegisterSignature
from ..sic.block_matcher import match_output_layout
from .code_memory import CodeMemory
from .register_file import RegisterFile
from .registers import (
    ERROR_SHIFT,
    FOCUS_ID,
    READABLE,
    SIC_SETTINGS,
    WRITABLE,
    Ctrl,
    ErrorFlag,
    Reg,
    Status,
)
from .sec_sequencer import SecSequencer
from .sic_sequencer import SicSequencer, token_layout

# The register constants live in rtl.top.registers; they are re-exported here for the tools
# that import them from the top level.
__all__ = ["FocusUnit", "focus_unit_members", "Reg", "Ctrl", "Status", "ErrorFlag", "FOCUS_ID",
           "token_layout", "ERROR_SHIFT", "READABLE", "WRITABLE", "SIC_SETTINGS"]


def focus_unit_members(p):
    """The members of :class:`FocusUnit`'s signature for parameters ``p`` (also what the
    standard-bus wrapper, :class:`rtl.top.axi_wrapper.FocusUnitAXI`, derives its ports from)."""
    return {
        "bus": In(RegisterSignature()),
        "scores": In(stream.Signature(score_beat_layout(p))),
        "tokens": In(stream.Signature(token_layout(p))),
        "mask": Out(stream.Signature(mask_beat_layout(p))),
        "code": Out(stream.Signature(offset_word_layout(p))),
        "sic": Out(stream.Signature(match_output_layout(p))),
        "busy": Out(1),
        "error": Out(1),
        "irq": Out(1),
    }


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
    between). SIC: a token offered early transfers 7 cycles after the cycle of the
    ``START_SIC`` write (code word read, word register, decoder header, first code parsed, its
    index formed, index register); from
    then on one token per ``rounds = ceil(7/comparators)`` cycles, the matcher's rate (the
    decoder is built without its mask output and gives one index per cycle whatever the gaps; the
    zip is combinational and adds no cycle), and a token's map beat leaves ``matcher_latency +
    rounds - 1`` cycles (31 with 7 comparators) after the token. ``SIC_CYCLES`` of a job of S
    tokens is therefore ``S * rounds + 31`` (``golden.cycles.block_match_cycles``; plus the
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
    terminator token (position 2**position_bits - 1, ``last``) ends the matcher's job and the
    tokens are drained to ``last``. Every job ends within a bounded number of cycles once its inputs
    have arrived. Flags are set when the job ends, or in the cycle of the bad bus access.

    Abort: a job whose inputs never come (a host that died mid-job, tokens that were never sent)
    waits for them, as a stream block must. ``CTRL.ABORT`` ends it: in the cycle after the write
    the unit is idle, ``scores`` and ``tokens`` are not ready, and a beat on offer on ``mask``,
    ``code`` or ``sic`` is withdrawn (the one exception to the stream rules: the aborted job's
    outputs are incomplete and must be discarded); SEC, the decoder and the matcher are reset at
    the end of that cycle, from a register, so a start written then runs as usual. ``ABORTED``
    is set when a job was running. The threshold table, the settings and a valid code survive
    (an aborted SEC job leaves no valid code, as any SEC start does), so the next job runs as
    usual; the producer must not offer the aborted job's remaining beats.

    Structure (each a Component, joined with ``wiring.connect``):
    :class:`rtl.top.register_file.RegisterFile` (the register map, commands, error flags),
    :class:`rtl.top.sec_sequencer.SecSequencer` (SEC jobs and the SEC core),
    :class:`rtl.top.code_memory.CodeMemory` (the stored code), and
    :class:`rtl.top.sic_sequencer.SicSequencer` (SIC jobs: code replay, the decoder, the zip of
    indices and tokens, the matcher).

    Register map: 32-bit words at word addresses, one table,
    :data:`rtl.top.registers.REGISTERS` (:class:`Reg` names the addresses; README.md shows the
    table, ``python -m rtl.top.registers --markdown`` prints it). An RW register reads back what
    was written, masked to its width; a write-only register reads as 0. A write to an RO or
    unmapped address is ignored and sets ``BUS``; a read of an unmapped address returns 0 and
    sets ``BUS``. SEC counters are zeroed
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
    irq : Out(1)
        The interrupt request, active high, level: high while ``IRQ_STATUS & IRQ_ENABLE`` is not
        0 (a job ended, an error was raised; see :class:`rtl.top.register_file.RegisterFile`),
        from registers, one cycle after the event.
    """

    def __init__(self, params=None, *, icg_cell=ICG_CELL, sic=True):
        self._icg_cell = icg_cell
        self._sic = bool(sic)
        super().__init__(params, focus_unit_members)

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
        m.submodules.registers = regs = RegisterFile(p, sic=self._sic)
        m.submodules.sec = sec = SecSequencer(p)
        m.submodules.code_memory = code = CodeMemory(p)
        wiring.connect(m, wiring.flipped(self.bus), regs.bus)
        wiring.connect(m, regs.sec, sec.ctrl)
        wiring.connect(m, sec.store, code.write)
        wiring.connect(m, wiring.flipped(self.scores), sec.scores)
        wiring.connect(m, sec.mask, wiring.flipped(self.mask))
        wiring.connect(m, sec.code, wiring.flipped(self.code))
        values = regs.values
        m.d.comb += [
            regs.code_valid.eq(code.read.valid),
            values.sec_cycles.eq(sec.cycles), values.kept.eq(sec.kept),
            values.nbits.eq(sec.nbits), values.order.eq(sec.order),
            values.cause.sec.eq(sec.cause), values.code_words.eq(code.read.nwords),
            self.busy.eq(regs.busy), self.error.eq(regs.error), self.irq.eq(regs.irq),
        ]
        if self._sic:
            m.submodules.sic = sic = SicSequencer(p, icg_cell=self._icg_cell)
            wiring.connect(m, regs.sic, sic.ctrl)
            wiring.connect(m, regs.theta, sic.theta)
            wiring.connect(m, code.read, sic.code)
            wiring.connect(m, wiring.flipped(self.tokens), sic.tokens)
            wiring.connect(m, sic.o_stream, wiring.flipped(self.sic))
            m.d.comb += [
                values.sic_cycles.eq(sic.cycles), values.uniques.eq(sic.uniques),
                values.active.eq(sic.active), values.gated.eq(sic.gated),
                values.sic_tokens.eq(sic.taken), values.cause.decoder.eq(sic.cause),
            ]
        # Built without SIC, the SIC job side of the register file stays idle (START_SIC is
        # refused: COMMAND), ``tokens`` is never ready, ``sic`` never valid, and the SIC counters
        # read 0.

        # Internal state a simulation test may reach (fault injection), not an interface.
        self.probes = {"code_nbits": code.read.nbits}
        return m
