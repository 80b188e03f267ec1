"""Figures that circulate about Focus, measured here: ``.venv/bin/python -m sim.bench.claims``.

Not a test: it measures and reports. It writes ``claims.md`` (the table the README's "Claims,
measured" section copies), ``claims.json`` and ``block_similarity.png`` to
``build/bench/claims/`` (``-o`` to change), with a progress line per step on stderr. It uses the
golden model and :mod:`golden.reference` only (seconds); the claims that need the RTL or a power
run cite the benchmark that measures them.

Data: ``golden.photo`` (a photograph panned over ``--frames`` frames of a 14 x 14 patch grid,
V = 32, int8 tokens and the float features they are quantized from). Masks for the offset code:
M = 1024, exactly k kept, uniformly random.
"""

import argparse
import json
import math
from pathlib import Path

import numpy as np

import golden
from golden import map_code, reference
from golden.block_match import candidate_offsets
from golden.offsets import code_bits
from golden.photo import _features, photo_tokens
from rtl.flow.toolchain import BUILD_ROOT
from rtl.marked_text import replace_marked

from .report import progress_printer

GRID = 14
FS, HS = GRID * GRID, GRID
DIM = 32
THRESHOLDS = (0.85, 0.9, 0.95)
#: The keep ratios of the offset-code row, and M.
KEEPS = tuple(r / 100 for r in range(5, 100, 5))
M = 1024

progress = progress_printer("claims")


def candidate_pairs(positions, tile, fs=FS, hs=HS):
    """(token, candidate, c) for every candidate position that holds a token of the same tile."""
    where, rows = {}, []
    offsets = list(enumerate(candidate_offsets(fs, hs).tolist(), 1))
    for s, q in enumerate(positions.tolist()):
        start = s - s % tile
        for c, off in offsets:
            j = where.get(q - off) if off > 0 else None
            if j is not None and j >= start:
                rows.append((s, j, c))
        where[q] = s
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def best_cosines(vectors, pairs, count):
    """Per token, the largest cosine to an existing candidate (NaN for a token with none)."""
    cos = reference.cosine(vectors[pairs[:, 0]], vectors[pairs[:, 1]])
    best = np.full(count, -np.inf)
    np.maximum.at(best, pairs[:, 0], cos)
    best[np.isneginf(best)] = np.nan
    return cos, best


def block_similarity(frames, tile=1024):
    """The claim "similarity within a 2x2x2 block is usually above 0.85"."""
    x, pos = photo_tokens(frames=frames, grid=GRID, dim=DIM)
    feats = _features(frames, GRID, 8, DIM, 0, (3, 2), 3.0, 0.0)
    pairs = candidate_pairs(pos, tile)
    out = {}
    for name, v in (("float features", feats), ("int8 tokens", x)):
        cos, best = best_cosines(np.asarray(v, dtype=np.float64), pairs, len(pos))
        have = best[~np.isnan(best)]
        out[name] = {
            "pairs": int(len(cos)),
            "pairs above 0.85": float(np.mean(cos > 0.85)),
            "tokens with a candidate": int(len(have)),
            "best above 0.85": float(np.mean(have > 0.85)),
            "median best": float(np.median(have)),
            "median pair": float(np.median(cos)),
            "best": have.tolist(),
        }
    return out


def sparsity_int8_vs_float(frames, tile=1024):
    """Sparsity (1 - uniques / tokens) of the exact int8 matcher against float cosine on the
    unquantized features in fp16 and in float64, at each threshold."""
    x, pos = photo_tokens(frames=frames, grid=GRID, dim=DIM)
    feats = _features(frames, GRID, 8, DIM, 0, (3, 2), 3.0, 0.0)
    rows = []
    for theta in THRESHOLDS:
        _, u8 = golden.block_match(x, pos, frame_stride=FS, row_stride=HS,
                                   theta_q=golden.theta_q(theta), tile=tile)
        _, u16 = reference.block_match(feats.astype(np.float16), pos, frame_stride=FS,
                                       row_stride=HS, theta=theta, tile=tile)
        _, u64 = reference.block_match(feats, pos, frame_stride=FS, row_stride=HS, theta=theta,
                                       tile=tile)
        s = [1 - len(u) / len(pos) for u in (u8, u16, u64)]
        rows.append({"theta": theta, "int8": s[0], "fp16": s[1], "float64": s[2]})
    return rows


def gated_slots(frames, keep=None, seed=0):
    """Share of the 7 comparator slots per token whose candidate is missing or zero (or whose
    own vector is zero): the slots a zero-skipping scheduler would not spend, counted directly."""
    x, pos = photo_tokens(frames=frames, grid=GRID, dim=DIM)
    if keep is not None:
        chosen = np.sort(np.random.default_rng(seed).permutation(len(pos))[:int(keep * len(pos))])
        x, pos = x[chosen], pos[chosen]
    nonzero = np.any(x != 0, axis=1)
    pairs = candidate_pairs(pos, 1024)
    live = nonzero[pairs[:, 0]] & nonzero[pairs[:, 1]]
    return 1 - int(live.sum()) / (7 * len(pos))


def offset_bits(trials, rng):
    """Mean bits per kept position of the adaptive offset code, header included, per keep
    ratio (random masks, M = 1024), and the entropy bound log2 C(M, k) / k."""
    rows = []
    for keep in KEEPS:
        k = round(keep * M)
        bits = []
        for _ in range(trials):
            mask = np.zeros(M, dtype=bool)
            mask[rng.permutation(M)[:k]] = True
            bits.append(code_bits(mask, None) / k)
        bound = (math.lgamma(M + 1) - math.lgamma(k + 1) - math.lgamma(M - k + 1)) / math.log(2)
        rows.append({"keep": keep, "bits": float(np.mean(bits)), "bound": bound / k})
    return rows


def map_bits(frames):
    """Bits of the variable map code (its own ranking, header included) per token-column and per
    matched token-column, the empirical entropy, and the fixed code, at theta 0.9."""
    x, pos = photo_tokens(frames=frames, grid=GRID, dim=DIM)
    codes = map_code.match_codes(x, pos, frame_stride=FS, row_stride=HS,
                                 theta_q=golden.theta_q(0.9))
    bits = map_code.map_code_bits(codes, True, map_code.adaptive_ranking(codes))
    return {"tokens": int(codes.size), "matched": int(np.count_nonzero(codes)),
            "per token": bits / codes.size, "per match": bits / max(1, np.count_nonzero(codes)),
            "entropy": map_code.entropy_bits(codes),
            "fixed": map_code.map_code_bits(codes, False) / codes.size}


def frame_matches(frames):
    """Per video (still: one frame repeated; panned), the share of each later frame's tokens
    matched to the frame behind (golden.map_code.frame_stats), at theta 0.9."""
    out = {}
    for name, pan in (("still", (0, 0)), ("panned", (3, 2))):
        x, pos = photo_tokens(frames=frames, grid=GRID, dim=DIM, pan=pan)
        codes = map_code.match_codes(x, pos, frame_stride=FS, row_stride=HS,
                                     theta_q=golden.theta_q(0.9))
        stats = map_code.frame_stats(codes, pos, FS)
        share = stats[:, 2] / np.maximum(stats[:, 0], 1)
        # Comparisons never cross a tile (1024 tokens, 5.2 frames): a frame whose frame behind
        # starts in an earlier tile cannot match all of it.
        inside = [f for f in range(1, len(stats)) if (f - 1) * FS // 1024 == ((f + 1) * FS - 1)
                  // 1024]
        out[name] = [float(share[f]) for f in inside]
        out[name + ", across a tile edge"] = [float(share[f]) for f in range(1, len(stats))
                                              if f not in inside]
    return out


def pct(x, digits=1):
    return f"{100 * x:.{digits}f} %"


def claims_markdown(sim, sparsity, gated, offsets, frames, mapc, video):
    flt, i8 = sim["float features"], sim["int8 tokens"]
    under = [r["keep"] for r in offsets if r["bits"] <= 1.4]
    at80 = next(r for r in offsets if abs(r["keep"] - 0.8) < 1e-9)
    s90 = next(r for r in sparsity if r["theta"] == 0.9)
    rows = [
        ("1.4 bits per kept position (offset code)",
         f"adaptive code, header included: {at80['bits']:.2f} bits at 80 % kept (bound "
         f"{at80['bound']:.2f}); at most 1.4 only from "
         + (f"{100 * min(under):.0f} % kept" if under else "no keep rate")
         + "; " + ", ".join(f"{r['bits']:.2f} at {100 * r['keep']:.0f} %" for r in offsets
                            if r["keep"] in (0.05, 0.25, 0.5)),
         "random masks, M = 1024", "holds only for high keep rates"),
        ("similarity within a 2x2x2 block is usually above 0.85",
         (f"best candidate above 0.85 for {pct(flt['best above 0.85'])} of tokens (float "
         f"features; int8: {pct(i8['best above 0.85'])}); median best cosine "
         f"{flt['median best']:.3f}; all (token, candidate) pairs: {pct(flt['pairs above 0.85'])} "
         f"above 0.85"),
         f"photo, {frames} panned frames, 14 x 14, V = 32",
         ("holds, narrowly" if flt["best above 0.85"] < 0.67 else "holds")
         if flt["best above 0.85"] > 0.5 else "does not hold"),
        ("INT8: -0.13 % sparsity against fp16",
         f"theta 0.9: int8 (exact) {pct(s90['int8'])}, fp16 {pct(s90['fp16'])}, float64 "
         f"{pct(s90['float64'])}: int8 - fp16 = {100 * (s90['int8'] - s90['fp16']):+.2f} points; "
         + ", ".join(f"theta {r['theta']}: {100 * (r['int8'] - r['fp16']):+.2f}" for r in sparsity
                     if r["theta"] != 0.9),
         "same photo tokens; fp16 = float cosine on the features cast to float16",
         "same order: a fraction of a point"
         if max(abs(r["int8"] - r["fp16"]) for r in sparsity) < 0.01 else "larger than claimed"),
        ("+15 % speed from zero skip",
         (f"not built: the matcher spends ceil(7 / comparators) cycles per token whatever its "
         f"candidates. The slots a zero skip could drop: {pct(gated[None])} of comparator slots "
         f"on all tokens, {pct(gated[0.5])} with half the positions pruned; at one comparator "
         f"(one slot a cycle) skipping them would be up to {1 / (1 - gated[None]):.2f}x and "
         f"{1 / (1 - gated[0.5]):.2f}x faster"),
         f"photo, {frames} frames; counted from the candidates", "not measured (not built)"),
        ("2.3 bits per match (similarity map)",
         (f"variable map code, theta 0.9: {mapc['per token']:.2f} bits per token-column "
          f"({mapc['per match']:.2f} per matched one; {mapc['matched']} of {mapc['tokens']} "
          f"matched), entropy {mapc['entropy']:.2f}, fixed code {mapc['fixed']:.2f}; the full "
          f"index: 32 bits"),
         f"photo, {frames} panned frames, one column (V = 32)",
         ("near, if counted per token-column; per matched token it is "
          f"{mapc['per match']:.1f}") if abs(mapc["per token"] / 2.3 - 1) < 0.1 else
         f"does not hold: {mapc['per token']:.2f} per token-column"),
        ("frame skipping on static video",
         (f"share of a frame's tokens matched to the frame behind: still video "
          f"{pct(min(video['still']))} to {pct(max(video['still']))}, panned "
          f"{pct(min(video['panned']))} to {pct(max(video['panned']))}, for frames whose frame "
          f"behind is in the same tile; across a tile edge (comparisons never cross one) "
          f"still {', '.join(pct(v) for v in video['still, across a tile edge'])}. The "
          f"matcher's frame statistics report it per frame (spec 4.6)"),
         f"photo, {frames} frames, theta 0.9", "a still frame is recognizable"
         if min(video["still"]) > 0.9 > max(video["panned"]) else "not separable"),
    ]
    lines = ["| claim | measured here | data | verdict |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def plot(sim, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    bins = np.linspace(-1, 1, 81)
    for name, style in (("float features", "-"), ("int8 tokens", "--")):
        ax.hist(sim[name]["best"], bins=bins, histtype="step", linestyle=style, label=name,
                density=True)
    ax.axvline(0.85, color="grey", linewidth=0.8)
    ax.set_xlabel("largest cosine to a 2x2x2 candidate")
    ax.set_ylabel("density of tokens")
    ax.set_title("Block similarity on the photograph")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_into(readme, text):
    """Replace the lines between the claims markers of ``readme`` with ``text``."""
    try:
        readme.write_text(replace_marked(readme.read_text(), "claims", text))
    except ValueError as error:
        raise SystemExit(f"{readme}: {error}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.bench.claims", description=__doc__
                                     .split("\n")[0])
    parser.add_argument("-o", "--out", type=Path, default=BUILD_ROOT / "bench" / "claims")
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--trials", type=int, default=20, help="random masks per keep ratio")
    parser.add_argument("--quick", action="store_true", help="2 frames, 3 masks per ratio")
    parser.add_argument("--readme", type=Path, help="also write the table into this README, "
                        "between its <!-- claims:begin --> and <!-- claims:end --> lines")
    args = parser.parse_args(argv)
    frames, trials = (2, 3) if args.quick else (args.frames, args.trials)
    args.out.mkdir(parents=True, exist_ok=True)
    progress(f"block similarity on {frames} frames ...")
    sim = block_similarity(frames)
    progress("sparsity: int8 against fp16 and float64 ...")
    sparsity = sparsity_int8_vs_float(frames)
    progress("zero-skip slots ...")
    gated = {None: gated_slots(frames), 0.5: gated_slots(frames, keep=0.5)}
    progress(f"offset code on random masks ({trials} per ratio) ...")
    offsets = offset_bits(trials, np.random.default_rng(2026))
    progress("map code and frame statistics ...")
    mapc, video = map_bits(frames), frame_matches(frames)
    text = claims_markdown(sim, sparsity, gated, offsets, frames, mapc, video)
    (args.out / "claims.md").write_text(text)
    summary = {"block_similarity": {k: {n: v for n, v in d.items() if n != "best"}
                                    for k, d in sim.items()},
               "sparsity": sparsity, "zero_skip_slots": {str(k): v for k, v in gated.items()},
               "offset_bits": offsets, "map_code": mapc, "frames_matched_behind": video}
    (args.out / "claims.json").write_text(json.dumps(summary, indent=1))
    plot(sim, args.out / "block_similarity.png")
    if args.readme:
        write_into(args.readme, text)
    print(text)
    progress(f"wrote {args.out}/claims.md, claims.json, block_similarity.png")


if __name__ == "__main__":
    main()
