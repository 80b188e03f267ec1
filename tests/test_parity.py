# amaranth: UnusedElaboratable=no
"""golden and sim (the Amaranth simulator) on the same small random and edge inputs: the same
result, array by array (values, shape and dtype), or the same exception type and message.

The inputs are seeded (no hypothesis): random jobs and the edges of every function, i.e. empty
arrays, M = 1, keep 0 and keep >= M, all-zero vectors, the extreme element and score values,
NumPy integer arguments, and bad input of every kind (which must fail the same way in both).
The functions: SEC's, SIC's, the whole unit's and the Focus GEMM's.
Where the RTL has a documented limit golden does not (README, "Limits"), a case says so: golden
must accept it and sim must raise ``ValueError`` naming that limit.
"""

import re

import numpy as np
import pytest
from helpers import sic_like

import golden
import sim

SEED = 20_260_512
N_RANDOM = 6        # random cases per function, besides the edges


class Case:
    """One call: ``args`` and ``kwargs`` for both, ``sim_kwargs`` for sim only, and ``limit`` (a
    regex) when the RTL's documented limit makes sim reject what golden accepts."""

    def __init__(self, name, *args, sim_kwargs=None, limit=None, **kwargs):
        self.name, self.args, self.kwargs = name, args, kwargs
        self.sim_kwargs, self.limit = sim_kwargs or {}, limit


def _outcome(function, case, extra=None):
    try:
        return "result", function(*case.args, **case.kwargs, **(extra or {}))
    except Exception as exc:                # compared below: type and message
        return "error", exc


def _assert_same(got, want, where="result"):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, type(want)) and len(got) == len(want), (where, got, want)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same(g, w, f"{where}[{k}]")
        return
    g, w = np.asarray(got), np.asarray(want)
    assert (g.shape, g.dtype) == (w.shape, w.dtype), (where, g.shape, g.dtype, w.shape, w.dtype)
    np.testing.assert_array_equal(g, w, err_msg=where)


def check(name, case):
    kind, want = _outcome(getattr(golden, name), case)
    got_kind, got = _outcome(getattr(sim, name), case, case.sim_kwargs)
    if case.limit is not None:
        assert kind == "result", f"golden rejects a case marked as an RTL limit: {want!r}"
        assert got_kind == "error" and type(got) is ValueError, got
        assert re.search(case.limit, str(got)), str(got)
        return
    if kind == "error":
        assert got_kind == "error", f"golden raised {want!r}, sim returned {got!r}"
        assert (type(got), str(got)) == (type(want), str(want))
        assert type(want) in (ValueError, TypeError), f"golden raised {want!r}"
    else:
        assert got_kind == "result", f"golden returned, sim raised {got!r}"
        _assert_same(got, want)


def _cases(function):
    return pytest.mark.parametrize("case", function(np.random.default_rng(SEED)),
                                   ids=lambda c: c.name)


# ---- SEC -----------------------------------------------------------------------------------------

def _scores(rng, R, M, dtype=np.uint16):
    top = min(np.iinfo(dtype).max, (1 << 32) - 1)         # the RTL takes 32-bit scores
    kind = rng.integers(3)
    if kind == 0:
        return rng.integers(0, top, (R, M), endpoint=True).astype(dtype)
    if kind == 1:                       # heavy ties, with both extremes
        return rng.choice(np.array([0, 1, top], np.uint64), (R, M)).astype(dtype)
    return np.full((R, M), rng.choice([0, top]), dtype)


def importance_cases(rng):
    cases = [Case(f"random-{k}", _scores(rng, int(rng.integers(1, 4)), int(rng.integers(1, 10)),
                                         rng.choice([np.uint8, np.uint16, np.int64])),
                  str(rng.choice(["spatial", "temporal"])), sim_kwargs={"stalls": 0.2, "seed": k})
             for k in range(N_RANDOM)]
    return cases + [
        Case("M1-R1", np.array([[7]], np.uint8)),
        Case("all-zero", np.zeros((3, 5), np.uint16), "temporal"),
        Case("uint32-max", np.full((2, 3), 2**32 - 1, np.uint32)),
        Case("big-endian", np.arange(6, dtype=">u2").reshape(2, 3)),
        Case("signed", np.array([[3, 0], [1, 9]], np.int16)),
        Case("no-rows", np.zeros((0, 3), np.uint16)),
        Case("no-tokens", np.zeros((2, 0), np.uint16)),
        Case("1-D", np.zeros(4, np.uint16)),
        Case("negative", np.array([[1, -1]])),
        Case("float", np.ones((2, 2))),
        Case("bool", np.ones((2, 2), bool)),
        Case("bad-mode", np.ones((2, 2), np.uint8), "diagonal"),
        Case("33-bit", np.array([[2**32]], np.uint64), limit=r"^scores need 33 bits"),
    ]


def topk_cases(rng):
    cases = []
    for k in range(N_RANDOM):
        M = int(rng.integers(1, 12))
        s = _scores(rng, 1, M)[0]
        keep = int(rng.choice([0, 1, M - 1, M, M + 3, int(rng.integers(0, M + 1))]))
        cases.append(Case(f"random-{k}-M{M}-k{keep}", s, keep))
    return cases + [
        Case("M1-keep0", np.array([5], np.uint8), 0),
        Case("M1-keep-big", np.array([5], np.uint8), 10**6),
        Case("ties", np.zeros(7, np.uint16), 3),
        Case("np-keep", np.array([4, 9, 9, 1]), np.int64(2)),
        Case("empty", np.zeros(0, np.uint16), 1),
        Case("2-D", np.zeros((2, 2), np.uint16), 1),
        Case("keep-negative", np.arange(4), -1),
        Case("keep-bool", np.arange(4), True),
        Case("keep-float", np.arange(4), 1.5),
        Case("negative", np.array([1, -2]), 1),
        Case("M70000", np.arange(70_000) % 7, 3, limit=r"^M = 70000 is out of the RTL's range"),
    ]


def sec_cases(rng):
    cases = []
    for k in range(N_RANDOM):
        R, M = int(rng.integers(1, 4)), int(rng.integers(1, 14))
        cases.append(Case(f"random-{k}", _scores(rng, R, M),
                          int(rng.choice([0, 1, M, M + 2, int(rng.integers(0, M + 1))])),
                          mode=str(rng.choice(["spatial", "temporal"])),
                          order=[None, *range(8)][int(rng.integers(9))],
                          word_bits=int(rng.choice([8, 16, 32, 64]))))
    one = np.array([[3]], np.uint16)
    return cases + [
        Case("M1-keep0", one, 0), Case("M1-keep1", one, 1, order=7, word_bits=8),
        Case("keep-all", np.arange(10, dtype=np.uint16).reshape(2, 5), 5, order=0),
        Case("np-args", np.arange(12).reshape(3, 4), np.int64(2), order=np.int64(3),
             word_bits=np.int64(16)),
        Case("word-bits-7", one, 1, word_bits=7), Case("order-8", one, 1, order=8),
        Case("keep-negative", one, -1), Case("no-tokens", np.zeros((1, 0), np.uint16), 0),
        Case("bad-mode", one, 1, mode="rows"),
    ]


@_cases(importance_cases)
def test_importance(case):
    check("importance", case)


@_cases(topk_cases)
def test_topk_mask(case):
    check("topk_mask", case)


@_cases(sec_cases)
def test_sec(case):
    check("sec", case)


# ---- the offset code -----------------------------------------------------------------------------

def _mask(rng, M):
    kind = rng.integers(4)
    if kind == 0:
        return np.zeros(M, bool)
    if kind == 1:
        return np.ones(M, bool)
    return rng.random(M) < rng.random()


def encode_cases(rng):
    cases = [Case(f"random-{k}", _mask(rng, int(rng.integers(1, 40))),
                  [None, *range(8)][int(rng.integers(9))], int(rng.choice([8, 16, 32, 64])))
             for k in range(N_RANDOM)]
    only_last = np.zeros(33, bool)
    only_last[-1] = True
    return cases + [
        Case("M1-none", np.zeros(1, bool)), Case("M1-one", np.ones(1, bool), 7, 8),
        Case("long-gap", only_last, 0, 8), Case("int-mask", np.array([0, 1, 1, 0]), None, 16),
        Case("np-order", np.array([1, 0, 1], bool), np.int8(2), np.int64(8)),
        Case("empty", np.zeros(0, bool)), Case("2-D", np.zeros((2, 2), bool)),
        Case("twos", np.array([0, 2, 1])), Case("float", np.zeros(3)),
        Case("order-8", np.ones(3, bool), 8), Case("word-bits-65", np.ones(3, bool), 0, 65),
        Case("M70000", np.zeros(70_000, bool), limit=r"^M = 70000 is out of the RTL's range"),
    ]


def decode_cases(rng):
    cases = []
    for k in range(3 * N_RANDOM):
        M = int(rng.integers(1, 40))
        wb = int(rng.choice([8, 16, 32]))
        words, nbits = golden.encode_offsets(_mask(rng, M), [None, *range(8)][k % 9], wb)
        words = [int(w) for w in words]
        kind = k % 6
        if kind == 1:                   # flip a bit
            at = int(rng.integers(nbits))
            words[at // wb] ^= 1 << (wb - 1 - at % wb)
        elif kind == 2:                 # nbits a little off
            nbits = max(0, nbits + int(rng.choice([-2, -1, 1, 2])))
        elif kind == 3:                 # another M
            M = max(1, M + int(rng.choice([-3, -1, 1, 3])))
        elif kind == 4:                 # random words
            words = rng.integers(0, 1 << wb, int(rng.integers(1, 4))).tolist()
            nbits = int(rng.integers(0, len(words) * wb + 1))
        cases.append(Case(f"random-{k}-kind{kind}", words, nbits, M, wb))
    words, nbits = golden.encode_offsets(np.array([0, 1, 0, 1, 1], bool), 0, 8)
    good = [int(w) for w in words]
    return cases + [
        Case("M1", *golden.encode_offsets(np.ones(1, bool), None, 32), 1),
        Case("extra-words", good + [255, 0], nbits, 5, 8),
        Case("no-words", [], 0, 5, 8), Case("no-words-nbits", [], 7, 5, 8),
        Case("header-only", good, 5, 5, 8), Case("nbits-past-words", good, 40, 5, 8),
        Case("np-args", np.array(good, np.uint8), np.int64(nbits), np.int16(5), np.int64(8)),
        Case("tokens-0", good, nbits, 0, 8), Case("tokens-bool", good, nbits, True, 8),
        Case("word-too-big", [256], 8, 5, 8), Case("float-words", [1.5], 8, 5),
        Case("nbits-negative", good, -1, 5, 8),
        Case("M70000", *golden.encode_offsets(np.zeros(70_000, bool)), 70_000,
             limit=r"^tokens = 70000 is out of the RTL's range"),
    ]


@_cases(encode_cases)
def test_encode_offsets(case):
    check("encode_offsets", case)


@_cases(decode_cases)
def test_decode_offsets(case):
    check("decode_offsets", case)


# ---- SIC -----------------------------------------------------------------------------------------

def _vectors(rng, shape, bits=8):
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    kind = rng.integers(4)
    if kind == 0:
        return rng.integers(low, high, shape, endpoint=True)
    if kind == 1:                       # extremes and zero
        return rng.choice(np.array([low, 0, high]), shape)
    if kind == 2:                       # prototypes with small noise: many similar pairs
        protos = rng.integers(low // 2, high // 2, (3, shape[-1]), endpoint=True)
        out = protos[rng.integers(0, 3, shape[:-1])] + rng.integers(-2, 3, shape)
        return out.clip(low, high)
    out = rng.integers(low, high, shape, endpoint=True)
    out[rng.random(shape[:-1]) < 0.5] = 0   # zero vectors
    return out


def similar_cases(rng):
    cases = []
    for k in range(N_RANDOM):
        v, bits = int(rng.integers(1, 7)), int(rng.choice([8, 16]))
        xs, ys = [((4,), (4,)), ((2, 3), (3,)), ((3, 1), (1, 2)), ((), ())][k % 4]
        theta_bits = int(rng.choice([1, 8, 16]))
        cases.append(Case(f"random-{k}", _vectors(rng, xs + (v,), bits),
                          _vectors(rng, ys + (v,), bits),
                          int(rng.integers(0, 1 << theta_bits)), theta_bits))
    low = np.full(4, -32768, np.int16)
    x = np.array([3, 1, 0, 0])
    return cases + [
        Case("int16-min", low, low, 65535, 16), Case("int16-min-vs-max", low, -(low + 1), 0),
        Case("all-zero", np.zeros((3, 4), np.int8), np.zeros(4, np.int8), 0),
        Case("empty", np.zeros((0, 4), np.int8), np.ones(4, np.int8), 10),
        Case("V0", np.zeros((2, 0), np.int8), np.zeros(0, np.int8), 0),
        Case("np-args", x, np.array([3, 0, 1, 0]), np.int64(57), np.int64(6)),
        Case("theta-max", x, x, 255),
        Case("int64-2**31", np.array([2**31, 1]), np.ones(2, int), 1),
        Case("uint64-2**63", np.ones(2, int), np.array([2**63, 1], np.uint64), 1),
        Case("-32769", np.array([-32769, 0]), np.ones(2, int), 1),
        Case("V-mismatch", np.ones(3, int), np.ones(4, int), 1),
        Case("no-broadcast", np.ones((2, 3), int), np.ones((3, 3), int), 1),
        Case("0-d", np.int64(3), np.ones(1, int), 1), Case("float", np.ones(2), np.ones(2), 1),
        Case("theta-q-256", x, x, 256), Case("theta-q-negative", x, x, -1),
        Case("theta-q-float", x, x, 0.5),
        *[Case(f"theta-bits-{t!r}", x, x, 0, t) for t in (True, 0, 17, 40, -1, 1.5, None)],
        Case("V300", np.ones(300, int), np.ones(300, int), 1,
             limit=r"^V \(the vectors' length\) = 300 is out of the RTL's range"),
    ]


def _positions(rng, count):
    return np.cumsum(rng.integers(1, 3, count)) - 1


def _sic_settings(rng):
    hs = int(rng.integers(1, 3))
    return dict(frame_stride=int(rng.integers(hs, 6)), row_stride=hs,
                theta_q=int(rng.choice([0, golden.theta_q(0.5), golden.theta_q(0.9), 255])),
                tile=int(rng.choice([3, 8, 1024])), window=16,
                representative=str(rng.choice(["first", "mean"])))


def block_match_cases(rng):
    cases = []
    for k in range(N_RANDOM):
        S, V = int(rng.integers(1, 14)), int(rng.integers(1, 5))
        cases.append(Case(f"random-{k}-S{S}", _vectors(rng, (S, V)), _positions(rng, S),
                          **_sic_settings(rng)))
    base = dict(frame_stride=4, row_stride=1, theta_q=230, window=16)
    one = np.ones((3, 2), np.int8)
    extremes = np.array([[-32768, 32767]] * 4 + [[-32768, -32768]] * 2, np.int16)
    return cases + [
        Case("S0", np.zeros((0, 4), np.int8), np.zeros(0, int), **base),
        Case("S1", np.array([[1, -1]]), [5], **base),
        Case("all-zero", np.zeros((6, 3), np.int8), np.arange(6), **base),
        Case("extremes", extremes, np.arange(6), **{**base, "theta_bits": 16, "theta_q": 65535}),
        Case("np-args", np.tile(one, (2, 1)), np.arange(6), frame_stride=np.int64(2),
             row_stride=np.int32(1), theta_q=np.int64(200), theta_bits=np.int64(8),
             tile=np.int64(4), window=np.uint8(16)),
        Case("not-increasing", one, [0, 2, 2], **base), Case("negative", one, [-1, 0, 1], **base),
        Case("window", one, [0, 1, 2], frame_stride=9, row_stride=6, theta_q=1, window=16),
        Case("tile-0", one, [0, 1, 2], **base, tile=0),
        Case("theta-bits-17", one, [0, 1, 2], **base, theta_bits=17),
        Case("float", one.astype(float), [0, 1, 2], **base),
        Case("V0", np.zeros((3, 0), np.int8), [0, 1, 2], **base),
        Case("window-3", one, [0, 1, 2], frame_stride=0, row_stride=0, theta_q=1, window=3,
             limit=r"^window = 3 is out of the RTL's range \[4, 4096\]"),
        Case("position-2**32", one, [0, 1, 2**32], **base, limit=r"^positions must be < 2\*\*32"),
    ]


def sic_cases(rng):
    cases = []
    for k in range(N_RANDOM):
        S, dim, columns = int(rng.integers(1, 12)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
        cases.append(Case(f"random-{k}-S{S}", _vectors(rng, (S, dim * columns)),
                          _positions(rng, S), dim=dim, **_sic_settings(rng)))
    base = dict(frame_stride=3, row_stride=1, theta_q=200, window=8, dim=2)
    return cases + [
        Case("S0", np.zeros((0, 4), np.int8), np.zeros(0, int), **base),
        Case("S1", np.array([[1, -1, 0, 5]]), [0], **base),
        Case("all-zero", np.zeros((5, 4), np.int16), np.arange(5), **base),
        Case("np-dim", np.arange(12).reshape(3, 4) - 6, np.arange(3),
             **{**base, "dim": np.int64(2)}),
        Case("D-not-multiple", np.ones((3, 5), int), np.arange(3), **base),
        Case("dim-0", np.ones((3, 4), int), np.arange(3), **{**base, "dim": 0}),
        Case("positions-shape", np.ones((3, 4), int), np.arange(4), **base),
    ]


@_cases(similar_cases)
def test_similar(case):
    check("similar", case)


@_cases(block_match_cases)
def test_block_match(case):
    check("block_match", case)


@_cases(sic_cases)
def test_sic(case):
    check("sic", case)


# ---- the whole unit ------------------------------------------------------------------------------

def focus_cases(rng):
    cases = []
    for k in range(N_RANDOM):
        M, dim, columns = int(rng.integers(1, 12)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
        settings = _sic_settings(rng)
        settings["tile"] = max(4, settings["tile"])
        cases.append(Case(f"random-{k}-M{M}", _scores(rng, int(rng.integers(1, 3)), M),
                          _vectors(rng, (M, dim * columns)),
                          int(rng.choice([0, 1, M, M + 2, int(rng.integers(0, M + 1))])),
                          mode=str(rng.choice(["spatial", "temporal"])),
                          order=[None, *range(8)][int(rng.integers(9))], dim=dim, **settings))
    scores, tokens = np.arange(12, dtype=np.uint16).reshape(2, 6), np.arange(24).reshape(6, 4) % 5
    base = dict(frame_stride=2, row_stride=1, theta_q=200, window=8, tile=8, dim=2)
    return cases + [
        Case("keep0", scores, tokens, 0, **base),
        Case("keep-all", scores, tokens, 6, **base), Case("keep-big", scores, tokens, 99, **base),
        Case("M1", np.array([[4]], np.uint8), np.array([[-128, 127]], np.int8), 1, **base),
        Case("M1-keep0", np.array([[4]], np.uint8), np.array([[-128, 127]], np.int8), 0, **base),
        Case("all-zero", np.zeros((1, 5), np.uint16), np.zeros((5, 4), np.int8), 3, **base),
        Case("min-elements", scores, np.full((6, 4), -128, np.int8), 4, **base),
        Case("np-args", scores, tokens, np.int64(3), **{**base, "dim": np.int64(2),
                                                         "tile": np.int64(8)}),
        Case("token-count", scores, tokens[:5], 3, **base),
        Case("keep-negative", scores, tokens, -1, **base),
        Case("no-tokens", np.zeros((1, 0), np.uint16), np.zeros((0, 4), np.int8), 0, **base),
        Case("window", scores, tokens, 2, **{**base, "frame_stride": 5, "row_stride": 2}),
        Case("tile-70000", scores, tokens, 2, **{**base, "tile": 70_000},
             limit=r"^tile = 70000 is out of the RTL's range"),
    ]


@_cases(focus_cases)
def test_focus(case):
    check("focus", case)


# ---- the consumer: the Focus GEMM ----------------------------------------------------------------

def focus_gemm_cases(rng):
    cases = []
    for k in range(N_RANDOM):
        S, C, V, N = (int(rng.integers(1, 10)), int(rng.integers(1, 3)), int(rng.integers(1, 4)),
                      int(rng.integers(1, 4)))
        maps, uniques = sic_like(rng, S, C, V, S, share=0.5)
        weights = rng.integers(-128, 128, (C * V, N))
        cases.append(Case(f"random-{k}-S{S}", uniques, maps, weights,
                          sim_kwargs={"stalls": 0.2, "seed": k}))
    m, u = sic_like(np.random.default_rng(1), 4, 2, 2, 4, share=0.5)
    w = np.random.default_rng(2).integers(-128, 128, (4, 3))
    extreme = [np.full((1, 2), -32768, np.int16)]
    return cases + [
        Case("S0", [np.zeros((0, 2), np.int8)], np.zeros((0, 1), np.int64),
             np.ones((2, 1), np.int8)),
        Case("S1", [np.array([[127, -128]], np.int8)], np.zeros((1, 1), np.int64),
             np.array([[-128], [-128]], np.int8)),
        Case("one-unique", [np.array([[3, -2]], np.int8)], np.zeros((5, 1), np.int64),
             np.array([[1, 2], [3, 4]], np.int8)),
        Case("all-zero", [np.zeros((2, 2), np.int8)], np.array([[0], [1], [0]]),
             np.zeros((2, 2), np.int8)),
        Case("np-int-dtypes", [x.astype(np.int8) for x in u], m.astype(np.int32),
             w.astype(np.int16)),
        Case("map-out-of-range", u, np.where(m == 0, 9, m), w),
        Case("map-negative", u, -m - 1, w),
        Case("weights-shape", u, m, w[:-1]),
        Case("no-columns", [], np.zeros((1, 0), np.int64), np.ones((0, 1), np.int8)),
        Case("float-uniques", [x.astype(float) for x in u], m, w),
        Case("17-bit", [np.array([[1 << 16, 0]])], np.zeros((1, 1), np.int64),
             np.ones((2, 1), np.int8)),
        Case("int32-overflow", extreme, np.zeros((2, 1), np.int64),
             np.full((2, 2), -32768, np.int16),
             limit=r"^results may reach \d+, beyond the int32 accumulation buffer"),
    ]


@_cases(focus_gemm_cases)
def test_focus_gemm(case):
    check("focus_gemm", case)
