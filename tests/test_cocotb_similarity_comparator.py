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
from sim.runner import case_dir, run_cocotb, waves_path
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


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_waves(simulator, require_simulator, monkeypatch):
    """FOCUS_VCD=1 gives cocotb runs waves too: ``sim.similar`` on a simulator builds with tracing
    in the case's ``waves/`` folder (the untraced build is a different folder, left alone) and
    the trace (FST from Icarus, VCD from Verilator) lands in build/vcd/."""
    require_simulator(simulator)
    p = FocusParams(dim=2, elem_bits=4, theta_bits=2)
    path = waves_path("similarity_comparator", p, simulator, "similar")
    path.unlink(missing_ok=True)
    monkeypatch.setenv("FOCUS_VCD", "1")
    got = sim.similar(np.array([[1, 2], [3, -4]]), np.array([[1, 2], [-3, 4]]), 2,
                      theta_bits=2, params=p, simulator=simulator)
    np.testing.assert_array_equal(got, [True, False])
    assert path.is_file(), path
    data = path.read_bytes()
    if simulator == "verilator":
        text = data.decode()
        assert path.suffix == ".vcd" and "$enddefinitions" in text and "i_stream__valid" in text
    else:
        # FST: block type 0 (the header block) first; the body is compressed.
        assert path.suffix == ".fst" and data[0] == 0 and len(data) > 200
    case = case_dir("similarity_comparator", p, simulator, "similar")
    assert (case / "waves" / "results.xml").is_file()
    assert not any((case / name).exists() for name in ("dump.vcd", "similarity_comparator.fst"))
