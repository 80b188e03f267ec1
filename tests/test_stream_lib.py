# amaranth: UnusedElaboratable=no
"""The stream library of ``rtl/lib`` in the Amaranth simulator, each block against a Python model
under the four stall patterns (none, input idles only, output back-pressure only, both) with the
stream-rule monitor of :mod:`sim.streams` on every port, plus a consumer stall longer than any
buffer, the documented latencies, and the skid buffer's stream rules proven formally
(yowasp-sby, with cover tasks)."""

import random

import pytest
from amaranth.hdl import (
    Assert,
    ClockDomain,
    Cover,
    Module,
    Mux,
    Signal,
)
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator
from helpers import StreamStageHarness, formal_dir, run_sby

from rtl.lib.stream_buffer import StreamBuffer
from rtl.lib.stream_gate import StreamGate
from rtl.lib.stream_queue import StreamQueue
from rtl.lib.stream_zip import StreamZip
from sim.streams import CLOCK_PERIOD, Stalls, run_streams, stall_sources, stream_monitor, stream_put

BEAT = data.StructLayout({"value": 12, "last": 1})
STALL = 0.35
#: (id, which ports stall): the four patterns of every data test.
PATTERNS = [("none", ()), ("idles", ("in",)), ("backpressure", ("out",)),
            ("both", ("in", "out"))]


def beats(n, seed, layout=BEAT):
    rng = random.Random(seed)
    if layout is BEAT:
        return [{"value": rng.randrange(1 << 12), "last": int(i == n - 1)} for i in range(n)]
    return [rng.randrange(1 << layout) for _ in range(n)]


def stalls_for(pattern, inputs, outputs):
    """``{port: probability}``: ``STALL`` on the ports ``pattern`` names, 0 elsewhere."""
    which = dict(PATTERNS)[pattern]
    return {**{port: STALL if "in" in which else 0.0 for port in inputs},
            **{port: STALL if "out" in which else 0.0 for port in outputs}}


# ---- StreamBuffer --------------------------------------------------------------------------------

KEEP_LAST = pytest.mark.parametrize("keep_last", [True, False], ids=["keep", "load"])


@KEEP_LAST
@pytest.mark.parametrize("skid", [False, True], ids=["register", "skid"])
@pytest.mark.parametrize("pattern", [p for p, _ in PATTERNS])
def test_buffer_is_identity(skid, pattern, keep_last):
    """Every beat leaves once, in order (the model: the identity), under each stall pattern."""
    seed = 10 * skid + len(pattern) + 100 * keep_last
    want = beats(300, seed)
    got, stats = run_streams(StreamBuffer(BEAT, skid=skid, keep_last=keep_last),
                             {"i_stream": want},
                             {"o_stream": len(want)},
                             stalls=stalls_for(pattern, ["i_stream"], ["o_stream"]), seed=seed)
    assert got["o_stream"] == want
    if pattern == "none":
        assert stats["cycles"] == len(want) + 1          # latency 1, one beat per cycle


@KEEP_LAST
@pytest.mark.parametrize("skid", [False, True], ids=["register", "skid"])
def test_buffer_long_stall(skid, keep_last):
    """A consumer that holds ``ready`` low for 200 cycles (longer than any storage)."""
    want = beats(50, 3)
    stalls = {"i_stream": Stalls(0.2, 1), "o_stream": Stalls(0.2, 2, windows=[(5, 200)])}
    got, _ = run_streams(StreamBuffer(BEAT, skid=skid, keep_last=keep_last), {"i_stream": want},
                         {"o_stream": len(want)}, stalls=stalls)
    assert got["o_stream"] == want


@KEEP_LAST
@pytest.mark.parametrize("skid, storage", [(False, 1), (True, 2)], ids=["register", "skid"])
def test_buffer_storage_and_ready_path(skid, storage, keep_last):
    """With ``o_stream`` stalled the buffer takes ``storage`` beats and then stops; the skid
    buffer's ``i_stream.ready`` does not follow ``o_stream.ready`` within a cycle (it is a
    register), the output register's does."""
    dut = StreamBuffer(8, skid=skid, keep_last=keep_last)
    result = {}

    async def testbench(ctx):
        i, o = dut.i_stream, dut.o_stream
        ctx.set(i.valid, 1)
        taken = 0
        for n in range(6):
            ctx.set(i.payload, n)
            _, _, ready = await ctx.tick().sample(i.ready)
            taken += ready
        result["taken"] = taken
        # The output is full and stalled; raise o.ready and look at i.ready in the same cycle.
        before = ctx.get(i.ready)
        ctx.set(o.ready, 1)
        result["follows"] = ctx.get(i.ready) != before

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(testbench)
    sim.run()
    assert result["taken"] == storage
    assert result["follows"] == (not skid)


@pytest.mark.parametrize("skid", [False, True], ids=["register", "skid"])
def test_buffer_payload_between_beats(skid):
    """After a beat has left and while nothing is offered, ``keep_last`` keeps the beat in the
    output payload register; without it the register follows whatever ``i_stream`` carries."""
    seen = {}
    for keep_last in (True, False):
        dut = StreamBuffer(8, skid=skid, keep_last=keep_last)

        async def testbench(ctx, dut=dut, keep_last=keep_last):
            i, o = dut.i_stream, dut.o_stream
            ctx.set(o.ready, 1)
            ctx.set(i.valid, 1)
            ctx.set(i.payload, 0x5A)
            await ctx.tick()
            ctx.set(i.valid, 0)
            ctx.set(i.payload, 0x33)
            await ctx.tick().repeat(3)
            seen[keep_last] = (ctx.get(o.valid), ctx.get(o.payload))

        sim = Simulator(dut)
        sim.add_clock(CLOCK_PERIOD)
        sim.add_testbench(testbench)
        sim.run()
    assert seen == {True: (0, 0x5A), False: (0, 0x33)}


@pytest.mark.parametrize("name", ["skid", "keep_last"])
def test_buffer_rejects_bad_flags(name):
    with pytest.raises(TypeError, match=rf"^{name} must be a bool, not 1$"):
        StreamBuffer(8, **{name: 1})


# ---- StreamQueue ---------------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [1, 2, 3, 16])
@pytest.mark.parametrize("pattern", [p for p, _ in PATTERNS])
def test_queue_is_fifo(depth, pattern):
    """Every beat leaves once, in order (the model: a FIFO), under each stall pattern."""
    seed = depth * 7 + len(pattern)
    want = beats(200, seed)
    got, stats = run_streams(StreamQueue(BEAT, depth), {"i_stream": want},
                             {"o_stream": len(want)},
                             stalls=stalls_for(pattern, ["i_stream"], ["o_stream"]), seed=seed)
    assert got["o_stream"] == want
    if pattern == "none":
        # SyncFIFOBuffered's timing: latency 2 at full rate from depth 3; half rate below.
        n = len(want)
        assert stats["cycles"] == {1: 2 * n, 2: 2 * n + 1}.get(depth, n + 2)


@pytest.mark.parametrize("depth", [1, 4])
def test_queue_long_stall_and_level(depth):
    """A consumer stalled for 150 cycles: the queue fills to ``depth`` (``level`` says so) and
    takes nothing more; then it drains in order."""
    dut = StreamQueue(BEAT, depth)
    want = beats(40, depth)
    result = {"max_level": 0, "taken_while_stalled": 0}

    async def producer(ctx):
        await stream_put(ctx, dut.i_stream, want)

    async def consumer(ctx):
        got = []
        for cycle in range(2000):
            stalled = cycle < 150
            ctx.set(dut.o_stream.ready, not stalled)
            _, _, valid, ready, payload, level, i_fire = await ctx.tick().sample(
                dut.o_stream.valid, dut.o_stream.ready, dut.o_stream.payload, dut.level,
                dut.i_stream.valid & dut.i_stream.ready)
            result["max_level"] = max(result["max_level"], level)
            result["taken_while_stalled"] += stalled and i_fire
            if valid and ready:
                got.append({"value": payload.value, "last": payload.last})
            if len(got) == len(want):
                break
        result["got"] = got

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(stream_monitor(dut.o_stream, "o_stream"), background=True)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    assert result["got"] == want
    assert result["max_level"] == depth == result["taken_while_stalled"]


@pytest.mark.parametrize("depth", [0, -1, 2.0, True])
def test_queue_rejects_bad_depth(depth):
    with pytest.raises(ValueError, match=rf"^depth must be a positive integer, not {depth!r}$"):
        StreamQueue(8, depth)


# ---- StreamZip -----------------------------------------------------------------------------------

class _ClockedZip(wiring.Component):
    """A StreamZip with a ``sync`` domain for the simulator's clock (the zip has no registers)."""

    def __init__(self, a_shape, b_shape):
        self.zip = StreamZip(a_shape, b_shape)
        super().__init__(dict(self.zip.signature.members))

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.submodules.zip = self.zip
        wiring.connect(m, wiring.flipped(self), self.zip)
        return m


@pytest.mark.parametrize("pattern", [p for p, _ in PATTERNS])
def test_zip_pairs(pattern):
    """The k-th output is the k-th beat of each input (the model: Python's ``zip``); with no
    stalls one pair per cycle and latency 0."""
    seed = len(pattern)
    a, b = beats(250, seed), beats(250, seed + 1, 5)
    ports = ["a_stream", "b_stream"]
    # The inputs stall independently, so either side may come first.
    got, stats = run_streams(_ClockedZip(BEAT, 5), {"a_stream": a, "b_stream": b},
                             {"o_stream": len(a)},
                             stalls=stalls_for(pattern, ports, ["o_stream"]), seed=seed)
    assert got["o_stream"] == [{"a": x, "b": y} for x, y in zip(a, b, strict=True)]
    assert stats["transfers"] == {"a_stream": 250, "b_stream": 250, "o_stream": 250}
    if pattern == "none":
        assert stats["cycles"] == len(a)


def test_zip_waits_for_the_late_side():
    """One side offers all its beats long before the other: nothing leaves until the other
    side comes; its beats wait unchanged (the monitor checks), then pair up in order."""
    a, b = beats(30, 8), beats(30, 9, 5)
    stalls = {"a_stream": Stalls(0.0), "b_stream": Stalls(0.1, 4, windows=[(0, 120)]),
              "o_stream": Stalls(0.2, 5)}
    got, stats = run_streams(_ClockedZip(BEAT, 5), {"a_stream": a, "b_stream": b},
                             {"o_stream": 30}, stalls=stalls)
    assert got["o_stream"] == [{"a": x, "b": y} for x, y in zip(a, b, strict=True)]
    assert stats["last_output"] >= 120


# ---- StreamGate ----------------------------------------------------------------------------------

class _OpenGate(wiring.Component):
    """A StreamGate held open, for :func:`run_streams` (which drives only stream ports)."""

    def __init__(self, shape):
        self.gate = StreamGate(shape)
        super().__init__({"i_stream": In(stream.Signature(shape)),
                          "o_stream": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()        # the gate has no registers: clock the harness
        m.submodules.gate = gate = self.gate
        wiring.connect(m, wiring.flipped(self.i_stream), gate.i_stream)
        wiring.connect(m, gate.o_stream, wiring.flipped(self.o_stream))
        m.d.comb += gate.open.eq(1)
        return m


@pytest.mark.parametrize("pattern", [p for p, _ in PATTERNS])
def test_gate_open_is_identity(pattern):
    want = beats(200, 40 + len(pattern))
    got, stats = run_streams(_OpenGate(BEAT), {"i_stream": want}, {"o_stream": len(want)},
                             stalls=stalls_for(pattern, ["i_stream"], ["o_stream"]), seed=2)
    assert got["o_stream"] == want
    if pattern == "none":
        assert stats["cycles"] == len(want)              # latency 0


@pytest.mark.parametrize("pattern", [p for p, _ in PATTERNS])
def test_gate_drains_then_holds_then_opens(pattern):
    """Closed with ``drain``: the first beats are taken and dropped (nothing on ``o_stream``);
    closed without ``drain``: nothing moves for 50 cycles; open: the remaining beats pass in
    order (the model: ``beats[dropped:]``)."""
    dut = StreamGate(BEAT)
    want = beats(120, 60 + len(pattern))
    dropped = 37
    sources = stall_sources(stalls_for(pattern, ["i"], ["o"]), ["i", "o"], seed=6)
    result = {"got": [], "moved_while_held": 0}

    async def producer(ctx):
        await stream_put(ctx, dut.i_stream, want, sources["i"])

    async def control(ctx):
        ctx.set(dut.drain, 1)
        taken = 0
        while taken < dropped:
            _, _, fire = await ctx.tick().sample(dut.i_stream.valid & dut.i_stream.ready)
            taken += fire
        ctx.set(dut.drain, 0)
        for _ in range(50):
            _, _, fire = await ctx.tick().sample(dut.i_stream.valid & dut.i_stream.ready)
            result["moved_while_held"] += fire
        ctx.set(dut.open, 1)

    async def consumer(ctx):
        o = dut.o_stream
        for _ in range(5000):
            ctx.set(o.ready, not sources["o"]())
            _, _, valid, ready, payload = await ctx.tick().sample(o.valid, o.ready, o.payload)
            if valid and ready:
                result["got"].append({"value": payload.value, "last": payload.last})
            if len(result["got"]) == len(want) - dropped:
                break

    m = Module()
    m.domains.sync = ClockDomain()        # the gate has no registers: clock the harness
    m.submodules.dut = dut
    sim = Simulator(m)
    sim.add_clock(CLOCK_PERIOD)
    for name in ("i_stream", "o_stream"):
        sim.add_testbench(stream_monitor(getattr(dut, name), name), background=True)
    sim.add_testbench(producer)
    sim.add_testbench(control)
    sim.add_testbench(consumer)
    sim.run()
    assert result["got"] == want[dropped:]
    assert result["moved_while_held"] == 0


# ---- the skid buffer's stream rules, proven ---------------------------------------------------

WIDTH = 4
DEPTH = 8


class SkidHarness(StreamStageHarness):
    """The skid buffer under the frame of :class:`~helpers.StreamStageHarness`, and a two-entry
    model queue of the beats inside. Proven besides the output rule: every beat leaves in order
    and unchanged (the model's head), at most two beats are inside, ``i_stream.ready`` is low
    exactly when two are. Covers (one per task): the skid register full, a beat that went
    through it leaves, and a full-rate run of three back-to-back beats."""

    def __init__(self, cover=None):
        super().__init__(StreamBuffer(WIDTH, skid=True), WIDTH, cover)

    def check(self, m, i_fire, o_fire):
        skid, skid_valid = self.dut.probes["skid"], self.dut.probes["skid_valid"]
        i, o = self.dut.i_stream, self.dut.o_stream

        # The model: the beats inside, oldest first.
        count = Signal(range(4))
        head, second = Signal(WIDTH), Signal(WIDTH)
        with m.If(i_fire & ~o_fire):
            m.d.sync += count.eq(count + 1)
            with m.If(count == 0):
                m.d.sync += head.eq(i.payload)
            with m.Else():
                m.d.sync += second.eq(i.payload)
        with m.Elif(o_fire & ~i_fire):
            m.d.sync += [count.eq(count - 1), head.eq(second)]
        with m.Elif(o_fire & i_fire):
            with m.If(count == 1):
                m.d.sync += head.eq(i.payload)
            with m.Else():
                m.d.sync += [head.eq(second), second.eq(i.payload)]

        # Properties.
        m.d.comb += [Assert(count <= 2), Assert(o.valid == (count != 0)),
                     Assert(i.ready == (count != 2))]
        with m.If(o.valid):
            m.d.comb += Assert(o.payload == head)
        # The induction invariant: the skid register is the model's second beat.
        m.d.comb += Assert(skid_valid == (count == 2))
        with m.If(skid_valid):
            m.d.comb += Assert(skid == second)

        # Covers, and a count of beats that went through the skid register.
        through_skid = Signal(range(4))
        streak = Signal(range(4))
        with m.If(o_fire & (count == 2) & ~i_fire):
            m.d.sync += through_skid.eq(through_skid + (through_skid != 3))
        m.d.sync += streak.eq(Mux(o_fire & i_fire, streak + (streak != 3), 0))
        if self.cover == "full":
            m.d.comb += Cover(count == 2)
        elif self.cover == "through":
            m.d.comb += Cover((through_skid != 0) & o_fire & (count == 1) & ~i_fire)
        elif self.cover == "rate":
            m.d.comb += Cover(streak == 3)


def _sby(work, name, mode, cover=None):
    harness = SkidHarness(cover)
    code, log, _ = run_sby(work, name, harness, harness.ports(), mode, DEPTH)
    return code, log


@pytest.fixture(scope="module")
def work():
    return formal_dir("stream_buffer")


@pytest.mark.slow
def test_skid_buffer_proof(work):
    code, log = _sby(work, "prove", "prove")
    assert code == 0 and "PASS" in log, f"the proof failed (see {work / 'prove'}):\n{log[-3000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("cover", ["full", "through", "rate"])
def test_skid_buffer_cover(work, cover):
    """The proof is not vacuous: each of these is reachable."""
    code, log = _sby(work, f"cover_{cover}", "cover", cover)
    assert code == 0 and "PASS" in log, f"cover {cover} not reached:\n{log[-3000:]}"
