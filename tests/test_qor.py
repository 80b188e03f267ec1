# amaranth: UnusedElaboratable=no
"""The QoR table (``focus-rtl synth --qor``): one row per (preset, block) with the FPGA counts
and Fmax, the logic um^2 and the OpenSTA Fmax; Markdown and JSON; a rerun comes from the cache.
No figure is asserted."""

import json

import pytest

from focus_rtl import cli
from rtl.flow import dist, synth
from rtl.flow.blocks import BLOCKS
from rtl.flow.qor import (
    FMAX_GOALS_MHZ,
    QUICK,
    plot_qor,
    qor_command,
    qor_markdown,
    qor_readme_markdown,
    run_qor,
    update_readme,
)

BLOCK = "similarity_comparator"


@pytest.fixture
def work(build_dir):
    return build_dir


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

    # The README's short form: one table per preset, between that preset's markers only.
    short = qor_readme_markdown(qor, "board")
    assert ("`focus-rtl synth --qor board --block similarity_comparator,sec --set tokens=64 "
            "--readme README.md`") in short
    whole = dict(qor, blocks=list(BLOCKS), overrides=[])
    assert qor_command(whole, "board") == "focus-rtl synth --qor board --readme README.md"
    assert ("| `similarity_comparator` | 1200 / 10 / 1 / 2 | 70.0 | 5000 / 10 / 1 / 2 | 20.0 | "
            "12346 | 2.0 | 150.0 | `x_reg` -> `y_reg` (6.67 ns) |") in short
    assert ("| `sec` | 1200 / 10 / 1 / 2 | 70.0 | *5000* / *10* / *1* / *2* | does not fit |"
            in short)
    assert "| `similarity_comparator` |" not in short.split("| `sec` |")[1]   # board rows only
    page = ("# x\n<!-- qor-board:begin -->\nold\n<!-- qor-board:end -->\nmiddle\n"
            "<!-- qor-default:begin -->\n<!-- qor-default:end -->\nend\n")
    updated = update_readme(page, qor)
    assert updated.startswith("# x\n<!-- qor-board:begin -->\n\n" + short + "\n<!-- qor-board:end")
    assert "old" not in updated and updated.endswith("<!-- qor-default:end -->\nend\n")
    assert qor_readme_markdown(qor, "default") in updated
    with pytest.raises(ValueError, match="qor-default:begin"):
        update_readme(page.split("middle")[0], qor)

    again = run_qor(["board", "default"], [BLOCK, "sec"], overrides=["tokens=64"],
                    progress=None, work_root=work, cache=work / "cache", executor="threads")
    assert len(calls) == 12 and again["cache"]["hits"] == 12
    assert again["rows"] == qor["rows"]
    assert "12 flows reused, 0 run" in qor_markdown(again)

    # The picture: a panel per target, a bar per row, the goal line, the failed flow named.
    from matplotlib.figure import Figure

    figures = []
    savefig = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: (figures.append(fig),
                                                                  savefig(fig, *a, **k)))
    path = plot_qor(qor, work / "qor.png")
    assert path.read_bytes().startswith(b"\x89PNG")
    panels = {ax.get_title(): ax for ax in figures[0].axes}
    texts = {title: [(t.get_position()[1], t.get_text()) for t in ax.texts]
             for title, ax in panels.items()}
    assert texts["iCE40 UP5K (nextpnr)"][1] == (1, "does not fit")
    assert texts["ECP5-85F (nextpnr)"][3] == (3, "70")
    assert texts["OSU 0.18 um (OpenSTA)"][0] == (0, "150")
    goals = {title: ax.lines[0].get_xdata()[0] for title, ax in panels.items()}
    assert sorted(goals.values()) == sorted(FMAX_GOALS_MHZ.values())
    assert [len(ax.patches) for ax in panels.values()] == [4, 4, 4]


def test_quick_set():
    assert QUICK["presets"] == ("board",) and len(QUICK["blocks"]) == 3


@pytest.mark.synth
def test_cli_qor_and_rerun(work, capsys):
    """A real one-row table (ECP5 only, tiny comparator), then the same command from the cache,
    then from its record file alone (another machine's empty cache)."""
    args = ["synth", "--qor", "board", "--block", BLOCK, "--set", "dim=2", "--set",
            "elem_bits=4", "--target", "ecp5", "--executor", "threads", "-o", str(work / "out"),
            "--work-dir", str(work / "w"), "-j", "1", "--record", str(work / "flows.json")]
    page = work / "page.md"
    page.write_text("a\n<!-- qor-board:begin -->\n<!-- qor-board:end -->\nb\n")
    cache = ["--cache-dir", str(work / "cache")]
    assert cli.main(args + cache + ["--readme", str(page)]) == 0
    first = capsys.readouterr()
    assert "[1/1] similarity_comparator ecp5 (board) ..." in first.err
    assert "wrote " in first.out and "flows.json" in first.out
    qor = json.loads((work / "out" / "qor.json").read_text())
    [row] = qor["rows"]
    assert row["preset"] == "board" and row["ecp5"]["status"] == "ok"
    assert row["ecp5"]["lut"] > 0 and row["ecp5"]["fmax_mhz"] > 0
    assert row["ecp5"]["critical_path"]["delay_ns"] > 0
    text = (work / "out" / "qor.md").read_text()
    assert text.startswith("# QoR") and "| board | similarity_comparator |" in text
    assert "| `similarity_comparator` | " in page.read_text()
    assert page.read_text().startswith("a\n<!-- qor-board:begin -->\n\nPreset `board`")
    for where in (cache, ["--cache-dir", str(work / "empty-cache")]):
        assert cli.main(args + where) == 0
        again = capsys.readouterr()
        assert "[1/1] similarity_comparator ecp5 (board): cached, ok" in again.err
        assert json.loads((work / "out" / "qor.json").read_text())["rows"] == qor["rows"]
    assert (work / "out" / "qor.png").read_bytes().startswith(b"\x89PNG")


def test_cli_readme_needs_its_markers_before_any_flow(work, capsys):
    page = work / "page.md"
    page.write_text("no markers\n")
    args = ["synth", "--qor", "board", "--block", BLOCK, "--readme", str(page)]
    assert cli.main(args) == 2
    assert "qor-board:begin" in capsys.readouterr().err
    assert cli.main(["synth", "--readme", str(page)]) == 2
    assert "--readme goes with --qor" in capsys.readouterr().err
    assert cli.main(["synth", "--qor", "board", "--readme", str(work / "missing.md")]) == 2
    assert "missing.md" in capsys.readouterr().err
