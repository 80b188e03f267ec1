# amaranth: UnusedElaboratable=no
"""The block matcher (rtl.sic.block_matcher) in the Amaranth simulator, against golden.block_match.

Every run goes through :func:`sim.block_match.run_jobs` or ``sim.block_match``/``sim.sic``: protocol
monitors on the three stream ports, a cycle limit (a hang fails), and the output decoded and
compared with golden job by job. Small parameters (V = 4, window 16, tile 24) test the same logic
as the default; one real-photograph case runs at the default V = 32.
"""

import numpy as np
import pytest
from amaranth.sim import Simulator
from helpers import stall_cross

import golden
import sim
from golden.photo import photo_tokens
from rtl.flow.emit import emit_block
from rtl.params import FocusParams
from rtl.sic.block_matcher import BlockMatcher, MatchError, matcher_latency, matcher_rounds
from rtl.sic.job_control import JobControl
from rtl.sic.window_buffer import window_slots
from sim.block_match import Job, check_results, decode_beats, golden_job, regression_jobs, run_jobs
from sim.streams import CLOCK_PERIOD, Stalls, stall_patterns, stream_put

SMALL = dict(dim=4, window=16, tile=24, layers=4)

#: The four stall patterns of the stream tests (style R7): none, input idles only (on both input
#: streams), output back-pressure only, and both.
STALL_PATTERNS = stall_patterns(("cfg_stream", "i_stream"), ("o_stream",))



def small(**changes):
    return FocusParams(**{**SMALL, **changes})


def offsets(fs, hs):
    return [(c >> 2) * fs + ((c >> 1) & 1) * hs + (c & 1) for c in range(1, 8)]


def expected_active(job, tile):
    """Comparisons with a non-zero token and an existing, non-zero candidate in its tile,
    counted directly (independently of golden's vectorised search)."""
    nonzero = np.any(np.asarray(job.vectors) != 0, axis=1)
    where, active = {}, 0
    for s, p in enumerate(np.asarray(job.positions).tolist()):
        start = s - s % tile
        if nonzero[s]:
            for o in offsets(job.frame_stride, job.row_stride):
                j = where.get(p - o) if o > 0 else None
                active += j is not None and j >= start and bool(nonzero[j])
        where[p] = s
    return active


def check(p, jobs, thetas, results, errors=None):
    """Each good job equals golden, its counters add up, the error flags are as expected
    (:func:`sim.block_match.check_results`); the unique count and the active comparisons (counted
    independently) are right too."""
    uniques = check_results(p, jobs, thetas, results, errors)
    for n, (job, result, want_uniques) in enumerate(zip(jobs, results, uniques, strict=True)):
        if want_uniques is not None:
            assert result.uniques == len(want_uniques), f"job {n}: uniques"
            assert result.active == expected_active(job, p.tile), f"job {n}: active"


# ---- regression -------------------------------------------------------------------------------

@pytest.mark.parametrize("comparators, stalls", stall_cross([1, 3, 7], STALL_PATTERNS))
def test_regression(comparators, stalls):
    """Mixed jobs (geometries up to FS + HS + 1 = window - 1, pruned positions, tile boundaries
    inside frames, prototypes with noise, exact copies, zero vectors, thresholds 0 and 2**F - 1,
    both representatives) against golden, under the four stall patterns."""
    p = small(comparators=comparators)
    jobs, thetas = regression_jobs(p, 6, seed=comparators)
    check(p, jobs, thetas, run_jobs(p, jobs, thetas=thetas, stalls=stalls, seed=comparators))


# ---- edges ------------------------------------------------------------------------------------

def grid_job(frames, rows, cols, vectors, fs=None, hs=None, keep=None, mean=False, layer=0):
    hs = cols if hs is None else hs
    fs = rows * cols if fs is None else fs
    pos = np.arange(frames * rows * cols)
    if keep is not None:
        pos = pos[keep]
    return Job(np.asarray(vectors)[:len(pos)], pos, fs, hs, layer, mean)


@pytest.mark.parametrize("comparators, stalls", stall_cross([2, 7], STALL_PATTERNS))
def test_geometry_edges(comparators, stalls):
    """FS + HS + 1 = window - 1 (the farthest candidate), FS = 0 and HS = 0 (offset 0 never
    matches), HS = 1 (two candidates are the same token), tiles that end inside a row and a frame
    (tile 24 on a 5x5 grid), and a 1-token tile, under the four stall patterns."""
    p = small(comparators=comparators)
    rng = np.random.default_rng(7)
    base = rng.integers(-100, 100, (3, p.dim))
    vec = base[rng.integers(0, 3, 150)] + rng.integers(-3, 4, (150, p.dim))
    jobs = [
        grid_job(3, 2, 7, vec, fs=14 - 0, hs=0),          # HS = 0
        grid_job(3, 5, 5, vec, fs=0, hs=5),               # FS = 0
        grid_job(3, 5, 5, vec, fs=13, hs=1),              # HS = 1: c = 1 and c = 2 coincide
        grid_job(4, 2, 6, vec, fs=8, hs=6),               # FS + HS + 1 = 15 = window - 1
        grid_job(5, 5, 5, vec),                           # FS 25 >= window: tiles cut frames
    ]
    jobs[4] = Job(jobs[4].vectors, jobs[4].positions, 10, 4, 0, True)
    thetas = [golden.theta_q(0.9), 0, 255, 128]
    check(p, jobs, thetas, run_jobs(p, jobs, thetas=thetas, stalls=stalls, seed=comparators))
    p1 = small(tile=1, comparators=comparators)
    one = [grid_job(1, 3, 4, vec, fs=4, hs=4)]
    check(p1, one, thetas, run_jobs(p1, one, thetas=thetas, stalls=stalls, seed=comparators))


def test_ties_go_to_the_smallest_c():
    """Token p has the same vector as its candidates c = 1 (p - 1) and c = 2 (p - HS), which are
    in different groups: the exact tie must pick c = 1. Then a later candidate that is strictly
    better (an exact copy, cos 1, against c = 1 at cos < 1) must win over c = 1."""
    p = small(comparators=3)
    hs, fs = 4, 10
    rng = np.random.default_rng(3)
    count = 5 * fs
    vec = rng.integers(-120, 120, (count, p.dim))
    a = np.array([90, -40, 17, 60])
    # Tie: p - 1 and p - HS both hold A (and are not candidates of each other: their distance is
    # HS - 1 = 3, not an offset); p holds A too.
    t = fs + 2 * hs + 3
    vec[t - 1] = vec[t - hs] = vec[t] = a
    # Strictly better later candidate: p2 - 1 holds A + noise, p2 - FS holds exactly A.
    t2 = 3 * fs + 2 * hs + 2
    vec[t2 - 1] = a + np.array([6, 5, -4, 3])
    vec[t2 - fs] = vec[t2] = a
    job = Job(vec, np.arange(count), fs, hs)
    thetas = [golden.theta_q(0.85)]
    (result,) = run_jobs(p, [job], thetas=thetas)
    check(p, [job], thetas, [result])
    got, _ = decode_beats(result.beats, p.dim, False)
    assert got[t] == got[t - 1] != got[t - hs]
    assert got[t2] == got[t2 - fs] != got[t2 - 1]


@pytest.mark.parametrize("comparators", [1, 7])
def test_zero_vectors_are_never_compared(comparators):
    """All-zero job: every token is new and every comparator slot is gated; then zeros mixed
    with copies (a zero candidate does not exist; a zero token matches nothing)."""
    p = small(comparators=comparators)
    zeros = Job(np.zeros((30, p.dim), np.int64), np.arange(30) * 2, 6, 2, mean=True)
    vec = np.tile(np.array([[5, 5, 5, 5]]), (40, 1))
    vec[::3] = 0
    mixed = Job(vec, np.arange(40), 8, 3)
    thetas = [0]
    results = run_jobs(p, [zeros, mixed], thetas=thetas)
    check(p, [zeros, mixed], thetas, results)
    assert results[0].active == 0 and results[0].uniques == 30


def test_thresholds_zero_and_max():
    """theta_q = 0 (every pair with a positive dot product is similar) and 2**F - 1 (only nearly
    parallel pairs), with F = 8 and F = 4, on the same tokens."""
    for theta_bits in (8, 4):
        p = small(theta_bits=theta_bits, layers=2)
        jobs, _ = regression_jobs(p, 4, seed=11)
        jobs = [Job(j.vectors, j.positions, j.frame_stride, j.row_stride, n % 2, j.mean)
                for n, j in enumerate(jobs)]
        thetas = [0, (1 << theta_bits) - 1]
        check(p, jobs, thetas, run_jobs(p, jobs, thetas=thetas))


def test_mean_rounding_and_full_groups():
    """Mean representatives: halves rounded away from zero (both signs), a group as large as the
    tile with every element at the most negative value, and 16-bit elements."""
    p = small(comparators=7)
    halves = np.array([[3, -3, 1, -1], [4, -4, 2, -2], [3, -3, 1, -1], [4, -4, 2, -2]] * 6)
    extreme = np.full((2 * p.tile + 5, p.dim), -128)
    jobs = [Job(halves, np.arange(len(halves)), 4, 1, mean=True),
            Job(extreme, np.arange(len(extreme)) * 3, 6, 3, mean=True)]
    results = run_jobs(p, jobs, thetas=[200])
    check(p, jobs, [200], results)
    _, uniques = decode_beats(results[1].beats, p.dim, True)
    assert (uniques == -128).all() and len(uniques) == 3
    wide = small(elem_bits=16, comparators=2)
    rng = np.random.default_rng(5)
    base = rng.integers(-30000, 30000, p.dim)
    vec = base + rng.integers(-900, 900, (60, p.dim))
    job = [Job(vec, np.arange(60), 10, 3, mean=True)]
    check(wide, job, [200], run_jobs(wide, job, thetas=[200]))


@pytest.mark.parametrize("comparators, stalls", stall_cross([1, 7], STALL_PATTERNS))
def test_adjacent_tokens_see_their_neighbours(comparators, stalls):
    """Chains of adjacent positions (FS = 2, HS = 1: every candidate is one of the last 4 tokens,
    and with 7 comparators the nearest was written into the window in the cycle before the
    token's lookup) in runs of near copies, so that most tokens match a token just written: the
    window's registered read and the candidate fetch's vector copy must see it, under the four
    stall patterns, against golden (both representatives)."""
    p = small(comparators=comparators)
    rng = np.random.default_rng(comparators + 40)
    protos = rng.integers(-100, 100, (3, p.dim))
    count = 2 * p.tile + 7
    runs = np.repeat(rng.integers(0, 3, count // 3 + 1), 3)[:count]
    vec = protos[runs] + rng.integers(-1, 2, (count, p.dim))
    jobs = [Job(vec, np.arange(count), 2, 1), Job(vec[::-1].copy(), np.arange(count), 3, 1,
                                                      mean=True)]
    thetas = [golden.theta_q(0.95)]
    results = run_jobs(p, jobs, thetas=thetas, stalls=stalls, seed=comparators)
    check(p, jobs, thetas, results)
    # Most tokens matched a neighbour (the test is about them).
    want_map, _ = golden_job(p, jobs[0], thetas)
    assert np.count_nonzero(np.diff(want_map) == 0) > count // 3


# ---- errors -----------------------------------------------------------------------------------


def test_bad_configuration_and_positions_are_rejected_and_never_hang():
    """FS + HS + 1 = window (and FS = 2**32 - 1), a layer past the table, a repeated position,
    positions going back in a mean job while its first tile drains, and a bad last position: each
    raises the error flag, drops the rest of its job, and the next job is right. A tight cycle
    limit makes a hang fail."""
    p = small(comparators=3, layers=3)
    jobs, thetas = regression_jobs(p, 5, seed=21)
    g = jobs[0]
    bad = [
        Job(g.vectors[:6], g.positions[:6], 8, 7),                     # 8 + 7 + 1 = 16
        Job(g.vectors[:2], g.positions[:2], (1 << 32) - 1, 0),
        Job(g.vectors[:3], g.positions[:3], 2, 2, layer=3),            # layers = 3
    ]
    pos = jobs[1].positions.copy()
    pos[12] = pos[11]
    bad.append(Job(jobs[1].vectors, pos, 4, 2, 1, False))
    vec = np.tile(jobs[2].vectors[:1], (40, 1))                        # one group: a long drain
    pos = np.arange(40)
    pos[p.tile + 1] = 3
    bad.append(Job(vec, pos, 4, 2, 2, True))
    pos = jobs[3].positions.copy()
    pos[-1] = pos[-2]
    bad.append(Job(jobs[3].vectors, pos, 4, 2, 0, False))
    sequence, errors = [], []
    for n, b in enumerate(bad):
        sequence += [b, jobs[n % len(jobs)]]
        errors += [True, False]
    tokens = sum(len(j.positions) for j in sequence)
    results = run_jobs(p, sequence, thetas=thetas, stalls=0.2, seed=3,
                       max_cycles=20 * tokens + 500)
    check(p, sequence, thetas, results, errors)
    # Nothing of a bad job's tokens after the error is ever output.
    assert len(results[6].beats) <= p.tile + 1 + p.tile


def test_error_flag_holds_until_the_next_configuration():
    """The error flag stays high after the bad job, through idle cycles, and a good job clears
    it. The block is idle (busy low) after the bad job."""
    p = small()
    good = Job(np.ones((5, p.dim), np.int64), np.arange(5), 2, 1)
    results = run_jobs(p, [Job(good.vectors, good.positions, 9, 9), good], thetas=[100])
    assert [r.error for r in results] == [True, False]
    (alone,) = run_jobs(p, [Job(good.vectors, good.positions, 9, 9)], thetas=[100])
    assert alone.error and alone.beats == []


def test_long_consumer_stall():
    """A consumer stall much longer than the pipeline, with both representatives in flight, then
    random back-pressure: nothing lost or duplicated."""
    p = small(comparators=7)
    jobs, thetas = regression_jobs(p, 2, seed=8)
    stalls = {"cfg_stream": 0.1, "i_stream": 0.1,
              "o_stream": Stalls(0.3, seed=2, windows=[(30, 200), (400, 120)])}
    check(p, jobs, thetas, run_jobs(p, jobs, thetas=thetas, stalls=stalls))


def assert_complete(p, job, result, thetas):
    """Nothing lost or duplicated: one map beat per token, the unique beats of golden (in index
    order, checked by decode_beats), ``last`` exactly on the final beat, and the map and unique
    vectors equal to golden."""
    beats = result.beats
    assert sum(b["token"] for b in beats) == len(job.positions)
    assert [b["last"] for b in beats] == [0] * (len(beats) - 1) + [1]
    want_map, want_uniques = golden_job(p, job, thetas)
    assert sum(b["unique"] for b in beats) == len(want_uniques)
    got_map, got_uniques = decode_beats(beats, p.dim, job.mean)
    np.testing.assert_array_equal(got_map, want_map)
    np.testing.assert_array_equal(got_uniques, want_uniques)


@pytest.mark.parametrize("comparators, mean", [
    pytest.param(1, False, id="1-first"), pytest.param(1, True, id="1-mean"),
    pytest.param(7, False, id="7-first"),
    pytest.param(7, True, id="7-mean", marks=pytest.mark.slow)])
def test_consumer_stall_longer_than_every_buffer(comparators, mean):
    """``o_stream.ready`` held low, once at the start and once in the middle of a job, for longer
    than every buffer of the matcher together (the window's slots, a tile of mean sums, the
    vector FIFO and every pipeline stage, each round of the slowest token): the result still
    equals golden and nothing is lost or duplicated. With 7 comparators and ``first`` the stall
    costs exactly its length: the whole pipeline held, and moves on at full rate."""
    p = small(comparators=comparators)
    rounds = matcher_rounds(p)
    longest = window_slots(p) + p.tile + 2 * matcher_latency(p) * rounds + 1
    rng = np.random.default_rng(comparators)
    protos = rng.integers(-100, 100, (4, p.dim))
    count = 3 * p.tile + 5
    vec = protos[rng.integers(0, 4, count)] + rng.integers(-2, 3, (count, p.dim))
    job = Job(vec, np.arange(count) * 2, 8, 3, mean=mean)
    thetas = [golden.theta_q(0.9)]
    start = matcher_latency(p) + 2 * p.tile * rounds // 3        # inside the second tile
    stalls = {"o_stream": Stalls(windows=[(0, longest), (longest + start, longest)])}
    (result,) = run_jobs(p, [job], thetas=thetas, stalls=stalls)
    assert_complete(p, job, result, thetas)
    (free,) = run_jobs(p, [job], thetas=thetas)
    assert result.cycles >= free.cycles + longest
    if comparators == 7 and not mean:
        assert free.cycles == golden.cycles.block_match_cycles(count, comparators)
        # Exactly the cycles ready was low while a beat was waiting: from the first map beat
        # (the stall windows count cycles from the start of the simulation) and all of the
        # second stall. Then the pipeline moves on at full rate.
        first_beat = free.stats["first_input"] + matcher_latency(p)
        assert result.cycles == free.cycles + (longest - first_beat) + longest


# ---- cycles -----------------------------------------------------------------------------------

@pytest.mark.parametrize("comparators", [
    c if c in (1, 2, 7) else pytest.param(c, marks=pytest.mark.slow) for c in range(1, 8)])
def test_cycles_match_the_model(comparators):
    """Without stalls and with ``first``: exactly golden.cycles.block_match_cycles, within the
    spec's target, across tile boundaries (S = 60, tile 24)."""
    p = small(comparators=comparators)
    rng = np.random.default_rng(comparators)
    job = Job(rng.integers(-9, 9, (60, p.dim)), np.arange(60) * 2, 6, 2)
    (result,) = run_jobs(p, [job], thetas=[230])
    assert result.cycles == golden.cycles.block_match_cycles(60, comparators)
    assert result.cycles <= golden.cycles.block_match_target(60, comparators)
    if comparators == 1:
        assert result.cycles <= 8 * 60


# ---- sim API ----------------------------------------------------------------------------------

def test_block_match_api_equals_golden():
    rng = np.random.default_rng(4)
    x = np.repeat(rng.integers(-128, 128, (12, 8), dtype=np.int8), 4, axis=0)
    x = (x + rng.integers(-2, 3, x.shape)).clip(-128, 127).astype(np.int8)
    pos = np.cumsum(rng.integers(1, 3, len(x)))
    args = dict(frame_stride=9, row_stride=3, theta_q=golden.theta_q(0.9), tile=20, window=16)
    for representative in ("first", "mean"):
        stats = {}
        got = sim.block_match(x, pos, representative=representative, stalls=0.2, stats=stats,
                              **args)
        want = golden.block_match(x, pos, representative=representative, **args)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].dtype == np.int8
        assert stats["uniques"] == len(want[1]) and stats["cycles"] > len(x)
    stats = {}
    mp, uniques = sim.block_match(x[:0], pos[:0], stats=stats, **args)
    assert mp.shape == (0,) and uniques.shape == (0, 8) and stats["cycles"] == 0


BAD_INPUTS = [
    (dict(vectors=np.zeros((3, 4), np.float32)), "integer"),
    (dict(vectors=np.zeros(4, np.int8)), "2-D"),
    (dict(positions=np.array([0, 2, 2])), "strictly increasing"),
    (dict(positions=np.array([-1, 2, 3])), ">= 0"),
    (dict(positions=np.array([0, 1])), "shape"),
    (dict(frame_stride=8, row_stride=7), "window"),
    (dict(frame_stride=-1), "frame_stride"),
    (dict(theta_q=256), "theta_q"),
    (dict(representative="median"), "representative"),
    (dict(tile=0), "tile"),
    (dict(theta_bits=17), "theta_bits = 17 is out of range"),
    (dict(theta_bits=0), "theta_bits = 0 is out of range"),
]


@pytest.mark.parametrize("bad, what", BAD_INPUTS, ids=[w.split(" is")[0] for _, w in BAD_INPUTS])
def test_block_match_api_raises_like_golden(bad, what):
    args = dict(vectors=np.ones((3, 4), np.int8), positions=np.array([0, 1, 2]), frame_stride=4,
                row_stride=2, theta_q=200, tile=8, window=16)
    args.update(bad)
    vectors, positions = args.pop("vectors"), args.pop("positions")
    with pytest.raises(ValueError) as want:
        golden.block_match(vectors, positions, **args)
    with pytest.raises(ValueError, match=what) as got:
        sim.block_match(vectors, positions, **args)
    assert str(got.value) == str(want.value)


def test_block_match_api_rtl_limits():
    x, pos = np.ones((3, 4), np.int64), np.array([0, 1, 2])
    args = dict(frame_stride=4, row_stride=2, theta_q=200, tile=8, window=16)
    with pytest.raises(ValueError, match=r"params.dim = 8 does not match dim = 4"):
        sim.block_match(x, pos, params=FocusParams(dim=8, tile=8, window=16), **args)
    with pytest.raises(ValueError, match=r"elem_bits"):
        sim.block_match(x * 300, pos, params=FocusParams(dim=4, tile=8, window=16), **args)
    with pytest.raises(ValueError, match=r"positions must be < 2\*\*32"):
        sim.block_match(x, pos + (1 << 32), **args)
    with pytest.raises(ValueError, match=r"Unknown simulator"):
        sim.block_match(x, pos, simulator="xsim", **args)
    # golden takes these; the RTL's range is named with the user's argument
    for change, message in (({"frame_stride": 0, "row_stride": 0, "window": 2},
                             (r"^window = 2 is out of the RTL's range \[4, 4096\] "
                             r"\(FocusParams\.window\)$")),
                            ({"window": 5000}, r"^window = 5000 is out of the RTL's range"),
                            ({"tile": 70_000}, (r"^tile = 70000 is out of the RTL's range "
                                               r"\[1, 65536\] \(FocusParams\.tile\)$"))):
        golden.block_match(x, pos, **{**args, **change})
        with pytest.raises(ValueError, match=message):
            sim.block_match(x, pos, **{**args, **change})
    wide = np.ones((3, 300), np.int64)
    golden.block_match(wide, pos, **args)
    with pytest.raises(ValueError, match=r"^V \(the vectors' length\) = 300 is out of the RTL's "
                                         r"range \[1, 256\] \(FocusParams\.dim\)$"):
        sim.block_match(wide, pos, **args)
    golden.sic(wide, pos, dim=300, **args)
    with pytest.raises(ValueError, match=r"^dim = 300 is out of the RTL's range \[1, 256\]"):
        sim.sic(wide, pos, dim=300, **args)


def test_numpy_integer_settings():
    """tile, window, theta_bits, dim, the strides and theta_q as NumPy integers: sim.sic and
    sim.block_match accept them as golden does, with the same result."""
    rng = np.random.default_rng(12)
    tokens = np.repeat(rng.integers(-9, 9, (5, 8)), 3, axis=0)
    pos = np.arange(15)
    args = dict(frame_stride=np.int64(6), row_stride=np.int32(2), theta_q=np.int64(200),
                theta_bits=np.int64(8), tile=np.int64(12), window=np.uint16(16))
    for got, want in ((sim.sic(tokens, pos, dim=np.int64(4), **args),
                       golden.sic(tokens, pos, dim=np.int64(4), **args)),
                      (sim.block_match(tokens[:, :4], pos, **args),
                       golden.block_match(tokens[:, :4], pos, **args))):
        np.testing.assert_array_equal(got[0], want[0])
        for g, w in zip(got[1], want[1], strict=True):
            np.testing.assert_array_equal(g, w)


def test_sic_columns_equal_golden():
    """D = 3V: three columns, each its own job; columns match different neighbours."""
    rng = np.random.default_rng(9)
    base = rng.integers(-60, 60, (4, 12))
    tokens = base[rng.integers(0, 4, 50)] + rng.integers(-4, 5, (50, 12))
    tokens[::7, 4:8] = 0
    pos = np.cumsum(rng.integers(1, 3, 50))
    args = dict(frame_stride=7, row_stride=3, theta_q=golden.theta_q(0.9), tile=32, window=16,
                dim=4)
    for representative in ("first", "mean"):
        stats = {}
        maps, uniques = sim.sic(tokens, pos, representative=representative, stats=stats,
                                params=small(tile=32), **args)
        want_maps, want_uniques = golden.sic(tokens, pos, representative=representative, **args)
        np.testing.assert_array_equal(maps, want_maps)
        assert len(uniques) == 3
        for u, w in zip(uniques, want_uniques, strict=True):
            np.testing.assert_array_equal(u, w)
        assert len(stats["column_cycles"]) == 3 and stats["cycles"] >= sum(stats["column_cycles"])
    assert not np.array_equal(want_maps[:, 0], want_maps[:, 1])


@pytest.mark.slow
@pytest.mark.parametrize("representative", ["first", "mean"])
def test_real_photo_tokens_default_dim(representative):
    """Tokens of the photograph panned over 2 frames of a 14x14 grid, at the default V = 32,
    window 256, 7 comparators, threshold 0.9, tiles of 256 (a tile boundary inside frame 1)."""
    x, pos = photo_tokens(frames=2, grid=14, dim=32)
    p = FocusParams(tile=256, layers=1, comparators=7)
    args = dict(frame_stride=196, row_stride=14, theta_q=golden.theta_q(0.9), tile=256,
                representative=representative)
    stats = {}
    got = sim.block_match(x, pos, params=p, stats=stats, **args)
    want = golden.block_match(x, pos, **args)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    if representative == "first":
        assert stats["cycles"] == golden.cycles.block_match_cycles(len(pos), 7)
    assert 0 < stats["active"] < 7 * len(pos) and len(want[1]) < len(pos)


@pytest.mark.slow
@pytest.mark.parametrize("frames, comparators", [(3, 1), (8, 7)])
def test_real_photo_tokens_pruned(frames, comparators):
    """Photograph tokens (14x14 grid) with 30 % of the positions pruned, V = 8, mean."""
    x, pos = photo_tokens(frames=frames, grid=14, dim=8, seed=frames)
    keep = np.random.default_rng(frames).random(len(pos)) < 0.7
    p = FocusParams(dim=8, tile=300, layers=1, comparators=comparators)
    args = dict(frame_stride=196, row_stride=14, theta_q=golden.theta_q(0.85), tile=300,
                representative="mean")
    got = sim.block_match(x[keep], pos[keep], params=p, stalls=0.1, **args)
    want = golden.block_match(x[keep], pos[keep], **args)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_ungated_comparators_give_the_same_results():
    """gate=False (the power baseline of the benchmark) changes clocking only."""
    p = small()
    jobs, thetas = regression_jobs(p, 2, seed=5)
    check(p, jobs, thetas, run_jobs(p, jobs, thetas=thetas, gate=False))


def test_block_is_registered_and_emits_icg():
    text = emit_block("block_matcher", small(gating="icg"))
    assert "focus_icg" in text and "module block_matcher" in text


# ---- a build without the mean unit --------------------------------------------------------------

@pytest.mark.parametrize("comparators, stalls", stall_cross([1, 7], STALL_PATTERNS))
def test_without_mean_unit(comparators, stalls):
    """``representatives = "first"``: ``first`` jobs equal golden, and a ``mean`` job between them
    is rejected (error flag, its tokens dropped), under the four stall patterns."""
    p = small(comparators=comparators, representatives="first")
    jobs, thetas = regression_jobs(p, 4, seed=comparators + 40)
    assert not any(j.mean for j in jobs)
    mean_job = Job(jobs[0].vectors, jobs[0].positions, jobs[0].frame_stride,
                   jobs[0].row_stride, jobs[0].layer, True)
    sequence = [jobs[0], mean_job, jobs[1], mean_job, jobs[2], jobs[3]]
    errors = [False, True, False, True, False, False]
    results = run_jobs(p, sequence, thetas=thetas, stalls=stalls, seed=comparators)
    check(p, sequence, thetas, results, errors)
    assert results[1].beats == [] and results[3].beats == []


def test_without_mean_unit_the_netlist_has_no_sums():
    """The sums memory and the divider are in the netlist only with the mean unit."""
    with_mean = emit_block("block_matcher", small())
    without = emit_block("block_matcher", small(representatives="first"))
    assert "divider" in with_mean and "sums" in with_mean
    assert "divider" not in without and "sums" not in without


def test_error_causes():
    """``cause`` says why ``error`` rose, for each reason, and both clear with the next
    configuration beat; a rejected job's tokens are consumed up to its ``last``."""
    p = small(representatives="first", layers=3)
    dut = BlockMatcher(p, icg_cell=None)
    good = {"frame_stride": 4, "row_stride": 2, "layer": 0, "mean": 0}
    cases = [
        ({**good, "mean": 1}, MatchError.MEAN),
        ({**good, "frame_stride": 8, "row_stride": 7}, MatchError.GEOMETRY),
        ({**good, "layer": 3}, MatchError.LAYER),
        ({**good, "frame_stride": 8, "row_stride": 7, "mean": 1}, MatchError.GEOMETRY),
        ({**good, "layer": 3, "mean": 1}, MatchError.LAYER),
        (good, MatchError.POSITION),
        (good, MatchError.NONE),
    ]
    seen = []

    def tokens(positions):
        return [{"vector": [1, 2, 3, 4], "position": q, "last": int(n == len(positions) - 1)}
                for n, q in enumerate(positions)]

    async def testbench(ctx):
        ctx.set(dut.o_stream.ready, 1)
        for cfg, cause in cases:
            await stream_put(ctx, dut.cfg_stream, [cfg])
            positions = [0, 1, 1, 2] if cause == MatchError.POSITION else [0, 1, 2]
            await stream_put(ctx, dut.i_stream, tokens(positions))
            for _ in range(40):
                await ctx.tick()
            assert not ctx.get(dut.busy)
            seen.append((ctx.get(dut.error), ctx.get(dut.cause)))

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(testbench)
    sim.run()
    assert seen == [(cause != MatchError.NONE, cause) for _, cause in cases]


@pytest.mark.parametrize("window", [4, 16, 100, 4096])
def test_geometry_check_at_its_edges(window):
    """The job control rejects FS + HS + 1 >= window (MatchError.GEOMETRY) exactly: at the
    edge from both sides, one stride alone, strides with bits only above the window's, and the
    largest strides (the sum past 32 bits), for windows that are and are not powers of two."""
    p = small(window=window, tile=max(window, 16))
    top = (1 << p.position_bits) - 1
    w = window
    cases = [(0, 0), (w - 2, 0), (0, w - 2), (w - 1, 0), (0, w - 1), (w // 2, w // 2 - 2),
             (w // 2, w // 2 - 1), (w // 2, w // 2), (w, 0), (1 << w.bit_length(), 0),
             (0, 1 << (w.bit_length() + 3)), (1 << 31, 0), (top, 0), (0, top), (top, top),
             (top - 1, 1), ((1 << w.bit_length()) - 1, 0)]
    dut = JobControl(p)
    seen = []

    async def testbench(ctx):
        for fs, hs in cases:
            ctx.set(dut.cfg_stream.payload, {"frame_stride": fs, "row_stride": hs, "layer": 0,
                                             "mean": 0})
            ctx.set(dut.cfg_stream.valid, 1)
            await ctx.tick().until(dut.cfg_stream.ready)
            ctx.set(dut.cfg_stream.valid, 0)
            await ctx.tick().repeat(2)          # SETUP, then RUN or DROP
            seen.append(ctx.get(dut.cause))
            # End the job: a last token (dropped or passed on), then its output.
            ctx.set(dut.i_stream.payload, {"vector": [0] * p.dim, "position": 0, "last": 1})
            ctx.set(dut.i_stream.valid, 1)
            ctx.set(dut.o_stream.ready, 1)
            await ctx.tick()
            ctx.set(dut.i_stream.valid, 0)
            ctx.set(dut.out_last, 1)
            await ctx.tick()
            ctx.set(dut.out_last, 0)

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(testbench)
    sim.run()
    assert seen == [MatchError.GEOMETRY if fs + hs + 1 >= window else MatchError.NONE
                    for fs, hs in cases]


def test_bad_position_is_taken_under_back_pressure():
    """A bad position raises ``error`` while the output is stalled and the pipeline full
    (``flush`` does not wait for the back-pressure chain), and is taken in the next cycle
    (``ready`` does not wait on the position compare, so not in its own cycle); the block then
    delivers the beat it offered and goes idle once the output moves."""
    p = small(representatives="first")
    dut = BlockMatcher(p, icg_cell=None)
    cfg = {"frame_stride": 4, "row_stride": 2, "layer": 0, "mean": 0}

    async def testbench(ctx):
        await stream_put(ctx, dut.cfg_stream, [cfg])
        ctx.set(dut.o_stream.ready, 0)
        position, idle = 0, 0
        ctx.set(dut.i_stream.valid, 1)
        ctx.set(dut.i_stream.payload.vector, [1, 2, 3, 4])
        while idle < 30:            # fill the pipeline until it takes nothing (7 rounds a token)
            ctx.set(dut.i_stream.payload.position, position)
            taken = ctx.get(dut.i_stream.ready)
            await ctx.tick()
            position, idle = (position + 1, 0) if taken else (position, idle + 1)
        assert position > 3
        ctx.set(dut.i_stream.payload.position, 0)
        ctx.set(dut.i_stream.payload.last, 1)
        assert not ctx.get(dut.i_stream.ready)
        await ctx.tick()
        assert (ctx.get(dut.error), ctx.get(dut.cause)) == (1, MatchError.POSITION)
        assert ctx.get(dut.i_stream.ready), "the bad position waits for the output"
        await ctx.tick()
        ctx.set(dut.i_stream.valid, 0)
        assert ctx.get(dut.busy)
        ctx.set(dut.o_stream.ready, 1)
        for _ in range(10):
            await ctx.tick()
        assert not ctx.get(dut.busy)

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("comparators", [7, 2])
def test_bad_position_drops_what_is_in_flight(comparators):
    """With tokens offered back to back and the output always ready, a bad position taken in
    cycle t drops everything in flight: at most one map beat leaves after t (the one in the
    output register, in cycle t + 1), the beats are golden's map of the tokens before the bad
    one, in order, and the next job's map is golden's. The stages before the output are flushed
    a cycle late, so this also checks that nothing they pass on in between reaches the output
    (it would wait there without its vector and leave with the next job's). Bad tokens at
    several phases of the rounds, then with random input idles (the phase of the beats)."""
    p = small(comparators=comparators, representatives="first")
    rng = np.random.default_rng(comparators)
    rounds = matcher_rounds(p)
    first_bad = matcher_latency(p) // rounds + 4    # the pipeline is full and beats leave
    count, theta = first_bad + 2 * rounds + 12, 200
    vectors = rng.integers(-2, 3, (count, p.dim))
    vectors[::3] = vectors[0]               # repeats, so that some tokens match
    cfg = {"frame_stride": 4, "row_stride": 2, "layer": 0, "mean": 0}

    def golden_map(n, positions):
        return golden.block_match(vectors[:n], positions[:n], frame_stride=4, row_stride=2,
                                  theta_q=theta, tile=p.tile, window=p.window)[0].tolist()

    async def run_job(ctx, dut, positions, bad=None, idles=None):
        """Configure, offer the tokens (``idles``: an idle cycle before a token is offered, else
        every cycle); returns (cycle, map) of every beat, and the cycle the token ``bad`` was
        taken."""
        await stream_put(ctx, dut.cfg_stream, [cfg])
        k, beats, bad_cycle, offered = 0, [], None, False
        for cycle in range(len(positions) * 16 + 100):
            offered = offered or not (idles is not None and idles.random() < 0.3)
            ctx.set(dut.i_stream.valid, k < len(positions) and offered)
            if k < len(positions):
                ctx.set(dut.i_stream.payload.vector, vectors[k].tolist())
                ctx.set(dut.i_stream.payload.position, int(positions[k]))
                ctx.set(dut.i_stream.payload.last, int(k == len(positions) - 1))
            taken = k < len(positions) and offered and ctx.get(dut.i_stream.ready)
            if ctx.get(dut.o_stream.valid):
                beats.append((cycle, ctx.get(dut.o_stream.payload.map)))
            await ctx.tick()
            if taken:
                bad_cycle = cycle if k == bad else bad_cycle
                k, offered = k + 1, False
        return beats, bad_cycle

    good = np.arange(12)
    for bad, idles in [(bad, None) for bad in range(first_bad, first_bad + rounds + 1)] + [
            (first_bad + n, np.random.default_rng(n)) for n in range(8)]:
        positions = np.arange(count)
        positions[bad] = positions[bad - 1]
        dut = BlockMatcher(p, icg_cell=None)
        seen = {}

        async def testbench(ctx, dut=dut, positions=positions, bad=bad, idles=idles, seen=seen):
            ctx.set(dut.theta_we, 1)
            ctx.set(dut.theta_data, theta)
            await ctx.tick()
            ctx.set(dut.theta_we, 0)
            ctx.set(dut.o_stream.ready, 1)
            seen["beats"], seen["bad_cycle"] = await run_job(ctx, dut, positions, bad, idles)
            seen["error"], seen["busy"] = ctx.get(dut.error), ctx.get(dut.busy)
            seen["next"], _ = await run_job(ctx, dut, good)

        sim = Simulator(dut)
        sim.add_clock(CLOCK_PERIOD)
        sim.add_testbench(testbench)
        sim.run()
        assert seen["error"] and not seen["busy"]
        t = seen["bad_cycle"]
        late = [c for c, _ in seen["beats"] if c > t]
        assert late in ([], [t + 1]), f"bad token {bad} taken in cycle {t}: beats in {late}"
        got = [m for _, m in seen["beats"]]
        assert 0 < len(got) < bad and got == golden_map(bad, positions)[:len(got)], bad
        assert [m for _, m in seen["next"]] == golden_map(len(good), good), f"after {bad}"


def test_sim_api_rejects_mean_without_the_unit():
    """``sim.block_match`` and ``sim.sic`` raise ``ValueError`` naming the parameter (golden
    would compute the mean; this build cannot), before running anything."""
    x, pos = np.ones((3, 4), np.int64), np.array([0, 1, 2])
    args = dict(frame_stride=4, row_stride=2, theta_q=200, tile=8, window=16)
    p = FocusParams(dim=4, tile=8, window=16, representatives="first")
    message = (r"representative 'mean' needs .*params\.representatives = 'first'.*"
               r"FocusParams\.representatives = 'first\+mean'")
    with pytest.raises(ValueError, match=message):
        sim.block_match(x, pos, representative="mean", params=p, **args)
    with pytest.raises(ValueError, match=message):
        sim.sic(x, pos, representative="mean", params=p, dim=4, **args)
    mp, _ = sim.block_match(x, pos, representative="first", params=p, **args)
    np.testing.assert_array_equal(mp, golden.block_match(x, pos, **args)[0])


@pytest.mark.slow
def test_paper_preset_real_photo_tokens():
    """The paper preset's matcher (one comparator, no mean unit, V = 32, window 256) on
    photograph tokens (2 frames of a 14x14 grid, a tile boundary inside frame 1): golden's
    result in the model's cycles, 7 per token."""
    x, pos = photo_tokens(frames=2, grid=14, dim=32)
    p = FocusParams.paper().replace(tile=256, layers=1)
    args = dict(frame_stride=196, row_stride=14, theta_q=golden.theta_q(0.9), tile=256)
    stats = {}
    got = sim.block_match(x, pos, params=p, stats=stats, **args)
    want = golden.block_match(x, pos, **args)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert stats["cycles"] == golden.cycles.block_match_cycles(len(pos), 1) == 7 * len(pos) + 31
