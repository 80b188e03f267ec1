# amaranth: UnusedElaboratable=no
"""The offset decoder's mask builder on its own, in the Amaranth simulator, against golden.

Each job's kept indices are golden's decode of golden's code of a random mask
(:func:`golden.offsets.decode_offsets` of :func:`golden.offsets.encode_offsets`); the builder's
beats must be that mask, ``lanes`` bits per beat (:func:`sim.offsets.mask_beats`, the Python
reference), under the four stall patterns (none, input idles only, output back-pressure only,
both), a long consumer stall, aborts, and ``i_done`` raised with the last index. A stream monitor
(:func:`sim.streams.stream_monitor`) checks the stream rules on both streams.
"""

import numpy as np
import pytest
from amaranth.sim import Simulator

import golden
from rtl.params import FocusParams
from rtl.sec.mask_builder import INDEX_FIFO_DEPTH, MaskBuilder
from sim.offsets import mask_beats, random_mask
from sim.streams import Stalls, stream_monitor, unpack

SMALL = FocusParams(tokens=64, lanes=4, word_bits=8)
SHAPES = [SMALL, FocusParams(tokens=64, lanes=1, word_bits=8),
          FocusParams(tokens=100, lanes=3, word_bits=8),
          FocusParams(tokens=256, lanes=8, word_bits=16)]


def tag(p):
    return p.tag


def golden_jobs(p, count, seed):
    """``count`` jobs ``(M, indices)``: the edges (no kept token, every token, only the last one,
    M = 1) and random masks (M over 1 .. tokens, all densities, clustered, long gaps), the
    indices decoded by golden from golden's code."""
    rng = np.random.default_rng(seed)
    masks = [np.zeros(p.tokens, bool), np.ones(p.tokens, bool), np.ones(1, bool),
             np.zeros(1, bool), np.eye(1, p.tokens, p.tokens - 1, dtype=bool)[0]]
    while len(masks) < count:
        masks.append(random_mask(int(rng.integers(1, p.tokens + 1)), rng))
    jobs = []
    for mask in masks[:count]:
        words, nbits = golden.encode_offsets(mask, None, p.word_bits)
        decoded = golden.decode_offsets(words, nbits, mask.size, p.word_bits)
        assert np.array_equal(decoded, mask)
        jobs.append((int(mask.size), np.flatnonzero(decoded).tolist()))
    return jobs


def run_builder(p, jobs, *, idle=None, backpressure=None, seed=0, early_done=False,
                abort=None, max_cycles=200_000):
    """Run ``jobs`` ``[(M, indices), ...]`` through a :class:`MaskBuilder`, one after the other.

    ``idle`` and ``backpressure`` are stall probabilities (or :class:`Stalls`) for ``i_stream``
    and ``o_stream``. ``i_done`` rises in the cycle after the last index's transfer, or with the
    last index (``early_done``), or in the cycle after ``start`` for a job with none. ``abort``
    maps a job number to the count of indices after which ``abort`` rises and stays high until
    the next ``start`` (the decoder's ``error``). Returns, per job, ``beats`` (payloads),
    ``start`` (the cycle of ``start``), ``last`` (the cycle of the final beat's transfer, or None)
    and ``idle`` (the first cycle after the indices in which ``busy`` is low).
    """
    dut = MaskBuilder(p)
    idle = Stalls.of(idle, seed=f"{seed}:i_stream")
    backpressure = Stalls.of(backpressure, seed=f"{seed}:o_stream")
    abort = abort or {}
    results = [{"beats": [], "last": None} for _ in jobs]
    state = {"job": 0, "done": False}

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(stream_monitor(dut.i_stream, "i_stream"), background=True)
    sim.add_testbench(stream_monitor(dut.o_stream, "o_stream"), background=True)

    async def driver(ctx):
        cycle = 0
        for k, (M, indices) in enumerate(jobs):
            state["job"] = k
            ctx.set(dut.M, M)
            ctx.set(dut.start, 1)
            ctx.set(dut.i_done, 0)
            ctx.set(dut.abort, 0)
            await ctx.tick()
            results[k]["start"] = cycle
            cycle += 1
            ctx.set(dut.start, 0)
            stop = abort.get(k)
            for sent, index in enumerate(indices):
                if sent == stop:
                    break
                while idle():
                    await ctx.tick()
                    cycle += 1
                ctx.set(dut.i_stream.payload, index)
                ctx.set(dut.i_stream.valid, 1)
                if early_done and sent == len(indices) - 1:
                    ctx.set(dut.i_done, 1)
                while True:
                    _, _, ready = await ctx.tick().sample(dut.i_stream.ready)
                    cycle += 1
                    if ready:
                        break
                ctx.set(dut.i_stream.valid, 0)
            ctx.set(dut.abort if stop is not None else dut.i_done, 1)
            count = 0 if stop is not None else -(-M // p.lanes)
            while True:
                _, _, busy = await ctx.tick().sample(dut.busy)
                cycle += 1
                if not busy and "idle" not in results[k]:
                    results[k]["idle"] = cycle - 1
                if "idle" in results[k] and len(results[k]["beats"]) >= count:
                    break
        state["done"] = True

    async def sink(ctx):
        cycle = 0
        while True:
            ctx.set(dut.o_stream.ready, not backpressure())
            _, _, valid, ready, payload = await ctx.tick().sample(
                dut.o_stream.valid, dut.o_stream.ready, dut.o_stream.payload)
            if valid and ready:
                result = results[state["job"]]
                result["beats"].append(unpack(payload))
                result["last"] = cycle
            cycle += 1

    async def watchdog(ctx):
        for _ in range(max_cycles):
            await ctx.tick()
        raise AssertionError(f"MaskBuilder timed out after {max_cycles} cycles in job "
                             f"{state['job']} of {len(jobs)}")

    sim.add_testbench(driver)
    sim.add_testbench(sink, background=True)
    sim.add_testbench(watchdog, background=True)
    sim.run()
    return results


def expected_beats(p, M, indices):
    mask = np.zeros(M, bool)
    mask[indices] = True
    return mask_beats(mask, p.lanes)


def check(p, jobs, results):
    for k, ((M, indices), result) in enumerate(zip(jobs, results, strict=True)):
        assert result["beats"] == expected_beats(p, M, indices), f"job {k}: M {M}, {indices}"


@pytest.mark.parametrize("p", SHAPES, ids=tag)
def test_masks_match_golden(p):
    """No stalls: golden's masks, and each job's final beat within n + ceil(M/lanes) + 3 cycles
    of ``start``, the builder idle the cycle after it is written."""
    jobs = golden_jobs(p, 60, seed=p.tokens + p.lanes)
    results = run_builder(p, jobs)
    check(p, jobs, results)
    for (M, indices), result in zip(jobs, results, strict=True):
        beats = -(-M // p.lanes)
        assert result["last"] - result["start"] <= len(indices) + beats + 3, (M, indices)
        assert result["idle"] == result["last"], (M, indices, result)


@pytest.mark.parametrize("stalls", [(0.0, 0.0), (0.3, 0.0), (0.0, 0.3), (0.3, 0.3)],
                         ids=["none", "idle", "backpressure", "both"])
@pytest.mark.parametrize("p", [SMALL, SHAPES[2]], ids=tag)
def test_under_stalls(p, stalls):
    """The four stall patterns: input idles only, output back-pressure only, both, neither."""
    idle, backpressure = stalls
    jobs = golden_jobs(p, 50, seed=7)
    check(p, jobs, run_builder(p, jobs, idle=idle, backpressure=backpressure, seed=3))


def test_long_backpressure_fills_the_queue():
    """A consumer stall far longer than the queue: the builder stops, the queue fills
    (``i_stream.ready`` falls after INDEX_FIFO_DEPTH indices), nothing is lost."""
    p = SMALL
    jobs = [(64, list(range(0, 64, 3))), *golden_jobs(p, 10, seed=9)]
    results = run_builder(p, jobs, backpressure=Stalls(windows=[(3, 150)]))
    check(p, jobs, results)
    assert results[0]["last"] >= 150


def test_i_done_with_the_last_index():
    """``i_done`` may rise while the last index is still offered."""
    jobs = golden_jobs(SMALL, 40, seed=5)
    check(SMALL, jobs, run_builder(SMALL, jobs, early_done=True, idle=0.3, backpressure=0.3,
                                   seed=1))


def test_empty_job_timing():
    """A job with no kept token, ``i_done`` from the cycle after ``start``: its first beat is
    written in that cycle and one beat follows per cycle, the final one in cycle
    start + ceil(M/lanes); ``busy`` is low the cycle after."""
    p = SMALL
    jobs = [(M, []) for M in (1, 4, 5, 64)]
    for (M, _), result in zip(jobs, run_builder(p, jobs), strict=True):
        assert result["beats"] == expected_beats(p, M, [])
        assert result["last"] == result["start"] + -(-M // p.lanes) + 1
        assert result["idle"] == result["last"]


def test_index_latency_and_queue_depth():
    """An index transferred in cycle t reaches the queue's head and its beat in cycle t + 2;
    with ``i_done`` from t + 1, that (final) beat is written in t + 3 and taken in t + 4. With the
    consumer stalled and every index in a beat of its own, the builder takes INDEX_FIFO_DEPTH + 2
    indices (two set their beats, one waiting in the output register) before
    ``i_stream.ready`` falls."""
    p = SMALL
    one = run_builder(p, [(4, [2])])[0]
    assert one["beats"] == expected_beats(p, 4, [2])
    assert one["last"] == (one["start"] + 1) + 4
    # Indices in distinct beats and a consumer that never takes: count what the builder accepts.
    dut = MaskBuilder(p)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    taken = []

    async def bench(ctx):
        ctx.set(dut.M, 64)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for index in range(0, 64, 4):
            ctx.set(dut.i_stream.payload, index)
            ctx.set(dut.i_stream.valid, 1)
            for _ in range(20):
                _, _, ready = await ctx.tick().sample(dut.i_stream.ready)
                if ready:
                    taken.append(index)
                    break
            else:
                return
    sim.add_testbench(bench)
    sim.run()
    assert len(taken) == INDEX_FIFO_DEPTH + 2


@pytest.mark.parametrize("idle", [0.0, 0.3], ids=["noidle", "idle"])
def test_abort_drops_the_job_and_recovers(idle):
    """``abort`` mid-job: every beat written before it is a correct beat of the mask, no beat
    follows, ``busy`` falls, and the next job (started while ``abort`` is still high, as the
    decoder's ``error`` is) is built correctly."""
    p = SMALL
    jobs = golden_jobs(p, 24, seed=12)
    aborts = {k: len(jobs[k][1]) // 2 for k in range(0, len(jobs), 3) if jobs[k][1]}
    results = run_builder(p, jobs, idle=idle, backpressure=idle, abort=aborts, seed=2)
    for k, ((M, indices), result) in enumerate(zip(jobs, results, strict=True)):
        want = expected_beats(p, M, indices)
        if k in aborts:
            assert result["beats"] == want[:len(result["beats"])], k
            assert len(result["beats"]) < len(want), k
        else:
            assert result["beats"] == want, k
