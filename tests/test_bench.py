"""``focus-rtl bench`` as a subprocess: a quick run on a tiny parameter set, and bad arguments."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rtl.flow import toolchain

TINY = ["--preset", "board", "--set", "tokens=32", "--set", "lanes=2", "--set", "dim=2",
        "--set", "elem_bits=4", "--set", "theta_bits=4", "--set", "window=16", "--set",
        "tile=32", "--set", "layers=2", "--set", "word_bits=8"]


def _command():
    script = Path(sys.executable).parent / "focus-rtl"
    return [str(script)] if script.exists() else [sys.executable, "-m", "focus_rtl.cli"]


def focus_rtl(*args, cwd):
    return subprocess.run(_command() + list(args), cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def home(request):
    toolchain.apply()
    name = re.sub(r"[^\w.-]+", "_", request.node.name)
    path = toolchain.BUILD_ROOT / "test-bench" / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _table(text):
    """The rows of the summary table as dicts keyed by the header."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True))
            for line in lines[2:]]


def _cdiv(a, b):
    return -(-a // b)


def test_quick_tiny(home):
    proc = focus_rtl("bench", "--quick", *TINY, "-o", "out", "--only", "sec,offsets",
                     "--only", "sic,focus", cwd=home)
    assert proc.returncode == 0, proc.stderr
    progress = re.findall(r"^\[(\d+)/(\d+)\] (.+?) \.\.\. (\d+\.\d) s$", proc.stderr, re.M)
    assert progress, proc.stderr
    assert not re.search(r"^\[\d+/\d+\]", proc.stdout, re.M), "progress belongs on stderr"
    total = int(progress[0][1])
    assert [int(n) for n, *_ in progress] == list(range(1, total + 1))
    out = home / "out"
    for name in ("summary.md", "summary.png", "summary.json", "sec/cycles.md", "sec/cycles.png",
                 "offsets/bits.md", "offsets/cycles.md", "sic/cycles.md", "sic/cycles.png",
                 "focus/focus.md"):
        assert (out / name).is_file(), name
    rows = _table((out / "summary.md").read_text())
    blocks = {row["block"] for row in rows}
    assert blocks == {"importance_analyzer", "topk_selector (bubble)", "topk_selector (radix)",
                      "offset_encoder", "offset_decoder", "block_matcher", "focus_unit"}
    lanes = 2
    for row in rows:
        assert row["= golden"] == "yes", row
        measured, bound = int(row["measured cycles"]), int(row["physical bound"])
        assert row["measured / bound"] == f"{measured / bound:.3f}"
        if row["model"] == "exact":
            assert measured == int(row["model cycles"]), row
        else:
            assert row["block"].startswith(("offset_", "focus_unit")), row
        # The bounds, from the job's own description.
        job = dict(re.findall(r"(\w+)=(\d+)", row["job"]))
        if row["block"] == "importance_analyzer":
            M, R = int(job["M"]), int(job["R"])
            beats = R * _cdiv(M, lanes) if "spatial" in row["job"] else M * _cdiv(R, lanes)
            assert bound == beats
        elif row["block"].startswith("topk_selector"):
            M, k = int(job["M"]), int(job["k"])
            assert bound == (2 if 0 < k < M else 1) * _cdiv(M, lanes)
        elif row["block"] == "block_matcher" or "SIC column" in row["job"]:
            assert bound == int(job["S"])
        elif row["block"] == "focus_unit":
            M, R = int(job["M"]), int(job["R"])
            assert "spatial" in row["job"] and bound >= R * _cdiv(M, lanes)
        else:
            words = _cdiv(int(job["nbits"]), 8)
            assert bound == max(_cdiv(int(job["M"]), lanes), words)
    # The importance analyzer and both sorters: every row of an exact model checked above.
    assert sum(row["model"] == "exact" for row in rows) >= 5


@pytest.mark.parametrize("args, message", [
    (["--only", "sec,nope"], "unknown module 'nope'"),
    (["--set", "nope=1"], "Unknown FocusParams field 'nope'"),
    (["--set", "lanes=0"], "lanes"),
    (["--preset", "huge"], "Unknown preset 'huge'"),
    (["--quick", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_arguments(home, args, message):
    """In-process (the subprocess exit status is covered above and in test_run_npz)."""
    import contextlib
    import io

    from focus_rtl import cli

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            status = cli.main(["bench", *args, "-o", str(home / "out")])
        except SystemExit as exc:
            status = exc.code
    assert status == 2
    assert err.getvalue().count("\n") == 1 and err.getvalue().startswith("focus-rtl: error: ")
    assert message in err.getvalue()
    assert not (home / "out").exists()


def test_a_failing_job_is_reported_and_the_rest_still_runs(home, monkeypatch):
    import contextlib
    import io

    import sim.bench.sic
    from focus_rtl import cli

    def broken(*args, **kwargs):
        raise AssertionError("the RTL differs")

    monkeypatch.setattr(sim.bench.sic, "cycles_row", broken)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["bench", "--quick", *TINY, "--only", "sic,sec", "-o",
                           str(home / "out")])
    assert status == 1
    assert err.getvalue().splitlines()[-1] == (
        "focus-rtl: error: 1 of 4 job(s) failed (not in the tables): sic block match c=2 S=32: "
        "AssertionError: the RTL differs")
    assert "[4/4] sic block match c=2 S=32 ... FAILED" in err.getvalue()     # progress, stderr
    rows = _table((home / "out" / "summary.md").read_text())
    assert {row["block"] for row in rows} == {"importance_analyzer", "topk_selector (bubble)",
                                              "topk_selector (radix)"}
