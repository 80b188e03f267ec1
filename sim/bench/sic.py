"""Benchmark of the SIC block matcher (spec 4.2): ``.venv/bin/python -m sim.bench.sic``.

Not a test: it measures and reports, it asserts nothing. It writes markdown tables and PNG plots
to ``build/bench/sic/`` (``-o`` to change), printing a progress line per step:

1. **Cycles per tile** (``cycles.md``, ``cycles.png``): the RTL in the Amaranth simulator, no
   stalls, against :func:`golden.cycles.block_match_cycles` and the spec's targets
   (:func:`golden.cycles.block_match_target`: ``1.1 * S + 64`` with 7 comparators, 8 cycles per
   token with one), for 1 to 7 comparators and several tile sizes, on photograph tokens; and the
   cost of the ``mean`` representative (the end-of-tile drain), which the model leaves out.
2. **Area and Fmax** (``synth.md``): LUT/FF/BRAM/DSP and nextpnr Fmax on iCE40 UP5K and ECP5-85F
   for 1 and 7 comparators, through :func:`rtl.flow.synth.synth_block` (the block's own cells; Fmax
   of the block in its register-to-register harness), for a 4-bit "tiny" shape, the board preset and
   (ECP5 only) the default parameters. Results are cached in ``synth.json``.
3. **Clock gating on real data** (``gating.md``): photograph tokens; the share of
   comparator-cycles gated (no valid, non-zero candidate), and the bit toggles of the comparators'
   registers read from a VCD of the same run with gating on and off (``gate=False``: the datapath
   registers load whenever the pipeline moves).
4. **Accuracy and sparsity** (``accuracy.md``, ``sparsity.png``): the exact int8 decisions
   against :mod:`golden.reference`'s float64 cosine, per (token, candidate) pair, on the same int8
   tokens and on the unquantized features; and the sparsity (1 - uniques / tokens) the RTL reaches
   at thresholds 0.85, 0.9 and 0.95.

``--quick`` uses fewer frames and smaller tiles (a smoke run); ``--skip-synth`` skips step 2,
which takes several minutes per configuration with the YoWASP tools.
"""

import argparse
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

import golden
from golden import reference
from golden.photo import _features, photo_tokens
from rtl.flow.toolchain import BUILD_ROOT
from rtl.params import FocusParams
from rtl.sic.block_matcher import matcher_rounds

from ..block_match import Job, decode_beats, golden_job, run_jobs
from .claims import candidate_pairs
from .report import markdown_table as table
from .report import progress_printer

THRESHOLDS = (0.85, 0.9, 0.95)
GRID = 14
FS, HS = GRID * GRID, GRID

progress = progress_printer("bench_sic")



def _photo(frames, dim, seed=0, grid=GRID, elem_bits=8):
    return photo_tokens(frames=frames, grid=grid, dim=dim, seed=seed, elem_bits=elem_bits)


@contextmanager
def _cycles_plot(out, title):
    """The axes of a plot of cycles per tile (log scale) against tokens per tile S: what the block
    draws on them is written, with ``title`` and a legend, to ``out / "cycles.png"``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        yield ax
        ax.set_xlabel("tokens per tile S")
        ax.set_ylabel("cycles per tile")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(out / "cycles.png", dpi=120)
    finally:
        plt.close(fig)


# ---- 1. cycles --------------------------------------------------------------------------------

def bench_cycles(out, quick):
    sizes = (64, 256) if quick else (64, 256, 1024)
    p0 = FocusParams(layers=1, tile=max(sizes))
    x, pos = _photo(2 if quick else 6, p0.dim)
    theta = golden.theta_q(0.9)
    rows, measured = [], {}
    for k in range(1, 8):
        p = p0.replace(comparators=k)
        for size in sizes:
            job = Job(x[:size], pos[:size], FS, HS)
            (result,) = run_jobs(p, [job], thetas=[theta])
            model = golden.cycles.block_match_cycles(size, k)
            target = golden.cycles.block_match_target(size, k)
            measured[k, size] = result.cycles
            rows.append((k, size, result.cycles, model, target, f"{result.cycles / size:.3f}",
                         "yes" if result.cycles <= target else "**no**"))
            progress(f"cycles: {k} comparators, S = {size}: {result.cycles} (model {model}, "
                     f"target {target})")
    text = ["# Block matcher: cycles per tile\n",
            (f"Amaranth simulator, no stalls, representative `first`, photograph tokens "
            f"(V = {p0.dim}, window {p0.window}, FS = {FS}, HS = {HS}, theta 0.9). One tile of S "
            f"tokens per job; cycles from the first input transfer to the last output transfer. "
            f"Model: `golden.cycles.block_match_cycles` = S * ceil(7/c) + "
            f"{golden.cycles.BLOCK_MATCH_LATENCY}; target: `block_match_target` (7 comparators: "
            f"1.1 * S + 64; one: 8 cycles per token + 64; in between extended as ceil(7/c) + 1 "
            f"per token + 64).\n"),
            table(("comparators", "S", "measured", "model", "target", "cycles/token",
                   "within target"), rows)]

    # mean: the tile's unique vectors leave after its last map beat (the drain).
    size = max(sizes)
    mean_rows = []
    for k in (1, 7):
        p = p0.replace(comparators=k)
        for representative in ("first", "mean"):
            job = Job(x[:size], pos[:size], FS, HS, mean=representative == "mean")
            (result,) = run_jobs(p, [job], thetas=[theta])
            uniques = result.uniques
            model = golden.cycles.block_match_cycles(size, k)
            extra = result.cycles - model
            mean_rows.append((k, representative, size, uniques, result.cycles, model, extra,
                              f"{extra / max(uniques, 1):.2f}" if representative == "mean"
                              else "-"))
            progress(f"cycles: {k} comparators, {representative}: {result.cycles}")
    text += ["\n## The mean representative\n",
             (f"With `mean`, each tile's unique vectors leave after its last map beat: the group "
             f"sums are divided bit-serially ({p0.elem_bits} cycles for all V elements at once; "
             f"{p0.elem_bits + 2} cycles per unique vector, 2 for a group of one, which needs no "
             f"division) and the next tile waits. The model covers `first`.\n"),
             table(("comparators", "representative", "S", "uniques", "measured", "model (first)",
                    "extra", "extra per unique"), mean_rows)]
    (out / "cycles.md").write_text("".join(text))

    with _cycles_plot(out, "Block matcher: measured cycles (points) against the targets") as ax:
        span = np.linspace(0, max(sizes), 50)
        for k in range(1, 8):
            ax.plot(sizes, [measured[k, s] for s in sizes], "o-", label=f"{k} comparators")
        for k, style in ((1, ":"), (7, "--")):
            ax.plot(span, [golden.cycles.block_match_target(int(s), k) for s in span],
                    "k" + style, lw=1, label=f"target, {k} comparator{'s' if k > 1 else ''}")
    return "".join(text)


# ---- 2. synthesis -----------------------------------------------------------------------------

def bench_synth(out, quick, resynth=False, timeout=900):
    import json

    from rtl.flow.synth import synth_block
    # The board preset does not fit an UP5K even with one comparator (its multipliers go to LUTs
    # once the 8 DSPs are used up), so a 4-bit "tiny" shape gives the iCE40 Fmax. The default
    # shape is ECP5 only: its multipliers and memories are far beyond an UP5K.
    tiny = FocusParams(dim=4, elem_bits=4, theta_bits=4, window=16, tile=64, layers=4)
    configs = [("tiny", tiny, ("ice40", "ecp5")),
               ("board", FocusParams.board(), ("ice40", "ecp5")),
               ("default", FocusParams(), ("ecp5",))]
    if quick:
        configs = configs[:1]
    cache_path = out / "synth.json"
    cache = json.loads(cache_path.read_text()) if cache_path.is_file() and not resynth else {}
    rows = []
    for name, base, targets in configs:
        for k in (1, 7):
            p = base.replace(comparators=k)
            for target in targets:
                key = f"{p.tag}/{target}"
                if key in cache:
                    r = cache[key]
                    progress(f"synth: {name} shape, {k} comparators, {target}: cached")
                else:
                    progress(f"synth: {name} shape, {k} comparators, {target} ...")
                    r = synth_block("block_matcher", target, p, timeout=timeout)
                    cache[key] = {k_: v for k_, v in r.items() if k_ != "block_cells"}
                    cache_path.write_text(json.dumps(cache, indent=1, sort_keys=True))
                b = r.get("block") or {}
                fmax = r.get("fmax_mhz")
                bram = b.get("bram", "-")
                if target == "ice40" and b:
                    bram = f"{b['bram']} + {b.get('spram', 0)} SPRAM"
                rows.append((name, f"V={p.dim} e={p.elem_bits} W={p.window} T={p.tile}", k,
                             target, r["status"],
                             b.get("lut", "-"), b.get("ff", "-"), bram, b.get("dsp", "-"),
                             f"{fmax:.1f}" if fmax else "-",
                             "off (fallback)" if r.get("dsp_fallback") else
                             ("on" if r.get("dsp_inference") else "off"),
                             f"{r['seconds']['total']:.0f}"))
                progress(f"synth: {name}, {k}, {target}: {r['status']} {b} Fmax {fmax}")
    text = ["# Block matcher: area and Fmax\n",
            ("`rtl.flow.synth.synth_block` (YoWASP Yosys + nextpnr): the block's own cells inside "
             "its register-to-register timing harness; iCE40 UP5K (SG48) and ECP5 LFE5U-85F. "
             "`status` is nextpnr's: a design larger than the device is `does_not_fit` (its Yosys "
             "counts are still given, and it has no Fmax). DSP: multipliers go to DSP blocks when "
             "they fit (`on`), otherwise to LUTs. Each tool run is limited to "
            f"{timeout} s (`--synth-timeout`): a `timeout` keeps the Yosys counts. Results are "
            "cached in `synth.json` (`--resynth` redoes them).\n"),
            table(("name", "shape", "comparators", "device", "status", "LUT", "FF", "BRAM",
                   "DSP", "Fmax MHz", "DSP inference", "seconds"), rows)]
    (out / "synth.md").write_text("".join(text))
    return "".join(text)


# ---- 3. gating and toggles --------------------------------------------------------------------

# The comparators' datapath registers (clock-gated) and control registers (always clocked).
_GATED = {"dot1", "norms1", "theta_sq1", "dot2", "dot_sq2", "rhs2", "dot3", "dot_sq3", "similar3"}


def vcd_toggles(path, widths=None):
    """Bit toggles per (scope, name) of every variable in a VCD file (the first value is not a
    toggle; x/z bits count as 0). ``widths``, a dict, gets each variable's width."""
    ids, last, toggles = {}, {}, {}
    scope = []
    with open(path) as f:
        for line in f:
            if line.startswith("$enddefinitions"):
                break
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "$scope":
                scope.append(parts[2])
            elif parts[0] == "$upscope":
                scope.pop()
            elif parts[0] == "$var":
                ids.setdefault(parts[3], []).append((".".join(scope), parts[4]))
                if widths is not None:
                    widths[".".join(scope), parts[4]] = int(parts[2])
        for line in f:
            if not line or line[0] in "#$":
                continue
            if line[0] in "bB":
                value, code = line[1:].split()
                bits = int(re.sub("[xXzZ]", "0", value), 2)
            elif line[0] in "01xXzZ":
                code, bits = line[1:].strip(), 1 if line[0] == "1" else 0
            else:
                continue
            if code in last:
                toggles[code] = toggles.get(code, 0) + bin(last[code] ^ bits).count("1")
            last[code] = bits
    out = {}
    for code, names in ids.items():
        for name in names:
            out[name] = out.get(name, 0) + toggles.get(code, 0)
    return out


def _is_comparator(scope):
    return re.fullmatch(r"comparator\d+", scope.split(".")[-1]) is not None


def _comparator_toggles(toggles):
    gated = sum(n for (scope, name), n in toggles.items()
                if _is_comparator(scope) and name in _GATED)
    control = sum(n for (scope, name), n in toggles.items()
                  if _is_comparator(scope)
                  and re.fullmatch(r"(valid|nonzero)\d|active|gated", name))
    return gated, control


def bench_gating(out, quick):
    # A VCD of every signal is slow to write: 4 frames (784 tokens) in the full run.
    frames = 2 if quick else 4
    work = BUILD_ROOT / "bench" / "sic" / "vcd"
    work.mkdir(parents=True, exist_ok=True)
    x, pos = _photo(frames, 32)
    theta = golden.theta_q(0.9)
    keep = np.random.default_rng(1).random(len(pos)) < 0.5
    cases = [("all tokens", x, pos), ("50 % of positions pruned", x[keep], pos[keep])]
    rows, toggle_rows = [], []
    for k in (7, 1):
        p = FocusParams(comparators=k, layers=1)
        for label, xs, ps in cases:
            job = Job(xs, ps, FS, HS)
            slots = k * matcher_rounds(p) * len(ps)
            results = {}
            for gate in (True, False):
                vcd = work / f"c{k}_{'pruned' if len(ps) < len(pos) else 'all'}_{gate}.vcd"
                (results[gate],) = run_jobs(p, [job], thetas=[theta], vcd=vcd, gate=gate)
                widths = {}
                results[gate].stats["toggles"] = _comparator_toggles(vcd_toggles(vcd, widths))
                results[gate].stats["bits"] = sum(w for (scope, name), w in widths.items()
                                                  if scope.split(".")[-1] == "comparator0"
                                                  and name in _GATED)
                vcd.unlink()
                progress(f"gating: {k} comparators, {label}, gate={gate}: "
                         f"{results[gate].stats['toggles']}")
            on, off = results[True], results[False]
            assert decode_beats(on.beats, 32, False)[0].tolist() == \
                decode_beats(off.beats, 32, False)[0].tolist()
            rows.append((k, label, len(ps), slots, on.active, on.gated,
                         f"{100 * on.gated / slots:.1f} %"))
            g_on, c_on = on.stats["toggles"]
            g_off = off.stats["toggles"][0]
            bits = on.stats["bits"]
            # Clock events of the datapath registers: each clocked bit, each clocked cycle. Off:
            # every comparator's registers every cycle of the job (no back-pressure here); on:
            # once per computed comparison (each stage once).
            clocked_off, clocked_on = bits * k * on.cycles, bits * on.active
            toggle_rows.append((k, label, g_off, g_on, f"{100 * (1 - g_on / g_off):.1f} %",
                                clocked_off, clocked_on,
                                f"{100 * (1 - clocked_on / clocked_off):.1f} %", c_on,
                                on.cycles))
    text = ["# Block matcher: clock gating on photograph tokens\n",
            (f"{frames} frames of a {GRID}x{GRID} grid panned over the photograph, V = 32 "
            f"(default parameters), FS = {FS}, HS = {HS}, theta 0.9, tile 1024. A comparator "
            f"slot is gated when its candidate is missing (outside the tile, pruned, the first "
            f"row or frame, or past the 7 candidates in the last round) or zero, or the token is "
            f"zero: its datapath registers are not clocked.\n"),
            table(("comparators", "tokens", "S", "comparator slots", "active", "gated",
                   "gated share"), rows),
            "\n## Register toggles (VCD of the Amaranth simulation)\n",
            ("Bit toggles of the comparators' datapath registers (dot, norms, theta**2, dot**2, "
            "right side, result: the clock-gated ones), the same job with gating off (registers "
            "load whenever the pipeline moves) and on. The control registers (valid, non-zero, "
            "counters) are clocked in both.\n"),
            ("Data toggles only fall where a skipped comparison would have loaded changing data: "
            "a missing candidate's slot often holds zeros (never written), and a zero operand "
            "makes the products zero with or without gating. The clock itself is what gating "
            "removes: *clocked bits* counts register-bit clock events of the datapath registers "
            f"(widths read from the VCD: {bits} bits per comparator), every cycle of the job "
            "when ungated, once per computed comparison when gated.\n"),
            table(("comparators", "tokens", "datapath toggles, gating off",
                   "datapath toggles, gating on", "toggles saved", "clocked bits, off",
                   "clocked bits, on", "clock events saved", "control toggles", "cycles"),
                  toggle_rows)]
    (out / "gating.md").write_text("".join(text))
    return "".join(text)


# ---- 4. accuracy and sparsity -----------------------------------------------------------------

def _pairs(pos, fs, hs, tile):
    """(token, candidate) index pairs of every existing candidate in the tile."""
    pairs = candidate_pairs(pos, tile, fs, hs)
    return pairs[:, 0], pairs[:, 1]


def bench_accuracy(out, quick):
    frames = 2 if quick else 8
    p = FocusParams(layers=3, comparators=7)
    x, pos = _photo(frames, p.dim)
    feats = _features(frames, GRID, 8, p.dim, 0, (3, 2), 3.0, 0.0)
    who, cand = _pairs(pos, FS, HS, p.tile)
    nonzero = np.any(x[who] != 0, axis=1) & np.any(x[cand] != 0, axis=1)
    who, cand = who[nonzero], cand[nonzero]
    thetas = [golden.theta_q(t) for t in THRESHOLDS]
    jobs = [Job(x, pos, FS, HS, layer=n) for n in range(len(THRESHOLDS))]
    progress(f"accuracy: RTL on {len(pos)} photograph tokens at 3 thresholds ...")
    results = run_jobs(p, jobs, thetas=thetas)
    rows, sparsity = [], {}
    for n, (theta, tq) in enumerate(zip(THRESHOLDS, thetas, strict=True)):
        got_map, got_u = decode_beats(results[n].beats, p.dim, False)
        want_map, want_u = golden_job(p, jobs[n], thetas)
        exact = bool(np.array_equal(got_map, want_map) and np.array_equal(got_u, want_u))
        int8 = golden.similar(x[who], x[cand], tq)
        same = reference.similar(x[who], x[cand], tq / (1 << p.theta_bits))
        nominal = reference.similar(feats[who], feats[cand], theta)
        ref_same = reference.block_match(x, pos, frame_stride=FS, row_stride=HS,
                                         theta=tq / (1 << p.theta_bits), tile=p.tile)
        ref_float = reference.block_match(feats, pos, frame_stride=FS, row_stride=HS,
                                          theta=theta, tile=p.tile)
        s_rtl = 1 - len(got_u) / len(pos)
        s_same = 1 - len(ref_same[1]) / len(pos)
        s_float = 1 - len(ref_float[1]) / len(pos)
        sparsity[theta] = (s_rtl, s_float)
        rows.append((theta, f"{tq}/{1 << p.theta_bits}", "yes" if exact else "**no**",
                     len(who), int(int8.sum()),
                     f"{100 * np.mean(int8 == same):.3f} %",
                     f"{100 * np.mean(int8 == nominal):.2f} %",
                     f"{100 * np.mean(got_map == ref_same[0]):.2f} %",
                     f"{100 * s_rtl:.1f} %", f"{100 * s_same:.1f} %", f"{100 * s_float:.1f} %"))
        progress(f"accuracy: theta {theta}: sparsity {100 * s_rtl:.1f} %, pair agreement "
                 f"{100 * np.mean(int8 == nominal):.2f} % with float features")
    text = ["# Block matcher: int8 decisions against float64, and sparsity\n",
            (f"{frames} frames ({len(pos)} tokens) of a {GRID}x{GRID} grid panned over the "
            f"photograph, V = {p.dim}, int8 tokens from `golden.photo.photo_tokens`, FS = {FS}, "
            f"HS = {HS}, tile {p.tile}, 7 comparators. Pairs: every (token, existing non-zero "
            f"candidate) in the tile.\n\n"
            "- *RTL = golden*: the RTL's map and unique vectors equal `golden.block_match`.\n"
            "- *same tokens*: the exact int8 test against `golden.reference.similar` (float64 "
            "cosine) on the same int8 tokens with theta = theta_q / 2^F: it isolates the "
            "arithmetic (float64 rounding at exact-threshold ties).\n"
            "- *float features*: against float64 cosine on the unquantized features (before "
            "int8 quantization) with the nominal theta: the end-to-end effect of int8 "
            "quantization and of rounding theta to theta_q.\n"
            "- *map agreement*: tokens whose map index is the same as the float64 model's on the "
            "same tokens.\n"
            "- *sparsity*: 1 - uniques / tokens.\n"),
            table(("theta", "theta_q", "RTL = golden", "pairs", "similar pairs (int8)",
                   "pair agreement, same tokens", "pair agreement, float features",
                   "map agreement, same tokens", "sparsity RTL (int8)",
                   "sparsity float64, same tokens", "sparsity float64, float features"), rows)]
    (out / "accuracy.md").write_text("".join(text))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(THRESHOLDS, [100 * sparsity[t][0] for t in THRESHOLDS], "o-", label="RTL (int8, exact)")
    ax.plot(THRESHOLDS, [100 * sparsity[t][1] for t in THRESHOLDS], "s--",
            label="float64 on float features")
    ax.set_xlabel("threshold theta")
    ax.set_ylabel("sparsity (%)")
    ax.set_title(f"Sparsity on photograph tokens ({frames} frames)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "sparsity.png", dpi=120)
    plt.close(fig)
    return "".join(text)


# ---- focus-rtl bench (sim.bench.suite)
# ------------------------------------------------------------

def cycles_row(p, x, pos, fs, hs, theta, mean=False):
    """One tile of ``len(pos)`` tokens through the block matcher at ``p``: a dict with the
    measured cycles, the model (``first``), the target and the check against golden."""
    job = Job(x, pos, fs, hs, mean=mean)
    (result,) = run_jobs(p, [job], thetas=[theta])
    size, k = len(pos), p.comparators
    got = decode_beats(result.beats, p.dim, mean)
    want = golden_job(p, job, [theta])
    return {"comparators": k, "S": size, "representative": "mean" if mean else "first",
            "measured": result.cycles, "model": golden.cycles.block_match_cycles(size, k),
            "target": golden.cycles.block_match_target(size, k), "uniques": result.uniques,
            "error": result.error,
            "correct": bool(np.array_equal(got[0], want[0])
                            and np.array_equal(got[1], want[1]))}


def photo_grid(window):
    """The largest photo grid g <= 14 whose strides fit the window: g*g + g + 1 < window."""
    return max(g for g in range(1, GRID + 1) if g * g + g + 1 < window)


def plan(p, quick=False):
    """The jobs of ``focus-rtl bench`` for ``p``: ``(label, run)`` pairs, ``run()`` returning
    ``("cycles", row)``.

    Photograph tokens (V = ``p.dim``, ``p.elem_bits``; the grid fitted to the window,
    FS = grid**2, HS = grid), theta 0.9 (or the largest below 1 at
    ``p.theta_bits``), one tile of S tokens per job. Full: 1 to 7 comparators,
    S in {64, 256, 1024} up to ``p.tile``, and the ``mean`` representative with 1 and 7
    comparators at the largest S. Quick: ``p.comparators`` and S = min(64, tile)."""
    grid = photo_grid(p.window)
    sizes = [S for S in (64, 256, 1024) if S <= p.tile] or [p.tile]
    if quick:
        sizes = [min(sizes[0], 64)]
    frames = -(-max(sizes) // (grid * grid))
    fs, hs = grid * grid, grid
    theta = min(int(0.9 * (1 << p.theta_bits) + 0.5), (1 << p.theta_bits) - 1)
    state = {}

    def tokens():
        if not state:
            state["x"] = _photo(frames, p.dim, grid=grid, elem_bits=p.elem_bits)
        return state["x"]

    def one(k, size, mean=False):
        x, pos = tokens()
        return "cycles", cycles_row(p.replace(comparators=k), x[:size], pos[:size], fs, hs,
                                    theta, mean)

    jobs = []
    for k in [p.comparators] if quick else range(1, 8):
        for size in sizes:
            jobs.append((f"sic block match c={k} S={size}", lambda k=k, s=size: one(k, s)))
    if not quick and p.mean_unit:          # a build without the mean unit rejects mean jobs
        for k in (1, 7):
            jobs.append((f"sic block match c={k} S={sizes[-1]} mean",
                         lambda k=k: one(k, sizes[-1], True)))
    return jobs


def summary_rows(kind, row):
    """``focus-rtl bench`` summary rows: the model is exact for ``first`` and leaves out the
    ``mean`` drain; the physical bound is one token per cycle."""
    exact = row["representative"] == "first"
    return [{"block": "block_matcher", "job": f"c={row['comparators']} S={row['S']} "
                                             f"{row['representative']}",
             "measured": row["measured"], "model": row["model"],
             "model_kind": "exact" if exact else "first only", "bound": row["S"],
             "correct": row["correct"] and not row["error"]}]


def write(records, out):
    """Write ``cycles.md`` and ``cycles.png`` of ``records`` to ``out``; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [r for _, r in records]
    first = [r for r in rows if r["representative"] == "first"]
    mean = [r for r in rows if r["representative"] == "mean"]
    text = ["# Block matcher: cycles per tile\n",
            ("Amaranth simulator, no stalls, photograph tokens, theta 0.9. Model: "
            "`golden.cycles.block_match_cycles` = S * ceil(7/c) + "
            f"{golden.cycles.BLOCK_MATCH_LATENCY} (for `first`); target: `block_match_target`; "
            "bound: one token per cycle.\n"),
            table(("comparators", "S", "representative", "measured", "model", "target",
                   "cycles/token", "within target", "= golden"),
                  [(r["comparators"], r["S"], r["representative"], r["measured"], r["model"],
                    r["target"], f"{r['measured'] / r['S']:.3f}",
                    "yes" if r["measured"] <= r["target"] else "**no**",
                    "yes" if r["correct"] else "**NO**") for r in first + mean])]
    (out / "cycles.md").write_text("".join(text))
    paths = [out / "cycles.md"]
    if first:
        with _cycles_plot(out, "Block matcher: measured (points), model (x), bound (dotted)") as ax:
            for k in sorted({r["comparators"] for r in first}):
                sel = [r for r in first if r["comparators"] == k]
                ax.plot([r["S"] for r in sel], [r["measured"] for r in sel], "o-",
                        label=f"{k} comparators, measured")
                ax.plot([r["S"] for r in sel], [r["model"] for r in sel], "kx", ms=4)
            sizes = sorted({r["S"] for r in first})
            ax.plot(sizes, sizes, "k:", lw=1, label="bound: one token per cycle")
        paths.append(out / "cycles.png")
    return paths


STEPS = ("cycles", "gating", "accuracy", "synth")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.bench.sic", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("-o", "--out", default=str(BUILD_ROOT / "bench" / "sic"))
    parser.add_argument("--quick", action="store_true", help="fewer frames, smaller tiles")
    parser.add_argument("--skip-synth", action="store_true", help="skip the synthesis step")
    parser.add_argument("--resynth", action="store_true", help="ignore cached synthesis results")
    parser.add_argument("--synth-timeout", type=float, default=900,
                        help="seconds allowed per Yosys or nextpnr run (default 900)")
    parser.add_argument("--only", choices=STEPS, action="append",
                        help="run only this step (repeatable); report.md joins every step's "
                             "latest table")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = args.only or [s for s in STEPS if not (s == "synth" and args.skip_synth)]
    progress(f"writing to {out}: {', '.join(steps)}")
    run = {"cycles": lambda: bench_cycles(out, args.quick),
           "gating": lambda: bench_gating(out, args.quick),
           "accuracy": lambda: bench_accuracy(out, args.quick),
           "synth": lambda: bench_synth(out, args.quick, args.resynth, args.synth_timeout)}
    for step in steps:
        run[step]()
    parts = [(out / f"{step}.md").read_text() for step in STEPS if (out / f"{step}.md").is_file()]
    (out / "report.md").write_text("\n".join(parts))
    progress(f"done: {', '.join(sorted(f.name for f in out.iterdir() if f.is_file()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
