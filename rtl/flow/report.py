"""The Markdown and JSON reports and the sweep plot of ``focus-rtl synth``."""

import json
from pathlib import Path

from .fpga import timeout_note
from .pareto import pareto_markdown, run_label
from .targets import DEVICES, LIBERTY_TARGETS, SHARE_METRICS

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


def short(name, width=48):
    """``name`` cut to ``width`` characters with "..." in the middle (nextpnr's cell names run to
    hundreds of characters)."""
    if name is None:
        return "-"
    name = str(name)
    if len(name) <= width:
        return name
    keep = (width - 3) // 2
    return f"{name[:keep]}...{name[-(width - 3 - keep):]}"


def fpga_path_line(label, result):
    """One line about an FPGA flow's critical path (nextpnr), or None."""
    path = result.get("critical_path") if result["status"] == "ok" else None
    if not path:
        return None
    start, end = path["start"], path["end"]
    mhz = 1000.0 / path["delay_ns"] if path["delay_ns"] else None
    return (f"- {label}: {path['delay_ns']:.2f} ns"
            + (f" ({mhz:.1f} MHz)" if mhz else "")
            + f", {path['logic_levels']} logic levels ({path['logic_ns']:.2f} ns logic, "
            f"{path['routing_ns']:.2f} ns routing): from `{short(start['cell'])}`.{start['port']} "
            f"(net `{short(path['start_net'])}`) to `{short(end['cell'])}`.{end['port']} "
            f"(net `{short(path['end_net'])}`)")


def sta_path_line(label, result):
    """One line about an ``osu018-sta`` flow's critical path (OpenSTA), or None."""
    path = result.get("critical_path") if result["status"] == "ok" else None
    if not path:
        return None
    kinds = {"rising edge-triggered flip-flop clocked by clk": "flip-flop",
             "input port clocked by clk": "input", "output port clocked by clk": "output"}
    start = kinds.get(path["startpoint_kind"], path["startpoint_kind"])
    end = kinds.get(path["endpoint_kind"], path["endpoint_kind"])
    line = (f"- {label}: `{short(path['startpoint'])}` ({start}) to `{short(path['endpoint'])}` "
            f"({end}): {path['arrival_ns']:.3f} ns arrival + {path['setup_ns']:.3f} ns setup = "
            f"{path['min_period_ns']:.3f} ns, {path['logic_levels']} logic levels")
    classes = [f"{name.replace('_to_', '->')} {c['fmax_mhz']:.0f}" for name, c in
               result.get("paths", {}).items() if c and c.get("fmax_mhz")]
    if classes:
        line += f"; Fmax MHz by class: {', '.join(classes)}"
    return line


def _sta_row(prefix, result):
    def values(r):
        path = r["critical_path"]
        return [r["cells"], r["ff"], _area(r), len(r["memories"]),
                f"{r['memory_bits'] / 1024:.1f}", f"{r['clock_period_ns']:g}",
                f"{r['wns_ns']:.3f}" + ("" if r["timing_met"] else " (violated)"),
                f"{path['min_period_ns']:.3f}", _cell(r["fmax_mhz"], "{:.1f}")]
    return _row(prefix, result, 9, values)


def _fmax_cell(result):
    """The Fmax, with the range over seeds when there were several: ``72.2 (65.0-75.1, 5
    seeds)``."""
    text = _cell(result.get("fmax_mhz"), "{:.1f}")
    spread = result.get("fmax_seeds")
    if spread and result.get("fmax_mhz") is not None:
        text += f" ({spread['min']:.1f}-{spread['max']:.1f}, {len(spread['seeds'])} seeds)"
    note = timeout_note(result)
    return text + (f" ({note})" if note else "")


def _fpga_row(prefix, result):
    b, h = result.get("block", {}), result.get("harness", {})
    status = result["status"]
    if result.get("dsp_fallback"):
        status += ", LUT multipliers"
    return (f"| {prefix} | {status} | {_cell(b.get('lut'))} | {_cell(b.get('ff'))} | "
            f"{_cell(b.get('carry'))} | {_cell(b.get('bram'))} | {_cell(b.get('dsp'))} | "
            f"{_fmax_cell(result)} | {_device_logic(result)} | "
            f"{_cell(h.get('lut'))} / {_cell(h.get('ff'))} | "
            f"{result['seconds']['total']:.1f} |")


_GENERIC_HEAD = ["| {} | status | cells | FF | transistors | s |",
                 "|---|---|---:|---:|---:|---:|"]
_OSU018_HEAD = ["| {} | status | cells | FF | area um^2 | of which FF um^2 | s |",
                "|---|---|---:|---:|---:|---:|---:|"]
_OSU018_LOGIC_HEAD = ["| {} | status | cells | FF | logic area um^2 | memories | memory kbit | s |",
                      "|---|---|---:|---:|---:|---:|---:|---:|"]
_STA_HEAD = [("| {} | status | cells | FF | logic area um^2 | memories | memory kbit | clock ns | "
              "WNS ns | critical path ns | Fmax MHz | s |"),
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
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
    "osu018-sta": (("osu018-sta (OpenSTA on the osu018-logic netlist{of}: ports and memory "
                   "ports as ideal register boundaries, ideal clock)"), _STA_HEAD, _sta_row),
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
            memories = (_memory_lines(rows) if target in ("osu018-logic", "osu018-sta")
                        else [])
            if memories:
                lines += ["", "Memories (SRAM macro area not included; width x depth):", ""]
                lines += memories
            paths = [sta_path_line(label, r) for label, r in rows] if target == "osu018-sta" \
                else []
            if any(paths):
                lines += ["", "Critical paths (OpenSTA, setup):", ""]
                lines += [p for p in paths if p]
        else:
            device = rows[0][1].get("device_name", target)
            freq = rows[0][1].get("freq_target_mhz")
            lines += [f"### {target} ({device}, nextpnr target {freq:g} MHz)", ""]
            lines += [_FPGA_HEAD[0].format(first_column), _FPGA_HEAD[1]]
            lines += [_fpga_row(label, r) for label, r in rows]
            paths = [fpga_path_line(label, r) for label, r in rows]
            if any(paths):
                lines += ["", "Critical paths (nextpnr, with the harness):", ""]
                lines += [p for p in paths if p]
        notes = [f"- {label}: {r['status']}: `{r['error']}`" for label, r in rows
                 if r["status"] != "ok"]
        if target in LIBERTY_TARGETS and len(notes) == len(rows) > 1 and all(
                r["status"] == rows[0][1]["status"] in ("no_liberty", "no_sta")
                for _, r in rows):
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
    if block == "systolic_array_fp16" and tag_params:
        n = tag_params["dim"]
        return f"systolic_array_fp16 ({n}x{n}, fp16 multiply, fp32 accumulate)"
    return block


def _by_reference(report):
    """``[(reference, shares)]`` of a report or sweep run: every reference of ``relative_by``,
    or the one ``relative_to`` of a report written before there could be several."""
    if report.get("relative_by"):
        return list(report["relative_by"].items())
    return [(report["relative_to"], report["relative"])] if report.get("relative_to") else []


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
    for name, shares in _by_reference(report):
        lines += _share_intro(_reference_name(name, report["params"]))
        lines += _share_tables(list(shares.items()), "block")
    return "\n".join(lines + _footer(report))


def sweep_markdown(sweep):
    """The sweep as markdown: per target, one row per (point, block); then the Pareto front
    when the sweep has one."""
    field = sweep["field"]
    title = "grid" if len(sweep.get("fields", [field])) > 1 else "sweep"
    lines = [f"# Synthesis {title} over `{field}`: {sweep.get('preset', 'custom')}", "",
             f"Base parameters: `{sweep['tag']}`", ""]
    if title == "grid":
        lines += ["Grid: " + " x ".join(f"`{f}` = {', '.join(map(str, v))}"
                                        for f, v in sweep["axes"].items()), ""]
    rows = {t: [(f"{run_label(sweep, run)} {block}", per_target[t])
                for run in sweep["runs"] for block, per_target in run["results"].items()]
            for t in sweep["targets"]}
    lines += _tables(rows, f"{field}, block")
    references = sweep.get("relative_to_all") or (
        [sweep["relative_to"]] if sweep.get("relative_to") else [])
    for reference in references:
        lines += _share_intro(reference)
        lines += _share_tables([(f"{run_label(sweep, run)} {block}", per)
                                for run in sweep["runs"]
                                for block, per in (run.get("relative_by") or {
                                    references[0]: run["relative"]})[reference].items()],
                               f"{field}, block")
    if sweep.get("pareto"):
        lines += pareto_markdown(sweep["pareto"])
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
