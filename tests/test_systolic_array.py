# amaranth: UnusedElaboratable=no
"""The reference systolic array (rtl/tile/systolic_array.py) in the Amaranth simulator against
NumPy's integer matmul, under input idles and output back-pressure, with a stream-rule monitor on
every port; and a weight reload while activations are still in flight. With and without the
product register (FocusGemm's array), which adds one cycle of latency."""

import numpy as np
import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from rtl.flow.blocks import BLOCKS, REFERENCE_BLOCKS, build_block
from rtl.params import FocusParams
from rtl.tile.systolic_array import SystolicArray, array_latency, min_acc_bits
from sim.streams import (
    CLOCK_PERIOD,
    stall_patterns,
    stall_sources,
    stream_get,
    stream_monitor,
    stream_put,
    watchdog,
)


def _int8(rng, shape, bits=8):
    low, high = -(1 << (bits - 1)), 1 << (bits - 1)
    return rng.integers(low, high, size=shape, dtype=np.int64)

#: The four stall patterns (none, input idles, output back-pressure, both).
STALLS = stall_patterns(("w_stream", "i_stream"), ("o_stream",))


def run_array(dut, jobs, *, stalls=0.0, seed=0, max_cycles=5000):
    """Send each ``(W, X)`` of ``jobs`` in turn (the rows of W on ``w_stream``, then the rows of
    X on ``i_stream``, from one testbench) and collect every result row. ``stalls``: one
    probability for every port, or ``{port: probability}`` (:func:`sim.streams.stall_sources`).
    Returns (rows of results, {port: transfer cycles})."""
    ports = {name: getattr(dut, name) for name in ("w_stream", "i_stream", "o_stream")}
    transfers = {name: [] for name in ports}
    count = sum(len(x) for _, x in jobs)
    got = []
    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)
    for name, port in ports.items():
        sim.add_testbench(stream_monitor(port, name, transfers[name]), background=True)

    sources = stall_sources(stalls, ports, seed)

    async def source(ctx):
        w_stalls, i_stalls = sources["w_stream"], sources["i_stream"]
        for w, x in jobs:
            await stream_put(ctx, dut.w_stream, [{"w": row} for row in w.tolist()], w_stalls)
            await stream_put(ctx, dut.i_stream, [{"x": row} for row in x.tolist()], i_stalls)

    async def sink(ctx):
        got.extend(r["y"] for r in await stream_get(ctx, dut.o_stream, count,
                                                    sources["o_stream"]))

    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.add_testbench(watchdog(max_cycles, lambda: f"timed out: {len(got)}/{count} results"),
                      background=True)
    sim.run()
    return np.array(got, dtype=np.int64), transfers


@pytest.mark.parametrize("stalls", STALLS.values(), ids=STALLS.keys())
def test_matmul_3x4(stalls):
    rng = np.random.default_rng(7)
    w = _int8(rng, (3, 4))
    x = _int8(rng, (25, 3))
    # The extremes: -128 * -128 summed over every row is the largest result.
    w[:, 0], x[0] = -128, -128
    dut = SystolicArray(rows=3, cols=4)
    got, _ = run_array(dut, [(w, x)], stalls=stalls, seed=7)
    np.testing.assert_array_equal(got, x @ w)
    assert got[0, 0] == 3 * 128 * 128
    assert min_acc_bits(3, 8) == 18


@pytest.mark.parametrize("stalls", STALLS.values(), ids=STALLS.keys())
@pytest.mark.parametrize("rows,cols", [(1, 1), (2, 5), (5, 3)])
def test_matmul_product_register(rows, cols, stalls):
    """The registered product at the edges: one PE, and arrays wider and taller than square."""
    rng = np.random.default_rng(rows * 10 + cols)
    w = _int8(rng, (rows, cols))
    x = _int8(rng, (30, rows))
    w[:, 0], x[0] = -128, -128
    dut = SystolicArray(rows=rows, cols=cols, product_register=True)
    got, _ = run_array(dut, [(w, x)], stalls=stalls, seed=rows + cols)
    np.testing.assert_array_equal(got, x @ w)
    assert got[0, 0] == rows * 128 * 128


@pytest.mark.parametrize("product_register", [False, True], ids=["plain", "product_register"])
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 4)])
def test_latency_and_throughput(rows, cols, product_register):
    """Without stalls one vector per cycle, each result rows + cols - 1 cycles after its input,
    one more with the product register."""
    rng = np.random.default_rng(1)
    w, x = _int8(rng, (rows, cols)), _int8(rng, (10, rows))
    dut = SystolicArray(rows=rows, cols=cols, product_register=product_register)
    got, transfers = run_array(dut, [(w, x)])
    np.testing.assert_array_equal(got, x @ w)
    ins, outs = transfers["i_stream"], transfers["o_stream"]
    latency = rows + cols - 1 + (1 if product_register else 0)
    assert ins == list(range(ins[0], ins[0] + 10))
    assert outs == [c + latency for c in ins]
    assert array_latency(rows, cols, product_register) == dut.latency == latency


@pytest.mark.parametrize("product_register", [False, True], ids=["plain", "product_register"])
def test_weight_reload_waits_for_the_array_to_drain(product_register):
    """A second weight set offered while the first job's vectors are in flight is taken only
    after they have left, and later vectors use the new weights."""
    rng = np.random.default_rng(2)
    jobs = [(_int8(rng, (4, 3)), _int8(rng, (6, 4))), (_int8(rng, (4, 3)), _int8(rng, (5, 4)))]
    dut = SystolicArray(rows=4, cols=3, product_register=product_register)
    got, transfers = run_array(dut, jobs, stalls=0.2, seed=3)
    np.testing.assert_array_equal(got, np.vstack([x @ w for w, x in jobs]))
    first_reload = transfers["w_stream"][4]
    assert first_reload > transfers["o_stream"][5]


def test_narrow_accumulator_wraps():
    rng = np.random.default_rng(4)
    w, x = _int8(rng, (2, 2), bits=4), _int8(rng, (8, 2), bits=4)
    got, _ = run_array(SystolicArray(rows=2, cols=2, data_bits=4, acc_bits=6), [(w, x)])
    want = ((x @ w + 32) % 64) - 32
    np.testing.assert_array_equal(got, want)


def test_registry_and_bad_arguments():
    assert "systolic_array" in REFERENCE_BLOCKS and "systolic_array" not in BLOCKS
    array = build_block("systolic_array", FocusParams(dim=5, elem_bits=6))
    assert (array.rows, array.cols, array.data_bits, array.acc_bits) == (5, 5, 6, 15)
    assert not array.product_register          # the area reference is the plain array
    Fragment.get(array, None)   # used (it was built in rtl/flow/blocks.py, where unused would warn)
    assert SystolicArray().acc_bits == 21
    with pytest.raises(ValueError, match=r"rows = 0: it must be an integer >= 1"):
        SystolicArray(rows=0)
    with pytest.raises(ValueError, match=r"acc_bits = 1: it must be an integer >= 2"):
        SystolicArray(acc_bits=1)
    with pytest.raises(ValueError, match=r"product_register = 1: it must be True or False"):
        SystolicArray(product_register=1)
