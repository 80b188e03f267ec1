# amaranth: UnusedElaboratable=no
"""Synthesis flows: generic transistor estimate, iCE40/ECP5 counts and Fmax through the timing
harness, DSP fallback, and failures reported rather than raised.

The flows run on a tiny comparator (V = 2, 4-bit elements, F = 2) so that the file takes seconds;
the default-preset figures come from ``focus-rtl synth``, not from here.
"""

import json
import re

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from helpers import liberty_cell_areas, liberty_or_skip

from focus_rtl import cli
from rtl.flow import fpga, synth, toolchain, tools
from rtl.flow import report as flow_report
from rtl.flow.harness import HARNESS_NAME, TimingHarness
from rtl.flow.synth import (
    harness_verilog,
    plot_sweep,
    relative_shares,
    report_markdown,
    run_sweep,
    run_synth,
    sweep_markdown,
    synth_block,
)
from rtl.params import FocusParams
from rtl.sic.similarity_comparator import COMPARATOR_LATENCY

BLOCK = "similarity_comparator"
TINY = FocusParams(dim=2, elem_bits=4, theta_bits=2)
# More multipliers wide enough for SB_MAC16 (outputs of 11 bits or more) than the UP5K's 8, but
# small enough in LUTs.
DSP_HEAVY = FocusParams(dim=8, elem_bits=6, theta_bits=2)


@pytest.fixture
def work(build_dir):
    return build_dir


def _port_bits(block, flow):
    return sum(len(Value.cast(v)) for _, m, v in block.signature.flatten(block) if m.flow == flow)


def test_harness_shape():
    text, harness = harness_verilog(BLOCK, TINY)
    header = re.search(r"^module focus_harness\((.*)\);", text, re.MULTILINE)
    assert sorted(p.strip() for p in header.group(1).split(",")) == ["clk", "din", "dout", "rst"]
    assert re.search(r"^module \\focus_harness\.dut", text, re.MULTILINE)
    dut = harness.block
    assert harness.in_bits == _port_bits(dut, In) > 1
    assert harness.out_bits == _port_bits(dut, Out) > 1
    tree, n = 0, harness.out_bits
    while n > 1:
        n = -(-n // 4)
        tree += n
    assert harness.overhead_ffs == harness.in_bits + harness.out_bits + tree


@pytest.mark.synth
def test_generic_transistors(work):
    result = synth_block(BLOCK, "generic", TINY, work_root=work)
    assert result["status"] == "ok", result["error"]
    assert result["transistors"] > 0
    assert result["cells"] > result["ff"] > 0
    assert not result["transistors_lower_bound"]
    assert result["uncosted_cells"] == {}
    assert (work / TINY.tag / BLOCK / "generic" / "stat.json").exists()


@pytest.mark.synth
def test_generic_icg_latches_are_a_lower_bound(work):
    result = synth_block(BLOCK, "generic", TINY.replace(gating="icg"), work_root=work)
    assert result["status"] == "ok", result["error"]
    # One ICG latch per comparator stage.
    assert result["latch"] == COMPARATOR_LATENCY
    assert result["transistors_lower_bound"]
    assert result["uncosted_cells"] == {"$_DLATCH_N_": COMPARATOR_LATENCY}


@pytest.mark.synth
@pytest.mark.parametrize("target", ["ice40", "ecp5"])
def test_fpga_flow(work, target):
    result = synth_block(BLOCK, target, TINY, work_root=work)
    assert result["status"] == "ok", result["error"]
    assert result["block"]["lut"] > 0
    assert result["block"]["ff"] > 0
    assert result["fmax_mhz"] > 0
    # The harness's own flip-flops are exactly the shift chain, output register and XOR tree.
    assert result["harness"]["ff"] == harness_verilog(BLOCK, TINY)[1].overhead_ffs
    logic = result["device"]["ICESTORM_LC" if target == "ice40" else "TRELLIS_COMB"]["used"]
    assert logic >= result["block"]["lut"] + result["harness"]["lut"]
    # The critical path that sets the Fmax, from nextpnr's report: named ends, its delay.
    path = result["critical_path"]
    assert path["from_clock"] == path["to_clock"] and path["start"]["cell"] and path["end"]["cell"]
    assert path["start_net"] and path["logic_levels"] >= 1
    assert path["delay_ns"] == pytest.approx(path["logic_ns"] + path["routing_ns"], abs=2e-3)
    assert 1000 / path["delay_ns"] == pytest.approx(result["fmax_mhz"], rel=1e-3)


class _ArrayCounters(wiring.Component):
    """Four counters updated in place in an ArrayLayout port: Amaranth emits the element wires
    "counts[0]".."counts[3]" beside the flat "counts", the names that abc9's reintegration
    collides on (fpga.UNBRACKET)."""

    inc: In(4)
    counts: Out(data.ArrayLayout(4, 4))

    def elaborate(self, platform):
        m = Module()
        for i in range(4):
            with m.If(self.inc[i]):
                m.d.sync += self.counts[i].eq(self.counts[i] + 1)
        return m


@pytest.mark.synth
@pytest.mark.parametrize("target", ["ice40", "ecp5"])
def test_array_element_wires_pass_abc9(work, monkeypatch, target):
    """Without fpga.UNBRACKET, Yosys 0.70 asserts (`count_id(wire->name) == 0`) in abc9 on both
    FPGAs for this block; with it the block maps and keeps its 16 counter flip-flops."""
    def harness(block, params):
        harness = TimingHarness(_ArrayCounters())
        return verilog.convert(harness, name=HARNESS_NAME, emit_src=False), harness

    text = harness(None, None)[0]
    assert "\\counts[0] " in text and re.search(r"\bcounts;", text)
    monkeypatch.setattr(fpga, "harness_verilog", harness)
    result = fpga._fpga_attempt(target, "array_counters", None, work / "array" / target, False,
                                50, None)
    assert result["status"] == "ok", result["error"]
    assert result["block"]["ff"] == 16 and result["block"]["lut"] > 0


@pytest.mark.synth
def test_harness_keeps_the_logic(work):
    """The block's logic survives the harness and grows with V (nothing is optimised away)."""
    small = synth_block(BLOCK, "ice40", TINY, work_root=work)
    large = synth_block(BLOCK, "ice40", TINY.replace(dim=4), work_root=work)
    for result in (small, large):
        assert result["status"] == "ok", result["error"]
        assert result["block"]["lut"] > result["harness"]["lut"]
    assert large["block"]["lut"] > small["block"]["lut"]
    assert large["harness"]["ff"] > small["harness"]["ff"]


@pytest.mark.synth
def test_does_not_fit_is_reported(work):
    result = synth_block(BLOCK, "ice40", DSP_HEAVY, work_root=work, dsp="on")
    assert result["status"] == "does_not_fit"
    assert "ICESTORM_DSP" in result["error"]
    dsp = result["device"]["ICESTORM_DSP"]
    assert dsp["used"] > dsp["available"] == 8
    assert result.get("fmax_mhz") is None


def test_dsp_auto_falls_back_to_luts(work, monkeypatch):
    """dsp="auto" redoes a run whose DSPs do not fit without DSP inference. The tools are faked
    here (a real fallback costs half a minute); test_does_not_fit_is_reported shows the real
    placer error that triggers it."""
    calls = []

    def attempt(target, block, params, workdir, dsp, freq, timeout, seeds):
        calls.append((workdir.name, dsp))
        if dsp:
            return {"status": "does_not_fit", "seconds": {"yosys": 1.0, "nextpnr": 0.5},
                    "error": "ERROR: Unable to place cell 'x', no BELs remaining to implement "
                             "cell type 'ICESTORM_DSP'",
                    "device": {"ICESTORM_DSP": {"used": 12, "available": 8}},
                    "block": {"dsp": 12}}
        return {"status": "ok", "error": None, "seconds": {"yosys": 2.0, "nextpnr": 3.0},
                "block": {"dsp": 0}}

    monkeypatch.setattr(fpga, "_fpga_attempt", attempt)
    result = synth.synth_block(BLOCK, "ice40", TINY, work_root=work)
    assert calls == [("dsp", True), ("nodsp", False)]
    assert result["status"] == "ok"
    assert result["dsp_fallback"]["device"]["ICESTORM_DSP"]["used"] == 12
    assert result["seconds"]["yosys"] == 3.0 and result["seconds"]["nextpnr"] == 3.5
    calls.clear()
    assert synth.synth_block(BLOCK, "ice40", TINY, work_root=work,
                             dsp="on")["status"] == "does_not_fit"
    assert calls == [("dsp", True)]
    calls.clear()
    synth.synth_block(BLOCK, "ice40", TINY, work_root=work, dsp="off")
    assert calls == [("nodsp", False)]


@pytest.mark.synth
def test_timeout_is_reported(work):
    result = synth_block(BLOCK, "generic", TINY, work_root=work, timeout=0.01)
    assert result["status"] == "timeout"
    assert "timed out" in result["error"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="Unknown block 'nope'"):
        synth_block("nope", "generic", TINY)
    with pytest.raises(ValueError, match="Unknown target 'nope'"):
        synth_block(BLOCK, "nope", TINY)
    with pytest.raises(ValueError, match="Unknown reference block 'nope'"):
        run_synth(TINY, [BLOCK], ["generic"], relative_to="nope")
    with pytest.raises(ValueError, match="dsp = 'maybe'"):
        synth_block(BLOCK, "ice40", TINY, dsp="maybe")
    for seeds in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=f"seeds = {seeds!r}: it must be a whole number"):
            synth_block(BLOCK, "ecp5", TINY, seeds=seeds)
        with pytest.raises(ValueError, match=f"seeds = {seeds!r}"):
            run_synth(TINY, [BLOCK], ["ecp5"], seeds=seeds)


def test_seed_summary_takes_the_lower_median_run():
    runs = [{"seed": 1, "fmax_mhz": 70.0}, {"seed": 2, "fmax_mhz": 64.5},
            {"seed": 3, "fmax_mhz": 75.25}, {"seed": 4, "fmax_mhz": 68.0}]
    # Sorted 64.5, 68.0, 70.0, 75.25: the lower middle one is seed 4's run.
    assert fpga.seed_summary(runs) == {"seeds": [1, 2, 3, 4],
                                       "fmax_mhz": [70.0, 64.5, 75.25, 68.0],
                                       "min": 64.5, "median": 68.0, "max": 75.25, "run": 3}
    assert fpga.seed_summary(runs[:3])["median"] == 70.0
    assert fpga.seed_summary(runs[:1]) == {"seeds": [1], "fmax_mhz": [70.0], "min": 70.0,
                                           "median": 70.0, "max": 70.0, "run": 0}


def _fake_nextpnr(outcomes, calls):
    """A stand-in for :func:`rtl.flow.tools.nextpnr`: seed k's outcome is ``outcomes[k]``, an
    Fmax (a report is written) or a failing status; every call is logged in ``calls``."""

    def nextpnr(target, workdir, freq, timeout, seed=1):
        calls.append(seed)
        outcome = outcomes[seed]
        if isinstance(outcome, str):
            return outcome, f"nextpnr-{target} {outcome} (fake)", float(timeout)
        report = {"fmax": {"clk": {"achieved": outcome, "constraint": freq}}}
        (workdir / "nextpnr.json").write_text(json.dumps(report))
        return "ok", None, 2.0

    return nextpnr


def test_place_and_route_moves_past_a_seed_that_times_out(work, monkeypatch):
    """A seed whose routing times out is replaced by the next seed, at most
    PNR_TIMEOUT_RETRIES times; the seeds that ran and those that timed out are reported.
    The tools are faked (a real timeout costs the whole timeout)."""
    calls = []
    monkeypatch.setattr(fpga, "nextpnr", _fake_nextpnr(
        {1: "timeout", 2: 91.0, 3: 88.0, 4: 80.0, 5: 70.0}, calls))
    work.mkdir(parents=True, exist_ok=True)
    status, error, seconds, report, spread, runs, timeouts = fpga._place_and_route(
        "ecp5", work, 100, 1500, 1)
    assert (status, error, spread) == ("ok", None, None)
    assert calls == [1, 2] and runs == [2] and timeouts == [{"seed": 1, "seconds": 1500.0}]
    assert fpga._report_fmax(report) == 91.0 and seconds == 1502.0

    calls.clear()
    status, _, _, report, spread, runs, timeouts = fpga._place_and_route("ecp5", work, 100,
                                                                         1500, 3)
    assert status == "ok" and calls == [1, 2, 3, 4] and runs == spread["seeds"] == [2, 3, 4]
    assert spread["median"] == 88.0 == fpga._report_fmax(report)
    assert not (work / "nextpnr.seed1.json").exists()

    # Out of retries: the last timeout is the result, and its error names every seed tried.
    calls.clear()
    monkeypatch.setattr(fpga, "nextpnr", _fake_nextpnr({1: "timeout", 2: "timeout",
                                                        3: "timeout", 4: 90.0}, calls))
    status, error, _, report, _, runs, timeouts = fpga._place_and_route("ecp5", work, 100, 60, 1)
    assert fpga.PNR_TIMEOUT_RETRIES == 2 and calls == [1, 2, 3]
    assert (status, report, runs) == ("timeout", {}, [])
    assert error == "nextpnr-ecp5 timeout (fake) at seed 3, as at seeds 1, 2"
    assert [t["seed"] for t in timeouts] == [1, 2]

    # Any other failure is the design's, not the seed's: no retry.
    calls.clear()
    monkeypatch.setattr(fpga, "nextpnr", _fake_nextpnr({1: "pnr_failed", 2: 90.0}, calls))
    status, *_ = fpga._place_and_route("ecp5", work, 100, 60, 1)
    assert status == "pnr_failed" and calls == [1]


def test_a_retried_seed_is_shown_in_every_report():
    """The CLI's line, the synth report's Fmax cell and the QoR table say which seed the Fmax
    is from when an earlier seed timed out, and say nothing when none did."""
    from rtl.flow import qor

    result = {"status": "ok", "error": None, "fmax_mhz": 91.0, "pnr_seeds": [2],
              "pnr_timeouts": [{"seed": 1, "seconds": 1500.2}],
              "block": {"lut": 10, "ff": 5, "bram": 0, "dsp": 0}}
    assert fpga.timeout_note(result) == "seed 2; seed 1 timed out after 1500 s"
    assert synth._summary(result).endswith("91.0 MHz (seed 2; seed 1 timed out after 1500 s)")
    assert flow_report._fmax_cell(result) == "91.0 (seed 2; seed 1 timed out after 1500 s)"
    assert qor._fpga_cells(qor._fpga_summary(result))[-1] == "91.0 (seed 2)"
    plain = {**result, "pnr_seeds": [1]}
    del plain["pnr_timeouts"]
    assert fpga.timeout_note(plain) == ""
    assert synth._summary(plain).endswith("91.0 MHz")
    assert qor._fpga_cells(qor._fpga_summary(plain))[-1] == "91.0"


@pytest.mark.synth
def test_fpga_flow_over_several_seeds(work):
    """Three nextpnr seeds: each run's report is kept, the Fmax and critical path are the
    median run's (its report is nextpnr.json), and the summary line and the report show the
    range."""
    result = synth_block(BLOCK, "ecp5", TINY, work_root=work, seeds=3)
    assert result["status"] == "ok", result["error"]
    spread = result["fmax_seeds"]
    assert spread["seeds"] == [1, 2, 3]
    workdir = work / TINY.tag / BLOCK / "ecp5" / "dsp"
    reports = [json.loads((workdir / f"nextpnr.seed{s}.json").read_text()) for s in (1, 2, 3)]
    fmax = [round(min(c["achieved"] for c in r["fmax"].values()), 2) for r in reports]
    assert spread["fmax_mhz"] == fmax
    assert spread["median"] == sorted(fmax)[1] == result["fmax_mhz"]
    assert (spread["min"], spread["max"]) == (min(fmax), max(fmax))
    median = reports[fmax.index(spread["median"])]
    assert json.loads((workdir / "nextpnr.json").read_text()) == median
    assert result["critical_path"] == fpga.critical_path(median)
    assert f"median of 3 seeds, {min(fmax):.1f} to {max(fmax):.1f}" in synth._summary(result)
    assert f"({min(fmax):.1f}-{max(fmax):.1f}, 3 seeds)" in flow_report._fpga_row(BLOCK, result)


@pytest.mark.synth
def test_report_and_sweep(work):
    lines = []
    report = run_synth(TINY, [BLOCK], ["generic", "ecp5"], jobs=2, progress=lines.append,
                       work_root=work, meta={"preset": "default", "overrides": ["dim=2"]})
    assert f"[1/2] {BLOCK} generic ..." in lines and f"[2/2] {BLOCK} ecp5 ..." in lines
    assert any(line.startswith(f"[2/2] {BLOCK} ecp5: ok, ") for line in lines)
    assert report["results"][BLOCK]["ecp5"]["status"] == "ok"
    assert report["tools"]["yosys"].startswith("Yosys ")
    json.dumps(report)
    text = report_markdown(report)
    assert f"| {BLOCK} | ok |" in text
    assert "### ecp5" in text and "### generic" in text
    ecp5_path = report["results"][BLOCK]["ecp5"]["critical_path"]
    assert "Critical paths (nextpnr, with the harness):" in text
    assert f"- {BLOCK}: {ecp5_path['delay_ns']:.2f} ns (" in text

    # The plot of a real FPGA sweep is checked by test_cli; here only the generic target runs.
    sweep = run_sweep(TINY, "gating", ["enable", "icg"], [BLOCK], ["generic"], jobs=2,
                      progress=None, work_root=work)
    assert [run["value"] for run in sweep["runs"]] == ["enable", "icg"]
    assert "gating=icg similarity_comparator" in sweep_markdown(sweep)
    png = plot_sweep(sweep, work / "sweep.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="dim"):
        run_sweep(TINY, "dim", ["1", "x"], [BLOCK], ["ecp5"], work_root=work)


@pytest.mark.parametrize("script,status,error", [
    ('echo "ERROR: Module foo not found" > yosys.log; exit 1', "synth_failed",
     "ERROR: Module foo not found"),
    (('echo "4. Executing ABC pass (technology mapping using ABC)." > yosys.log; '
     'echo "thrown Wasm exception" >&2; exit 1'), "tool_crashed",
     "yosys crashed in ABC pass (technology mapping using ABC): thrown Wasm exception"),
], ids=["error", "crash"])
def test_yosys_failures_are_classified(work, monkeypatch, script, status, error):
    """An ERROR line is a real synthesis failure; a silent death of the WebAssembly Yosys (as on
    designs too large for its memory) is reported as a crash."""
    monkeypatch.setattr(tools, "tool_command", lambda name: ["sh", "-c", script])
    assert tools.yosys(work, ["help"], None)[:2] == (status, error)
    assert synth.HARD_FAILURES == ("synth_failed",)


@pytest.mark.parametrize("line,status", [
    (("ERROR: Unable to place cell 'dut.x', no BELs remaining to implement cell type "
     "'ICESTORM_LC'"), "does_not_fit"),
    # HeAP's message (nextpnr 0.11) for 5 626 logic cells on the UP5K's 5 280, the board-preset
    # comparator with LUT multipliers.
    ("ERROR: Failed to expand region (0, 0) |_> (25, 31) of 5626 ICESTORM_LCs", "does_not_fit"),
    ("ERROR: Max frequency for clock 'clk': 12.00 MHz (FAIL at 100.00 MHz)", "pnr_failed"),
    ("ERROR: cell 'x' of type 'FOO' is not supported", "pnr_failed"),
])
def test_nextpnr_failures_are_classified(line, status):
    assert tools.pnr_status(line) == status


# ---- osu018 standard-cell area ------------------------------------------------------------------

@pytest.mark.synth
def test_osu018_area(work):
    areas = liberty_cell_areas(liberty_or_skip())
    assert len(areas) == 32 and areas["DFFPOSX1"] > 0
    result = synth_block(BLOCK, "osu018", TINY, work_root=work)
    assert result["status"] == "ok", result["error"]
    cells = result["cells_by_type"]
    # Every cell is a library cell, and the area is the sum of the library's cell areas.
    assert result["unmapped_cells"] == {} and set(cells) <= set(areas)
    assert result["area_um2"] == pytest.approx(sum(n * areas[c] for c, n in cells.items()))
    assert result["ff"] == cells["DFFPOSX1"] > 0
    assert result["sequential_area_um2"] == pytest.approx(
        sum(n * areas[c] for c, n in cells.items() if c.startswith("DFF")))
    assert not result["area_lower_bound"]
    assert result["liberty"]["library"] == "osu018_stdcells"
    # More logic, more area.
    larger = synth_block(BLOCK, "osu018", TINY.replace(dim=3), work_root=work)
    assert larger["area_um2"] > result["area_um2"]


@pytest.mark.synth
def test_osu018_icg_latches_are_a_lower_bound(work):
    liberty_or_skip()
    result = synth_block(BLOCK, "osu018", TINY.replace(gating="icg"), work_root=work)
    assert result["status"] == "ok", result["error"]
    assert result["latch"] == COMPARATOR_LATENCY and result["area_lower_bound"]


def test_no_liberty_is_reported_with_the_command(work, monkeypatch, capsys):
    missing = work / "nowhere" / "osu018_stdcells.lib"
    monkeypatch.setenv("FOCUS_LIBERTY", str(missing))
    for target in ("osu018", "osu018-logic"):
        result = synth_block(BLOCK, target, TINY, work_root=work)
        assert result["status"] == "no_liberty"
        assert "run `make liberty`" in result["error"] and str(missing) in result["error"]
        assert not (work / TINY.tag / BLOCK / target / "synth.ys").exists()

    monkeypatch.delenv("FOCUS_LIBERTY")
    monkeypatch.setattr(toolchain, "LIBERTY_FETCHED", missing)
    monkeypatch.setattr(toolchain, "LIBERTY_SYSTEM", missing.with_suffix(".none"))
    assert toolchain.liberty_path() is None
    error = synth_block(BLOCK, "osu018", TINY, work_root=work)["error"]
    assert "OSU 0.18 um liberty not found" in error and "make liberty" in error

    # The command line reports it and exits 0, even with --strict: nothing failed.
    out = work / "out"
    status = cli.main(["synth", "--set", "dim=2", "--target", "osu018", "--block", BLOCK,
                       "--strict", "-o", str(out), "--work-dir", str(work / "w")])
    assert status == 0
    text = (out / "report.md").read_text()
    assert f"| {BLOCK} | no_liberty |" in text and "run `make liberty`" in text
    assert "no_liberty" in capsys.readouterr().out


# ---- osu018-logic: memories left as macros ------------------------------------------------------

# The importance analyzer has one memory, the importance buffer: ceil(tokens / lanes) words of
# lanes * score_bits bits (rtl/sec/importance_buffer.py). 16 tokens keep it to seconds.
BUFFERED = "importance_analyzer"
SMALL = FocusParams().replace(tokens=16)


@pytest.mark.synth
def test_osu018_logic_leaves_memories_as_macros(work):
    areas = liberty_cell_areas(liberty_or_skip())
    lines = []
    report = run_synth(SMALL, [BUFFERED], ["osu018", "osu018-logic"], jobs=2,
                       progress=lines.append, work_root=work, meta={"preset": "default"})
    full = report["results"][BUFFERED]["osu018"]
    logic = report["results"][BUFFERED]["osu018-logic"]
    assert full["status"] == logic["status"] == "ok", (full["error"], logic["error"])

    width, depth = SMALL.lanes * SMALL.score_bits, -(-SMALL.tokens // SMALL.lanes)
    [memory] = logic["memories"]
    assert memory["name"].endswith(".mem")
    assert (memory["width"], memory["depth"], memory["bits"]) == (width, depth, width * depth)
    assert memory["read_ports"] == memory["write_ports"] == 1
    # The memory's address, data and enable ports are still driven by / drive the logic.
    assert memory["unconnected_ports"] == [] and logic["memories_dropped"] == []
    assert logic["memory_bits"] == width * depth

    # Only library cells are counted: the memory is not in the area.
    cells = logic["cells_by_type"]
    assert logic["unmapped_cells"] == {} and set(cells) <= set(areas)
    assert logic["area_um2"] == pytest.approx(sum(n * areas[c] for c, n in cells.items()))
    # The flip-flops are those of osu018 less the memory's bits and its read-data register,
    # which a synchronous-read SRAM holds (so no logic flip-flop was optimised away); the area
    # saved is at least those flip-flops' (plus the write-enable and read multiplexers).
    in_memory = memory["bits"] + memory["sync_read_ports"] * memory["width"]
    assert memory["sync_read_ports"] == 1
    assert logic["ff"] == full["ff"] - in_memory > 0
    assert 0 < logic["area_um2"] < full["area_um2"] - in_memory * areas["DFFPOSX1"]

    assert any(line.startswith(f"[2/2] {BUFFERED} osu018-logic: ok, ") and
               f"um^2 of logic + 1 memory ({width * depth / 1024:.1f} kbit)" in line
               for line in lines)
    text = report_markdown(report)
    assert "### osu018-logic" in text and "### osu018 (" in text
    assert re.search(rf"^\| {BUFFERED} \| ok \| {logic['cells']} \| {logic['ff']} \| "
                     rf"{logic['area_um2']:.0f} \| 1 \| {width * depth / 1024:.1f} \| ", text,
                     re.MULTILINE)
    assert (f"- {BUFFERED}: `{memory['name']}` {width} x {depth} = {width * depth} bits"
            in text)
    assert any(note.startswith("osu018-logic: ") for note in report["notes"])
    assert report["liberty"]["found"]


def test_osu018_logic_report_and_sweep(work):
    """The osu018-logic table, memory list, share and sweep plot, on made-up results."""
    def result(area, memories=(), status="ok"):
        if status != "ok":
            return {"status": status, "error": "ERROR: x", "seconds": {"total": 1.0}}
        memories = [{"name": name, "width": w, "depth": d, "read_ports": 2,
                     "sync_read_ports": 1, "write_ports": 1, "bits": w * d,
                     "unconnected_ports": []} for name, w, d in memories]
        return {"status": "ok", "error": None, "seconds": {"total": 2.5}, "cells": 10, "ff": 3,
                "area_um2": area, "area_lower_bound": False, "memories": memories,
                "memory_bits": sum(m["bits"] for m in memories), "memories_dropped": ["lost"]}

    results = {"a": {"osu018-logic": result(150.0, [("u.mem", 8, 256), ("v.mem", 4, 16)])},
               "b": {"osu018-logic": result(None, status="tool_crashed")},
               "systolic_array": {"osu018-logic": result(600.0)}}
    report = {"tag": "t", "params": {"dim": 2, "elem_bits": 4}, "targets": ["osu018-logic"],
              "results": results, "notes": synth._notes(["osu018-logic"]), "tools": {},
              "relative_to": "systolic_array",
              "relative": relative_shares(results, "systolic_array")}
    assert report["relative"] == {"a": {"logic_area_um2": 25.0}, "b": {"logic_area_um2": None}}
    text = report_markdown(report)
    assert "| a | ok | 10 | 3 | 150 | 2 | 2.1 | 2.5 |" in text
    assert "| b | tool_crashed | - | - | - | - | - | 1.0 |" in text
    assert "- a: `u.mem` 8 x 256 = 2048 bits (2.0 kbit), 2 read ports (1 sync), 1 write port" \
        in text
    assert "- a: memories not in the final netlist: lost" in text
    assert "| block | % logic um^2 (osu018-logic) |" in text and "| a | 25.00 |" in text

    runs = [{"value": v, "results": {"a": {"osu018-logic": result(100.0 * v)}}} for v in (2, 4)]
    sweep = {"field": "dim", "targets": ["osu018-logic"], "runs": runs}
    png = plot_sweep(sweep, work / "sweep.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- share of the systolic array ----------------------------------------------------------------

def _fake(status="ok", **values):
    return {"status": status, **values}


def test_relative_shares():
    results = {
        "systolic_array": {"generic": _fake(transistors=2000), "osu018": _fake(area_um2=400.0),
                           "ecp5": _fake("does_not_fit", block={"lut": 800}),
                           "ice40": _fake(block={"lut": 0})},
        "a": {"generic": _fake(transistors=54), "osu018": _fake(area_um2=3.0),
              "ecp5": _fake(block={"lut": 20}), "ice40": _fake(block={"lut": 5})},
        "b": {"generic": _fake("timeout"), "osu018": _fake("no_liberty"),
              "ecp5": _fake("synth_failed"), "ice40": _fake("ok", block={"lut": 7})},
    }
    shares = relative_shares(results, "systolic_array")
    assert shares == {
        "a": {"transistors": 2.7, "area_um2": 0.75, "ice40_lut": None, "ecp5_lut": 2.5},
        "b": {"transistors": None, "area_um2": None, "ice40_lut": None, "ecp5_lut": None},
    }
    generic_only = {k: {"generic": v["generic"]} for k, v in results.items()}
    assert relative_shares(generic_only, "systolic_array") == {
        "a": {"transistors": 2.7}, "b": {"transistors": None}}


def test_reference_block_is_added_and_automatic():
    assert synth._reference([BLOCK], "systolic_array") == ([BLOCK, "systolic_array"],
                                                           "systolic_array")
    assert synth._reference([BLOCK, "systolic_array"], None)[1] == "systolic_array"
    assert synth._reference([BLOCK], None) == ([BLOCK], None)
    assert "systolic_array" not in synth._reference(None, None)[0]


@pytest.mark.synth
def test_share_of_the_array_in_the_same_flow(work):
    report = run_synth(TINY, [BLOCK], ["generic"], progress=None, work_root=work,
                       relative_to="systolic_array", meta={"preset": "default"})
    array = report["results"]["systolic_array"]["generic"]
    block = report["results"][BLOCK]["generic"]
    assert array["status"] == block["status"] == "ok"
    # The array is the unit's shape (dim x dim PEs of elem_bits): 2 x 2 int4 here.
    # Flip-flops: weights 4 * 4, activations 2 * 4 (none leave the last column), partial sums
    # 4 * 9 less the 2 duplicate sign bits of row 0 (a product is 8 bits), input skew 4, output
    # deskew 9, valid bits 3.
    assert array["ff"] == 16 + 8 + (36 - 2) + 4 + 9 + 3
    share = report["relative"][BLOCK]["transistors"]
    assert share == round(100 * block["transistors"] / array["transistors"], 2) > 0
    text = report_markdown(report)
    assert "### Share of systolic_array (2x2, int4)" in text
    assert f"| {BLOCK} | {share:.2f} |" in text


def test_cli_reference_blocks(capsys):
    """--relative-to names a known block; the reference block is accepted by synth's --block but
    is not one of the unit's blocks for emit."""
    assert cli.main(["synth", "--relative-to", "nope"]) == 2
    assert "focus-rtl: error: --relative-to 'nope': blocks are" in capsys.readouterr().err
    assert cli.main(["emit", "--block", "systolic_array"]) == 2
    assert "unknown block 'systolic_array'" in capsys.readouterr().err


def test_two_references():
    """Both arrays as references: automatic when the block list holds both, or named as a list;
    the report has each one's shares and a share table per reference."""
    both = ["systolic_array", "systolic_array_fp16"]
    assert synth._references([BLOCK, *both], None) == ([BLOCK, *both], both)
    assert synth._references([BLOCK], ",".join(both)) == ([BLOCK, *both], both)
    assert synth._references([BLOCK], ["systolic_array_fp16"])[1] == ["systolic_array_fp16"]
    with pytest.raises(ValueError, match=r"Unknown reference block 'nope'"):
        synth._references([BLOCK], "systolic_array,nope")
    def logic(area):
        return _fake(area_um2=area, error=None, seconds={"total": 1.0}, cells=1, ff=1,
                     area_lower_bound=False, memories=[], memory_bits=0, memories_dropped=[])

    results = {BLOCK: {"osu018-logic": logic(30.0)},
               "systolic_array": {"osu018-logic": logic(100.0)},
               "systolic_array_fp16": {"osu018-logic": logic(400.0)}}
    report = {"tag": "t", "params": {"dim": 2, "elem_bits": 4}, "targets": ["osu018-logic"],
              "results": results, "notes": [], "tools": {}, "relative_to": both[0],
              "relative_to_all": both}
    synth._add_shares(report, results, both)
    assert report["relative"][BLOCK] == {"logic_area_um2": 30.0}
    assert report["relative_by"]["systolic_array_fp16"][BLOCK] == {"logic_area_um2": 7.5}
    assert report["relative_by"]["systolic_array_fp16"]["systolic_array"] == {
        "logic_area_um2": 25.0}
    text = report_markdown(report)
    assert "### Share of systolic_array (2x2, int4)" in text
    assert "### Share of systolic_array_fp16 (2x2, fp16 multiply, fp32 accumulate)" in text
    assert f"| {BLOCK} | 30.00 |" in text and f"| {BLOCK} | 7.50 |" in text
    assert cli.main(["synth", "--relative-to", "systolic_array,nope"]) == 2
