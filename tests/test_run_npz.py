"""``focus-rtl run``: golden and RTL runs on .npz files against the library calls, and bad files."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import golden
from focus_rtl import cli
from rtl.flow import toolchain

BOARD = ["--preset", "board", "--set", "dim=2"]
SIC = ["--frame-stride", "16", "--row-stride", "4"]


@pytest.fixture
def home(request):
    toolchain.apply()
    name = re.sub(r"[^\w.-]+", "_", request.node.name)
    path = toolchain.BUILD_ROOT / "test-run-npz" / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def focus_rtl(*args):
    """``focus-rtl`` in-process: (exit status, stdout, stderr)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main([str(a) for a in args])
        except SystemExit as exc:
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def _load(path):
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def _scores(rng, R=3, M=20):
    return rng.integers(0, 1 << 16, (R, M)).astype(np.uint16)


def _tokens(rng, S=24, D=4):
    """Tokens on a 4x4 grid with repeats, so that the block matcher finds matches."""
    base = rng.integers(-20, 20, (4, D))
    return (base[rng.integers(0, 4, S)] + rng.integers(-1, 2, (S, D))).astype(np.int8)


def test_sec_golden_equals_the_library(home):
    rng = np.random.default_rng(1)
    scores = _scores(rng)
    np.savez(home / "in.npz", scores=scores)
    status, out, err = focus_rtl("run", "sec", "-i", home / "in.npz", "-o", home / "out.npz",
                                 "--keep", 7, "--mode", "temporal", "--order", 2,
                                 "--word-bits", 16)
    assert status == 0, err
    got = _load(home / "out.npz")
    mask, words, nbits = golden.sec(scores, 7, mode="temporal", order=2, word_bits=16)
    assert set(got) == {"mask", "words", "nbits", "importance"}
    assert np.array_equal(got["mask"], mask) and got["mask"].dtype == bool
    assert np.array_equal(got["words"], words) and int(got["nbits"]) == nbits
    assert np.array_equal(got["importance"], golden.importance(scores))
    assert "kept 7" in out


def test_sec_from_attention(home):
    attention = np.random.default_rng(2).random((2, 12))
    np.savez(home / "in.npz", attention=attention)
    status, _, err = focus_rtl("run", "sec", "-i", home / "in.npz", "-o", home / "out.npz",
                               "--keep", 5)
    assert status == 0, err
    mask, words, nbits = golden.sec(golden.scores_from_fp16(attention.astype(np.float16)), 5)
    got = _load(home / "out.npz")
    assert np.array_equal(got["mask"], mask) and np.array_equal(got["words"], words)


def test_sic_golden_equals_the_library(home):
    rng = np.random.default_rng(3)
    tokens = _tokens(rng)
    positions = np.sort(rng.choice(40, 24, replace=False))
    np.savez(home / "in.npz", tokens=tokens, positions=positions)
    status, _, err = focus_rtl("run", "sic", "-i", home / "in.npz", "-o", home / "out.npz",
                               *BOARD, *SIC, "--theta", 0.9, "--representative", "mean")
    assert status == 0, err
    maps, uniques = golden.sic(tokens, positions, frame_stride=16, row_stride=4,
                               theta_q=golden.theta_q(0.9), tile=256, window=64,
                               representative="mean", dim=2)
    got = _load(home / "out.npz")
    assert set(got) == {"maps", "uniques_0", "uniques_1"}
    assert np.array_equal(got["maps"], maps)
    for j, u in enumerate(uniques):
        assert np.array_equal(got[f"uniques_{j}"], u) and got[f"uniques_{j}"].dtype == u.dtype
    assert maps.max() < len(tokens) - 1  # the case does match tokens


def test_sic_float_tokens_are_quantized(home):
    x = np.random.default_rng(4).standard_normal((10, 4))
    np.savez(home / "in.npz", tokens=x)
    status, _, err = focus_rtl("run", "sic", "-i", home / "in.npz", "-o", home / "out.npz",
                               "--set", "dim=4", *SIC, "--theta-q", 200)
    assert status == 0, err
    maps, uniques = golden.sic(golden.quantize(x), np.arange(10), frame_stride=16, row_stride=4,
                               theta_q=200, dim=4)
    got = _load(home / "out.npz")
    assert np.array_equal(got["maps"], maps) and np.array_equal(got["uniques_0"], uniques[0])


def test_focus_golden_equals_the_library(home):
    rng = np.random.default_rng(6)
    scores, tokens = _scores(rng, 2, 24), _tokens(rng, 24)
    np.savez(home / "in.npz", scores=scores, tokens=tokens)
    status, _, err = focus_rtl("run", "focus", "-i", home / "in.npz", "-o", home / "out.npz",
                               *BOARD, *SIC, "--keep", 15, "--theta-q", 220)
    assert status == 0, err
    mask, words, nbits, maps, uniques = golden.focus(
        scores, tokens, 15, frame_stride=16, row_stride=4, theta_q=220, word_bits=16, tile=256,
        window=64, dim=2)
    got = _load(home / "out.npz")
    assert set(got) == {"mask", "words", "nbits", "importance", "maps", "uniques_0",
                        "uniques_1"}
    assert np.array_equal(got["mask"], mask) and np.array_equal(got["words"], words)
    assert int(got["nbits"]) == nbits and np.array_equal(got["maps"], maps)
    assert all(np.array_equal(got[f"uniques_{j}"], u) for j, u in enumerate(uniques))


def test_rtl_equals_golden(home):
    rng = np.random.default_rng(5)
    scores, tokens = _scores(rng, 2, 12), _tokens(rng, 12)
    np.savez(home / "in.npz", scores=scores, tokens=tokens)
    for job, extra in (("sec", ["--keep", 4]), ("sic", [*SIC, "--theta", 0.8]),
                       ("focus", ["--keep", 9, *SIC, "--theta", 0.8])):
        outs = {}
        for name, rtl in (("golden", []), ("rtl", ["--rtl", "amaranth"])):
            outs[name] = home / f"{job}-{name}.npz"
            status, _, err = focus_rtl("run", job, "-i", home / "in.npz", "-o", outs[name],
                                       *BOARD, *extra, *rtl)
            assert status == 0, err
        want, got = _load(outs["golden"]), _load(outs["rtl"])
        stats = {key for key in got if key.startswith("stats_")}
        assert int(got["stats_cycles"]) > 0
        assert set(got) - stats == set(want)
        for key in want:
            assert np.array_equal(got[key], want[key]), (job, key)


def test_rtl_keeping_nothing_equals_golden(home):
    """``run focus --keep 0 --rtl amaranth`` is a valid job: exit 0 and the same arrays as the
    golden run (empty maps and uniques)."""
    rng = np.random.default_rng(8)
    np.savez(home / "in.npz", scores=_scores(rng, 2, 12), tokens=_tokens(rng, 12))
    outs = {}
    for name, rtl in (("golden", []), ("rtl", ["--rtl", "amaranth"])):
        outs[name] = home / f"{name}.npz"
        status, _, err = focus_rtl("run", "focus", "-i", home / "in.npz", "-o", outs[name],
                                   *BOARD, "--keep", 0, *SIC, "--theta", 0.8, *rtl)
        assert status == 0, err
    want, got = _load(outs["golden"]), _load(outs["rtl"])
    assert want["maps"].shape == (0, 2) and not want["mask"].any()
    for key in want:
        assert got[key].shape == want[key].shape and np.array_equal(got[key], want[key]), key


@pytest.mark.parametrize("job, module, name, extra", [
    ("sec", "sim.sec", "mask_from_beats", ["--keep", 5]),
    ("sic", "sim.block_match", "decode_beats", [*SIC, "--theta", 0.8]),
    ("focus", "sim.focus", "decode_beats", ["--keep", 5, *SIC, "--theta", 0.8]),
])
def test_an_internal_value_error_is_an_rtl_failure(home, monkeypatch, job, module, name, extra):
    """A ValueError raised inside the simulation of a job the checks accepted is the RTL's (or
    the driver's) failure, exit 1, never bad input (exit 2)."""
    import importlib

    def broken(*args, **kwargs):
        raise ValueError("cannot reshape array of size 0 into shape (0,newaxis)")

    monkeypatch.setattr(importlib.import_module(module), name, broken)
    rng = np.random.default_rng(9)
    np.savez(home / "in.npz", scores=_scores(rng, 2, 12), tokens=_tokens(rng, 12))
    status, _, err = focus_rtl("run", job, "-i", home / "in.npz", "-o", home / "out.npz",
                               *BOARD, *extra, "--rtl", "amaranth")
    assert status == 1, err
    assert err.count("\n") == 1 and err.startswith("focus-rtl: error: the RTL run failed: "), err
    assert not (home / "out.npz").exists()


def test_help_documents_the_keys():
    status, out, _ = focus_rtl("run", "--help")
    assert status == 0
    for word in ("scores", "attention", "tokens", "positions", "mask", "words", "nbits",
                 "importance", "maps", "uniques_<j>", "stats_"):
        assert word in out, word


def _bad(home, name):
    """The bad input files, made on demand."""
    path = home / name
    if name == "text.npz":
        path.write_text("not numpy\n")
    elif name == "empty.npz":
        path.write_bytes(b"")
    elif name == "array.npy":
        np.save(path, np.zeros(3))
    elif name == "truncated.npz":
        np.savez(home / "full.npz", scores=np.zeros((50, 50), np.uint16))
        path.write_bytes((home / "full.npz").read_bytes()[:200])
    elif name == "tokens-only.npz":
        np.savez(path, tokens=np.zeros((4, 32), np.int8))
    elif name == "float-scores.npz":
        np.savez(path, scores=np.ones((2, 4)))
    elif name == "flat-scores.npz":
        np.savez(path, scores=np.ones(4, np.uint16))
    elif name == "flat-tokens.npz":
        np.savez(path, tokens=np.ones(8, np.int8))
    elif name == "bad-positions.npz":
        np.savez(path, tokens=np.ones((3, 32), np.int8), positions=np.array([0, 2, 1]))
    elif name == "ok.npz":
        np.savez(path, scores=np.ones((2, 4), np.uint16), tokens=np.ones((3, 32), np.int8))
    return path


@pytest.mark.parametrize("job, name, args, message", [
    ("sec", "missing.npz", ["--keep", 1], r"input file .*missing\.npz does not exist"),
    ("sec", "text.npz", ["--keep", 1],
     r"text\.npz is not an \.npz archive \(not a zip file\); write one with numpy\.savez"),
    ("sec", "empty.npz", ["--keep", 1], r"empty\.npz is not an \.npz archive \(not a zip file\)"),
    ("sec", "array.npy", ["--keep", 1], r"array\.npy is a single \.npy array, not an \.npz"),
    ("sec", "truncated.npz", ["--keep", 1], r"truncated\.npz is not (an|a readable) \.npz"),
    ("sec", "tokens-only.npz", ["--keep", 1],
     (r"has no 'scores' array: `run sec` needs scores, unsigned integer \[R, M\] \(or "
     r"attention, float \[R, M\]\); the file has tokens")),
    ("sic", "ok.npz", [*SIC, "--theta", 0.5], None),
    ("focus", "tokens-only.npz", ["--keep", 1, *SIC, "--theta", 0.5], r"has no 'scores'"),
    ("sec", "float-scores.npz", ["--keep", 1],
     (r"scores must be an unsigned integer array \(use scores_from_fp16 for fp16 values\), not "
     r"dtype float64")),
    ("sec", "flat-scores.npz", ["--keep", 1], r"scores must be 2-D \[R rows, M tokens\]"),
    ("sic", "flat-tokens.npz", [*SIC, "--theta", 0.5], r"tokens must be a 2-D"),
    ("sic", "bad-positions.npz", [*SIC, "--theta", 0.5], r"strictly increasing"),
    ("sec", "ok.npz", ["--keep", -1], r"keep = -1 is out of range"),
    ("sec", "ok.npz", [], r"`run sec` needs --keep"),
    ("sic", "ok.npz", ["--theta", 0.5], r"`run sic` needs --frame-stride and --row-stride"),
    ("sic", "ok.npz", SIC, r"`run sic` needs --theta or --theta-q"),
    ("sic", "ok.npz", [*SIC, "--theta", 1.5], r"--theta: theta = 1\.5 is out of range"),
    ("sic", "ok.npz", ["--frame-stride", 300, "--row-stride", 4, "--theta-q", 3],
     r"window"),
    ("sec", "ok.npz", ["--keep", 1, "--set", "nope=2"], r"Unknown FocusParams field 'nope'"),
])
def test_bad_input(home, job, name, args, message):
    path = _bad(home, name)
    status, _, err = focus_rtl("run", job, "-i", path, "-o", home / "out.npz", *args)
    if message is None:  # the good file works (the cases around it fail for their reason)
        assert status == 0, err
        return
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("focus-rtl: error: "), err
    assert re.search(message, err), err
    assert "allow_pickle" not in err
    assert not (home / "out.npz").exists()


def test_subprocess_exit_status(home):
    """The console script itself: a bad file exits 2 with one line on stderr."""
    script = Path(sys.executable).parent / "focus-rtl"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "focus_rtl.cli"]
    proc = subprocess.run(command + ["run", "sec", "-i", "nope.npz", "-o", "out.npz",
                                     "--keep", "3"],
                          cwd=home, env=dict(os.environ), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == "focus-rtl: error: input file nope.npz does not exist\n"
