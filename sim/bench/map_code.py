"""Benchmark of the compressed similarity map (spec 4.5, 4.6): ``.venv/bin/python -m
sim.bench.map_code``.

Not a test: it measures and reports. It writes ``bits.md``, ``bits.png``, ``frames.md`` and
``report.md`` to ``build/bench/map_code/`` (``-o`` to change), with a progress line per step on
stderr.

1. **Bits per token-column** (``bits.md``, ``bits.png``): photograph frames
   (:func:`golden.photo.photo_tokens`, panned, 14x14 tokens per frame, D = 128, so 4 sub-vector
   columns of V = 32; FS = 196, HS = 14, tile 1024), at theta 0.85 / 0.9 / 0.95. Each column is
   one matcher job. Per token-column: the map as a full index (``position_bits`` = 32 bits) and
   as an index of ceil(log2 U) bits (U the column's unique count), the fixed 3-bit code, the
   variable code with the job's own (adaptive) ranking and with the previous column's ranking
   (what a streaming host can give the matcher: the counts come out at the end of a job; the
   first column uses the identity ranking), all headers included, and the empirical entropy of
   the symbols (the bound of any code of one symbol at a time). With ``--rtl``
   (default) the matcher (``BlockMatcher(map_code=True)``, 7 comparators, default parameters)
   encodes the first column at each threshold and the map decoder decodes it: "RTL = golden"
   says whether both equal golden bit for bit.
2. **Frames** (``frames.md``): the matcher's per-frame statistics on a still video (one photo
   frame repeated) and on the panned one at theta 0.9: the fraction of each frame's tokens
   matched to the frame behind.
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np

import golden
from golden import map_code as gmc
from golden.photo import photo_tokens
from rtl.flow.toolchain import BUILD_ROOT
from rtl.params import FocusParams

from .. import map_code as smc
from .report import markdown_table as table
from .report import progress_printer

THRESHOLDS = (0.85, 0.9, 0.95)
GRID = 14
FS, HS = GRID * GRID, GRID
DIM, COLUMNS = 32, 4

progress = progress_printer("bench_map_code")



def _columns(x, pos, tq):
    """Per column: its symbols and golden map."""
    out = []
    for j in range(COLUMNS):
        v = x[:, j * DIM:(j + 1) * DIM]
        codes = gmc.match_codes(v, pos, frame_stride=FS, row_stride=HS, theta_q=tq)
        mp = golden.block_match(v, pos, frame_stride=FS, row_stride=HS, theta_q=tq).map
        out.append((v, codes, mp))
    return out


def measure(x, pos, theta):
    """Bits per token-column of each representation, summed over the columns."""
    tq = golden.theta_q(theta)
    cols = _columns(x, pos, tq)
    count = len(pos) * COLUMNS
    totals = dict.fromkeys(("index32", "index_log", "fixed", "adaptive", "previous",
                            "entropy"), 0.0)
    ranking = tuple(range(8))
    for _, codes, mp in cols:
        uniques = int(mp.max()) + 1
        totals["index32"] += 32 * len(codes)
        totals["index_log"] += max(1, math.ceil(math.log2(uniques))) * len(codes)
        totals["fixed"] += gmc.map_code_bits(codes, False)
        totals["adaptive"] += gmc.map_code_bits(codes, True)
        totals["previous"] += gmc.map_code_bits(codes, True, ranking)
        totals["entropy"] += gmc.entropy_bits(codes) * len(codes)
        ranking = gmc.adaptive_ranking(codes)           # the next column's setting
    per = {k: v / count for k, v in totals.items()}
    counts = sum(gmc.symbol_counts(c) for _, c, _ in cols)
    return per, counts / counts.sum(), cols


def rtl_check(cols, theta, p):
    """The first column through the RTL matcher (variable code, its adaptive ranking) and the
    RTL decoder: equal to golden?"""
    v, codes, mp = cols[0]
    tq = golden.theta_q(theta)
    out = smc.map_code(v, photo_pos(), frame_stride=FS, row_stride=HS, theta_q=tq,
                       variable=True, params=p)
    words, nbits = gmc.encode_map(codes, variable=True, word_bits=p.word_bits)
    same_code = out["words"] == [int(w) for w in words] and out["nbits"] == nbits
    back, _ = smc.decode_map(out["words"], out["nbits"], photo_pos(), frame_stride=FS,
                             row_stride=HS, params=p, tile=p.tile, window=p.window,
                             word_bits=p.word_bits)
    return same_code and np.array_equal(back, mp) and np.array_equal(out["map"], mp)


_POS = {}


def photo_pos():
    return _POS["pos"]


def bench_bits(out, frames, rtl):
    x, pos = photo_tokens(frames=frames, grid=GRID, dim=DIM * COLUMNS)
    _POS["pos"] = pos
    p = FocusParams(comparators=7, layers=1)
    rows, series = [], {}
    for theta in THRESHOLDS:
        progress(f"bits: theta {theta}: golden on {COLUMNS} columns of {len(pos)} tokens ...")
        per, freq, cols = measure(x, pos, theta)
        series[theta] = per
        check = "not run"
        if rtl:
            progress(f"bits: theta {theta}: RTL matcher + decoder on column 0 ...")
            check = "yes" if rtl_check(cols, theta, p) else "**no**"
        rows.append((theta, f"{per['index32']:.0f}", f"{per['index_log']:.2f}",
                     f"{per['fixed']:.3f}", f"{per['adaptive']:.3f}", f"{per['previous']:.3f}",
                     f"{per['entropy']:.3f}", f"{100 * freq[0]:.1f}",
                     " ".join(f"{100 * f:.1f}" for f in freq[1:]), check))
    text = (f"## Map code: bits per token-column\n\nPhotograph, {frames} panned frames of "
            f"{GRID}x{GRID} tokens, D = {DIM * COLUMNS} ({COLUMNS} columns of V = {DIM}), "
            f"FS = {FS}, HS = {HS}, tile 1024; {len(pos)} tokens x {COLUMNS} columns. Headers "
            "included (fixed: 1 bit per job, variable: 25). 'previous' = the variable code "
            "with the previous column's ranking (the first column: identity).\n"
            + table(("theta", "index, 32 bits", "index, ceil(log2 U) bits", "fixed 3-bit",
                     "variable, own ranking", "variable, previous ranking",
                     "entropy (bits/symbol)", "new %", "c = 1..7 %", "RTL = golden"), rows))
    (out / "bits.md").write_text(text)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    styles = (("index32", "full index (32 bits)", "k:"),
              ("index_log", "index, ceil(log2 U) bits", "x--"),
              ("fixed", "fixed 3-bit code", "o-"),
              ("previous", "variable, previous ranking", "s-"),
              ("adaptive", "variable, own ranking", "^-"),
              ("entropy", "entropy bound", "v--"))
    for key, label, style in styles:
        ax.plot(THRESHOLDS, [series[t][key] for t in THRESHOLDS], style, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("threshold theta")
    ax.set_ylabel("bits per token-column")
    ax.set_xticks(THRESHOLDS)
    ax.set_title(f"Similarity map size, photograph ({frames} frames)")
    ax.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    fig.savefig(out / "bits.png", dpi=120)
    plt.close(fig)
    return text


def bench_frames(out, frames, rtl):
    p = FocusParams(comparators=7, layers=1)
    tq = golden.theta_q(0.9)
    rows = []
    for name, pan in (("still", (0, 0)), ("panned", (3, 2))):
        x, pos = photo_tokens(frames=frames, grid=GRID, dim=DIM, pan=pan)
        codes = gmc.match_codes(x, pos, frame_stride=FS, row_stride=HS, theta_q=tq)
        stats = gmc.frame_stats(codes, pos, FS)
        check = "not run"
        if rtl:
            progress(f"frames: {name}: RTL matcher on {len(pos)} tokens ...")
            got = smc.map_code(x, pos, frame_stride=FS, row_stride=HS, theta_q=tq, params=p)
            check = "yes" if np.array_equal(got["frames"], stats) else "**no**"
        fractions = " ".join(f"{100 * s[2] / s[0]:.1f}" for s in stats)
        rows.append((name, fractions, check))
    text = (f"## Frame statistics\n\nTokens of each frame matched to the frame behind (c >= 4), "
            f"%, frames 0..{frames - 1} (frame 0 has none behind), theta 0.9, one column of "
            f"V = {DIM}.\n" + table(("video", "matched to the previous frame, per frame (%)",
                                     "RTL = golden"), rows))
    (out / "frames.md").write_text(text)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.bench.map_code",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--out", default=str(BUILD_ROOT / "bench" / "map_code"))
    parser.add_argument("--frames", type=int, default=8, help="photo frames (default 8)")
    parser.add_argument("--no-rtl", dest="rtl", action="store_false",
                        help="golden only (no RTL runs)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    progress(f"writing to {out}")
    parts = [bench_bits(out, args.frames, args.rtl), bench_frames(out, min(args.frames, 4),
                                                                  args.rtl)]
    (out / "report.md").write_text("\n".join(parts))
    print("\n".join(parts))
    progress("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
