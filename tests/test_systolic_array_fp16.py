# amaranth: UnusedElaboratable=no
"""The fp16 reference array (rtl/tile/systolic_array_fp16.py) and its arithmetic units against
NumPy: the fp16 x fp16 -> fp32 multiplier against float32(float64(a) * float64(b)), the fp32
adder against np.float32 addition (round to nearest even, subnormals, infinities, NaN), on edge
values crossed with each other and on random bit patterns; then the whole array against a NumPy
accumulation in the array's order, under input idles and output back-pressure (none, each
alone, both) with the stream monitor of test_systolic_array's harness."""

import numpy as np
import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator
from test_systolic_array import STALLS, run_array

from rtl.flow.blocks import BLOCKS, REFERENCE_BLOCKS, build_block
from rtl.params import FocusParams
from rtl.tile.fp16_multiplier import FP16Multiplier
from rtl.tile.fp32_adder import FP32_QNAN, FP32Adder
from rtl.tile.systolic_array import array_latency
from rtl.tile.systolic_array_fp16 import SystolicArrayFp16

# fp16 edges: zeros, smallest/largest subnormal, smallest normal, one and its neighbours, the
# largest normal, infinities, quiet and signalling NaNs, each with both signs where it matters.
F16_EDGES = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x8400, 0x3C00, 0xBC00,
             0x3BFF, 0x3C01, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE00, 0x0200,
             0x3555, 0x5A5A]
# fp32 edges likewise, plus values whose sums round on a tie or overflow.
F32_EDGES = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF,
             0x00800000, 0x80800000, 0x00400000, 0x3F800000, 0xBF800000, 0x3F800001, 0xBF800001,
             0x3F7FFFFF, 0x33800000, 0xB3800000, 0x33C00000, 0x34000000, 0x7F7FFFFF, 0xFF7FFFFF,
             0x7F7FFFFE, 0x73800000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC00000,
             0x4B800000, 0x4B7FFFFF, 0x3F000000]


def _combinational(dut, ins, out, vectors):
    """``out`` of the combinational ``dut`` for each tuple of ``vectors`` set on ``ins``."""
    got = []
    sim = Simulator(dut)

    async def bench(ctx):
        for vector in vectors:
            for name, value in zip(ins, vector, strict=True):
                ctx.set(getattr(dut, name), int(value))
            got.append(ctx.get(getattr(dut, out)))

    sim.add_testbench(bench)
    sim.run()
    return np.array(got, dtype=np.uint64).astype(np.uint32)


def _f16(bits):
    return np.asarray(bits, dtype=np.uint16).view(np.float16)


def _f32(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def _bits32(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def _check(got, want_values, vectors):
    """Bit-exact, except that every NaN must be the one quiet NaN."""
    want = _bits32(want_values)
    nan = np.isnan(np.asarray(want_values, dtype=np.float32))
    expect = np.where(nan, np.uint32(FP32_QNAN), want)
    bad = np.flatnonzero(got != expect)
    assert bad.size == 0, [(hex(int(vectors[i][0])), hex(int(vectors[i][1])),
                            hex(int(got[i])), hex(int(expect[i]))) for i in bad[:8]]


def _mul_reference(a, b):
    """The exact product: fp16 values multiplied in float64, rounded (exactly) to float32."""
    with np.errstate(all="ignore"):
        return (_f16(a).astype(np.float64) * _f16(b).astype(np.float64)).astype(np.float32)


def _add_reference(a, b):
    with np.errstate(all="ignore"):
        return _f32(a) + _f32(b)


def _pairs(edges, rng, count, bits):
    high = 1 << bits
    cross = [(x, y) for x in edges for y in edges]
    rand = rng.integers(0, high, size=(count, 2), dtype=np.uint64)
    return np.array(cross + rand.tolist(), dtype=np.uint64)


def test_multiplier_edges_and_random():
    rng = np.random.default_rng(15)
    vectors = _pairs(F16_EDGES, rng, 3000, 16)
    got = _combinational(FP16Multiplier(), ("a", "b"), "p", vectors)
    _check(got, _mul_reference(vectors[:, 0], vectors[:, 1]), vectors)
    # The cases the brief names, spelled out (the reference above agrees with them).
    cases = {(0x7BFF, 0x7BFF): 0x4F7FC004,    # 65504**2 = 4290774016, exact in fp32
             (0x0001, 0x0001): 0x27800000,    # 2**-24 squared = 2**-48, a normal fp32
             (0x8000, 0x3C00): 0x80000000,    # -0 * 1 = -0
             (0x7C00, 0x0000): FP32_QNAN,     # inf * 0 = NaN
             (0xFC00, 0x3C00): 0xFF800000,    # -inf * 1 = -inf
             (0x7E00, 0x3C00): FP32_QNAN}     # NaN propagates
    got = _combinational(FP16Multiplier(), ("a", "b"), "p", list(cases))
    assert [hex(g) for g in got] == [hex(v) for v in cases.values()]


def test_multiplier_flushes_subnormals_when_asked():
    rng = np.random.default_rng(16)
    vectors = _pairs(F16_EDGES, rng, 1500, 16)
    got = _combinational(FP16Multiplier(flush_subnormals=True), ("a", "b"), "p", vectors)
    flushed = vectors.copy()
    sub = ((flushed >> 10) & 0x1F) == 0
    flushed[sub] &= 0x8000   # a subnormal is a zero of its sign
    _check(got, _mul_reference(flushed[:, 0], flushed[:, 1]), vectors)
    assert _combinational(FP16Multiplier(flush_subnormals=True), ("a", "b"), "p",
                          [(0x0001, 0x3C00), (0x8200, 0x3C00)]).tolist() == [0, 0x80000000]
    with pytest.raises(ValueError, match=r"flush_subnormals = 1: it must be True or False"):
        FP16Multiplier(flush_subnormals=1)


def _near_pairs(rng, count):
    """Pairs with exponents within a few steps of each other (cancellation, carries, ties),
    including the subnormal range and the top of the range."""
    exp = rng.integers(0, 255, size=count, dtype=np.uint64)
    exp[: count // 8] = rng.integers(0, 3, size=count // 8)          # subnormals and the first
    exp[count // 8: count // 4] = rng.integers(250, 255, size=count // 8)   # near overflow
    delta = rng.integers(-3, 4, size=count)
    exp_b = np.clip(exp.astype(np.int64) + delta, 0, 254).astype(np.uint64)
    frac = rng.integers(0, 1 << 23, size=(count, 2), dtype=np.uint64)
    sign = rng.integers(0, 2, size=(count, 2), dtype=np.uint64)
    a = (sign[:, 0] << 31) | (exp << 23) | frac[:, 0]
    b = (sign[:, 1] << 31) | (exp_b << 23) | frac[:, 1]
    # Exponents 22 to 26 apart: the guard, round and sticky bits decide.
    far = np.arange(count) % 5 == 0
    exp_far = np.clip(exp.astype(np.int64) - rng.integers(22, 27, size=count), 0, 254)
    b[far] = (sign[far, 1] << 31) | (exp_far[far].astype(np.uint64) << 23) | frac[far, 1]
    return np.stack([a, b], axis=1)


def test_adder_edges_and_random():
    rng = np.random.default_rng(17)
    vectors = np.vstack([_pairs(F32_EDGES, rng, 1500, 32), _near_pairs(rng, 3000)])
    got = _combinational(FP32Adder(), ("a", "b"), "s", vectors)
    _check(got, _add_reference(vectors[:, 0], vectors[:, 1]), vectors)
    cases = {(0x3F800000, 0x33800000): 0x3F800000,   # 1 + 2**-24: a tie, to even (down)
             (0x3F800001, 0x33800000): 0x3F800002,   # 1 + ulp + half ulp: tie, to even (up)
             (0x3F800000, 0x33800001): 0x3F800001,   # just above the tie: up
             (0x7F7FFFFF, 0x7F7FFFFF): 0x7F800000,   # overflow to inf
             (0x3F800000, 0xBF800000): 0x00000000,   # x + -x = +0
             (0x80000000, 0x80000000): 0x80000000,   # -0 + -0 = -0
             (0x00000001, 0x807FFFFF): 0x807FFFFE,   # subnormal result
             (0x007FFFFF, 0x00000001): 0x00800000,   # two subnormals make the smallest normal
             (0x7F800000, 0xFF800000): FP32_QNAN,    # inf - inf = NaN
             (0xFF800000, 0x7F7FFFFF): 0xFF800000,
             (0x7FC00001, 0x3F800000): FP32_QNAN}
    got = _combinational(FP32Adder(), ("a", "b"), "s", list(cases))
    assert [hex(g) for g in got] == [hex(v) for v in cases.values()]


def array_reference(w, x):
    """``x @ w`` for fp16 bit patterns, as the array accumulates: exact products, then fp32
    sums down the rows in order, row 0's product taken as is. fp32 bit patterns."""
    with np.errstate(all="ignore"):
        products = (_f16(x).astype(np.float64)[:, :, None]
                    * _f16(w).astype(np.float64)[None, :, :]).astype(np.float32)
        acc = products[:, 0, :]
        for r in range(1, products.shape[1]):
            acc = (acc + products[:, r, :]).astype(np.float32)
    bits = _bits32(acc).astype(np.int64)
    return np.where(np.isnan(acc), FP32_QNAN, bits)


def _fp16_values(rng, shape):
    """Normal values of mixed magnitude and sign, with subnormals and zeros among them."""
    values = (rng.standard_normal(shape) * 2.0 ** rng.integers(-10, 8, size=shape))
    bits = values.astype(np.float16).view(np.uint16).astype(np.int64)
    picks = rng.random(shape)
    bits[picks < 0.05] = rng.integers(1, 0x400, size=int((picks < 0.05).sum()))   # subnormals
    bits[(picks >= 0.05) & (picks < 0.08)] = 0x8000                               # -0
    return bits


@pytest.mark.parametrize("stalls", STALLS.values(), ids=STALLS.keys())
def test_array_matches_numpy(stalls):
    rng = np.random.default_rng(18)
    w, x = _fp16_values(rng, (4, 3)), _fp16_values(rng, (20, 4))
    # An infinity in the weights: inf * 0 and inf - inf give NaN; NaN inputs propagate; and a
    # column of -0 products stays -0 (no +0 is added to row 0's product).
    w[2, 1] = 0x7C00
    x[3, 2], x[4] = 0x0000, [0x8000] * 4
    x[5, 0] = 0x7E00
    w[:, 2] &= 0x7FFF   # positive weights: -0 activations give -0 products in column 2
    dut = SystolicArrayFp16(rows=4, cols=3)
    got, _ = run_array(dut, [(w, x)], stalls=stalls, seed=11)
    want = array_reference(w, x)
    np.testing.assert_array_equal(got, want)
    assert got[3, 1] == FP32_QNAN and got[4, 2] == 0x80000000


def test_array_two_jobs_and_throughput():
    """A weight reload between jobs, and one vector per cycle without stalls."""
    rng = np.random.default_rng(19)
    jobs = [(_fp16_values(rng, (3, 5)), _fp16_values(rng, (8, 3))) for _ in range(2)]
    got, transfers = run_array(SystolicArrayFp16(rows=3, cols=5), jobs)
    np.testing.assert_array_equal(got, np.vstack([array_reference(w, x) for w, x in jobs]))
    ins, outs = transfers["i_stream"][8:], transfers["o_stream"][8:]
    assert ins == list(range(ins[0], ins[0] + 8))
    assert outs == [c + array_latency(3, 5) for c in ins]


def test_array_flush_subnormals():
    rng = np.random.default_rng(20)
    w, x = _fp16_values(rng, (3, 2)), _fp16_values(rng, (10, 3))
    got, _ = run_array(SystolicArrayFp16(rows=3, cols=2, flush_subnormals=True), [(w, x)],
                       stalls=0.2, seed=5)
    def flush(v):
        return np.where(((v >> 10) & 0x1F) == 0, v & 0x8000, v)
    np.testing.assert_array_equal(got, array_reference(flush(w), flush(x)))


def test_registry_and_bad_arguments():
    assert "systolic_array_fp16" in REFERENCE_BLOCKS and "systolic_array_fp16" not in BLOCKS
    array = build_block("systolic_array_fp16", FocusParams(dim=5, elem_bits=6))
    assert (array.rows, array.cols, array.data_bits, array.acc_bits) == (5, 5, 16, 32)
    Fragment.get(array, None)
    assert SystolicArrayFp16().latency == 63
    with pytest.raises(ValueError, match=r"^SystolicArrayFp16 rows = 0: it must be an integer"):
        SystolicArrayFp16(rows=0)
    with pytest.raises(ValueError, match=r"flush_subnormals = None: it must be True or False"):
        SystolicArrayFp16(flush_subnormals=None)


def test_registry_arithmetic_units():
    for name, cls in (("fp16_multiplier", FP16Multiplier), ("fp32_adder", FP32Adder)):
        unit = build_block(name, FocusParams())
        assert isinstance(unit, cls) and name in REFERENCE_BLOCKS
        Fragment.get(unit, None)
