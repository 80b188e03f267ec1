# amaranth: UnusedElaboratable=no
"""The SIC window buffer and the norm at window entry against Python models (Amaranth sim)."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from rtl.params import FocusParams
from rtl.sic.vector_norm import VectorNorm, norm_squarers
from rtl.sic.window_buffer import WindowBuffer, window_slots
from sim.streams import CLOCK_PERIOD


def _run(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("window, lanes", [(8, 3), (6, 7), (16, 1)])
def test_window_buffer_matches_model(window, lanes):
    """Random writes (strictly increasing positions with gaps, some far apart), lookups of any
    offset, idle cycles (outputs must hold), clears in the middle (old slots must not match), and
    reads of a slot in the cycle it is overwritten (the old contents must come back). Latency 2:
    the outputs give the lookups issued at the ``r_en`` cycle before the last one."""
    p = FocusParams(dim=3, window=window, elem_bits=6)
    slots = window_slots(p)
    dut = WindowBuffer(p, lanes)
    rng = np.random.default_rng(window * 10 + lanes)
    high = (1 << (p.elem_bits - 1)) - 1
    checked = {"hits": 0, "misses": 0, "same_cycle": 0, "zero_hits": 0}

    async def testbench(ctx):
        mem = {s: (0, [0] * p.dim, 0) for s in range(slots)}     # slot -> (position, vec, norm)
        live = set()
        pos = 0
        expected = issued = None        # the lookups in stage 2 (the outputs) and in stage 1
        for cycle in range(700):
            write = rng.random() < 0.6
            lookup = rng.random() < 0.7
            clear = rng.random() < 0.01
            if write:
                pos += int(rng.choice([1, 1, 2, 3, slots - 1, slots, 3 * slots + 1]))
                vec = rng.integers(-high - 1, high + 1, p.dim).tolist()
                # Zero norms too: a hit on a zero vector must read as not non-zero.
                norm = 0 if rng.random() < 0.2 else int(rng.integers(1, 1 << p.norm_bits))
                ctx.set(dut.w_en, 1)
                ctx.set(dut.w_pos, pos)
                ctx.set(dut.w_vec, vec)
                ctx.set(dut.w_norm, norm)
                ctx.set(dut.w_nonzero, int(norm != 0))
            else:
                ctx.set(dut.w_en, 0)
            ctx.set(dut.clear, clear)
            if lookup:
                # Positions near the newest (where candidates are), sometimes ahead of it.
                rpos = pos + int(rng.integers(-2, 3))
                offsets = [int(rng.integers(0, window)) for _ in range(lanes)]
                wants = [int(rng.random() < 0.85) for _ in range(lanes)]
                if write and lanes:            # aim one lane at the slot being overwritten
                    target = pos - slots
                    if 0 < rpos - target < slots:
                        offsets[0] = rpos - target
                        wants[0] = 1
                wants = [w and rpos - o >= 0 for w, o in zip(wants, offsets, strict=True)]
                ctx.set(dut.r_en, 1)
                ctx.set(dut.r_pos, max(rpos, 0))
                for j in range(lanes):
                    ctx.set(dut.r_offset[j], offsets[j])
                ctx.set(dut.r_want, sum(int(w) << j for j, w in enumerate(wants)))
                new = []
                for j in range(lanes):
                    q = max(rpos, 0) - offsets[j]
                    slot = q % slots
                    stored, svec, snorm = mem[slot]
                    hit = bool(wants[j]) and slot in live and stored == q
                    new.append((hit, svec if hit else None, snorm if hit else 0, slot))
                    if write and slot == pos % slots and wants[j]:
                        checked["same_cycle"] += 1
                # Two stages moving with r_en: the results are those of the lookup before.
                expected, issued = issued, new
            else:
                ctx.set(dut.r_en, 0)
            await ctx.tick()
            if clear:
                live = set()
            elif write:
                mem[pos % slots] = (pos, vec, norm)
                live.add(pos % slots)
            if expected is not None:
                for j, (hit, evec, enorm, slot) in enumerate(expected):
                    got_hit = (ctx.get(dut.hit) >> j) & 1
                    assert got_hit == hit, f"cycle {cycle}, lane {j}: hit {got_hit}, model {hit}"
                    assert ctx.get(dut.ny[j]) == enorm, f"cycle {cycle}, lane {j}: norm"
                    got_nonzero = (ctx.get(dut.nonzero) >> j) & 1
                    assert got_nonzero == (enorm != 0), f"cycle {cycle}, lane {j}: nonzero"
                    assert ctx.get(dut.slot[j]) == slot, f"cycle {cycle}, lane {j}: slot"
                    if hit:
                        assert list(ctx.get(dut.y[j])) == evec, f"cycle {cycle}, lane {j}: vector"
                    checked["hits" if hit else "misses"] += 1
                    checked["zero_hits"] += hit and enorm == 0

    _run(dut, testbench)
    assert checked["hits"] > 50 and checked["misses"] > 50, checked
    assert checked["zero_hits"] > 5, checked
    assert checked["same_cycle"] > 0, checked


def test_window_buffer_rejects_bad_lanes():
    with pytest.raises(ValueError, match=r"^lanes = 8 is out of range: it must be in \[1, 7\]$"):
        WindowBuffer(FocusParams(), 8)


@pytest.mark.parametrize("p", [FocusParams(dim=5, elem_bits=8), FocusParams(dim=3, elem_bits=16)],
                         ids=lambda p: p.tag)
def test_vector_norm_is_exact(p):
    """Random, extreme (all most-negative: the largest norm) and zero vectors."""
    rng = np.random.default_rng(p.dim)
    low, high = -(1 << (p.elem_bits - 1)), (1 << (p.elem_bits - 1)) - 1
    vectors = [[low] * p.dim, [high] * p.dim, [0] * p.dim]
    vectors += rng.integers(low, high + 1, (200, p.dim)).tolist()
    dut = VectorNorm(p)

    async def testbench(ctx):
        for vec in vectors:
            ctx.set(dut.x, vec)
            await ctx.delay(1e-9)
            assert ctx.get(dut.norm) == sum(v * v for v in vec), vec

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    sim.run()
    assert p.dim * low * low < 1 << p.norm_bits


@pytest.mark.parametrize("steps, registered",
                         [(2, False), (3, False), (7, False), (9, False),
                          (1, True), (2, True), (3, True), (6, True), (9, True)])
@pytest.mark.parametrize("p", [FocusParams(dim=32, elem_bits=8), FocusParams(dim=5, elem_bits=2),
                               FocusParams(dim=3, elem_bits=16)], ids=lambda p: p.tag)
def test_vector_norm_spread_over_steps(p, steps, registered):
    """With ``steps`` > 1, or ``registered``: ceil(V / steps) squarers, the norm in the last
    step (combinational) or from the clock edge that ends it (``registered``), for steps that
    divide V or not, more steps than elements (squarers idle in the last steps), a step held
    over several cycles (``advance`` low: the sum holds), a new vector loaded at the last step's
    ``advance`` of the previous one (``x`` changing with the edge) and one loaded after idle
    cycles, in which ``x`` holds the last vector (and ``advance`` is high, except with
    ``registered``, whose user holds it low there, as the block matcher's input register
    does)."""
    rng = np.random.default_rng(p.dim + steps)
    low, high = -(1 << (p.elem_bits - 1)), (1 << (p.elem_bits - 1)) - 1
    vectors = [[low] * p.dim, [high] * p.dim, [0] * p.dim]
    vectors += rng.integers(low, high + 1, (30, p.dim)).tolist()
    dut = VectorNorm(p, steps, registered=registered)
    assert norm_squarers(p, steps) == -(-p.dim // steps)

    async def check_norm(ctx, vec):
        assert ctx.get(dut.norm) == sum(v * v for v in vec), vec

    async def testbench(ctx):
        ctx.set(dut.x_next, vectors[0])
        ctx.set(dut.load, 1)
        await ctx.tick()
        for n, vec in enumerate(vectors):
            ctx.set(dut.x, vec)
            ctx.set(dut.load, 0)
            for step in range(steps):
                ctx.set(dut.step, step)
                if (n + step) % 4 == 0:             # hold this step for a cycle
                    ctx.set(dut.advance, 0)
                    await ctx.tick()
                ctx.set(dut.advance, 1)
                if step == steps - 1:
                    if not registered:
                        await ctx.delay(1e-9)
                        await check_norm(ctx, vec)
                    if n + 1 < len(vectors):
                        if n % 3 == 2:              # idle cycles before the next vector
                            await ctx.tick()
                            ctx.set(dut.step, 0)
                            if registered:
                                await check_norm(ctx, vec)
                                ctx.set(dut.advance, 0)
                            await ctx.tick().repeat(n % 2 + 1)
                            if registered:
                                await check_norm(ctx, vec)      # held while idle
                                ctx.set(dut.advance, 1)
                        ctx.set(dut.x_next, vectors[n + 1])
                        ctx.set(dut.load, 1)
                await ctx.tick()
                if registered and step == steps - 1 and not (n % 3 == 2 and n + 1 < len(vectors)):
                    await check_norm(ctx, vec)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def test_vector_norm_rejects_bad_steps():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=r"^steps must be a positive integer, not "):
            VectorNorm(FocusParams(), bad)
