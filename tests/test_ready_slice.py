# amaranth: UnusedElaboratable=no
"""The ready slice (``rtl/lib/ready_slice.py``) in the Amaranth simulator against the identity
under the four stall patterns with the stream-rule monitor, a consumer stall longer than its
storage, its zero latency and registered ``ready``; and its stream rules proven formally
(yowasp-sby, with cover tasks)."""

import pytest
from amaranth.hdl import Assert, Cover, Mux, Signal
from amaranth.sim import Simulator
from helpers import StreamStageHarness, formal_dir, run_sby
from test_stream_lib import BEAT, PATTERNS, beats, stalls_for

from rtl.lib.ready_slice import ReadySlice
from sim.streams import CLOCK_PERIOD, Stalls, run_streams


@pytest.mark.parametrize("pattern", [p for p, _ in PATTERNS])
def test_slice_is_identity(pattern):
    """Every beat leaves once, in order, under each stall pattern; with no stalls a beat leaves
    in the cycle it arrives (the run is as long as the stream)."""
    seed = 40 + len(pattern)
    want = beats(300, seed)
    got, stats = run_streams(ReadySlice(BEAT), {"i_stream": want}, {"o_stream": len(want)},
                             stalls=stalls_for(pattern, ["i_stream"], ["o_stream"]), seed=seed)
    assert got["o_stream"] == want
    if pattern == "none":
        assert stats["cycles"] == len(want)


def test_slice_long_stall_costs_its_length():
    """A consumer that holds ``ready`` low for 200 cycles: nothing lost, and the stream ends
    exactly 200 cycles later than without the stall (as with a wire)."""
    want = beats(50, 3)
    free, free_stats = run_streams(ReadySlice(BEAT), {"i_stream": want}, {"o_stream": len(want)})
    stalls = {"o_stream": Stalls(windows=[(5, 200)])}
    got, stats = run_streams(ReadySlice(BEAT), {"i_stream": want}, {"o_stream": len(want)},
                             stalls=stalls)
    assert got["o_stream"] == want == free["o_stream"]
    assert stats["cycles"] == free_stats["cycles"] + 200


def test_slice_storage_latency_and_ready_path():
    """A beat offered while ``o_stream`` is ready is on ``o_stream`` in the same cycle. With
    ``o_stream`` stalled the slice takes one beat and then stops, and ``i_stream.ready`` does
    not follow ``o_stream.ready`` within a cycle."""
    dut = ReadySlice(8)
    result = {}

    async def testbench(ctx):
        i, o = dut.i_stream, dut.o_stream
        ctx.set(o.ready, 1)
        ctx.set(i.payload, 77)
        ctx.set(i.valid, 1)
        result["through"] = (ctx.get(o.valid), ctx.get(o.payload), ctx.get(i.ready))
        await ctx.tick()
        ctx.set(o.ready, 0)
        taken = 0
        for n in range(6):
            ctx.set(i.payload, n)
            _, _, ready = await ctx.tick().sample(i.ready)
            taken += ready
        result["taken"] = taken
        result["held"] = ctx.get(o.payload)
        before = ctx.get(i.ready)
        ctx.set(o.ready, 1)
        result["follows"] = ctx.get(i.ready) != before

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(testbench)
    sim.run()
    assert result["through"] == (1, 77, 1)
    assert result["taken"] == 1
    assert result["held"] == 0
    assert not result["follows"]


# ---- the stream rules, proven ----------------------------------------------------------------

WIDTH = 4
DEPTH = 8


class SliceHarness(StreamStageHarness):
    """The slice under the frame of :class:`~helpers.StreamStageHarness`, and a model: the beat
    held inside, if any. Proven besides the output rule: it offers the held beat when there is
    one and the input's otherwise (every beat leaves in order and unchanged, none is made up);
    at most one beat is held and ``i_stream.ready`` is high exactly when none is. Covers (one
    per task): a beat held, a held beat leaving, and three beats through in three cycles."""

    def __init__(self, cover=None):
        super().__init__(ReadySlice(WIDTH), WIDTH, cover)

    def check(self, m, i_fire, o_fire):
        held, held_valid = self.dut.probes["held"], self.dut.probes["held_valid"]
        i, o = self.dut.i_stream, self.dut.o_stream

        # The model: a beat taken from the input and not yet delivered.
        count = Signal(range(3))
        kept = Signal(WIDTH)
        with m.If(i_fire & ~o_fire):
            m.d.sync += [count.eq(count + 1), kept.eq(i.payload)]
        with m.Elif(o_fire & ~i_fire):
            m.d.sync += count.eq(count - 1)

        m.d.comb += [Assert(count <= 1), Assert(i.ready == (count == 0)),
                     Assert(held_valid == (count == 1))]
        with m.If(count == 1):
            m.d.comb += [Assert(o.valid), Assert(o.payload == kept), Assert(held == kept)]
        with m.Else():
            m.d.comb += [Assert(o.valid == i.valid), Assert(o.payload == i.payload)]
        # A beat delivered while one is held is the held one: the input is not taken meanwhile.
        with m.If(o_fire & (count == 1)):
            m.d.comb += Assert(~i_fire)

        streak = Signal(range(4))
        left_held = Signal()
        m.d.sync += streak.eq(Mux(o_fire & i_fire & (count == 0), streak + (streak != 3), 0))
        with m.If(o_fire & (count == 1)):
            m.d.sync += left_held.eq(1)
        if self.cover == "held":
            m.d.comb += Cover(count == 1)
        elif self.cover == "left":
            m.d.comb += Cover(left_held & (count == 0) & ~i.valid)
        elif self.cover == "rate":
            m.d.comb += Cover(streak == 3)


def _sby(work, name, mode, cover=None):
    harness = SliceHarness(cover)
    code, log, _ = run_sby(work, name, harness, harness.ports(), mode, DEPTH)
    return code, log


@pytest.fixture(scope="module")
def work():
    return formal_dir("ready_slice")


def test_ready_slice_proof(work):
    code, log = _sby(work, "prove", "prove")
    assert code == 0 and "PASS" in log, f"the proof failed (see {work / 'prove'}):\n{log[-3000:]}"


@pytest.mark.parametrize("cover", ["held", "left", "rate"])
def test_ready_slice_cover(work, cover):
    """The proof is not vacuous: each of these is reachable."""
    code, log = _sby(work, f"cover_{cover}", "cover", cover)
    assert code == 0 and "PASS" in log, f"cover {cover} not reached:\n{log[-3000:]}"
