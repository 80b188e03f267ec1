"""Helpers shared by the tests: stall crosses, job generators, and the tools run as subprocesses
(the console script and yowasp-sby).

Fixtures live in ``conftest.py``; these are plain functions a test imports (``from helpers import
...``; pytest puts ``tests/`` on the path).
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume, ClockDomain, Elaboratable, Fragment, Module, Signal

from golden.block_match import candidate_offsets
from golden.map_code import encode_map
from rtl.flow import toolchain
from rtl.params import FocusParams

#: Shapes of the SEC blocks' tests: lanes 1, 3, 4 and 32, small buffers; score widths that are
#: not a multiple of 4 included.
SEC_SHAPES = [dict(tokens=12, lanes=1, score_bits=5), dict(tokens=20, lanes=3, score_bits=16),
              dict(tokens=24, lanes=4, score_bits=9), dict(tokens=70, lanes=32, score_bits=16)]

#: Shapes of the offset encoder's and decoder's tests, the first the smallest.
OFFSET_SHAPES = [FocusParams(tokens=64, lanes=4, word_bits=8),
                 FocusParams(tokens=64, lanes=4, word_bits=16),
                 FocusParams(tokens=64, lanes=1, word_bits=32),
                 FocusParams(tokens=100, lanes=3, word_bits=8),   # lanes, tokens not powers of 2
                 FocusParams(tokens=256, lanes=8, word_bits=16)]  # codes up to 17 bits > a word


def stall_cross(values, patterns):
    """``(value, stalls)`` cases of a parameter (a comparator count, a shape) crossed with the four
    stall patterns (``patterns``: a dict name -> ``stalls`` argument, or the names alone). At the
    first value all four run in ``make test``; at the others ``both`` does and the other three are
    marked ``slow`` (the larger configurations are most of a simulation file's time).
    ``tests/conftest.py``'s ``SLOW_CASES`` moves some first-value cases too, where another test
    of the block runs all four patterns in the fast tier."""
    named = patterns.items() if isinstance(patterns, dict) else ((n, n) for n in patterns)
    named = list(named)
    return [pytest.param(v, stalls, id=f"{getattr(v, 'tag', v)}-{name}",
                         marks=pytest.mark.slow if i and name != "both" else ())
            for i, v in enumerate(values) for name, stalls in named]


def sec_shape_id(shape):
    """The pytest id of a :data:`SEC_SHAPES` entry."""
    return f"M{shape['tokens']}_a{shape['lanes']}_s{shape['score_bits']}"


def cdiv(a, b):
    """ceil(a / b) for integers."""
    return -(-a // b)


def formal_dir(name):
    """``build/formal/<name>``, created: where a formal test's files and sby runs go."""
    toolchain.apply()
    directory = toolchain.BUILD_ROOT / "formal" / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory

__all__ = ["OFFSET_SHAPES", "SEC_SHAPES", "cdiv", "check_bmc_and_cover", "focus_rtl", "formal_dir",
           "run_sby", "sec_shape_id"]


def _command():
    script = Path(sys.executable).parent / "focus-rtl"
    return [str(script)] if script.exists() else [sys.executable, "-m", "focus_rtl.cli"]


def focus_rtl(*args, cwd, build=None):
    """Runs the ``focus-rtl`` console script in ``cwd``; ``build`` sets ``FOCUS_BUILD`` (where
    the default outputs go). Returns the ``CompletedProcess`` with text output."""
    env = dict(os.environ)
    if build is not None:
        env["FOCUS_BUILD"] = str(build)
    return subprocess.run(_command() + [str(a) for a in args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def run_sby(work, name, top, ports, modes, depth, engine="smtbmc --nopresat z3", script="",
            timeout=900):
    """Checks the assertions of the Amaranth module ``top`` with yowasp-sby and z3 in ``work``.

    ``modes`` is one sby mode (``prove``, ``bmc``, ``cover``; the run goes in ``work/name``) or a
    list of them, run as sby tasks (in ``work/name_<mode>``). ``script`` adds Yosys commands after
    ``prep``. Returns (exit status, log, {mode: the task's status word, or "MISSING"}).

    ``ports`` must include the clock: left out, Amaranth ties it to 0 and every assertion holds
    vacuously. The YoWASP tools cannot see /tmp, so ``work`` is a directory under build/ and sby
    runs there with relative paths.
    """
    tasked = not isinstance(modes, str)
    modes = list(modes) if tasked else [modes]
    options = "\n".join(f"{mode}: mode {mode}" for mode in modes) if tasked else f"mode {modes[0]}"
    tasks = "[tasks]\n" + "\n".join(modes) + "\n\n" if tasked else ""
    (work / f"{name}.il").write_text(rtlil.convert(top, name="top", ports=ports))
    (work / f"{name}.sby").write_text(
        f"{tasks}[options]\n{options}\ndepth {depth}\nmulticlock off\n\n[engines]\n{engine}\n\n"
        f"[script]\nread_rtlil {name}.il\nprep -top top\n{script}\n[files]\n{name}.il\n")
    runs = {mode: work / (f"{name}_{mode}" if tasked else name) for mode in modes}
    for run_dir in runs.values():
        shutil.rmtree(run_dir, ignore_errors=True)
    run = subprocess.run([os.environ.get("SBY", "yowasp-sby"), "-f", f"{name}.sby"], cwd=work,
                         capture_output=True, text=True, timeout=timeout)
    status = {mode: (d / "status").read_text().split()[0] if (d / "status").exists() else "MISSING"
              for mode, d in runs.items()}
    return run.returncode, run.stdout + run.stderr, status


def check_bmc_and_cover(name, top, depth, covers, **options):
    """Asserts that ``top``'s assertions hold to ``depth`` cycles (bmc) and that all its
    ``covers`` cover statements are reached (so the check is not vacuous), in
    ``build/formal/<name>``; ``options`` go to :func:`run_sby`."""
    work = formal_dir(name)
    code, log, status = run_sby(work, name, top, [top.domain.clk, top.domain.rst],
                                ["bmc", "cover"], depth, **options)
    assert status == {"bmc": "PASS", "cover": "PASS"}, f"{status} (see {work}):\n{log[-3000:]}"
    assert code == 0, f"sby failed (see {work}):\n{log[-3000:]}"
    assert log.count("reached cover statement") == covers, log[-3000:]


def raises_like_golden(message, golden_fn, sim_fn, *args, **kwargs):
    """Both the golden model ``golden_fn`` and its simulation ``sim_fn`` reject these arguments
    with a ``ValueError`` matching ``message``: bad input is named the same in both."""
    for fn in (golden_fn, sim_fn):
        with pytest.raises(ValueError, match=message):
            fn(*args, **kwargs)


def sic_like(rng, rows, columns, dim, tile, share=0.6, low=-128, high=127):
    """Maps and uniques with SIC's shape: in each tile a row either takes the map of an earlier row
    of its tile (probability ``share``) or starts a new unique vector; indices count up from 0
    across tiles."""
    maps = np.zeros((rows, columns), np.int64)
    uniques = []
    for c in range(columns):
        count = 0
        for s in range(rows):
            start = s - s % tile
            if s > start and rng.random() < share:
                maps[s, c] = maps[rng.integers(start, s), c]
            else:
                maps[s, c] = count
                count += 1
        uniques.append(rng.integers(low, high + 1, (count, dim)))
    return maps, uniques


def coded_gemm_job(rng, rows, columns, dim, tile, *, frame_stride=6, row_stride=2, share=0.6,
                   word_bits=16, gap=2, elem=128):
    """A random job for the coded Focus GEMM, built forwards (not by decoding): positions with
    gaps of 1 to ``gap``; per tile and column each row either matches, with probability
    ``share``, one of its candidates c = 1..7 that is an earlier row of its tile (symbol c, that
    row's map entry) or opens a group (symbol 0, the column's next unique index); each tile's
    symbols coded by ``golden.map_code.encode_map`` (fixed or variable at random).

    Returns ``(uniques, map_codes, positions, maps, symbols)`` with ``maps`` [rows, columns] the
    job's map as ``golden.focus_gemm`` takes it and ``symbols`` [rows, columns]."""
    positions = np.cumsum(rng.integers(1, gap + 1, rows)) - 1
    offsets = candidate_offsets(frame_stride, row_stride)
    maps = np.zeros((rows, columns), np.int64)
    symbols = np.zeros((rows, columns), np.int64)
    counts = [0] * columns
    blocks = cdiv(rows, tile)
    codes = [[None] * columns for _ in range(blocks)]
    for c in range(columns):
        for t in range(blocks):
            start, stop = t * tile, min((t + 1) * tile, rows)
            row_of = {}
            for s in range(start, stop):
                hits = [k + 1 for k, off in enumerate(offsets)
                        if off and int(positions[s] - off) in row_of]
                if hits and rng.random() < share:
                    symbols[s, c] = hits[int(rng.integers(len(hits)))]
                    maps[s, c] = maps[row_of[int(positions[s] - offsets[symbols[s, c] - 1])], c]
                else:
                    maps[s, c] = counts[c]
                    counts[c] += 1
                row_of[int(positions[s])] = s
            words, nbits = encode_map(symbols[start:stop, c], variable=bool(rng.random() < 0.5),
                                      word_bits=word_bits)
            codes[t][c] = ([int(w) for w in words], int(nbits))
    uniques = [rng.integers(-elem, elem, (counts[c], dim)) for c in range(columns)]
    return uniques, codes, positions, maps, symbols


class StreamStageHarness(Elaboratable):
    """The frame of a formal proof of a one-in, one-out stream stage (``dut`` with ``i_stream``
    and ``o_stream`` of ``width`` bits): free inputs, an environment whose input follows the
    stream rules (it holds an offered beat until it is taken; out of reset), and the proven
    output rule (``valid`` and ``payload`` hold while stalled). A subclass adds its model and
    properties in :meth:`check`; ``cover`` names its cover task (None for the proof)."""

    def __init__(self, dut, width, cover=None):
        self.cover = cover
        self.dut = dut
        self.width = width
        self.cd_sync = ClockDomain("sync")
        self.i_valid = Signal()
        self.i_payload = Signal(width)
        self.o_ready = Signal()

    def ports(self):
        return [self.cd_sync.clk, self.cd_sync.rst, self.i_valid, self.i_payload, self.o_ready]

    def check(self, m, i_fire, o_fire):
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self.cd_sync
        dut = self.dut
        m.submodules.dut = Fragment.get(dut, platform)     # elaborated now: its probes exist
        i, o = dut.i_stream, dut.o_stream
        m.d.comb += [i.valid.eq(self.i_valid), i.payload.eq(self.i_payload),
                     o.ready.eq(self.o_ready)]
        m.d.comb += Assume(~self.cd_sync.rst)
        i_wait, i_was = Signal(), Signal(self.width)
        o_wait, o_was = Signal(), Signal(self.width)
        m.d.sync += [i_wait.eq(i.valid & ~i.ready), i_was.eq(i.payload),
                     o_wait.eq(o.valid & ~o.ready), o_was.eq(o.payload)]
        with m.If(i_wait):
            m.d.comb += Assume(i.valid & (i.payload == i_was))
        with m.If(o_wait):
            m.d.comb += Assert(o.valid & (o.payload == o_was))
        self.check(m, i.valid & i.ready, o.valid & o.ready)
        return m


def liberty_or_skip():
    """The OSU 0.18 um liberty file; without it the test skips, unless FOCUS_REQUIRE_LIBERTY is
    set (CI after `make liberty`), when it fails."""
    path = toolchain.liberty_path()
    if path is None or not path.is_file():
        if os.environ.get("FOCUS_REQUIRE_LIBERTY"):
            pytest.fail(f"FOCUS_REQUIRE_LIBERTY is set but there is no liberty file ({path})")
        pytest.skip("no OSU 0.18 um liberty: run `make liberty`")
    return path


def liberty_cell_areas(path):
    """{cell: area} read from the liberty text directly (not through Yosys)."""
    text = path.read_text()
    return {name: float(area) for name, area in
            re.findall(r"^\s*cell\s*\(\s*(\w+)\s*\)\s*\{[^{}]*?\barea\s*:\s*([\d.]+)", text,
                       re.MULTILINE)}
