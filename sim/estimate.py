"""``focus-rtl estimate``: the Focus GEMM's cycle model applied to a whole model's layers.

The model of one GEMM job is :func:`golden.gemm_cycles.gemm_cycles`, the recurrence the RTL
follows exactly (checked against the RTL at every size the simulators run: tests and
``sim.bench.gemm``). Here it is applied to every GEMM of a transformer, the paper's template being
Qwen2-7B (the LLM of LLaVA-Video): d = 3584, 28 heads of 128, 28 layers, FFN 18 944, K and V
projections of 512 (4 KV heads), 11 648 tokens (64 frames of 182).

Per layer: the attention part (q, k, v projections; QK^T and SV per head; o projection) runs on
the tokens kept before the layer's pruning point, the FFN part (gate, up, down) on those kept after
it: the paper's SEC prunes after the attention of its chosen layers, keeping a fraction of the
original image tokens (default schedule 40/30/20/15/10 % at layers 3/6/9/18/26). SIC concentrates
the input of every projection and the queries of QK^T with the layer's vector sparsity s (a row
tile of m kept tokens streams p = round(m * (1 - s)) unique vectors per chunk); SV multiplies the
attention probabilities, which SIC does not concentrate (p = m). QK^T and SV count half (causal
attention), in the dense baseline and in Focus alike, as the paper's simulator does.

Three columns of cycles, all on the same hardware (a ``dim`` x ``dim`` FocusGemm with output tiles
of ``tile`` rows and ``scatter_rows``): dense (every token, identity maps), SEC only (kept tokens,
identity maps) and Focus (kept tokens, SIC's unique vectors).
"""

import argparse
import csv
import json
import sys
from pathlib import Path

from golden.gemm_cycles import gemm_cycles, tile_rows
from rtl.flow.cli_args import BadArgs, add_param_arguments, fail, params_from

__all__ = ["QWEN2_7B", "PAPER_KEEP", "PAPER_SPEEDUP", "layer_gemms", "gemm_job_cycles",
           "estimate", "parse_schedule", "read_trace", "photo_sparsity", "add_parser", "run"]

#: The paper's simulator template (Qwen2-7B, the LLM of LLaVA-Video-7B) and sequence length.
QWEN2_7B = {"name": "qwen2-7b", "d": 3584, "heads": 28, "head_dim": 128, "layers": 28,
            "ffn": 18944, "kv": 512, "tokens": 11648}
#: The paper's SEC schedule for LLaVA-Video: keep fraction of the image tokens from the layer on.
PAPER_KEEP = {3: 0.4, 6: 0.3, 9: 0.2, 18: 0.15, 26: 0.1}
#: The paper's speedups over a plain 32x32 systolic array: Focus, and SEC alone.
PAPER_SPEEDUP = {"focus": 4.47, "sec": 3.15}


def _cdiv(a, b):
    return -(-a // b)


def gemm_job_cycles(rows, k, n, sparsity, params):
    """Cycles of one GEMM [rows, k] x [k, n] on the FocusGemm of ``params`` when every row tile of
    m rows streams ``round(m * (1 - sparsity))`` (at least 1) unique vectors per chunk."""
    chunks = _cdiv(k, params.dim) * _cdiv(n, params.dim)
    runs = [(count * chunks, max(1, min(m, round(m * (1 - sparsity)))), m)
            for count, m in tile_rows(rows, params.tile)]
    return gemm_cycles(runs, params.dim, params.scatter_rows)


def layer_gemms(model, attn_rows, ffn_rows, sparsity, attention=True):
    """The GEMMs of one layer as ``(name, rows, k, n, sparsity, weight)``: ``weight`` is how many
    times the job counts (heads, halved for causal attention)."""
    d, kv, ffn = model["d"], model["kv"], model["ffn"]
    jobs = [("q_proj", attn_rows, d, d, sparsity, 1), ("k_proj", attn_rows, d, kv, sparsity, 1),
            ("v_proj", attn_rows, d, kv, sparsity, 1)]
    if attention and attn_rows:
        heads, hd = model["heads"], model["head_dim"]
        jobs += [("qk", attn_rows, hd, attn_rows, sparsity, heads / 2),
                 ("sv", attn_rows, attn_rows, hd, 0.0, heads / 2)]
    jobs += [("o_proj", attn_rows, d, d, sparsity, 1), ("gate_proj", ffn_rows, d, ffn, sparsity, 1),
             ("up_proj", ffn_rows, d, ffn, sparsity, 1),
             ("down_proj", ffn_rows, ffn, d, sparsity, 1)]
    return jobs


def _cost(jobs, params, sic=True):
    return sum(weight * gemm_job_cycles(rows, k, n, s if sic else 0.0, params)
               for _, rows, k, n, s, weight in jobs if rows)


def estimate(model, params, keeps, sparsities, *, tokens=None, attention=True):
    """Per-layer cycles: a list of dicts (``layer``, ``keep_attn``, ``keep_ffn``, ``rows_attn``,
    ``rows_ffn``, ``sparsity``, ``dense``, ``sec``, ``focus``).

    ``keeps[l]`` is ``(attention keep, FFN keep)`` of layer l (fractions of the tokens) and
    ``sparsities[l]`` its SIC vector sparsity in [0, 1).
    """
    tokens = model["tokens"] if tokens is None else tokens
    out = []
    dense_jobs = layer_gemms(model, tokens, tokens, 0.0, attention)
    dense = _cost(dense_jobs, params, sic=False)
    for layer in range(model["layers"]):
        (ka, kf), s = keeps[layer], sparsities[layer]
        ra, rf = max(1, round(tokens * ka)), max(1, round(tokens * kf))
        jobs = layer_gemms(model, ra, rf, s, attention)
        out.append({"layer": layer, "keep_attn": ka, "keep_ffn": kf, "rows_attn": ra,
                    "rows_ffn": rf, "sparsity": s, "dense": dense,
                    "sec": _cost(jobs, params, sic=False), "focus": _cost(jobs, params)})
    return out


def parse_schedule(text, layers):
    """``"3:0.4,6:0.3"`` -> per layer ``(attention keep, FFN keep)``: the fraction in force before
    the layer's pruning point and after it (pruning happens after the attention)."""
    points = {}
    for item in (t.strip() for t in (text or "").split(",")):
        if not item:
            continue
        layer, _, value = item.partition(":")
        try:
            layer, value = int(layer), float(value)
        except ValueError:
            raise BadArgs(f"--keep-schedule item {item!r} is not LAYER:FRACTION") from None
        if not 0 <= layer < layers or not 0 < value <= 1:
            raise BadArgs(f"--keep-schedule item {item!r}: the layer must be in [0, {layers - 1}] "
                          f"and the fraction in (0, 1]")
        points[layer] = value
    keeps, current = [], 1.0
    for layer in range(layers):
        before = current
        current = points.get(layer, current)
        keeps.append((before, current))
    return keeps


def read_trace(path, layers):
    """Per-layer ``keep`` and ``sparsity`` from a CSV (header ``layer,keep,sparsity``; either
    value column may be missing) or a JSON list of such objects: ``{layer: {"keep": .., ...}}``."""
    path = Path(path)
    try:
        if path.suffix == ".json":
            rows = json.loads(path.read_text())
        else:
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
    except (OSError, ValueError) as exc:
        raise BadArgs(f"--trace {path}: {exc}") from None
    trace = {}
    for row in rows:
        try:
            layer = int(row["layer"])
            values = {key: float(row[key]) for key in ("keep", "sparsity")
                      if row.get(key) not in (None, "")}
        except (KeyError, TypeError, ValueError):
            raise BadArgs(f"--trace {path}: every row needs an integer 'layer' and numeric "
                          f"'keep' / 'sparsity' values, not {row!r}") from None
        if not 0 <= layer < layers:
            raise BadArgs(f"--trace {path}: layer {layer} is not in [0, {layers - 1}]")
        if not 0 < values.get("keep", 1) <= 1 or not 0 <= values.get("sparsity", 0) < 1:
            raise BadArgs(f"--trace {path}: layer {layer}: keep must be in (0, 1] and sparsity "
                          f"in [0, 1)")
        trace[layer] = values
    return trace


def photo_sparsity(theta, representative="first", dim=32):
    """SIC's vector sparsity (1 - unique vectors / tokens) on the photograph (4 panned frames of
    14 x 14 patches, D = 2 * dim), computed by the golden model, bit-exact with the RTL."""
    import golden

    x, pos = golden.photo.photo_tokens(frames=4, grid=14, dim=2 * dim)
    maps, uniques = golden.sic(x, pos, frame_stride=196, row_stride=14,
                               theta_q=golden.theta_q(theta), representative=representative,
                               dim=dim)
    return 1 - sum(len(u) for u in uniques) / maps.size


def _parse_sparsity(text, dim):
    if text.startswith("photo:"):
        parts = text.split(":")
        try:
            theta = float(parts[1])
        except (IndexError, ValueError):
            raise BadArgs(f"--sparsity {text!r} is not photo:THETA[:first|mean]") from None
        representative = parts[2] if len(parts) > 2 else "first"
        if representative not in ("first", "mean") or not 0 <= theta < 1:
            raise BadArgs(f"--sparsity {text!r}: THETA must be in [0, 1), the representative "
                          f"first or mean")
        source = f"photograph, theta {theta}, {representative}"
        return photo_sparsity(theta, representative, dim), source
    try:
        value = float(text)
    except ValueError:
        raise BadArgs(f"--sparsity {text!r} is not a number or photo:THETA") from None
    if not 0 <= value < 1:
        raise BadArgs(f"--sparsity {value}: it must be in [0, 1)")
    return value, "given"


_EPILOG = """\
Sparsity and keep per layer: --keep-schedule LAYER:FRACTION,... (default: the paper's
3:0.4,6:0.3,9:0.2,18:0.15,26:0.1; '' for no pruning); --sparsity S (SIC vector sparsity, one
value for every layer; default 0.36, the mean of the paper's released per-run compression
ratios, tokens / vectors = 1.57 over its nine video runs), or photo:THETA[:first|mean] to measure
it with the unit's own SIC (golden, bit-exact with the RTL) on the photograph frames; --trace FILE
(.csv with a header layer,keep,sparsity, or .json, a list of such objects) overrides both for the
layers it lists.

examples:
  focus-rtl estimate                                 # the paper's template, schedule, sparsity
  focus-rtl estimate --sparsity photo:0.9            # sparsity measured on the photograph
  focus-rtl estimate --set scatter_rows=1            # 32 accumulators
  focus-rtl estimate --trace my_layers.csv --tokens 6272
"""


def add_parser(sub):
    """Add the ``estimate`` subcommand to the ``focus-rtl`` subparsers ``sub``."""
    parser = sub.add_parser(
        "estimate", help="the GEMM cycle model over a whole model's layers",
        description="Cycles of every GEMM of a transformer on the Focus GEMM (dense, SEC only, "
                    "Focus) from the analytic model the RTL matches, and the speedup per layer "
                    "and in total.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_param_arguments(parser)
    parser.add_argument("--tokens", type=int, metavar="S",
                        help=f"sequence length (default {QWEN2_7B['tokens']})")
    parser.add_argument("--keep-schedule", metavar="LIST",
                        default=",".join(f"{k}:{v}" for k, v in PAPER_KEEP.items()),
                        help="SEC keep fractions, LAYER:FRACTION,... (default: the paper's)")
    parser.add_argument("--sparsity", default="0.36", metavar="S|photo:THETA",
                        help="SIC vector sparsity of every layer (default 0.36)")
    parser.add_argument("--trace", metavar="FILE", help="per-layer keep and sparsity (.csv/.json)")
    parser.add_argument("--no-attention", action="store_true",
                        help="projections and FFN only (no QK^T and SV)")
    parser.add_argument("--json", metavar="FILE", help="also write the table as JSON")
    return parser


def _table(rows):
    header = ("| layer | keep (attn / FFN) | tokens (attn / FFN) | SIC sparsity | dense Mcycles | "
              "SEC only Mcycles | Focus Mcycles | SEC speedup | Focus speedup |")
    lines = [header, "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['layer']} | {r['keep_attn']:.0%} / {r['keep_ffn']:.0%} | "
                     f"{r['rows_attn']} / {r['rows_ffn']} | {r['sparsity']:.1%} | "
                     f"{r['dense'] / 1e6:.1f} | {r['sec'] / 1e6:.1f} | {r['focus'] / 1e6:.1f} | "
                     f"{r['dense'] / r['sec']:.2f} | {r['dense'] / r['focus']:.2f} |")
    total = {k: sum(r[k] for r in rows) for k in ("dense", "sec", "focus")}
    lines.append(f"| total | | | | {total['dense'] / 1e6:.1f} | {total['sec'] / 1e6:.1f} | "
                 f"{total['focus'] / 1e6:.1f} | **{total['dense'] / total['sec']:.2f}** | "
                 f"**{total['dense'] / total['focus']:.2f}** |")
    return "\n".join(lines), total


def run(args):
    """Run ``focus-rtl estimate``; returns the exit status."""
    try:
        params = params_from(args.preset, args.set)
        model = dict(QWEN2_7B)
        layers = model["layers"]
        tokens = model["tokens"] if args.tokens is None else args.tokens
        if tokens < 1:
            raise BadArgs(f"--tokens {tokens}: it must be at least 1")
        keeps = parse_schedule(args.keep_schedule, layers)
        sparsity, source = _parse_sparsity(args.sparsity, params.dim)
        sparsities = [sparsity] * layers
        if args.trace:
            for layer, values in read_trace(args.trace, layers).items():
                if "keep" in values:
                    keeps[layer] = (values["keep"], values["keep"])
                if "sparsity" in values:
                    sparsities[layer] = values["sparsity"]
            source += f", {args.trace} where it gives values"
    except BadArgs as exc:
        return fail(exc, 2)
    rows = estimate(model, params, keeps, sparsities, tokens=tokens,
                    attention=not args.no_attention)
    table, total = _table(rows)
    print(f"# {model['name']}: {layers} layers, d {model['d']}, FFN {model['ffn']}, {tokens} "
          f"tokens; FocusGemm {params.dim}x{params.dim}, tile {params.tile} rows, scatter_rows "
          f"{params.scatter_rows}; SIC sparsity: {source}\n")
    print(table)
    sec, focus = total["dense"] / total["sec"], total["dense"] / total["focus"]
    print(f"\nSpeedup over the dense array: Focus {focus:.2f}x, SEC only {sec:.2f}x "
          f"(paper: {PAPER_SPEEDUP['focus']}x and {PAPER_SPEEDUP['sec']}x); "
          f"SIC adds {focus / sec:.2f}x.")
    if args.json:
        Path(args.json).write_text(json.dumps({"params": params.to_dict(), "tokens": tokens,
                                               "rows": rows, "total": total}, indent=1) + "\n")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="estimate")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["estimate", *(argv or [])])
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
