# amaranth: UnusedElaboratable=no
"""The block matcher's stage Components on their own (Amaranth simulator), each against a Python
reference that does not share its code: the mean divider, the best-candidate selection (ties),
the comparator bank's tags, the map lookup, the input register, the output stage (mean drain)
and the threshold table.

The stream tests run the four stall patterns of ``tests/test_block_matcher.py`` (none, input
idles only, output back-pressure only, both) with protocol monitors on every stream port
(:func:`sim.streams.run_streams`).
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator
from helpers import stall_cross

from golden.similarity import dot, sqnorm
from rtl.params import FocusParams
from rtl.sic.best_candidate import SELECT_STAGES, BestCandidate
from rtl.sic.comparator_bank import ComparatorBank
from rtl.sic.match_layouts import CANDIDATES, matcher_rounds
from rtl.sic.mean_divider import MeanDivider
from rtl.sic.output_stage import OutputStage
from rtl.sic.serial_best_candidate import SerialBestCandidate
from rtl.sic.threshold_table import ThresholdTable
from rtl.sic.token_register import TokenRegister
from rtl.sic.unique_indexer import UniqueIndexer
from sim.streams import (
    CLOCK_PERIOD,
    run_streams,
    stall_sources,
    stream_get,
    stream_monitor,
    stream_put,
    unpack,
    watchdog,
)

SMALL = dict(dim=4, window=16, tile=24, layers=4)


def small(**changes):
    return FocusParams(**{**SMALL, **changes})


def patterns(inputs, outputs, p=0.3):
    """The four stall patterns for a component's ``inputs`` and ``outputs`` stream ports."""
    return {
        "no-stalls": 0.0,
        "idles": {port: p for port in inputs},
        "backpressure": {port: p for port in outputs},
        "both": p,
    }


STALL_IDS = list(patterns((), ()))


def stalls_for(name, inputs=("i_stream",), outputs=("o_stream",)):
    return patterns(inputs, outputs)[name]


# ---- MeanDivider ------------------------------------------------------------------------------

def reference_mean(t, c):
    """The rounded mean t / c, halves away from zero, with exact rationals."""
    q = Fraction(t, c)
    rounded = math.floor(abs(q) + Fraction(1, 2))
    return rounded if q >= 0 else -rounded


def divider_groups(p, seed):
    """(sums, count) groups: t = 0, negative t, the extremes t = c * -2**(e-1) (all elements most
    negative) and c * (2**(e-1) - 1), exact halves of both signs, c = 1, 2, 3, tile - 1 and
    tile, and random groups."""
    low, high = -(1 << (p.elem_bits - 1)), (1 << (p.elem_bits - 1)) - 1
    rng = np.random.default_rng(seed)
    sums = {}                                       # count -> element sums
    for c in sorted({1, 2, 3, p.tile - 1, p.tile} - {0}):
        sums[c] = [0, c * low, c * high, -1, 1, c * low + 1, -c, c]
        if c % 2 == 0:
            sums[c] += [c // 2, -(c // 2), 3 * c // 2, -(3 * c // 2)]
    groups = []
    for c, ts in sums.items():
        ts = [t for t in ts if c * low <= t <= c * high]
        ts += [0] * (-len(ts) % p.dim)
        groups += [(ts[n:n + p.dim], c) for n in range(0, len(ts), p.dim)]
    for _ in range(40):
        c = int(rng.integers(1, p.tile + 1))
        groups.append((rng.integers(c * low, c * high + 1, p.dim).tolist(), c))
    return groups


@pytest.mark.parametrize("stalls", STALL_IDS)
@pytest.mark.parametrize("p", [small(), FocusParams(dim=3, elem_bits=2, tile=7),
                               FocusParams(dim=2, elem_bits=16, tile=300)],
                         ids=lambda p: f"e{p.elem_bits}_tile{p.tile}")
def test_mean_divider_rounds_like_exact_rationals(p, stalls):
    groups = divider_groups(p, p.tile)
    inputs = [{"sums": sums, "count": c} for sums, c in groups]
    outputs, stats = run_streams(MeanDivider(p), {"i_stream": inputs},
                                 {"o_stream": len(groups)}, stalls=stalls_for(stalls), seed=3)
    want = [[reference_mean(t, c) for t in sums] for sums, c in groups]
    assert outputs["o_stream"] == want
    if stalls == "no-stalls":
        # One group per elem_bits + 2 cycles, 2 for a group of one.
        assert stats["cycles"] == sum(2 if c == 1 else p.elem_bits + 2 for _, c in groups)


# ---- BestCandidate ----------------------------------------------------------------------------

#: Cosine**2 classes with several (dot**2, ny) representations each: exact ties across lanes.
RATIOS = [Fraction(1), Fraction(2), Fraction(3, 2), Fraction(5, 7)]
#: theta_q = 128 at F = 8: the token's bound theta_q**2 * nx / 2**16 is nx / 4, so nx = 2, 4, 6,
#: 8 put it exactly on a ratio (not similar: the test is strict) and other nx between them.
THETA_Q = 128


def token_bound(p, nx, theta_q=THETA_Q):
    """The token's similarity bound on dot**2 / ny: theta_q**2 * nx / 2**(2F)."""
    return Fraction(theta_q * theta_q * nx, 1 << (2 * p.theta_bits))


def scored_rounds(p, tokens, seed):
    """``tokens`` tokens of ``rounds`` beats; candidate c has slot c, so the winner is known by
    its slot. Eligible candidates take a ratio from a few classes, scaled, so exact ties (between
    candidates, and with the token's threshold) are common; lanes past c = 7 look like missing
    candidates (not eligible, norm 0). Returns the beats, the expected (winner or None, tag) per
    token, and the numbers of tokens whose best candidate ties with another one and that have an
    eligible candidate but no similar one."""
    rng = np.random.default_rng(seed)
    k, rounds = p.comparators, matcher_rounds(p)
    beats, expected, ties, below = [], [], 0, 0
    for n in range(tokens):
        cands = {}
        nx = int(rng.integers(1, 12))
        tag = {"tile_first": int(rng.integers(0, 2)), "tile_last": int(rng.integers(0, 2)),
               "job_last": int(n == tokens - 1), "own_slot": int(rng.integers(0, 16)),
               "position": int(rng.integers(0, 1 << 32))}
        for r in range(rounds):
            lanes = []
            for j in range(k):
                c = r * k + j + 1
                if c > CANDIDATES or rng.random() < 0.3:
                    lane = {"eligible": 0,
                            "dsq": 0 if c > CANDIDATES else int(rng.integers(0, 50)),
                            "ny": 0 if c > CANDIDATES else int(rng.integers(0, 50)), "slot": c,
                            "code": c % 8}
                else:
                    ratio = RATIOS[int(rng.integers(0, len(RATIOS)))]
                    scale = int(rng.integers(1, 6))
                    lane = {"eligible": 1, "dsq": ratio.numerator * scale,
                            "ny": ratio.denominator * scale, "slot": c, "code": c}
                lanes.append(lane)
                cands[c] = lane
            # The token's norm counts on its last round only; earlier rounds carry noise.
            beats.append({"cands": lanes, "nx": nx if r == rounds - 1 else int(rng.integers(0, 99)),
                          "tag": {**tag, "first": int(r == 0), "last": int(r == rounds - 1)}})
        bound = token_bound(p, nx)
        cosines = {c: Fraction(lane["dsq"], lane["ny"]) for c, lane in sorted(cands.items())
                   if lane["eligible"]}
        # Golden's rule, directly: among the similar candidates the largest cosine, the lowest c
        # on equal cosines (max() keeps the first maximum).
        similar = {c: q for c, q in cosines.items() if q > bound}
        best = max(similar, key=similar.get) if similar else None
        ties += best is not None and list(similar.values()).count(similar[best]) > 1
        below += bool(cosines) and not similar
        expected.append((best, {**tag, "first": int(rounds == 1), "last": 1}))
    return beats, expected, ties, below


def run_select(p, beats, count, stalls="no-stalls", seed=0, theta_q=THETA_Q, select=BestCandidate):
    dut = select(p)
    sources = stall_sources(stalls_for(stalls), ("i_stream", "o_stream"), seed)
    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    transfers = {"i_stream": [], "o_stream": []}
    for port in ("i_stream", "o_stream"):
        sim.add_testbench(stream_monitor(getattr(dut, port), port, transfers[port]),
                          background=True)
    received = []

    async def put(ctx):
        ctx.set(dut.theta_sq, theta_q * theta_q)
        await stream_put(ctx, dut.i_stream, beats, sources["i_stream"])

    async def get(ctx):
        received.extend(await stream_get(ctx, dut.o_stream, count, sources["o_stream"]))

    sim.add_testbench(put)
    sim.add_testbench(get)
    sim.run()
    cycles = transfers["o_stream"][-1] - transfers["i_stream"][0] + 1
    return received, cycles


@pytest.mark.parametrize("comparators, stalls", stall_cross(range(1, 8), STALL_IDS))
def test_best_candidate_breaks_ties_to_the_smallest_c(comparators, stalls):
    """The best candidate, and its threshold test, against golden's rule computed with exact
    rationals: ties between candidates go to the lowest c, a candidate exactly on the token's
    bound is not similar, and only the last round's norm counts."""
    check_ties(BestCandidate, comparators, stalls)


@pytest.mark.parametrize("stalls", STALL_IDS)
def test_serial_best_candidate_breaks_ties_to_the_smallest_c(stalls):
    """The same for the one-comparator selection's shared test (its schedule's seven tests)."""
    check_ties(SerialBestCandidate, 1, stalls)


def check_ties(select, comparators, stalls):
    p = small(comparators=comparators)
    beats, expected, ties, below = scored_rounds(p, 60, seed=comparators)
    outputs, cycles = run_select(p, beats, len(expected), stalls, seed=comparators,
                                 select=select)
    for n, (got, (best, tag)) in enumerate(zip(outputs, expected, strict=True)):
        assert got["tag"] == tag, f"token {n}: tag"
        assert got["match"] == (best is not None), f"token {n}: match"
        if best is not None:
            assert got["slot"] == best, f"token {n}: winner c = {got['slot']}, expected {best}"
            assert got["code"] == best, f"token {n}: the winner's code"
    assert ties > 5, "too few exact ties for the best candidate"
    assert below > 5, "too few tokens whose best eligible candidate is below the threshold"
    if stalls == "no-stalls":
        rounds = matcher_rounds(p)
        assert cycles == len(expected) * rounds + SELECT_STAGES


def test_best_candidate_exact_tie_in_one_round_and_across_rounds():
    """Equal cosines from different numbers (4/2 = 2/1): c = 1 beats c = 2 with 7 comparators
    (one round) and with 1 comparator (across rounds); a strictly better c = 7 wins; a best
    candidate exactly on the threshold is not similar, and one just above it is."""
    for select, comparators in ((BestCandidate, 7), (BestCandidate, 1),
                                (SerialBestCandidate, 1)):
        p = small(comparators=comparators)

        def token(values, nx=1, p=p):
            return token_rounds(p, values, nx)

        tie = token({1: (1, 4, 2), 2: (1, 2, 1), 3: (0, 9, 1)})
        better = token({1: (1, 4, 2), 2: (1, 2, 1), 7: (1, 21, 10)})
        # nx = 8: the bound is exactly 2 (theta_q = 128), so 4/2 is not similar; 21/10 is.
        on_bound = token({1: (1, 4, 2), 2: (1, 2, 1)}, nx=8)
        above = token({1: (1, 4, 2), 2: (1, 2, 1), 5: (1, 21, 10)}, nx=8)
        outputs, _ = run_select(p, tie + better + on_bound + above, 4, select=select)
        assert [(b["match"], b["slot"]) for b in outputs][:2] == [(1, 1), (1, 7)]
        assert outputs[2]["match"] == 0
        assert (outputs[3]["match"], outputs[3]["slot"]) == (1, 5)


def token_rounds(p, values, nx=1):
    """One token's rounds: candidate c is ``values[c] = (eligible, dsq, ny)`` (missing ones are
    not eligible, zero), in slot c."""
    k, rounds = p.comparators, matcher_rounds(p)
    beats = []
    for r in range(rounds):
        lanes = []
        for j in range(k):
            c = r * k + j + 1
            eligible, dsq, ny = values.get(c, (0, 0, 0))
            lanes.append({"eligible": eligible, "dsq": dsq, "ny": ny, "slot": c, "code": c})
        beats.append({"cands": lanes, "nx": nx,
                      "tag": {"first": int(r == 0), "last": int(r == rounds - 1)}})
    return beats


@pytest.mark.parametrize("select, comparators", [(BestCandidate, 1), (BestCandidate, 2),
                                                 (BestCandidate, 7), (SerialBestCandidate, 1)],
                         ids=["parallel-1", "parallel-2", "parallel-7", "serial-1"])
def test_best_candidate_every_pair_of_candidates(select, comparators):
    """For every pair c < d of the 7 candidates, with the others eligible and worse: equal
    cosines (3/1 and 6/2) go to c, a strictly larger one (7/2 at d) to d, whatever the place
    of the two in the rounds, the lanes or a tournament."""
    p = small(comparators=comparators)
    beats, want = [], []
    for c in range(1, CANDIDATES + 1):
        for d in range(c + 1, CANDIDATES + 1):
            others = {e: (1, 1, 1) for e in range(1, CANDIDATES + 1)}
            beats += token_rounds(p, {**others, c: (1, 3, 1), d: (1, 6, 2)})
            beats += token_rounds(p, {**others, c: (1, 3, 1), d: (1, 7, 2)})
            want += [c, d]
    outputs, _ = run_select(p, beats, len(want), select=select)
    assert [(b["match"], b["slot"]) for b in outputs] == [(1, w) for w in want]


@pytest.mark.parametrize("partial", [False, True], ids=["whole", "partial"])
@pytest.mark.parametrize("select, comparators", [(BestCandidate, 1), (BestCandidate, 2),
                                                 (SerialBestCandidate, 1)],
                         ids=["parallel-1", "parallel-2", "serial-1"])
def test_best_candidate_flush_drops_what_is_in_flight(select, comparators, partial):
    """``flush`` drops everything in flight. With the output held, three whole tokens go in
    (and a decision waits on the output), or two and three rounds of a third (the serial
    selection then waits for the third's rounds); after a one-cycle flush nothing is offered,
    the tokens that follow are decided as golden's rule says (their tags too), and nothing of
    the dropped ones ever comes out."""
    p = small(comparators=comparators)
    rounds = matcher_rounds(p)
    beats, expected, _, _ = scored_rounds(p, 10, seed=11)
    dropped, kept = beats[:2 * rounds + 3] if partial else beats[:3 * rounds], beats[3 * rounds:]
    want = expected[3:]
    dut = select(p)
    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    received, after, flushed = [], [], []

    async def testbench(ctx):
        ctx.set(dut.theta_sq, THETA_Q * THETA_Q)
        await stream_put(ctx, dut.i_stream, dropped)
        await ctx.tick().repeat(SELECT_STAGES + 5)
        assert partial or ctx.get(dut.o_stream.valid), "a decision should wait on the output"
        ctx.set(dut.flush, 1)
        await ctx.tick()
        ctx.set(dut.flush, 0)
        assert not ctx.get(dut.o_stream.valid)
        flushed.append(True)
        await stream_put(ctx, dut.i_stream, kept)

    async def consumer(ctx):
        while not flushed:
            await ctx.tick()
        received.extend(await stream_get(ctx, dut.o_stream, len(want)))
        for _ in range(3 * SELECT_STAGES):
            _, _, valid = await ctx.tick().sample(dut.o_stream.valid)
            after.append(valid)

    sim.add_testbench(testbench)
    sim.add_testbench(consumer)
    sim.add_testbench(watchdog(2000, "the selection hung after a flush"), background=True)
    sim.run()
    for n, (got, (best, tag)) in enumerate(zip(received, want, strict=True)):
        assert got["tag"] == tag, f"token {n}: tag"
        assert (got["match"], got["slot"] if best else None) == (int(best is not None), best), (
            f"token {n}")
    assert not any(after), "a dropped token was decided after the flush"


# ---- ComparatorBank ---------------------------------------------------------------------------

def run_with(dut, inputs, outputs, stalls, seed, settings, max_cycles=5000):
    """Like :func:`sim.streams.run_streams`, with the non-stream inputs ``settings``
    (``{member: value}``) set from the start. Returns the received payloads."""
    sources = stall_sources(stalls, (*inputs, *outputs), seed)
    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    for port in (*inputs, *outputs):
        sim.add_testbench(stream_monitor(getattr(dut, port), port), background=True)
    received = {}

    async def setup(ctx):
        for member, value in settings.items():
            ctx.set(getattr(dut, member), value)

    def put(port):
        async def testbench(ctx):
            await stream_put(ctx, getattr(dut, port), inputs[port], sources[port])
        return testbench

    def get(port):
        async def testbench(ctx):
            received[port] = await stream_get(ctx, getattr(dut, port), outputs[port],
                                              sources[port])
        return testbench

    sim.add_testbench(setup)
    for port in inputs:
        sim.add_testbench(put(port))
    for port in outputs:
        sim.add_testbench(get(port))
    sim.add_testbench(watchdog(max_cycles, f"{type(dut).__name__} timed out"), background=True)
    sim.run()
    return received


@pytest.mark.parametrize("comparators, stalls", stall_cross([1, 3, 7], STALL_IDS))
def test_comparator_bank_results_leave_with_their_candidates(comparators, stalls):
    """Random tokens and candidates (some missing: norm 0; some zero; some copies; some with a
    negative dot): every result leaves with its own lane's norm and slot, its round's tag and
    the token's norm, and is exact: eligible when both are non-zero and dot > 0, and then
    dot**2."""
    p = small(comparators=comparators)
    rng = np.random.default_rng(comparators)
    beats, expected = [], []
    for n in range(80):
        x = rng.integers(-128, 128, p.dim)
        if n % 9 == 0:
            x[:] = 0
        lanes, want = [], []
        for _ in range(comparators):
            kind = rng.random()
            if kind < 0.5:
                y = x + rng.integers(-20, 21, p.dim)
            elif kind < 0.7:
                y = -x + rng.integers(-3, 4, p.dim)             # a negative dot
            else:
                y = rng.integers(-128, 128, p.dim)
            y = np.clip(y, -128, 127)
            ny = int(sqnorm(y)) if rng.random() < 0.8 else 0
            slot = int(rng.integers(0, 16))
            lanes.append({"y": y.tolist(), "ny": ny, "nonzero": int(ny != 0), "slot": slot,
                          "code": slot % 8})
            d = int(dot(x, y))
            eligible = ny != 0 and bool(x.any()) and d > 0
            want.append({"eligible": int(eligible), "dsq": d * d if eligible else None,
                         "ny": ny, "slot": slot, "code": slot % 8})
        tag = {"first": int(rng.integers(0, 2)), "last": int(rng.integers(0, 2)),
               "tile_first": int(rng.integers(0, 2)), "tile_last": int(rng.integers(0, 2)),
               "job_last": int(rng.integers(0, 2)), "own_slot": int(rng.integers(0, 16)),
               "position": int(rng.integers(0, 1 << 32))}
        nx = int(rng.integers(0, 1 << p.norm_bits))
        beats.append({"x": x.tolist(), "x_nonzero": int(x.any()), "nx": nx, "lanes": lanes,
                      "tag": tag})
        expected.append({"cands": want, "nx": nx, "tag": tag})
    dut = ComparatorBank(p, icg_cell=None)
    got = run_with(dut, {"i_stream": beats}, {"o_stream": len(beats)},
                   stalls_for(stalls), comparators, {})
    assert len(got["o_stream"]) == len(expected)
    assert sum(c["eligible"] for b in expected for c in b["cands"]) > 20
    for n, (beat, want) in enumerate(zip(got["o_stream"], expected, strict=True)):
        # dot**2 means nothing for a candidate that is not eligible.
        for c, w in zip(beat["cands"], want["cands"], strict=True):
            if w["dsq"] is None:
                c["dsq"] = None
        assert beat == want, f"round {n}"


def test_comparator_bank_flush_drops_what_is_in_flight():
    """Two rounds held in the bank by back-pressure, a flush, then two more: only the two come
    out, each with its own tag; the counters still count all four comparisons. (A flush
    withdraws the offered beat, so the output is not monitored.)"""
    p = small(comparators=2)
    dut = ComparatorBank(p, icg_cell=None)
    x = [3, 1, -2, 5]

    def beat(n):
        lane = {"y": x, "ny": sum(v * v for v in x), "nonzero": 1, "slot": n}
        return {"x": x, "x_nonzero": 1, "nx": lane["ny"], "lanes": [lane, lane],
                "tag": {"first": 1, "last": 1, "tile_first": 0, "tile_last": 0, "job_last": 0,
                        "own_slot": n}}

    received = []

    async def testbench(ctx):
        await stream_put(ctx, dut.i_stream, [beat(n) for n in range(2)])
        ctx.set(dut.flush, 1)
        await ctx.tick()
        ctx.set(dut.flush, 0)
        ctx.set(dut.o_stream.ready, 1)
        await stream_put(ctx, dut.i_stream, [beat(n) for n in (7, 8)])
        for _ in range(10):
            _, _, valid, payload = await ctx.tick().sample(dut.o_stream.valid,
                                                           dut.o_stream.payload)
            if valid:
                received.append(unpack(payload))
        assert ctx.get(dut.active) == 2 * 4

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(testbench)
    sim.run()
    assert [b["tag"]["own_slot"] for b in received] == [7, 8]
    assert [[c["slot"] for c in b["cands"]] for b in received] == [[7, 7], [8, 8]]
    assert all(c["eligible"] and c["dsq"] == 39 ** 2 for b in received for c in b["cands"])


# ---- UniqueIndexer ----------------------------------------------------------------------------

def indexer_job(p, count, seed):
    """A job of ``count`` tokens at positions 0, 1, ...: each either opens a group or matches an
    earlier token of its tile within the window (by that token's slot). The model numbers
    groups in order of creation and gives a match its candidate's number."""
    rng = np.random.default_rng(seed)
    slots = 1 << p.window_bits
    beats, expected, group_of = [], [], {}
    tile_base = uniques = 0
    for s in range(count):
        first, last = s % p.tile == 0, s % p.tile == p.tile - 1 or s == count - 1
        if first:
            tile_base = uniques
        reach = min(s % p.tile, p.window - 1)
        match = reach > 0 and rng.random() < 0.6
        q = s - int(rng.integers(1, reach + 1)) if match else s
        if match:
            group = group_of[q]
        else:
            group, uniques = uniques, uniques + 1
        group_of[s] = group
        code = int(rng.integers(1, 8))
        beats.append({"match": int(match), "slot": q % slots, "code": code,
                      "tag": {"first": 1, "last": 1, "tile_first": int(first),
                              "tile_last": int(last), "job_last": int(s == count - 1),
                              "own_slot": s % slots, "position": 3 * s + 1}})
        expected.append({"map": group, "code": code if match else 0, "position": 3 * s + 1,
                         "index": group - tile_base, "new": int(not match),
                         "base": tile_base, "count": uniques - tile_base,
                         "tile_last": int(last), "job_last": int(s == count - 1)})
    return beats, expected


@pytest.mark.parametrize("stalls", STALL_IDS)
def test_unique_indexer_numbers_groups_in_order(stalls):
    """Matches of the previous token (write-through), of tokens a whole window back, tiles
    ending inside the job; under stalls the register holds and its read holds with it."""
    p = small()
    beats, expected = indexer_job(p, 150, seed=4)
    outputs, stats = run_streams(UniqueIndexer(p), {"i_stream": beats},
                                 {"o_stream": len(beats)}, stalls=stalls_for(stalls), seed=4,
                                 probes=("uniques",))
    assert outputs["o_stream"] == expected
    assert stats["uniques"] == expected[-1]["base"] + expected[-1]["count"]


# ---- TokenRegister ----------------------------------------------------------------------------

class _TokenRegisterWithOffsets(wiring.Component):
    """A :class:`TokenRegister` whose job offsets are the constants ``offsets``."""

    def __init__(self, p, offsets):
        self._dut, self._offsets = TokenRegister(p), offsets
        super().__init__({"i_stream": wiring.In(self._dut.i_stream.signature.flip()),
                          "o_stream": wiring.Out(self._dut.o_stream.signature)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self._dut
        wiring.connect(m, wiring.flipped(self.i_stream), self._dut.i_stream)
        wiring.connect(m, self._dut.o_stream, wiring.flipped(self.o_stream))
        m.d.comb += [self._dut.offsets[c].eq(off) for c, off in enumerate(self._offsets)]
        return m


@pytest.mark.parametrize("comparators, stalls", stall_cross([1, 3, 7], STALL_IDS))
def test_token_register_rounds_tiles_and_distances(comparators, stalls):
    """Every token as ``rounds`` beats with its norm (on its last round: the norm unit is spread
    over the rounds), its vector register (the two in turn), its tile flags (tiles of 24, and
    the job's last token ends one), its distance from its tile's first position, clipped to
    the window's slots, and its round's candidate offsets (lane j of round r: candidate r *
    comparators + j + 1, none past 7). Vectors include the most negative element everywhere
    (the largest norm)."""
    p = small(comparators=comparators)
    rounds, clip = matcher_rounds(p), (1 << p.window_bits) - 1
    offsets = [3, 1, 15, 7, 9, 4, 13]       # distinct, so a lane or round mixed up shows
    lane_offsets = [[offsets[c - 1] if c <= CANDIDATES else 0
                     for c in range(r * comparators + 1, (r + 1) * comparators + 1)]
                    for r in range(rounds)]
    rng = np.random.default_rng(comparators)
    count = 70
    pos = np.cumsum(rng.integers(1, 4, count)).tolist()
    vec = rng.integers(-128, 128, (count, p.dim))
    vec[5] = -128
    vec[9] = 0
    vec = vec.tolist()
    tokens = [{"vector": v, "position": q, "last": int(s == count - 1)}
              for s, (v, q) in enumerate(zip(vec, pos, strict=True))]
    expected = []
    for s in range(count):
        start = s - s % p.tile
        for r in range(rounds):
            last = r == rounds - 1
            expected.append({
                "x": vec[s], "xsel": (s + 1) % 2, "x_nonzero": int(any(vec[s])),
                "nx": sum(e * e for e in vec[s]) if last else None, "position": pos[s],
                "distance": min(pos[s] - pos[start], clip), "round": r,
                "offsets": lane_offsets[r], "tile_first": int(s == start),
                "tile_last": int(s % p.tile == p.tile - 1 or s == count - 1),
                "job_last": int(s == count - 1)})
    outputs, stats = run_streams(_TokenRegisterWithOffsets(p, offsets), {"i_stream": tokens},
                                 {"o_stream": len(expected)}, stalls=stalls_for(stalls),
                                 seed=comparators)
    got = outputs["o_stream"]
    for beat, want in zip(got, expected, strict=True):
        if want["nx"] is None:              # a partial sum: no stage reads it
            beat["nx"] = None
    assert got == expected
    if stalls == "no-stalls":
        assert stats["cycles"] == count * rounds + TokenRegister.latency


# ---- ThresholdTable ---------------------------------------------------------------------------

@pytest.mark.parametrize("layers", [5, 1])
def test_threshold_table_loads_and_holds(layers):
    """A load shows its entry the next cycle and holds it through writes (also to that entry)
    until the next load; a load in the cycle its entry is written gives the old value. One
    layer is two registers, not a memory."""
    p = small(layers=layers, theta_bits=6)
    dut = ThresholdTable(p)

    async def testbench(ctx):
        async def write(layer, value):
            ctx.set(dut.w_en, 1)
            ctx.set(dut.w_addr, layer)
            ctx.set(dut.w_data, value)
            await ctx.tick()
            ctx.set(dut.w_en, 0)

        async def load(layer, also_write=None):
            ctx.set(dut.read.en, 1)
            ctx.set(dut.read.layer, layer)
            if also_write is not None:
                ctx.set(dut.w_en, 1)
                ctx.set(dut.w_addr, layer)
                ctx.set(dut.w_data, also_write)
            await ctx.tick()
            ctx.set(dut.read.en, 0)
            ctx.set(dut.w_en, 0)
            return ctx.get(dut.read.theta_q)

        top = p.layers - 1
        for layer in range(p.layers):
            await write(layer, 10 + layer)
        assert await load(top) == 10 + top
        await write(top, 50)
        for _ in range(3):
            await ctx.tick()
            assert ctx.get(dut.read.theta_q) == 10 + top
        assert await load(top) == 50
        assert await load(top, also_write=63) == 50
        assert await load(top) == 63
        assert await load(0) == (63 if top == 0 else 10)

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(testbench)
    sim.run()


# ---- OutputStage ------------------------------------------------------------------------------

def output_job(p, count, seed, mean):
    """Resolved tokens of a job (groups inside tiles, as the map lookup gives them), their
    vectors, and the expected output beats: with ``mean``, each tile's groups follow its last
    token as rounded means (exact rationals), in index order."""
    _, indexed = indexer_job(p, count, seed)
    rng = np.random.default_rng(seed)
    low, high = -(1 << (p.elem_bits - 1)), (1 << (p.elem_bits - 1)) - 1
    vectors = rng.integers(low, high + 1, (count, p.dim))
    vectors[:3] = low                                   # a group at the most negative value
    expected, members = [], {}
    for s, tok in enumerate(indexed):
        members.setdefault(tok["map"], []).append(s)
        expected.append({"map": tok["map"], "vector": vectors[s].tolist(), "token": 1,
                         "unique": int(tok["new"] and not mean),
                         "last": int(tok["job_last"] and not mean)})
        if mean and tok["tile_last"]:
            for u in range(tok["count"]):
                group = members[tok["base"] + u]
                expected.append({
                    "map": tok["base"] + u,
                    "vector": [reference_mean(int(vectors[group, n].sum()), len(group))
                               for n in range(p.dim)],
                    "token": 0, "unique": 1,
                    "last": int(tok["job_last"] and u == tok["count"] - 1)})
    return indexed, vectors.tolist(), expected


@pytest.mark.parametrize("stalls", STALL_IDS)
@pytest.mark.parametrize("mean", [False, True], ids=["first", "mean"])
def test_output_stage_emits_map_beats_and_tile_means(mean, stalls):
    """Map beats in order, joined with their vectors; with ``mean`` each tile's unique vectors
    (groups of one and of many, the most negative value) after its last map beat."""
    p = small()
    indexed, vectors, expected = output_job(p, 70, seed=6, mean=mean)
    dut = OutputStage(p)
    ports = ("i_stream", "v_stream")
    got = run_with(dut, {"i_stream": indexed, "v_stream": vectors}, {"o_stream": len(expected)},
                   stalls_for(stalls, inputs=ports), 6, {"mean": int(mean)})
    assert got["o_stream"] == expected


def test_output_stage_flush_as_a_tile_ends_starts_no_drain():
    """A flush in the very cycle a ``mean`` tile's last map beat leaves: the tile's drain does
    not start (no unique beat follows), and the stage takes tokens again afterwards."""
    p = small(tile=4)
    indexed, vectors, expected = output_job(p, 8, seed=2, mean=True)
    dut = OutputStage(p)
    received = []

    async def source(ctx):
        await stream_put(ctx, dut.i_stream, indexed[:4])

    async def vector_source(ctx):
        await stream_put(ctx, dut.v_stream, vectors[:4])

    async def sink(ctx):
        ctx.set(dut.mean, 1)
        ctx.set(dut.o_stream.ready, 1)
        for _ in range(60):
            flush = len(received) == 3 and ctx.get(dut.o_stream.valid)
            ctx.set(dut.flush, flush)
            _, _, valid, payload = await ctx.tick().sample(dut.o_stream.valid,
                                                           dut.o_stream.payload)
            if valid:
                received.append(unpack(payload))
        ctx.set(dut.flush, 0)

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(stream_monitor(dut.o_stream, "o_stream"), background=True)
    sim.add_testbench(source)
    sim.add_testbench(vector_source)
    sim.add_testbench(sink)
    sim.run()
    assert received == expected[:4]


def test_output_stage_drain_rate():
    """Without stalls a ``mean`` tile's unique vectors leave one per ``elem_bits + 2`` cycles
    (2 for a group of one), the first ``elem_bits + 5`` (5 for a group of one) cycles after the
    tile's last map beat: the sums' read register costs one cycle per drain, not per group (the
    next group is read while the divider works)."""
    p = small(tile=12)
    indexed, vectors, expected = output_job(p, 12, seed=4, mean=True)
    sizes = {}
    for tok in indexed:
        sizes[tok["map"]] = sizes.get(tok["map"], 0) + 1
    assert 1 in sizes.values() and max(sizes.values()) > 1
    dut = OutputStage(p)
    stamps = []

    async def source(ctx):
        await stream_put(ctx, dut.i_stream, indexed)

    async def vector_source(ctx):
        await stream_put(ctx, dut.v_stream, vectors)

    async def sink(ctx):
        ctx.set(dut.mean, 1)
        ctx.set(dut.o_stream.ready, 1)
        for cycle in range(400):
            _, _, valid, payload = await ctx.tick().sample(dut.o_stream.valid,
                                                           dut.o_stream.payload)
            if valid:
                stamps.append((cycle, unpack(payload)))

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(source)
    sim.add_testbench(vector_source)
    sim.add_testbench(sink)
    sim.run()
    assert [b for _, b in stamps] == expected
    e = p.elem_bits
    for (c0, b0), (c1, b1) in zip(stamps, stamps[1:], strict=False):
        if b1["token"]:
            continue
        divide = e + 2 if sizes[b1["map"]] > 1 else 2
        assert c1 - c0 == (divide + 3 if b0["token"] else divide), (b0, b1, c1 - c0)
