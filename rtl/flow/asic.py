"""The cell-level flows of ``focus-rtl synth``: ``generic`` (Yosys cells and a transistor estimate),
``osu018``/``osu018-logic`` (the OSU 0.18 um standard cells, um^2, memories listed) and
``osu018-sta`` (``osu018-logic``'s synthesis mapped for timing: without the area script's AIG
rewriting, with ABC's fanout buffering and gate sizing, and buffer trees on the flip-flops'
high fanouts; OpenSTA on that netlist: critical path and Fmax)."""

import json
import re
import shutil

from . import sta as opensta
from . import toolchain
from .emit import emit_block
from .tools import count_cells, relative_path, run_tool, yosys

# ABC's default gate-mapping script less its SAT sweeping (``&fraig -x; scorr``): on the wide
# multipliers that sweeping takes minutes in the WebAssembly ABC (436 s against 2 s for the board
# comparator) and changes the transistor estimate by about 1 %.
_ABC_SCRIPT = "+strash;dc2;dretime;strash;&get,-n;&dch,-f;&nf;&put"

# The osu018-sta flow's: the same mapping without the area script's AIG rewriting (``dc2``,
# ``dretime``), then ABC's buffering of high-fanout nets and gate sizing on the liberty's delay
# tables, as a placer's timing repair would do (without it a net driving hundreds of gates through
# an X1 cell sets the critical path, tens of ns). The rewriting looks for fewer AIG nodes, and on
# the carry trees Yosys builds for adders and compares (Brent-Kung) it left ripple chains of
# AOI/OAI gates on the critical paths; a synthesis tool under a clock constraint keeps the fast
# structure. Measured on the board preset: frame_stats 201 -> 408 MHz, similarity_comparator
# 148 -> 213, the block matcher 100 -> 120, for 1 to 16 % more cell area than with the rewriting
# (the osu018-logic area figures keep it).
_ABC_TIMING_SCRIPT = "+strash;&get,-n;&dch,-f;&nf;&put;buffer,-p;upsize;dnsize"


def generic_flow(block, params, workdir, timeout):
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
    status, error, seconds = yosys(workdir, script, timeout)
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
        "ff": count_cells(cells, r"\$_DFF\w*"),
        "latch": count_cells(cells, r"\$_DLATCH\w*"),
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
    return {"path": None if path is None else relative_path(path), "found": found,
            "library": library}


def _no_liberty_message(path):
    where = (f"${toolchain.LIBERTY_ENV} is {path}, which does not exist" if path is not None else
             f"no liberty file at {relative_path(toolchain.LIBERTY_FETCHED)} or "
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


def keep_memories_synth(top, memories_json=None, flatten=True):
    """Yosys ``synth`` of ``top`` with its RAMs left as ``$mem_v2`` macros (``osu018-logic``,
    the power flow's ``keep_memories``): the script's lines. ``memories_json`` also writes the
    RAMs, as the coarse stage leaves them, to that JSON file; ``flatten=False`` keeps the
    design's hierarchy (``focus-rtl area``)."""
    dump = (["select t:$mem_v2", f"write_json -selected {memories_json}", "select -clear"]
            if memories_json else [])
    return [
        # Up to and including the coarse stage, which ends with `memory -nomap`.
        f"synth -top {top}{' -flatten' if flatten else ''} -noabc -run begin:fine",
        # ROMs (no write port: constant tables, and case statements that proc_rom turned
        # into tables) are logic, not SRAM: map them as synth would.
        "memory_map -rom-only",
        *dump,
        # synth's fine stage (`help synth`, -noabc) less memory_map, and its check stage.
        "opt -fast -full",
        "opt -full",
        "techmap",
        "opt -fast",
        "hierarchy -check",
        "check",
    ]


def osu018_flow(block, params, workdir, timeout, logic=False, sta=None):
    """The ``osu018`` flow, or with ``logic`` the ``osu018-logic`` one (memories left as
    macros). ``sta`` (a dict of :func:`sta_flow`'s keyword arguments) adds static timing: the
    ``osu018-sta`` flow (``logic`` must be set)."""
    path = toolchain.liberty_path()
    if path is None or not path.is_file():
        return {"status": "no_liberty", "error": _no_liberty_message(path),
                "seconds": {"yosys": 0.0}}
    sta_command = None
    if sta is not None:
        sta_command = opensta.sta_command()
        if sta_command is None:
            return {"status": "no_sta", "error": opensta.no_sta_message(),
                    "seconds": {"yosys": 0.0}, "liberty": liberty_info()}
    # The YoWASP Yosys cannot see /tmp: the flow reads a copy in its work directory.
    shutil.copyfile(path, workdir / "cells.lib")
    name = f"{block}.v"
    (workdir / name).write_text(emit_block(block, params))
    if logic:
        for stale in ("memories_coarse.json", "memories.json"):
            (workdir / stale).unlink(missing_ok=True)
        synth = keep_memories_synth(block, memories_json="memories_coarse.json")
    else:
        synth = [f"synth -top {block} -flatten -noabc"]
    script = [
        f"read_verilog {name}",
        *synth,
        "dfflibmap -liberty cells.lib",
        f"abc -liberty cells.lib -script {_ABC_SCRIPT if sta is None else _ABC_TIMING_SCRIPT}",
        "opt_clean",
        "delete t:$scopeinfo",
        *(["select t:$mem_v2", "write_json -selected memories.json", "select -clear"]
          if logic else []),
        "tee -q -o stat.json stat -json -liberty cells.lib",
        *(["write_json netlist.json"] if sta is not None else []),
    ]
    status, error, seconds = yosys(workdir, script, timeout)
    result = {"status": status, "error": error, "seconds": {"yosys": seconds},
              "liberty": liberty_info()}
    if status != "ok":
        return result
    design = json.loads((workdir / "stat.json").read_text())["design"]
    # stat -liberty leaves the memory cells out of the area ("area ... is unknown").
    cells = dict(sorted((c, n) for c, n in design["num_cells_by_type"].items()
                        if c != "$mem_v2"))
    latch = count_cells(cells, "LATCH", r"\$_DLATCH\w*")
    result.update({
        "cells": sum(cells.values()),
        "ff": count_cells(cells, r"DFF\w*"),
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
    if sta is not None:
        timing = sta_flow(block, workdir, timeout, sta_command, **sta)
        result["seconds"].update(timing.pop("seconds", {}))
        result.update(timing)
        # The buffer trees on the registers' fanouts are cells of the timed netlist too.
        buffers = timing["fanout_buffers"]
        result["area_um2"] = round(result["area_um2"] + buffers["area_um2"], 1)
        if buffers["cells"]:
            result["cells"] += buffers["cells"]
            by_type, cell = result["cells_by_type"], opensta.FANOUT_BUFFER
            by_type[cell] = by_type.get(cell, 0) + buffers["cells"]
            result["cells_by_type"] = dict(sorted(by_type.items()))
    return result


def sta_flow(block, workdir, timeout, command, *, period_ns, mem_read_ns=0.0, mem_setup_ns=0.0):
    """OpenSTA on ``netlist.json`` of the ``osu018-logic`` script in ``workdir`` (see
    :mod:`rtl.flow.sta`). Returns the keys to add to the result: ``status`` and ``error`` (an
    STA or netlist failure is ``"sta_failed"``), ``clock_period_ns``, ``critical_path``,
    ``fmax_mhz``, ``wns_ns``, ``timing_met``, ``paths``, ``worst_endpoints``, ``sta``
    (version and memory boundaries) and the seconds of the two steps."""
    info = opensta.cut_netlist_file(workdir / "netlist.json", workdir / "netlist_cut.json", block,
                                    liberty=workdir / "cells.lib")
    out = {"clock_period_ns": period_ns, "freq_target_mhz": round(1000.0 / period_ns, 3),
           "fanout_buffers": info["fanout_buffers"],
           "sta": {"version": opensta.sta_version(command), "memory_read_delay_ns": mem_read_ns,
                   "memory_setup_ns": mem_setup_ns, "memory_boundaries": info["memories"]}}
    if not info["has_clock"]:
        out.update(status="sta_failed", error=f"{block} has no clk port")
        return out
    status, error, seconds = yosys(workdir, ["read_json netlist_cut.json",
                                             "write_verilog -noattr -noexpr netlist_sta.v"],
                                   timeout, name="netlist_sta")
    out["seconds"] = {"yosys_netlist": seconds}
    if status != "ok":
        out.update(status=status, error=error)
        return out
    script = opensta.sta_script(block, period_ns, info, mem_read_ns=mem_read_ns,
                                mem_setup_ns=mem_setup_ns)
    (workdir / "sta.tcl").write_text("\n".join(script) + "\n")
    (workdir / "sta.log").unlink(missing_ok=True)
    rc, seconds, text = run_tool(command + ["-no_splash", "-exit", "sta.tcl"], workdir, timeout)
    (workdir / "sta.log").write_text(text)
    out["seconds"]["sta"] = seconds
    if rc is None:
        out.update(status="timeout", error=f"sta timed out after {timeout} s")
        return out
    figures = opensta.parse_report(text, period_ns)
    complete = figures.pop("complete")
    errors = [line for line in text.splitlines() if line.startswith("Error")]
    critical = figures["critical_path"]
    if rc != 0 or errors or not complete or critical is None:
        line = errors[0] if errors else (text.strip().splitlines() or ["(no output)"])[-1]
        if critical is None and not errors:
            line = f"no timed path in the report: {line}"
        out.update(status="sta_failed", error=line, **figures)
        return out
    out.update(status="ok", error=None, **figures)
    out.update(fmax_mhz=critical["fmax_mhz"], wns_ns=critical["slack_ns"],
               timing_met=critical["slack_ns"] >= 0)
    return out


def hierarchy_flow(block, params, workdir, timeout):
    """``osu018-logic`` without flattening: every instance's area apart (``focus-rtl area``).

    Amaranth emits one Verilog module per instance, named by its path (``sec.encoder.packer``),
    so Yosys's per-module statistics are per instance. Returns ``status``, ``error``,
    ``seconds``, ``liberty`` and, when ``ok``, ``modules``: ``{path: {"area_um2": area with its
    submodules, "cells_by_type": its own cells}}`` (memories excluded, as in ``osu018-logic``)."""
    path = toolchain.liberty_path()
    if path is None or not path.is_file():
        return {"status": "no_liberty", "error": _no_liberty_message(path),
                "seconds": {"yosys": 0.0}}
    shutil.copyfile(path, workdir / "cells.lib")
    name = f"{block}.v"
    (workdir / name).write_text(emit_block(block, params))
    script = [
        f"read_verilog {name}",
        *keep_memories_synth(block, flatten=False),
        "dfflibmap -liberty cells.lib",
        f"abc -liberty cells.lib -script {_ABC_SCRIPT}",
        "opt_clean",
        "delete t:$scopeinfo",
        "tee -q -o stat.json stat -json -liberty cells.lib",
    ]
    status, error, seconds = yosys(workdir, script, timeout)
    result = {"status": status, "error": error, "seconds": {"yosys": seconds},
              "liberty": liberty_info()}
    if status == "ok":
        stat = json.loads((workdir / "stat.json").read_text())["modules"]
        # A module's cells include its submodules' instances, by module name.
        submodules = {"$mem_v2", *stat, *(name.lstrip("\\") for name in stat)}
        result["modules"] = {
            module.lstrip("\\"): {
                "area_um2": round(float(info.get("area", 0.0)), 1),   # none: RAMs only
                "cells_by_type": {c: n for c, n in info["num_cells_by_type"].items()
                                  if c not in submodules},
            } for module, info in stat.items()}
    return result
