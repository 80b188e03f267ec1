"""Power on the OSU 0.18 um netlist with OpenSTA, from switching activity simulated on a job
(``focus-rtl power``; the comparator's benchmark is :mod:`sim.bench.power`).

What OpenSTA (Debian's ``opensta``, 2.0.17 of 2019) does and does not do, measured on small
netlists in ``tests/test_power.py``:

- ``report_power`` sums, per cell, internal power (the liberty's ``internal_power`` tables,
  per input and output transition), switching power (``C V**2 / 2`` per transition of the net a
  cell drives) and leakage (``cell_leakage_power``).
- Activity is set only on **input ports** (``set_power_activity -input_ports``, transitions per
  clock period, and duty) and propagated by OpenSTA through the logic, probabilistically
  (independent signals, no glitches) and through each flip-flop from its D to its Q. An activity
  set with ``-pins`` on a register output is overwritten by that propagation: a register's
  simulated toggle rate cannot be given to it directly. There is no ``read_vcd``/``read_saif``.
- Every pin on a clock network toggles at the full clock rate (2 transitions per period),
  including a clock that passes an integrated clock gate: its AND gate propagates the clock and
  the enable is ignored. OpenSTA cannot model the saving of clock gating.

So the flow (:func:`power_flow`) does this:

1. The block is mapped to the OSU cells as in ``osu018`` (``synth -flatten``, ``dfflibmap``,
   ``abc -liberty``), flip-flops and latches named after the register bit they hold
   (``<net>[i]_reg``, :func:`rtl.flow.sta.cut_memories`).
2. **Registers from the simulation.** Each flip-flop (and latch) whose register bit the
   simulation recorded gets its D pin driven by a new input port instead of its logic (the
   logic keeps its other loads), with that bit's simulated activity and duty: OpenSTA's D-to-Q
   propagation then gives the Q pin, its net and everything downstream the register's measured
   toggle rate. The D pin's own internal power is then that of the register's output rate, not
   of its input's (the OSU flip-flop's D-pin energy is a few percent of its clock-pin energy).
   The block's own input ports get their simulated activities too. Registers the simulation did
   not record keep OpenSTA's propagated activity (listed in ``unmatched_registers``).
3. **Clock gating**, the closest honest method: OpenSTA charges every gated clock at the full
   rate, so the gated clock's power is measured separately (a second run with every data
   activity zero: the clock pins of the flip-flops behind each clock gate plus the gate's AND
   cell, at the full clock rate) and the part ``1 - e`` of it is removed, ``e`` being the
   simulated enable rate of that gate (the share of cycles its ``<name>_en`` is high). The
   ``*_en`` signals are named by :func:`rtl.lib.clock_gate.add_gated`.

4. **Memories** (``keep_memories``, the block matcher's): RAMs stay ``$mem_v2`` macros, cut at
   their ports as for timing (:func:`rtl.flow.sta.cut_memories`); their own power is not
   counted, and each read-data bit enters as an input port with the simulated activity of the
   net it drove.
5. **NaN cells.** On wide carry chains fed by near-constant signals OpenSTA 2019's activity
   propagation makes a few cells' power NaN (a density that underflows to a denormal float), and
   then ``report_power`` fails for the whole design. The script sums the instances itself
   (``focus_power``: the same Sequential / Combinational / Total groups) and leaves those cells
   out, listed in ``nan_cells`` (6 of about 32 000 cells in the board matcher).

Results are in watts at the given clock: ``total_w``, ``dynamic_w`` (internal + switching, gating
corrected), ``leakage_w``, ``internal_w``, ``switching_w``, and the uncorrected OpenSTA figures
and the per-gate clock power and enable rates beside them. Wires: none beyond pin loads (no
placement); no clock tree; ideal input drivers.
"""

import json
import re
import shutil
from collections import defaultdict

from . import sta as opensta
from . import toolchain
from .asic import _ABC_SCRIPT, keep_memories_synth, liberty_info
from .emit import emit_verilog
from .tools import run_tool, yosys

__all__ = ["vcd_activity", "power_netlist", "power_script", "parse_power", "power_flow",
           "register_key"]

#: Prefix of the input ports that drive the D pins of the registers given activities.
ACT_PORT = "focus_act_"
#: Prefix of the ideal clock ports of the gated clocks.
GCLK_PORT = "focus_gclk_"

_REG_NAME = re.compile(r"^(?P<net>.*?)(?:\[(?P<bit>\d+)\])?_reg$")


def register_key(cell_name):
    """``(net, bit)`` of a flip-flop named ``<net>[bit]_reg`` (bit 0 for ``<net>_reg``), or
    None."""
    match = _REG_NAME.match(cell_name)
    if match is None:
        return None
    return match.group("net"), int(match.group("bit") or 0)


# ---- activity from a waveform ---------------------------------------------------------------

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15}


def vcd_activity(path, period_s, *, top=None):
    """Per-bit activity of every variable of the VCD file ``path``.

    ``period_s`` is the clock period in seconds (the VCD's ``$timescale`` converts). Returns
    ``{(name, bit): (activity, duty)}``: ``activity`` is the bit's transitions per clock
    period over the whole dump, ``duty`` the share of time it is 1 (x and z count as 0; the
    first value is not a transition). ``name`` is the variable's scope path below the top
    scope joined with ``.`` (``"dot1"`` in the top scope, ``"sub.x"`` below it), the way
    Yosys names the nets of a flattened design; ``top`` names the top scope (default: the
    scope of the first variable, the design's in an Amaranth VCD).
    """
    ids, widths = defaultdict(list), {}
    scope, top_path, unit = [], None, None
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "$timescale" or unit == "next":
                scale = re.search(r"(\d+)\s*(s|ms|us|ns|ps|fs)", line)
                unit = int(scale.group(1)) * _UNITS[scale.group(2)] if scale else "next"
            if parts[0] == "$scope":
                scope.append(parts[2])
            elif parts[0] == "$upscope":
                scope.pop()
            elif parts[0] == "$var":
                if top_path is None:
                    # The top scope: the one named ``top``, else that of the first variable.
                    top_path = (scope[: scope.index(top) + 1] if top in scope else list(scope))
                if scope[: len(top_path)] == top_path:
                    code = parts[3]
                    ids[code].append(".".join([*scope[len(top_path):], parts[4]]))
                    widths[code] = int(parts[2])
            elif parts[0] == "$enddefinitions":
                break
        if not isinstance(unit, float):
            raise ValueError(f"{path}: no $timescale")
        values, since = {}, {}
        high, toggles = defaultdict(float), defaultdict(int)
        pending, time, start = {}, 0, None

        def settle(now):
            # Only the last value of each timestep counts (a testbench may write twice).
            for code, bits in pending.items():
                old = values.get(code)
                if old == bits:
                    continue
                if old is not None:
                    for b in range(widths[code]):
                        if (old ^ bits) >> b & 1:
                            toggles[code, b] += 1
                        if old >> b & 1:
                            high[code, b] += now - since[code]
                values[code], since[code] = bits, now
            pending.clear()

        for line in f:
            head = line[:1]
            if head == "#":
                now = int(line[1:])
                settle(time)
                time = now
                start = time if start is None else start
            elif head in ("b", "B"):
                value, code = line[1:].split()
                if code in widths:
                    pending[code] = int(re.sub("[xXzZ]", "0", value), 2)
            elif head and head in "01xXzZ":
                code = line[1:].strip()
                if code in widths:
                    pending[code] = 1 if head == "1" else 0
        settle(time)
    start = start or 0
    span = max(time - start, 1)
    cycles = span * unit / period_s
    out = {}
    for code, names in ids.items():
        for b in range(widths[code]):
            held = high.get((code, b), 0.0)
            if code in values and values[code] >> b & 1:
                held += time - since[code]
            for name in names:
                out[name, b] = (toggles.get((code, b), 0) / cycles, min(held / span, 1.0))
    return out


# ---- the netlist --------------------------------------------------------------------------------

def _gated_domains(module):
    """``{clock bit: domain name}`` of the flip-flop clocks that are not the ``clk`` port: the
    domain is the ``<name>`` of a net ``<name>_clk`` on that bit."""
    clk_bits = set(module["ports"].get("clk", {}).get("bits", []))
    names = {}
    for net, info in module["netnames"].items():
        match = re.search(r"(?:^|\.)(\w+)_clk$", net)
        if match and len(info["bits"]) == 1:
            names.setdefault(info["bits"][0], net[: -len("_clk")])
    domains = {}
    for cell in module["cells"].values():
        if cell["type"].startswith("DFF"):
            bit = cell["connections"]["CLK"][0]
            if bit not in clk_bits:
                domains[bit] = names.get(bit, f"clock{bit}")
    return domains


def power_netlist(netlist, top, registers):
    """Prepare the Yosys JSON ``netlist`` (changed in place) of module ``top`` for
    :func:`power_script`: registers named (:func:`rtl.flow.sta.cut_memories`), the D pin of each
    flip-flop or latch whose ``(net, bit)`` is in ``registers`` driven by a new input port, and
    the gated clocks found.

    Returns ``{"act_ports": {port: (net, bit)}, "unmatched_registers": [cell names],
    "gates": {domain: {"flops": [cell names], "driver": cell name or None}}, "inputs": [input
    ports but clk], "outputs": [...], "port_keys": {(memory read-data port, bit): (net, bit)},
    "memories": [...], "memory_ports": {"read_bits", "read_bits_simulated"}}``.
    """
    cut = opensta.cut_memories(netlist, top)
    module = netlist["modules"][top]
    ports, cells = module["ports"], module["cells"]
    next_bit = opensta.free_bit(module)
    # Every (net, bit) name of each bit: a flip-flop is named after one of the nets on its
    # output, and the simulation may know it by another (a register and a wider net that
    # contains it both drive the same bits).
    aliases = defaultdict(list)
    for net, net_info in module["netnames"].items():
        for i, bit in enumerate(net_info["bits"]):
            if isinstance(bit, int):
                aliases[bit].append((net.lstrip("\\"), i))
    # A memory's read data, now an input port: the activity of a simulated net on its bits.
    port_keys = {}
    for port in cut["memory_outputs"]:
        for b, bit in enumerate(ports[port]["bits"]):
            key = next((k for k in aliases.get(bit, []) if k in registers), None)
            if key is not None:
                port_keys[port, b] = key
    act_ports, unmatched = {}, []
    for name, cell in cells.items():
        if not cell["type"].startswith(("DFF", "LATCH")):
            continue
        key = register_key(name)
        if key not in registers:
            key = next((k for k in aliases[cell["connections"]["Q"][0]] if k in registers), key)
        gate = re.match(r"^(?P<domain>.*)_icg\..*_reg$", name)
        if cell["type"].startswith("LATCH") and gate and (key is None or key not in registers):
            # The clock gate's enable latch holds the gate's enable.
            key = (gate.group("domain") + "_en", 0)
        if key is None or key not in registers:
            unmatched.append(name)
            continue
        port = f"{ACT_PORT}{len(act_ports)}"
        ports[port] = {"direction": "input", "bits": [next_bit]}
        cell["connections"]["D"] = [next_bit]
        module["netnames"][port] = {"hide_name": 0, "bits": [next_bit], "attributes": {}}
        next_bit += 1
        act_ports[port] = key
    gates = {}
    for index, (bit, domain) in enumerate(sorted(_gated_domains(module).items())):
        flops = sorted(n for n, c in cells.items()
                       if c["type"].startswith("DFF") and c["connections"]["CLK"] == [bit])
        driver = None
        for n, c in list(cells.items()):
            if not c["type"].startswith(("DFF", "LATCH")) and any(
                    c["connections"].get(pin) == [bit] for pin in ("Y", "Q", "Z")):
                driver = n
        if driver is not None and driver.startswith("$"):
            new = f"{domain}_gclk_and"
            cells[new] = cells.pop(driver)
            driver = new
        # The gated clock reaches its flip-flops from an ideal port, as clk does (no clock
        # tree): the gate's AND cell alone would drive them all with a slow edge, which the
        # flip-flops' internal-power tables turn into several times their clock energy.
        port = f"{GCLK_PORT}{index}"
        ports[port] = {"direction": "input", "bits": [next_bit]}
        module["netnames"][port] = {"hide_name": 0, "bits": [next_bit], "attributes": {}}
        for n in flops:
            cells[n]["connections"]["CLK"] = [next_bit]
        next_bit += 1
        gates[domain] = {"flops": flops, "driver": driver, "port": port}
    inputs = [p for p, v in ports.items() if v["direction"] == "input" and p != "clk"
              and not p.startswith(GCLK_PORT)]
    outputs = [p for p, v in ports.items() if v["direction"] == "output"]
    return {"act_ports": act_ports, "unmatched_registers": sorted(unmatched), "gates": gates,
            "inputs": inputs, "outputs": outputs, "has_clock": "clk" in ports,
            "port_keys": port_keys, "memories": cut["memories"],
            "memory_ports": {"read_bits": sum(len(ports[p]["bits"])
                                              for p in cut["memory_outputs"]),
                             "read_bits_simulated": len(port_keys)}}


# ---- the script ---------------------------------------------------------------------------------

def _cells(names):
    return "[get_cells {" + " ".join("{" + n + "}" for n in names) + "}]"


def _bit_ports(info, netlist, top):
    """Every input bit port of the netlist but clk and the activity ports: ``[(port name in
    OpenSTA, port, bit)]``."""
    ports = netlist["modules"][top]["ports"]
    out = []
    for port in info["inputs"]:
        if port.startswith(ACT_PORT):
            continue
        width = len(ports[port]["bits"])
        for b in range(width):
            out.append((port if width == 1 else f"{port}[{b}]", port, b))
    return out


#: ``focus_power``: ``report_power``'s group table (Sequential, Combinational, Macro, Pad and
#: Total rows) summed over the instances, leaving out those whose power OpenSTA 2019 computes as
#: NaN, listed on a ``FOCUS-NAN`` line. Its activity propagation can produce NaN on a few
#: near-constant nets deep in wide carry chains (a density that underflows to a denormal float),
#: and one NaN makes ``report_power`` fail for the whole design.
_SUM_POWER_PROC = r"""proc focus_power {} {
  array set keys {}
  set corner [sta::parse_corner keys]
  set groups {seq comb}
  foreach g $groups { set sum($g) {0.0 0.0 0.0 0.0} }
  set bad {}
  foreach inst [get_cells *] {
    set p [sta::instance_power $inst $corner]
    if {[catch {foreach v $p { expr {$v + 0.0} }}]} {
      lappend bad [get_full_name $inst]
      continue
    }
    set g [expr {[regexp {^(DFF|LATCH)} [get_property $inst ref_name]] ? "seq" : "comb"}]
    set new {}
    foreach a $sum($g) v $p { lappend new [expr {$a + $v}] }
    set sum($g) $new
  }
  set total {}
  foreach a $sum(seq) b $sum(comb) { lappend total [expr {$a + $b}] }
  foreach {name g} {Sequential seq Combinational comb} {
    puts [format "%-14s %.9e %.9e %.9e %.9e" $name {*}$sum($g)]
  }
  puts [format "%-14s %.9e %.9e %.9e %.9e" Macro 0 0 0 0]
  puts [format "%-14s %.9e %.9e %.9e %.9e" Pad 0 0 0 0]
  puts [format "%-14s %.9e %.9e %.9e %.9e" Total {*}$total]
  puts "FOCUS-NAN [llength $bad] $bad"
}""".splitlines()


def power_script(top, period_ns, info, netlist, activity, *, liberty="cells.lib",
                 verilog="netlist_power.v", default_activity=0.1):
    """The OpenSTA script (a list of lines): the full run, then the clock-only run.

    ``activity`` is :func:`vcd_activity`'s dict (keys ``(name, bit)``); input ports it lacks get
    ``default_activity`` (duty 0.5). Each report is preceded by ``FOCUS-REPORT <name>``."""
    def act(a, d):
        return f"-activity {a:.6g} -duty {min(max(d, 0.0), 1.0):.6g}"

    lines = [f"read_liberty {liberty}", f"read_verilog {verilog}", f"link_design {top}",
             *_SUM_POWER_PROC,
             f"create_clock -name clk -period {period_ns:g} [get_ports clk]"]
    lines += [f"create_clock -name {g['port']} -period {period_ns:g} [get_ports {g['port']}]"
              for g in info["gates"].values()]
    if info["inputs"]:
        lines.append("set_input_delay 0 -clock clk [get_ports {"
                     + " ".join("{" + p + "}" for p in info["inputs"]) + "}]")
    lines.append(f"set_power_activity -input -activity {default_activity:g} -duty 0.5")
    settings = []
    for name, port, bit in _bit_ports(info, netlist, top):
        key = info.get("port_keys", {}).get((port, bit), (port, bit))
        a, d = activity.get(key, (default_activity, 0.5))
        settings.append((name, a, d))
    for port, key in info["act_ports"].items():
        a, d = activity[key]
        settings.append((port, a, d))
    for name, a, d in settings:
        lines.append(f"set_power_activity -input_ports [get_ports {{{name}}}] {act(a, d)}")
    gate_cells = sorted({c for g in info["gates"].values()
                         for c in [*g["flops"], *([g["driver"]] if g["driver"] else [])]})
    lines += ['puts "FOCUS-REPORT full"', "focus_power"]
    # The clock alone: every data input at activity 0.
    lines.append("set_power_activity -input -activity 0 -duty 0")
    for name, _, d in settings:
        lines.append(f"set_power_activity -input_ports [get_ports {{{name}}}] "
                     f"-activity 0 -duty {min(max(d, 0.0), 1.0):.6g}")
    lines += ['puts "FOCUS-REPORT clock_only"', "focus_power"]
    if gate_cells:
        lines += ['puts "FOCUS-REPORT gate_cells"',
                  f"report_power -digits 9 -instances {_cells(gate_cells)}"]
    lines.append('puts "FOCUS-REPORT end"')
    return lines


_ROW = re.compile(r"^(Sequential|Combinational|Macro|Pad|Total)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)")
_INST = re.compile(r"^\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")


def parse_power(text):
    """``{"full": groups, "clock_only": groups, "instances": {cell: (internal, switching,
    leakage, total)}}`` of the script's output; a group is ``{group: {"internal_w",
    "switching_w", "leakage_w", "total_w"}}``."""
    sections = opensta.split_reports(text)
    out = {"complete": "end" in sections, "instances": {}}
    out["nan_cells"] = {}
    for name in ("full", "clock_only"):
        groups = {}
        for line in sections.get(name, "").splitlines():
            if line.startswith("FOCUS-NAN "):
                out["nan_cells"][name] = line.split()[2:]
            match = _ROW.match(line)
            if match:
                values = [float(v) for v in match.groups()[1:]]
                groups[match.group(1).lower()] = dict(zip(
                    ("internal_w", "switching_w", "leakage_w", "total_w"), values, strict=True))
        out[name] = groups
    for line in sections.get("gate_cells", "").splitlines():
        match = _INST.match(line)
        if match:
            try:
                values = tuple(float(v) for v in match.groups()[:4])
            except ValueError:
                continue
            out["instances"][match.group(5)] = values
    return out


# ---- the flow -----------------------------------------------------------------------------------

def power_flow(component, params, workdir, activity, enables, *, period_ns, name="top",
               timeout=3600, default_activity=0.1, netlist_dir=None, keep_memories=False):
    """Map ``component`` to the OSU cells and report its power with OpenSTA in ``workdir``.

    ``activity``: :func:`vcd_activity` of a simulation of the same design (with
    ``gating="enable"``: the Amaranth simulator cannot run the ICG cell; the registers are the
    same). ``enables``: ``{gate domain: enable rate}`` (the simulated share of cycles each
    ``<domain>_en`` is high). The mapping runs in ``netlist_dir`` (default ``workdir``) and is
    reused when its Verilog is unchanged (several activities, one netlist). ``keep_memories``
    leaves RAMs as macros cut at their ports (:func:`rtl.flow.sta.cut_memories`): their own
    power is not counted; their read data enter as input ports with the simulated activity of
    the net they drove (``memory_ports`` in the result). Returns the result
    dict (``status`` ``"ok"``, or ``"no_liberty"``, ``"no_sta"``, a Yosys failure or
    ``"sta_failed"``).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    netlist_dir = workdir if netlist_dir is None else netlist_dir
    netlist_dir.mkdir(parents=True, exist_ok=True)
    path = toolchain.liberty_path()
    if path is None or not path.is_file():
        return {"status": "no_liberty", "error": "OSU 0.18 um liberty not found: run `make "
                "liberty`"}
    command = opensta.sta_command()
    if command is None:
        return {"status": "no_sta", "error": opensta.no_sta_message()}
    shutil.copyfile(path, workdir / "cells.lib")
    result = {"liberty": liberty_info(), "clock_period_ns": period_ns, "seconds": {}}
    text = emit_verilog(component, name, params)
    source = netlist_dir / f"{name}.v"
    if not (source.exists() and source.read_text() == text
            and (netlist_dir / "netlist.json").exists() and (netlist_dir / "stat.json").exists()):
        shutil.copyfile(path, netlist_dir / "cells.lib")
        (netlist_dir / "netlist.json").unlink(missing_ok=True)
        source.write_text(text)
        synth = (keep_memories_synth(name) if keep_memories
                 else [f"synth -top {name} -flatten -noabc"])
        script = [f"read_verilog {name}.v", *synth,
                  "dfflibmap -liberty cells.lib",
                  f"abc -liberty cells.lib -script {_ABC_SCRIPT}", "opt_clean",
                  "delete t:$scopeinfo", "tee -q -o stat.json stat -json -liberty cells.lib",
                  "write_json netlist.json"]
        status, error, seconds = yosys(netlist_dir, script, timeout)
        result["seconds"]["yosys"] = seconds
        if status != "ok":
            source.unlink(missing_ok=True)
            result.update(status=status, error=error)
            return result
    stat = json.loads((netlist_dir / "stat.json").read_text())["design"]
    result["area_um2"] = round(float(stat["area"]), 1)
    netlist = json.loads((netlist_dir / "netlist.json").read_text())
    info = power_netlist(netlist, name, set(activity))
    (workdir / "netlist_power.json").write_text(json.dumps(netlist))
    status, error, seconds = yosys(workdir, ["read_json netlist_power.json",
                                             "write_verilog -noattr -noexpr netlist_power.v"],
                                   timeout, name="netlist_power")
    result["seconds"]["yosys_netlist"] = seconds
    if status != "ok":
        result.update(status=status, error=error)
        return result
    lines = power_script(name, period_ns, info, netlist, activity,
                         default_activity=default_activity)
    (workdir / "power.tcl").write_text("\n".join(lines) + "\n")
    rc, seconds, text = run_tool(command + ["-no_splash", "-exit", "power.tcl"], workdir,
                                 timeout)
    (workdir / "power.log").write_text(text)
    result["seconds"]["sta"] = seconds
    figures = parse_power(text)
    errors = [line for line in text.splitlines() if line.startswith("Error")]
    if rc != 0 or errors or not figures["complete"] or "total" not in figures["full"]:
        result.update(status="sta_failed",
                      error=(errors or text.strip().splitlines() or ["(no output)"])[0])
        return result
    result.update(combine(figures, info, enables))
    result.update(status="ok", error=None, registers=len(info["act_ports"]),
                  unmatched_registers=info["unmatched_registers"],
                  memories=[m["name"] for m in info["memories"]],
                  memory_ports=info["memory_ports"])
    return result


def combine(figures, info, enables):
    """The result figures from :func:`parse_power`'s and the gates' enable rates (see the module
    docstring, step 3)."""
    full, clock = figures["full"]["total"], figures["clock_only"]["total"]
    gates = {}
    saved_internal = saved_switching = 0.0
    for domain, gate in info["gates"].items():
        cells = [*gate["flops"], *([gate["driver"]] if gate["driver"] else [])]
        internal = sum(figures["instances"].get(c, (0.0, 0.0))[0] for c in cells)
        switching = sum(figures["instances"].get(c, (0.0, 0.0))[1] for c in cells)
        power = internal + switching
        rate = enables.get(domain)
        if rate is None:
            raise ValueError(f"no enable rate for clock gate {domain!r} (the simulation has no "
                             f"{domain}_en signal)")
        gates[domain] = {"flops": len(gate["flops"]), "enable_rate": round(rate, 6),
                         "clock_power_full_w": power, "clock_power_w": power * rate}
        saved_internal += internal * (1.0 - rate)
        saved_switching += switching * (1.0 - rate)
    saved = saved_internal + saved_switching
    dynamic_sta = full["internal_w"] + full["switching_w"]
    return {
        "total_w": full["total_w"] - saved,
        "dynamic_w": dynamic_sta - saved,
        "leakage_w": full["leakage_w"],
        "internal_w": full["internal_w"] - saved_internal,
        "switching_w": full["switching_w"] - saved_switching,
        "gating_correction_w": saved,
        "sta_total_w": full["total_w"],
        "sta_dynamic_w": dynamic_sta,
        "clock_only_dynamic_w": clock["internal_w"] + clock["switching_w"],
        "groups": figures["full"],
        "nan_cells": figures.get("nan_cells", {}).get("full", []),
        "gates": gates,
    }
