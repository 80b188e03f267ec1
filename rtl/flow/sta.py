"""Static timing analysis of the ``osu018-sta`` target: OpenSTA on the Yosys netlist mapped to the
OSU 0.18 um standard cells.

The tool is Debian's ``opensta`` package (binary ``sta``, version 0~20191111 in Debian 12; as
root: ``apt-get install opensta``; ``.ci/run`` installs it). :func:`sta_command` finds it:
``$FOCUS_STA`` when set, else ``sta`` on ``PATH``. Without it the flow ends ``"no_sta"`` with
that command in the error, as a missing liberty ends ``"no_liberty"``.

The netlist is ``osu018-logic``'s (memories left as macros) but mapped for timing: after ABC's
mapping, ``buffer -p; upsize; dnsize`` buffer the high-fanout nets and size the gates on the
liberty's delay tables (what a placer's timing repair would do first; without it one net driving
hundreds of X1 inputs sets a critical path of tens of ns). ABC does not buffer the nets its
network starts from, and a flip-flop's output is one of them, so :func:`buffer_register_fanout`
then drives every flip-flop output with more than :data:`MAX_REGISTER_FANOUT` loads through a
tree of :data:`FANOUT_BUFFER` cells (without it, a stream slice's select register with 612 loads
had an 8.3 ns clock-to-Q). Its ``area_um2`` includes all those buffers, so it is a little above
``osu018-logic``'s. Input ports are driven ideally (below), so their fanouts are left as they are.

What is timed (see :func:`sta_script`):

- One ideal clock ``clk`` (no clock tree, no skew, no uncertainty) of the target period
  (``--freq osu018-sta=MHZ``, default 100 MHz: :data:`rtl.flow.targets.DEFAULT_STA_FREQ_MHZ`).
- The block's ports are timing boundaries: every input but ``clk`` has an input delay of 0 and
  every output an output delay of 0 against ``clk``, as if each were driven by, or captured in, an
  ideal flip-flop outside the block (the FPGA flows' timing harness does the same with real
  flip-flops). Input-to-output paths through logic alone are timed as one cycle.
- Memories are left as macros (as in ``osu018-logic``) and cut out of the netlist: each
  ``$mem_v2`` cell is removed, its read data become input ports ``<memory>.RD_DATA`` (an ideal
  synchronous SRAM: the data are there at the clock edge, input delay ``mem_read_ns``, default 0)
  and its address, write data and enables become output ports ``<memory>.RD_ADDR``, ``.RD_EN``,
  ``.WR_ADDR``, ``.WR_DATA``, ``.WR_EN`` (captured at the clock edge, output delay
  ``mem_setup_ns``, default 0). An asynchronous read port's address-to-data path through the
  array is cut too (``async_read_ports`` counts them; none in the unit's memories at the time of
  writing). Add an SRAM's access and setup times with those two delays.
- Clock gates (``gating="icg"``): their latches and AND gates are timed as OpenSTA does by
  default (clock-gating setup checks, latch time borrowing, the latch paths in their own path
  groups); the worst path over all groups is the critical one. A path that ends at a latch is
  required at the half period, so there ``fmax_mhz`` is an estimate.
- Wires: none beyond the liberty's (no placement); loads are the cells' input pins. Input ports
  are driven ideally (no ``set_driving_cell``) and outputs drive no load.

Every constraint then scales with the period alone, so the worst path's minimum period is
``period - slack`` whatever the period, and ``fmax_mhz = 1000 / (period - worst slack)``. The
critical path (start point, end point, arrival, setup, slack, and the path's cells and nets) is
parsed from ``report_checks -path_delay max``; the worst path of each class (register to
register, input to register, register to output, input to output; memory ports count as inputs
and outputs) is reported beside it. Flip-flops are named after the register they hold
(``<net>_reg``) so the report reads in RTL names.
"""

import json
import os
import re
import shlex
import shutil
import subprocess

#: Environment variable naming the OpenSTA command (default: ``sta`` on PATH).
STA_ENV = "FOCUS_STA"
#: How to install OpenSTA on Debian or Ubuntu.
STA_INSTALL_COMMAND = "apt-get install opensta"

# The memory pins that become output ports (inputs of the memory), in this order.
_MEMORY_INPUTS = ("RD_ADDR", "RD_EN", "WR_ADDR", "WR_DATA", "WR_EN", "RD_ARST", "RD_SRST")

#: The most loads the STA netlist leaves on a register's output (:func:`buffer_register_fanout`).
MAX_REGISTER_FANOUT = 16
#: The buffer cell of those trees.
FANOUT_BUFFER = "BUFX4"

#: The path classes of :func:`sta_script`, each as (name, report_checks -from/-to options).
PATH_CLASSES = (
    ("reg_to_reg", "-from [all_registers -clock_pins] -to [all_registers -data_pins]"),
    ("in_to_reg", "-from $focus_inputs -to [all_registers -data_pins]"),
    ("reg_to_out", "-from [all_registers -clock_pins] -to [all_outputs]"),
    ("in_to_out", "-from $focus_inputs -to [all_outputs]"),
)


def sta_command(environ=os.environ):
    """The OpenSTA command as a list, or None when it cannot be found."""
    command = shlex.split(environ.get(STA_ENV, "")) or ["sta"]
    if shutil.which(command[0]) is None:
        return None
    return command


def no_sta_message(environ=os.environ):
    where = (f"${STA_ENV} is {environ[STA_ENV]!r}, which cannot be run" if environ.get(STA_ENV)
             else "no `sta` on PATH")
    return (f"OpenSTA not found ({where}): install Debian's opensta as root "
            f"(`{STA_INSTALL_COMMAND}`) or set {STA_ENV}=/path/to/sta")


def sta_version(command=None):
    """``sta -version``'s output (e.g. ``2.0.17``), or None."""
    command = command or sta_command()
    if command is None:
        return None
    try:
        out = subprocess.run(command + ["-version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout.strip() or out.stderr.strip()).splitlines()[0] if (
        out.stdout.strip() or out.stderr.strip()) else None


# ---- the netlist: memories cut out, flip-flops named ---------------------------------------------

def _safe(name):
    """A memory id as a port name that needs no quoting in Tcl braces or a glob pattern."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", name.lstrip("\\")) or "mem"


def cut_memories(netlist, top):
    """Turn a Yosys JSON netlist (dict, changed in place) into one OpenSTA can time.

    Each ``$mem_v2`` cell of module ``top`` is removed and its ports become module ports (see
    the module docstring); each flip-flop cell (``DFF*``) is renamed after the first public net
    its ``Q`` drives (``<net>_reg``, ``<net>[i]_reg`` for a bit of a bus), and so is each latch
(``LATCH``, the clock gates of ``gating="icg"``).

    Returns ``{"memories": [{"name", "port", "read_ports", "async_read_ports", "inputs",
    "outputs"}], "memory_inputs": [port names], "memory_outputs": [port names]}``: ``inputs``
    are the bits the logic drives into the memory (output ports here), ``outputs`` the bits it
    reads.
    """
    module = netlist["modules"][top]
    ports = module["ports"]
    memories, mem_in, mem_out = [], [], []
    used = set(ports)
    for cell_name, cell in list(module["cells"].items()):
        if cell["type"] != "$mem_v2":
            continue
        par, con = cell["parameters"], cell["connections"]
        base = _safe(str(par.get("MEMID", cell_name)))
        stem, n = base, 1
        while any(p.startswith(stem + ".") for p in used):
            n += 1
            stem = f"{base}_{n}"
        del module["cells"][cell_name]
        read_ports = int(par["RD_PORTS"], 2) if isinstance(par["RD_PORTS"], str) else int(
            par["RD_PORTS"])
        clocked = str(par.get("RD_CLK_ENABLE", "")).count("1")
        entry = {"name": base, "port": stem, "read_ports": read_ports,
                 "async_read_ports": max(0, read_ports - clocked), "inputs": 0, "outputs": 0}
        data = [b for b in con.get("RD_DATA", []) if isinstance(b, int)]
        if data:
            name = f"{stem}.RD_DATA"
            ports[name] = {"direction": "input", "bits": con["RD_DATA"]}
            mem_out.append(name)
            entry["outputs"] = len(data)
        for pin in _MEMORY_INPUTS:
            bits = list(dict.fromkeys(b for b in con.get(pin, []) if isinstance(b, int)))
            if bits:
                name = f"{stem}.{pin}"
                ports[name] = {"direction": "output", "bits": bits}
                mem_in.append(name)
                entry["inputs"] += len(bits)
        used.update(p for p in ports if p.startswith(stem + "."))
        memories.append(entry)

    names = {}
    for net, info in sorted(module["netnames"].items(), key=lambda kv: (
            kv[0].startswith("$"), kv[1].get("hide_name", 0), len(kv[0]), kv[0])):
        if info.get("hide_name"):
            continue
        bits = info["bits"]
        for i, bit in enumerate(bits):
            if isinstance(bit, int):
                names.setdefault(bit, net if len(bits) == 1 else f"{net}[{i}]")
    cells, taken = {}, set()
    for cell_name, cell in module["cells"].items():
        if cell["type"].startswith(("DFF", "LATCH")) and cell["connections"].get("Q"):
            q = cell["connections"]["Q"][0]
            if q in names and f"{names[q]}_reg" not in taken:
                cell_name = f"{names[q]}_reg"
        taken.add(cell_name)
        cells[cell_name] = cell
    module["cells"] = cells
    return {"memories": memories, "memory_inputs": mem_in, "memory_outputs": mem_out}


def free_bit(module):
    """The first net number above every net of ``module`` (a Yosys JSON module): new nets are
    numbered from it."""
    bits = [b for c in module["cells"].values() for bits in c["connections"].values()
            for b in bits]
    bits += [b for p in module["ports"].values() for b in p["bits"]]
    return 1 + max((b for b in bits if isinstance(b, int)), default=1)


def liberty_cells(text):
    """``{cell: {"area": um^2, "pins": {pin: direction}}}`` of a liberty file's text (the flat
    ``cell``/``pin``/``direction``/``area`` statements the OSU libraries use)."""
    cells, cell, pin = {}, None, None
    pattern = (r'\bcell\s*\(\s*"?([\w.]+)"?\s*\)|\bpin\s*\(\s*"?(\w+)"?\s*\)'
               r'|\bdirection\s*:\s*"?(\w+)"?|\barea\s*:\s*([0-9.eE+-]+)')
    for match in re.finditer(pattern, text):
        name, pin_name, direction, area = match.groups()
        if name is not None:
            cell, pin = cells.setdefault(name, {"area": 0.0, "pins": {}}), None
        elif cell is None:
            continue
        elif pin_name is not None:
            pin = pin_name
        elif direction is not None and pin is not None:
            cell["pins"].setdefault(pin, direction)
        elif area is not None and pin is None:
            cell["area"] = float(area)
    return cells


def buffer_register_fanout(module, cells, max_fanout=MAX_REGISTER_FANOUT, cell=FANOUT_BUFFER):
    """Drive every flip-flop or latch output of ``module`` (a Yosys JSON module, changed in place)
    that has more than ``max_fanout`` loads through a tree of ``cell`` buffers, no net then
    driving more than ``max_fanout`` loads, as a placer's high-fanout repair would. ABC buffers
    the nets inside the logic it maps, but a register's output is an input of that logic.

    ``cells`` is :func:`liberty_cells`'s (pin directions and areas). Loads are the cells' input
    pins; an output port on the net stays on the register's own net and counts as a load. The
    buffers are ``<net>_fanbuf<k>``, driving ``<net>_fanout<k>``, after the register's net.
    Returns ``{"nets", "cells", "area_um2"}``: the nets buffered, the buffers added and their
    area."""
    pins = {name: info["pins"] for name, info in cells.items()}
    buf_in = next(p for p, d in pins[cell].items() if d == "input")
    buf_out = next(p for p, d in pins[cell].items() if d == "output")
    loads, drivers = {}, {}
    for name, c in module["cells"].items():
        directions = pins.get(c["type"], {})
        for pin, bits in c["connections"].items():
            for index, bit in enumerate(bits):
                if not isinstance(bit, int):
                    continue
                if directions.get(pin) == "output":
                    if c["type"].startswith(("DFF", "LATCH")):
                        drivers[bit] = name
                elif directions.get(pin) == "input":
                    loads.setdefault(bit, []).append((name, pin, index))
    port_loads = {}
    for port in module["ports"].values():
        if port["direction"] == "output":
            for bit in port["bits"]:
                if isinstance(bit, int):
                    port_loads[bit] = port_loads.get(bit, 0) + 1
    next_bit = free_bit(module)
    added = {"nets": 0, "cells": 0, "area_um2": 0.0}
    taken = {*module["cells"], *module["netnames"], *module["ports"]}
    for bit, register in sorted(drivers.items()):
        sinks = loads.get(bit, [])
        if len(sinks) + port_loads.get(bit, 0) <= max_fanout:
            continue
        stem = register.removesuffix("_reg")
        added["nets"] += 1
        count = 0
        # Each level puts up to max_fanout loads behind one buffer, until the register's net
        # itself has at most max_fanout loads (its output ports among them).
        while len(sinks) + port_loads.get(bit, 0) > max_fanout:
            groups = -(-len(sinks) // max_fanout)
            size = -(-len(sinks) // groups)
            inputs = []
            for g in range(groups):
                name, wire = f"{stem}_fanbuf{count}", f"{stem}_fanout{count}"
                count += 1
                if name in taken or wire in taken:
                    raise ValueError(f"buffer_register_fanout: the name {name} or {wire} is "
                                     "taken in the netlist")
                taken.update((name, wire))
                net = next_bit
                next_bit += 1
                module["cells"][name] = {"hide_name": 0, "type": cell, "parameters": {},
                                         "attributes": {},
                                         "connections": {buf_in: [bit], buf_out: [net]}}
                module["netnames"][wire] = {"hide_name": 0, "bits": [net], "attributes": {}}
                for load, pin, index in sinks[g * size:(g + 1) * size]:
                    module["cells"][load]["connections"][pin][index] = net
                inputs.append((name, buf_in, 0))
            sinks = inputs
        added["cells"] += count
    added["area_um2"] = added["cells"] * cells[cell]["area"]
    return added


def cut_netlist_file(src, dst, top, liberty=None):
    """:func:`cut_memories` from JSON file ``src`` to ``dst``; also returns the module's input
    ports other than ``clk`` and its output ports (names). With ``liberty`` (a path), the
    registers' high fanouts are buffered (:func:`buffer_register_fanout`, its figures under
    ``"fanout_buffers"``)."""
    netlist = json.loads(src.read_text())
    info = cut_memories(netlist, top)
    if liberty is not None:
        info["fanout_buffers"] = buffer_register_fanout(
            netlist["modules"][top], liberty_cells(liberty.read_text(errors="replace")))
    ports = netlist["modules"][top]["ports"]
    info["inputs"] = [p for p, v in ports.items() if v["direction"] == "input" and p != "clk"]
    info["outputs"] = [p for p, v in ports.items() if v["direction"] == "output"]
    info["has_clock"] = "clk" in ports
    dst.write_text(json.dumps(netlist))
    return info


# ---- the script and its report ------------------------------------------------------------------

def _port_list(names):
    return "[get_ports {" + " ".join("{" + n + "}" for n in names) + "}]"


def sta_script(top, period_ns, info, *, mem_read_ns=0.0, mem_setup_ns=0.0, liberty="cells.lib",
               netlist="netlist_sta.v"):
    """The OpenSTA Tcl script (a list of lines) for ``top`` at ``period_ns``. ``info`` is
    :func:`cut_netlist_file`'s. Each report is preceded by a ``FOCUS-REPORT <name>`` line."""
    ports_in = [p for p in info["inputs"] if p not in info["memory_outputs"]]
    ports_out = [p for p in info["outputs"] if p not in info["memory_inputs"]]
    lines = [
        f"read_liberty {liberty}",
        f"read_verilog {netlist}",
        f"link_design {top}",
        f"create_clock -name clk -period {period_ns:g} [get_ports clk]",
    ]
    if ports_in:
        lines.append(f"set_input_delay 0 -clock clk {_port_list(ports_in)}")
    if info["memory_outputs"]:
        lines.append(f"set_input_delay {mem_read_ns:g} -clock clk "
                     f"{_port_list(info['memory_outputs'])}")
    if ports_out:
        lines.append(f"set_output_delay 0 -clock clk {_port_list(ports_out)}")
    if info["memory_inputs"]:
        lines.append(f"set_output_delay {mem_setup_ns:g} -clock clk "
                     f"{_port_list(info['memory_inputs'])}")
    inputs = info["inputs"]
    lines.append(f"set focus_inputs {_port_list(inputs)}" if inputs else "set focus_inputs {}")
    lines += ['puts "FOCUS-REPORT critical"',
              "report_checks -path_delay max -digits 3 -fields {nets fanout}"]
    for name, options in PATH_CLASSES:
        needs_inputs = "$focus_inputs" in options
        if needs_inputs and not inputs:
            continue
        lines += [f'puts "FOCUS-REPORT {name}"',
                  f"report_checks -path_delay max -digits 3 {options}"]
    lines += ['puts "FOCUS-REPORT endpoints"',
              "report_checks -path_delay max -digits 3 -group_count 10 -format end",
              'puts "FOCUS-REPORT check_setup"',
              "check_setup -verbose",
              'puts "FOCUS-REPORT end"']
    return lines


_POINT = re.compile(r"^\s*(?:(\d+)\s+)?(-?[\d.]+)\s+(-?[\d.]+)\s+([v^])\s+(\S+)\s+\((\S+)\)\s*$")
_NET = re.compile(r"^\s*(?:(\d+)\s+)?(\S+) \(net\)\s*$")
_VALUE = re.compile(r"^\s*(-?[\d.]+)\s+(-?[\d.]+)?\s*(.*)$")


def split_reports(text):
    """``{name: text}`` of the ``FOCUS-REPORT <name>`` sections of the script's output."""
    sections, name = {}, None
    for line in text.splitlines():
        if line.startswith("FOCUS-REPORT "):
            name = line.split(None, 1)[1].strip()
            sections[name] = []
        elif name is not None:
            sections[name].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def parse_path(text):
    """The worst path of a ``report_checks`` text (the one with the smallest slack, when the
    report has one path per path group, as with clock gates): a dict with ``startpoint``,
    ``startpoint_kind`` (e.g. "rising edge-triggered flip-flop clocked by clk"), ``endpoint``,
    ``endpoint_kind``, ``group`` (the path group), ``arrival_ns``, ``required_ns``, ``setup_ns``
    (library setup, output external delay or clock-gating setup), ``slack_ns``, ``met``,
    ``points`` (``{"pin", "cell", "edge", "delay_ns", "time_ns", "net", "fanout"}`` from the
    start point to the end point) and ``logic_levels`` (combinational cells on the path); None
    when the report has no path."""
    paths = []
    block = None
    for line in text.splitlines():
        if line.startswith("Startpoint: "):
            block = [line]
        elif block is not None:
            block.append(line)
            if re.match(r"^\s*(-?[\d.]+|INF|-INF)\s+slack \(\w+\)", line):
                path = _parse_one("\n".join(block))
                if path is not None:
                    paths.append(path)
                block = None
    if not paths:
        return None
    return min(paths, key=lambda p: float("inf") if p["slack_ns"] is None else p["slack_ns"])


def _parse_one(text):
    """One path of a report (from its ``Startpoint:`` line to its ``slack`` line)."""
    start = re.search(r"^Startpoint: (\S+)(?: \((.*)\))?$", text, re.MULTILINE)
    end = re.search(r"^Endpoint: (\S+)(?: \((.*)\))?$", text, re.MULTILINE)
    group = re.search(r"^Path Group: (.*)$", text, re.MULTILINE)
    slack = re.search(r"^\s*(-?[\d.]+|INF|-INF)\s+slack \((\w+)\)", text, re.MULTILINE)
    if not (start and end and slack):
        return None
    points, arrival, required, setup = [], None, None, 0.0
    in_arrival = True
    for line in text.splitlines():
        value = _VALUE.match(line)
        if "data arrival time" in line and arrival is None:
            arrival = float(value.group(1))
            in_arrival = False
            continue
        if "data required time" in line and required is None:
            required = float(value.group(1))
            continue
        if value and re.search(r"library setup time|output external delay|"
                               r"clock gating setup time", line):
            setup -= float(value.group(1))
            continue
        if not in_arrival:
            continue
        point = _POINT.match(line)
        if point:
            fanout, delay, time, edge, pin, cell = point.groups()
            points.append({"pin": pin, "cell": cell, "edge": "rise" if edge == "^" else "fall",
                           "delay_ns": float(delay), "time_ns": float(time), "net": None,
                           "fanout": None})
            continue
        net = _NET.match(line)
        if net and points:
            points[-1]["net"] = net.group(2)
            points[-1]["fanout"] = int(net.group(1)) if net.group(1) else None
    slack_ns = float(slack.group(1)) if slack.group(1) not in ("INF", "-INF") else None
    # Combinational cells: the output pins of cells that are not the start point's.
    levels = sum(1 for p in points[1:-1] if p["cell"] not in ("in", "out")
                 and not p["pin"].startswith(start.group(1) + "/"))
    return {
        "startpoint": start.group(1), "startpoint_kind": start.group(2),
        "endpoint": end.group(1), "endpoint_kind": end.group(2),
        "group": group.group(1).strip() if group else None,
        "arrival_ns": arrival, "required_ns": required, "setup_ns": round(setup, 3),
        "slack_ns": slack_ns, "met": slack.group(2) == "MET",
        "logic_levels": levels, "points": points,
    }


def _with_period(path, period_ns):
    if path is None or path["slack_ns"] is None:
        return path
    min_period = round(period_ns - path["slack_ns"], 3)
    path["min_period_ns"] = min_period
    path["fmax_mhz"] = round(1000.0 / min_period, 2) if min_period > 0 else None
    return path


def parse_report(text, period_ns):
    """The timing figures of the script's output (see :func:`rtl.flow.asic.osu018_flow`)."""
    sections = split_reports(text)
    critical = _with_period(parse_path(sections.get("critical", "")), period_ns)
    classes = {}
    for name, _ in PATH_CLASSES:
        path = _with_period(parse_path(sections.get(name, "")), period_ns)
        classes[name] = None if path is None else {
            k: path[k] for k in ("startpoint", "endpoint", "arrival_ns", "slack_ns",
                                 "min_period_ns", "fmax_mhz", "logic_levels")}
    endpoints = re.findall(r"^(\S+) \(\S+\)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+) \((\w+)\)",
                           sections.get("endpoints", ""), re.MULTILINE)
    setup_lines = [line.strip() for line in sections.get("check_setup", "").splitlines()
                   if line.strip()]
    return {
        "critical_path": critical,
        "paths": classes,
        "worst_endpoints": [{"endpoint": e, "required_ns": float(r), "arrival_ns": float(a),
                             "slack_ns": float(s)} for e, r, a, s, _ in endpoints],
        "check_setup": setup_lines[:20],
        "complete": "end" in sections,
    }
