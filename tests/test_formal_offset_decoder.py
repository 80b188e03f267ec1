# amaranth: UnusedElaboratable=no
"""Formal check of the offset decoder at a small size (yowasp-sby, smtbmc with Yices).

The harness drives :class:`rtl.sec.offset_decoder.OffsetDecoder` with *any* configuration beat (M
from 0 to 7 against ``tokens = 4``, so out of range too; any ``nbits``) and *any* words, under a
cooperative environment: the outputs are always ready, a word is always offered, payloads follow
the stream rules, and a job's words end (``last``) by the ``MAX_WORDS``-th word. It proves by
k-induction that

- the decoder is never busy for ``BOUND`` = 17 cycles in a row: every job, well formed or not,
  ends and the decoder returns to idle;
- it never writes outside the mask: every index < M, at most ceil(M/lanes) mask beats, and no
  set padding bit.

Cover tasks show that the proof is not vacuous: a job that decodes two or more kept tokens (from
a kept-set code, a dropped-set code through the walker, and a Rice code), jobs that end in seven
different errors, and a job that stays busy for BOUND - 1 cycles (so the bound
is tight) are all reachable.
"""


import pytest
from amaranth.hdl import Assert, Assume, ClockDomain, Cover, Elaboratable, Module, Signal
from helpers import formal_dir, run_sby

from rtl.params import FocusParams
from rtl.sec.offset_decoder import DecodeError, OffsetDecoder, decoder_config_layout

pytestmark = pytest.mark.slow

PARAMS = FocusParams(tokens=4, lanes=2, word_bits=8)
MAX_WORDS = 4
# Busy cycles in a row that are never reached: the proof shows busy_for <= BOUND - 1 = 16, and
# the "long" cover reaches 16 (14 before the parser's lookahead and the value stage, 11 before
# the dropped-set walker, which steps over every position), so the bound is tight for this size
# (the decoder's documented bound, MAX_WORDS + tokens + ceil(tokens/lanes) + 11 = 21 cycles
# from the config beat, is looser). k-induction needs a depth above BOUND.
BOUND = 17
DEPTH = BOUND + 1


class DecoderHarness(Elaboratable):
    """The decoder, free inputs, environment assumptions, the properties and the covers."""

    def __init__(self, params, cover=None):
        self.params = params
        self.cover = cover
        self.dut = OffsetDecoder(params)
        self.cd_sync = ClockDomain("sync")
        self.cfg_valid = Signal()
        self.cfg_payload = Signal(decoder_config_layout(params).size)
        self.i_valid = Signal()
        self.i_word = Signal(params.word_bits)
        self.i_last = Signal()

    def ports(self):
        return [self.cd_sync.clk, self.cd_sync.rst, self.cfg_valid, self.cfg_payload,
                self.i_valid, self.i_word, self.i_last]

    def elaborate(self, platform):
        p = self.params
        m = Module()
        m.domains.sync = self.cd_sync
        m.submodules.dut = dut = self.dut
        cfg, i, o, x = dut.cfg_stream, dut.i_stream, dut.o_stream, dut.idx_stream
        m.d.comb += [
            cfg.valid.eq(self.cfg_valid), cfg.payload.eq(self.cfg_payload),
            i.valid.eq(self.i_valid), i.payload.word.eq(self.i_word),
            i.payload.last.eq(self.i_last),
            o.ready.eq(1), x.ready.eq(1),
        ]
        cfg_fire = cfg.valid & cfg.ready
        word_fire = i.valid & i.ready

        # ---- environment ------------------------------------------------------------------------
        m.d.comb += Assume(~self.cd_sync.rst)
        m.d.comb += Assume(self.i_valid)
        words = Signal(range(MAX_WORDS + 1))    # words of the current job so far
        with m.If(cfg_fire):
            m.d.sync += words.eq(0)
        with m.Elif(word_fire & (words != MAX_WORDS)):
            m.d.sync += words.eq(words + 1)
        with m.If(words >= MAX_WORDS - 1):
            m.d.comb += Assume(self.i_last)
        # Stream rules for the sources: an offered beat stays, unchanged, until it is taken.
        cfg_wait, cfg_was = Signal(), Signal.like(self.cfg_payload)
        i_wait, word_was, last_was = Signal(), Signal.like(self.i_word), Signal()
        m.d.sync += [cfg_wait.eq(cfg.valid & ~cfg.ready), cfg_was.eq(self.cfg_payload),
                     i_wait.eq(i.valid & ~i.ready), word_was.eq(self.i_word),
                     last_was.eq(self.i_last)]
        with m.If(cfg_wait):
            m.d.comb += Assume(self.cfg_valid & (self.cfg_payload == cfg_was))
        with m.If(i_wait):
            m.d.comb += Assume((self.i_word == word_was) & (self.i_last == last_was))

        # ---- the job's M, and what the decoder writes -------------------------------------------
        job_m = Signal(p.count_bits)
        beats = Signal(range(p.tokens + 2))
        kept = Signal(range(p.tokens + 2))
        with m.If(cfg_fire):
            m.d.sync += [job_m.eq(cfg.payload.tokens), beats.eq(0), kept.eq(0)]
        with m.If(o.valid & o.ready & (beats <= p.tokens)):
            m.d.sync += beats.eq(beats + 1)
        with m.If(x.valid & x.ready & (kept <= p.tokens)):
            m.d.sync += kept.eq(kept + 1)

        # ---- properties -------------------------------------------------------------------------
        busy_for = Signal(range(BOUND + 1))
        with m.If(dut.busy & (busy_for != BOUND)):
            m.d.sync += busy_for.eq(busy_for + 1)
        with m.Elif(~dut.busy):
            m.d.sync += busy_for.eq(0)
        m.d.comb += Assert(busy_for < BOUND)
        with m.If(x.valid):
            m.d.comb += Assert(x.payload.index < job_m)
        with m.If(o.valid):
            m.d.comb += Assert(beats * p.lanes < job_m)
            for k in range(p.lanes):
                with m.If(beats * p.lanes + k >= job_m):
                    m.d.comb += Assert(~o.payload.keep[k])

        # ---- covers (one per cover task) --------------------------------------------------------
        if self.cover == "success":
            m.d.comb += Cover(o.valid & o.payload.last & ~dut.error & (kept >= 2))
        elif self.cover == "dropped":       # a dropped-set code, decoded by the walker
            m.d.comb += Cover(o.valid & o.payload.last & ~dut.error & dut.dropped & (kept >= 2))
        elif self.cover == "rice":
            m.d.comb += Cover(o.valid & o.payload.last & ~dut.error & dut.rice & (kept >= 2))
        elif self.cover == "long":
            m.d.comb += Cover(busy_for == BOUND - 1)
        elif self.cover is not None:
            m.d.comb += Cover(dut.error & ~dut.busy & (dut.cause == DecodeError[self.cover]))
        return m


def _sby(work, name, mode, depth, cover=None):
    harness = DecoderHarness(PARAMS, cover)
    # Yices, not z3: the proof takes about 70 s with Yices and 22 minutes with z3 (CI, `71f1c4f`).
    code, log, _ = run_sby(work, name, harness, harness.ports(), mode, depth,
                           engine="smtbmc yices", timeout=3600)
    return code, log


@pytest.fixture(scope="module")
def work():
    return formal_dir("offset_decoder")


def test_decoder_always_returns_to_idle(work):
    code, log = _sby(work, "prove", "prove", DEPTH)
    assert code == 0 and "PASS" in log, f"the proof failed (see {work / 'prove'}):\n{log[-3000:]}"


@pytest.mark.parametrize("cover", ["success", "dropped", "rice", "long", "COUNT", "ZEROS",
                                   "UNARY", "INDEX", "TRAILING", "SHORT", "CONFIG"])
def test_cover(work, cover):
    """The properties are not vacuous: each of these is reachable within the proof's depth."""
    code, log = _sby(work, f"cover_{cover}", "cover", BOUND + 6, cover)
    assert code == 0 and "PASS" in log, f"cover {cover} not reached:\n{log[-3000:]}"
