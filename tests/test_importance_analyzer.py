# amaranth: UnusedElaboratable=no
"""The importance analyzer in the Amaranth simulator against golden.importance and the cycle model:
both dataflows, lanes 1/3/4/32, one beat per cycle through the read-modify-write hazard, the
vector complete within 3 cycles, bad settings."""

import numpy as np
import pytest
from helpers import SEC_SHAPES, cdiv, raises_like_golden, sec_shape_id

import golden
import sim
from golden.cycles import importance_cycles
from rtl.params import FocusParams
from rtl.sec.importance_analyzer import ANALYZER_DONE_LATENCY, ImportanceAnalyzer
from sim.sec import analyzer_config, importance_cases, run_jobs, score_beats, vector_from_beats
from sim.streams import Stalls

MODES = ["spatial", "temporal"]
SHAPES = SEC_SHAPES


def run_analyzer(p, cases, stalls=0.0, seed=0):
    """The cases back to back in one simulation; each vector checked against golden."""
    jobs = [{"cfg": analyzer_config(att.shape[1], att.shape[0], mode),
             "beats": score_beats(att, mode, p.lanes), "outputs": cdiv(att.shape[1], p.lanes)}
            for att, mode in cases]
    results, trace = run_jobs(ImportanceAnalyzer(p), jobs, stalls=stalls, seed=seed)
    for n, ((att, mode), result) in enumerate(zip(cases, results, strict=True)):
        got = vector_from_beats(result["outputs"], att.shape[1])
        want = golden.importance(att, mode)
        assert (got == want).all(), (
            f"job {n} ({mode}, R = {att.shape[0]}, M = {att.shape[1]}, lanes {p.lanes}): "
            f"{got.tolist()} != golden {want.tolist()}")
    return results, trace


def check_timing(p, cases, results, trace):
    """Exact cycles, one beat per cycle, and done within 3 cycles of the last beat."""
    for (att, mode), result in zip(cases, results, strict=True):
        R, M = att.shape
        beats = len(score_beats(att, mode, p.lanes))
        assert result["last_input"] - result["first_input"] + 1 == beats, "input stalled"
        assert result["cycles"] == importance_cycles(R, M, p.lanes, mode), (mode, R, M)
        done = trace["done"].index(1, result["last_input"])
        assert done - result["last_input"] == ANALYZER_DONE_LATENCY <= 3
        assert sum(trace["done"][result["cfg_cycle"]:result["last_output"] + 1]) == 1


@pytest.mark.parametrize("shape", SHAPES, ids=sec_shape_id)
def test_regression_exact_cycles(shape):
    """Mixed jobs (both dataflows, R and M at and around lanes, heavy ties) without stalls."""
    p = FocusParams(**shape)
    cases = importance_cases(p, 16, seed=shape["lanes"])
    results, trace = run_analyzer(p, cases)
    check_timing(p, cases, results, trace)


@pytest.mark.parametrize("shape", SHAPES, ids=sec_shape_id)
def test_regression_under_stalls(shape):
    p = FocusParams(**shape)
    run_analyzer(p, importance_cases(p, 16, seed=50 + shape["lanes"]), stalls=0.3, seed=5)


@pytest.mark.parametrize("idle, backpressure", [(0.5, 0.0), (0.0, 0.5)],
                         ids=["idle", "backpressure"])
def test_idles_or_backpressure_alone(idle, backpressure):
    p = FocusParams(tokens=24, lanes=4)
    stalls = {"cfg_stream": idle, "i_stream": idle, "o_stream": backpressure}
    run_analyzer(p, importance_cases(p, 10, seed=9), stalls=stalls, seed=2)


@pytest.mark.parametrize("lanes", [1, 3, 4, 32])
@pytest.mark.parametrize("mode", MODES)
def test_one_word_rows_and_columns(mode, lanes):
    """M <= lanes (every beat of a spatial job reads the word the previous beat is writing),
    R <= lanes (one beat per temporal column), M = 1, R = 1, at one beat per cycle."""
    p = FocusParams(tokens=lanes + 2, lanes=lanes, score_bits=8)
    rng = np.random.default_rng(lanes)
    shapes = sorted({(1, 1), (7, 1), (1, lanes), (9, lanes), (lanes, max(1, lanes - 1)),
                     (lanes + 1, lanes + 2), (2 * lanes + 1, 2)})
    cases = [(rng.integers(0, 256, shape), mode) for shape in shapes]
    # Increasing rows: every beat raises every lane, so a stale read-back would show.
    cases.append((np.arange(6)[:, None] * 40 + np.arange(lanes)[None, :] % 3, mode))
    results, trace = run_analyzer(p, cases)
    check_timing(p, cases, results, trace)


def test_score_extremes():
    p = FocusParams(tokens=9, lanes=4, score_bits=32)
    top = (1 << 32) - 1
    cases = [(np.full((3, 9), top, np.uint64), "spatial"),
             (np.zeros((5, 9), np.uint64), "temporal"),
             (np.array([[top, 0, 1], [0, top, 2]], np.uint64), "temporal")]
    run_analyzer(p, cases)


def test_long_backpressure():
    p = FocusParams(tokens=24, lanes=4)
    cases = importance_cases(p, 3, seed=4)
    run_analyzer(p, cases, stalls={"o_stream": Stalls(windows=[(3, 300)])})


@pytest.mark.parametrize("cfg", [dict(M=0, R=3), dict(M=25, R=3), dict(M=5, R=0)],
                         ids=["M0", "M_over_tokens", "R0"])
def test_bad_settings_raise_error_and_recover(cfg):
    """M = 0, M > tokens, R = 0: error from the cycle after the configuration beat, never busy,
    stray beats dropped; the next job runs normally and clears the error."""
    p = FocusParams(tokens=24, lanes=4)
    att = np.random.default_rng(3).integers(0, 99, (3, 10))
    bad = {"cfg": {**analyzer_config(1, 1, "spatial"), **cfg},
           "beats": score_beats(att, "spatial", 4)[:3], "outputs": 0}
    good = {"cfg": analyzer_config(10, 3, "temporal"), "beats": score_beats(att, "temporal", 4),
            "outputs": 3}
    results, trace = run_jobs(ImportanceAnalyzer(p), [bad, good], max_cycles=500)
    c0, c1 = results[0]["cfg_cycle"], results[1]["cfg_cycle"]
    assert results[0]["last_input"] is not None          # the stray beats were taken and dropped
    assert all(trace["error"][c0 + 1:c1 + 1]) and not any(trace["busy"][c0 + 1:c1 + 1])
    assert not any(trace["done"][c0:c1 + 1])
    assert not any(trace["error"][c1 + 1:]) and trace["busy"][c1 + 1]
    assert (vector_from_beats(results[1]["outputs"], 10) == att.max(axis=0)).all()


# ---- the Python API -----------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_sim_importance_matches_golden(mode):
    rng = np.random.default_rng(11)
    p = FocusParams(tokens=40, lanes=4)
    for dtype in (np.uint16, np.int64, np.uint8):
        scores = rng.integers(0, 250, (6, 37)).astype(dtype)
        stats = {}
        got = sim.importance(scores, mode, params=p, stalls=0.25, stats=stats, seed=3)
        want = golden.importance(scores, mode)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert (got == want).all()
        assert stats["done_latency"] == ANALYZER_DONE_LATENCY


def test_sim_importance_default_params_fit_the_data():
    scores = np.random.default_rng(12).integers(0, 1 << 20, (2, 1100))
    stats = {}
    got = sim.importance(scores, "temporal", stats=stats)
    assert (got == golden.importance(scores)).all()
    assert stats["cycles"] == importance_cycles(2, 1100, 4, "temporal")


@pytest.mark.parametrize("dtype", [">u2", ">i4", "<u4", ">u8", "u1"])
def test_sim_importance_dtype_of_any_byte_order(dtype):
    """Big-endian scores: the vector has golden's dtype (native byte order), not the input's."""
    scores = np.random.default_rng(2).integers(0, 250, (3, 9)).astype(dtype)
    got, want = sim.importance(scores), golden.importance(scores)
    assert got.dtype == want.dtype and got.dtype.isnative
    assert (got == want).all()


@pytest.mark.parametrize("scores, mode, message", [
    (np.zeros(4, np.uint16), "spatial", r"^scores must be 2-D \[R rows, M tokens\], not shape"),
    (np.zeros((0, 3), np.uint16), "spatial", r"^scores has no rows \(shape \(0, 3\)\)"),
    (np.zeros((2, 0), np.uint16), "temporal", r"^scores has no tokens"),
    (np.ones((2, 2)), "spatial", r"^scores must be an unsigned integer array"),
    (np.array([[1, -3]]), "spatial", r"^scores must be >= 0"),
    (np.ones((2, 2), np.uint8), "rows", r"^mode = 'rows' is not allowed"),
])
def test_sim_importance_rejects_what_golden_rejects(scores, mode, message):
    raises_like_golden(message, golden.importance, sim.importance, scores, mode)


def test_sim_importance_rejects_what_the_params_cannot_hold():
    p = FocusParams(tokens=8, lanes=4, score_bits=4)
    with pytest.raises(ValueError, match=r"^M = 9 > tokens = 8: the importance buffer holds"):
        sim.importance(np.zeros((2, 9), np.uint8), params=p)
    with pytest.raises(ValueError, match=r"^scores must fit in score_bits = 4 bits: the largest "
                                         r"is 17$"):
        sim.importance(np.array([[1, 17]]), params=p)
    with pytest.raises(ValueError, match=r"^R = 65536 is out of range: the analyzer counts at "
                                         r"most 65535 rows$"):
        sim.importance(np.zeros((65536, 1), np.uint8), params=p)
