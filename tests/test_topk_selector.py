# amaranth: UnusedElaboratable=no
"""The top-k selector (both sorters) in the Amaranth simulator against golden.topk_mask and the
cycle model; and the analyzer handing its buffer to the selector, as SEC composes them."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator
from helpers import SEC_SHAPES, cdiv, raises_like_golden, sec_shape_id

import golden
import sim
from golden.cycles import topk_cycles, topk_target
from rtl.layouts import mask_beat_layout, score_beat_layout
from rtl.params import FocusParams
from rtl.sec.importance_analyzer import ImportanceAnalyzer, analyzer_config_layout
from rtl.sec.importance_buffer import ImportanceBuffer
from rtl.sec.topk_selector import TopKSelector, selector_config_layout
from sim.sec import (
    analyzer_config,
    mask_from_beats,
    run_jobs,
    score_beats,
    selector_config,
    topk_cases,
    vector_beats,
)
from sim.streams import Stalls, stream_get, stream_monitor, stream_put, watchdog

SORTERS = ["bubble", "radix"]
SHAPES = SEC_SHAPES


def model(p, M, keep):
    return topk_cycles(M, keep, p.lanes, p.score_bits, p.sorter)


def run_topk(p, cases, stalls=0.0, seed=0):
    """The cases back to back in one simulation; each mask checked against golden."""
    jobs = [{"cfg": selector_config(p, len(s), keep), "beats": vector_beats(s, p.lanes),
             "outputs": cdiv(len(s), p.lanes)} for s, keep in cases]
    p_max = max(Stalls.of(v).p for v in (stalls.values() if isinstance(stalls, dict)
                                          else [stalls]))
    budget = sum(model(p, len(s), keep) + 20 for s, keep in cases)
    results, trace = run_jobs(TopKSelector(p), jobs, stalls=stalls, seed=seed,
                              max_cycles=2000 + int(3 * budget / (1 - p_max)))
    for n, ((s, keep), result) in enumerate(zip(cases, results, strict=True)):
        got = mask_from_beats(result["outputs"], len(s), p.lanes)
        want = golden.topk_mask(s, keep)
        assert (got == want).all(), (
            f"job {n}: M = {len(s)}, keep = {keep}, {p.sorter}, lanes {p.lanes}: mask "
            f"{got.astype(int).tolist()} != golden {want.astype(int).tolist()} for s = "
            f"{s.tolist()}")
    return results, trace


@pytest.mark.parametrize("shape", SHAPES, ids=sec_shape_id)
@pytest.mark.parametrize("sorter", SORTERS)
def test_regression_exact_cycles(sorter, shape):
    """Mixed jobs (ties, k at its edges, M around lanes) without stalls: golden masks, and exactly
    the cycle model's count for every job."""
    p = FocusParams(sorter=sorter, **shape)
    cases = topk_cases(p, 24, seed=shape["lanes"])
    results, _ = run_topk(p, cases)
    for (s, keep), result in zip(cases, results, strict=True):
        assert result["cycles"] == model(p, len(s), keep), (len(s), keep)


@pytest.mark.parametrize("shape", SHAPES, ids=sec_shape_id)
@pytest.mark.parametrize("sorter", SORTERS)
def test_regression_under_stalls(sorter, shape):
    """The same mix with 30 % input idles and 30 % output back-pressure (seeded)."""
    p = FocusParams(sorter=sorter, **shape)
    run_topk(p, topk_cases(p, 24, seed=100 + shape["lanes"]), stalls=0.3, seed=7)


@pytest.mark.parametrize("sorter", SORTERS)
@pytest.mark.parametrize("idle, backpressure", [(0.5, 0.0), (0.0, 0.5)],
                         ids=["idle", "backpressure"])
def test_idles_or_backpressure_alone(sorter, idle, backpressure):
    p = FocusParams(tokens=24, lanes=4, sorter=sorter)
    stalls = {"cfg_stream": idle, "i_stream": idle, "o_stream": backpressure}
    run_topk(p, topk_cases(p, 12, seed=31), stalls=stalls, seed=3)


@pytest.mark.parametrize("sorter", SORTERS)
def test_long_backpressure(sorter):
    """The sink holds ready low for 300 cycles (longer than the whole job): nothing is lost."""
    p = FocusParams(tokens=24, lanes=4, sorter=sorter)
    rng = np.random.default_rng(4)
    cases = [(rng.integers(0, 4, 23), 9), (rng.integers(0, 100, 24), 5)]
    run_topk(p, cases, stalls={"o_stream": Stalls(windows=[(5, 300)])})


@pytest.mark.parametrize("sorter", SORTERS)
@pytest.mark.parametrize("lanes", [1, 3, 4, 32])
def test_tie_patterns_and_keep_edges(sorter, lanes):
    """keep 0, 1, 2, around lanes and M, and beyond M, on all-equal, two-valued and
    descending-with-ties vectors, at M below, at and above a multiple of lanes."""
    p = FocusParams(tokens=lanes + 5, lanes=lanes, score_bits=5, sorter=sorter)
    cases = []
    for M in sorted({1, max(1, lanes - 1), lanes + 1, lanes + 5}):
        vectors = [np.full(M, 7), np.arange(M) % 2 * 31, np.arange(M)[::-1] // 2]
        keeps = sorted({0, 1, 2, lanes - 1, lanes, lanes + 1, M - 1, M, M + 1} - {-1})
        for s in vectors:
            cases += [(s, keep) for keep in keeps]
    run_topk(p, cases)


def test_radix_cycles_do_not_depend_on_k():
    p = FocusParams(tokens=40, lanes=4, sorter="radix")
    s = np.random.default_rng(5).integers(0, 1 << 16, 37)
    results, _ = run_topk(p, [(s, keep) for keep in (0, 1, 18, 37, 500)])
    assert len({r["cycles"] for r in results}) == 1


@pytest.mark.parametrize("keep", [1, 32, 33])
def test_bubble_meets_target_at_paper_shape(keep):
    """a = 32, M = 1024 (the paper preset's selector): measured cycles equal the model, which is
    within 1.05 * ceil(k/a) * M + 64; the model is checked for every k in test_golden_cycles."""
    p = FocusParams.paper()
    s = np.random.default_rng(keep).integers(0, 1 << 16, 1024)
    stats = {}
    got = sim.topk_mask(s, keep, params=p, stats=stats)
    assert (got == golden.topk_mask(s, keep)).all()
    assert stats["cycles"] == model(p, 1024, keep) <= topk_target(1024, keep, 32)


def test_radix_meets_target_at_paper_shape():
    p = FocusParams.paper().replace(sorter="radix")
    s = np.random.default_rng(6).integers(0, 4, 1024)       # heavy ties
    stats = {}
    got = sim.topk_mask(s, 400, params=p, stats=stats)
    assert (got == golden.topk_mask(s, 400)).all()
    assert stats["cycles"] == model(p, 1024, 400) <= topk_target(1024, 400, 32, 16, "radix")


@pytest.mark.parametrize("sorter", SORTERS)
def test_score_bits_extremes(sorter):
    rng = np.random.default_rng(8)
    for bits in (1, 32):
        p = FocusParams(tokens=10, lanes=3, score_bits=bits, sorter=sorter)
        cases = [(rng.integers(0, 1 << bits, 10, dtype=np.uint64), k) for k in (0, 3, 5, 10)]
        cases.append((np.full(7, (1 << bits) - 1, dtype=np.uint64), 4))
        run_topk(p, cases)


# ---- bad settings -------------------------------------------------------------------------------

@pytest.mark.parametrize("sorter", SORTERS)
@pytest.mark.parametrize("M", [0, 25], ids=["M0", "M_over_tokens"])
def test_bad_settings_raise_error_and_recover(sorter, M):
    """M = 0 or M > tokens: error from the cycle after the configuration beat, never busy, stray
    beats dropped; the next job then runs normally and clears the error."""
    p = FocusParams(tokens=24, lanes=4, sorter=sorter)
    s = np.random.default_rng(9).integers(0, 50, 10)
    bad = {"cfg": {"M": M, "keep": 3, "preloaded": 0}, "beats": vector_beats(s, 4)[:2],
           "outputs": 0}
    good = {"cfg": selector_config(p, 10, 3), "beats": vector_beats(s, 4), "outputs": 3}
    results, trace = run_jobs(TopKSelector(p), [bad, good], max_cycles=500)
    c0, c1 = results[0]["cfg_cycle"], results[1]["cfg_cycle"]
    assert results[0]["last_input"] is not None          # the stray beats were taken and dropped
    assert all(trace["error"][c0 + 1:c1 + 1]) and not any(trace["busy"][c0 + 1:c1 + 1])
    assert not trace["error"][c1 + 1] and trace["busy"][c1 + 1]
    mask = mask_from_beats(results[1]["outputs"], 10, 4)
    assert (mask == golden.topk_mask(s, 3)).all()
    assert not any(trace["error"][c1 + 1:])


# ---- the Python API -----------------------------------------------------------------------------

@pytest.mark.parametrize("sorter", SORTERS)
def test_sim_topk_mask_matches_golden(sorter):
    rng = np.random.default_rng(10)
    p = FocusParams(tokens=50, lanes=4, sorter=sorter)
    for dtype in (np.uint8, np.int32, np.uint16):
        s = rng.integers(0, 200, 45).astype(dtype)
        stats = {}
        got = sim.topk_mask(s, 11, params=p, stalls=0.2, stats=stats, seed=2)
        want = golden.topk_mask(s, 11)
        assert got.dtype == want.dtype == bool and got.shape == want.shape
        assert (got == want).all() and stats["cycles"] > 0


def test_sim_topk_mask_default_params_fit_the_data():
    s = np.arange(1030, dtype=np.uint32) * 4000            # M > 1024, 22-bit scores
    got = sim.topk_mask(s, 3)
    assert (got == golden.topk_mask(s, 3)).all()


@pytest.mark.parametrize("s, keep, message", [
    (np.zeros((2, 3), np.uint16), 1,
     r"^s must be 1-D \(one score per token\), not shape \(2, 3\)$"),
    (np.zeros(0, np.uint16), 1, r"^s is empty: M must be >= 1$"),
    (np.array([1.5, 2.0]), 1, r"^s must be an unsigned integer array"),
    (np.array([3, -1, 2]), 1, r"^s must be >= 0: 1 negative value\(s\), first at index 1: -1$"),
    (np.array([3, 1]), -1, r"^keep = -1 is out of range: it must be >= 0$"),
    (np.array([3, 1]), 1.0, r"^keep must be an integer >= 0, not 1\.0$"),
])
def test_sim_topk_mask_rejects_what_golden_rejects(s, keep, message):
    raises_like_golden(message, golden.topk_mask, sim.topk_mask, s, keep)


def test_sim_topk_mask_names_M_beyond_the_rtl_limit():
    s = np.arange(70_000) % 1000
    assert golden.topk_mask(s, 3).sum() == 3
    with pytest.raises(ValueError, match=r"^M = 70000 is out of the RTL's range \[1, 65536\] "
                                         r"\(FocusParams\.tokens\)$"):
        sim.topk_mask(s, 3)


def test_sim_topk_mask_rejects_what_the_params_cannot_hold():
    p = FocusParams(tokens=8, lanes=4, score_bits=4)
    with pytest.raises(ValueError, match=r"^M = 9 > tokens = 8: the importance buffer holds"):
        sim.topk_mask(np.zeros(9, np.uint8), 1, params=p)
    with pytest.raises(ValueError, match=r"^s must fit in score_bits = 4 bits: the largest is 16$"):
        sim.topk_mask(np.array([1, 16]), 1, params=p)
    with pytest.raises(ValueError, match=r"^Unknown simulator 'modelsim'"):
        sim.topk_mask(np.array([1, 2]), 1, params=p, simulator="modelsim")


# ---- the hand-over inside SEC -------------------------------------------------------------------

class _Sec(wiring.Component):
    """The analyzer, the selector and one two-client buffer, composed as issue 4's SEC will: the
    buffer goes to the selector at the analyzer's ``done``, and the selector runs ``preloaded``."""

    def __init__(self, p):
        self._p = p
        super().__init__({
            "a_cfg": In(stream.Signature(analyzer_config_layout(p))),
            "s_cfg": In(stream.Signature(selector_config_layout(p))),
            "i_stream": In(stream.Signature(score_beat_layout(p))),
            "o_stream": Out(stream.Signature(mask_beat_layout(p))),
            "owner": Out(1),
        })

    def elaborate(self, platform):
        p = self._p
        m = Module()
        m.submodules.analyzer = an = ImportanceAnalyzer(p, buffer="external")
        m.submodules.selector = se = TopKSelector(p, buffer="external")
        m.submodules.buffer = buf = ImportanceBuffer(p, clients=2)
        wiring.connect(m, an.buffer, buf.clients[0])
        wiring.connect(m, se.buffer, buf.clients[1])
        wiring.connect(m, wiring.flipped(self.a_cfg), an.cfg_stream)
        wiring.connect(m, wiring.flipped(self.s_cfg), se.cfg_stream)
        wiring.connect(m, wiring.flipped(self.i_stream), an.i_stream)
        wiring.connect(m, wiring.flipped(self.o_stream), se.o_stream)
        m.d.comb += [an.o_stream.ready.eq(0), se.i_stream.valid.eq(0), buf.owner.eq(self.owner)]
        with m.If(an.done):
            m.d.sync += self.owner.eq(1)
        with m.If(an.cfg_stream.valid & an.cfg_stream.ready):
            m.d.sync += self.owner.eq(0)
        return m


@pytest.mark.parametrize("sorter", SORTERS)
def test_analyzer_hands_its_buffer_to_the_selector(sorter):
    """Scores in, mask out, through one two-client buffer (no copy of the vector): equal to
    golden for two jobs in a row, one per dataflow, under input idles and back-pressure."""
    p = FocusParams(tokens=24, lanes=4, sorter=sorter)
    rng = np.random.default_rng(12)
    jobs = [(rng.integers(0, 1000, (5, 23)), "spatial", 9), (rng.integers(0, 3, (6, 10)),
                                                            "temporal", 4)]
    dut = _Sec(p)
    got = []

    async def driver(ctx):
        for scores, mode, keep in jobs:
            R, M = scores.shape
            await stream_put(ctx, dut.a_cfg, [analyzer_config(M, R, mode, readout=0)])
            await stream_put(ctx, dut.i_stream, score_beats(scores, mode, 4), Stalls(0.2, 1))
            while not ctx.get(dut.owner):
                await ctx.tick()
            await stream_put(ctx, dut.s_cfg, [selector_config(p, M, keep, preloaded=1)])
            beats = await stream_get(ctx, dut.o_stream, cdiv(M, 4), Stalls(0.2, 2))
            got.append(mask_from_beats(beats, M, 4))

    simulator = Simulator(dut)
    simulator.add_clock(1e-8)
    for name in ("a_cfg", "s_cfg", "i_stream", "o_stream"):
        simulator.add_testbench(stream_monitor(getattr(dut, name), name), background=True)
    simulator.add_testbench(driver)
    simulator.add_testbench(watchdog(3000, "SEC composition timed out"), background=True)
    simulator.run()
    assert len(got) == 2
    for (scores, _, keep), mask in zip(jobs, got, strict=True):
        assert (mask == golden.topk_mask(golden.importance(scores), keep)).all()
