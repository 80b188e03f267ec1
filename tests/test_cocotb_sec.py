"""SEC's importance analyzer and top-k selector as emitted Verilog under cocotb (slow tier).

Icarus runs the regressions at lanes 1, 3, 4 and 32 for the analyzer and both sorters; Verilator
(whose C++ build costs several seconds per netlist) runs lanes 3. Verilator at lanes 32 is left out
for a toolchain reason, not a design one: those netlists are big enough for Verilator to split its
C++ output, and the split build uses precompiled headers, which the PyPI wheel's ``verilated.mk``
breaks (``CFG_CXXFLAGS_PCH_I`` is empty, so ``c++`` gets ``Vtop__pch.h.fast`` as an input file).
Building with ``--output-split 0`` avoids it. Each case builds in its own directory under
``build/cocotb/<block>/`` (see :mod:`sim.runner`); ``sim.importance`` and ``sim.topk_mask`` on a
simulator share that build (case ``sec``).

The complete SEC (block ``sec``, :mod:`sim.tb.semantic_concentrator`) runs end to end on both
simulators with both sorters, at one small shape: its regression jobs and ``sim.sec`` share one
build per case.
"""

import numpy as np
import pytest

import golden
import sim
from golden.cycles import importance_cycles, topk_cycles
from rtl.params import FocusParams
from sim.runner import run_cocotb

pytestmark = pytest.mark.cocotb

SHAPES = {1: dict(tokens=12, lanes=1, score_bits=5), 3: dict(tokens=20, lanes=3, score_bits=16),
          4: dict(tokens=24, lanes=4, score_bits=9), 32: dict(tokens=70, lanes=32, score_bits=16)}
CASES = ([("icarus", lanes) for lanes in (1, 3, 4, 32)]
         + [("verilator", 3)])
BLOCKS = [("importance_analyzer", "bubble", "importance_regression"),
          ("topk_selector", "bubble", "topk_regression"),
          ("topk_selector", "radix", "topk_regression")]


@pytest.mark.parametrize("block, sorter, regression", BLOCKS,
                         ids=["analyzer", "bubble", "radix"])
@pytest.mark.parametrize("simulator, lanes", CASES, ids=[f"{s}-a{a}" for s, a in CASES])
def test_regression(simulator, lanes, block, sorter, regression, require_simulator):
    """40 mixed jobs against golden without stalls (and the exact model cycles) and with 30 %
    idles and back-pressure, plus the bad-settings test (see sim/tb/importance_topk.py)."""
    require_simulator(simulator)
    p = FocusParams(sorter=sorter, **SHAPES[lanes])
    run_cocotb(block, p, test_module="sim.tb.importance_topk", simulator=simulator, case="sec",
               testcase=f"{regression},bad_settings", extra_env={"FOCUS_BLOCK": block})


@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_sim_api_on_simulators(simulator, require_simulator):
    """sim.importance and sim.topk_mask on the simulator equal golden (with stalls), and take the
    model's cycles without stalls."""
    require_simulator(simulator)
    rng = np.random.default_rng(3)
    p = FocusParams(sorter="radix", **SHAPES[3])
    scores = rng.integers(0, 3000, (7, 19))
    stats = {}
    analyzer = FocusParams(**SHAPES[3])                  # shares the regression's build
    got = sim.importance(scores, "temporal", params=analyzer, simulator=simulator, stalls=0.3,
                         seed=1)
    assert (got == golden.importance(scores)).all()
    sim.importance(scores, "spatial", params=analyzer, simulator=simulator, stats=stats)
    assert stats["cycles"] == importance_cycles(7, 19, 3, "spatial")
    s = rng.integers(0, 4, 20)
    got = sim.topk_mask(s, 7, params=p, simulator=simulator, stalls=0.3, seed=2)
    assert (got == golden.topk_mask(s, 7)).all()
    sim.topk_mask(s, 7, params=p, simulator=simulator, stats=stats)
    assert stats["cycles"] == topk_cycles(20, 7, 3, 16, "radix")


# ---- the complete SEC (block "sec") ------------------------------------------------------------

SEC_SHAPE = dict(tokens=14, lanes=3, score_bits=8, word_bits=8)


@pytest.mark.parametrize("sorter", ["bubble", "radix"])
@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_sec_end_to_end(simulator, sorter, require_simulator):
    """The complete SEC as emitted Verilog: 16 mixed jobs back to back (both dataflows, every
    fixed order and the adaptive one, M from 1 to tokens, ties, keep at its edges) equal to
    golden.sec, with the status outputs right and the same cycle counts as the Amaranth
    simulation, without stalls and with 30 % idles and back-pressure; then sim.sec itself."""
    from sim.sec import code_from_words, mask_from_beats, run_sec_jobs, sec_cases, sec_job

    require_simulator(simulator)
    p = FocusParams(sorter=sorter, **SEC_SHAPE)
    cases = sec_cases(p, 16, seed=21)
    jobs = [sec_job(p, *case) for case in cases]
    for stalls in (0.0, 0.3):
        got = run_sec_jobs(p, jobs, simulator=simulator, stalls=stalls, seed=5)
        reference = run_sec_jobs(p, jobs, stalls=stalls, seed=5)
        for n, ((scores, mode, keep, order), r, ref) in enumerate(zip(cases, got, reference,
                                                                      strict=True)):
            want_mask, want_words, want_nbits = golden.sec(scores, keep, mode=mode, order=order,
                                                           word_bits=p.word_bits)
            what = f"job {n}: {mode}, shape {scores.shape}, keep {keep}, order {order}"
            mask = mask_from_beats(r["mask_beats"], scores.shape[1], p.lanes)
            words, nbits = code_from_words(r["words"])
            assert (mask == want_mask).all(), what
            assert np.array_equal(words, want_words) and nbits == want_nbits, what
            assert (r["kept"], r["nbits"], r["error"]) == (int(want_mask.sum()), nbits, 0), what
            assert r["order"] == int(want_words[0]) >> (p.word_bits - 3), what
            assert (r["cycles"], r["done"] - r["cfg_cycle"]) == (
                ref["cycles"], ref["done"] - ref["cfg_cycle"]), what
    rng = np.random.default_rng(8)
    for mode in ("spatial", "temporal"):
        scores = rng.integers(0, 4, (4, 13))                       # heavy ties
        got = sim.sec(scores, 6, mode=mode, order=None, word_bits=8, params=p,
                      simulator=simulator, stalls=0.3, seed=3)
        want = golden.sec(scores, 6, mode=mode, word_bits=8)
        assert (got[0] == want[0]).all() and np.array_equal(got[1], want[1])
        assert got[2] == want[2]
