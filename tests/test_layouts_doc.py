# amaranth: UnusedElaboratable=no
"""The payload descriptions for integrators (:mod:`rtl.flow.layouts_doc`): the fields cover every
bit once, and the SystemVerilog package lints clean (``verilator --lint-only -Wall``) and is
bit-compatible with the flat payload, signs included, checked by a Verilator run on random words
against Amaranth's own view of the same bits. (Icarus 11 reads an element of a packed array of a
signed named type as unsigned, against IEEE 1800 7.4.1, so it cannot check the signs.)"""

import random
import shutil
import subprocess

import pytest
from amaranth.hdl import Shape
from amaranth.lib import data

from rtl.flow import toolchain
from rtl.flow.layouts_doc import layout_fields, port_fields, sv_field, sv_package
from rtl.params import FocusParams
from rtl.top.focus_unit import FocusUnit

PRESETS = {"board": FocusParams.board(), "tiny": FocusParams(tokens=24, lanes=3, dim=4,
                                                              elem_bits=5, word_bits=8)}


def _payloads(p):
    unit = FocusUnit(p)
    return {name: member.signature.members["payload"].shape
            for name, member in unit.signature.members.items()
            if member.is_signature and "payload" in member.signature.members}


@pytest.mark.parametrize("preset", PRESETS)
def test_fields_tile_the_payload(preset):
    for name, layout in _payloads(PRESETS[preset]).items():
        fields = layout_fields(layout)
        covered = sorted(bit for f in fields
                         for bit in range(f["offset"], f["offset"] + f["width"]))
        assert covered == list(range(Shape.cast(layout).width)), name
        assert len({f["name"] for f in fields}) == len(fields), name


def test_port_fields_directions():
    ports = port_fields(FocusUnit(FocusParams.board()))
    assert {n: v["direction"] for n, v in ports.items()} == {
        "scores": "in", "tokens": "in", "mask": "out", "code": "out", "sic": "out"}


def _amaranth_value(view, path):
    """A leaf field of an Amaranth ``data.Const`` view by its dotted/indexed path."""
    value = view
    for part in path.replace("]", "").replace("[", ".").split("."):
        value = value[int(part)] if part.isdigit() else getattr(value, part)
    return int(value)


def _sv_path(path):
    out = []
    for part in path.split("."):
        base, _, index = part.partition("[")
        out.append(sv_field(base) + (f"[{index}" if index else ""))
    return ".".join(out)


@pytest.mark.parametrize("preset", ["tiny", pytest.param("board", marks=pytest.mark.slow)])
def test_sv_package_matches_the_layouts(preset, require_simulator):
    require_simulator("verilator")
    toolchain.apply()
    payloads = _payloads(PRESETS[preset])
    work = toolchain.BUILD_ROOT / "test-layouts-doc" / preset
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "focus_pkg.sv").write_text(sv_package("focus_pkg", payloads))
    lint = subprocess.run(["verilator", "--lint-only", "-Wall", "focus_pkg.sv"], cwd=work,
                          capture_output=True, text=True)
    assert lint.returncode == 0 and "%Warning" not in lint.stderr, lint.stderr
    rng = random.Random(preset)
    lines, expected = [], []
    for name, layout in payloads.items():
        width = Shape.cast(layout).width
        for n in range(4):
            raw = rng.getrandbits(width) if n else (1 << width) - 1   # all ones: signs show
            view = data.Const(data.Layout.cast(layout), raw)
            lines.append(f"  {name}_t v_{name}_{n};")
            lines.append(f"  initial begin v_{name}_{n} = {width}'h{raw:x};")
            for field in layout_fields(layout):
                lines.append(f'    $display("V %0d", v_{name}_{n}.{_sv_path(field["name"])});')
                expected.append(_amaranth_value(view, field["name"]))
            lines.append("  end")
    (work / "top.sv").write_text("module top;\n  import focus_pkg::*;\n" + "\n".join(lines)
                                 + "\nendmodule\n")
    build = subprocess.run(["verilator", "--binary", "--top-module", "top", "-Wno-DECLFILENAME",
                            "-o", "check", "focus_pkg.sv", "top.sv"], cwd=work,
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["obj_dir/check"], cwd=work, capture_output=True, text=True)
    got = [int(line[2:]) for line in run.stdout.splitlines() if line.startswith("V ")]
    assert got == expected
