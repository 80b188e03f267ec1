"""The Focus GEMM's emitted Verilog under cocotb on Icarus and Verilator (slow tier; style R8).

Each case builds in its own directory under ``build/cocotb/focus_gemm/`` (see :mod:`sim.runner`).
"""

import numpy as np
import pytest

import golden
import sim
from golden.gemm_cycles import focus_gemm_cycles
from rtl.params import FocusParams
from sim.runner import run_cocotb

pytestmark = pytest.mark.cocotb

SIMULATORS = ["icarus", "verilator"]
P = FocusParams(dim=4, tile=8, scatter_rows=2)


def job(seed):
    """19 rows (three tiles of 8, 8 and 3), two chunks, N = 6 (two column tiles), SIC-like maps."""
    rng = np.random.default_rng(seed)
    maps = np.zeros((19, 2), np.int64)
    uniques = []
    for c in range(2):
        count = 0
        for s in range(19):
            if s % 8 and rng.random() < 0.6:
                maps[s, c] = maps[rng.integers(s - s % 8, s), c]
            else:
                maps[s, c], count = count, count + 1
        uniques.append(rng.integers(-128, 128, (count, 4), dtype=np.int8))
    return uniques, maps, rng.integers(-128, 128, (8, 6), dtype=np.int8)


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_focus_gemm_matches_golden_and_amaranth(simulator, require_simulator):
    """``sim.focus_gemm`` on a simulator equals golden under 30 % stalls on every port, with the
    same cycles and transfers as the Amaranth simulator for the same seed; without stalls the
    cycles are the analytic model's."""
    require_simulator(simulator)
    uniques, maps, w = job(1)
    stats, reference = {}, {}
    got = sim.focus_gemm(uniques, maps, w, params=P, simulator=simulator, stalls=0.3, seed=7,
                         stats=stats)
    np.testing.assert_array_equal(got, golden.focus_gemm(uniques, maps, w))
    sim.focus_gemm(uniques, maps, w, params=P, stalls=0.3, seed=7, stats=reference)
    assert stats == reference
    quiet = {}
    sim.focus_gemm(uniques, maps, w, params=P, simulator=simulator, stats=quiet)
    assert quiet["cycles"] == focus_gemm_cycles(maps, 6, P)


def test_monitor_catches_violations(require_simulator):
    """The testbench's protocol monitor records a planted violation (sim/tb/focus_gemm.py)."""
    require_simulator("icarus")
    run_cocotb("focus_gemm", P, test_module="sim.tb.focus_gemm", simulator="icarus",
               case="monitor", testcase="monitor_catches_violations")
