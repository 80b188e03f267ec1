"""The block matcher's multipliers, counted from the elaborated design (issue 15's figures).

Run::

    .venv/bin/python -m sim.bench.multipliers            # paper, default, board, 7 comparators
    .venv/bin/python -m sim.bench.multipliers --set comparators=3

Prints a markdown table and writes it to ``build/bench/multipliers.md`` (``--out``). Every
product, dot product, sum of squares and square the matcher builds (:mod:`rtl.lib.arith`, through
:func:`rtl.lib.arith.counting`) is listed with its size in bit-products (n x m summed over its
terms, n and m the operand widths: the size of the multipliers the expression stands for) and the
partial-product bits actually built (Booth rows, folded squares). Elaborating a shape takes tens
of seconds (V = 32); nothing is synthesized.
"""

import argparse
import sys
from collections import Counter
from pathlib import Path

from amaranth.back import rtlil

from rtl.flow.toolchain import BUILD_ROOT
from rtl.lib.arith import counting
from rtl.params import FocusParams
from rtl.sic.block_matcher import BlockMatcher

__all__ = ["count", "SHAPES", "main"]

#: name -> parameters of the shapes reported by default.
SHAPES = {
    "paper": FocusParams.paper(),
    "default": FocusParams(),
    "default, 7 comparators": FocusParams(comparators=7),
    "board": FocusParams.board(),
}

_NAMES = {"product": "product", "dot": "dot product", "squares": "sum of squares",
          "square": "square"}


def count(p):
    """``(bit_products, pp_bits, parts)`` of the block matcher built for ``p``: the totals and a
    ``Counter`` of ``(kind, terms, bit_products, pp_bits)`` records (see
    :func:`rtl.lib.arith.counting`)."""
    with counting() as records:
        rtlil.convert(BlockMatcher(p, icg_cell=None))
    return (sum(r[2] for r in records), sum(r[3] for r in records), Counter(records))


def _parts(parts):
    def one(record, n):
        kind, terms, bp, _ = record
        what = _NAMES[kind] + (f" of {terms}" if terms > 1 else "")
        return f"{n} x {what} ({bp})" if n > 1 else f"{what} ({bp})"
    return ", ".join(one(r, n) for r, n in sorted(parts.items(), key=lambda item: -item[0][2]))


def table(shapes):
    header = ("| shape | comparators | bit-products | partial-product bits "
              "| parts (bit-products each) |")
    lines = [header, "|---|---:|---:|---:|---|"]
    for name, p in shapes.items():
        bp, pp, parts = count(p)
        lines.append(f"| {name} | {p.comparators} | {bp} | {pp} | {_parts(parts)} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.bench.multipliers",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="one shape: the default parameters with these overrides")
    parser.add_argument("--out", type=Path, default=BUILD_ROOT / "bench" / "multipliers.md")
    args = parser.parse_args(argv)
    try:
        shapes = ({"--set " + " ".join(args.set): FocusParams().with_overrides(args.set)}
                  if args.set else SHAPES)
    except (ValueError, TypeError) as e:
        parser.error(str(e))
    text = ("Block matcher multipliers (`python -m sim.bench.multipliers`), counted from the "
            "elaborated design:\n\n" + table(shapes))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
