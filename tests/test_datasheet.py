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
from rtl.top.registers import REGISTER, REGISTERS


@pytest.fixture(scope="module")
def emitted():
    out = toolchain.BUILD_ROOT / "test-datasheet"
    shutil.rmtree(out, ignore_errors=True)
    written = emit_files(FocusParams.board(), out, ["focus_unit"], preset="board")
    assert [p.name for p in written] == ["focus_unit.v", "params.json", *DATASHEET_FILES]
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


def test_fusesoc_lint(emitted, require_simulator):
    """The emitted folder is a FuseSoC core library; its lint target passes (Verilator through
    Edalize)."""
    require_simulator("verilator")
    fusesoc = shutil.which("fusesoc", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                           f"{os.environ.get('PATH', '')}")
    assert fusesoc, "fusesoc is a test dependency (the test extra)"
    work = emitted.parent / "test-datasheet-fusesoc"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    proc = subprocess.run([fusesoc, "--cores-root", str(emitted), "run", "--target", "lint",
                           "focus-rtl:focus:focus_unit"], cwd=work, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Running" in proc.stdout + proc.stderr
