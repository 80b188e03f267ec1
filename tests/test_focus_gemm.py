# amaranth: UnusedElaboratable=no
"""The Focus GEMM (rtl/tile/focus_gemm.py) in the Amaranth simulator: equal to golden under four
stall patterns (none, input idles, output back-pressure, both) with the stream-rule monitor on
every port (sim.streams.run_streams), the edge cases of the issue, the cycle model without stalls,
the int32 wrap, the whole dataflow from scores through FocusUnit into FocusGemm, and the errors."""

import re

import numpy as np
import pytest
from amaranth.hdl import Fragment, Module, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out
from helpers import sic_like

import golden
import sim
from golden.gemm import dense_inputs, gemm_tiles, pad_reduction
from golden.gemm_cycles import focus_gemm_cycles
from rtl.flow.blocks import BLOCKS, REFERENCE_BLOCKS, build_block
from rtl.params import FocusParams
from rtl.tile.focus_gemm import FocusGemm
from rtl.tile.scatter_stage import (
    ScatterStage,
    map_beat_layout,
    psum_row_layout,
    result_beat_layout,
    scatter_latency,
)
from sim.gemm import assemble, job_beats
from sim.streams import Stalls, run_streams, stall_patterns

INPUTS = ("w_stream", "u_stream", "map_stream")
#: The four stall patterns: none, input idles, output back-pressure, both.
STALLS = stall_patterns(INPUTS, ("o_stream",))


def run(uniques, maps, weights, p, stalls=0.0, seed=0):
    stats = {}
    y = sim.focus_gemm(uniques, maps, weights, params=p, stalls=stalls, seed=seed, stats=stats)
    np.testing.assert_array_equal(y, golden.focus_gemm(uniques, maps, weights))
    assert y.dtype == np.int64
    return y, stats


@pytest.mark.parametrize("pattern", list(STALLS))
@pytest.mark.parametrize("rows", [1, 2, 3])
def test_random_regression_under_stalls(pattern, rows):
    """19 rows in tiles of 8 (the last one 3), 3 chunks, N = 6 (two column tiles, the last padded),
    SIC-like maps, equal to golden under each stall pattern."""
    rng = np.random.default_rng(100 + rows)
    p = FocusParams(dim=4, tile=8, scatter_rows=rows)
    maps, uniques = sic_like(rng, 19, 3, 4, 8)
    w = rng.integers(-128, 128, (12, 6))
    _, stats = run(uniques, maps, w, p, STALLS[pattern], seed=rows)
    assert stats["chunks"] == 3 * 2 * 3 and stats["rows"] == 19 * 2 * 3
    assert stats["transfers"]["w_stream"] == 4 * stats["chunks"]
    assert stats["transfers"]["u_stream"] == stats["vectors"]


def test_long_consumer_stall_fills_both_banks():
    """The result sink stops for 300 cycles: the array runs on until both partial-sum banks are
    full, then holds u_stream; nothing is lost or reordered."""
    rng = np.random.default_rng(3)
    p = FocusParams(dim=4, tile=6, scatter_rows=2)
    maps, uniques = sic_like(rng, 24, 4, 4, 6)
    w = rng.integers(-128, 128, (16, 4))
    run(uniques, maps, w, p, {"o_stream": Stalls(0.1, 1, windows=[(3, 300)])})


def test_weights_late_vectors_early():
    """Weight rows arrive rarely while vectors and maps are always offered: no vector may enter
    the array before its chunk's weights (else it would meet the previous chunk's)."""
    rng = np.random.default_rng(4)
    p = FocusParams(dim=4, tile=8, scatter_rows=2)
    maps, uniques = sic_like(rng, 8, 3, 4, 8)
    run(uniques, maps, rng.integers(-128, 128, (12, 4)), p, {"w_stream": 0.8})


# ---- edge cases --------------------------------------------------------------------------------

def test_one_unique_vector_per_chunk():
    """p = 1: every row of every chunk maps to the same unique vector."""
    rng = np.random.default_rng(5)
    p = FocusParams(dim=4, tile=8, scatter_rows=2)
    maps = np.zeros((8, 2), np.int64)
    uniques = [rng.integers(-128, 128, (1, 4)) for _ in range(2)]
    w = rng.integers(-128, 128, (8, 4))
    y, stats = run(uniques, maps, w, p, 0.3)
    assert stats["vectors"] == 2
    np.testing.assert_array_equal(y, np.tile(uniques[0] @ w[:4] + uniques[1] @ w[4:], (8, 1)))


@pytest.mark.parametrize("pattern", ["no-stalls", "both"])
def test_dense_mode_is_x_times_w(pattern):
    """p = m: every row unique, maps the identity: the dense GEMM X @ W on the same hardware."""
    rng = np.random.default_rng(6)
    p = FocusParams(dim=4, tile=8, scatter_rows=2)
    x = rng.integers(-128, 128, (13, 8))
    w = rng.integers(-128, 128, (8, 4))
    maps, uniques = dense_inputs(x, 4)
    y, stats = run(uniques, maps, w, p, STALLS[pattern])
    np.testing.assert_array_equal(y, x @ w)
    assert stats["vectors"] == 13 * 2


def test_one_chunk_and_extremes():
    """One chunk (K = V), the most negative int8 everywhere (the largest sums)."""
    p = FocusParams(dim=4, tile=4, scatter_rows=2)
    x = np.full((4, 4), -128)
    w = np.full((4, 3), -128)
    y, _ = run(*reversed(dense_inputs(x, 4)), w, p, 0.2)
    assert (y == 4 * 128 * 128).all()


def test_k_not_a_multiple_of_v_is_padded():
    """K = 10 with V = 4: X and W padded with zeros to K = 12 (golden.gemm.pad_reduction) give
    exactly X @ W."""
    rng = np.random.default_rng(7)
    x, w = rng.integers(-128, 128, (9, 10)), rng.integers(-128, 128, (10, 5))
    xp, wp = pad_reduction(x, w, 4)
    assert xp.shape == (9, 12) and wp.shape == (12, 5)
    maps, uniques = dense_inputs(xp, 4)
    y, _ = run(uniques, maps, wp, FocusParams(dim=4, tile=8, scatter_rows=2), 0.2)
    np.testing.assert_array_equal(y, x @ w)


def test_all_rows_pruned():
    """S = 0 (SEC kept nothing): an empty result, no cycles, nothing sent."""
    stats = {}
    y = sim.focus_gemm([np.zeros((0, 4), np.int8)] * 2, np.zeros((0, 2), np.int64),
                       np.ones((8, 3), np.int8), params=FocusParams(dim=4, tile=8), stats=stats)
    assert y.shape == (0, 3) and y.dtype == np.int64
    assert stats == {"cycles": 0, "chunks": 0, "vectors": 0, "rows": 0}


@pytest.mark.parametrize("dim,tile,rows,S",
                         [(1, 1, 1, 3), (2, 3, 5, 7), (3, 5, 4, 5), (4, 2, 1, 5)])
def test_small_shapes(dim, tile, rows, S):
    """dim 1, a tile of 1 row, scatter_rows wider than the tile, m not a multiple of
    scatter_rows."""
    rng = np.random.default_rng(dim * 10 + tile)
    p = FocusParams(dim=dim, tile=tile, scatter_rows=rows)
    maps, uniques = sic_like(rng, S, 2, dim, tile)
    run(uniques, maps, rng.integers(-128, 128, (2 * dim, 3)), p, 0.25)


@pytest.mark.parametrize("pattern", list(STALLS))
def test_one_beat_chunks_back_to_back(pattern):
    """Tiles of one scatter beat (2 rows, scatter_rows 2) and 6 reduction chunks each: after a
    stall the scatter stage takes a tile's chunks on consecutive cycles, so each chunk reads the
    buffer word the one before it writes back in the next cycle (the stage forwards it)."""
    rng = np.random.default_rng(21)
    p = FocusParams(dim=1, tile=2, scatter_rows=2)
    maps, uniques = sic_like(rng, 9, 6, 1, 2)
    run(uniques, maps, rng.integers(-128, 128, (6, 3)), p, STALLS[pattern], seed=5)


class _ScatterAlone(wiring.Component):
    """The scatter stage with every chunk's partial sums in one read-only memory (chunk c's rows
    from c * tile, read as FocusGemm reads a bank: one cycle after ``p_en``) and ``bank_ready``
    always high, so that the map beats alone decide when the chunks meet."""

    def __init__(self, p, psums):
        self.p, self.psums = p, psums
        super().__init__({"map_stream": In(stream.Signature(map_beat_layout(p))),
                          "o_stream": Out(stream.Signature(result_beat_layout(p)))})

    def elaborate(self, platform):
        m = Module()
        p = self.p
        m.submodules.stage = stage = ScatterStage(p)
        init = [[int(v) for v in row] for chunk in self.psums for row in chunk]
        chunk = Signal(range(len(self.psums) + 1))
        for lane in range(p.scatter_rows):
            rom = memory.Memory(shape=psum_row_layout(p), depth=len(init), init=init)
            m.submodules[f"psum_{lane}"] = rom
            port = rom.read_port()
            m.d.comb += [port.addr.eq(chunk * p.tile + stage.p_addr[lane]),
                         port.en.eq(stage.p_en), stage.p_data[lane].eq(port.data)]
        m.d.comb += stage.bank_ready.eq(1)
        with m.If(stage.chunk_done):
            m.d.sync += chunk.eq(chunk + 1)
        wiring.connect(m, stage=stage.map_stream, port=wiring.flipped(self.map_stream))
        wiring.connect(m, stage=stage.o_stream, port=wiring.flipped(self.o_stream))
        return m


@pytest.mark.parametrize("pattern", list(stall_patterns(("map_stream",), ("o_stream",))))
def test_scatter_chunks_of_one_two_three_beats_back_to_back(pattern):
    """The scatter stage alone: tiles whose chunks have 1, 2 or 3 beats (m from 1 to 6 rows,
    scatter_rows 2), 1 to 5 chunks each, the beats back to back. A chunk then reads a buffer word
    1, 2 or 3 cycles after the chunk before read it, i.e. while that chunk's write is 2 or 1
    cycles away (both forwarded) or in the same cycle (the transparent port). Equal to the NumPy
    sums under each stall pattern; without stalls the last result leaves scatter_latency() cycles
    after the last beat."""
    rng = np.random.default_rng(77)
    p = FocusParams(dim=2, tile=6, scatter_rows=2)
    rows = p.scatter_rows
    tiles = [(2, 5), (1, 4), (4, 5), (3, 3), (6, 5), (5, 4), (2, 1), (6, 2), (4, 1), (1, 2),
             (2, 3), (3, 5), (5, 2), (6, 4), (1, 5)]      # (m, chunks)
    psums, beats, expect = [], [], []
    for m, chunks in tiles:
        n_beats = -(-m // rows)
        total = np.zeros((n_beats * rows, p.dim), np.int64)
        for j in range(chunks):
            rows_p = rng.integers(-1000, 1000, (p.tile, p.dim))
            index = rng.integers(0, p.tile, n_beats * rows)
            psums.append(rows_p)
            total += rows_p[index]
            beats += [{"index": [int(i) for i in index[b * rows:(b + 1) * rows]],
                       "last": int(b == n_beats - 1), "final": int(j == chunks - 1)}
                      for b in range(n_beats)]
        expect += [total[b * rows:(b + 1) * rows].tolist() for b in range(n_beats)]
    stalls = stall_patterns(("map_stream",), ("o_stream",))[pattern]
    out, stats = run_streams(_ScatterAlone(p, psums), {"map_stream": beats},
                             {"o_stream": len(expect)}, stalls=stalls, seed=3)
    assert [beat["y"] for beat in out["o_stream"]] == expect
    assert [beat["last"] for beat in out["o_stream"]] == [
        int(b == -(-m // rows) - 1) for m, _ in tiles for b in range(-(-m // rows))]
    if pattern == "no-stalls":
        assert stats["cycles"] == len(beats) + scatter_latency()


def test_rows_referencing_other_tiles():
    """Maps that are not SIC-shaped (a row references a unique vector first used in another tile,
    or one no row uses): each tile streams exactly the vectors its rows reference."""
    rng = np.random.default_rng(8)
    p = FocusParams(dim=4, tile=4, scatter_rows=2)
    uniques = [rng.integers(-128, 128, (6, 4)), rng.integers(-128, 128, (3, 4))]
    maps = np.stack([rng.integers(0, 6, 10), rng.integers(0, 3, 10)], axis=1)
    _, stats = run(uniques, maps, rng.integers(-128, 128, (8, 4)), p, 0.3)
    assert stats["vectors"] == sum(len(r) for _, _, ch in gemm_tiles(maps, 4) for r, _ in ch)


def test_int32_buffer_wraps_but_the_result_is_exact():
    """16-bit elements: chunk 0 adds 2**31 (the int32 buffer wraps to -2**31), chunk 1 adds
    -2147418112; the result, 65536, fits in int32 and is exact. sim.focus_gemm's conservative
    bound refuses this job, so the beats are driven directly."""
    p = FocusParams(dim=2, tile=2, scatter_rows=1, elem_bits=16)
    uniques = [np.full((1, 2), -32768), np.full((1, 2), -32768)]
    maps = np.zeros((2, 2), np.int64)
    w = np.array([[-32768], [-32768], [32767], [32767]])
    assert int(golden.focus_gemm(uniques, maps, w)[0, 0]) == 65536
    with pytest.raises(ValueError, match=r"beyond the int32 accumulation buffer"):
        sim.focus_gemm(uniques, maps, w, params=p)
    beats, tiles = job_beats(uniques, maps, w, p)
    out, _ = run_streams(FocusGemm(p), beats, {"o_stream": 2})
    np.testing.assert_array_equal(assemble(out["o_stream"], tiles, 2, 1, p), [[65536], [65536]])


# ---- cycles: the RTL against the analytic model --------------------------------------------------

@pytest.mark.parametrize("dim,tile,rows,S,C,N,share", [
    (4, 16, 1, 16, 3, 4, 0.9),     # scatter-bound: m = 16 rows a cycle at a time, few vectors
    (4, 16, 4, 16, 3, 4, 0.0),     # array-bound: dense
    (4, 8, 2, 30, 2, 9, 0.5),      # four row tiles (the last of 6), three column tiles
    (2, 6, 3, 11, 4, 2, 0.7),
    (8, 12, 2, 12, 2, 8, 0.6),
])
def test_cycles_equal_the_model(dim, tile, rows, S, C, N, share):
    """Without stalls, the cycles from the first weight row to the last result equal
    golden.gemm_cycles.focus_gemm_cycles, in array-bound and scatter-bound runs, across row and
    column tiles (where a chunk waits for its bank)."""
    rng = np.random.default_rng(S + C)
    p = FocusParams(dim=dim, tile=tile, scatter_rows=rows)
    maps, uniques = sic_like(rng, S, C, dim, tile, share)
    _, stats = run(uniques, maps, rng.integers(-128, 128, (C * dim, N)), p)
    assert stats["cycles"] == focus_gemm_cycles(maps, N, p)


# ---- the whole dataflow: FocusUnit into FocusGemm ------------------------------------------------

UNIT = dict(tokens=48, lanes=4, dim=4, window=32, tile=24, layers=4, comparators=7)
LAYER = dict(frame_stride=16, row_stride=4, tile=24, window=32, dim=4, word_bits=32)


@pytest.mark.parametrize("keep,theta,representative", [(30, 0.8, "first"), (48, 0.9, "mean"),
                                                       (0, 0.8, "first")])
def test_focus_layer_photo(keep, theta, representative):
    """Scores and tokens of a photograph (3 frames of 4x4 patches, D = 8) through the RTL unit
    (SEC, then SIC per column) and the unit's own mask, maps and unique vectors through the RTL
    GEMM: the same (mask, Y) as golden.focus_layer, 20 % stalls; keep 0 prunes every row."""
    x, _ = golden.photo.photo_tokens(frames=3, grid=4, patch=8, dim=8)
    attention = golden.photo.photo_attention(frames=3, grid=4, patch=8, dim=8, queries=2, seed=3)
    scores = golden.scores_from_fp16(attention.astype(np.float16))
    w = np.random.default_rng(9).integers(-128, 128, (8, 5))
    args = dict(LAYER, theta_q=golden.theta_q(theta), representative=representative)
    stats = {}
    mask, y = sim.focus_layer(scores, x, w, keep, params=FocusParams(**UNIT), stalls=0.2,
                              seed=keep, stats=stats, **args)
    want_mask, want_y = golden.focus_layer(scores, x, w, keep, **args)
    np.testing.assert_array_equal(mask, want_mask)
    np.testing.assert_array_equal(y, want_y)
    assert y.shape == (min(keep, 48), 5)
    assert stats["unit"]["kept"] == min(keep, 48)
    assert stats["cycles"] == stats["unit"]["cycles"] + stats["gemm"]["cycles"]


# ---- errors and the registry --------------------------------------------------------------------

BAD = [
    (lambda: ([np.ones((2, 4))], np.zeros((3, 1), int), np.ones((4, 2), int)), "uniques[0]"),
    (lambda: ([np.ones((2, 4), int)], np.zeros((3, 1)), np.ones((4, 2), int)), "maps"),
    (lambda: ([np.ones((2, 4), int)], np.full((3, 1), 2), np.ones((4, 2), int)), "maps[0, 0]"),
    (lambda: ([np.ones((2, 4), int)], np.full((3, 1), -1), np.ones((4, 2), int)), "maps[0, 0]"),
    (lambda: ([np.ones((2, 4), int)] * 2, np.zeros((3, 1), int), np.ones((4, 2), int)),
     "uniques has 2 arrays"),
    (lambda: (np.ones((2, 4), int), np.zeros((3, 1), int), np.ones((4, 2), int)), "uniques must"),
    (lambda: ([np.ones((2, 4), int)], np.zeros((3, 1), int), np.ones((5, 2), int)), "weights"),
    (lambda: ([np.ones((2, 4), int)], np.zeros((3, 1), int), np.ones((4, 0), int)), "weights"),
    (lambda: ([np.ones((2, 4), int)], np.zeros((3, 1), int), np.full((4, 2), 1 << 16)),
     "weights has elements outside"),
    (lambda: ([np.ones((2, 4), int), np.ones((2, 3), int)], np.zeros((3, 2), int),
              np.ones((8, 2), int)), "uniques[1]"),
    (lambda: ([], np.zeros((3, 0), int), np.ones((0, 2), int)), "maps must have at least one"),
]


@pytest.mark.parametrize("case,name", BAD, ids=[n for _, n in BAD])
def test_bad_inputs_raise_the_same_in_golden_and_sim(case, name):
    with pytest.raises(ValueError) as want:
        golden.focus_gemm(*case())
    assert name in str(want.value)
    with pytest.raises(ValueError, match=f"^{re.escape(str(want.value))}$"):
        sim.focus_gemm(*case())


def test_params_must_fit():
    uniques, maps, w = [np.ones((2, 4), int)], np.zeros((3, 1), int), np.ones((4, 2), int)
    with pytest.raises(ValueError, match=r"^params.dim = 8 does not match V = 4 of uniques$"):
        sim.focus_gemm(uniques, maps, w, params=FocusParams(dim=8))
    with pytest.raises(ValueError, match=r"^weights has elements outside the signed 4-bit"):
        sim.focus_gemm(uniques, maps, w * 9, params=FocusParams(dim=4, elem_bits=4))
    with pytest.raises(ValueError, match=r"^Unknown simulator 'spice'"):
        sim.focus_gemm(uniques, maps, w, simulator="spice")
    with pytest.raises(TypeError, match=r"^params must be a FocusParams"):
        sim.focus_gemm(uniques, maps, w, params={"dim": 4})


def test_fitted_params_and_registry():
    stats = {}
    y = sim.focus_gemm([np.array([[300, -2]])], np.zeros((2, 1), int), np.ones((2, 1), int),
                       stats=stats)
    np.testing.assert_array_equal(y, [[298], [298]])       # elem_bits widened to 10 for 300
    assert "focus_gemm" in BLOCKS
    gemm = build_block("focus_gemm", FocusParams(dim=4, tile=8, scatter_rows=3))
    assert isinstance(gemm, FocusGemm) and gemm.params.scatter_rows == 3
    Fragment.get(gemm, None)    # used (it was built in rtl/flow/blocks.py, where unused would warn)
    assert "scatter_stage" in REFERENCE_BLOCKS and "scatter_stage" not in BLOCKS
    Fragment.get(build_block("scatter_stage", FocusParams(dim=4, tile=8)), None)
