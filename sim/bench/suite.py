"""``focus-rtl bench``: measured cycles of every block and of the top against the analytic model
(:mod:`golden.cycles`) and the physical bounds, as markdown tables and PNG plots (spec 7).

It gathers :mod:`sim.bench.sec` (importance analyzer, top-k selector), :mod:`sim.bench.offsets`
(offset encoder and decoder, bits per position), :mod:`sim.bench.sic` (block matcher) and a
FocusUnit end-to-end run (:func:`sim.focus`, when it exists), all for one parameter set (a preset
with ``--set`` overrides) in the Amaranth simulator with no stalls. Each module plans its jobs
(``plan``), this command runs them with a progress line each, and each module writes its own
tables (``write``); the summary joins one row per job.

Exit status: 0; 2 on bad arguments; 1 when a job raised (the other jobs still run and their
tables are written). A result that differs from golden is marked in the tables.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from rtl.flow.cli_args import BadArgs, add_param_arguments, fail, params_from, split_list
from rtl.flow.toolchain import display_path

__all__ = ["add_parser", "run", "MODULES", "summary_markdown"]

MODULES = ("sec", "offsets", "sic", "focus")

_EPILOG = """\
Output, in build/bench/<preset>/ (-o to change):
  summary.md    one table: block, job, measured cycles, model cycles (golden.cycles), what the
                model is (exact, estimate, upper bound, ...), the physical bound and
                measured / bound; summary.png plots measured / bound per job; summary.json.
  sec/          cycles.md, cycles.png, bench.json: analyzer and top-k selector (both sorters).
  offsets/      bits.md, bits.png, cycles.md, README.md: offset code size and codec cycles.
  sic/          cycles.md, cycles.png: block matcher cycles per tile.
  focus/        focus.md: FocusUnit end to end (needs sim.focus).

Physical bounds (cycles, one beat per cycle on the busiest port):
  importance analyzer   the score beats: R*ceil(M/a) (spatial) or M*ceil(R/a) (temporal)
  top-k selector        2*ceil(M/a): the vector in, then the mask out (its first beat needs
                        the last score); ceil(M/a) when k = 0 or k >= M
  offset codec          max(ceil(M/a) mask beats, ceil(nbits/word_bits) code words)
  block matcher         S: one token per cycle
  focus unit            SEC's score beats + one token per cycle for every kept token and
                        sub-vector column

Synthesis (area, Fmax) is `focus-rtl synth`; the SIC gating and accuracy studies are
`python -m sim.bench.sic`.

examples:
  focus-rtl bench --quick                       # a few seconds
  focus-rtl bench --preset paper --only sec,sic
  focus-rtl bench --set tokens=256 --set lanes=8
"""


def add_parser(sub):
    """Add the ``bench`` subcommand to the ``focus-rtl`` subparsers ``sub``."""
    parser = sub.add_parser(
        "bench", help="measured cycles against the model and the bounds (tables, plots)",
        description="Measured cycles of every block and of the top against the analytic model "
                    "and the physical bounds, as markdown tables and PNG plots.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_param_arguments(parser)
    parser.add_argument("--quick", action="store_true",
                        help="a small subset of the jobs (seconds)")
    parser.add_argument("--only", action="append", metavar="LIST",
                        help=f"only these modules (comma-separated or repeated): "
                             f"{', '.join(MODULES)} (default: all)")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="output directory (default: build/bench/<preset>)")
    parser.add_argument("--seed", type=int, default=1, help="random data seed (default: 1)")
    return parser


def _modules(args):
    names = split_list(args.only)
    for name in names:
        if name not in MODULES:
            raise BadArgs(f"--only: unknown module {name!r}: modules are {', '.join(MODULES)}")
    return [m for m in MODULES if m in names] if names else list(MODULES)


# ---- the FocusUnit end to end ---------------------------------------------------------------

def _focus_plan(p, quick=False, seed=1):
    """FocusUnit jobs on a photograph: attention of R query patches (fp16 patterns) as the
    scores, the patches' int8 features as the tokens (2 sub-vector columns; quick: 1), the frame
    grid fitted to the window (FS = grid**2, HS = grid), theta 0.9. Full: keep 25 % spatial and
    50 % temporal, up to 4 frames within ``p.tokens``; quick: one frame of at most 8 x 8, keep
    40 %, R = 4."""
    import numpy as np

    import golden

    from .. import focus
    from .sic import photo_grid

    grid = photo_grid(p.window)
    if quick:
        grid = min(grid, 8, max(1, int(np.sqrt(p.tokens))))
        frames, rows, columns, cases = 1, 4, 1, [(40, "spatial")]
    else:
        frames = max(1, min(4, p.tokens // (grid * grid)))
        while frames * grid * grid > p.tokens:
            grid -= 1
        rows, columns, cases = 16, 2, [(25, "spatial"), (50, "temporal")]
    M = frames * grid * grid
    theta = min(int(0.9 * (1 << p.theta_bits) + 0.5), (1 << p.theta_bits) - 1)
    settings = dict(word_bits=p.word_bits, schemes=p.offset_schemes, frame_stride=grid * grid,
                    row_stride=grid, theta_q=theta, theta_bits=p.theta_bits, tile=p.tile,
                    window=p.window, dim=p.dim)
    state = {}

    def data():
        if not state:
            attention = golden.photo.photo_attention(frames=frames, grid=grid, queries=rows,
                                                     seed=seed)
            scores = golden.scores_from_fp16(attention) >> max(0, 16 - p.score_bits)
            tokens, _ = golden.photo.photo_tokens(frames=frames, grid=grid, dim=columns * p.dim,
                                                  elem_bits=p.elem_bits, seed=seed)
            state.update(scores=scores, tokens=tokens)
        return state["scores"], state["tokens"]

    def one(pct, mode):
        scores, tokens = data()
        keep = max(1, round(M * pct / 100))
        stats = {}
        got = focus(scores, tokens, keep, mode=mode, params=p, stats=stats, **settings)
        want = golden.focus(scores, tokens, keep, mode=mode, **settings)
        same = all(np.array_equal(g, w) for g, w in zip(got[:4], want[:4], strict=True)) and all(
            np.array_equal(g, w) for g, w in zip(got[4], want[4], strict=True))
        return "focus", {"M": M, "R": rows, "lanes": p.lanes, "keep": keep, "keep_pct": pct,
                         "mode": mode, "columns": columns, "comparators": p.comparators,
                         "kept": int(got[0].sum()), "nbits": int(got[2]),
                         "stats": {k: v for k, v in stats.items() if k != "registers"},
                         "correct": bool(same)}

    return [((f"focus unit M={M} R={rows} keep={pct}% {mode}, {columns} column"
             f"{'s' if columns > 1 else ''}"), lambda pct=pct, mode=mode: one(pct, mode))
            for pct, mode in cases]


def _cdiv(a, b):
    return -(-a // b)


def _score_beats(row):
    M, R, a = row["M"], row["R"], row["lanes"]
    return R * _cdiv(M, a) if row["mode"] == "spatial" else M * _cdiv(R, a)


def _focus_rows(kind, row):
    """Summary rows of a FocusUnit job: its SEC job and each SIC job from the unit's counters
    (SEC has no golden.cycles model; a SIC job is compared with :func:`golden.cycles.sic_cycles`,
    the block matcher's model and the register before it), and the whole run (host bus traffic
    between the jobs included)."""
    from golden.cycles import sic_cycles

    st, n = row["stats"], row["kept"]
    job = f"M={row['M']} R={row['R']} k={row['keep']} {row['mode']}"
    out = [{"block": "focus_unit", "job": f"{job}: SEC job (SEC_CYCLES)",
            "measured": st["sec_cycles"], "model": None, "model_kind": "none",
            "bound": _score_beats(row), "correct": row["correct"]}]
    for j, cycles in enumerate(st["sic_cycles"]):
        out.append({"block": "focus_unit", "job": f"{job}: SIC column {j}, S={n} (SIC_CYCLES)",
                    "measured": cycles, "model": sic_cycles(n, row["comparators"]),
                    "model_kind": "exact", "bound": max(n, 1),
                    "correct": row["correct"]})
    out.append({"block": "focus_unit", "job": f"{job}: end to end, host bus included",
                "measured": st["cycles"], "model": None, "model_kind": "none",
                "bound": _score_beats(row) + n * row["columns"], "correct": row["correct"]})
    return out


def _focus_write(records, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# FocusUnit end to end", "",
             ("Amaranth simulator, no stalls; photograph attention as the scores and the "
             "photograph's int8 features as the tokens. SEC and SIC cycles are the unit's "
             "counters read over the register bus; *cycles* is the first score transfer to the "
             "last output of the last SIC job, host bus traffic between the jobs included. "
             "*bound*: the score beats at one per cycle, then one token per cycle for each kept "
             "token and column."), "",
             ("| M | R | mode | keep | kept | nbits | columns | uniques | SEC cycles | SIC cycles "
             "| cycles | bound | = golden |"),
             "|---:|---:|---|---:|---:|---:|---:|---|---:|---|---:|---:|---|"]
    for _, r in records:
        st = r["stats"]
        lines.append(f"| {r['M']} | {r['R']} | {r['mode']} | {r['keep']} | {r['kept']} "
                     f"| {r['nbits']} | {r['columns']} | {st['uniques']} | {st['sec_cycles']} "
                     f"| {st['sic_cycles']} | {st['cycles']} "
                     f"| {_score_beats(r) + r['kept'] * r['columns']} "
                     f"| {'yes' if r['correct'] else '**NO**'} |")
    (out / "focus.md").write_text("\n".join(lines) + "\n")
    return [out / "focus.md"]


def _focus_module():
    """plan/summary_rows/write for the FocusUnit, or None when :func:`sim.focus` does not exist
    yet."""
    import types

    try:
        from ..focus import focus  # noqa: F401
    except ImportError:
        return None
    return types.SimpleNamespace(plan=_focus_plan, summary_rows=_focus_rows, write=_focus_write)


def _plans(names, p, preset, quick, seed):
    """{module: (module object, [(label, run), ...])}."""
    from . import offsets as bench_offsets
    from . import sec as bench_sec
    from . import sic as bench_sic

    plans = {}
    for name in names:
        if name == "sec":
            plans[name] = (bench_sec, bench_sec.plan(preset, p, quick, seed))
        elif name == "offsets":
            plans[name] = (bench_offsets, bench_offsets.plan(p, quick, seed))
        elif name == "sic":
            plans[name] = (bench_sic, bench_sic.plan(p, quick))
        elif name == "focus":
            module = _focus_module()
            if module is None:
                print("focus-rtl bench: sim.focus is not available yet: no FocusUnit rows",
                      file=sys.stderr)
                continue
            plans[name] = (module, module.plan(p, quick, seed))
    return plans


def _ratio(a, b):
    return f"{a / b:.3f}" if b else "-"


def summary_markdown(rows, title):
    """The summary table of ``rows`` (dicts: block, job, measured, model, model_kind, bound,
    correct) as markdown."""
    lines = [f"# {title}", "",
             ("Amaranth simulator, no stalls. Cycles from the job's first input transfer to its "
             "last output transfer, inclusive. *model*: `golden.cycles` (its kind says whether "
             "it is exact for this block). *bound*: the physical bound, the busiest port at one "
             "beat per cycle (see `focus-rtl bench --help`). *= golden*: the RTL's result "
             "equals the golden model's."), "",
             ("| block | job | measured cycles | model cycles | model | physical bound "
             "| measured / bound | = golden |"),
             "|---|---|---:|---:|---|---:|---:|---|"]
    for r in rows:
        model = "-" if r["model"] is None else r["model"]
        lines.append(f"| {r['block']} | {r['job']} | {r['measured']} | {model} "
                     f"| {r['model_kind']} | {r['bound']} | {_ratio(r['measured'], r['bound'])} "
                     f"| {'yes' if r['correct'] else '**NO**'} |")
    return "\n".join(lines) + "\n"


def _plot(rows, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    blocks = list(dict.fromkeys(r["block"] for r in rows))
    colors = dict(zip(blocks, plt.cm.tab10.colors * 3, strict=False))
    height = max(3.0, 0.22 * len(rows) + 1.2)
    fig, ax = plt.subplots(figsize=(9, height))
    y = list(range(len(rows)))[::-1]
    ax.barh(y, [r["measured"] / r["bound"] for r in rows],
            color=[colors[r["block"]] for r in rows])
    model = [(yy, r["model"] / r["bound"]) for yy, r in zip(y, rows, strict=True)
             if r["model"] is not None]
    if model:
        ax.plot([m for _, m in model], [yy for yy, _ in model], "k|", ms=8,
                label="model / bound")
    ax.axvline(1.0, color="k", lw=0.8, ls=":")
    ax.set_yticks(y, [f"{r['block']}: {r['job']}" for r in rows], fontsize=6)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xscale("log")
    ax.set_xlabel("measured / physical bound (log)")
    ax.set_title(title.replace(" (", "\n(", 1), fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[b]) for b in blocks]
    ax.legend(handles + ax.get_legend_handles_labels()[0],
              blocks + ax.get_legend_handles_labels()[1], fontsize=6, loc="lower right")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)




def run(args):
    """Run ``focus-rtl bench``; returns the exit status."""
    try:
        p, names = params_from(args.preset, args.set), _modules(args)
    except BadArgs as exc:
        return fail(exc, 2)
    from rtl.flow import toolchain

    toolchain.apply()
    out = Path(args.output) if args.output else toolchain.BUILD_ROOT / "bench" / args.preset
    plans = _plans(names, p, args.preset, args.quick, args.seed)
    total = sum(len(jobs) for _, jobs in plans.values())
    records = {name: [] for name in plans}
    failed = []
    number, start = 0, time.monotonic()
    for name, (_, jobs) in plans.items():
        for label, job in jobs:
            number += 1
            print(f"[{number}/{total}] {label} ...", end="", file=sys.stderr, flush=True)
            began = time.monotonic()
            try:
                records[name].append(job())
            except Exception as exc:  # reported, and the other jobs still run
                first = (str(exc).splitlines() or [""])[0]
                failed.append(f"{label}: {type(exc).__name__}: {first}")
                print(f" FAILED ({failed[-1]})", file=sys.stderr, flush=True)
                continue
            print(f" {time.monotonic() - began:.1f} s", file=sys.stderr, flush=True)
    rows, written = [], []
    for name, (module, _) in plans.items():
        for kind, data in records[name]:
            rows += module.summary_rows(kind, data)
        written += module.write(records[name], out / name)
    overrides = "".join(f", {s}" for s in args.set or [])
    title = (f"focus-rtl bench: {args.preset} preset{overrides} ({p.tag})"
             + (", quick" if args.quick else ""))
    out.mkdir(parents=True, exist_ok=True)
    markdown = summary_markdown(rows, title)
    (out / "summary.md").write_text(markdown)
    (out / "summary.json").write_text(json.dumps(
        {"preset": args.preset, "overrides": list(args.set or []), "params": p.to_dict(),
         "quick": args.quick, "rows": rows}, indent=1, default=int))
    written += [out / "summary.md", out / "summary.json"]
    if rows:
        _plot(rows, out / "summary.png", title)
        written.append(out / "summary.png")
    print()
    print(markdown)
    for path in written:
        print(f"wrote {display_path(path)}")
    print(f"{total} jobs in {time.monotonic() - start:.1f} s")
    if failed:
        return fail(f"{len(failed)} of {total} job(s) failed (not in the tables): {failed[0]}")
    return 0
