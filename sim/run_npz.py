"""``focus-rtl run``: the golden model, or the RTL, on the user's own ``.npz`` data (spec 7).

``focus-rtl run sec|sic|focus -i data.npz -o result.npz`` runs :func:`golden.sec`,
:func:`golden.sic` or :func:`golden.focus`; with ``--rtl SIMULATOR`` it runs the same job through
the RTL (:mod:`sim`) instead and also saves the run's statistics. The keys are documented in
``focus-rtl run --help``.

Exit status: 0; 2 on bad arguments or a bad input file (missing, not an ``.npz``, a missing key,
a wrong dtype or shape: one line ``focus-rtl: error: ...``, the golden model's ``ValueError``
text passed through); 1 when the RTL fails on input the golden model accepts.
"""

import argparse
from pathlib import Path

from rtl.flow.cli_args import BadArgs, add_param_arguments, fail, params_from

from .runner import SIMULATORS

__all__ = ["add_parser", "run", "JOBS", "load_npz"]

JOBS = ("sec", "sic", "focus")

_EPILOG = """\
Input keys (numpy.savez / savez_compressed):
  scores      sec, focus: unsigned integer [R, M], the attention scores (spatial layout,
              whatever the --mode). Or instead:
  attention   float [R, M], >= 0: cast to fp16 and taken as its bit patterns
              (golden.scores_from_fp16).
  tokens      sic: integer [S, D], the kept tokens in position order; focus: integer [M, D],
              ALL image tokens. Signed, within the elem_bits of the parameters (8 by default).
              A float array is quantized first (golden.quantize, max|x| -> 127 at 8 bits).
              D must be a multiple of V = dim (--set dim=..., 32 by default).
  positions   sic only, optional: integer [S], strictly increasing (default 0 .. S-1). In
              focus the positions are those of the kept tokens.

Output keys:
  mask        bool [M] (sec, focus): the keep mask.
  words       uint64 [W] (sec, focus): the offset-code words; nbits: the code length in bits.
  importance  [M] (sec, focus): golden.importance(scores, mode) (inside the RTL the vector stays
              in SEC's buffer: this is the model's, which the mask is computed from).
  maps        int64 [S, D/V] (sic, focus): per token and column, its unique vector's index.
  uniques_<j> [U_j, V] (sic, focus): the unique vectors of column j, one array per column.
  stats_<key> (with --rtl): the run's statistics (cycles, counters), e.g. stats_cycles.

Job options: sec and focus need --keep; sic and focus need --frame-stride, --row-stride and a
threshold (--theta, a float rounded by golden.theta_q, or --theta-q, the integer theta_q).
--word-bits, --tile, --window, dim, elem_bits and theta_bits default to the parameters
(--preset, --set; the default preset matches golden's defaults). Without --preset and --set the
RTL gets parameters fitted to the data.

examples:
  focus-rtl run sec -i att.npz -o mask.npz --keep 100
  focus-rtl run sic -i tok.npz -o sic.npz --frame-stride 196 --row-stride 14 --theta 0.9
  focus-rtl run focus -i both.npz -o out.npz --keep 400 --frame-stride 196 --row-stride 14 \\
      --theta-q 230 --rtl verilator
"""


class BadInput(BadArgs):
    """A bad input file (missing, not an ``.npz``, a missing key, a wrong dtype): exit status 2."""


def add_parser(sub):
    """Add the ``run`` subcommand to the ``focus-rtl`` subparsers ``sub``."""
    parser = sub.add_parser(
        "run", help="the golden model or the RTL on your own .npz data",
        description="Run a SEC, SIC or whole Focus job on the arrays of an .npz file with the "
                    "golden model, or with --rtl through the RTL, and save the results as .npz.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("job", choices=JOBS, help="the job: sec, sic or focus")
    parser.add_argument("-i", "--input", required=True, metavar="FILE",
                        help="input .npz (keys below)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="output .npz (keys below)")
    parser.add_argument("--rtl", choices=SIMULATORS, metavar="SIMULATOR",
                        help="run the RTL on this simulator (amaranth, icarus, verilator) "
                             "instead of the golden model")
    # No --preset default: without --preset and --set the RTL gets parameters fitted to the data.
    add_param_arguments(parser, preset_default=None)
    job = parser.add_argument_group("job options")
    job.add_argument("--keep", type=int, metavar="K", help="tokens to keep (sec, focus)")
    job.add_argument("--mode", choices=("spatial", "temporal"), default="spatial",
                     help="SEC dataflow (default: spatial)")
    job.add_argument("--order", type=int, metavar="E",
                     help="Exp-Golomb order 0..7 (default: adaptive)")
    job.add_argument("--word-bits", type=int, metavar="N",
                     help="offset-code word width (default: the parameters' word_bits)")
    job.add_argument("--frame-stride", type=int, metavar="FS", help="tokens per frame (sic, focus)")
    job.add_argument("--row-stride", type=int, metavar="HS", help="tokens per row (sic, focus)")
    theta = job.add_mutually_exclusive_group()
    theta.add_argument("--theta", type=float, metavar="T",
                       help="similarity threshold in [0, 1), rounded by golden.theta_q")
    theta.add_argument("--theta-q", type=int, metavar="Q",
                       help="the integer threshold theta_q (theta = Q / 2**theta_bits)")
    job.add_argument("--tile", type=int, metavar="N", help="SIC tile (default: the parameters')")
    job.add_argument("--window", type=int, metavar="N",
                     help="SIC window (default: the parameters')")
    job.add_argument("--representative", choices=("first", "mean"), default="first",
                     help="unique vector of a group (default: first)")
    rtl = parser.add_argument_group("RTL options (with --rtl)")
    rtl.add_argument("--stalls", type=float, default=0.0, metavar="P",
                     help="probability of an input idle / output back-pressure cycle (default 0)")
    rtl.add_argument("--seed", type=int, default=0, help="stall seed (default 0)")
    return parser


def load_npz(path):
    """The arrays of the ``.npz`` file ``path`` as a dict; :class:`BadInput` with a one-line
    reason when it is missing or not an ``.npz`` archive."""
    import zipfile

    import numpy as np

    path = Path(path)
    if not path.exists():
        raise BadInput(f"input file {path} does not exist")
    if path.is_dir():
        raise BadInput(f"input {path} is a directory, not an .npz file")
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
            fh.seek(0)
            if not magic.startswith(b"PK") and magic != b"\x93NUMPY":
                # Not a zip archive (nor a .npy): say so, rather than pass on NumPy's guess
                # that it is a pickle.
                raise BadInput(f"{path} is not an .npz archive (not a zip file); write one with "
                               f"numpy.savez(path, scores=..., tokens=...)")
            data = np.load(fh, allow_pickle=False)
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise BadInput(f"{path} is a single .npy array, not an .npz archive (write one "
                               f"with numpy.savez(path, scores=..., tokens=...))")
            with data:
                return {key: data[key] for key in data.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise BadInput(f"{path} is not an .npz file: {_reason(exc)}") from None


def _reason(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_NEEDS = {
    "scores": "scores, unsigned integer [R, M] (or attention, float [R, M])",
    "tokens": "tokens, integer or float [S, D]",
}


def _key(data, key, job, path):
    if key not in data:
        have = ", ".join(sorted(data)) or "no arrays"
        raise BadInput(f"{path} has no {key!r} array: `run {job}` needs {_NEEDS[key]}; the file "
                       f"has {have}")
    return data[key]


def _scores(data, job, path):
    import numpy as np

    import golden

    if "scores" not in data and "attention" in data:
        attention = data["attention"]
        if not np.issubdtype(attention.dtype, np.floating):
            raise BadInput(f"attention must be a float array, not {attention.dtype} (give "
                           f"integer scores as 'scores')")
        return golden.scores_from_fp16(attention.astype(np.float16))
    return _key(data, "scores", job, path)


def _tokens(data, job, path, elem_bits):
    import numpy as np

    import golden

    tokens = _key(data, "tokens", job, path)
    if np.issubdtype(tokens.dtype, np.floating):
        return golden.quantize(tokens, elem_bits=elem_bits)
    return tokens


def _require(args, job, *names):
    missing = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name) is None]
    if missing:
        raise BadArgs(f"`run {job}` needs {' and '.join(missing)}")


def _settings(args):
    """(params for golden's defaults, params for the RTL or None, theta_q or None)."""
    import golden

    params = params_from(args.preset or "default", args.set)
    theta_q = args.theta_q
    if args.theta is not None:
        try:
            theta_q = golden.theta_q(args.theta, params.theta_bits)
        except ValueError as exc:
            raise BadArgs(f"--theta: {exc}") from None
    rtl_params = params if (args.preset or args.set) else None
    return params, rtl_params, theta_q


def _stats_arrays(stats):
    import numpy as np

    out = {}

    def put(key, value):
        if isinstance(value, dict):
            for k, v in value.items():
                put(f"{key}_{k}", v)
            return
        try:
            array = np.asarray(value)
        except (ValueError, TypeError):
            return
        if array.dtype.kind in "biuf":
            out[f"stats_{key}"] = array

    for key, value in stats.items():
        put(key, value)
    return out


def _execute(args):
    import numpy as np

    import golden

    params, rtl_params, theta_q = _settings(args)
    job, path = args.job, Path(args.input)
    if job in ("sec", "focus"):
        _require(args, job, "keep")
    if job in ("sic", "focus"):
        _require(args, job, "frame_stride", "row_stride")
        if theta_q is None:
            raise BadArgs(f"`run {job}` needs --theta or --theta-q")
    data = load_npz(path)
    word_bits = args.word_bits if args.word_bits is not None else params.word_bits
    tile = args.tile if args.tile is not None else params.tile
    window = args.window if args.window is not None else params.window
    sic_opts = dict(frame_stride=args.frame_stride, row_stride=args.row_stride, theta_q=theta_q,
                    theta_bits=params.theta_bits, tile=tile, window=window,
                    representative=args.representative, dim=params.dim)
    stats = {}
    rtl = dict(params=rtl_params, simulator=args.rtl, stalls=args.stalls, stats=stats,
               seed=args.seed)
    result = {}
    if job == "sec":
        scores = _scores(data, job, path)
        sec_opts = dict(mode=args.mode, order=args.order, word_bits=word_bits)
        if args.rtl:
            import sim

            mask, words, nbits = sim.sec(scores, args.keep, **sec_opts, **rtl)
        else:
            mask, words, nbits = golden.sec(scores, args.keep, **sec_opts)
        result.update(mask=mask, words=words, nbits=nbits,
                      importance=golden.importance(scores, args.mode))
    elif job == "sic":
        tokens = _tokens(data, job, path, params.elem_bits)
        positions = data.get("positions")
        if positions is None:
            positions = np.arange(np.shape(tokens)[0] if np.ndim(tokens) else 0)
        if args.rtl:
            import sim

            maps, uniques = sim.sic(tokens, positions, **sic_opts, **rtl)
        else:
            maps, uniques = golden.sic(tokens, positions, **sic_opts)
        result.update(maps=maps, **{f"uniques_{j}": u for j, u in enumerate(uniques)})
    else:
        scores = _scores(data, job, path)
        tokens = _tokens(data, job, path, params.elem_bits)
        opts = dict(mode=args.mode, order=args.order, word_bits=word_bits, **sic_opts)
        if args.rtl:
            import sim

            mask, words, nbits, maps, uniques = sim.focus(scores, tokens, args.keep, **opts,
                                                          **rtl)
        else:
            mask, words, nbits, maps, uniques = golden.focus(scores, tokens, args.keep, **opts)
        result.update(mask=mask, words=words, nbits=nbits, maps=maps,
                      importance=golden.importance(scores, args.mode),
                      **{f"uniques_{j}": u for j, u in enumerate(uniques)})
    if args.rtl:
        result.update(_stats_arrays(stats))
    return result


def _summary(job, result, args):
    parts = [f"{job}" + (f" on {args.rtl}" if args.rtl else " (golden)")]
    if "mask" in result:
        mask = result["mask"]
        parts.append(f"M = {mask.size}, kept {int(mask.sum())}, nbits {int(result['nbits'])}")
    if "maps" in result:
        uniques = [result[k].shape[0] for k in sorted(result) if k.startswith("uniques_")]
        parts.append(f"{result['maps'].shape[0]} tokens x {result['maps'].shape[1]} columns, "
                     f"uniques {uniques}")
    if "stats_cycles" in result:
        parts.append(f"{int(result['stats_cycles'])} cycles")
    return ": ".join(parts[:1]) + (": " + "; ".join(parts[1:]) if parts[1:] else "")


def run(args):
    """Run ``focus-rtl run``; returns the exit status."""
    import numpy as np

    try:
        result = _execute(args)
    except (BadArgs, ValueError) as exc:
        return fail(" ".join(str(exc).split()), 2)
    except (RuntimeError, AssertionError) as exc:  # the RTL failed (error flag, hang)
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        return fail(f"the RTL run failed: {first}")
    out = Path(args.output)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "wb") as f:
            np.savez(f, **{key: np.asarray(value) for key, value in result.items()})
    except OSError as exc:
        return fail(f"cannot write {out}: {exc.strerror or exc}")
    print(_summary(args.job, result, args))
    print(f"wrote {out}")
    return 0
