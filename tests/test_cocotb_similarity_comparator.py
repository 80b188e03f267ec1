"""The similarity comparator's emitted Verilog under cocotb (slow tier; style R8).

Each case builds in its own directory under ``build/cocotb/similarity_comparator/`` (see
:mod:`sim.runner`), so the cases run in parallel under pytest-xdist. ``gating="icg"`` runs the
behavioural latch-and-AND ICG module that ships with the Verilog.
"""

import numpy as np
import pytest

import golden
import sim
from rtl.params import FocusParams
from sim.runner import run_cocotb
from sim.similarity import comparison_vectors

pytestmark = pytest.mark.cocotb

SIMULATORS = ["icarus", "verilator"]
GATINGS = [FocusParams(), FocusParams(gating="icg")]


@pytest.mark.parametrize("simulator", SIMULATORS)
@pytest.mark.parametrize("p", GATINGS, ids=lambda p: p.tag)
def test_regression(p, simulator, require_simulator):
    """10 000 mixed pairs at V = 32 against golden, without stalls and with 30 % input idles and
    output back-pressure, plus the monitor self-test (see sim/tb/similarity_comparator.py)."""
    require_simulator(simulator)
    run_cocotb("similarity_comparator", p, test_module="sim.tb.similarity_comparator",
               simulator=simulator, case="regression")


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_similar_matches_golden_and_amaranth(simulator, require_simulator):
    """``sim.similar`` on a simulator equals golden, and gives the same cycles and counters as the
    Amaranth simulator for the same seed (the stall patterns are the same)."""
    require_simulator(simulator)
    p = FocusParams(dim=8, gating="icg")
    x, y, _ = comparison_vectors(p, 200, seed=21)
    x[:5] = 0
    stats, reference = {}, {}
    got = sim.similar(x, y, 230, params=p, simulator=simulator, stalls=0.3, stats=stats, seed=4)
    np.testing.assert_array_equal(got, golden.similar(x, y, 230))
    sim.similar(x, y, 230, params=p, stalls=0.3, stats=reference, seed=4)
    assert stats == reference
    assert stats["gated"] == int(np.count_nonzero((x == 0).all(axis=1) | (y == 0).all(axis=1)))
