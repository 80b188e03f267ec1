"""FocusUnit's emitted Verilog under cocotb (slow tier): ``sim.focus`` on Icarus and Verilator,
with stalls, against golden.focus and against the Amaranth simulator's counters.

Each case builds in its own directory under ``build/cocotb/focus_unit/`` (see :mod:`sim.runner`).
The testbench is :mod:`sim.tb.focus_unit`: the same host program as the Amaranth runs
(:func:`sim.focus.focus_program`) over the register bus, with a stream-rule monitor on every
stream port.
"""

import numpy as np
import pytest

import golden
import sim
from rtl.params import FocusParams

pytestmark = pytest.mark.cocotb

SMALL = dict(tokens=40, lanes=4, dim=4, window=16, tile=24, layers=2)

CASES = [
    ("icarus", FocusParams(**SMALL, comparators=7, gating="icg")),
    ("verilator", FocusParams(**SMALL, comparators=1)),
]


def _job(seed, M):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 5000, (3, M))
    protos = rng.integers(-100, 101, (3, 8))
    tokens = protos[rng.integers(0, 3, M)] + rng.integers(-4, 5, (M, 8))
    tokens[rng.random(M) < 0.1] = 0
    return scores, tokens


def assert_same_focus(got, want):
    """``(mask, words, nbits, maps, uniques)`` of sim.focus equal golden.focus's."""
    for g, w in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(g, w)
    assert len(got[4]) == len(want[4])
    for g, w in zip(got[4], want[4], strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("simulator, p", CASES, ids=[f"{s}-c{p.comparators}-{p.gating}"
                                                     for s, p in CASES])
def test_focus_regression(simulator, p, require_simulator):
    """Two columns (D = 2V), 30 % idles and back-pressure: equal to golden; kept, nbits, order,
    uniques and comparator-cycles equal the Amaranth simulator's (the cycle counts differ: the
    cocotb host's bus reads take two cycles, so the stall patterns fall differently)."""
    require_simulator(simulator)
    scores, tokens = _job(p.comparators, 37)
    args = dict(mode="temporal", order=None, frame_stride=6, row_stride=2,
                theta_q=golden.theta_q(0.9), tile=24, window=16, representative="mean", dim=4)
    want = golden.focus(scores, tokens, 21, **args)
    stats, reference = {}, {}
    got = sim.focus(scores, tokens, 21, params=p, simulator=simulator, stalls=0.3, seed=2,
                    stats=stats, **args)
    assert_same_focus(got, want)
    sim.focus(scores, tokens, 21, params=p, stalls=0.3, seed=2, stats=reference, **args)
    for key in ("kept", "nbits", "order", "uniques", "active", "gated"):
        assert stats[key] == reference[key], key
    assert stats["kept"] == 21 and stats["uniques"] == [len(u) for u in want[4]]
    assert stats["sec_cycles"] > 0 and all(c > 0 for c in stats["sic_cycles"])


@pytest.mark.parametrize("simulator, p", CASES, ids=[f"{s}-c{p.comparators}-{p.gating}"
                                                     for s, p in CASES])
def test_focus_photo(simulator, p, require_simulator):
    """A real photograph panned into 3 frames of 3x3 patches (27 tokens of D = 2V), importance
    from a query patch's attention (fp16 bit patterns), 25 % stalls: equal to golden. Same
    parameters as the regression above, so the simulator builds are shared."""
    require_simulator(simulator)
    x, _ = golden.photo.photo_tokens(frames=3, grid=3, patch=8, dim=8)
    attention = golden.photo.photo_attention(frames=3, grid=3, patch=8, dim=8, queries=2, seed=3)
    scores = golden.scores_from_fp16(attention.astype(np.float16))
    args = dict(frame_stride=9, row_stride=3, theta_q=golden.theta_q(0.8), tile=24, window=16,
                dim=4)
    want = golden.focus(scores, x, 18, **args)
    stats = {}
    got = sim.focus(scores, x, 18, params=p, simulator=simulator, stalls=0.25, seed=5,
                    stats=stats, **args)
    assert_same_focus(got, want)
    assert stats["kept"] == 18 and stats["uniques"] == [len(u) for u in want[4]]
    assert any(len(u) < 18 for u in want[4])            # the photo does have similar neighbours
