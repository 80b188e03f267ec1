"""cocotb testbench of :class:`rtl.sic.similarity_comparator.SimilarityComparator` (spec 4.1; style
R8).

Run through :func:`sim.runner.run_cocotb`, which passes the parameters as JSON in
``FOCUS_PARAMS``. Two tests:

- ``job``: the data path of ``sim.similar(..., simulator="icarus"/"verilator")``. It reads the
  comparisons from the ``.npz`` named by ``FOCUS_JOB``, drives them with the job's stalls and seed,
  and writes ``similar``, ``dot``, ``cycles``, ``active`` and ``gated`` to ``FOCUS_JOB_OUT``.
- ``regression``: ``FOCUS_PAIRS`` (default 10 000) comparisons from
  :func:`sim.similarity.comparison_vectors` (uniform, correlated near the thresholds, zero, all
  most-negative, sparse, and exact-threshold pairs with theta_q 0 .. 2**F - 1), checked pair by
  pair against :func:`golden.similarity.similar` and the dot product, with and without stalls,
  with protocol monitors on both ports and the active/gated counters checked. The seed comes from
  ``FOCUS_SEED`` (default 1) and is logged.
- ``monitor_catches_violations``: the protocol monitor itself records planted violations.
"""

import os

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, RisingEdge, with_timeout

from golden.cycles import similar_cycles
from golden.similarity import dot as golden_dot
from golden.similarity import similar as golden_similar
from golden.similarity import sqnorm
from rtl.sic.similarity_comparator import (
    COMPARATOR_LATENCY,
    comparator_input_layout,
    comparator_output_layout,
)

from ..cocotb_streams import (
    PERIOD_NS,
    StreamMonitor,
    StreamSink,
    StreamSource,
    start_bench,
    transfer_cycles,
)
from ..similarity import comparison_vectors
from .settings import PARAMS, SEED, env_int

PAIRS = env_int("FOCUS_PAIRS", 10000)


def model(params, x, y, nx, ny, theta_q):
    """Expected (similar, dot): golden per threshold; dot is 0 for a skipped comparison."""
    expected = np.zeros(len(x), bool)
    for t in np.unique(theta_q):
        sel = theta_q == t
        expected[sel] = golden_similar(x[sel], y[sel], int(t), params.theta_bits)
    dots = np.where((nx > 0) & (ny > 0), golden_dot(x, y), 0)
    return expected, dots


class TB:
    """Driver (:class:`StreamSource`), monitors (:class:`StreamMonitor` on both ports), sink
    and checker of one comparator; :func:`model` is the model."""

    def __init__(self, dut, params, stalls, seed):
        self.dut, self.params = dut, params
        dut._log.info("params %s, stalls %s, seed %d", params.tag, stalls, seed)
        self.source = StreamSource(dut, "i_stream", comparator_input_layout(params), stalls, seed)
        self.sink = StreamSink(dut, "o_stream", comparator_output_layout(params), stalls, seed)
        self.monitors = [StreamMonitor(dut, "i_stream"), StreamMonitor(dut, "o_stream")]
        dut.clear.value = 0

    async def start(self):
        await start_bench(self.dut, self.monitors)

    async def run(self, x, y, nx, ny, theta_q, stalls):
        """Drive the comparisons, collect the results; returns (similar, dot, stats)."""
        n = len(x)
        payloads = [{"x": a, "y": b, "nx": int(na), "ny": int(nb), "theta_q": int(t)}
                    for a, b, na, nb, t in zip(x.tolist(), y.tolist(), nx, ny, theta_q,
                                               strict=True)]
        send = cocotb.start_soon(self.source.send(payloads))
        # A hang is a failure: allow four times the no-stall cycles, scaled for the stalls.
        budget = int(4 * n / (1.0 - stalls) ** 2 + 100) * PERIOD_NS
        received = await with_timeout(cocotb.start_soon(self.sink.recv(n)), budget, "ns")
        await send
        await RisingEdge(self.dut.clk)
        stats = {
            "cycles": transfer_cycles(*self.monitors),
            "active": self.dut.active.value.to_unsigned(),
            "gated": self.dut.gated.value.to_unsigned(),
        }
        similar = np.array([r["similar"] for r in received], bool)
        dots = np.array([r["dot"] for r in received], np.int64)
        return similar, dots, stats

    def check(self, got, expected, x, y, theta_q):
        (similar, dots, stats), (want, want_dots) = got, expected
        for monitor in self.monitors:
            monitor.check()
        bad = np.flatnonzero((similar != want) | (dots != want_dots))
        if len(bad):
            i = bad[0]
            raise AssertionError(
                f"{len(bad)} of {len(want)} comparisons differ from golden; first #{i}: "
                f"similar {similar[i]} (golden {want[i]}), dot {dots[i]} (golden {want_dots[i]}), "
                f"theta_q {theta_q[i]}, x {x[i].tolist()}, y {y[i].tolist()}")
        nonzero = int(np.count_nonzero((sqnorm(x) > 0) & (sqnorm(y) > 0)))
        assert (stats["active"], stats["gated"]) == (nonzero, len(x) - nonzero), (
            f"counters active {stats['active']}, gated {stats['gated']}; expected {nonzero}, "
            f"{len(x) - nonzero}")


@cocotb.test(skip="FOCUS_JOB" not in os.environ)
async def job(dut):
    """One ``sim.similar`` job: inputs from ``FOCUS_JOB``, outputs to ``FOCUS_JOB_OUT``."""
    with np.load(os.environ["FOCUS_JOB"]) as job:
        x, y, nx, ny, theta_q = (job[k] for k in ("x", "y", "nx", "ny", "theta_q"))
        stalls, seed = float(job["stalls"]), int(job["seed"])
    tb = TB(dut, PARAMS, stalls, seed)
    await tb.start()
    similar, dots, stats = await tb.run(x, y, nx, ny, theta_q, stalls)
    for monitor in tb.monitors:
        monitor.check()
    np.savez(os.environ["FOCUS_JOB_OUT"], similar=similar, dot=dots, **stats)


@cocotb.test()
@cocotb.parametrize(stalls=[0.0, 0.3])
async def regression(dut, stalls):
    """``FOCUS_PAIRS`` mixed comparisons against golden, pair by pair, under ``stalls``."""
    x, y, theta_q = comparison_vectors(PARAMS, PAIRS, seed=SEED)
    nx, ny = sqnorm(x), sqnorm(y)
    expected = model(PARAMS, x, y, nx, ny, theta_q)
    dut._log.info("regression: %d pairs (FOCUS_PAIRS), seed %d (FOCUS_SEED): %d similar, "
                  "%d zero-skipped", PAIRS, SEED, int(np.count_nonzero(expected[0])),
                  int(np.count_nonzero((nx == 0) | (ny == 0))))
    tb = TB(dut, PARAMS, stalls, SEED)
    await tb.start()
    got = await tb.run(x, y, nx, ny, theta_q, stalls)
    tb.check(got, expected, x, y, theta_q)
    cycles = got[2]["cycles"]
    if stalls == 0.0:
        assert cycles == similar_cycles(PAIRS), (
            f"{cycles} cycles for {PAIRS} pairs without stalls; model {similar_cycles(PAIRS)}")
    dut._log.info("regression passed: %d pairs in %d cycles (%.3f per pair)", PAIRS, cycles,
                  cycles / PAIRS)


@cocotb.test()
async def monitor_catches_violations(dut):
    """The input monitor records a payload that changes, and a valid that falls, while waiting."""
    tb = TB(dut, PARAMS, 0.0, SEED)
    await tb.start()
    zero = {"x": [0] * PARAMS.dim, "y": [0] * PARAMS.dim, "nx": 0, "ny": 0, "theta_q": 0}
    # The sink is never ready: this fills every stage.
    await tb.source.send([zero] * COMPARATOR_LATENCY)
    monitor = tb.monitors[0]
    dut.i_stream__payload.value = tb.source.bits(zero)
    dut.i_stream__valid.value = 1
    await ClockCycles(dut.clk, 2)
    dut.i_stream__payload.value = tb.source.bits({**zero, "theta_q": 1})
    await ClockCycles(dut.clk, 2)
    dut.i_stream__valid.value = 0
    await ClockCycles(dut.clk, 2)
    assert len(monitor.errors) == 2, monitor.errors
    assert monitor.errors[0].startswith("i_stream: payload changed while waiting"), monitor.errors
    assert monitor.errors[1].startswith("i_stream: valid fell without a transfer"), monitor.errors
    assert len(monitor.transfers) == COMPARATOR_LATENCY
