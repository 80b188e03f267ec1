# amaranth: UnusedElaboratable=no
"""The QoR table (``focus-rtl synth --qor``): one row per (preset, block) with the FPGA counts
and Fmax, the logic um^2 and the OpenSTA Fmax; Markdown and JSON; a rerun comes from the cache.
No figure is asserted."""

import json
import re
import shutil

import pytest

from focus_rtl import cli
from rtl.flow import dist, synth, toolchain
from rtl.flow.qor import QUICK, qor_markdown, run_qor

BLOCK = "similarity_comparator"


@pytest.fixture
def work(request):
    toolchain.apply()
    name = re.sub(r"[^\w.-]+", "_", request.node.name)
    path = toolchain.BUILD_ROOT / "test-qor" / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _fpga(lut, fmax, status="ok"):
    return {"status": status, "error": None if status == "ok" else "ERROR: no BELs",
            "seconds": {"total": 1.0}, "block": {"lut": lut, "ff": 10, "bram": 1, "dsp": 2},
            "fmax_mhz": fmax if status == "ok" else None, "device_name": "d",
            "freq_target_mhz": 48.0,
            "critical_path": {"delay_ns": 1000 / fmax, "start": {"cell": "a", "port": "O"},
                              "end": {"cell": "b", "port": "I0"}, "start_net": "n1",
                              "end_net": "n2", "logic_levels": 3, "logic_ns": 1.0,
                              "routing_ns": 2.0}}


def _sta(area, fmax):
    period = 1000 / fmax
    return {"status": "ok", "error": None, "seconds": {"total": 2.0}, "area_um2": area,
            "cells": 100, "ff": 10, "area_lower_bound": False,
            "memory_bits": 2048, "memories": [{"name": "m"}], "fmax_mhz": fmax,
            "wns_ns": 10 - period, "clock_period_ns": 10.0, "timing_met": True,
            "critical_path": {"startpoint": "x_reg", "endpoint": "y_reg",
                              "min_period_ns": period, "logic_levels": 7}}


def test_qor_table(work, monkeypatch):
    calls = []

    def run_task(block, target, params, options):
        calls.append((block, target, params["tokens"]))
        if target == "ice40":
            return _fpga(5000, 20.0, "does_not_fit" if block == "sec" else "ok")
        if target == "ecp5":
            return _fpga(1200, 70.0)
        return _sta(12345.6, 150.0)

    monkeypatch.setattr(dist, "run_task", run_task)
    monkeypatch.setattr(synth, "check_tools", lambda targets: None)
    monkeypatch.setattr(synth, "tool_versions", lambda targets: {"yosys": "Y"})
    lines = []
    qor = run_qor(["board", "default"], [BLOCK, "sec"], overrides=["tokens=64"],
                  progress=lines.append, work_root=work, cache=work / "cache",
                  executor="threads")
    assert len(calls) == 12 and {c[2] for c in calls} == {64}
    assert [(r["preset"], r["block"]) for r in qor["rows"]] == [
        ("board", BLOCK), ("board", "sec"), ("default", BLOCK), ("default", "sec")]
    row = qor["rows"][0]
    assert row["ice40"]["lut"] == 5000 and row["ecp5"]["fmax_mhz"] == 70.0
    assert row["osu018-sta"]["memory_kbit"] == 2.0
    assert row["osu018-sta"]["critical_path"]["startpoint"] == "x_reg"
    assert qor["tags"]["board"].startswith("M64_a2_")
    assert any(line.startswith("[1/12] similarity_comparator ice40 (board) ...")
               for line in lines)
    json.dumps(qor)

    text = qor_markdown(qor)
    assert "| preset | block | iCE40 LUT | FF | BRAM | DSP | Fmax MHz | ECP5 LUT |" in text
    assert ("| board | similarity_comparator | 5000 | 10 | 1 | 2 | 20.0 | 1200 | 10 | 1 | 2 | "
            "70.0 | 12346 | 2.0 | 150.0 | `x_reg` -> `y_reg` (6.67 ns) |") in text
    # Yosys's counts of a design the placer could not fit, in italics.
    assert "| board | sec | *5000* | *10* | *1* | *2* | does not fit |" in text
    assert "- board sec ice40: does_not_fit: `ERROR: no BELs`" in text
    assert "overrides on every preset: `tokens=64`" in text

    again = run_qor(["board", "default"], [BLOCK, "sec"], overrides=["tokens=64"],
                    progress=None, work_root=work, cache=work / "cache", executor="threads")
    assert len(calls) == 12 and again["cache"]["hits"] == 12
    assert again["rows"] == qor["rows"]
    assert "12 flows reused, 0 run" in qor_markdown(again)


def test_quick_set():
    assert QUICK["presets"] == ("board",) and len(QUICK["blocks"]) == 3


@pytest.mark.synth
def test_cli_qor_and_rerun(work, capsys):
    """A real one-row table (ECP5 only, tiny comparator), then the same command from the cache."""
    args = ["synth", "--qor", "board", "--block", BLOCK, "--set", "dim=2", "--set",
            "elem_bits=4", "--target", "ecp5", "--executor", "threads", "-o", str(work / "out"),
            "--work-dir", str(work / "w"), "--cache-dir", str(work / "cache"), "-j", "1"]
    assert cli.main(args) == 0
    first = capsys.readouterr()
    assert "[1/1] similarity_comparator ecp5 (board) ..." in first.err
    qor = json.loads((work / "out" / "qor.json").read_text())
    [row] = qor["rows"]
    assert row["preset"] == "board" and row["ecp5"]["status"] == "ok"
    assert row["ecp5"]["lut"] > 0 and row["ecp5"]["fmax_mhz"] > 0
    assert row["ecp5"]["critical_path"]["delay_ns"] > 0
    text = (work / "out" / "qor.md").read_text()
    assert text.startswith("# QoR") and "| board | similarity_comparator |" in text
    assert cli.main(args) == 0
    again = capsys.readouterr()
    assert "[1/1] similarity_comparator ecp5 (board): cached, ok" in again.err
    assert json.loads((work / "out" / "qor.json").read_text())["rows"] == qor["rows"]
