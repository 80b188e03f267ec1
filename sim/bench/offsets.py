"""Benchmark of the offset code (spec 3.3): bits per kept position, and the RTL's cycles.

Run::

    .venv/bin/python -m sim.bench.offsets            # M = 1024, about 15 s
    .venv/bin/python -m sim.bench.offsets --quick    # M = 256, fewer trials, a few seconds

Writes to ``build/bench/offsets/`` (``--out``): ``bits.md`` (bits per kept position against the
keep ratio, 5 % to 95 %, for random masks and for masks from a real photograph; the adaptive code,
every fixed order, a plain bitmap, fixed-width indices and the entropy bound), ``bits.png`` (the
same as a plot), ``cycles.md`` (the encoder's and decoder's measured cycles in the Amaranth
simulator against :mod:`golden.cycles`) and ``README.md`` (the summary: how far adaptive is from
the bound, and where the "1.4 bits per position" claim holds).

Sizes are counted with :func:`golden.offsets.all_code_bits` (bit-exact to the RTL: the tests
check that); for the cycle runs every mask also goes through the RTL encoder and decoder, and
their words and masks are checked against golden here too.

Masks:

- *random*: exactly k = round(ratio * M) kept tokens, uniformly chosen (the entropy bound
  log2(C(M, k)) / k is for exactly these);
- *photo*: ``golden.photo.photo_attention`` (4 panned frames of a 16 x 16 patch grid of
  matplotlib's ``grace_hopper.jpg``, M = 1024 tokens, 16 query rows) -> fp16 bit patterns
  (``golden.formats.scores_from_fp16``) -> ``golden.sec.importance`` -> ``golden.sec.topk_mask``.
  Kept tokens cluster (faces, edges), as real SEC masks do.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from golden import cycles as model
from golden.formats import scores_from_fp16
from golden.offsets import SCHEMES, decode_offsets, encode_offsets, scheme_bits
from golden.photo import photo_attention
from golden.sec import importance, topk_mask
from rtl.flow.toolchain import BUILD_ROOT
from rtl.params import FocusParams
from rtl.sec.offset_encoder import scheme_count

from ..offsets import decoder_result, encoder_result, run_decoder_jobs, run_encoder_jobs

CLAIM = 1.4                     # "bits per position", the widely repeated figure
RATIOS = [r / 100 for r in range(5, 100, 5)]


def entropy_bound(M, k):
    """log2(C(M, k)) / k: the fewest bits per kept position of any code for a uniform k-of-M
    mask."""
    return (math.lgamma(M + 1) - math.lgamma(k + 1) - math.lgamma(M - k + 1)) / math.log(2) / k


def random_masks(M, k, trials, rng):
    masks = []
    for _ in range(trials):
        mask = np.zeros(M, bool)
        mask[rng.choice(M, k, replace=False)] = True
        masks.append(mask)
    return masks


def photo_importance(grid, seeds, queries=16, frames=4):
    """Importance vectors of real attention rows, one per seed (a different crop each)."""
    out = []
    for seed in seeds:
        att = photo_attention(frames=frames, grid=grid, queries=queries, seed=seed)
        out.append(importance(scores_from_fp16(att)))
    return out


def scheme_name(scheme):
    """A short name of a scheme: K or D (kept or dropped set), G or R (Exp-Golomb or Rice), the
    order; e.g. ``DR0``."""
    return "KD"[scheme.coded] + "GR"[scheme.family] + str(scheme.order)


def sizes(masks):
    """Mean bits per kept position over ``masks``: the kept-set Exp-Golomb orders 0..7 (array
    [8]), the adaptive code (all 32 schemes), the best kept-set Exp-Golomb order (the adaptive
    code before the set and the family were added), and the schemes the adaptive code used."""
    kept_eg, adaptive, used = [], [], []
    for mask in masks:
        k = mask.sum()
        bits = scheme_bits(mask)
        flat = bits.reshape(-1)
        best = min((int(b), i) for i, b in enumerate(flat) if b >= 0)
        kept_eg.append(bits[0, 0] / k)
        adaptive.append(best[0] / k)
        used.append(scheme_name(SCHEMES[best[1]]))
    kept_eg = np.array(kept_eg)
    return (kept_eg.mean(axis=0), float(np.mean(adaptive)), float(kept_eg.min(axis=1).mean()),
            used)


def bits_table(M, kinds, log):
    """Rows of the bits table per kind: ratio, k, adaptive, orders, bitmap, indices, bound."""
    tables = {}
    for kind, make in kinds.items():
        rows = []
        for ratio in RATIOS:
            k = max(1, round(ratio * M))
            masks = make(k)
            orders, adaptive, kept_eg, used = sizes(masks)
            rows.append({
                "ratio": ratio, "k": k, "adaptive": adaptive, "orders": orders,
                "kept_eg": kept_eg, "used": sorted(set(used)), "bitmap": M / k,
                "indices": float(max(1, (M - 1).bit_length())), "bound": entropy_bound(M, k),
            })
        tables[kind] = rows
        log(f"bits: {kind} masks done ({len(RATIOS)} keep ratios)")
    return tables


def fmt(x, digits=2):
    return f"{x:.{digits}f}"


def bits_markdown(M, tables, trials, seeds):
    lines = [f"# Offset code: bits per kept position, M = {M}", "",
             ("nbits / k, the whole string (header 5 + bit_length(M) bits included). `adaptive` is "
             "the code the encoder writes with the adaptive scheme (in brackets the schemes it "
             "chose: K/D the kept or dropped set, G/R Exp-Golomb or Rice, the order); `kept EG` "
             "the best kept-set Exp-Golomb order alone (the adaptive code before the set and "
             "family were added, with today's header); `e=0..7` are the fixed kept-set "
             "Exp-Golomb orders; `bitmap` = M / k; `indices` = bit_length(M - 1); `bound` = "
             "log2(C(M, k)) / k. `excess` = adaptive - bound, `x bound` = adaptive / bound."), "",
             (f"Random masks: mean of {trials} masks with exactly k kept. Photo masks: mean of "
             f"{len(seeds)} crops (seeds {seeds[0]}..{seeds[-1]}) of the photograph."), ""]
    for kind, rows in tables.items():
        lines += [f"## {kind} masks", "",
                  "| keep | k | adaptive [scheme] | kept EG | "
                  + " | ".join(f"e={e}" for e in range(8))
                  + " | bitmap | indices | bound | excess | x bound |",
                  "|" + "---|" * 17]
        for r in rows:
            used = ",".join(r["used"])
            lines.append(
                f"| {r['ratio']:.0%} | {r['k']} | **{fmt(r['adaptive'])}** [{used}] | "
                f"{fmt(r['kept_eg'])} | "
                + " | ".join(fmt(x) for x in r["orders"])
                + f" | {fmt(r['bitmap'])} | {fmt(r['indices'], 0)} | {fmt(r['bound'])} | "
                f"{fmt(r['adaptive'] - r['bound'])} | {fmt(r['adaptive'] / r['bound'])} |")
        lines.append("")
    return "\n".join(lines)


def claim_summary(tables):
    """Where adaptive (and the bound) is at most CLAIM bits per position, per kind."""
    out = []
    for kind, rows in tables.items():
        holds = [r["ratio"] for r in rows if r["adaptive"] <= CLAIM]
        bound = [r["ratio"] for r in rows if r["bound"] <= CLAIM]
        bitmap_wins = [r["ratio"] for r in rows if r["bitmap"] < r["adaptive"]]
        excess = [r["adaptive"] - r["bound"] for r in rows]
        factor = [r["adaptive"] / r["bound"] for r in rows]
        goal = [r["adaptive"] / r["bound"] for r in rows if r["ratio"] >= 0.095]
        span = (f"from {min(holds):.0%} to {max(holds):.0%}" if holds else "nowhere")
        out.append({
            "kind": kind, "holds": holds, "span": span,
            "bound_from": min(bound) if bound else None,
            "bitmap_wins": bitmap_wins,
            "excess": (min(excess), max(excess)), "factor": (min(factor), max(factor)),
            "goal": max(goal) if goal else None,
            "at": {round(r["ratio"] * 100): r for r in rows},
        })
    return out


def plot(M, tables, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(tables), figsize=(13, 5.2), sharey=True)
    for ax, (kind, rows) in zip(np.atleast_1d(axes), tables.items(), strict=True):
        x = [100 * r["ratio"] for r in rows]
        colors = plt.cm.viridis(np.linspace(0.0, 0.9, 8))
        for e in range(8):
            ax.plot(x, [r["orders"][e] for r in rows], color=colors[e], lw=0.9, alpha=0.8,
                    label=f"fixed e={e}")
        ax.plot(x, [r["kept_eg"] for r in rows], color="royalblue", lw=1.8, ls="--",
                label="kept-set Exp-Golomb, best order")
        ax.plot(x, [r["adaptive"] for r in rows], color="crimson", lw=2.6,
                label="adaptive (set, family, order)")
        ax.plot(x, [r["bitmap"] for r in rows], color="k", ls=":", lw=1.5, label="bitmap (M/k)")
        ax.plot(x, [r["indices"] for r in rows], color="gray", ls="-.", lw=1.5,
                label="fixed-width indices")
        ax.plot(x, [r["bound"] for r in rows], color="k", ls="--", lw=1.8,
                label="entropy bound log2(C(M,k))/k")
        ax.axhline(CLAIM, color="orange", lw=1.0, label=f"claim: {CLAIM} bits")
        ax.set_yscale("log")
        ax.set_ylim(0.25, 25)
        ax.set_xlabel("keep ratio k/M (%)")
        ax.set_title(f"{kind} masks, M = {M}")
        ax.grid(True, which="both", alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("bits per kept position")
    np.atleast_1d(axes)[-1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---- cycles ----------------------------------------------------------------------------------

def cycle_runs(params, masks, log):
    """Run every (kind, ratio, mask) through the RTL encoder (adaptive) and decoder, check them
    against golden, and return rows with the measured and modelled cycles."""
    p, wb = params, params.word_bits
    jobs = [(mask, None) for _, _, mask in masks]
    t = time.time()
    encoded = run_encoder_jobs(p, jobs)
    log(f"cycles: encoder, {len(jobs)} jobs at {p.tag} in {time.time() - t:.1f} s")
    codes = []
    for (kind, ratio, mask), result in zip(masks, encoded, strict=True):
        words, nbits = encoder_result(result)
        want = encode_offsets(mask, None, wb)
        if nbits != want[1] or not np.array_equal(words, want[0]):
            raise AssertionError(f"RTL encoder differs from golden ({kind}, {ratio:.0%})")
        codes.append(([int(w) for w in words], nbits, mask.size))
    t = time.time()
    decoded = run_decoder_jobs(p, codes)
    log(f"cycles: decoder, {len(codes)} jobs in {time.time() - t:.1f} s")
    rows = []
    for (kind, ratio, mask), enc, (words, nbits, M), dec in zip(masks, encoded, codes, decoded,
                                                                strict=True):
        got, _ = decoder_result(dec, M, p.lanes)
        if not np.array_equal(got, decode_offsets(words, nbits, M, wb)):
            raise AssertionError(f"RTL decoder differs from golden ({kind}, {ratio:.0%})")
        n, W = int(mask.sum()), -(-M // p.lanes)
        head = words[0] >> (wb - 5)
        dropped = bool((head >> 1) & 1)
        rows.append({
            "kind": kind, "ratio": ratio, "n": n, "nbits": nbits, "words": len(words),
            "scheme": "KD"[dropped] + "GR"[head & 1] + str(head >> 2),
            "enc": enc["cycles"], "enc_model": model.encode_cycles(M, n, nbits, p.lanes, wb),
            "enc_rtl_model": model.encode_rtl_cycles(mask, p.lanes, len(words), dropped,
                                                     scheme_count(p)),
            "dec": dec["cycles"],
            "dec_model": model.decode_cycles(nbits, n, M, p.lanes, wb, dropped=dropped),
            "dec_low": max(len(words), M if dropped else n, W) + 5,
        })
    return rows


def cycles_markdown(results):
    lines = ["# Offset encoder and decoder: measured cycles against golden.cycles", "",
             ("Measured in the Amaranth simulator, no stalls, from the config beat to the last "
             "output transfer (spec 6). Adaptive scheme (K/D kept or dropped set, G/R "
             "Exp-Golomb or Rice, order). `model` is golden.cycles "
             f"(ENCODE_LATENCY = {model.ENCODE_LATENCY}, DECODE_LATENCY = "
             f"{model.DECODE_LATENCY})."), "",
             ("- encoder: model = max(ceil(M/a), n) + ceil(nbits/w) + ENCODE_LATENCY. The RTL "
             "ingests one kept token per cycle (an empty beat costs a cycle), chooses the scheme "
             "in 33 cycles and then emits one field per cycle, so it is described by `rtl model` "
             "= golden.cycles.encode_rtl_cycles: sum over beats of max(1, kept) + max(fields, "
             "words) + ENCODE_RTL_CONSTANT ("
             f"{model.ENCODE_RTL_CONSTANT}; one fewer with no code; "
             "fields = golden.cycles.encode_fields; measured within 0..+1 of it)."),
             ("- decoder: model = ceil(nbits/w) + n + ceil(M/a) + DECODE_LATENCY (a dropped-set "
             "code: M in place of n, + DECODE_WALK_LATENCY), an upper bound; the RTL overlaps "
             "words, codes and mask beats, so it lies between `low` = max(words, n or M, "
             "ceil(M/a)) + 5 and the model."), ""]
    for tag, rows in results.items():
        lines += [f"## {tag}", "",
                  ("| masks | keep | n | scheme | nbits | words | enc | enc model | enc/model | "
                  "enc rtl model | dec | dec model | dec/model | dec low |"),
                  "|" + "---|" * 14]
        for r in rows:
            lines.append(
                f"| {r['kind']} | {r['ratio']:.0%} | {r['n']} | {r['scheme']} | {r['nbits']} | "
                f"{r['words']} | "
                f"{r['enc']} | {r['enc_model']} | {r['enc'] / r['enc_model']:.2f} | "
                f"{r['enc_rtl_model']} | {r['dec']} | {r['dec_model']} | "
                f"{r['dec'] / r['dec_model']:.2f} | {r['dec_low']} |")
        lines.append("")
    return "\n".join(lines)


def summary_markdown(M, claims, cycles_results):
    lines = [f"# Offset code benchmark summary (M = {M})", "",
             ("See bits.md, bits.png and cycles.md for the tables. The entropy bound "
             "log2(C(M, k))/k is the true lower bound for uniformly random k-of-M masks; for the "
             "photo masks, whose kept tokens cluster, it is the same number given for reference "
             "(a code that models clustering could go below it)."), "",
             ("A code of the kept set spends at least e + 1 bits per kept token (1 bit for a gap "
             "of 0 at e = 0), so it tends to 1 bit per position as the keep ratio rises while the "
             "bound tends to 0; coding the dropped set instead (with Rice or Exp-Golomb gaps, "
             "picked per mask) follows the bound there."), ""]
    for c in claims:
        lo_e, hi_e = c["excess"]
        lo_f, hi_f = c["factor"]
        at = c["at"]
        lines += [
            f"## {c['kind']} masks", "",
            (f"- Adaptive is {lo_e:.2f} to {hi_e:.2f} bits per kept position above the entropy "
            f"bound ({lo_f:.2f}x to {hi_f:.2f}x the bound); at 5 % keep it needs "
            f"{at[5]['adaptive']:.2f} bits (bound {at[5]['bound']:.2f}), at 50 % "
            f"{at[50]['adaptive']:.2f} (bound {at[50]['bound']:.2f}), at 95 % "
            f"{at[95]['adaptive']:.2f} (bound {at[95]['bound']:.2f})."),
            (f"- From 10 % to 95 % kept the adaptive code is at most {c['goal']:.3f}x the bound "
             f"(goal: 1.10x)." if c["goal"] is not None else "- (no keep ratio of 10 % or more)"),
            f"- The claim of {CLAIM} bits per position holds for the adaptive code {c['span']} "
            f"keep ratio"
            + ("" if not c["holds"] else
               f" (the bound itself drops below {CLAIM} at {c['bound_from']:.0%})")
            + "; below that it does not: sparse masks need several bits per position "
            f"({at[5]['adaptive']:.1f} at 5 %, {at[25]['adaptive']:.1f} at 25 %).",
            "- A plain bitmap (M/k bits) is smaller than the adaptive code at keep ratios "
            + (", ".join(f"{x:.0%}" for x in c["bitmap_wins"]) if c["bitmap_wins"] else "none")
            + ".", ""]
    for tag, rows in cycles_results.items():
        enc = [r["enc"] / r["enc_model"] for r in rows]
        dec = [r["dec"] / r["dec_model"] for r in rows]
        rtl = [r["enc"] - r["enc_rtl_model"] for r in rows]
        lines += [f"## cycles, {tag}", "",
                  (f"- encoder: measured / golden.cycles model = {min(enc):.2f} to "
                  f"{max(enc):.2f}; measured - RTL model = {min(rtl)} to {max(rtl)} cycles."),
                  (f"- decoder: measured / golden.cycles model = {min(dec):.2f} to "
                  f"{max(dec):.2f} (the model is an upper bound)."), ""]
    return "\n".join(lines)


# ---- focus-rtl bench (sim.bench.suite)
# ------------------------------------------------------------

PICKS = (0.05, 0.25, 0.5, 0.75, 0.95)


def photo_shape(M):
    """(frames, grid) with frames * grid**2 = M (4 frames preferred), or None."""
    for frames in (4, 2, 1):
        grid = math.isqrt(M // frames)
        if grid >= 2 and frames * grid * grid == M:
            return frames, grid
    return None


def plan(p, quick=False, seed=2026):
    """The jobs of ``focus-rtl bench`` for the parameters ``p``: ``(label, run)`` pairs, ``run()``
    returning ``(kind, data)``.

    M = ``p.tokens`` (quick: at most 64). One job computes the bits-per-position tables (golden,
    random masks and, when M = frames * grid**2, photo masks); one job per keep ratio (5, 25,
    50, 75 and 95 %; quick: 25 and 75 %) runs the random and the photo mask through the RTL
    encoder and decoder, checked against golden."""
    M = min(p.tokens, 64) if quick else p.tokens
    q = p.replace(tokens=M)
    shape = photo_shape(M)
    trials = 2 if quick else 8
    seeds = [0] if quick else [0, 1, 2, 3]
    rng = np.random.default_rng(seed)
    state = {}

    def photo():
        if "photo" not in state:
            state["photo"] = (photo_importance(shape[1], seeds, frames=shape[0]) if shape
                              else [])
        return state["photo"]

    def bits():
        kinds = {"random": lambda k: random_masks(M, k, trials, rng)}
        if shape:
            kinds["photo"] = lambda k: [topk_mask(s, k) for s in photo()]
        tables = bits_table(M, kinds, lambda text: None)
        return "bits", {"M": M, "tables": tables, "trials": trials, "seeds": seeds}

    def cycles(ratio):
        k = max(1, round(ratio * M))
        masks = [("random", ratio, random_masks(M, k, 1, np.random.default_rng(7))[0])]
        if shape:
            masks.append(("photo", ratio, topk_mask(photo()[0], k)))
        return "cycles", {"tag": f"tokens {M}, lanes {q.lanes}, word_bits {q.word_bits}",
                          "lanes": q.lanes, "word_bits": q.word_bits, "M": M,
                          "rows": cycle_runs(q, masks, lambda text: None)}

    jobs = [(f"offsets bits per position M={M}", bits)]
    for ratio in (0.25, 0.75) if quick else PICKS:
        jobs.append((f"offsets encode+decode M={M} keep={ratio:.0%}", lambda r=ratio: cycles(r)))
    return jobs


def summary_rows(kind, data):
    """``focus-rtl bench`` summary rows: the encoder's model is an estimate (the RTL forms at most
    one code per cycle and spends a cycle on an empty beat), the decoder's an upper bound. The
    physical bound is the busier port at one beat per cycle: ceil(M/a) mask beats or
    ceil(nbits/word_bits) code words."""
    if kind != "cycles":
        return []
    out = []
    M, a = data["M"], data["lanes"]
    for r in data["rows"]:
        bound = max(-(-M // a), r["words"])
        job = f"{r['kind']} M={M} keep {r['ratio']:.0%} n={r['n']} nbits={r['nbits']}"
        out.append({"block": "offset_encoder", "job": job, "measured": r["enc"],
                    "model": r["enc_model"], "model_kind": "estimate", "bound": bound,
                    "correct": True})
        out.append({"block": "offset_decoder", "job": job, "measured": r["dec"],
                    "model": r["dec_model"], "model_kind": "upper bound", "bound": bound,
                    "correct": True})
    return out


def write(records, out):
    """Write bits.md, bits.png, cycles.md and README.md of ``records`` to ``out``; returns the
    paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    bits = [data for kind, data in records if kind == "bits"]
    cycles_results = {}
    for kind, data in records:
        if kind == "cycles":
            cycles_results.setdefault(data["tag"], []).extend(data["rows"])
    if bits:
        b = bits[0]
        (out / "bits.md").write_text(bits_markdown(b["M"], b["tables"], b["trials"], b["seeds"]))
        plot(b["M"], b["tables"], out / "bits.png")
        paths += [out / "bits.md", out / "bits.png"]
    if cycles_results:
        (out / "cycles.md").write_text(cycles_markdown(cycles_results))
        paths.append(out / "cycles.md")
    if bits:
        summary = summary_markdown(bits[0]["M"], claim_summary(bits[0]["tables"]),
                                   cycles_results)
        (out / "README.md").write_text(summary)
        paths.append(out / "README.md")
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.bench.offsets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="M = 256, 3 trials, 2 crops, default parameters only")
    parser.add_argument("--trials", type=int, default=None, help="random masks per keep ratio")
    parser.add_argument("--out", type=Path, default=BUILD_ROOT / "bench" / "offsets")
    args = parser.parse_args(argv)

    start = time.time()

    def log(text):
        print(f"[{time.time() - start:6.1f} s] {text}", file=sys.stderr, flush=True)

    grid = 8 if args.quick else 16
    M = 4 * grid * grid
    trials = args.trials or (3 if args.quick else 8)
    seeds = [0, 1] if args.quick else [0, 1, 2, 3]
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2026)

    log(f"photo importance: {len(seeds)} crops, M = {M}")
    photo = photo_importance(grid, seeds)
    kinds = {
        "random": lambda k: random_masks(M, k, trials, rng),
        "photo": lambda k: [topk_mask(s, k) for s in photo],
    }
    tables = bits_table(M, kinds, log)
    (args.out / "bits.md").write_text(bits_markdown(M, tables, trials, seeds))
    plot(M, tables, args.out / "bits.png")
    log(f"wrote {args.out / 'bits.md'} and {args.out / 'bits.png'}")

    shapes = [FocusParams(tokens=M)] if args.quick else [FocusParams(tokens=M),
                                                         FocusParams(tokens=M, lanes=32)]
    picks = [0.05, 0.25, 0.5, 0.75, 0.95]
    cycle_rng = np.random.default_rng(7)
    masks = []
    for ratio in picks:
        k = round(ratio * M)
        masks.append(("random", ratio, random_masks(M, k, 1, cycle_rng)[0]))
        masks.append(("photo", ratio, topk_mask(photo[0], k)))
    cycles_results = {}
    for p in shapes:
        cycles_results[f"tokens {p.tokens}, lanes {p.lanes}, word_bits {p.word_bits}"] = \
            cycle_runs(p, masks, log)
    (args.out / "cycles.md").write_text(cycles_markdown(cycles_results))
    log(f"wrote {args.out / 'cycles.md'}")

    claims = claim_summary(tables)
    summary = summary_markdown(M, claims, cycles_results)
    (args.out / "README.md").write_text(summary)
    print(summary)
    log(f"wrote {args.out / 'README.md'}; done")


if __name__ == "__main__":
    main()
