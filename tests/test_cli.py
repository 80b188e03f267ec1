"""The ``focus-rtl`` console script, run as a subprocess: emit, synth, sweeps and bad arguments."""

import json
import re

import pytest
from helpers import focus_rtl

from rtl.params import FocusParams

TINY = ["--set", "dim=2", "--set", "elem_bits=4", "--set", "theta_bits=2"]


@pytest.fixture
def home(build_dir):
    return build_dir


def test_emit_default_directory(home):
    proc = focus_rtl("emit", "--preset", "board", "--block", "similarity_comparator",
                     cwd=home, build=home / "build")
    assert proc.returncode == 0, proc.stderr
    out = home / "build" / "verilog" / "board"
    assert proc.stdout.splitlines() == [f"wrote build/verilog/board/{name}"
                                        for name in ("similarity_comparator.v", "params.json")]
    record = json.loads((out / "params.json").read_text())
    assert record["params"] == FocusParams.board().to_dict()


def test_emit_wrap_axi(home):
    proc = focus_rtl("emit", "--preset", "board", "--block", "focus_unit", "--wrap", "axi",
                     "-o", "out", cwd=home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:3] == [f"wrote out/{name}" for name in (
        "focus_unit.v", "focus_unit_axi.v", "params.json")]
    assert "module focus_unit_axi(" in (home / "out" / "focus_unit_axi.v").read_text()


def test_emit_is_deterministic(home):
    for name in ("a", "b"):
        proc = focus_rtl("emit", "--preset", "board", "--set", "gating=icg", "--block",
                         "similarity_comparator", "-o", name, cwd=home)
        assert proc.returncode == 0, proc.stderr
        assert len(proc.stdout.splitlines()) == len(list((home / name).iterdir()))
    files = sorted(p.name for p in (home / "a").iterdir())
    assert "params.json" in files and "similarity_comparator.v" in files
    for name in files:
        assert (home / "a" / name).read_bytes() == (home / "b" / name).read_bytes(), name


def test_emit_icg_cell(home):
    proc = focus_rtl("emit", "--set", "gating=icg", "--icg-cell", "ICGX1", "--block",
                     "similarity_comparator", "-o", "out", cwd=home)
    assert proc.returncode == 0, proc.stderr
    text = (home / "out" / "similarity_comparator.v").read_text()
    assert "ICGX1 " in text and "module ICGX1" not in text and "focus_icg" not in text


def test_help_documents_the_choices(home):
    emit = focus_rtl("emit", "--help", cwd=home)
    synth = focus_rtl("synth", "--help", cwd=home)
    assert emit.returncode == synth.returncode == 0
    assert "--icg-cell" in emit.stdout and "behavioural" in emit.stdout
    for word in ("--sweep", "--strict", "harness", "--dsp", "does not fit"):
        assert word in synth.stdout, word


@pytest.mark.synth
def test_synth(home):
    proc = focus_rtl("synth", *TINY, "--block", "similarity_comparator", "--target",
                     "generic,ecp5", "-o", "out", "--work-dir", "work", cwd=home)
    assert proc.returncode == 0, proc.stderr
    lines, progress = proc.stdout.splitlines(), proc.stderr.splitlines()
    assert "[1/2] similarity_comparator generic ..." in progress        # progress on stderr
    assert any(re.match(r"\[2/2\] similarity_comparator ecp5: ok, \d+ LUT", line)
               for line in progress)
    assert not any(line.startswith("[") for line in lines)
    assert "wrote out/report.json" in lines and "wrote out/report.md" in lines
    report = json.loads((home / "out" / "report.json").read_text())
    result = report["results"]["similarity_comparator"]
    assert result["generic"]["transistors"] > 0
    assert result["ecp5"]["fmax_mhz"] > 0
    assert report["overrides"] == TINY[1::2]
    assert "| similarity_comparator | ok |" in (home / "out" / "report.md").read_text()
    assert (home / "work" / FocusParams(dim=2, elem_bits=4, theta_bits=2).tag).is_dir()


@pytest.mark.synth
@pytest.mark.slow
def test_synth_sweep(home):
    proc = focus_rtl("synth", *TINY, "--block", "similarity_comparator", "--target", "ice40",
                     "--sweep", "dim=1,2", "--work-dir", "work", cwd=home, build=home / "build")
    assert proc.returncode == 0, proc.stderr
    out = home / "build" / "synth" / "default" / "sweep-dim"
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["field"] == "dim" and [run["value"] for run in sweep["runs"]] == [1, 2]
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert "dim=2 similarity_comparator" in (out / "sweep.md").read_text()
    assert "[1/2] similarity_comparator ice40 (dim=1) ..." in proc.stderr
    assert (out / "pareto.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.synth
def test_synth_strict(home):
    """A design that does not fit is reported (exit 0); with --strict the exit status is 1."""
    args = ["synth", "--set", "dim=8", "--set", "elem_bits=6", "--set", "theta_bits=2",
            "--block", "similarity_comparator", "--target", "ice40", "--dsp", "on",
            "-o", "out", "--work-dir", "work"]
    proc = focus_rtl(*args, cwd=home)
    assert proc.returncode == 0, proc.stderr
    assert "does_not_fit" in proc.stdout and "does_not_fit" in proc.stderr  # report, progress
    report = json.loads((home / "out" / "report.json").read_text())
    assert report["results"]["similarity_comparator"]["ice40"]["status"] == "does_not_fit"
    strict = focus_rtl(*args, "--strict", cwd=home)
    assert strict.returncode == 1
    assert strict.stderr.splitlines()[-1].startswith(
        "focus-rtl: error: 1 flow(s) failed: does_not_fit")


BAD = [
    (["emit", "--set", "bogus=1"], "'bogus'"),
    (["emit", "--set", "dim=x"], "FocusParams.dim = 'x' is not an integer"),
    (["emit", "--set", "dim=0"], "FocusParams.dim = 0 is out of range"),
    (["emit", "--set", "gating=maybe"], "FocusParams.gating = 'maybe'"),
    (["emit", "--set", "dim"], "'dim' is not of the form field=value"),
    (["emit", "--block", "nope"], "unknown block 'nope'"),
    (["emit", "--preset", "huge"], "Unknown preset 'huge'"),
    (["emit", "--icg-cell", "1x"], "'1x' is not a Verilog identifier"),
    (["emit", "--wrap", "wishbone"], "invalid choice: 'wishbone'"),
    (["emit", "--block", "sec", "--wrap", "axi"], "--wrap needs the block focus_unit"),
    (["synth", "--preset", "huge"], "Unknown preset 'huge'"),
    (["synth", "--set", "window=1"], "FocusParams.window = 1 is out of range"),
    (["synth", "--block", "nope"], "unknown block 'nope'"),
    (["synth", "--target", "asic"], "unknown target 'asic'"),
    (["synth", "--sweep", "dim=1,x"], "FocusParams.dim = 'x' is not an integer"),
    (["synth", "--sweep", "nope=1"], "'nope'"),
    (["synth", "--freq", "ice40=fast"], "'fast' is not a number"),
    (["synth", "--dsp", "maybe"], "invalid choice: 'maybe'"),
    (["synth", "--seeds", "0"], "--seeds 0: must be at least 1"),
    (["bench", "--only", "nope"], "unknown module 'nope'"),
    (["run", "sec", "-i", "in.npz", "-o", "out.npz", "--keep", "1", "--preset", "huge"],
     "Unknown preset 'huge'"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_arguments(home, args, message):
    proc = focus_rtl(*args, cwd=home, build=home / "build")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("focus-rtl: error: ")
    assert message in lines[0]
    assert not (home / "build").exists()


UNWRITABLE = [
    (["emit", "--block", "similarity_comparator", "-o", "a-file/out"], "a-file/out"),
    (["emit", "--block", "similarity_comparator", "-o", "/proc/focus-rtl-test/out"],
     "/proc/focus-rtl-test"),
    (["run", "sec", "-i", "in.npz", "-o", "a-file/out.npz", "--keep", "1"], "a-file/out.npz"),
]


@pytest.mark.parametrize("args, path", UNWRITABLE, ids=[" ".join(a[:1] + a[-2:])
                                                        for a, _ in UNWRITABLE])
def test_unwritable_output_is_one_error_line(home, args, path):
    """An output that cannot be created (under a file, under /proc) is an I/O error: one line
    ``focus-rtl: error: ...`` naming the path, exit 1, no traceback."""
    import numpy as np

    (home / "a-file").write_text("a file, not a directory\n")
    np.savez(home / "in.npz", scores=np.ones((2, 4), np.uint16))
    proc = focus_rtl(*args, cwd=home, build=home / "build")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("focus-rtl: error: "), proc.stderr
    assert path in lines[0]


def test_cli_args():
    """The shared plumbing: list flattening, --preset/--set defaults, parsing and its errors."""
    import argparse

    from rtl.flow.cli_args import BadArgs, add_param_arguments, params_from, split_list

    assert split_list(None) == []
    assert split_list(["a,b", " c ", ",", "d,,e"]) == ["a", "b", "c", "d", "e"]
    for default in ("default", None):
        parser = argparse.ArgumentParser()
        add_param_arguments(parser, preset_default=default)
        args = parser.parse_args([])
        assert (args.preset, args.set) == (default, None)
        args = parser.parse_args(["--preset", "paper", "--set", "dim=4", "--set", "lanes=2"])
        assert (args.preset, args.set) == ("paper", ["dim=4", "lanes=2"])
    assert params_from("paper", ["dim=4"]) == FocusParams.paper().replace(dim=4)
    assert params_from("board", None) == FocusParams.board()
    for preset, overrides, message in [("huge", [], "Unknown preset 'huge'"),
                                       ("default", ["dim=x"], "'x' is not an integer"),
                                       ("default", ["dim"], "'dim' is not of the form")]:
        with pytest.raises(BadArgs, match=message):
            params_from(preset, overrides)
