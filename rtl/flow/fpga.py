"""The FPGA flows of ``focus-rtl synth`` (``ice40``, ``ecp5``): the block in its timing harness,
``synth_ice40``/``synth_ecp5``, nextpnr, and the LUT/FF/BRAM/DSP counts and Fmax."""

import json

from .harness import HARNESS_NAME, harness_verilog
from .tools import count_cells, log_utilization, nextpnr, yosys

# ---- the flows ----------------------------------------------------------------------------------

def _fpga_counts(target, cells):
    """LUT/FF/carry/BRAM/DSP counts from Yosys cell counts of one module."""
    if target == "ice40":
        return {
            "lut": count_cells(cells, "SB_LUT4"),
            "ff": count_cells(cells, r"SB_DFF\w*"),
            "carry": count_cells(cells, "SB_CARRY"),
            "bram": count_cells(cells, "SB_RAM40_4K"),
            "spram": count_cells(cells, "SB_SPRAM256KA"),
            "dsp": count_cells(cells, "SB_MAC16"),
        }
    # A CCU2C is two LUT4s with their carry chain: count them as LUTs, as the slice does.
    return {
        "lut": count_cells(cells, "LUT4") + 2 * count_cells(cells, "CCU2C"),
        "ff": count_cells(cells, "TRELLIS_FF", r"FD1\w+"),
        "carry": count_cells(cells, "CCU2C"),
        "bram": count_cells(cells, "DP16KD", "PDPW16KD"),
        "lutram": count_cells(cells, "TRELLIS_DPR16X4"),
        "dsp": count_cells(cells, "MULT18X18D", "ALU54B"),
    }

def critical_path(report):
    """The critical path of a nextpnr ``--report`` JSON (dict): of its ``critical_paths`` (one
    per pair of clock domains, or to and from the ``<async>`` pins), the slowest from a clock to
    the same clock (register to register, the one that sets the Fmax), else the slowest of all.

    Returns None when there is none, else ``{"from_clock", "to_clock", "start": {"cell", "port"},
    "end": {"cell", "port"}, "start_net", "end_net", "delay_ns", "logic_ns", "routing_ns",
    "logic_levels", "nets"}``: ``delay_ns`` is the sum of the path's steps (clock-to-Q, logic,
    routing and the end's setup), ``logic_levels`` the number of logic steps (LUTs, carry cells,
    DSP and RAM ports), ``nets`` the routed nets in order.
    """
    paths = [p for p in report.get("critical_paths", []) if p.get("path")]
    if not paths:
        return None

    def total(path):
        return sum(step.get("delay", 0.0) for step in path["path"])

    same = [p for p in paths if p.get("from") == p.get("to") and "<async>" not in p.get("from", "")]
    path = max(same or paths, key=total)
    steps = path["path"]
    nets = [step["net"] for step in steps if step.get("type") == "routing" and step.get("net")]

    def end(step, side):
        point = step.get(side, {})
        return {"cell": point.get("cell"), "port": point.get("port")}

    def by_type(*kinds):
        return round(sum(s.get("delay", 0.0) for s in steps if s.get("type") in kinds), 3)

    return {
        "from_clock": path.get("from"),
        "to_clock": path.get("to"),
        "start": end(steps[0], "from"),
        "end": end(steps[-1], "to"),
        "start_net": nets[0] if nets else None,
        "end_net": nets[-1] if nets else None,
        "delay_ns": round(total(path), 3),
        "logic_ns": by_type("logic", "clk-to-q", "setup", "source"),
        "routing_ns": by_type("routing"),
        "logic_levels": sum(1 for s in steps if s.get("type") == "logic"),
        "nets": nets,
    }


# Device resources always listed in a report, used or not.
_MAIN_RESOURCES = ("ICESTORM_LC", "ICESTORM_RAM", "ICESTORM_DSP", "TRELLIS_COMB", "TRELLIS_FF",
                   "DP16KD", "MULT18X18D")


# Amaranth names each element of an ArrayLayout view "x[0]", "x[1]", ... beside the flat wire
# "x" (port, register or internal signal). abc9's reintegration (Yosys 0.70,
# abc_ops_reintegrate) names the bits of a mapped symbol "sym[i]" and rebuilds a wide wire "sym"
# from them, so a module holding both "x" and "x[0]" asserts, `count_id(wire->name) == 0` when
# "x" is renamed onto the existing "x[0]", or `GetSize(conn.first) == GetSize(conn.second)` when
# the rebuilt multi-bit "x[0]" is connected to one bit of "x" (Yosys issue 4349). Both synth_ecp5
# and synth_ice40 map with abc9. The element wires are only aliases of the flat one, so they are
# made private ($-names) before synthesis: opt_clean drops them and nothing is renamed onto them.
# Ports are left alone (rename -hide skips them; Amaranth's ports carry no brackets).
UNBRACKET = ("rename -hide w:*\\[*",)


def _report_fmax(report):
    """The Fmax of a nextpnr report (dict): the slowest clock's achieved MHz, or None."""
    achieved = [clock["achieved"] for clock in report.get("fmax", {}).values()]
    return round(min(achieved), 2) if achieved else None


def seed_summary(runs):
    """The Fmax of several place-and-route runs of one netlist (``[{"seed", "fmax_mhz",
    ...}]``): ``{"seeds", "fmax_mhz" (per seed), "min", "median", "max"}`` and ``run``, the
    index of the median run. For an even count the median is the lower middle one, so that it
    is a run that happened and its critical path can be shown."""
    order = sorted(range(len(runs)), key=lambda n: runs[n]["fmax_mhz"])
    middle = order[(len(order) - 1) // 2]
    values = [run["fmax_mhz"] for run in runs]
    return {"seeds": [run["seed"] for run in runs], "fmax_mhz": values, "min": min(values),
            "median": runs[middle]["fmax_mhz"], "max": max(values), "run": middle}


def timeout_note(result):
    """``""``, or which seeds' place and route timed out before the seeds that finished, for
    reports: ``"seed 2; seed 1 timed out after 1500 s"``."""
    timeouts = result.get("pnr_timeouts")
    if not timeouts:
        return ""
    finished = result.get("pnr_seeds") or []
    lost = ", ".join(str(t["seed"]) for t in timeouts)
    slowest = max(t["seconds"] for t in timeouts)
    head = (f"seed{'s' if len(finished) > 1 else ''} {', '.join(map(str, finished))}; "
            if finished else "")
    return (f"{head}seed{'s' if len(timeouts) > 1 else ''} {lost} timed out after "
            f"{slowest:.0f} s")


#: How many more seeds place and route tries, in all, when a seed's nextpnr run times out. Router1
#: sometimes does not converge on one seed's placement of a netlist that routes in a minute at
#: the next seed (``focus_gemm_coded`` on the ECP5, docs/timing-closure.md); each try is given
#: the whole timeout again.
PNR_TIMEOUT_RETRIES = 2


def _place_and_route(target, workdir, freq, timeout, seeds):
    """nextpnr until ``seeds`` runs have finished, with seeds 1, 2, ... in turn; each report kept
    as ``nextpnr.seed<k>.json`` and the median run's copied to ``nextpnr.json`` when ``seeds``
    > 1. A seed whose run times out is skipped for the next one, :data:`PNR_TIMEOUT_RETRIES`
    times at most; any other failure ends it. Returns ``(status, error, seconds, report,
    spread, runs, timeouts)``: ``spread`` is :func:`seed_summary` when ``seeds`` > 1, ``runs``
    the seeds that finished and ``timeouts`` ``[{"seed", "seconds"}]`` of those that did not."""
    runs, timeouts, total, seed = [], [], 0.0, 0
    while len(runs) < seeds:
        seed += 1
        status, error, seconds = nextpnr(target, workdir, freq, timeout, seed=seed)
        total += seconds
        if status == "timeout" and len(timeouts) < PNR_TIMEOUT_RETRIES:
            timeouts.append({"seed": seed, "seconds": round(seconds, 2)})
            continue
        if status != "ok":
            if status == "timeout" and timeouts:
                error += f" at seed {seed}, as at seed{'s' if len(timeouts) > 1 else ''} " + \
                    ", ".join(str(t["seed"]) for t in timeouts)
            return status, error, round(total, 2), {}, None, [r["seed"] for r in runs], timeouts
        text = (workdir / "nextpnr.json").read_text()
        report = json.loads(text)
        if seeds > 1:
            (workdir / f"nextpnr.seed{seed}.json").write_text(text)
        runs.append({"seed": seed, "fmax_mhz": _report_fmax(report) or 0.0, "report": report,
                     "text": text})
    finished = [run["seed"] for run in runs]
    if seeds == 1:
        return "ok", None, round(total, 2), runs[0]["report"], None, finished, timeouts
    spread = seed_summary(runs)
    median = runs[spread.pop("run")]
    (workdir / "nextpnr.json").write_text(median["text"])
    return "ok", None, round(total, 2), median["report"], spread, finished, timeouts


def _fpga_attempt(target, block, params, workdir, dsp, freq, timeout, seeds=1):
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
        *UNBRACKET,
        synth,
        "tee -q -o stat.json stat -json",
        "setattr -mod -unset keep_hierarchy *",
        "flatten",
        "write_json netlist.json",
    ]
    status, error, seconds = yosys(workdir, script, timeout)
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

    status, error, seconds, report, spread, finished, timeouts = _place_and_route(
        target, workdir, freq, timeout, seeds)
    result.update(status=status, error=error, pnr_seeds=finished)
    if timeouts:
        result["pnr_timeouts"] = timeouts
    result["seconds"]["nextpnr"] = seconds
    utilization = report.get("utilization") or log_utilization(workdir)
    result["device"] = {cell: use for cell, use in sorted(utilization.items())
                        if use["used"] or cell in _MAIN_RESOURCES}
    if status != "ok":
        return result
    result["fmax_mhz"] = _report_fmax(report)
    result["critical_path"] = critical_path(report)
    if spread is not None:
        result["fmax_seeds"] = spread
    return result


def fpga_flow(target, block, params, workdir, dsp, freq, timeout, seeds=1):
    """The block in its harness on ``target``; with ``seeds`` > 1, placed and routed once per
    seed, ``fmax_mhz`` and ``critical_path`` the median run's and ``fmax_seeds`` all of them
    (:func:`seed_summary`)."""
    if dsp in ("auto", "on"):
        result = _fpga_attempt(target, block, params, workdir / "dsp", True, freq, timeout,
                               seeds)
        dsp_cell = {"ice40": "ICESTORM_DSP", "ecp5": "MULT18X18D"}[target]
        if dsp == "on" or not (result["status"] == "does_not_fit"
                               and dsp_cell in (result["error"] or "")):
            return result
        first = result
        result = _fpga_attempt(target, block, params, workdir / "nodsp", False, freq, timeout,
                               seeds)
        result["dsp_fallback"] = {"error": first["error"], "device": first.get("device", {}),
                                  "block": first.get("block", {})}
        for tool, seconds in first["seconds"].items():
            result["seconds"][tool] = round(result["seconds"].get(tool, 0) + seconds, 2)
        return result
    return _fpga_attempt(target, block, params, workdir / "nodsp", False, freq, timeout, seeds)
