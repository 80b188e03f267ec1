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


def test_focus_gemm_coded_on_icarus(require_simulator):
    """``FocusGemmCoded``'s Verilog on Icarus, 30 % stalls on every port: a job whose tile-1 code
    of column 1 names a candidate that is not in its tile (``CANDIDATE``: error and cause set,
    the job still ends), then a good job equal to golden with the error cleared, the tile idle."""
    from helpers import coded_gemm_job

    from golden import map_code as gmc
    from golden.gemm import focus_gemm_coded
    from rtl.sic.map_decoder import MapDecodeError
    from sim.gemm import assemble, coded_job
    from sim.runner import run_job

    require_simulator("icarus")
    p = FocusParams(dim=4, tile=8, scatter_rows=2, window=16, word_bits=16)
    geometry = dict(frame_stride=6, row_stride=2, tile=8, window=16, word_bits=16)
    rng = np.random.default_rng(12)
    uniques, codes, pos, _, symbols = coded_gemm_job(rng, 13, 2, 4, 8, share=0.7, gap=1)
    w = rng.integers(-128, 128, (8, 3))
    counts = [[int((symbols[t * 8:(t + 1) * 8, c] == 0).sum()) for c in range(2)]
              for t in range(2)]
    bad_symbols = symbols[8:13, 1].copy()
    bad_symbols[0] = 1                              # a tile's first row has no earlier row
    words, nbits = gmc.encode_map(bad_symbols, word_bits=16)
    bad_codes = [codes[0], [codes[1][0], ([int(x) for x in words], nbits)]]
    bad_counts = [counts[0], [counts[1][0], None]]
    jobs = [coded_job(uniques, bad_codes, pos, w, 6, 2, p, bad_counts),
            coded_job(uniques, codes, pos, w, 6, 2, p, counts)]
    beats = {port: [b for j in jobs for b in j.beats[port]] for port in jobs[0].beats}
    out = run_job("focus_gemm_coded", p, {"beats": beats, "count": sum(j.count for j in jobs),
                                          "stalls": 0.3, "seed": 5},
                  test_module="sim.tb.focus_gemm_coded", simulator="icarus", case="coded")
    (bad_error, bad_cause), (error, cause) = out["flags"]
    assert bad_error == 1 and MapDecodeError(bad_cause) == MapDecodeError.CANDIDATE
    assert error == 0 and cause == 0 and out["busy"] == 0
    second = out["results"][jobs[0].count:]
    y = assemble(second, jobs[1].tiles, 13, 3, p)
    np.testing.assert_array_equal(y, focus_gemm_coded(uniques, codes, pos, w, **geometry))
    assert out["transfers"]["o_stream"] == jobs[0].count + jobs[1].count
