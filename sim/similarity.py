"""The similarity comparator's RTL behind the signature of :func:`golden.similarity.similar`
(spec 4.1 and 6).

:func:`similar` runs :class:`rtl.sic.similarity_comparator.SimilarityComparator` in the Amaranth
simulator, or its emitted Verilog under cocotb on Icarus or Verilator, and returns what
``golden.similar`` returns for the same arguments. :func:`compare` is the lower-level driver (one
threshold per comparison; also returns the dot products), and :func:`comparison_vectors` makes the
regression mix used by the tests and the cocotb testbench.
"""

import numpy as np

from golden.similarity import (
    check_pair,
    check_theta_bits,
    check_theta_q,
    check_vectors,
    dot,
    signed_bits,
    sqnorm,
)
from rtl.params import FocusParams, check_limit
from rtl.sic.similarity_comparator import SimilarityComparator

from .runner import check_simulator, run_job
from .streams import rtl_failures, run_streams

__all__ = ["similar", "compare", "fit_params", "comparison_vectors"]


def fit_params(x, y, theta_bits=8):
    """The :class:`FocusParams` :func:`similar` uses when given none: ``dim`` = V, ``theta_bits``,
    and ``elem_bits`` = 8, or wider (up to 16) when the data needs it."""
    elem_bits = max(8, signed_bits(x), signed_bits(y))
    if elem_bits > 16:
        name = "x" if signed_bits(x) > 16 else "y"
        check_vectors(x if name == "x" else y, name, 16)
    return FocusParams(dim=check_limit("dim", x.shape[-1], "V (the vectors' length)"),
                       theta_bits=theta_bits, elem_bits=elem_bits)


def _check_params(params, x, y, theta_bits):
    if not isinstance(params, FocusParams):
        raise TypeError(f"params must be a FocusParams, not {params!r}")
    if params.dim != x.shape[-1]:
        raise ValueError(f"params.dim = {params.dim} does not match V = {x.shape[-1]} of x and y")
    if params.theta_bits != theta_bits:
        raise ValueError(f"params.theta_bits = {params.theta_bits} does not match theta_bits = "
                         f"{theta_bits}")
    check_vectors(x, "x", params.elem_bits)
    check_vectors(y, "y", params.elem_bits)


def similar(x, y, theta_q, theta_bits=8, *, params=None, simulator="amaranth", stalls=0.0,
            stats=None, seed=0):
    """cos(x, y) > theta_q / 2**theta_bits, computed by the RTL; the same result as
    :func:`golden.similarity.similar` for the same arguments.

    Leading dimensions of ``x`` and ``y`` broadcast, and the comparisons stream through one
    comparator in C order, one per cycle at best (latency 7 cycles). The squared norms nx and ny
    are comparator *inputs* (in SIC they are computed once, when a token enters the window, spec
    4.1), so this driver computes them as exact integers in NumPy
    (:func:`golden.similarity.sqnorm`).

    Parameters
    ----------
    x, y : integer arrays [..., V]
    theta_q : int
        The threshold numerator, 0 <= theta_q < 2**theta_bits.
    theta_bits : int
        F, the threshold's fraction bits.
    params : FocusParams or None
        The comparator's parameters; None fits them to the data (:func:`fit_params`). Parameters
        that do not fit (``dim`` != V, ``theta_bits`` differs, elements out of ``elem_bits``) raise
        ``ValueError``.
    simulator : str
        ``"amaranth"`` (built with the ICG modelled as a clock enable), ``"icarus"`` or
        ``"verilator"`` (the emitted Verilog, with the behavioural ICG for ``gating="icg"``, under
        cocotb).
    stalls : float
        Probability of an input idle and of an output back-pressure cycle (seeded by ``seed``).
    stats : dict or None
        Filled with ``cycles`` (first input transfer to last output transfer, inclusive),
        ``active`` and ``gated`` (comparisons computed, and skipped with a zero norm).

    Returns
    -------
    numpy.ndarray of bool, the broadcast leading shape (0-d for single vectors).
    """
    x, y, shape = check_pair(x, y)
    theta_bits = check_theta_bits(theta_bits)
    tq = check_theta_q(theta_q, theta_bits)
    check_simulator(simulator)
    v = x.shape[-1]
    if params is None and v == 0:
        # V = 0: every vector is zero, so never similar (golden's answer); no comparator has 0
        # elements, so nothing runs.
        if stats is not None:
            stats.update(cycles=0, active=0, gated=0)
        return np.zeros(shape, bool)
    if params is None:
        params = fit_params(x, y, theta_bits)
    else:
        _check_params(params, x, y, theta_bits)
    xs = np.broadcast_to(x, shape + (v,)).reshape(-1, v)
    ys = np.broadcast_to(y, shape + (v,)).reshape(-1, v)
    with rtl_failures("sim.similar"):
        result, _, run_stats = compare(xs, ys, np.full(len(xs), tq), params, simulator=simulator,
                                       stalls=stalls, seed=seed)
    if stats is not None:
        stats.update(run_stats)
    return result.reshape(shape)


def compare(x, y, theta_q, params, *, simulator="amaranth", stalls=0.0, seed=0):
    """Stream comparisons ``(x[i], y[i], theta_q[i])`` through the comparator.

    ``x`` and ``y`` are [N, V] integer arrays within ``params.elem_bits``, ``theta_q`` is [N];
    the squared norms are computed here (exact int64). Returns ``(similar, dot, stats)``:
    bool [N], int64 [N] (the comparator's dot output: 0 for a skipped comparison) and
    ``{"cycles", "active", "gated"}``.
    """
    check_simulator(simulator)
    x = np.asarray(x, np.int64)
    y = np.asarray(y, np.int64)
    theta_q = np.asarray(theta_q, np.int64)
    n = len(x)
    if n == 0:
        return np.zeros(0, bool), np.zeros(0, np.int64), {"cycles": 0, "active": 0, "gated": 0}
    nx, ny = sqnorm(x), sqnorm(y)
    if simulator == "amaranth":
        return _compare_amaranth(x, y, nx, ny, theta_q, params, stalls, seed)
    return _compare_cocotb(x, y, nx, ny, theta_q, params, simulator, stalls, seed)


def _compare_amaranth(x, y, nx, ny, theta_q, params, stalls, seed):
    payloads = [{"x": a, "y": b, "nx": int(na), "ny": int(nb), "theta_q": int(t)}
                for a, b, na, nb, t in zip(x.tolist(), y.tolist(), nx, ny, theta_q, strict=True)]
    dut = SimilarityComparator(params, icg_cell=None)
    outputs, run = run_streams(dut, {"i_stream": payloads}, {"o_stream": len(payloads)},
                               stalls=stalls, seed=seed, probes=("active", "gated"))
    received = outputs["o_stream"]
    result = np.array([r["similar"] for r in received], bool)
    dots = np.array([r["dot"] for r in received], np.int64)
    return result, dots, {"cycles": run["cycles"], "active": run["active"],
                          "gated": run["gated"]}


def _compare_cocotb(x, y, nx, ny, theta_q, params, simulator, stalls, seed):
    out = run_job("similarity_comparator", params,
                  {"x": x, "y": y, "nx": nx, "ny": ny, "theta_q": theta_q,
                   "stalls": float(stalls), "seed": int(seed)},
                  test_module="sim.tb.similarity_comparator", simulator=simulator,
                  case="similar")
    return (out["similar"].astype(bool), out["dot"].astype(np.int64),
            {key: int(out[key]) for key in ("cycles", "active", "gated")})


# ---- test vectors ---------------------------------------------------------------------------

def _sum_of_squares(n, k, limit):
    """``k`` integers in [0, limit] whose squares sum to ``n`` (largest first), or None."""
    if k == 0:
        return [] if n == 0 else None
    top = min(limit, int(np.sqrt(n)))
    for a in range(top, -1, -1):
        if a * a * k < n:   # the remaining k-1 terms are at most a each
            break
        rest = _sum_of_squares(n - a * a, k - 1, a)
        if rest is not None:
            return [a] + rest
    return None


def _exact_pair(params, rng):
    """A pair (x, y) whose cosine is exactly a / 2**j, and the theta_q equal to it.

    x = c * e_p and y has y_p = a and ||y|| = 2**j (the rest of y is a sum of squares), then both
    get the same random permutation and sign flips, which keep dot and the norms.
    """
    v, elem_max = params.dim, (1 << (params.elem_bits - 1)) - 1
    top = min(params.theta_bits, max(0, elem_max.bit_length() - 1), 6)
    for _ in range(100):
        j = int(rng.integers(0, top + 1))
        h = 1 << j
        a = int(rng.integers(1, h + 1))
        rest = _sum_of_squares(h * h - a * a, min(v - 1, 4), elem_max)
        if rest is not None:
            break
    else:
        j, h, a = 0, 1, 1
        rest = [0] * min(v - 1, 4)
    x = np.zeros(v, np.int64)
    y = np.zeros(v, np.int64)
    x[0] = int(rng.integers(1, elem_max + 1))
    y[0] = a
    y[1:1 + len(rest)] = rest
    order = rng.permutation(v)
    signs = rng.choice([-1, 1], v)
    x, y = x[order] * signs, y[order] * signs
    theta_q = a << (params.theta_bits - j)
    return x, y, theta_q


def comparison_vectors(params, n, seed=0):
    """``n`` comparisons (x [n, V], y [n, V], theta_q [n]) mixing the cases that matter.

    About: 30 % uniform random elements; 25 % correlated pairs (y = x + noise) near the typical
    thresholds 0.85 to 0.95; 5 % zero vectors (zero skip); 5 % all elements at the most negative
    value (the largest |dot|) against itself, the largest value, alternating extremes or random
    data; 10 % sparse vectors;
    25 % borderline pairs whose cosine is exactly a dyadic a / 2**j, with theta_q equal to it
    (must be False), one step below it (True) and one step above (False). Thresholds include 0
    and 2**F - 1. Deterministic for a given ``seed``.
    """
    rng = np.random.default_rng(seed)
    v, f = params.dim, params.theta_bits
    low, high = -(1 << (params.elem_bits - 1)), (1 << (params.elem_bits - 1)) - 1
    full = (1 << f) - 1
    thetas = np.array(sorted({0, 1, 1 << (f - 1), round(0.85 * (1 << f)), round(0.9 * (1 << f)),
                              round(0.95 * (1 << f)), full} - {1 << f}))
    xs, ys, ts = [], [], []

    def add(x, y, t):
        xs.append(np.asarray(x, np.int64))
        ys.append(np.asarray(y, np.int64))
        ts.append(int(t))

    kinds = rng.choice(6, size=n, p=[0.30, 0.25, 0.05, 0.05, 0.10, 0.25])
    while len(ts) < n:
        kind = kinds[len(ts)]
        if kind == 0:
            add(rng.integers(low, high + 1, v), rng.integers(low, high + 1, v), rng.choice(thetas))
        elif kind == 1:
            x = rng.integers(low, high + 1, v)
            spread = (high - low + 1) / np.sqrt(12)     # the std of uniform elements
            noise = rng.normal(0.0, rng.choice([0.2, 0.35, 0.5, 0.7]) * spread, v)
            y = np.clip(np.rint(x + noise), low, high)
            t = rng.choice([round(c * (1 << f)) for c in (0.85, 0.9, 0.95)])
            add(x, y, min(t, full))
        elif kind == 2:
            x, y = rng.integers(low, high + 1, (2, v))
            which = rng.integers(3)
            add(x * (which != 0), y * (which != 1), rng.choice(thetas))
        elif kind == 3:
            x = np.full(v, low)
            y = [x, np.full(v, high), np.where(np.arange(v) % 2, low, high),
                 rng.integers(low, high + 1, v)][rng.integers(4)]
            add(x, y, rng.choice(thetas))
        elif kind == 4:
            x = np.zeros(v, np.int64)
            y = np.zeros(v, np.int64)
            k = int(rng.integers(1, min(v, 3) + 1))
            at = rng.choice(v, k, replace=False)
            x[at] = rng.integers(low, high + 1, k)
            if rng.random() < 0.5:      # otherwise the same positions
                at = rng.choice(v, k, replace=False)
            y[at] = rng.integers(low, high + 1, k)
            add(x, y, rng.choice(thetas))
        else:
            x, y, t = _exact_pair(params, rng)
            assert int(dot(x, y)) ** 2 << (2 * f) == t * t * int(sqnorm(x)) * int(sqnorm(y))
            for step in (0, -1, 1):
                if 0 <= t + step <= full and len(ts) < n:
                    add(x, y, t + step)
    return np.stack(xs), np.stack(ys), np.array(ts, np.int64)
