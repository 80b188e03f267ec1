"""The datasheet files that ``focus-rtl emit`` writes beside the top's Verilog: the C header
compiles and its values are the register table's; the JSON map lists every register once; the
SystemVerilog package lints; all of it from :data:`rtl.top.registers.REGISTERS`."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rtl.flow import toolchain
from rtl.flow.datasheet import DATASHEET_FILES
from rtl.flow.emit import emit_files
from rtl.params import FocusParams
from rtl.top.registers import REGISTER, REGISTERS, render_markdown


@pytest.fixture(scope="module")
def emitted():
    out = toolchain.BUILD_ROOT / "test-datasheet"
    shutil.rmtree(out, ignore_errors=True)
    # No synth report (an empty root), whatever earlier runs left in build/synth/.
    written = emit_files(FocusParams.board(), out, ["focus_unit"], preset="board",
                         synth_root=out / "no-synth")
    assert [p.name for p in written] == ["focus_unit.v", "params.json", *DATASHEET_FILES]
    assert "datasheet.md" in DATASHEET_FILES
    return out


@pytest.fixture(scope="module")
def emitted_axi():
    out = toolchain.BUILD_ROOT / "test-datasheet-axi"
    shutil.rmtree(out, ignore_errors=True)
    written = emit_files(FocusParams.board(), out, ["focus_unit"], preset="board", wraps=["axi"],
                         synth_root=out / "no-synth")
    assert [p.name for p in written] == ["focus_unit.v", "focus_unit_axi.v", "params.json",
                                         *DATASHEET_FILES]
    return out


def test_register_json(emitted):
    record = json.loads((emitted / "registers.json").read_text())
    names = [r["name"] for r in record["registers"]]
    assert names == [r.name for r in REGISTERS]
    ctrl = next(r for r in record["registers"] if r["name"] == "CTRL")
    assert ctrl["byte_address"] == 4 * REGISTER["CTRL"].addr == 4
    assert {f["name"]: f["lsb"] for f in ctrl["fields"]} == {
        "START_SEC": 0, "START_SIC": 1, "CLEAR": 2, "ABORT": 3}


def test_c_header_compiles_with_the_table_values(emitted):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    checks = [f"    CHECK(FOCUS_{r.name}_ADDR == {4 * r.addr}u && "
              f"FOCUS_{r.name}_RESET == {r.reset}u);" for r in REGISTERS]
    checks += [f"    CHECK(FOCUS_{r.name}_{f.name}_SHIFT == {f.lsb}u && "
               f"FOCUS_{r.name}_{f.name}_MASK == {f.mask}u);" for r in REGISTERS for f in r.fields]
    (emitted / "check.c").write_text(
        '#include <stdio.h>\n#include "focus_unit_regs.h"\n#include "focus_unit_regs.h"\n'
        '#define CHECK(x) do { if (!(x)) { printf("fail: %s\\n", #x); bad++; } } while (0)\n'
        "int main(void) {\n    int bad = 0;\n" + "\n".join(checks) + "\n    return bad;\n}\n")
    build = subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", "check",
                            "check.c"], cwd=emitted, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["./check"], cwd=emitted, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


def test_sv_package_lints(emitted, require_simulator):
    require_simulator("verilator")
    lint = subprocess.run(["verilator", "--lint-only", "-Wall", "focus_pkg.sv"], cwd=emitted,
                          capture_output=True, text=True)
    assert lint.returncode == 0 and "%Warning" not in lint.stderr, lint.stderr


def test_ports_json(emitted):
    ports = json.loads((emitted / "ports.json").read_text())
    assert set(ports) == {"scores", "tokens", "mask", "code", "sic"}
    assert all(sum(f["width"] for f in p["fields"]) == p["width"] for p in ports.values())


def test_wrapped_top_in_the_datasheet(emitted_axi, emitted):
    """With --wrap axi, ports.json has the AXI4-Stream ports besides the unit's (unchanged), the
    SV package their tdata structs, params.json the wrapped module."""
    ports = json.loads((emitted_axi / "ports.json").read_text())
    assert {name: p for name, p in ports.items() if p["module"] == "focus_unit"} == json.loads(
        (emitted / "ports.json").read_text())
    axis = {name: p for name, p in ports.items() if p["module"] == "focus_unit_axi"}
    assert set(axis) == {"s_axis_scores", "s_axis_tokens", "m_axis_mask", "m_axis_code",
                         "m_axis_sic"}
    for name, port in axis.items():
        assert port["width"] % 8 == 0
        assert sum(f["width"] for f in port["fields"]) == port["width"]
        assert port["direction"] == ("in" if name.startswith("s_") else "out")
        assert port["tlast"] == (name != "s_axis_scores")
        unit = ports[port["stream"]]
        # The tdata fields are the payload's but last, at the same offsets.
        assert [f for f in port["fields"] if f["name"] != "reserved"] == [
            f for f in unit["fields"] if f["name"] != "last"]
        assert port["signals"]["tvalid"] == f"{name}_tvalid"
    package = (emitted_axi / "focus_pkg.sv").read_text()
    for name in axis:
        assert f"}} {name}_tdata_t;" in package
    record = json.loads((emitted_axi / "params.json").read_text())
    assert record["wrapped"] == ["focus_unit_axi"] and record["blocks"] == ["focus_unit"]
    assert json.loads((emitted / "params.json").read_text())["wrapped"] == []


def test_wrapped_sv_package_lints(emitted_axi, require_simulator):
    require_simulator("verilator")
    lint = subprocess.run(["verilator", "--lint-only", "-Wall", "focus_pkg.sv"], cwd=emitted_axi,
                          capture_output=True, text=True)
    assert lint.returncode == 0 and "%Warning" not in lint.stderr, lint.stderr


@pytest.mark.parametrize("target, which", [("lint", "unit"), ("lint_axi", "axi")])
def test_fusesoc_lint(target, which, emitted, emitted_axi, require_simulator):
    """The emitted folder is a FuseSoC core library; its lint target passes (Verilator through
    Edalize), and with --wrap axi its lint_axi target over focus_unit_axi.v."""
    require_simulator("verilator")
    if which == "axi":
        emitted = emitted_axi
    else:
        assert "lint_axi" not in (emitted / "focus_unit.core").read_text()
    fusesoc = shutil.which("fusesoc", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                           f"{os.environ.get('PATH', '')}")
    assert fusesoc, "fusesoc is a test dependency (the test extra)"
    work = emitted.parent / f"test-datasheet-fusesoc-{which}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    proc = subprocess.run([fusesoc, "--cores-root", str(emitted), "run", "--target", target,
                           "focus-rtl:focus:focus_unit"], cwd=work, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Running" in proc.stdout + proc.stderr


def test_markdown_datasheet(emitted, emitted_axi):
    """datasheet.md: the parameters, every port with its fields, the register table (the one
    rendered from the code's table), each stream's timing; the AXI ports with --wrap axi."""
    text = (emitted / "datasheet.md").read_text()
    assert text.startswith(f"# Focus unit datasheet: {FocusParams.board().tag}\n")
    assert render_markdown() in text
    for name in ("scores", "tokens", "mask", "code", "sic"):
        assert f"### `{name}` payload" in text
        assert f"| `{name}` | " in text.split("## Latency and throughput")[1]
    # The board preset's layouts: 2 lanes of 16-bit scores, 16-bit code words, V = 8 int8.
    for row in ("| `keep` | 0 | 2 | no |", "| `last` | 2 | 1 | no |", "| `word` | 0 | 16 | no |",
                "| `nbits` | 16 | 13 | no |", "| `last` | 29 | 1 | no |",
                "| `vector[i]`, i = 0..7 | 0 + 8*i | 8 | yes |",
                "| `scores[i]`, i = 0..1 | 0 + 16*i | 16 | no |", "| `lanes` | 2 |"):
        assert row in text, row
    # Two comparators: 4 rounds; a map beat 31 + 4 - 1 cycles after its token (latency 31).
    assert "1 token per 4 cycles" in text and "leaves 34 cycles after the token" in text
    assert "focus_unit_axi" not in text and "No `focus-rtl synth` report" in text
    axi = (emitted_axi / "datasheet.md").read_text()
    assert "## Ports of `focus_unit_axi`" in axi
    for row in ("| `m_axis_mask_*` | AXI4-Stream out | 8 | yes | `mask` |",
                "| `s_axis_scores_*` | AXI4-Stream in | 32 | no | `scores` |",
                "| `reserved` | 2 | 6 | no |", "| `reserved` | 29 | 3 | no |"):
        assert row in axi, row


def test_markdown_datasheet_resources():
    """The resources come from the newest synth report made for the same parameters; a report
    for other parameters is not used."""
    root = toolchain.BUILD_ROOT / "test-datasheet-synth"
    shutil.rmtree(root, ignore_errors=True)
    board = FocusParams.board()
    for preset, tag, lut in (("board", board.tag, 8990), ("other", FocusParams().tag, 1)):
        (root / preset).mkdir(parents=True)
        (root / preset / "report.json").write_text(json.dumps({
            "preset": preset, "tag": tag, "results": {"focus_unit": {
                "ecp5": {"status": "ok", "fmax_mhz": 40.71,
                         "block": {"lut": lut, "ff": 4299, "bram": 14, "dsp": 41}},
                "ice40": {"status": "does_not_fit"},
                "generic": {"status": "ok", "cells": 5, "ff": 6, "transistors": 7}}}}))
    out = root / "out"
    emit_files(board, out, ["focus_unit"], preset="board", synth_root=root)
    text = (out / "datasheet.md").read_text()
    resources = text.split("## Resources")[1]
    assert "(`board/report.json`, preset board)" in resources
    assert "| focus_unit | ecp5 | 8990 LUT, 4299 FF, 14 BRAM, 41 DSP, 40.7 MHz |" in resources
    assert "| focus_unit | ice40 | does_not_fit |" in resources
    assert "| focus_unit | generic | 5 cells, 6 FF, 7 transistors |" in resources
    assert "| 1 LUT" not in resources
