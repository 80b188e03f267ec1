"""Benchmark of SEC's analyzer and top-k selector: measured cycles against the model and the spec's
targets, and FPGA area and Fmax (not a test: nothing here is asserted).

Run ``.venv/bin/python -m sim.bench.sec`` (``--help`` for options). For the ``default`` (a = 4)
and ``paper`` (a = 32) presets, both with tokens = 1024:

- the analyzer, R = 64 rows, both dataflows, M in {64, 256, 1024}: measured cycles (first score
  beat in to last vector beat out, in the Amaranth simulator, no stalls), the model
  ``golden.cycles.importance_cycles``, the spec's bound (one beat per cycle and the vector
  complete 3 cycles after the last beat, then ceil(M/a) readout beats), and the cycles from the
  last beat to ``done``;
- the selector, both sorters, M in {64, 256, 1024} and keep 10 %, 40 %, 90 % of M (and the
  bubble sorter at M = 1024 with k = 0, 1, 3a, 4a, where its target is tight): measured
  cycles (first vector beat in to last mask beat out), ``golden.cycles.topk_cycles``, the spec's
  targets, the paper's cost M*k/a and the ratio radix / paper. For the bubble sorter a lower
  bound explains the cases where the target cannot be met: P = ceil(k/a) passes of M scores at
  one score per cycle, and the ceil(M/a) mask beats, which can only leave once the last pass has
  set the threshold, take at least P*M + ceil(M/a) cycles;
- with ``rtl.flow.synth``: the iCE40 UP5K and ECP5-85F LUT/FF/BRAM counts of each block (the block
  alone, without the timing harness) and the placed design's Fmax.

Writes ``cycles.md``, ``synth.md``, ``bench.json`` and ``cycles.png`` to ``--out``
(default ``build/bench/sec``) and prints the tables, with progress lines on stderr.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import golden
from golden.cycles import importance_cycles, topk_cycles, topk_paper, topk_target
from rtl.flow import toolchain
from rtl.params import FocusParams

from ..sec import importance, topk_mask

PRESETS = ("default", "paper")
SIZES = (64, 256, 1024)
KEEPS = (10, 40, 90)
ROWS = 64
SYNTH_BLOCKS = (("importance_analyzer", "bubble"), ("topk_selector", "bubble"),
                ("topk_selector", "radix"))
SYNTH_TARGETS = ("ice40", "ecp5")


def progress(text):
    print(text, file=sys.stderr, flush=True)


def cdiv(a, b):
    return -(-a // b)


def bubble_bound(M, k, a):
    """At least P*M cycles of passes, then ceil(M/a) mask beats (module doc)."""
    return cdiv(min(k, M), a) * M + cdiv(M, a)


def analyzer_row(preset, p, scores, mode):
    """One analyzer job on ``scores`` [R, M]: measured, model, target and the check."""
    R, M = scores.shape
    stats = {}
    got = importance(scores, mode, params=p, stats=stats)
    beats = R * cdiv(M, p.lanes) if mode == "spatial" else M * cdiv(R, p.lanes)
    return {
        "preset": preset, "lanes": p.lanes, "M": M, "R": R, "mode": mode,
        "beats": beats, "measured": stats["cycles"],
        "model": importance_cycles(R, M, p.lanes, mode),
        "target": beats + 3 + cdiv(M, p.lanes), "done_latency": stats["done_latency"],
        "correct": bool((got == golden.importance(scores)).all()),
    }


def measure_analyzer(preset, p, rng):
    rows = []
    for M in SIZES:
        scores = rng.integers(0, 1 << 16, (ROWS, M))
        for mode in ("spatial", "temporal"):
            start = time.monotonic()
            row = analyzer_row(preset, p, scores, mode)
            rows.append(row)
            progress(f"  analyzer {preset} M={M} {mode}: {row['measured']} cycles "
                     f"({time.monotonic() - start:.1f} s)")
    return rows


def selector_row(preset, p, s, k, keep_pct, sorters=("bubble", "radix")):
    """One selector job (the vector ``s``, keep ``k``) with each sorter."""
    a, M = p.lanes, s.size
    row = {"preset": preset, "lanes": a, "M": M, "keep_pct": keep_pct, "k": k,
           "paper": topk_paper(M, k, a)}
    for sorter in sorters:
        stats = {}
        got = topk_mask(s, k, params=p.replace(sorter=sorter), stats=stats)
        row[sorter] = {
            "measured": stats["cycles"],
            "model": topk_cycles(M, k, a, p.score_bits, sorter),
            "target": topk_target(M, k, a, p.score_bits, sorter),
            "correct": bool((got == golden.topk_mask(s, k)).all()),
        }
    if "bubble" in row:
        row["bubble"]["bound"] = bubble_bound(M, k, a)
    return row


def measure_selector(preset, p, rng):
    rows = []
    for M in SIZES:
        s = rng.integers(0, 1 << 16, M)
        for pct in KEEPS:
            start = time.monotonic()
            row = selector_row(preset, p, s, round(M * pct / 100), pct)
            rows.append(row)
            progress(f"  bubble/radix {preset} M={M} k={row['k']}: {row['bubble']['measured']}"
                     f"/{row['radix']['measured']} cycles ({time.monotonic() - start:.1f} s)")
    return rows


def edge_keeps(a):
    """k = 0, 1, 3a and 4a: where the bubble target can and cannot be met."""
    return sorted({0, 1, 3 * a, 4 * a})


def measure_edges(preset, p, rng):
    """M = 1024 with k = 0, 1, 3a and 4a: where the bubble target can and cannot be met."""
    M = SIZES[-1]
    s = rng.integers(0, 1 << 16, M)
    rows = []
    for k in edge_keeps(p.lanes):
        rows.append(selector_row(preset, p, s, k, None, sorters=("bubble",)))
        progress(f"  bubble {preset} M={M} k={k}: {rows[-1]['bubble']['measured']} cycles")
    return rows


# ---- focus-rtl bench (sim.bench.suite)
# ------------------------------------------------------------

def plan(preset, p, quick=False, seed=1):
    """The jobs of ``focus-rtl bench`` for one parameter set: a list of ``(label, run)``, where
    ``run()`` returns ``(kind, row)`` with kind ``"analyzer"`` or ``"selector"``.

    Full: M in {64, 256, 1024} (up to ``p.tokens``), R = 64, both dataflows; keep 10, 40, 90 %
    with both sorters; the bubble edges at the largest M. Quick: the smallest M (at most 64),
    R = 8, keep 40 %."""
    rng = np.random.default_rng(seed)
    sizes = [M for M in SIZES if M <= p.tokens] or [p.tokens]
    rows, keeps = (8, (40,)) if quick else (ROWS, KEEPS)
    if quick:
        sizes = [min(sizes[0], 64)]
    top = 1 << p.score_bits
    jobs = []
    for M in sizes:
        scores = rng.integers(0, top, (rows, M))
        for mode in ("spatial", "temporal"):
            jobs.append((f"sec importance M={M} R={rows} {mode}",
                         lambda x=scores, m=mode: ("analyzer", analyzer_row(preset, p, x, m))))
    for M in sizes:
        s = rng.integers(0, top, M)
        for pct in keeps:
            k = round(M * pct / 100)
            jobs.append((f"sec top-k M={M} k={pct}%",
                         lambda x=s, k=k, pct=pct: ("selector", selector_row(preset, p, x, k,
                                                                            pct))))
    if not quick:
        M = sizes[-1]
        s = rng.integers(0, top, M)
        for k in edge_keeps(p.lanes):
            if k <= M:
                jobs.append((f"sec top-k bubble M={M} k={k}",
                             lambda x=s, k=k: ("selector", selector_row(preset, p, x, k, None,
                                                                        ("bubble",)))))
    return jobs


def summary_rows(kind, row):
    """The ``focus-rtl bench`` summary rows of one record: block, job, measured, model, whether
    the model is exact, and the physical bound (the input at one beat per cycle for the
    analyzer; the vector in and the mask out, ceil(M/a) beats each, for the selector, whose first
    mask beat needs the last score when 0 < k < M)."""
    a, M = row["lanes"], row["M"]
    if kind == "analyzer":
        return [{"block": "importance_analyzer", "job": f"M={M} R={row['R']} {row['mode']}",
                 "measured": row["measured"], "model": row["model"], "model_kind": "exact",
                 "bound": row["beats"], "correct": row["correct"]}]
    keep = f"k={row['k']}" + (f" ({row['keep_pct']} %)" if row["keep_pct"] is not None else "")
    # With k = 0 or k >= M the mask needs no score: only the mask beats bound the job.
    bound = (2 if 0 < row["k"] < M else 1) * cdiv(M, a)
    return [{"block": f"topk_selector ({sorter})", "job": f"M={M} {keep}",
             "measured": row[sorter]["measured"], "model": row[sorter]["model"],
             "model_kind": "exact", "bound": bound, "correct": row[sorter]["correct"]}
            for sorter in ("bubble", "radix") if sorter in row]


def write(records, out):
    """Write ``cycles.md``, ``cycles.png`` and ``bench.json`` of ``records`` (``(kind, row)``
    pairs from :func:`plan`) to ``out``; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    analyzer = [row for kind, row in records if kind == "analyzer"]
    selector = [row for kind, row in records if kind == "selector"]
    (out / "cycles.md").write_text(cycles_markdown(analyzer, selector))
    paths = [out / "cycles.md"]
    if analyzer and any(r["keep_pct"] is not None for r in selector):
        plot(analyzer, selector, out / "cycles.png")
        paths.append(out / "cycles.png")
    (out / "bench.json").write_text(json.dumps({"analyzer": analyzer, "selector": selector},
                                               indent=1))
    return paths + [out / "bench.json"]


def _met(measured, target, bound=None):
    if measured <= target:
        return "yes"
    if bound is not None and bound > target:
        return "no: bound > target"
    return "**no**"


def cycles_markdown(analyzer, selector):
    lines = [
        "## Importance analyzer (R rows, no stalls, vector read out)",
        "",
        ("Target: one beat per cycle, the vector complete 3 cycles after the last beat, then "
        "ceil(M/a) readout beats: beats + 3 + ceil(M/a)."),
        "",
        ("| preset | a | M | R | mode | beats | measured | model | target | met "
        "| last beat to done | = golden |"),
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---|",
    ]
    for r in analyzer:
        lines.append(f"| {r['preset']} | {r['lanes']} | {r['M']} | {r['R']} | {r['mode']} "
                     f"| {r['beats']} "
                     f"| {r['measured']} | {r['model']} | {r['target']} "
                     f"| {_met(r['measured'], r['target'])} | {r['done_latency']} "
                     f"| {'yes' if r['correct'] else '**NO**'} |")
    lines += [
        "",
        "## Top-k selector (vector on i_stream, no stalls)",
        "",
        ("Targets: bubble floor(1.05 * ceil(k/a) * M) + 64; radix (ceil(16/4) + 1) * ceil(M/a) "
        "+ 64. "
        "Bound: ceil(k/a) * M + ceil(M/a) (the passes, then the mask beats, which need the "
        "last pass's threshold). Paper: M*k/a."),
        "",
        ("| preset | a | M | keep | k | bubble | model | target | bound | met | radix | model "
        "| target | met | paper M*k/a | radix / paper | = golden |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in (r for r in selector if r["keep_pct"] is not None):
        b, x = r["bubble"], r["radix"]
        ok = "yes" if b["correct"] and x["correct"] else "**NO**"
        lines.append(
            f"| {r['preset']} | {r['lanes']} | {r['M']} | {r['keep_pct']} % | {r['k']} "
            f"| {b['measured']} | {b['model']} | {b['target']} | {b['bound']} "
            f"| {_met(b['measured'], b['target'], b['bound'])} "
            f"| {x['measured']} | {x['model']} | {x['target']} "
            f"| {_met(x['measured'], x['target'])} "
            f"| {r['paper']} | {x['measured'] / r['paper']:.3f} | {ok} |")
    lines += [
        "",
        "### The bubble sorter where its target is tight (the largest M, small k)",
        "",
        ("The mask needs ceil(M/a) beats after the last pass, so the target cannot be met when "
        "ceil(M/a) exceeds 0.05 * ceil(k/a) * M + 64 (the bound column is above the target)."),
        "",
        "| preset | a | M | k | passes | bubble | model | target | bound | met | = golden |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in (r for r in selector if r["keep_pct"] is None):
        b = r["bubble"]
        lines.append(
            f"| {r['preset']} | {r['lanes']} | {r['M']} | {r['k']} | {cdiv(r['k'], r['lanes'])} "
            f"| {b['measured']} | {b['model']} | {b['target']} | {b['bound']} "
            f"| {_met(b['measured'], b['target'], b['bound'])} "
            f"| {'yes' if b['correct'] else '**NO**'} |")
    return "\n".join(lines) + "\n"


def run_synth(presets, work_root):
    from rtl.flow.synth import synth_block

    results = []
    for preset in presets:
        for block, sorter in SYNTH_BLOCKS:
            p = FocusParams.preset(preset).replace(sorter=sorter)
            for target in SYNTH_TARGETS:
                start = time.monotonic()
                r = synth_block(block, target, p, work_root=work_root)
                row = {"preset": preset, "block": block, "sorter": sorter, "target": target,
                       "status": r["status"], "error": r.get("error"),
                       "block_counts": r.get("block"), "fmax_mhz": r.get("fmax_mhz"),
                       "device": r.get("device_name")}
                results.append(row)
                counts = r.get("block") or {}
                progress(f"  synth {preset} {block} ({sorter}) {target}: {r['status']}, "
                         f"{counts.get('lut')} LUT, {counts.get('ff')} FF, "
                         f"{counts.get('bram')} BRAM, Fmax {r.get('fmax_mhz')} MHz "
                         f"({time.monotonic() - start:.1f} s)")
    return results


def synth_markdown(results):
    lines = [
        "## FPGA area and Fmax",
        "",
        ("LUT/FF/BRAM: the block alone (Yosys, module boundary kept). Fmax: nextpnr on the placed "
        "design inside rtl.flow.synth's timing harness. iCE40 UP5K (SB_RAM40_4K: 30 available), "
        "ECP5 LFE5U-85F (DP16KD: 208 available)."),
        "",
        "| preset | block | sorter | target | status | LUT | FF | BRAM | Fmax (MHz) |",
        "|---|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in results:
        c = r["block_counts"] or {}
        sorter = r["sorter"] if r["block"] == "topk_selector" else "-"
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {r['error']}"
        fmax = f"{r['fmax_mhz']:.1f}" if r["fmax_mhz"] else "-"
        lines.append(f"| {r['preset']} | {r['block']} | {sorter} | {r['target']} | {status} "
                     f"| {c.get('lut', '-')} | {c.get('ff', '-')} | {c.get('bram', '-')} "
                     f"| {fmax} |")
    return "\n".join(lines) + "\n"


def plot(analyzer, selector, path):
    """One panel per preset for the selector (measured, model, target, paper), and one for the
    analyzer (measured, model, target)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    presets = list(dict.fromkeys(r["preset"] for r in selector if r["keep_pct"] is not None))
    sizes = sorted({r["M"] for r in analyzer + selector})
    fig, axes = plt.subplots(1, len(presets) + 1, figsize=(6 * (len(presets) + 1), 5),
                             squeeze=False)
    colors = {10: "tab:blue", 40: "tab:orange", 90: "tab:green"}
    for ax, preset in zip(axes[0], presets, strict=False):
        rows = [r for r in selector if r["preset"] == preset and r["keep_pct"] is not None]
        a = rows[0]["lanes"]
        for pct in dict.fromkeys(r["keep_pct"] for r in rows):
            sel = [r for r in rows if r["keep_pct"] == pct]
            Ms = [r["M"] for r in sel]
            c = colors.get(pct, "tab:gray")
            ax.plot(Ms, [r["bubble"]["measured"] for r in sel], "o-", color=c,
                    label=f"bubble, keep {pct} %")
            ax.plot(Ms, [r["bubble"]["model"] for r in sel], "x", color="white", ms=5)
            ax.plot(Ms, [r["bubble"]["target"] for r in sel], "--", color=c, alpha=0.6)
            ax.plot(Ms, [r["paper"] for r in sel], ":", color=c, alpha=0.8)
        sel = [r for r in rows if r["keep_pct"] == rows[0]["keep_pct"]]
        ax.plot([r["M"] for r in sel], [r["radix"]["measured"] for r in sel], "s-",
                color="black", label="radix (any keep)")
        ax.plot([r["M"] for r in sel], [r["radix"]["model"] for r in sel], "x", color="white",
                ms=5, label="model (white x)")
        ax.plot([r["M"] for r in sel], [r["radix"]["target"] for r in sel], "--", color="black",
                alpha=0.6)
        ax.set_title(f"top-k selector, {preset} preset (a = {a})\n"
                     "solid: measured, dashed: spec target, dotted: paper M*k/a")
        ax.legend(fontsize=8)
    ax = axes[0][-1]
    for preset, marker in zip(presets, "o^", strict=False):
        for mode, c in (("spatial", "tab:purple"), ("temporal", "tab:brown")):
            sel = [r for r in analyzer if r["preset"] == preset and r["mode"] == mode]
            if not sel:
                continue
            a = sel[0]["lanes"]
            ax.plot([r["M"] for r in sel], [r["measured"] for r in sel], marker + "-", color=c,
                    label=f"{mode}, {preset} (a = {a})", alpha=0.8)
            ax.plot([r["M"] for r in sel], [r["model"] for r in sel], "x", color="white", ms=5)
            ax.plot([r["M"] for r in sel], [r["target"] for r in sel], "--", color=c, alpha=0.5)
    rows_used = ", ".join(str(R) for R in sorted({r["R"] for r in analyzer}))
    ax.set_title(f"importance analyzer, R = {rows_used} rows, vector read out\n"
                 "solid: measured, dashed: target (beats + 3 + ceil(M/a))")
    ax.legend(fontsize=8)
    for ax in axes[0]:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sizes, [str(M) for M in sizes])
        ax.set_xlabel("M (tokens)")
        ax.set_ylabel("cycles")
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.bench.sec", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--presets", default=",".join(PRESETS),
                        help="comma-separated presets (default: default,paper)")
    parser.add_argument("--out", default=str(toolchain.BUILD_ROOT / "bench" / "sec"),
                        help="output directory (default: build/bench/sec)")
    parser.add_argument("--no-synth", action="store_true", help="skip the FPGA runs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--replot", action="store_true",
                        help="only redraw cycles.png from the bench.json in --out")
    args = parser.parse_args(argv)
    presets = [name.strip() for name in args.presets.split(",") if name.strip()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        data = json.loads((out / "bench.json").read_text())
        plot(data["analyzer"], data["selector"], out / "cycles.png")
        progress(f"wrote {out}/cycles.png")
        return
    toolchain.apply()
    rng = np.random.default_rng(args.seed)

    analyzer, selector = [], []
    for preset in presets:
        p = FocusParams.preset(preset)
        progress(f"{preset} preset ({p.tag}): analyzer")
        analyzer += measure_analyzer(preset, p, rng)
        progress(f"{preset} preset: selector")
        selector += measure_selector(preset, p, rng)
        selector += measure_edges(preset, p, rng)
    cycles_md = cycles_markdown(analyzer, selector)
    (out / "cycles.md").write_text(cycles_md)
    plot(analyzer, selector, out / "cycles.png")
    print(cycles_md)

    synth = []
    if not args.no_synth:
        progress("synthesis (rtl.flow.synth)")
        synth = run_synth(presets, out / "synth-work")
        synth_md = synth_markdown(synth)
        (out / "synth.md").write_text(synth_md)
        print(synth_md)
    (out / "bench.json").write_text(json.dumps(
        {"analyzer": analyzer, "selector": selector, "synth": synth}, indent=1))
    progress(f"wrote {out}/cycles.md, cycles.png, bench.json"
             + ("" if args.no_synth else ", synth.md"))


if __name__ == "__main__":
    main()
