"""Benchmark of the Focus GEMM: measured speedup over the dense GEMM on the same hardware.

``.venv/bin/python -m sim.bench.gemm`` (``--quick`` for a smoke run in seconds). Not a test: it
measures and reports; the one thing it insists on is that the measured cycles equal the analytic
model (:mod:`golden.gemm_cycles`) in every row (it exits 1 otherwise).

The job: one layer's GEMM Y = X W with W a random int8 [D, 32] (one output column tile of the
32-wide array) on X = the tokens of a photograph panned into 4 frames of 14 x 14 patches (784
tokens, ``golden.photo``, D = 64: two 32-element chunks), and as a control the same shape of
uniform random int8 tokens. SEC keeps a fraction of the tokens (importance = a query patch's
attention), SIC concentrates the kept ones (threshold theta, ``first`` or ``mean``), and the
Focus GEMM multiplies the unique vectors; the dense GEMM is all 784 tokens with identity maps on
the same :class:`rtl.tile.focus_gemm.FocusGemm`. Both run on the RTL (Amaranth simulator by
default, no stalls) and are checked against :func:`golden.focus_gemm`.

Columns: the kept rows m, the SIC sparsity (1 - unique vectors / kept rows, over the chunks), the
measured cycles, the model's, the speedup (dense cycles / Focus cycles), and the accuracy cost:
the relative error ||Y - X_kept W|| / ||X_kept W|| (Frobenius) of the kept rows against their
exact dense result (0 for SEC alone: pruned rows simply have no output; their cost is the model's
accuracy, which a single layer cannot show).

Writes ``speedup.md`` (the table), ``results.json``, ``speedup_keep.png`` (speedup against the
pruned fraction, per threshold), ``speedup_scatter.png`` (against ``scatter_rows``, over the dense
GEMM at the default width) and ``speedup_sparsity.png`` (against the total sparsity, beside the
ideal) into ``build/bench/gemm/`` (``-o`` to change; ``--replot`` redraws them from
``results.json``); progress lines go to stderr.

The job has only two chunks (K = 64), so the last chunk's scatter, which the next chunk would
hide in a longer K, is a visible share of every row; ``focus-rtl estimate`` applies the same
(exact) model to whole layers.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import golden
from golden.gemm import dense_inputs, focus_gemm
from golden.gemm_cycles import dense_gemm_cycles, focus_gemm_cycles
from rtl.flow.toolchain import BUILD_ROOT
from rtl.params import FocusParams

from ..gemm import focus_gemm as rtl_focus_gemm
from .report import progress_printer

__all__ = ["main", "run_bench", "write_report", "SETUPS", "PLOTS"]

PLOTS = ("speedup_keep.png", "speedup_scatter.png", "speedup_sparsity.png")

#: name -> (frames, grid, D, keep fractions, thetas (None: SEC only), representatives,
#:          scatter_rows of the sweep, params)
SETUPS = {
    "full": dict(frames=4, grid=14, D=64, N=32, keeps=(1.0, 0.5, 0.25, 0.1),
                 thetas=(None, 0.95, 0.9, 0.85), reprs=("first", "mean"),
                 sweep_keeps=(1.0, 0.25), sweep_rows=(1, 2, 5), control_keeps=(1.0, 0.25),
                 params=FocusParams()),
    "quick": dict(frames=2, grid=4, D=16, N=8, keeps=(1.0, 0.5), thetas=(None, 0.9),
                  reprs=("first",), sweep_keeps=(1.0,), sweep_rows=(1, 2), control_keeps=(1.0,),
                  params=FocusParams(dim=8, tile=32, window=64)),
}

progress = progress_printer("bench_gemm")


def _data(setup, kind):
    """(tokens [M, D] int8, scores [R, M]) of the photograph or the random control."""
    frames, grid, D = setup["frames"], setup["grid"], setup["D"]
    x, _ = golden.photo.photo_tokens(frames=frames, grid=grid, dim=D)
    attention = golden.photo.photo_attention(frames=frames, grid=grid, dim=D, queries=16, seed=1)
    scores = golden.scores_from_fp16(attention.astype(np.float16))
    if kind == "random":
        x = np.random.default_rng(7).integers(-128, 128, x.shape, dtype=np.int8)
    return x, scores


def _concentrate(x, scores, keep, theta, representative, setup, params):
    """(kept tokens, maps, uniques): SEC's top-k, then SIC on the kept tokens (identity maps for
    SEC alone)."""
    grid = setup["grid"]
    k = max(1, round(keep * x.shape[0]))
    mask = golden.sec(scores, k)[0]
    kept = x[mask]
    if theta is None:
        maps, uniques = dense_inputs(kept, params.dim)
    else:
        maps, uniques = golden.sic(kept, np.flatnonzero(mask), frame_stride=grid * grid,
                                   row_stride=grid, theta_q=golden.theta_q(theta),
                                   tile=params.tile, window=params.window,
                                   representative=representative, dim=params.dim)
    return kept, maps, uniques


def _measure(uniques, maps, w, params, simulator):
    stats = {}
    y = rtl_focus_gemm(uniques, maps, w, params=params, simulator=simulator, stats=stats)
    if not np.array_equal(y, focus_gemm(uniques, maps, w)):
        raise AssertionError("the RTL's Y differs from golden.focus_gemm")
    return y, stats


def run_bench(setup, simulator="amaranth", out=None):
    """Run every row of ``setup`` (a :data:`SETUPS` entry); returns the list of row dicts and
    writes the report into ``out`` when given."""
    base = setup["params"]
    rows = []
    dense = {}
    w = np.random.default_rng(3).integers(-128, 128, (setup["D"], setup["N"]), dtype=np.int8)

    def dense_cycles(x, params):
        key = params.scatter_rows
        if key not in dense:
            maps, uniques = dense_inputs(x, params.dim)
            _, stats = _measure(uniques, maps, w, params, simulator)
            model = dense_gemm_cycles(x.shape[0], x.shape[1], w.shape[1], params)
            progress(f"dense, scatter_rows {key}: {stats['cycles']} cycles (model {model})")
            dense[key] = (stats["cycles"], model)
        return dense[key]

    def row(kind, keep, theta, representative, params, x, scores):
        kept, maps, uniques = _concentrate(x, scores, keep, theta, representative, setup, params)
        y, stats = _measure(uniques, maps, w, params, simulator)
        exact = kept.astype(np.int64) @ w
        error = float(np.linalg.norm(y - exact) / max(np.linalg.norm(exact), 1e-300))
        model = focus_gemm_cycles(maps, w.shape[1], params)
        base_cycles, base_model = dense_cycles(x, params)
        chunks = maps.shape[1]
        record = {
            "data": kind, "keep": keep, "theta": theta,
            "repr": representative if theta is not None else "-",
            "scatter_rows": params.scatter_rows, "m": int(kept.shape[0]),
            "sparsity": 1 - stats["vectors"] / max(1, kept.shape[0] * chunks),
            "cycles": stats["cycles"], "model": model, "dense": base_cycles,
            "dense_model": base_model, "speedup": base_cycles / stats["cycles"],
            "error": error,
        }
        progress(f"{kind} keep {keep:.0%} theta {theta} {record['repr']} rows "
                 f"{params.scatter_rows}: {stats['cycles']} cycles (model {model}), speedup "
                 f"{record['speedup']:.2f}, error {error:.4f}")
        rows.append(record)

    x, scores = _data(setup, "photo")
    for keep in setup["keeps"]:
        for theta in setup["thetas"]:
            for representative in (setup["reprs"] if theta is not None else ("first",)):
                row("photo", keep, theta, representative, base, x, scores)
    for sr in setup["sweep_rows"]:
        if sr == base.scatter_rows:
            continue
        for keep in setup["sweep_keeps"]:
            for theta in (None, 0.9):
                row("photo", keep, theta, "first", base.replace(scatter_rows=sr), x, scores)
    xr, _ = _data(setup, "random")
    for keep in setup["control_keeps"]:
        for theta in (None, 0.9):
            row("random", keep, theta, "first", base, xr, scores)
    if out is not None:
        write_report(rows, setup, simulator, Path(out))
    return rows


def _table(rows):
    header = ["data", "keep", "theta", "repr", "scatter rows", "m", "SIC sparsity", "cycles",
              "model", "dense", "speedup", "rel. error"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * 5 + "---:|" * 7]
    for r in rows:
        theta = "SEC only" if r["theta"] is None else f"{r['theta']:.2f}"
        lines.append(
            f"| {r['data']} | {r['keep']:.0%} | {theta} | {r['repr']} | {r['scatter_rows']} | "
            f"{r['m']} | {r['sparsity']:.1%} | {r['cycles']} | {r['model']} | {r['dense']} | "
            f"{r['speedup']:.2f} | {r['error']:.4f} |")
    return "\n".join(lines) + "\n"


def write_report(rows, setup, simulator, out):
    out.mkdir(parents=True, exist_ok=True)
    p = setup["params"]
    text = (f"# Focus GEMM speedup\n\nFocusGemm {p.dim}x{p.dim}, output tile {p.tile} rows, "
            f"{setup['frames']} frames of {setup['grid']}x{setup['grid']} tokens, D = "
            f"{setup['D']}, N = {setup['N']}, simulator {simulator}, no stalls. Speedup = dense "
            f"cycles (all tokens, identity maps, same hardware) / Focus cycles.\n\n"
            + _table(rows))
    (out / "speedup.md").write_text(text)
    (out / "results.json").write_text(json.dumps({"simulator": simulator, "rows": rows},
                                                 indent=1) + "\n")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    base = [r for r in rows if r["data"] == "photo" and r["scatter_rows"] == p.scatter_rows]
    for theta in setup["thetas"]:
        for representative in (setup["reprs"] if theta is not None else ("-",)):
            sel = sorted((r for r in base if r["theta"] == theta and r["repr"] == representative),
                         key=lambda r: r["keep"])
            label = "SEC only" if theta is None else f"SIC {theta:.2f} {representative}"
            ax.plot([1 - r["keep"] for r in sel], [r["speedup"] for r in sel], marker="o",
                    label=label, linestyle="-" if representative != "mean" else "--")
    ax.set_xlabel("SEC pruned fraction (1 - keep)")
    ax.set_ylabel("speedup over the dense GEMM (measured)")
    ax.set_title(f"FocusGemm {p.dim}x{p.dim}, scatter_rows {p.scatter_rows}, photograph")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "speedup_keep.png", dpi=120)
    plt.close(fig)

    # The scatter sweep against one baseline, the dense GEMM at the default scatter_rows, so the
    # curves show what the scatter width buys (each row's own dense job changes with it too).
    reference = next(r["dense"] for r in base)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    sweep = [r for r in rows if r["data"] == "photo" and r["repr"] in ("first", "-")
             and r["keep"] in setup["sweep_keeps"] and r["theta"] in (None, 0.9)]
    for keep in setup["sweep_keeps"]:
        for theta in (None, 0.9):
            sel = sorted((r for r in sweep if r["keep"] == keep and r["theta"] == theta),
                         key=lambda r: r["scatter_rows"])
            label = f"keep {keep:.0%}, " + ("SEC only" if theta is None else f"SIC {theta}")
            ax.plot([r["scatter_rows"] for r in sel], [reference / r["cycles"] for r in sel],
                    "o-", label=label)
    ax.set_xlabel("scatter_rows (rows of 32 accumulators)")
    ax.set_ylabel(f"dense cycles at scatter_rows {p.scatter_rows} / Focus cycles")
    ax.set_xticks(sorted(setup["sweep_rows"]))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "speedup_scatter.png", dpi=120)
    plt.close(fig)

    # Speedup against the total sparsity 1 - vectors / all tokens, beside the ideal 1 / (1 - s).
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for kind, marker in (("photo", "o"), ("random", "x")):
        sel = [r for r in rows if r["data"] == kind and r["scatter_rows"] == p.scatter_rows]
        total = [1 - r["keep"] * (1 - r["sparsity"]) for r in sel]
        ax.plot(total, [r["speedup"] for r in sel], marker, linestyle="none", label=kind)
    grid = np.linspace(0, 0.96, 100)
    ax.plot(grid, 1 / (1 - grid), "k:", label="ideal 1 / (1 - s)")
    ax.set_xlabel("total sparsity s = 1 - unique vectors / all tokens")
    ax.set_ylabel("speedup over the dense GEMM (measured)")
    ax.set_ylim(0, 12)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "speedup_sparsity.png", dpi=120)
    plt.close(fig)
    for name in ("speedup.md", "results.json", *PLOTS):
        progress(f"wrote {out / name}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.bench.gemm",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small shape, in seconds")
    parser.add_argument("--simulator", choices=("amaranth", "icarus", "verilator"),
                        default="amaranth")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="output directory (default: build/bench/gemm, or gemm-quick)")
    parser.add_argument("--replot", action="store_true",
                        help="redraw the table and plots from the output's results.json")
    args = parser.parse_args(argv)
    name = "quick" if args.quick else "full"
    out = Path(args.output) if args.output else BUILD_ROOT / "bench" / (
        "gemm-quick" if args.quick else "gemm")
    if args.replot:
        record = json.loads((out / "results.json").read_text())
        rows = record["rows"]
        write_report(rows, SETUPS[name], record["simulator"], out)
    else:
        rows = run_bench(SETUPS[name], args.simulator, out)
    print((out / "speedup.md").read_text())
    bad = [r for r in rows if r["cycles"] != r["model"] or r["dense"] != r["dense_model"]]
    if bad:
        print(f"error: {len(bad)} row(s) where the measured cycles differ from the model",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
