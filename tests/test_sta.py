# amaranth: UnusedElaboratable=no
"""The osu018-sta flow: OpenSTA on the OSU 0.18 um netlist reports a critical path, its slack
against the clock target (positive at a loose clock, negative at an impossible one: the flow can
fail) and the Fmax; memories are cut out as timing boundaries; a missing ``sta`` is reported
``no_sta``. No timing figure is asserted: the benchmarks (``focus-rtl synth``) report them.

Without OpenSTA (``apt-get install opensta``) or the liberty (``make liberty``) the tool tests
skip, unless ``FOCUS_REQUIRE_STA`` / ``FOCUS_REQUIRE_LIBERTY`` is set (CI): then they fail.
"""

import json
import os
import re

import pytest

from focus_rtl import cli
from rtl.flow import sta, toolchain
from rtl.flow.fpga import critical_path
from rtl.flow.synth import report_markdown, run_synth, synth_block
from rtl.params import FocusParams

BLOCK = "similarity_comparator"
TINY = FocusParams(dim=2, elem_bits=4, theta_bits=2)
# The importance analyzer has one memory (the importance buffer); 16 tokens keep it small.
BUFFERED = "importance_analyzer"
SMALL = FocusParams().replace(tokens=16)


@pytest.fixture
def work(build_dir):
    return build_dir


def _require(what, env, missing, hint):
    if missing:
        if os.environ.get(env):
            pytest.fail(f"{env} is set but {what} is missing")
        pytest.skip(f"no {what}: {hint}")


def _tools_or_skip():
    """Skip (or, in CI, fail) without the liberty or OpenSTA."""
    path = toolchain.liberty_path()
    _require("OSU 0.18 um liberty", "FOCUS_REQUIRE_LIBERTY", path is None or not path.is_file(),
             "run `make liberty`")
    _require("OpenSTA (sta)", "FOCUS_REQUIRE_STA", sta.sta_command() is None,
             "apt-get install opensta")


# ---- the real flow ------------------------------------------------------------------------------

@pytest.mark.synth
def test_sta_reports_a_path_and_can_fail(work):
    _tools_or_skip()
    loose = synth_block(BLOCK, "osu018-sta", TINY, work_root=work, freq=1.0)        # 1000 ns
    assert loose["status"] == "ok", loose["error"]
    path = loose["critical_path"]
    assert path["startpoint"] and path["endpoint"]
    assert path["points"][0]["pin"].startswith(path["startpoint"])
    assert path["points"][-1]["pin"].startswith(path["endpoint"])
    assert path["slack_ns"] > 0 and loose["timing_met"] and loose["wns_ns"] == path["slack_ns"]
    assert path["min_period_ns"] == pytest.approx(path["arrival_ns"] + path["setup_ns"],
                                                  abs=2e-3)
    assert loose["fmax_mhz"] == pytest.approx(1000 / path["min_period_ns"], rel=1e-3)
    assert loose["area_um2"] > 0 and loose["memories"] == []
    assert loose["paths"]["reg_to_reg"]["startpoint"]
    # The flip-flops carry the RTL's register names.
    assert path["startpoint"].endswith("_reg") or path["startpoint_kind"].startswith("input")
    assert loose["check_setup"] == []
    workdir = toolchain.REPO_ROOT / loose["workdir"] if toolchain.REPO_ROOT else None
    if workdir is not None:
        assert (workdir / "sta.tcl").is_file() and (workdir / "sta.log").is_file()

    tight = synth_block(BLOCK, "osu018-sta", TINY, work_root=work, freq=1e5)        # 10 ps
    assert tight["status"] == "ok", tight["error"]
    assert tight["critical_path"]["slack_ns"] < 0
    assert not tight["timing_met"] and not tight["critical_path"]["met"]
    # The constraints scale with the period: the Fmax does not depend on the target.
    assert tight["fmax_mhz"] == pytest.approx(loose["fmax_mhz"], rel=1e-3)

    report = run_synth(TINY, [BLOCK], ["osu018-sta"], progress=None, work_root=work,
                       freq={"osu018-sta": 1e5}, meta={"preset": "default"})
    text = report_markdown(report)
    assert "### osu018-sta" in text and "(violated)" in text
    assert f"- {BLOCK}: `{tight['critical_path']['startpoint']}`" in text
    assert report["tools"]["opensta"]
    json.dumps(report)


@pytest.mark.synth
def test_sta_memories_are_boundaries(work):
    _tools_or_skip()
    result = synth_block(BUFFERED, "osu018-sta", SMALL, work_root=work)
    assert result["status"] == "ok", result["error"]
    [memory] = result["memories"]
    [boundary] = result["sta"]["memory_boundaries"]
    assert boundary["name"] == memory["name"] and boundary["async_read_ports"] == 0
    # Read data in; address, write data and enables out.
    assert boundary["outputs"] == memory["width"]
    assert boundary["inputs"] >= 2 * (memory["depth"] - 1).bit_length() + memory["width"]
    workdir = toolchain.REPO_ROOT / result["workdir"]
    netlist = (workdir / "netlist_sta.v").read_text()
    assert re.search(r"^\s*reg\b", netlist, re.MULTILINE) is None   # no memory array is left
    assert f"\\{boundary['port']}.RD_DATA" in netlist
    # Every endpoint is constrained (the memory ports got their delays).
    assert result["check_setup"] == []
    assert all(result["paths"][c] for c in ("reg_to_reg", "in_to_reg", "reg_to_out"))


def test_no_sta_is_reported(work, monkeypatch, capsys):
    path = toolchain.liberty_path()
    if path is None or not path.is_file():
        pytest.skip("no liberty: the flow would stop at no_liberty first")
    monkeypatch.setenv("FOCUS_STA", str(work / "nowhere" / "sta"))
    assert sta.sta_command() is None
    result = synth_block(BLOCK, "osu018-sta", TINY, work_root=work)
    assert result["status"] == "no_sta"
    assert "apt-get install opensta" in result["error"] and "FOCUS_STA" in result["error"]
    assert not (work / TINY.tag / BLOCK / "osu018-sta" / "synth.ys").exists()
    # The command line reports it and exits 0 even with --strict: nothing failed.
    out = work / "out"
    status = cli.main(["synth", "--set", "dim=2", "--set", "elem_bits=4", "--set",
                       "theta_bits=2", "--target", "osu018-sta", "--block", BLOCK, "--strict",
                       "-o", str(out), "--work-dir", str(work / "w")])
    assert status == 0
    assert f"| {BLOCK} | no_sta |" in (out / "report.md").read_text()
    assert "no_sta" in capsys.readouterr().out


# ---- parsing, on canned text --------------------------------------------------------------------

REPORT = """\
Startpoint: temporal_reg (rising edge-triggered flip-flop clocked by clk)
Endpoint: last_w[31]_reg (rising edge-triggered flip-flop clocked by clk)
Path Group: clk
Path Type: max

Fanout    Delay     Time   Description
----------------------------------------------------------------
         0.000    0.000   clock clk (rise edge)
         0.000    0.000   clock network delay (ideal)
         0.000    0.000 ^ temporal_reg/CLK (DFFPOSX1)
         1.520    1.520 ^ temporal_reg/Q (DFFPOSX1)
   97                     temporal (net)
         3.518    5.038 v _2464_/Y (NOR2X1)
   64                     _1488_ (net)
         0.536    5.574 ^ _2728_/Y (OAI21X1)
    1                     _0349_ (net)
         0.000    5.574 ^ last_w[31]_reg/D (DFFPOSX1)
                  5.574   data arrival time

         2.000    2.000   clock clk (rise edge)
         0.000    2.000   clock network delay (ideal)
         0.000    2.000   clock reconvergence pessimism
                  2.000 ^ last_w[31]_reg/CLK (DFFPOSX1)
        -0.225    1.775   library setup time
                  1.775   data required time
----------------------------------------------------------------
                  1.775   data required time
                 -5.574   data arrival time
----------------------------------------------------------------
                 -3.799   slack (VIOLATED)
"""

OUTPUT_PATH = """\
Startpoint: a (input port clocked by clk)
Endpoint: y (output port clocked by clk)
Path Group: clk
Path Type: max

   Delay     Time   Description
-----------------------------------------------------------
   0.000    0.000   clock clk (rise edge)
   0.000    0.000   clock network delay (ideal)
   0.000    0.000 ^ input external delay
   0.000    0.000 ^ a (in)
   0.300    0.300 v _1_/Y (INVX1)
   0.000    0.300 v y (out)
            0.300   data arrival time

  10.000   10.000   clock clk (rise edge)
   0.000   10.000   clock network delay (ideal)
   0.000   10.000   clock reconvergence pessimism
  -0.500    9.500   output external delay
            9.500   data required time
-----------------------------------------------------------
            9.500   data required time
           -0.300   data arrival time
-----------------------------------------------------------
            9.200   slack (MET)
"""


GATED = """\
Startpoint: en_latch (positive level-sensitive latch clocked by clk')
Endpoint: gate (rising clock gating-check end-point clocked by clk)
Path Group: **clock_gating_default**
Path Type: max

   Delay     Time   Description
-----------------------------------------------------------
   5.000    5.000   clock clk' (rise edge)
   0.000    5.000 ^ en_latch/CLK (LATCH)
   0.170    5.170 v en_latch/Q (LATCH)
   0.000    5.170 v gate/B (AND2X1)
            5.170   data arrival time

  10.000   10.000   clock clk (rise edge)
            10.000 ^ gate/A (AND2X1)
   0.000   10.000   clock gating setup time
           10.000   data required time
-----------------------------------------------------------
           10.000   data required time
           -5.170   data arrival time
-----------------------------------------------------------
            4.830   slack (MET)


""" + OUTPUT_PATH.replace("9.200   slack", "1.200   slack") + """
Time Borrowing Information
---------------------------------------------
clk' pulse width                        5.000
library setup time                     -0.194
---------------------------------------------
"""


def test_parse_path():
    path = sta.parse_path(REPORT)
    assert (path["startpoint"], path["endpoint"]) == ("temporal_reg", "last_w[31]_reg")
    assert path["startpoint_kind"] == "rising edge-triggered flip-flop clocked by clk"
    assert (path["arrival_ns"], path["required_ns"], path["setup_ns"]) == (5.574, 1.775, 0.225)
    assert path["slack_ns"] == -3.799 and not path["met"]
    assert [p["pin"] for p in path["points"]] == [
        "temporal_reg/CLK", "temporal_reg/Q", "_2464_/Y", "_2728_/Y", "last_w[31]_reg/D"]
    assert path["points"][1]["net"] == "temporal" and path["points"][1]["fanout"] == 97
    assert path["points"][2]["edge"] == "fall" and path["points"][2]["cell"] == "NOR2X1"
    assert path["logic_levels"] == 2

    out = sta.parse_path(OUTPUT_PATH)
    assert out["startpoint_kind"] == "input port clocked by clk"
    assert out["setup_ns"] == 0.5 and out["met"] and out["logic_levels"] == 1
    assert sta.parse_path("No paths found.") is None
    # One path per path group (clock gates): the worst one; the trailer is not a path.
    worst = sta.parse_path(GATED)
    assert worst["startpoint"] == "a" and worst["slack_ns"] == 1.2 and worst["group"] == "clk"

    text = "\n".join(["FOCUS-REPORT critical", REPORT, "FOCUS-REPORT in_to_out", OUTPUT_PATH,
                      "FOCUS-REPORT end"])
    figures = sta.parse_report(text, 2.0)
    assert figures["complete"]
    critical = figures["critical_path"]
    assert critical["min_period_ns"] == 5.799 and critical["fmax_mhz"] == round(1000 / 5.799, 2)
    assert figures["paths"]["in_to_out"]["min_period_ns"] == pytest.approx(2.0 - 9.2)
    assert figures["paths"]["in_to_out"]["fmax_mhz"] is None  # a negative period: no bound
    assert figures["paths"]["reg_to_reg"] is None


def test_cut_memories():
    """The memory becomes ports (constant and repeated bits dropped), flip-flops get names."""
    netlist = {"modules": {"top": {
        "ports": {"clk": {"direction": "input", "bits": [2]},
                  "q": {"direction": "output", "bits": [6, 7]}},
        "cells": {
            "$mem$1": {"type": "$mem_v2", "parameters": {
                "MEMID": "\\buf.mem", "RD_PORTS": "01", "RD_CLK_ENABLE": "1"},
                "connections": {"RD_DATA": [6, 7], "RD_ADDR": [3, "0"], "RD_CLK": [2],
                                "WR_EN": [4, 4], "WR_DATA": [5, 5], "WR_ADDR": ["1", "0"]}},
            "$auto$9": {"type": "DFFPOSX1", "connections": {"CLK": [2], "D": [8], "Q": [9]}},
            "$auto$10": {"type": "DFFPOSX1", "connections": {"CLK": [2], "D": [8], "Q": [10]}},
        },
        "netnames": {"state": {"hide_name": 0, "bits": [9, 3]},
                     "$and$x": {"hide_name": 1, "bits": [10]}},
    }}}
    info = sta.cut_memories(netlist, "top")
    module = netlist["modules"]["top"]
    assert info["memory_outputs"] == ["buf.mem.RD_DATA"]
    assert info["memory_inputs"] == ["buf.mem.RD_ADDR", "buf.mem.WR_DATA", "buf.mem.WR_EN"]
    assert module["ports"]["buf.mem.WR_EN"] == {"direction": "output", "bits": [4]}
    assert module["ports"]["buf.mem.RD_DATA"]["direction"] == "input"
    assert info["memories"] == [{"name": "buf.mem", "port": "buf.mem", "read_ports": 1,
                                 "async_read_ports": 0, "inputs": 3, "outputs": 2}]
    assert sorted(module["cells"]) == ["$auto$10", "state[0]_reg"]


_LIBERTY = """
library (tiny) {
cell (BUFX4) {
area : 32;
  pin(A) { direction : input; capacitance : 0.01; }
  pin(Y) { direction : output; function : "A"; timing() { related_pin : "A"; } }
}
cell (NAND2X1) {
area : 16;
  pin(A) { direction : input; }
  pin(B) { direction : input; }
  pin(Y) { direction : output; function : "(!(A B))"; }
}
cell (DFFPOSX1) {
area : 96;
  ff(DS0000,P0000) { next_state : "D"; clocked_on : "CLK"; }
  pin(CLK) { direction : input; }
  pin(D) { direction : input; }
  pin(Q) { direction : output; function : "DS0000"; }
}
}
"""


def test_liberty_cells():
    cells = sta.liberty_cells(_LIBERTY)
    assert cells["BUFX4"] == {"area": 32.0, "pins": {"A": "input", "Y": "output"}}
    assert cells["NAND2X1"]["pins"] == {"A": "input", "B": "input", "Y": "output"}
    assert cells["DFFPOSX1"]["area"] == 96.0 and cells["DFFPOSX1"]["pins"]["Q"] == "output"


def _fanout_netlist(loads):
    """A register (``sel``) and a NAND (``n``) each driving ``loads`` NAND inputs; ``sel`` also
    drives an output port."""
    cells = {"sel_reg": {"type": "DFFPOSX1", "connections": {"CLK": [2], "D": [3], "Q": [4]}},
             "n": {"type": "NAND2X1", "connections": {"A": [3], "B": [3], "Y": [5]}}}
    for k in range(loads):
        cells[f"g{k}"] = {"type": "NAND2X1", "connections": {"A": [4], "B": [5], "Y": [100 + k]}}
    return {"ports": {"clk": {"direction": "input", "bits": [2]},
                      "d": {"direction": "input", "bits": [3]},
                      "y": {"direction": "output", "bits": [4]}},
            "cells": cells, "netnames": {"sel": {"hide_name": 0, "bits": [4]}}}


def _driver_chain(module, bit):
    """The buffers from ``bit`` back to the cell that is not a buffer."""
    drivers = {c["connections"]["Y"][0]: (n, c) for n, c in module["cells"].items()
               if "Y" in c["connections"]}
    drivers.update({c["connections"]["Q"][0]: (n, c) for n, c in module["cells"].items()
                    if "Q" in c["connections"]})
    chain = []
    name, cell = drivers[bit]
    while cell["type"] == "BUFX4":
        chain.append(name)
        name, cell = drivers[cell["connections"]["A"][0]]
    return name, chain


@pytest.mark.parametrize("loads", [15, 16, 17, 40, 300])
def test_buffer_register_fanout(loads):
    """Every load of the register still sees the register, through buffers only; no net of it
    has more than 16 loads (its output port counted); the NAND's equal fanout is ABC's to
    buffer and stays; the tree is as shallow as 16 loads a net allow."""
    module = _fanout_netlist(loads)
    added = sta.buffer_register_fanout(module, sta.liberty_cells(_LIBERTY), max_fanout=16)
    count = {}
    for cell in module["cells"].values():
        for pin, bits in cell["connections"].items():
            if pin not in ("Y", "Q"):
                for bit in bits:
                    count[bit] = count.get(bit, 0) + 1
    count[4] = count.get(4, 0) + 1                      # the output port y
    depth = 0
    for k in range(loads):
        a, b = module["cells"][f"g{k}"]["connections"]["A"], module["cells"][f"g{k}"][
            "connections"]["B"]
        source, chain = _driver_chain(module, a[0])
        assert source == "sel_reg"
        depth = max(depth, len(chain))
        assert b == [5]                                 # the NAND's net is left alone
    assert count[5] == loads
    buffers = [n for n, c in module["cells"].items() if c["type"] == "BUFX4"]
    assert all(count.get(module["cells"][n]["connections"]["Y"][0], 0) <= 16 for n in buffers)
    assert count[4] <= 16
    assert module["ports"]["y"]["bits"] == [4]
    if loads + 1 <= 16:
        assert added == {"nets": 0, "cells": 0, "area_um2": 0.0} and depth == 0
    else:
        expected_depth = 1 if -(-loads // 16) + 1 <= 16 else 2
        assert depth == expected_depth
        assert added["nets"] == 1 and added["cells"] == len(buffers)
        assert added["area_um2"] == 32.0 * len(buffers)
        assert all(n.startswith("sel_fanbuf") for n in buffers)
        assert all(module["netnames"][n.replace("fanbuf", "fanout")]["bits"] ==
                   module["cells"][n]["connections"]["Y"] for n in buffers)


def test_sta_script():
    info = {"inputs": ["a", "m.RD_DATA"], "outputs": ["y", "m.WR_EN"],
            "memory_outputs": ["m.RD_DATA"], "memory_inputs": ["m.WR_EN"]}
    script = "\n".join(sta.sta_script("top", 4.0, info, mem_read_ns=1.5, mem_setup_ns=0.25))
    assert "create_clock -name clk -period 4 [get_ports clk]" in script
    assert "set_input_delay 0 -clock clk [get_ports {{a}}]" in script
    assert "set_input_delay 1.5 -clock clk [get_ports {{m.RD_DATA}}]" in script
    assert "set_output_delay 0.25 -clock clk [get_ports {{m.WR_EN}}]" in script
    assert script.count("FOCUS-REPORT") == 2 + len(sta.PATH_CLASSES) + 1 + 1


def test_fpga_critical_path():
    """nextpnr's report: the slowest clock-to-same-clock path, summed, start and end named."""
    def step(kind, delay, cell_from, cell_to, net=None):
        s = {"type": kind, "delay": delay, "from": {"cell": cell_from, "port": "O"},
             "to": {"cell": cell_to, "port": "I0"}}
        if net:
            s["net"] = net
        return s

    report = {"critical_paths": [
        {"from": "<async>", "to": "posedge clk", "path": [step("source", 0, "rst", "rst"),
                                                         step("routing", 99.0, "rst", "x", "r")]},
        {"from": "posedge clk", "to": "posedge clk", "path": [
            step("clk-to-q", 1.0, "a", "a"), step("routing", 2.0, "a", "b", "n1"),
            step("logic", 0.5, "b", "b"), step("routing", 1.5, "b", "c", "n2"),
            step("setup", 0.1, "c", "c")]},
    ]}
    path = critical_path(report)
    assert path["start"] == {"cell": "a", "port": "O"} and path["end"]["cell"] == "c"
    assert (path["start_net"], path["end_net"], path["nets"]) == ("n1", "n2", ["n1", "n2"])
    assert path["delay_ns"] == 5.1 and path["routing_ns"] == 3.5 and path["logic_ns"] == 1.6
    assert path["logic_levels"] == 1
    assert critical_path({"critical_paths": []}) is None
