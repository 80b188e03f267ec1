# amaranth: UnusedElaboratable=no
"""The complete SEC in the Amaranth simulator against golden.sec (fast tier), and the stream fork
it uses."""

import numpy as np
import pytest
from amaranth.hdl import unsigned
from amaranth.sim import Simulator
from helpers import raises_like_golden

import golden
import sim
from golden.cycles import encode_rtl_cycles, importance_cycles, topk_cycles
from rtl.lib.stream_fork import StreamFork
from rtl.params import FocusParams
from rtl.sec.semantic_concentrator import SecError, SemanticConcentrator, sec_config_layout
from sim.sec import code_from_words, mask_from_beats, run_sec_jobs, sec_cases, sec_config, sec_job
from sim.streams import Stalls, stall_patterns, stream_get, stream_monitor, stream_put, watchdog

SORTERS = ["bubble", "radix"]
# lanes 1, 3, 4 and 32 (M below, at and above a beat), word_bits 8, 16 and 32.
SHAPES = [dict(tokens=24, lanes=4, word_bits=8), dict(tokens=20, lanes=3, word_bits=16),
          dict(tokens=12, lanes=1, word_bits=32, score_bits=5),
          dict(tokens=40, lanes=32, word_bits=8)]


def shape_id(shape):
    return f"M{shape['tokens']}_a{shape['lanes']}_w{shape['word_bits']}"


def cdiv(a, b):
    return -(-a // b)


def model(p, scores, mode, keep, mask, words):
    """The cycles of one job without stalls, from the blocks' models: the analyzer without its
    readout, the selector before its mask, then the encoder's exact model
    (:func:`golden.cycles.encode_rtl_cycles`). That model counts from the encoder's configuration
    beat, which SEC sends before the mask, so SEC's job takes 3 cycles fewer than this sum, or up
    to 2 more than that."""
    R, M = scores.shape
    a = p.lanes
    dropped = bool((int(words[0]) >> (p.word_bits - 4)) & 1)
    return (importance_cycles(R, M, a, mode) - cdiv(M, a)
            + topk_cycles(M, keep, a, p.score_bits, p.sorter) - cdiv(M, a)
            + encode_rtl_cycles(mask, a, len(words), dropped))

#: The four stall patterns (none, input idles, output back-pressure, both).
STALLS = stall_patterns(("cfg_stream", "i_stream"), ("mask_stream", "code_stream"))


def run_and_check(p, cases, stalls=0.0, seed=0, exact=None):
    """The cases back to back; every job equal to golden.sec, its status outputs right, one done
    pulse per job. ``exact``: also check the cycles against :func:`model` (no stalls)."""
    jobs = [sec_job(p, *case) for case in cases]
    results = run_sec_jobs(p, jobs, stalls=stalls, seed=seed)
    for n, ((scores, mode, keep, order), r) in enumerate(zip(cases, results, strict=True)):
        want_mask, want_words, want_nbits = golden.sec(scores, keep, mode=mode, order=order,
                                                       word_bits=p.word_bits)
        what = (f"job {n}: {mode}, R x M = {scores.shape}, keep {keep}, order {order}, "
                f"{p.sorter}, scores {scores.tolist()}")
        assert r["good"] and not r["error"] and r["cause"] == SecError.NONE.value, what
        mask = mask_from_beats(r["mask_beats"], scores.shape[1], p.lanes)
        words, nbits = code_from_words(r["words"])
        assert (mask == want_mask).all(), f"{what}: mask {mask.astype(int)} != {want_mask}"
        assert nbits == want_nbits and np.array_equal(words, want_words), (
            f"{what}: code {words.tolist()} / {nbits} != {want_words.tolist()} / {want_nbits}")
        e = int(want_words[0]) >> (p.word_bits - 3)
        assert (r["kept"], r["nbits"], r["order"]) == (int(want_mask.sum()), want_nbits, e), what
        assert r["done"] == r["last_output"] + 1 and not r["end_error"], what
        if exact:
            low = model(p, scores, mode, keep, want_mask, want_words)
            assert low - 3 <= r["cycles"] <= low - 1, (
                f"{what}: {r['cycles']} cycles, model {low} less 3..1")
    return results


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("sorter", SORTERS)
def test_regression_and_cycles(sorter, shape):
    """Mixed jobs back to back without stalls: both dataflows, every fixed order and the adaptive
    one, M at 1, around lanes and at tokens, heavy ties, all-equal scores, keep at its edges;
    golden results and the cycle model."""
    p = FocusParams(sorter=sorter, **shape)
    run_and_check(p, sec_cases(p, 20, seed=shape["lanes"]), exact=True)


@pytest.mark.parametrize("stalls", STALLS.values(), ids=STALLS.keys())
@pytest.mark.parametrize("sorter", SORTERS)
def test_under_stalls(sorter, stalls):
    """30 % input idles on both inputs, 30 % back-pressure on both outputs, each alone and
    both."""
    p = FocusParams(tokens=24, lanes=4, word_bits=8, sorter=sorter)
    run_and_check(p, sec_cases(p, 20, seed=50), stalls=stalls, seed=3)


@pytest.mark.parametrize("port", ["mask_stream", "code_stream"])
@pytest.mark.parametrize("sorter", SORTERS)
def test_one_output_held(sorter, port):
    """One output back-pressured (50 %, then held for 200 cycles), the other always ready: the
    fork delivers each mask beat once to each consumer, nothing lost or duplicated."""
    p = FocusParams(tokens=24, lanes=4, word_bits=8, sorter=sorter)
    stalls = {port: Stalls(0.5, seed=port, windows=[(40, 200)])}
    results = run_and_check(p, sec_cases(p, 8, seed=60), stalls=stalls)
    assert max(r["cycles"] for r in results) > 200


@pytest.mark.parametrize("sorter", SORTERS)
def test_edges(sorter):
    """M = 1, M = tokens, M not a multiple of lanes; keep 0, 1, M - 1, M, beyond M and the
    field's largest; all-equal scores, all zeros, the largest score; both dataflows; orders 0,
    7 and adaptive."""
    p = FocusParams(tokens=10, lanes=4, word_bits=8, score_bits=6, sorter=sorter)
    rng = np.random.default_rng(70)
    cases = []
    for M in (1, 4, 7, 10):
        for scores in (np.zeros((2, M), np.int64), np.full((3, M), 63),
                       rng.integers(0, 64, (5, M))):
            for keep in sorted({0, 1, max(0, M - 1), M, M + 3, 15}):
                for mode, order in (("spatial", None), ("temporal", 7), ("temporal", 0)):
                    cases.append((scores, mode, keep, order))
    run_and_check(p, cases[::2], exact=True)
    run_and_check(p, cases[1::2], stalls=0.2, seed=1)


@pytest.mark.parametrize("sorter", SORTERS)
@pytest.mark.parametrize("bad", [dict(M=0, R=3), dict(M=25, R=3), dict(M=10, R=0)],
                         ids=["M0", "M_over_tokens", "R0"])
def test_bad_settings_raise_error_and_recover(sorter, bad):
    """M = 0, M > tokens or R = 0: error (cause ANALYZER) from the next cycle until the next
    configuration beat, never busy, no output, stray score beats dropped; the next job is right
    and clears the error."""
    p = FocusParams(tokens=24, lanes=4, word_bits=8, sorter=sorter)
    rng = np.random.default_rng(9)
    scores = rng.integers(0, 50, (3, 10))
    stray = sec_job(p, scores, "spatial", 3, None)["beats"][:5]
    bad_job = {"cfg": dict(sec_config(p, 10, 3, "spatial", 3, None), **bad), "beats": stray}
    good = [scores, "temporal", 4, None]
    jobs = [bad_job, sec_job(p, *good), bad_job, sec_job(p, *good)]
    for stalls in (0.0, 0.3):
        results = run_sec_jobs(p, jobs, stalls=stalls, seed=2)
        for r in results[::2]:
            assert not r["good"] and r["error"] and r["cause"] == SecError.ANALYZER.value
            assert r["last_input"] is not None and not r["mask_beats"] and not r["words"]
        for r in results[1::2]:
            assert not r["error"]
            assert (mask_from_beats(r["mask_beats"], 10, 4)
                    == golden.topk_mask(scores.max(axis=0), 4)).all()
    # The trace of the unstalled run: error held, busy low, between a bad job and the next.
    results, trace = _traced(p, jobs)
    c0, c1 = results[0]["cfg_cycle"], results[1]["cfg_cycle"]
    assert all(trace["error"][c0 + 1:c1 + 1]) and not any(trace["busy"][c0 + 1:c1 + 1])
    assert not trace["error"][c1 + 1] and trace["busy"][c1 + 1]


def _traced(p, jobs):
    """Run the jobs (no stalls) with the per-cycle outputs recorded."""
    trace = {}
    results = run_sec_jobs(p, jobs, trace=trace)
    return results, trace


def test_back_to_back_and_status():
    """Two jobs back to back: busy from the cycle after the configuration beat to the done pulse,
    the next configuration beat taken in the cycle done pulses, done once per job."""
    p = FocusParams(tokens=24, lanes=4, word_bits=16)
    rng = np.random.default_rng(11)
    cases = [(rng.integers(0, 1000, (5, 23)), "spatial", 9, None),
             (rng.integers(0, 3, (6, 24)), "temporal", 30, 2)]
    run_and_check(p, cases, exact=True)
    results, trace = _traced(p, [sec_job(p, *c) for c in cases])
    first, second = results
    assert second["cfg_cycle"] == first["done"]
    for r in results:
        assert all(trace["busy"][r["cfg_cycle"] + 1:r["done"]]) and not trace["busy"][r["done"]]
    assert sum(trace["done"]) == 2


# ---- the Python API -----------------------------------------------------------------------------

@pytest.mark.parametrize("sorter", SORTERS)
@pytest.mark.parametrize("word_bits", [8, 16, 32])
def test_sim_sec_matches_golden(sorter, word_bits):
    rng = np.random.default_rng(word_bits)
    p = FocusParams(tokens=30, lanes=4, sorter=sorter, word_bits=word_bits)
    for mode, order, dtype in (("spatial", None, np.uint16), ("temporal", 1, np.int32)):
        scores = rng.integers(0, 300, (6, 29)).astype(dtype)
        stats = {}
        got = sim.sec(scores, 11, mode=mode, order=order, word_bits=word_bits, params=p,
                      stalls=0.2, stats=stats, seed=4)
        want = golden.sec(scores, 11, mode=mode, order=order, word_bits=word_bits)
        assert got[0].dtype == bool and got[1].dtype == np.uint64
        assert (got[0] == want[0]).all() and np.array_equal(got[1], want[1])
        assert got[2] == want[2] and isinstance(got[2], int)
        assert stats["kept"] == 11 and stats["nbits"] == want[2] and stats["cycles"] > 0
        assert stats["order"] == int(want[1][0]) >> (word_bits - 3)


def test_sim_sec_with_the_kept_set_exp_golomb_encoder():
    """SEC built with offset_schemes = "kept-exp-golomb" (the iCEBreaker's): its adaptive code is
    golden's restricted choice (here shorter schemes exist: the code differs from the 32-scheme
    one), under stalls; schemes and params must agree."""
    rng = np.random.default_rng(8)
    p = FocusParams(tokens=40, lanes=2, word_bits=16, offset_schemes="kept-exp-golomb")
    scores = rng.integers(0, 1000, (2, 40)).astype(np.uint16)
    got = sim.sec(scores, 30, word_bits=16, schemes="kept-exp-golomb", params=p, stalls=0.3,
                  seed=2)
    want = golden.sec(scores, 30, word_bits=16, schemes="kept-exp-golomb")
    assert (got[0] == want[0]).all() and np.array_equal(got[1], want[1]) and got[2] == want[2]
    assert want[2] > golden.sec(scores, 30, word_bits=16)[2]
    with pytest.raises(ValueError, match=r"^params.offset_schemes = 'kept-exp-golomb' does not "
                                         r"match schemes = 'all'$"):
        sim.sec(scores, 30, word_bits=16, params=p)


def test_sim_sec_default_params_fit_the_data():
    scores = np.arange(3 * 40, dtype=np.uint32).reshape(3, 40) * 3000     # 19-bit scores
    got = sim.sec(scores, 5, word_bits=8)
    want = golden.sec(scores, 5, word_bits=8)
    assert (got[0] == want[0]).all() and np.array_equal(got[1], want[1]) and got[2] == want[2]


@pytest.mark.parametrize("args, kwargs, message", [
    ((np.zeros(3, np.uint16), 1), {}, r"^scores must be 2-D \[R rows, M tokens\]"),
    ((np.zeros((0, 3), np.uint16), 1), {}, r"^scores has no rows"),
    ((np.zeros((2, 0), np.uint16), 1), {}, r"^scores has no tokens"),
    ((np.ones((2, 3)) * 0.5, 1), {}, r"^scores must be an unsigned integer array"),
    ((np.array([[3, -1]]), 1), {}, r"^scores must be >= 0"),
    ((np.ones((2, 3), np.uint8), -1), {}, r"^keep = -1 is out of range"),
    ((np.ones((2, 3), np.uint8), 2.0), {}, r"^keep must be an integer >= 0"),
    ((np.ones((2, 3), np.uint8), 1), {"mode": "diagonal"}, r"^mode = 'diagonal' is not allowed"),
    ((np.ones((2, 3), np.uint8), 1), {"order": 8}, r"^order must be None \(adaptive\) or an"),
    ((np.ones((2, 3), np.uint8), 1), {"word_bits": 7}, r"^word_bits = 7 is out of range"),
    ((np.ones((2, 3), np.uint8), 1), {"schemes": "rice"}, r"^schemes must be 'all' or "),
])
def test_sim_sec_rejects_what_golden_rejects(args, kwargs, message):
    raises_like_golden(message, golden.sec, sim.sec, *args, **kwargs)


def test_sim_sec_rejects_what_the_params_cannot_hold():
    p = FocusParams(tokens=8, lanes=4, score_bits=4, word_bits=16)
    with pytest.raises(ValueError, match=r"^M = 9 > tokens = 8"):
        sim.sec(np.zeros((2, 9), np.uint8), 1, word_bits=16, params=p)
    with pytest.raises(ValueError, match=r"^scores must fit in score_bits = 4 bits"):
        sim.sec(np.array([[1, 16]]), 1, word_bits=16, params=p)
    with pytest.raises(ValueError, match=r"^params.word_bits = 16 does not match word_bits = 32"):
        sim.sec(np.array([[1, 2]]), 1, params=p)
    with pytest.raises(ValueError, match=r"^Unknown simulator 'modelsim'"):
        sim.sec(np.array([[1, 2]]), 1, word_bits=16, params=p, simulator="modelsim")


def test_config_layout_fields():
    p = FocusParams(tokens=24)
    layout = sec_config_layout(p)
    widths = {name: field.width for name, field in layout}
    assert widths == {"M": 5, "R": 16, "mode": 1, "keep": 5, "order": 3, "adaptive": 1}
    assert SemanticConcentrator(p).nbits.shape() == unsigned(p.nbits_bits)


# ---- the stream fork ----------------------------------------------------------------------------

@pytest.mark.parametrize("outputs", [1, 2, 3])
def test_fork_delivers_every_beat_once_to_each_output(outputs):
    """200 beats through the fork, a different stall pattern on the input and on every output
    (one output held for 60 cycles): each output gets exactly the input sequence; stream-rule
    monitors on every port."""
    fork = StreamFork(unsigned(8), outputs)
    sent = [int(x) for x in np.random.default_rng(outputs).integers(0, 256, 200)]
    got = {}

    def receiver(k):
        async def testbench(ctx):
            stalls = Stalls(0.1 * k + 0.2, seed=k, windows=[(30, 60)] if k == 0 else [])
            got[k] = await stream_get(ctx, fork.o_streams[k], len(sent), stalls)
        return testbench

    async def sender(ctx):
        await stream_put(ctx, fork.i_stream, sent, Stalls(0.3, seed="in"))

    simulator = Simulator(fork)
    simulator.add_clock(1e-8)
    simulator.add_testbench(stream_monitor(fork.i_stream, "i_stream"), background=True)
    for k in range(outputs):
        simulator.add_testbench(stream_monitor(fork.o_streams[k], f"o{k}"), background=True)
        simulator.add_testbench(receiver(k))
    simulator.add_testbench(sender)
    simulator.add_testbench(watchdog(3000, "the fork hung"), background=True)
    simulator.run()
    assert all(got[k] == sent for k in range(outputs))


@pytest.mark.parametrize("outputs", [0, -1, 1.5, True])
def test_fork_rejects_bad_output_counts(outputs):
    with pytest.raises(ValueError, match=r"^outputs must be a positive integer"):
        StreamFork(unsigned(8), outputs)
