"""``focus-rtl area``: a block's standard-cell logic area by instance (OSU 0.18 um).

The ``osu018-logic`` flow of ``focus-rtl synth`` (the RAMs left as SRAM macros and not counted,
ABC's area mapping), without flattening, so that Yosys costs every instance apart. Each row is
one instance of the design: its area with its submodules, its share of the block, its own area
(without them) and its flip-flops. Keeping the hierarchy stops optimisation across the
instances' ports, so the total is a little above the flattened flow's (``focus-rtl synth
--target osu018-logic``, which gives the figure to quote); the shares are what this is for:
which part of the unit costs what, for instance SEC against SIC as the paper splits them.

Output, in build/area/<preset>/ (-o to change): <block>.md and <block>.png (the instances of at
least --min-share of the block, to --depth levels, as a table and as bars) and <block>.json
(every instance).
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path

from ..marked_text import replace_marked
from . import toolchain
from .asic import hierarchy_flow
from .blocks import BLOCKS
from .cli_args import BadArgs, add_param_arguments, fail, params_from
from .qor import source_commit
from .tools import count_cells, relative_path

__all__ = ["instance_rows", "shown_rows", "breakdown_markdown", "add_parser", "run"]

_FLIP_FLOP = r"DFF\w*"


def instance_rows(top, modules):
    """The rows of :func:`rtl.flow.asic.hierarchy_flow`'s ``modules`` under the instance
    ``top``, in depth-first order: ``path``, ``depth`` (0 for ``top``), ``area_um2`` (with the
    submodules), ``own_um2``, ``share`` (of ``top``'s area), ``ff`` and ``own_ff``. Modules that
    are not instances of ``top`` (a cell model, for instance) count in their parent's own
    area."""
    paths = sorted(p for p in modules if p == top or p.startswith(top + "."))
    if top not in paths:
        raise ValueError(f"no module {top!r} among {sorted(modules)}")
    children = {p: [c for c in paths if c.rpartition(".")[0] == p] for p in paths}
    total = modules[top]["area_um2"]
    own_ff = {p: count_cells(modules[p]["cells_by_type"], _FLIP_FLOP) for p in paths}

    def subtree(p):
        return [p, *(d for c in children[p] for d in subtree(c))]

    rows = []
    for p in subtree(top):
        area = modules[p]["area_um2"]
        own = area - sum(modules[c]["area_um2"] for c in children[p])
        rows.append({
            "path": p, "depth": p.count(".") - top.count("."), "area_um2": area,
            "own_um2": round(own, 1), "share": area / total if total else 0.0,
            "ff": sum(own_ff[d] for d in subtree(p)), "own_ff": own_ff[p],
        })
    return rows


def shown_rows(rows, depth=None, min_share=0.0):
    """The rows of at most ``depth`` levels (all with None) and at least ``min_share``."""
    return [r for r in rows
            if (depth is None or r["depth"] <= depth) and r["share"] >= min_share]


def breakdown_markdown(block, preset, rows, result, min_share=0.0, commit=None):
    """The report: one table of ``rows`` (:func:`shown_rows`, ``min_share`` its threshold),
    after a title line (``--readme`` leaves that out)."""
    total = rows[0]["area_um2"]
    on = f" on `{commit}`" if commit else ""
    lines = [
        f"# Logic area of `{block}` by instance, preset `{preset}`", "",
        (f"OSU 0.18 um{on}, `osu018-logic` without flattening (RAMs not counted), "
         f"library `{result['liberty'].get('library')}`; total {total / 1e6:.3f} mm^2 "
         f"(`focus-rtl area --preset {preset} --block {block}`). The flattened flow's figure "
         "(`focus-rtl synth --target osu018-logic`) is a little lower: it optimises across the "
         f"instances' ports. Shown: the instances of at least {100 * min_share:g} % of it."),
        "",
        ("| instance (path below the block) | um^2 with submodules | share | own um^2 | "
         "flip-flops |"),
        "|---|---:|---:|---:|---:|",
    ]
    top = rows[0]["path"]
    for r in rows:
        path = r["path"][len(top) + 1:] if r["depth"] else top
        name = "&nbsp;&nbsp;" * r["depth"] + f"`{path}`"
        lines.append(f"| {name} | {r['area_um2']:,.0f} | {100 * r['share']:.1f} % | "
                     f"{r['own_um2']:,.0f} | {r['ff']:,} |".replace(",", " "))
    return "\n".join(lines) + "\n"


def _plot(rows, title, path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    shown = rows[1:]
    fig = Figure(figsize=(8, 0.32 * len(shown) + 1.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    top = rows[0]["path"]
    names = [r["path"][len(top) + 1:] for r in shown]
    values = [r["area_um2"] / 1e6 for r in shown]
    leaf = {r["path"] for r in shown} - {r["path"].rpartition(".")[0] for r in shown}
    colors = ["tab:blue" if r["path"] in leaf else "tab:gray" for r in shown]
    ax.barh(range(len(shown)), values, color=colors)
    ax.set_yticks(range(len(shown)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("logic area, mm^2 (OSU 0.18 um, with submodules; blue: no part shown)")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def add_parser(sub):
    """Add the ``area`` subcommand to the ``focus-rtl`` subparsers ``sub``."""
    parser = sub.add_parser(
        "area", help="a block's logic area by instance (OSU 0.18 um, Yosys)",
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_param_arguments(parser)
    parser.add_argument("--block", default="focus_unit",
                        help="the block (default: focus_unit)")
    parser.add_argument("--depth", type=int, metavar="N",
                        help="at most N instance levels in the table and the picture (default: "
                             "all)")
    parser.add_argument("--min-share", type=float, default=1.0, metavar="PERCENT",
                        help="only the instances of at least this share of the block in the "
                             "table and the picture (default: 1)")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="output directory (default: build/area/<preset>)")
    parser.add_argument("--readme", metavar="FILE",
                        help="also write the table into FILE (e.g. README.md) between its "
                             "<!-- area-PRESET-BLOCK:begin --> and :end --> lines")
    parser.add_argument("--timeout", type=float, default=3600.0, metavar="SECONDS",
                        help="Yosys time limit (default: 3600)")
    return parser


def run(args, argv=None):
    """Run for parsed ``args``; returns the exit status (1 when the flow failed; bad arguments
    raise :class:`~rtl.flow.cli_args.BadArgs`, exit status 2)."""
    if args.block not in BLOCKS:
        raise BadArgs(f"unknown block {args.block!r}: one of {', '.join(sorted(BLOCKS))}")
    if args.depth is not None and args.depth < 1:
        raise BadArgs(f"--depth {args.depth}: at least 1")
    if not 0.0 <= args.min_share <= 100.0:
        raise BadArgs(f"--min-share {args.min_share}: a percentage, 0 to 100")
    marker = f"area-{args.preset}-{args.block}"
    if args.readme:
        try:
            replace_marked(Path(args.readme).read_text(), marker, "")
        except (OSError, ValueError) as exc:
            raise BadArgs(f"--readme {args.readme}: {exc}") from None
    params = params_from(args.preset, args.set)
    out = Path(args.output) if args.output else toolchain.BUILD_ROOT / "area" / args.preset
    work = out / f"work_{args.block}"
    work.mkdir(parents=True, exist_ok=True)
    print(f"[area] {args.block} at {params.tag}: Yosys, hierarchical osu018-logic "
          "(minutes for the whole unit) ...", file=sys.stderr, flush=True)
    start = time.monotonic()
    result = hierarchy_flow(args.block, params, work, args.timeout)
    print(f"[area] {result['status']} in {time.monotonic() - start:.1f} s", file=sys.stderr)
    if result["status"] != "ok":
        return fail(f"area: {result['status']}: {result['error']}")
    rows = instance_rows(args.block, result["modules"])
    shown = shown_rows(rows, args.depth, args.min_share / 100.0)
    text = breakdown_markdown(args.block, args.preset, shown, result, args.min_share / 100.0,
                              source_commit())
    stem = out / re.sub(r"\W", "_", args.block)
    stem.with_suffix(".md").write_text(text)
    stem.with_suffix(".json").write_text(json.dumps(
        {"block": args.block, "preset": args.preset, "params": params.tag,
         "liberty": result["liberty"], "seconds": result["seconds"], "instances": rows},
        indent=1) + "\n")
    _plot(shown, f"{args.block}, preset {args.preset}: "
          f"{rows[0]['area_um2'] / 1e6:.2f} mm^2 of logic", stem.with_suffix(".png"))
    print(text)
    for suffix in (".md", ".json", ".png"):
        print(f"wrote {relative_path(stem.with_suffix(suffix))}")
    if args.readme:
        readme = Path(args.readme)
        body = "\n" + text.split("\n\n", 1)[1] + "\n"
        readme.write_text(replace_marked(readme.read_text(), marker, body))
        print(f"wrote {readme} (between its {marker} markers)")
    return 0
