# amaranth: UnusedElaboratable=no
"""The Focus GEMM fed map codes (rtl/top/focus_gemm_coded.py) in the Amaranth simulator: equal to
golden (golden.gemm.focus_gemm_coded), to the uncoded golden GEMM on the generator's own map and
to a NumPy matmul of the concentrated input, under the four stall patterns with the protocol
monitor on every stream port; the edge cases; every decode fault that can reach the tile (error
flag and cause, the job still ends, the tile idle and right on the next job, golden and sim raise
the cause); the registry."""

import re

import numpy as np
import pytest
from amaranth.hdl import Fragment
from helpers import coded_gemm_job

import golden
import sim
from golden import map_code as gmc
from golden.gemm import focus_gemm_coded
from rtl.flow.blocks import BLOCKS, build_block
from rtl.params import FocusParams
from rtl.top.focus_gemm_coded import FocusGemmCoded
from sim.gemm import coded_job, run_coded_jobs
from sim.streams import Stalls, stall_patterns

INPUTS = ("cfg_stream", "w_stream", "u_stream", "code_stream", "pos_stream")
STALLS = stall_patterns(INPUTS, ("o_stream",))
GEOMETRY = dict(frame_stride=6, row_stride=2, window=16, word_bits=16)


def params(tile=8, rows=2, dim=4):
    return FocusParams(dim=dim, tile=tile, scatter_rows=rows, window=16, word_bits=16)


def dense(uniques, maps):
    """X' [S, C*V]: each row's sub-vectors replaced by their unique vectors (plain indexing)."""
    return np.hstack([u[maps[:, c]] for c, u in enumerate(uniques)]).astype(np.int64)


def check(rng, p, S, C, N, stalls=0.0, seed=0, **job):
    """sim == golden coded == golden uncoded on the generator's map == X' @ W."""
    uniques, codes, pos, maps, symbols = coded_gemm_job(rng, S, C, p.dim, p.tile, **job)
    w = rng.integers(-128, 128, (C * p.dim, N))
    kw = dict(GEOMETRY, tile=p.tile)
    want = focus_gemm_coded(uniques, codes, pos, w, **kw)
    np.testing.assert_array_equal(want, golden.focus_gemm(uniques, maps, w))
    np.testing.assert_array_equal(want, dense(uniques, maps) @ w)
    stats = {}
    got = sim.gemm.focus_gemm_coded(uniques, codes, pos, w, params=p, stalls=stalls, seed=seed,
                                    stats=stats, **kw)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    return symbols, stats


@pytest.mark.parametrize("pattern", list(STALLS))
@pytest.mark.parametrize("rows", [1, 2, 3])
def test_equals_golden_under_stalls(pattern, rows):
    """19 rows in tiles of 8 (the last of 3), 3 columns, N = 6 (two column tiles)."""
    rng = np.random.default_rng(200 + rows)
    _, stats = check(rng, params(rows=rows), 19, 3, 6, STALLS[pattern], seed=rows)
    blocks = 3 * 2
    assert stats["transfers"]["cfg_stream"] == 1
    assert stats["transfers"]["w_stream"] == 4 * 3 * blocks
    assert stats["transfers"]["pos_stream"] == 19 * 3 * 2


def test_long_consumer_stall():
    """Results held for 300 cycles: the decoder, the packer and the array wait, nothing is lost."""
    rng = np.random.default_rng(5)
    check(rng, params(tile=6), 20, 2, 4, {"o_stream": Stalls(0.1, 1, windows=[(3, 300)]),
                                          "code_stream": 0.3})


@pytest.mark.parametrize("case", ["one-token", "one-full-tile", "all-new", "all-matched",
                                  "m-not-multiple"])
def test_edges(case):
    rng = np.random.default_rng(len(case))
    if case == "one-token":
        symbols, _ = check(rng, params(), 1, 2, 3, 0.3)
    elif case == "one-full-tile":
        symbols, _ = check(rng, params(tile=8), 8, 2, 4, 0.3)
    elif case == "all-new":
        symbols, _ = check(rng, params(), 13, 2, 4, 0.3, share=0.0)
        assert not symbols.any()
    elif case == "all-matched":
        # Gaps of 1: candidate 1 (the previous position) always exists after a tile's first row.
        symbols, _ = check(rng, params(), 13, 2, 4, 0.3, share=1.0, gap=1)
        assert (symbols[[0, 8]] == 0).all() and (np.delete(symbols, [0, 8], axis=0) != 0).all()
    else:
        symbols, _ = check(rng, params(tile=5, rows=3), 7, 2, 4, 0.3)     # m = 5 and 2, sr = 3


def test_random_regression():
    """Random shapes: dim, tile, scatter_rows, rows, columns, N, share, strides."""
    rng = np.random.default_rng(77)
    for n in range(6):
        dim, tile, rows = int(rng.integers(1, 5)), int(rng.integers(1, 10)), int(rng.integers(1, 4))
        S, C, N = int(rng.integers(1, 25)), int(rng.integers(1, 4)), int(rng.integers(1, 7))
        check(rng, params(tile=tile, rows=rows, dim=dim), S, C, N, 0.25, seed=n,
              share=float(rng.random()), gap=int(rng.integers(1, 4)))


# ---- malformed codes ---------------------------------------------------------------------------

def _bad_job(name):
    """A good job (16 rows, tiles of 8, 2 columns) and a copy with one fault in tile 1's code of
    column 1 (``POSITION``: tile 1's positions), as (uniques, codes, positions, weights)."""
    rng = np.random.default_rng(11)
    uniques, codes, pos, _, symbols = coded_gemm_job(rng, 16, 2, 4, 8, share=0.7, gap=1)
    w = rng.integers(-128, 128, (8, 3))
    bad_codes, bad_pos = [list(row) for row in codes], pos.copy()
    sym = symbols[8:16, 1].copy()
    words, nbits = gmc.encode_map(sym, word_bits=16)            # fixed: 1 + 24 = 25 bits
    words = [int(x) for x in words]
    if name == "LENGTH":
        fault = (words + [0], nbits)
    elif name == "SHORT":
        fault = (words, nbits - 1)
    elif name == "TRAILING":
        fault = (words, nbits + 1)
    elif name == "CANDIDATE":
        sym[0] = 1                                  # a tile's first row has no earlier row
        words, nbits = gmc.encode_map(sym, word_bits=16)
        fault = ([int(x) for x in words], nbits)
    elif name == "HEADER":
        var, vbits = gmc.encode_map(sym, variable=True, ranking=range(8), word_bits=16)
        fault = ([int(var[0]) ^ (1 << 12)] + [int(x) for x in var[1:]], vbits)    # rank repeats
    else:
        fault = codes[1][1]
        bad_pos[10] = bad_pos[9]
    bad_codes[1][1] = fault
    return (uniques, codes, pos, w), (uniques, bad_codes, bad_pos, w)


@pytest.mark.parametrize("cause", ["LENGTH", "SHORT", "TRAILING", "CANDIDATE", "HEADER",
                                   "POSITION"])
def test_malformed_code_raises_error_and_the_tile_recovers(cause):
    """golden and sim raise the cause; in RTL the job still ends (all its result beats), error
    and cause are set, and the next job, a good one, is right with error cleared; idle at the
    end."""
    good, bad = _bad_job(cause)
    kw = dict(GEOMETRY, tile=8)
    p = params()
    column = 0 if cause == "POSITION" else 1          # POSITION: tile 1's first code fails
    with pytest.raises(ValueError, match=f"^{cause}: rows 8:16, column {column}: "):
        focus_gemm_coded(*bad, **kw)
    with pytest.raises(ValueError, match=f"^{cause}: the tile's map decoder rejected a map code$"):
        sim.gemm.focus_gemm_coded(*bad, params=p, stalls=0.25, seed=3, **kw)
    jobs = []
    for uniques, codes, pos, w in (bad, good):
        counts = _counts(codes, pos)
        jobs.append(coded_job(uniques, codes, pos, w, 6, 2, p, counts))
    first, second = run_coded_jobs(p, jobs, stalls=0.25, seed=4)
    assert first["error"] and first["cause"] == cause
    assert not second["error"] and second["cause"] == "NONE" and second["idle"]
    np.testing.assert_array_equal(second["y"], focus_gemm_coded(*good, **kw))


def _counts(codes, pos):
    """Groups per code from golden (None where golden rejects it), as sim.gemm feeds them."""
    out = []
    for t, row in enumerate(codes):
        out.append([])
        for words, nbits in row:
            try:
                _, sym = gmc.decode_map(words, nbits, pos[t * 8:(t + 1) * 8], tile=8,
                                        **GEOMETRY)
                out[-1].append(int((sym == 0).sum()))
            except ValueError:
                out[-1].append(None)
    return out


def test_bad_geometry_in_the_configuration():
    """FS + HS + 1 >= window: golden and sim refuse the job (block_match's message); a
    configuration beat with it raises CONFIG on every code of the job, which still ends; the next
    job is right."""
    good, _ = _bad_job("LENGTH")
    kw = dict(GEOMETRY, tile=8, frame_stride=10, row_stride=5)
    with pytest.raises(ValueError) as want:
        focus_gemm_coded(*good, **kw)
    with pytest.raises(ValueError, match=f"^{re.escape(str(want.value))}$"):
        sim.gemm.focus_gemm_coded(*good, params=params(), **kw)
    p = params()
    uniques, codes, pos, w = good
    counts = _counts(codes, pos)
    jobs = [coded_job(uniques, codes, pos, w, 10, 5, p, counts),
            coded_job(uniques, codes, pos, w, 6, 2, p, counts)]
    first, second = run_coded_jobs(p, jobs, stalls=0.2, seed=9)
    assert first["error"] and first["cause"] == "CONFIG"
    assert not second["error"] and second["idle"]
    np.testing.assert_array_equal(second["y"], focus_gemm_coded(*good, **dict(GEOMETRY, tile=8)))


def test_fuzzed_codes_rejected_exactly_when_golden_rejects():
    """Random bit flips, lengths, and flips in the padding past nbits (ignored) in one code of a
    job: the RTL flags exactly the jobs golden rejects and otherwise equals golden; every job ends
    and the tile is idle (sim.gemm checks it)."""
    rng = np.random.default_rng(23)
    p = params()
    kw = dict(GEOMETRY, tile=8)
    rejected = 0
    for n in range(12):
        uniques, codes, pos, _, _ = coded_gemm_job(rng, 12, 2, 4, 8, share=0.7)
        w = rng.integers(-128, 128, (8, 3))
        t, c = int(rng.integers(2)), int(rng.integers(2))
        words, nbits = codes[t][c]
        words = list(words)
        if n % 3 == 0:
            bit = int(rng.integers(nbits))
            words[bit // 16] ^= 1 << (15 - bit % 16)
        elif n % 3 == 1:
            nbits = max(1, nbits + int(rng.integers(-4, 5)))
        elif nbits % 16:
            words[-1] ^= 1 << int(rng.integers(16 - nbits % 16))
        codes[t][c] = (words, nbits)
        try:
            want = focus_gemm_coded(uniques, codes, pos, w, **kw)
        except ValueError as exc:
            # A cause (the RTL must flag it), or a code that decodes to other groups than the
            # uniques (refused before the run, with golden's message).
            message = str(exc)
            cause = message.split(":")[0]
            if cause in ("LENGTH", "HEADER", "SHORT", "CANDIDATE", "TRAILING"):
                rejected += 1
                message = f"{cause}: the tile's map decoder rejected a map code"
            else:
                assert message.startswith(f"uniques[{c}] has"), message
            with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
                sim.gemm.focus_gemm_coded(uniques, codes, pos, w, params=p, stalls=0.2, seed=n,
                                          **kw)
            continue
        got = sim.gemm.focus_gemm_coded(uniques, codes, pos, w, params=p, stalls=0.2, seed=n,
                                        **kw)
        np.testing.assert_array_equal(got, want)
    assert 0 < rejected < 12


# ---- bad arguments and the registry -------------------------------------------------------------

def _args():
    rng = np.random.default_rng(1)
    uniques, codes, pos, _, _ = coded_gemm_job(rng, 10, 2, 4, 8)
    return uniques, codes, pos, rng.integers(-128, 128, (8, 3))


BAD = [
    (lambda u, k, q, w: (u[:1], k, q, w), "weights must have shape"),
    (lambda u, k, q, w: (u, k[:1], q, w), "map_codes must be a list of ceil(S / tile) = 2"),
    (lambda u, k, q, w: (u, [k[0], k[1][:1]], q, w), "map_codes[1] must hold C = 2"),
    (lambda u, k, q, w: (u, [k[0], [([], 4), k[1][1]]], q, w), "map_codes[1][0] has no words"),
    (lambda u, k, q, w: (u, [k[0], [(k[1][0][0], -1), k[1][1]]], q, w), "nbits must be"),
    (lambda u, k, q, w: (u, k, q - 5, w), "positions must be in [0, 2**32)"),
    (lambda u, k, q, w: (u, k, q.astype(float), w), "positions must be a 1-D integer"),
    (lambda u, k, q, w: ([u[0][1:], u[1]], k, q, w), "uniques[0] has"),
    (lambda u, k, q, w: ([u[0], u[1][:, :3]], k, q, w), "uniques[1] has shape"),
]


@pytest.mark.parametrize("case,text", BAD, ids=[t for _, t in BAD])
def test_bad_arguments_raise_the_same_in_golden_and_sim(case, text):
    args = case(*_args())
    kw = dict(GEOMETRY, tile=8)
    with pytest.raises(ValueError) as want:
        focus_gemm_coded(*args, **kw)
    assert text in str(want.value)
    with pytest.raises(ValueError, match=f"^{re.escape(str(want.value))}$"):
        sim.gemm.focus_gemm_coded(*args, **kw)


def test_params_must_match_and_registry():
    args = _args()
    with pytest.raises(ValueError, match=r"^params.tile = 4 does not match tile = 8$"):
        sim.gemm.focus_gemm_coded(*args, params=params(tile=4), **dict(GEOMETRY, tile=8))
    assert "focus_gemm_coded" in BLOCKS
    block = build_block("focus_gemm_coded", params(rows=3))
    assert isinstance(block, FocusGemmCoded) and block.params.scatter_rows == 3
    Fragment.get(block, None)
