"""The QoR table (``make qor``, ``focus-rtl synth --qor``): LUT, FF, BRAM, DSP and Fmax on both
FPGAs, the standard-cell area and the OpenSTA Fmax of every block at each preset, in one table
(``build/qor/qor.md``, ``qor.json``).

It is the same flows as ``focus-rtl synth`` (:func:`rtl.flow.synth.synth_block`): ``ice40`` and
``ecp5`` (the block in its timing harness, nextpnr) and ``osu018-sta`` (the ``osu018-logic``
netlist, memories as macros, timed by OpenSTA), for every (preset, block, target), run as tasks
by :func:`rtl.flow.dist.execute` (threads, or a Dask cluster) and cached by parameter hash, so a
rerun redoes only what changed. ``--quick`` (:data:`QUICK`) is the board preset and three small
blocks, for trying the flow. :func:`qor_readme_markdown` is the short form of one preset's rows
that ``--readme FILE`` writes into ``FILE`` between ``<!-- qor-PRESET:begin -->`` and
``<!-- qor-PRESET:end -->``.
"""

import subprocess

from ..marked_text import replace_marked
from . import toolchain
from .blocks import BLOCKS
from .dist import execute
from .report import short
from .targets import DEVICES, FREQ_TARGETS, LIBERTY_TARGETS, STA_TARGETS

__all__ = ["QOR_TARGETS", "QOR_PRESETS", "QUICK", "FMAX_GOALS_MHZ", "run_qor", "qor_markdown",
           "qor_row", "qor_command", "qor_readme_markdown", "update_readme", "source_commit",
           "plot_qor"]

#: The targets of the table.
QOR_TARGETS = ("ice40", "ecp5", "osu018-sta")
#: The presets of the table.
QOR_PRESETS = ("default", "paper", "board")
#: The clock each target should reach (issue 14's goals), drawn as a line in :func:`plot_qor`.
FMAX_GOALS_MHZ = {"ecp5": 100.0, "ice40": 40.0, "osu018-sta": 250.0}
#: ``--quick``: the presets and blocks of a short run.
QUICK = {"presets": ("board",),
         "blocks": ("similarity_comparator", "offset_encoder", "offset_decoder")}


def _fpga_summary(result):
    out = {"status": result["status"]}
    block = result.get("block") or {}
    for key in ("lut", "ff", "bram", "dsp"):
        out[key] = block.get(key)
    out["fmax_mhz"] = result.get("fmax_mhz") if result["status"] == "ok" else None
    out["lut_multipliers"] = bool(result.get("dsp_fallback"))
    if result.get("pnr_timeouts"):
        out["pnr_seeds"] = result.get("pnr_seeds")
        out["pnr_timeouts"] = [t["seed"] for t in result["pnr_timeouts"]]
    path = result.get("critical_path") if result["status"] == "ok" else None
    if path:
        out["critical_path"] = {"delay_ns": path["delay_ns"], "start": path["start"]["cell"],
                                "end": path["end"]["cell"], "start_net": path["start_net"],
                                "end_net": path["end_net"], "logic_levels": path["logic_levels"]}
    return out


def _sta_summary(result):
    out = {"status": result["status"]}
    if result["status"] != "ok":
        return out
    path = result["critical_path"]
    out.update(area_um2=result["area_um2"], memory_kbit=round(result["memory_bits"] / 1024, 2),
               memories=len(result["memories"]), fmax_mhz=result["fmax_mhz"],
               wns_ns=result["wns_ns"], clock_period_ns=result["clock_period_ns"],
               critical_path={"startpoint": path["startpoint"], "endpoint": path["endpoint"],
                              "min_period_ns": path["min_period_ns"],
                              "logic_levels": path["logic_levels"]})
    return out


def _cell_summary(result):
    out = {"status": result["status"]}
    if result["status"] == "ok":
        for key in ("area_um2", "transistors", "cells", "ff"):
            if key in result:
                out[key] = result[key]
    return out


def qor_row(preset, block, tag, per_target):
    """One row of the table: ``{"preset", "block", "tag", target: summary}``."""
    row = {"preset": preset, "block": block, "tag": tag}
    for target, result in per_target.items():
        if target in DEVICES:
            row[target] = _fpga_summary(result)
        elif target in STA_TARGETS:
            row[target] = _sta_summary(result)
        else:
            row[target] = _cell_summary(result)
    return row


def source_commit():
    """The checkout's commit (``git rev-parse --short HEAD``, with ``+changes`` when files under
    ``rtl/`` differ from it), or None outside a git checkout."""
    def git(*args):
        return subprocess.run(["git", "-C", str(toolchain.SOURCE_ROOT), *args],
                              capture_output=True, text=True, timeout=30)
    try:
        head = git("rev-parse", "--short", "HEAD")
        if head.returncode != 0:
            return None
        dirty = git("status", "--porcelain", "--", "rtl").stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+changes" if dirty else "")


def run_qor(presets=QOR_PRESETS, blocks=None, targets=QOR_TARGETS, *, overrides=(), jobs=1,
            progress=print, work_root=None, dsp="auto", freq=None, timeout=None, sta=None,
            executor="threads", scheduler=None, cache=True, seeds=1):
    """Run every (preset, block, target) flow and return the QoR dict: ``presets``,
    ``overrides`` (applied to every preset), ``blocks``, ``targets``, ``params`` and ``tags`` per
    preset, ``rows`` (:func:`qor_row`), ``results`` (the full flow results, ``{preset: {block:
    {target: result}}}``) and the header of a :func:`rtl.flow.synth.run_synth` report (tools,
    liberty, clock targets, notes, cache hits). The keyword options are run_synth's."""
    from ..params import FocusParams
    from .synth import _cache, _cache_meta, _options, _report_header, _summary, check_tools

    presets, targets = list(presets), list(targets)
    blocks = list(blocks or BLOCKS)
    params = {preset: FocusParams.preset(preset).with_overrides(list(overrides))
              for preset in presets}
    check_tools(targets)
    options = _options(work_root, dsp, freq, timeout, sta, seeds)
    cache = _cache(cache)
    tasks = [((preset, block, target), preset, block, target, params[preset])
             for preset in presets for block in blocks for target in targets]
    results = execute(tasks, options, jobs=jobs, progress=progress, executor=executor,
                      scheduler=scheduler, cache=cache, summary=_summary)
    first = params[presets[0]]
    qor = _report_header(first, targets, dsp, freq, {"overrides": list(overrides)})
    for key in ("params", "tag"):
        qor.pop(key)
    qor.update(_cache_meta(cache))
    qor.update(commit=source_commit(), presets=presets, blocks=blocks,
               params={preset: p.to_dict() for preset, p in params.items()},
               tags={preset: p.tag for preset, p in params.items()})
    qor["results"] = {preset: {block: {target: results[(preset, block, target)]
                                       for target in targets} for block in blocks}
                      for preset in presets}
    qor["rows"] = [qor_row(preset, block, params[preset].tag, qor["results"][preset][block])
                   for preset in presets for block in blocks]
    return qor


# ---- Markdown -----------------------------------------------------------------------------------

def _num(value, fmt="{}"):
    return "-" if value is None else fmt.format(value)


def _fpga_cells(summary):
    if summary is None:
        return []
    status = summary["status"]
    counts = [_num(summary.get(k)) for k in ("lut", "ff", "bram", "dsp")]
    if status == "ok":
        fmax = _num(summary["fmax_mhz"], "{:.1f}")
        if summary.get("pnr_timeouts"):
            fmax += f" (seed {', '.join(map(str, summary['pnr_seeds']))})"
    elif summary.get("lut") is not None:
        # Yosys's counts exist when the placer then found the design too large.
        counts = [f"*{c}*" for c in counts]
        fmax = status.replace("_", " ")
    else:
        counts, fmax = ["-"] * 4, status.replace("_", " ")
    if summary.get("lut_multipliers") and summary.get("lut") is not None:
        counts[0] += " (LUT mult.)"
    return counts + [fmax]


def _sta_cells(summary):
    if summary is None:
        return []
    if summary["status"] != "ok":
        return ["-", "-", summary["status"].replace("_", " "), "-"]
    path = summary["critical_path"]
    return [f"{summary['area_um2']:.0f}", f"{summary['memory_kbit']:.1f}",
            _num(summary["fmax_mhz"], "{:.1f}"),
            (f"`{short(path['startpoint'], 28)}` -> `{short(path['endpoint'], 28)}` "
            f"({path['min_period_ns']:.2f} ns)")]


_HEADS = {
    "ice40": ["iCE40 LUT", "FF", "BRAM", "DSP", "Fmax MHz"],
    "ecp5": ["ECP5 LUT", "FF", "BRAM", "DSP", "Fmax MHz"],
    "osu018-sta": ["logic um^2", "mem kbit", "STA Fmax MHz", "STA critical path"],
}


def qor_markdown(qor):
    """The QoR dict as Markdown: one table, a row per (preset, block)."""
    targets = [t for t in qor["targets"] if t in _HEADS]
    others = [t for t in qor["targets"] if t not in _HEADS]
    lines = ["# QoR: every block at each preset", ""]
    if qor.get("commit"):
        lines += [f"Measured on `{qor['commit']}`.", ""]
    for preset in qor["presets"]:
        lines.append(f"- {preset}: `{qor['tags'][preset]}`")
    if qor.get("overrides"):
        lines.append(f"- overrides on every preset: `{' '.join(qor['overrides'])}`")
    lines.append("")
    head = ["preset", "block"] + [h for t in targets for h in _HEADS[t]]
    head += [f"{t} status" for t in others]
    lines += ["| " + " | ".join(head) + " |",
              "|---|---|" + "---:|" * (len(head) - 2 - len(others)) + "---|" * len(others)]
    for row in qor["rows"]:
        cells = [row["preset"], row["block"]]
        for t in targets:
            cells += _fpga_cells(row.get(t)) if t in DEVICES else _sta_cells(row.get(t))
        cells += [row[t]["status"] for t in others]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    errors = [f"- {r['preset']} {r['block']} {t}: {res['status']}: `{res['error']}`"
              for r in qor["rows"] for t in qor["targets"]
              for res in [qor["results"][r["preset"]][r["block"]][t]]
              if res["status"] != "ok"]
    if errors:
        lines += [("Flows that did not end ok (italic counts: Yosys's, before the placer found "
                  "the design too large):"), ""] + errors + [""]
    freq = ", ".join(f"{t} {f:g} MHz" for t, f in qor.get("freq_target_mhz", {}).items()
                     if t in FREQ_TARGETS)
    lines += ["Notes:", "",
              ("- FPGA columns: the block's own cells (Yosys per-module statistics, without the "
               "timing harness); Fmax from nextpnr for block + harness (every path register to "
               "register). BRAM: SB_RAM40_4K on the iCE40, DP16KD on the ECP5. 'LUT mult.': "
               "the DSPs did not fit, so the run was redone with LUT multipliers."),
              ("- logic um^2: OSU 0.18 um standard cells of everything but the memories "
               "(osu018-sta: the osu018-logic netlist with ABC's fanout buffers and gate "
               "sizing, and buffer trees on the flip-flops' outputs of more than 16 loads); "
               "mem kbit: the memories left as macros (add SRAM area from a memory "
               "compiler)."),
              ("- STA Fmax: OpenSTA on that netlist, ideal clock, ports and memory ports as "
               "ideal register boundaries, no wires; 1000 / (period - worst slack). The "
               "critical path is its start and end point and minimum period."),
              f"- Clock targets: {freq}." if freq else "- Clock targets: none.",
              ("- Regenerate: `make qor` (all presets) or `focus-rtl synth --qor [PRESETS]`; "
              "`--quick` for the board preset and three small blocks.")]
    tools = ", ".join(f"{k} {v}" for k, v in qor.get("tools", {}).items())
    lines.append(f"- Tools: {tools}.")
    if qor.get("liberty") and set(LIBERTY_TARGETS) & set(qor["targets"]):
        lib = qor["liberty"]
        lines.append(f"- Liberty: {lib['library']} at {lib['path']}." if lib["found"] else
                     "- Liberty: not found; run `make liberty`.")
    if qor.get("cache"):
        c = qor["cache"]
        lines.append(f"- Cache: {c['dir']} ({c['hits']} flows reused, {c['misses']} run).")
    return "\n".join(lines + [""])


# ---- the README's short form --------------------------------------------------------------------

def _counts(summary):
    """``LUT / FF / BRAM / DSP`` and the Fmax cell of an FPGA summary."""
    cells = _fpga_cells(summary)
    if not cells:
        return "-", "-"
    counts = cells[:4]
    if all(c == "-" for c in counts):
        return "-", cells[4]
    return " / ".join(counts), cells[4]


def qor_command(qor, preset):
    """The command that redoes ``preset``'s rows of ``qor`` and writes them into the README:
    with ``--block`` when the table has only some of the blocks, and the ``--set`` overrides."""
    words = ["focus-rtl synth --qor", preset]
    blocks = qor.get("blocks") or list(BLOCKS)
    if list(blocks) != list(BLOCKS):
        words.append("--block " + ",".join(blocks))
    words += [f"--set {o}" for o in qor.get("overrides") or ()]
    return " ".join(words + ["--readme README.md"])


def qor_readme_markdown(qor, preset):
    """The rows of ``preset`` as a short Markdown table: ECP5 and iCE40 counts and Fmax, the logic
    um^2, the memory kbit and the OpenSTA Fmax with the end points of its critical path."""
    commit = f" on `{qor['commit']}`" if qor.get("commit") else ""
    lines = [(f"Preset `{preset}` (`{qor['tags'][preset]}`), measured{commit} with "
             f"`{qor_command(qor, preset)}`:"), "",
             ("| block | ECP5 LUT / FF / BRAM / DSP | ECP5 MHz | iCE40 LUT / FF / BRAM / DSP | "
             "iCE40 MHz | logic um^2 | mem kbit | STA MHz | STA critical path |"),
             "|---|---|---:|---|---:|---:|---:|---:|---|"]
    for row in qor["rows"]:
        if row["preset"] != preset:
            continue
        ecp5, ecp5_mhz = _counts(row.get("ecp5"))
        ice40, ice40_mhz = _counts(row.get("ice40"))
        sta = _sta_cells(row.get("osu018-sta")) or ["-"] * 4
        lines.append(f"| `{row['block']}` | {ecp5} | {ecp5_mhz} | {ice40} | {ice40_mhz} | "
                     f"{' | '.join(sta)} |")
    return "\n".join(lines) + "\n"


def update_readme(text, qor):
    """``text`` with each preset's table of ``qor`` between its ``qor-PRESET`` markers
    (``ValueError`` when a preset has none)."""
    for preset in qor["presets"]:
        text = replace_marked(text, f"qor-{preset}", "\n" + qor_readme_markdown(qor, preset) + "\n")
    return text


# ---- the picture --------------------------------------------------------------------------------

_PLOT_LABELS = {"ecp5": "ECP5-85F (nextpnr)", "ice40": "iCE40 UP5K (nextpnr)",
                "osu018-sta": "OSU 0.18 um (OpenSTA)"}


def _fmax_or_status(summary):
    """(Fmax, None) of a summary that has one, else (None, its status)."""
    if summary is None:
        return None, None
    if summary["status"] == "ok" and summary.get("fmax_mhz"):
        return summary["fmax_mhz"], None
    return None, summary["status"].replace("_", " ")


def plot_qor(qor, path):
    """A PNG of every block's Fmax per target, one panel per target and a bar per (preset,
    block), with the target's goal (:data:`FMAX_GOALS_MHZ`) as a dashed line; a flow that gave
    no Fmax is named at the bar's place ("does not fit", ...)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    targets = [t for t in qor["targets"] if t in _PLOT_LABELS]
    rows = qor["rows"]
    names = [f"{r['block']} ({r['preset']})" if len(qor["presets"]) > 1 else r["block"]
             for r in rows]
    fig = Figure(figsize=(5 * max(len(targets), 1), 1.2 + 0.32 * len(rows)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, max(len(targets), 1), sharey=True, squeeze=False)[0]
    ys = list(range(len(rows)))
    for ax, target in zip(axes, targets, strict=False):
        goal = FMAX_GOALS_MHZ.get(target)
        values = [_fmax_or_status(r.get(target)) for r in rows]
        top = max([v for v, _ in values if v] + [goal or 0, 1.0])
        colors = ["tab:green" if goal and v and v >= goal else "tab:orange" for v, _ in values]
        ax.barh(ys, [v or 0 for v, _ in values], color=colors)
        for y, (v, status) in zip(ys, values, strict=True):
            text = f"{v:.0f}" if v else (status or "-")
            ax.text((v or 0) + top * 0.01, y, text, va="center", fontsize="x-small")
        if goal:
            ax.axvline(goal, color="black", linestyle="--", linewidth=1,
                       label=f"goal {goal:g} MHz")
            ax.legend(loc="lower right", fontsize="small")
        ax.set_xlim(0, top * 1.25)
        ax.set_title(_PLOT_LABELS[target], fontsize="medium")
        ax.set_xlabel("Fmax, MHz")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(ys, names, fontsize="small")
    axes[0].invert_yaxis()
    commit = f" on {qor['commit']}" if qor.get("commit") else ""
    presets = f"preset{'s' if len(qor['presets']) > 1 else ''} {', '.join(qor['presets'])}"
    fig.suptitle(f"Fmax of every block, {presets}{commit} "
                 "(green: at or above the goal)", fontsize="medium")
    fig.savefig(path, dpi=100, metadata={"Software": None})
    return path
