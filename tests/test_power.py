# amaranth: UnusedElaboratable=no
"""The power flow (rtl/flow/power.py): the VCD activity reader on a hand-written waveform, and
OpenSTA on a tiny design (one clock-gated and one plain 8-bit register) whose power orderings
are known without the flow: leakage is the liberty's cell leakage summed over the netlist and
does not move with activity; with no data activity a gate that is never enabled costs less
than one always enabled, and one always enabled needs no correction; doubling every activity
doubles the activity-dependent power; a register's simulated rate reaches its output net.

The OpenSTA tests skip without ``sta`` or the liberty, as tests/test_sta.py does (or fail when
``FOCUS_REQUIRE_STA`` / ``FOCUS_REQUIRE_LIBERTY`` is set). No power figure of the unit is
asserted: ``python -m sim.bench.power`` measures them.
"""

import json
import re
import shutil

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from test_sta import _tools_or_skip

from rtl.flow import power, toolchain
from rtl.lib.clock_gate import add_gated
from rtl.params import FocusParams
from rtl.sic.dot_scorer import SCORER_LATENCY

VCD = """$timescale 1 ns $end
$scope module bench $end
$scope module top $end
$var wire 1 ! clk $end
$var wire 2 " r $end
$var wire 1 # en $end
$scope module sub $end
$var wire 1 $ x $end
$upscope $end
$upscope $end
$upscope $end
$enddefinitions $end
#0
$dumpvars
0!
b00 "
0#
0$
$end
#10
b01 "
1#
0#
#20
b11 "
1$
#30
b10 "
#40
"""


def test_vcd_activity(tmp_path):
    path = tmp_path / "t.vcd"
    path.write_text(VCD)
    act = power.vcd_activity(path, 10e-9)   # 40 ns: 4 cycles of 10 ns
    # r: bit 0 rises at 10 and falls at 30 (2 transitions, high 20 of 40 ns); bit 1 rises at 20.
    assert act["r", 0] == (0.5, 0.5)
    assert act["r", 1] == (0.25, 0.5)
    # en written 1 then 0 in the same timestep: no transition.
    assert act["en", 0] == (0.0, 0.0)
    assert act["sub.x", 0] == (0.25, 0.5)
    with pytest.raises(ValueError, match="no .timescale"):
        (tmp_path / "u.vcd").write_text(VCD.replace("$timescale 1 ns $end\n", ""))
        power.vcd_activity(tmp_path / "u.vcd", 10e-9)


def test_register_key():
    assert power.register_key("dot1[3]_reg") == ("dot1", 3)
    assert power.register_key("valid1_reg") == ("valid1", 0)
    assert power.register_key("$abc$12") is None


class _Tiny(wiring.Component):
    """Two 8-bit registers of ``d``: ``gq`` clocked through a clock gate enabled by ``en``,
    ``rq`` on every clock; ``x`` is their XOR (so that they drive logic)."""

    d: In(8)
    en: In(1)
    x: Out(8)

    def elaborate(self, platform):
        m = Module()
        g, r = Signal(8, name="gq"), Signal(8, name="rq")
        add_gated(m, "gate", self.en, [g.eq(self.d)], gating="icg")
        m.d.sync += r.eq(self.d)
        m.d.comb += self.x.eq(g ^ r)
        return m


@pytest.fixture
def work(request):
    toolchain.apply()
    path = toolchain.BUILD_ROOT / "test-power" / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _activity(a, reg=None):
    act = {("d", b): (a, 0.5) for b in range(8)}
    act.update({("en", 0): (a, 0.5), ("gate_en", 0): (a, 0.5)})
    for name in ("gq", "rq"):
        act.update({(name, b): (a if reg is None else reg, 0.5) for b in range(8)})
    return act


def _leakage_of(workdir):
    """Sum of cell_leakage_power (nW) of the mapped cells, read from the liberty here."""
    text = (workdir / "cells.lib").read_text()
    leak = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"cell \((\w+)\) \{[^}]*?cell_leakage_power : ([\d.eE+-]+)", text)}
    cells = json.loads((workdir / "stat.json").read_text())["design"]["num_cells_by_type"]
    return 1e-9 * sum(leak[c] * n for c, n in cells.items())


@pytest.mark.synth
def test_power_orderings_on_a_tiny_design(work):
    _tools_or_skip()
    params = FocusParams.preset("board").with_overrides(["gating=icg"])
    netlist = work / "netlist"

    def run(name, activity, enable):
        result = power.power_flow(_Tiny(), params, work / name, activity, {"gate": enable},
                                  period_ns=10.0, name="tiny", netlist_dir=netlist)
        assert result["status"] == "ok", result.get("error")
        return result

    quiet_off, quiet_on = run("q0", _activity(0.0), 0.0), run("q1", _activity(0.0), 1.0)
    half, full = run("h", _activity(0.2), 1.0), run("f", _activity(0.4), 1.0)
    slow_reg = run("s", _activity(0.4, reg=0.0), 1.0)
    # Every register bit of the design got its activity; the gate was found with its 8 flops.
    assert quiet_on["registers"] == 17 and quiet_on["unmatched_registers"] == []
    assert quiet_on["gates"]["gate"]["flops"] == 8
    # Leakage: the liberty's, whatever the activity.
    assert quiet_off["leakage_w"] == pytest.approx(_leakage_of(netlist), rel=1e-3)
    assert full["leakage_w"] == pytest.approx(quiet_off["leakage_w"], rel=1e-6)
    # No data activity: a gate never enabled saves its flip-flops' clock; always enabled, nothing.
    assert quiet_on["gating_correction_w"] == 0.0
    assert quiet_on["dynamic_w"] == pytest.approx(quiet_on["sta_dynamic_w"])
    assert quiet_off["dynamic_w"] < 0.8 * quiet_on["dynamic_w"]
    assert quiet_off["total_w"] > quiet_off["leakage_w"]   # the plain register's clock remains
    # Twice the activity, twice the activity-dependent power (OpenSTA's model is linear in it).
    ratio = (full["dynamic_w"] - quiet_on["dynamic_w"]) / (half["dynamic_w"]
                                                           - quiet_on["dynamic_w"])
    assert 1.8 < ratio < 2.2
    # The registers' own rates count: quiet registers, same input activity, less power.
    assert slow_reg["dynamic_w"] < full["dynamic_w"]
    assert slow_reg["switching_w"] < full["switching_w"]


def test_comparison_stream_of_the_bench():
    """Each kept token meets its 7 candidates; a pruned or missing one is the zero vector."""
    from golden.block_match import candidate_offsets
    from golden.photo import photo_tokens
    from sim.bench.power import GRID, comparison_stream

    p = FocusParams.preset("board")
    payloads, kept = comparison_stream(p, 0.5, frames=2, seed=3)
    assert len(payloads) == 7 * kept and 0 < kept < 2 * GRID * GRID
    x, pos = photo_tokens(frames=2, grid=GRID, dim=p.dim, elem_bits=p.elem_bits)
    by_vector = {tuple(v): int(q) for v, q in zip(x.tolist(), pos.tolist(), strict=True)}
    offsets = candidate_offsets(GRID * GRID, GRID).tolist()
    for n, beat in enumerate(payloads[:70]):
        assert beat["nx"] == sum(v * v for v in beat["x"])
        if beat["ny"] == 0:
            assert beat["y"] == [0] * p.dim
        else:
            # A present candidate is the token at the candidate offset behind this one.
            assert by_vector[tuple(beat["y"])] == by_vector[tuple(beat["x"])] - offsets[n % 7]
    zero_share = sum(b["ny"] == 0 for b in payloads) / len(payloads)
    full, _ = comparison_stream(p, 0.0, frames=2, seed=3)
    assert zero_share > sum(b["ny"] == 0 for b in full) / len(full)


def test_power_command_bad_arguments(capsys):
    from focus_rtl import cli

    assert cli.main(["power", "--pruning", "1.5"]) == 2
    assert "--pruning 1.5: it must be in [0, 1)" in capsys.readouterr().err
    assert cli.main(["power", "--frames", "1"]) == 2
    assert "--frames 1: at least 2" in capsys.readouterr().err
    assert cli.main(["power", "--block", "block_matcher", "--set", "window=2"]) == 2
    assert "FocusParams.window = 2 is out of range" in capsys.readouterr().err


def _gated_slots(params, job):
    """Comparator slots of ``job`` with no pair to compute, counted from the job alone: per token,
    ``comparators * rounds`` slots less its candidates c = 1..7 that exist (a kept position of
    the same tile, at the candidate offset behind it) and are non-zero, all of them when the
    token itself is zero."""
    from golden.block_match import candidate_offsets
    from rtl.sic.block_matcher import matcher_rounds

    slots = params.comparators * matcher_rounds(params)
    offsets = candidate_offsets(job.frame_stride, job.row_stride).tolist()
    index = {int(q): n for n, q in enumerate(job.positions.tolist())}
    gated = 0
    for n, (x, q) in enumerate(zip(job.vectors, job.positions.tolist(), strict=True)):
        found = 0
        if x.any():
            for off in offsets:
                k = index.get(q - off)
                found += int(k is not None and k // params.tile == n // params.tile
                             and bool(job.vectors[k].any()))
        gated += slots - found
    return gated


@pytest.mark.synth
@pytest.mark.slow
def test_block_matcher_power_orderings(work):
    """The matcher's power flow on a tiny photograph job (a 4 x 4 grid, V = 4): the gated share
    is the matcher's own counters' and the count from the job; more pruning, more gated slots,
    lower enable rates, a larger gating correction and less register power in the gated build;
    the ungated build's gates open more often than the gated one's."""
    _tools_or_skip()
    from sim.bench.power import registers_dynamic
    from sim.bench.power_matcher import OVERRIDES, matcher_job, measure

    params = FocusParams.preset("board").with_overrides([*OVERRIDES, "window=64", "dim=4"])
    runs = {}
    for pruning, gate in ((0.0, True), (0.8, True), (0.8, False)):
        r = measure(params, pruning, gate, work, frames=2, freq_mhz=100.0, grid=4)
        assert r["status"] == "ok", r.get("error")
        job = matcher_job(params, pruning, frames=2, grid=4)
        assert r["tokens"] == len(job.positions)
        assert r["counters"]["active"] + r["counters"]["gated"] == r["comparisons"]
        assert r["counters"]["gated"] == _gated_slots(params, job)
        assert 0.0 <= r["gated_share"] <= 1.0
        assert r["gated_share"] == r["counters"]["gated"] / r["comparisons"]
        assert r["memories"] and r["memory_ports"]["read_bits_simulated"] > 0
        assert all(0.0 <= e <= 1.0 for e in r["enables"].values())
        runs[pruning, gate] = r
    low, high, ungated = runs[0.0, True], runs[0.8, True], runs[0.8, False]
    # One clock gate per scorer stage (SCORER_LATENCY stages per comparator); the ungated
    # build's open whenever the pipeline moves.
    assert len(high["gates"]) == SCORER_LATENCY * params.comparators
    assert set(ungated["enables"]) == set(high["enables"])
    for domain, rate in high["enables"].items():
        assert rate < ungated["enables"][domain]
    assert high["gated_share"] > low["gated_share"]
    for domain, rate in high["enables"].items():
        assert rate < low["enables"][domain]
    assert high["gating_correction_w"] > low["gating_correction_w"] > 0.0
    assert ungated["gating_correction_w"] < high["gating_correction_w"]
    assert registers_dynamic(high) < registers_dynamic(low)
    # No ordering between the two builds is asserted: they are different netlists, and on this
    # tiny shape (V = 4) the clock gates' latches can cost more than they save.
