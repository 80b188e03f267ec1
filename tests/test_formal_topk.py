# amaranth: UnusedElaboratable=no
"""A formal check of the top-k selector at a small size, both sorters, with yowasp-sby and z3.

Size: tokens 3, lanes 2 (so M = 1, 2 or 3 tokens in one or two beats, the last one padded when M is
odd); 2-bit scores for the bubble sorter (heavy ties), 5-bit scores for the radix selector (two
digits, so a pass that narrows the candidates to a prefix is included).

The environment runs one job whose configuration (any M and keep, including M = 0, M > tokens
and keep > M) and vector (any scores) are free constants; the sink's back-pressure is free in
every cycle. The sources never idle: free input idles multiply the solver's time by ten, and the
simulations (hundreds of jobs under random idles, Amaranth and cocotb) cover them. Properties:

- the mask has exactly min(keep, M) ones, in exactly ceil(M/lanes) beats, ``last`` on the final
  one only, and the padding bits past M are clear;
- ``o_stream`` obeys the stream rules (valid and payload hold until the transfer) and is valid
  only inside an accepted job (never after a rejected configuration).

They are checked by bounded model checking to depth 18 (bubble) and 23 (radix), which covers
every job at this size with no back-pressure (from its first beat, the longest bubble job, keep =
M = 3, takes 15 cycles, and a radix job of M = 3 takes 20: ``golden.cycles.topk_cycles``) and any
trace of that length with back-pressure. The cover task shows that the depth reaches completed
jobs with 1 <= keep < M = tokens and, for the bubble sorter, a job of two passes; so the check
cannot pass vacuously (with the clock left out of the ports, the trap in the toolchain notes,
the cover fails).
"""

import pytest
from amaranth.asserts import AnyConst, AnySeq, Initial
from amaranth.hdl import Assert, Assume, ClockDomain, Cover, Elaboratable, Module, Mux, Signal
from helpers import check_bmc_and_cover

from rtl.params import FocusParams
from rtl.sec.topk_selector import TopKSelector

pytestmark = pytest.mark.synth

DEPTH = {"bubble": 18, "radix": 23}
SIZES = {"bubble": dict(tokens=3, lanes=2, score_bits=2),
         "radix": dict(tokens=3, lanes=2, score_bits=5)}
class SelectorProperties(Elaboratable):
    """The selector, its environment and the properties (module doc)."""

    def __init__(self, params):
        self.params = params
        self.domain = ClockDomain("sync")

    def elaborate(self, platform):
        p = self.params
        a = p.lanes
        m = Module()
        m.domains.sync = cd = self.domain
        m.submodules.dut = dut = TopKSelector(p)
        cfg, i, o = dut.cfg_stream, dut.i_stream, dut.o_stream
        m.d.comb += Assume(cd.rst == Initial())

        # The environment: one job, with a free configuration and vector; free back-pressure.
        job_cfg = AnyConst(len(cfg.payload.as_value()))
        vector = [AnyConst(len(i.payload.as_value())) for _ in range(-(-p.tokens // a))]
        sent_cfg = Signal()
        beat_in = Signal(range(len(vector) + 1))
        m.d.comb += [
            cfg.valid.eq(~cd.rst & ~sent_cfg), cfg.payload.eq(job_cfg),
            i.valid.eq(~cd.rst & (beat_in != len(vector))),
            o.ready.eq(AnySeq(1)),
        ]
        m.d.comb += i.payload.eq(vector[0])
        for n in range(1, len(vector)):
            with m.If(beat_in == n):
                m.d.comb += i.payload.eq(vector[n])
        with m.If(cfg.valid & cfg.ready):
            m.d.sync += sent_cfg.eq(1)
        with m.If(i.valid & i.ready):
            m.d.sync += beat_in.eq(beat_in + 1)

        # The stream rules on the output.
        o_waiting = Signal()
        o_held = Signal.like(o.payload.as_value())
        m.d.sync += [o_waiting.eq(o.valid & ~o.ready), o_held.eq(o.payload)]
        with m.If(o_waiting & ~cd.rst):
            m.d.comb += Assert(o.valid & (o.payload.as_value() == o_held))

        # Job tracking.
        in_job = Signal()
        job_M = Signal(p.count_bits)
        job_k = Signal(p.count_bits)
        ones = Signal(p.count_bits + 1)
        beat = Signal(range(p.tokens + 1))
        c = cfg.payload
        with m.If(cfg.valid & cfg.ready & (c.M != 0) & (c.M <= p.tokens)):
            m.d.sync += [in_job.eq(1), job_M.eq(c.M), ones.eq(0), beat.eq(0),
                         job_k.eq(Mux(c.keep < c.M, c.keep, c.M))]
        with m.If(~in_job & ~cd.rst):
            m.d.comb += Assert(~o.valid)
        count = sum(o.payload.keep[n] for n in range(a))
        done = Signal()
        with m.If(o.valid & o.ready):
            m.d.sync += [ones.eq(ones + count), beat.eq(beat + 1)]
            for n in range(a):
                with m.If(beat * a + n >= job_M):
                    m.d.comb += Assert(~o.payload.keep[n])
            last_beat = (beat + 1) * a >= job_M
            m.d.comb += Assert(o.payload.last == last_beat)
            with m.If(o.payload.last):
                m.d.comb += [Assert(ones + count == job_k), done.eq(1)]
                m.d.sync += in_job.eq(0)
        m.d.comb += Cover(done & (job_M == p.tokens) & (job_k >= 1) & (job_k < job_M))
        m.d.comb += Cover(done & (job_k > a))
        return m


@pytest.mark.parametrize("sorter", ["bubble", pytest.param("radix", marks=pytest.mark.slow)])
def test_formal_selector(sorter):
    top = SelectorProperties(FocusParams(sorter=sorter, **SIZES[sorter]))
    check_bmc_and_cover(f"topk_{sorter}", top, DEPTH[sorter], covers=2,
                        script="flatten\nopt -full\n")
