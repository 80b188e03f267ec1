# amaranth: UnusedElaboratable=no
"""The similarity comparator in the Amaranth simulator (fast tier) against the golden model, and
the stream harness it runs on (:mod:`sim.streams`)."""

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

import golden
import sim
from golden.cycles import similar_cycles
from golden.similarity import dot, sqnorm
from rtl.params import FocusParams
from rtl.sic.similarity_comparator import SimilarityComparator
from sim.similarity import compare, comparison_vectors
from sim.streams import Stalls, run_streams, stream_get, stream_put

DEFAULT = FocusParams()
GATINGS = [DEFAULT, FocusParams(gating="icg")]
SHAPES = [FocusParams(dim=1), FocusParams(dim=5), FocusParams(dim=5, elem_bits=16, theta_bits=16),
          FocusParams(dim=32, elem_bits=16, theta_bits=16), FocusParams(dim=7, elem_bits=2,
                                                                        theta_bits=1)]


def tag(p):
    return p.tag


def expected(p, x, y, theta_q):
    """Golden similar and dot per comparison (dot is 0 where the comparator skips)."""
    want = np.array([golden.similar(a, b, int(t), p.theta_bits)
                     for a, b, t in zip(x, y, theta_q, strict=True)], bool)
    dots = np.where((sqnorm(x) > 0) & (sqnorm(y) > 0), dot(x, y), 0)
    return want, dots


def run_comparator(p, x, y, theta_q, stalls=0.0, seed=0):
    """The comparator under ``stalls`` (float or per-port dict) via run_streams."""
    payloads = [{"x": a, "y": b, "nx": int(na), "ny": int(nb), "theta_q": int(t)}
                for a, b, na, nb, t in zip(x.tolist(), y.tolist(), sqnorm(x), sqnorm(y), theta_q,
                                           strict=True)]
    outputs, stats = run_streams(SimilarityComparator(p, icg_cell=None),
                                 {"i_stream": payloads}, {"o_stream": len(payloads)},
                                 stalls=stalls, seed=seed, probes=("active", "gated"))
    received = outputs["o_stream"]
    return (np.array([r["similar"] for r in received], bool),
            np.array([r["dot"] for r in received], np.int64), stats)


def check(p, x, y, theta_q, got):
    similar, dots, stats = got
    want, want_dots = expected(p, x, y, theta_q)
    np.testing.assert_array_equal(similar, want)
    np.testing.assert_array_equal(dots, want_dots)
    nonzero = int(np.count_nonzero((sqnorm(x) > 0) & (sqnorm(y) > 0)))
    assert (stats["active"], stats["gated"]) == (nonzero, len(x) - nonzero)


# ---- random mix against golden, under stalls ------------------------------------------------

@pytest.mark.parametrize("backpressure", [0.0, 0.3], ids=["nobp", "bp"])
@pytest.mark.parametrize("idle", [0.0, 0.3], ids=["noidle", "idle"])
@pytest.mark.parametrize("p", GATINGS, ids=tag)
def test_random_mix_under_stalls(p, idle, backpressure):
    x, y, theta_q = comparison_vectors(p, 400, seed=11)
    got = run_comparator(p, x, y, theta_q, {"i_stream": idle, "o_stream": backpressure}, seed=3)
    check(p, x, y, theta_q, got)
    if idle == backpressure == 0.0:
        assert got[2]["cycles"] == similar_cycles(len(x))


@pytest.mark.parametrize("p", GATINGS, ids=tag)
def test_long_backpressure_holds_the_pipeline(p):
    # ready low for 100 cycles (far longer than the 7-stage pipeline) from cycle 20: the whole
    # pipeline holds, nothing is lost or duplicated, and exactly those 100 cycles are added.
    x, y, theta_q = comparison_vectors(p, 150, seed=12)
    stalls = {"o_stream": Stalls(windows=[(20, 100)])}
    got = run_comparator(p, x, y, theta_q, stalls)
    check(p, x, y, theta_q, got)
    assert got[2]["cycles"] == similar_cycles(len(x)) + 100


@pytest.mark.parametrize("p", SHAPES, ids=tag)
def test_shapes_and_widths(p):
    # V = 1, odd V, elem_bits 16 with F = 16 (the widest, exact), 2-bit elements with F = 1.
    x, y, theta_q = comparison_vectors(p, 300, seed=13)
    check(p, x, y, theta_q, run_comparator(p, x, y, theta_q, 0.2, seed=4))


# ---- edges, through sim.similar ---------------------------------------------------------------

def both(x, y, theta_q, theta_bits=8, **kwargs):
    """sim.similar and golden.similar on the same input; returns (sim result, stats)."""
    stats = {}
    got = sim.similar(x, y, theta_q, theta_bits, stats=stats, **kwargs)
    want = golden.similar(x, y, theta_q, theta_bits)
    assert got.shape == want.shape and got.dtype == want.dtype == bool
    np.testing.assert_array_equal(got, want)
    return got, stats


@pytest.mark.parametrize("p", GATINGS, ids=tag)
def test_zero_vectors_are_skipped(p):
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (12, 32))
    y = x.copy()
    x[[0, 3, 7]] = 0
    y[[3, 5]] = 0
    got, stats = both(x, y, 0, params=p)
    assert got.tolist() == [i not in (0, 3, 5, 7) for i in range(12)]
    assert (stats["active"], stats["gated"]) == (8, 4)


@pytest.mark.parametrize("theta_q", [0, 255])
def test_threshold_extremes(theta_q):
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, (64, 32))
    y = np.concatenate([x[:16], -x[16:24], rng.integers(-128, 128, (40, 32))])
    got, _ = both(x, y, theta_q)
    assert got[:16].all()              # cos = 1 > 255/256
    assert not got[16:24].any()        # cos = -1


def test_most_negative_elements():
    low = np.full(32, -128)
    x = np.stack([low, low, low, np.full(32, 1)])
    y = np.stack([low, np.full(32, 127), np.where(np.arange(32) % 2, -128, 127), low])
    got, _ = both(x, y, 255)
    assert got.tolist() == [True, False, False, False]
    _, dots, _ = compare(x, y, [255] * 4, DEFAULT)
    assert dots.tolist() == [32 * 128 * 128, -32 * 128 * 127, 16 * 128, -32 * 128]


def test_exact_threshold_is_not_similar():
    # x = 4 e0, y = (3, 2, 1, 1, 1, 0, ...): cos = 12 / (4 * 4) = 3/4 = 192/256 exactly.
    x = np.zeros(32, np.int64)
    x[0] = 4
    y = np.zeros(32, np.int64)
    y[:5] = [3, 2, 1, 1, 1]
    results = {t: bool(both(x, y, t)[0]) for t in (191, 192, 193)}
    assert results == {191: True, 192: False, 193: False}


def test_negative_dot():
    x = np.arange(1, 33)
    got, _ = both(np.stack([x, x]), np.stack([-x, x[::-1] - 40]), 0)
    assert not got.any()
    _, dots, _ = compare(np.stack([x]), np.stack([-x]), [0], DEFAULT)
    assert dots[0] == -int(x @ x)


def test_elem_bits_fitted_from_data():
    x = np.array([[-32768, 32767, 5], [1000, -2, 3]])
    y = np.array([[-32768, 32767, 4], [999, -1, 3]])
    both(x, y, 65535, theta_bits=16)
    assert sim.similarity.fit_params(x, y, 16).elem_bits == 16
    assert sim.similarity.fit_params(x // 300, y // 300).elem_bits == 8


@pytest.mark.parametrize("low, dtype", [(-32768, np.int16), (-128, np.int8), (-2, np.int64)])
def test_most_negative_values_fit_their_width(low, dtype):
    """A vector whose largest element is negative, e.g. int16 all -32768: the most negative value
    of b bits needs b bits (not b + 1), so sim fits the data's own width and equals golden."""
    x = np.full((2, 6), low, dtype)
    y = np.stack([x[0], np.arange(6, dtype=dtype) + low])
    both(x, y, 200)
    bits = {np.int16: 16, np.int8: 8, np.int64: 8}[dtype]     # fit_params never goes below 8
    assert sim.similarity.fit_params(x, y).elem_bits == bits


def test_numpy_integer_threshold():
    rng = np.random.default_rng(8)
    x, y = rng.integers(-100, 100, (2, 5, 4))
    both(x, y, np.int64(10), np.int64(4))
    both(x, y, np.uint8(200), np.int16(8))


@pytest.mark.parametrize("xs, ys", [((4, 3), ()), ((2, 1), (1, 5)), ((), ()), ((0,), ())],
                         ids=["4x3-1", "2x1-1x5", "scalar", "empty"])
def test_leading_dims_broadcast(xs, ys):
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, xs + (8,))
    y = rng.integers(-128, 128, ys + (8,))
    both(x, y, 10)


@pytest.mark.parametrize("n", [1, 2, 37])
def test_cycles_without_stalls(n):
    rng = np.random.default_rng(n)
    stats = {}
    sim.similar(rng.integers(-128, 128, (n, 32)), rng.integers(-128, 128, (n, 32)), 230,
                stats=stats)
    assert stats["cycles"] == similar_cycles(n)


def test_counters_clear():
    p = FocusParams(dim=4)
    dut = SimilarityComparator(p, icg_cell=None)
    sent = [{"x": [1, 2, 3, 4], "y": [1, 2, 3, 4], "nx": 30, "ny": 30, "theta_q": 1},
            {"x": [0] * 4, "y": [1, 2, 3, 4], "nx": 0, "ny": 30, "theta_q": 1}]

    async def testbench(ctx):
        await stream_put(ctx, dut.i_stream, sent * 3)
        assert (ctx.get(dut.active), ctx.get(dut.gated)) == (3, 3)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        assert (ctx.get(dut.active), ctx.get(dut.gated)) == (0, 0)
        await stream_put(ctx, dut.i_stream, sent[1:])
        assert (ctx.get(dut.active), ctx.get(dut.gated)) == (0, 1)

    async def sink(ctx):
        got = await stream_get(ctx, dut.o_stream, 7)
        assert [r["similar"] for r in got] == [1, 0] * 3 + [0]

    simulator = Simulator(dut)
    simulator.add_clock(1e-8)
    simulator.add_testbench(testbench)
    simulator.add_testbench(sink)
    simulator.run()


# ---- the same errors as golden ----------------------------------------------------------------

BAD_INPUTS = [
    (np.ones((2, 4)) * 0.5, np.ones((2, 4), int), 1, r"^x must be an integer array"),
    (np.ones((2, 4), int), np.ones((2, 4), bool), 1, r"^y must be an integer array"),
    (np.int64(3), np.ones(4, int), 1, r"^x must have at least one dimension"),
    (np.ones((2, 4), int), np.ones((2, 5), int), 1, r"^x and y must have the same V"),
    (np.ones(4, int), np.ones(4, int), 256, r"^theta_q = 256 is out of range"),
    (np.ones(4, int), np.ones(4, int), -1, r"^theta_q = -1 is out of range"),
    (np.ones(4, int), np.ones(4, int), 0.5, r"^theta_q must be an integer"),
    (np.ones(4, int), np.ones(4, int), True, r"^theta_q must be an integer"),
    (np.array([2**31, 1]), np.ones(2, int), 1,
     (r"^x has elements outside the signed 16-bit range \[-32768, 32767\]: min 1, "
     r"max 2147483648$")),
    (np.ones(2, int), np.array([2**63, 1], np.uint64), 1,
     (r"^y has elements outside the signed 16-bit range \[-32768, 32767\]: min 1, "
     r"max 9223372036854775808$")),
    (np.ones((2, 3), int), np.ones((3, 3), int), 1,
     (r"^x and y do not broadcast: leading shapes \(2,\) and \(3,\) \(the dimensions before "
     r"V must be equal or 1\)$")),
]


@pytest.mark.parametrize("x, y, theta_q, match", BAD_INPUTS,
                         ids=["float", "bool", "0-d", "V", "theta-high", "theta-negative",
                              "theta-float", "theta-bool", "int64-2**31", "uint64-2**63",
                              "broadcast"])
def test_same_errors_as_golden(x, y, theta_q, match):
    with pytest.raises(ValueError, match=match):
        golden.similar(x, y, theta_q)
    with pytest.raises(ValueError, match=match):
        sim.similar(x, y, theta_q)


@pytest.mark.parametrize("theta_bits", [True, None, 1.5, 0, -1, 17, 40])
def test_same_theta_bits_errors_as_golden(theta_bits):
    x = np.ones(4, int)
    with pytest.raises(ValueError, match=r"^theta_bits ") as want:
        golden.similar(x, x, 0, theta_bits)
    with pytest.raises(ValueError) as got:
        sim.similar(x, x, 0, theta_bits)
    assert str(got.value) == str(want.value)


def test_errors_of_the_rtl_driver():
    x = np.ones((2, 4), int)
    with pytest.raises(ValueError, match=r"^Unknown simulator 'modelsim'"):
        sim.similar(x, x, 1, simulator="modelsim")
    with pytest.raises(ValueError, match=r"^params.dim = 32 does not match V = 4"):
        sim.similar(x, x, 1, params=DEFAULT)
    with pytest.raises(ValueError, match=r"^params.theta_bits = 8 does not match theta_bits = 9"):
        sim.similar(x, x, 1, 9, params=FocusParams(dim=4))
    with pytest.raises(ValueError, match=r"^x has elements outside the signed 8-bit range"):
        sim.similar(x * 200, x, 1, params=FocusParams(dim=4))
    with pytest.raises(ValueError, match=r"^y has elements outside the signed 16-bit range"):
        sim.similar(x, x * 40000, 1)
    wide = np.ones((2, 300), int)
    golden.similar(wide, wide, 1)
    with pytest.raises(ValueError, match=r"^V \(the vectors' length\) = 300 is out of the RTL's "
                                         r"range \[1, 256\] \(FocusParams\.dim\)$"):
        sim.similar(wide, wide, 1)


def test_no_elements_are_never_similar():
    """V = 0: golden's vectors are all zero, so never similar; sim gives the same answer."""
    for xs, ys in (((3, 0), (3, 0)), ((2, 1, 0), (4, 0)), ((0,), (0,))):
        x, y = np.zeros(xs, np.int8), np.zeros(ys, np.int8)
        both(x, y, 0)


# ---- the harness itself -----------------------------------------------------------------------

class _Faulty(wiring.Component):
    """A pass-through stream stage with one planted protocol fault."""

    i_stream: In(stream.Signature(8))
    o_stream: Out(stream.Signature(8))

    def __init__(self, fault):
        self.fault = fault
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        count = Signal(4)
        m.d.sync += count.eq(count + 1)
        m.d.comb += [self.i_stream.ready.eq(~self.o_stream.valid | self.o_stream.ready)]
        with m.If(self.i_stream.valid & self.i_stream.ready):
            m.d.sync += [self.o_stream.valid.eq(1), self.o_stream.payload.eq(self.i_stream.payload)]
        with m.Elif(self.o_stream.ready):
            m.d.sync += self.o_stream.valid.eq(0)
        if self.fault == "drop":        # valid falls while waiting, every 8th cycle
            with m.If(count[:3] == 7):
                m.d.sync += self.o_stream.valid.eq(0)
        if self.fault == "change":      # the payload changes while waiting
            with m.If(self.o_stream.valid & ~self.o_stream.ready):
                m.d.sync += self.o_stream.payload.eq(self.o_stream.payload + 1)
        if self.fault == "hang":        # never takes an input
            m.d.comb += self.i_stream.ready.eq(0)
        return m


@pytest.mark.parametrize("fault, match", [
    ("drop", r"^o_stream: valid fell in cycle \d+ without a transfer"),
    ("change", r"^o_stream: payload changed in cycle \d+ while valid was high"),
    ("hang", r"^_Faulty timed out after 500 cycles \(transfers: i_stream 0/50, o_stream 0/50\)"),
])
def test_harness_catches_faults(fault, match):
    with pytest.raises(AssertionError, match=match):
        run_streams(_Faulty(fault), {"i_stream": list(range(50))}, {"o_stream": 50}, stalls=0.5,
                    max_cycles=500)


def test_harness_passes_a_correct_stage():
    outputs, stats = run_streams(_Faulty(None), {"i_stream": list(range(50))}, {"o_stream": 50},
                                 stalls=0.5, seed=9)
    assert outputs["o_stream"] == list(range(50))
    assert stats["transfers"] == {"i_stream": 50, "o_stream": 50}


def test_stalls_are_seeded():
    a, b, c = Stalls(0.3, seed=1), Stalls(0.3, seed=1), Stalls(0.3, seed=2)
    pa, pb, pc = ([s() for _ in range(200)] for s in (a, b, c))
    assert pa == pb != pc and 30 < sum(pa) < 90
    w = Stalls(windows=[(2, 3)])
    assert [w() for _ in range(7)] == [False, False, True, True, True, False, False]
    with pytest.raises(ValueError, match=r"^Stall probability must be in \[0, 1\), not 1"):
        Stalls(1)
