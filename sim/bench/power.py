"""Power of the similarity comparator with and without clock gating, on a photograph job:
``.venv/bin/python -m sim.bench.power`` (or ``focus-rtl power``); ``--block block_matcher``
measures the whole block matcher instead (:mod:`sim.bench.power_matcher`).

Not a test: it measures and reports. For each pruning rate (0 %, 50 %, 80 % of the positions by
default) and each build (``gate=True``: the datapath registers of each pipeline stage are
clocked through a clock gate only for valid, non-zero comparisons; ``gate=False``: they are
clocked whenever the pipeline moves), it

1. makes the comparison stream of the job: photograph tokens (:func:`golden.photo.photo_tokens`,
   ``frames`` frames of a 14 x 14 grid), a seeded random share of the positions pruned; each kept
   token is compared with each of its 7 candidates of the 2x2x2 block
   (:func:`golden.block_match.candidate_offsets`) in turn, a candidate outside the job or pruned
   being the zero vector (norm 0: the comparison is skipped and, with gating, not clocked);
2. runs it through :class:`rtl.sic.similarity_comparator.SimilarityComparator` in the Amaranth
   simulator, one comparison per cycle (no stalls), writing a VCD, and takes every register
   bit's toggle rate and duty and each clock gate's enable rate from it
   (:func:`rtl.flow.power.vcd_activity`);
3. maps the ``gating="icg"`` build to the OSU 0.18 um cells and reports its power at the clock
   with OpenSTA (:func:`rtl.flow.power.power_flow`, whose docstring says what OpenSTA cannot
   model and how the clock gates are accounted for).

Writes ``power.md``, ``power.json`` and ``power.png`` (power against pruning, gated and
ungated) to ``build/bench/power/`` (``-o``).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import golden
from golden.block_match import candidate_offsets
from golden.similarity import sqnorm
from rtl.flow import toolchain
from rtl.flow.power import power_flow, vcd_activity
from rtl.params import FocusParams
from rtl.sic.similarity_comparator import COMPARATOR_LATENCY, SimilarityComparator

from ..streams import CLOCK_PERIOD, run_jobs
from . import power_matcher
from .report import progress_printer

GRID = 14
PRUNING = (0.0, 0.5, 0.8)
#: The comparator's clock gates, one per pipeline stage.
GATES = tuple(f"stage{k}" for k in range(1, COMPARATOR_LATENCY + 1))

progress = progress_printer("bench_power")


def comparison_stream(params, pruning, frames=2, seed=0, theta=0.9):
    """The payloads of the comparator's input stream for the photograph job (module docstring,
    step 1), and the number of kept tokens."""
    x, pos, keep = power_matcher.pruned_photo(params, pruning, frames, seed, GRID)
    kept = {int(p): x[i] for i, p in enumerate(pos) if keep[i]}
    zero = np.zeros(params.dim, dtype=np.int64)
    theta_q = golden.theta_q(theta, params.theta_bits)
    payloads = []
    for p in sorted(kept):
        a = kept[p].astype(np.int64)
        for offset in candidate_offsets(GRID * GRID, GRID).tolist():
            b = kept.get(p - offset, zero).astype(np.int64)
            payloads.append({"x": a.tolist(), "y": b.tolist(), "nx": int(sqnorm(a)),
                             "ny": int(sqnorm(b)), "theta_q": int(theta_q)})
    return payloads, len(kept)


def simulate(params, payloads, gate, vcd):
    """Run the stream through the comparator (``gating="enable"``: the simulator's model of the
    clock gates) writing ``vcd``; returns (activity, enable rates, cycles, counters)."""
    sim_params = params.with_overrides(["gating=enable"])
    dut = SimilarityComparator(sim_params, icg_cell=None, gate=gate)
    run = run_jobs(dut, [{"i_stream": payloads, "o_stream": len(payloads)}],
                   inputs=("i_stream",), outputs=("o_stream",), vcd=vcd,
                   probes=("active", "gated"))
    activity = vcd_activity(vcd, CLOCK_PERIOD)
    enables = {g: activity[f"{g}_en", 0][1] for g in GATES}
    return activity, enables, run.cycles, dict(run.final)


def measure(params, pruning, gate, work, frames, freq_mhz):
    payloads, kept = comparison_stream(params, pruning, frames)
    tag = f"p{int(round(100 * pruning))}_{'gated' if gate else 'ungated'}"
    workdir = work / tag
    workdir.mkdir(parents=True, exist_ok=True)
    activity, enables, cycles, counters = simulate(params, payloads, gate, workdir / "sim.vcd")
    (workdir / "sim.vcd").unlink()
    icg_params = params.with_overrides(["gating=icg"])
    dut = SimilarityComparator(icg_params, gate=gate)
    result = power_flow(dut, icg_params, workdir, activity, enables,
                        period_ns=1000.0 / freq_mhz, name="similarity_comparator",
                        netlist_dir=work / f"netlist_{'gated' if gate else 'ungated'}")
    result.update(pruning=pruning, gate=gate, comparisons=len(payloads), tokens=kept,
                  cycles=cycles, enables=enables, counters=counters)
    progress(f"pruning {pruning:.0%}, gate={gate}: {result['status']} "
             f"{result.get('dynamic_w', float('nan')) * 1e3:.3f} mW dynamic")
    return result


def _mw(value):
    return "-" if value is None else f"{1e3 * value:.3f}"


def markdown(report):
    rows = report["results"]
    lines = ["# Similarity comparator: power with and without clock gating", "",
             (f"Preset `{report['preset']}` (V = {report['params']['dim']}), OSU 0.18 um "
              f"cells, OpenSTA {report['sta']}, clock {report['freq_mhz']:g} MHz. Photograph "
              f"job: {report['frames']} frames of a {GRID}x{GRID} grid; each kept token against "
              f"its 7 candidates (a pruned or missing candidate is a zero vector), one "
              f"comparison per cycle. Command: `{report['command']}`."), "",
             (f"| pruning | build | comparisons | cycles | enable rate stage "
              f"{'/'.join(str(k) for k in range(1, len(GATES) + 1))} | dynamic mW | "
              "internal mW | switching mW | leakage uW | total mW | OpenSTA dynamic before "
              "gating correction mW |"),
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"| {r['pruning']:.0%} | {'gated' if r['gate'] else 'ungated'} | "
                         f"{r['status']}: {r.get('error')} |")
            continue
        rates = "/".join(f"{r['enables'][g]:.3f}" for g in GATES)
        lines.append(
            f"| {r['pruning']:.0%} | {'gated' if r['gate'] else 'ungated'} | "
            f"{r['comparisons']} | {r['cycles']} | {rates} | {_mw(r['dynamic_w'])} | "
            f"{_mw(r['internal_w'])} | {_mw(r['switching_w'])} | "
            f"{1e6 * r['leakage_w']:.3f} | {_mw(r['total_w'])} | {_mw(r['sta_dynamic_w'])} |")
    lines += ["", "## Saving of clock gating", "",
              ("Dynamic power of the whole comparator, and of its registers alone (OpenSTA's "
               "sequential group: flip-flop and latch clock pins, outputs and the nets they "
               "drive, with the clock gates' correction); the rest is the combinational logic "
               "(the V products, the adder tree and the wide products), whose activity OpenSTA "
               "propagates from the registers' and inputs' rates."), "",
              ("| pruning | dynamic, ungated mW | dynamic, gated mW | saving | registers, "
               "ungated mW | registers, gated mW | registers' saving |"),
              "|---|---:|---:|---:|---:|---:|---:|"]
    for pruning, saving in report["savings"].items():
        lines.append(f"| {pruning} | {_mw(saving['ungated_w'])} | {_mw(saving['gated_w'])} | "
                     f"{saving['saving_percent']:.1f} % | {_mw(saving['registers_ungated_w'])} | "
                     f"{_mw(saving['registers_gated_w'])} | "
                     f"{saving['registers_saving_percent']:.1f} % |")
    lines += ["", ("Method and limits: see `rtl/flow/power.py` (OpenSTA 2019 takes activities "
                   "only on input ports and charges every gated clock at the full rate; the "
                   "registers' simulated rates enter through ports on their D pins, and each "
                   "clock gate's clock power is scaled by its simulated enable rate). Cell "
                   "power only: no wires, no clock tree (every clock, gated or not, reaches its "
                   "flip-flops ideally), ideal input drivers."), ""]
    return "\n".join(lines)


def plot(report, path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for gate, style in ((False, "o-"), (True, "s-")):
        rows = [r for r in report["results"] if r["gate"] == gate and r["status"] == "ok"]
        ax.plot([100 * r["pruning"] for r in rows], [1e3 * r["dynamic_w"] for r in rows], style,
                label=f"{'gated' if gate else 'ungated'}, dynamic")
    ax.set_xlabel("positions pruned (%)")
    ax.set_ylabel(f"power at {report['freq_mhz']:g} MHz (mW)")
    unit = "Block matcher" if report.get("block") == "block_matcher" else "Similarity comparator"
    ax.set_title(f"{unit}, OSU 0.18 um, OpenSTA")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


def registers_dynamic(result):
    """Dynamic power of the flip-flops and latches (OpenSTA's sequential group: clock pins,
    outputs and the nets they drive) less the clock gates' correction."""
    seq = result["groups"]["sequential"]
    return seq["internal_w"] + seq["switching_w"] - result["gating_correction_w"]


def savings(results):
    out = {}
    for pruning in sorted({r["pruning"] for r in results}):
        by = {r["gate"]: r for r in results if r["pruning"] == pruning and r["status"] == "ok"}
        if True in by and False in by:
            off, on = by[False]["dynamic_w"], by[True]["dynamic_w"]
            reg_off, reg_on = registers_dynamic(by[False]), registers_dynamic(by[True])
            out[f"{pruning:.0%}"] = {"gated_share": by[True].get("gated_share"),
                                     "ungated_w": off, "gated_w": on,
                                     "saving_percent": 100.0 * (1 - on / off),
                                     "registers_ungated_w": reg_off, "registers_gated_w": reg_on,
                                     "registers_saving_percent": 100.0 * (1 - reg_on / reg_off)}
    return out


def _arguments(parser):
    parser.add_argument("--preset", default="default",
                        help="parameter preset: default, paper, board (default: default)")
    parser.add_argument("--pruning", default=",".join(str(p) for p in PRUNING),
                        help="pruned shares of the positions, comma-separated (default "
                             "0.0,0.5,0.8)")
    parser.add_argument("--frames", type=int, default=2, help="photo frames (default 2)")
    parser.add_argument("--freq", type=float, default=100.0, help="clock, MHz (default 100)")
    parser.add_argument("--block", default="similarity_comparator",
                        choices=("similarity_comparator", "block_matcher"),
                        help="the unit measured (default similarity_comparator); "
                             "block_matcher: the whole matcher, its scorers gated per pair "
                             "(sim.bench.power_matcher), written as power_block_matcher.*")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override a parameter of the preset (repeatable); the block "
                             "matcher starts from window=256, representatives=first")
    parser.add_argument("-o", "--output", default=None,
                        help="output directory (default build/bench/power)")


def add_parser(sub):
    """Add the ``power`` subcommand to the ``focus-rtl`` subparsers ``sub``."""
    parser = sub.add_parser(
        "power", help="comparator power, gated and ungated, with OpenSTA",
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _arguments(parser)
    return parser


def run(args, argv=None):
    """Run the benchmark for parsed ``args``; returns the exit status (1 when a flow failed, 2
    for bad arguments)."""
    matcher = args.block == "block_matcher"
    try:
        params = FocusParams.preset(args.preset).with_overrides(
            [*(power_matcher.OVERRIDES if matcher else ()), *args.set])
    except ValueError as exc:
        print(f"focus-rtl power: error: {exc}", file=sys.stderr)
        return 2
    pruning = [float(v) for v in args.pruning.split(",") if v.strip()]
    for value in pruning:
        if not 0.0 <= value < 1.0:
            print(f"focus-rtl power: error: --pruning {value}: it must be in [0, 1)",
                  file=sys.stderr)
            return 2
    if args.frames < 2:
        print(f"focus-rtl power: error: --frames {args.frames}: at least 2 (the candidates "
              f"reach one frame back)", file=sys.stderr)
        return 2
    out = Path(args.output) if args.output else toolchain.BUILD_ROOT / "bench" / "power"
    out.mkdir(parents=True, exist_ok=True)
    if matcher:
        results = [power_matcher.measure(params, p, gate, out / "work_block_matcher",
                                         args.frames, args.freq, progress=progress)
                   for p in pruning for gate in (False, True)]
    else:
        results = [measure(params, p, gate, out / "work", args.frames, args.freq)
                   for p in pruning for gate in (False, True)]
    from rtl.flow.sta import sta_version
    command = (" ".join(["python -m sim.bench.power", *argv]) if argv is not None
               else " ".join(["focus-rtl", *sys.argv[1:]]))
    report = {"block": args.block, "preset": args.preset, "overrides": args.set,
              "params": params.to_dict(), "frames": args.frames,
              "freq_mhz": args.freq, "sta": sta_version(), "results": results,
              "savings": savings(results), "command": command.strip()}
    stem = "power_block_matcher" if matcher else "power"
    text = power_matcher.markdown(report, _mw) if matcher else markdown(report)
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str))
    (out / f"{stem}.md").write_text(text)
    if any(r["status"] == "ok" for r in results):
        plot(report, out / f"{stem}.png")
    print(text)
    print(f"wrote {out / stem}.md, {stem}.json, {stem}.png")
    return 0 if all(r["status"] == "ok" for r in results) else 1


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.bench.power",
                                     description=__doc__.split("\n\n")[0])
    _arguments(parser)
    argv = sys.argv[1:] if argv is None else argv
    return run(parser.parse_args(argv), argv)


if __name__ == "__main__":
    sys.exit(main())
