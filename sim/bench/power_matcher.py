"""Power of the block matcher with and without clock gating of its scorers, on a photograph job:
``focus-rtl power --block block_matcher`` (:mod:`sim.bench.power` runs it).

For each pruning rate and each build (``gate=True``: each
:class:`~rtl.sic.dot_scorer.DotScorer`'s datapath stages are clocked only for a valid pair with
both vectors non-zero; ``gate=False``: whenever the pipeline moves) it

1. makes the job: photograph tokens (:func:`golden.photo.photo_tokens`, ``frames`` frames of a
   14 x 14 grid, FS = 196, HS = 14), a seeded random share of the positions pruned (the same
   draw as the comparator's job), the kept tokens in position order (:func:`matcher_job`);
2. runs it through the whole :class:`~rtl.sic.block_matcher.BlockMatcher` in the Amaranth
   simulator (:func:`sim.block_match.run_jobs`, no stalls, writing a VCD), checks its map and
   unique vectors against :func:`golden.block_match`, and takes the activities and each clock
   gate's enable rate from the VCD; the matcher's own ``active`` / ``gated`` counters give the
   gated share of the comparator slots (a pruned, missing or zero candidate, the padding slot of
   the last round, or a zero token);
3. maps the ``gating="icg"`` build to the OSU 0.18 um cells with its RAMs left as macros and cut
   at their ports (the window buffer, the map and the vector FIFO: **their own power is not
   counted**; their read data enter with the simulated activity) and reports its power with
   OpenSTA (:func:`rtl.flow.power.power_flow`).

Shape: the board preset with ``window=256`` (the photograph's FS + HS + 1 = 211 must fit) and
``representatives=first`` (the job asks for no mean), unless ``--set`` overrides it.
"""

import numpy as np

import golden
from golden.photo import photo_tokens
from rtl.flow.power import power_flow, vcd_activity
from rtl.sic.block_matcher import BlockMatcher, matcher_rounds
from sim.block_match import Job, check_results, run_jobs

from ..streams import CLOCK_PERIOD

GRID = 14
#: The matcher's shape on top of the chosen preset (see the module docstring).
OVERRIDES = ("window=256", "representatives=first")


def pruned_photo(params, pruning, frames=2, seed=0, grid=GRID):
    """The photograph's tokens and positions (:func:`golden.photo.photo_tokens`) and the seeded
    keep mask with a share ``pruning`` of the positions pruned: the draw of both power
    benchmarks (this one and the comparator's, :mod:`sim.bench.power`)."""
    x, pos = photo_tokens(frames=frames, grid=grid, dim=params.dim, elem_bits=params.elem_bits)
    return x, pos, np.random.default_rng(seed).random(len(pos)) >= pruning


def matcher_job(params, pruning, frames=2, seed=0, grid=GRID):
    """The photograph job (module docstring, step 1): a :class:`sim.block_match.Job`."""
    x, pos, keep = pruned_photo(params, pruning, frames, seed, grid)
    order = np.argsort(pos[keep], kind="stable")
    return Job(x[keep][order].astype(np.int64), pos[keep][order].astype(np.int64),
               frame_stride=grid * grid, row_stride=grid)


def gate_enables(activity):
    """``{clock gate domain: enable rate}``: the duty of every ``<domain>_en`` in the VCD."""
    return {name[: -len("_en")]: duty for (name, bit), (_, duty) in activity.items()
            if bit == 0 and name.endswith("_en") and ".comparator" in name}


def simulate(params, job, theta_q, gate, vcd):
    """Run ``job`` through the matcher (``gating="enable"``) writing ``vcd``, checked against
    golden; returns (activity, enable rates, the job's :class:`~sim.block_match.JobResult`)."""
    sim_params = params.with_overrides(["gating=enable"])
    (result,) = run_jobs(sim_params, [job], thetas=[theta_q], vcd=vcd, gate=gate)
    check_results(sim_params, [job], [theta_q], [result])
    activity = vcd_activity(vcd, CLOCK_PERIOD)
    return activity, gate_enables(activity), result


def measure(params, pruning, gate, work, frames, freq_mhz, progress=None, theta=0.9, grid=GRID):
    """One pruning rate, one build: the power flow's result dict with the job's figures."""
    job = matcher_job(params, pruning, frames, grid=grid)
    theta_q = int(golden.theta_q(theta, params.theta_bits))
    tag = f"p{int(round(100 * pruning))}_{'gated' if gate else 'ungated'}"
    workdir = work / tag
    workdir.mkdir(parents=True, exist_ok=True)
    activity, enables, run = simulate(params, job, theta_q, gate, workdir / "sim.vcd")
    (workdir / "sim.vcd").unlink()
    icg_params = params.with_overrides(["gating=icg"])
    dut = BlockMatcher(icg_params, gate=gate)
    result = power_flow(dut, icg_params, workdir, activity, enables,
                        period_ns=1000.0 / freq_mhz, name="block_matcher", keep_memories=True,
                        netlist_dir=work / f"netlist_{'gated' if gate else 'ungated'}")
    slots = params.comparators * matcher_rounds(params) * len(job.positions)
    result.update(pruning=pruning, gate=gate, tokens=len(job.positions), cycles=run.cycles,
                  comparisons=slots, enables=enables,
                  counters={"active": run.active, "gated": run.gated, "uniques": run.uniques},
                  gated_share=run.gated / slots)
    if progress is not None:
        progress(f"block matcher, pruning {pruning:.0%}, gate={gate}: {result['status']} "
                 f"{result.get('dynamic_w', float('nan')) * 1e3:.3f} mW dynamic")
    return result


def markdown(report, mw):
    """The report of :func:`sim.bench.power.run` for the block matcher (``mw`` formats watts as
    milliwatts)."""
    p = report["params"]
    lines = ["# Block matcher: power with and without clock gating of its scorers", "",
             (f"Preset `{report['preset']}` with {', '.join(f'`{o}`' for o in OVERRIDES)}"
              f"{''.join(f', `{o}`' for o in report['overrides'])} (V = {p['dim']}, "
              f"{p['comparators']} comparators, window {p['window']}, tile {p['tile']}), OSU "
              f"0.18 um cells, OpenSTA {report['sta']}, clock {report['freq_mhz']:g} MHz. "
              f"Photograph job: {report['frames']} frames of a {GRID}x{GRID} grid (FS "
              f"{GRID * GRID}, HS {GRID}), the kept tokens through the whole matcher (map "
              f"and unique vectors checked against golden), no stalls. Command: "
              f"`{report['command']}`."), "",
             ("The window buffer, the unique-index map, the threshold table and the vector "
              "FIFO are RAM macros cut at their ports: **their power is not counted** (their "
              "read data drive the logic with the simulated activity)."), "",
             ("Gated share: the matcher's comparator slots with no valid, non-zero pair "
              "(`gated / (active + gated)`, its own counters): pruned, missing or zero "
              "candidates, and the padding slot of the last round."), "",
             ("| pruning | gated share | dynamic, ungated mW | dynamic, gated mW | saving | "
              "registers, ungated mW | registers, gated mW | registers' saving |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for pruning, saving in report["savings"].items():
        lines.append(f"| {pruning} | {saving['gated_share']:.3f} | {mw(saving['ungated_w'])} | "
                     f"{mw(saving['gated_w'])} | {saving['saving_percent']:.2f} % | "
                     f"{mw(saving['registers_ungated_w'])} | "
                     f"{mw(saving['registers_gated_w'])} | "
                     f"{saving['registers_saving_percent']:.2f} % |")
    lines += ["", ("| pruning | build | tokens | cycles | active / gated | gated flops | "
                   "dynamic mW | leakage uW | OpenSTA dynamic before gating correction mW | "
                   "cells left out (NaN) | OpenSTA s |"),
              "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in report["results"]:
        build = "gated" if r["gate"] else "ungated"
        if r["status"] != "ok":
            lines.append(f"| {r['pruning']:.0%} | {build} | {r['status']}: {r.get('error')} |")
            continue
        flops = sum(g["flops"] for g in r["gates"].values())
        lines.append(
            f"| {r['pruning']:.0%} | {build} | {r['tokens']} | {r['cycles']} | "
            f"{r['counters']['active']} / {r['counters']['gated']} | {flops} | "
            f"{mw(r['dynamic_w'])} | {1e6 * r['leakage_w']:.3f} | {mw(r['sta_dynamic_w'])} | "
            f"{len(r['nan_cells'])} | {r['seconds'].get('sta', 0):.1f} |")
    lines += ["", ("Method and limits: `rtl/flow/power.py` (registers' simulated rates on their "
                   "D pins, each clock gate's clock power scaled by its simulated enable rate; "
                   "cells whose power OpenSTA 2019 computes as NaN are left out and counted). "
                   "Cell power only: no wires, no clock tree, ideal input drivers, no "
                   "memory macros."), ""]
    return "\n".join(lines)
