# amaranth: UnusedElaboratable=no
"""The shared job runner (:func:`sim.streams.run_jobs`) on a small stage: how jobs are fed and
split, where a job ends and the next one starts, the per-job cycle counts, the seeded stalls, the
queue feed with a program, the watchdog's message, and the monitor's allowed withdrawals."""

import functools

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from sim.streams import Stalls, run_jobs


class _Stage(wiring.Component):
    """Takes a count n on ``cfg_stream`` when idle, then passes n beats from ``i_stream`` to
    ``o_stream`` (+1, one register stage); ``busy`` from the configuration beat to the last
    output; ``drop`` withdraws the offered output beat. ``hang``: never takes a data beat."""

    cfg_stream: In(stream.Signature(8))
    i_stream: In(stream.Signature(8))
    o_stream: Out(stream.Signature(8))
    busy: Out(1)
    drop: In(1)

    def __init__(self, hang=False):
        self.hang = hang
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        left = Signal(8)
        m.d.comb += [self.busy.eq((left != 0) | self.o_stream.valid),
                     self.cfg_stream.ready.eq(~self.busy)]
        with m.If(self.cfg_stream.valid & self.cfg_stream.ready):
            m.d.sync += left.eq(self.cfg_stream.payload)
        if not self.hang:
            m.d.comb += self.i_stream.ready.eq((left != 0)
                                               & (~self.o_stream.valid | self.o_stream.ready))
        with m.If(self.i_stream.valid & self.i_stream.ready):
            m.d.sync += [self.o_stream.valid.eq(1), left.eq(left - 1),
                         self.o_stream.payload.eq(self.i_stream.payload + 1)]
        with m.Elif(self.o_stream.ready | self.drop):
            m.d.sync += self.o_stream.valid.eq(0)
        return m


PORTS = dict(inputs=("cfg_stream", "i_stream"), outputs=("o_stream",))


def jobs(*sizes, counts=True):
    out, base = [], 0
    for n in sizes:
        job = {"cfg_stream": [n], "i_stream": list(range(base, base + n))}
        if counts:
            job["o_stream"] = n
        out.append(job)
        base += n
    return out


@pytest.mark.parametrize("end", ["outputs", "idle"])
def test_serial_jobs_wait_for_the_previous_end(end):
    """Each job's outputs are its own; a job starts in the second cycle after the previous one
    ended (its last output, or the first cycle after its inputs with ``busy`` low); without
    stalls a job takes n + 1 cycles from its first data beat to its last output."""
    sizes = (3, 1, 4)
    run = run_jobs(_Stage(), jobs(*sizes, counts=end == "outputs"), **PORTS, end=end,
                   count_from=("i_stream",))
    base = 0
    for k, (n, job) in enumerate(zip(sizes, run.jobs, strict=True)):
        assert job["outputs"]["o_stream"] == [v + 1 for v in range(base, base + n)]
        assert job["cycles"] == n + 1 == job["last_output"] - job["first_input"] + 1
        if k:
            assert job["inputs"]["cfg_stream"] == [run.ends[k - 1] + 2]
        base += n
    if end == "idle":
        busy = run.trace["busy"]
        for e, job in zip(run.ends, run.jobs, strict=True):
            assert not busy[e] and all(busy[job["last_input"]:e])
    else:
        assert run.ends == [j["last_output"] for j in run.jobs]


def test_parallel_feed_offers_every_port_at_once():
    """The configuration beats and the data of all jobs are offered at once; the stage takes
    each configuration beat when idle."""
    run = run_jobs(_Stage(), [{"cfg_stream": [2, 3], "i_stream": [5, 6, 7, 8, 9], "o_stream": 5}],
                   **PORTS, feed="parallel", stalls=0.3, seed=4)
    assert run.beats["o_stream"] == [6, 7, 8, 9, 10]
    assert run.cycles == run.transfers["o_stream"][-1] - run.transfers["cfg_stream"][0] + 1


def test_stalls_are_seeded_per_port():
    def transfers(stalls, seed):
        return run_jobs(_Stage(), jobs(5, 7), **PORTS, stalls=stalls, seed=seed).transfers

    assert transfers(0.4, 1) == transfers(0.4, 1) != transfers(0.4, 2)
    held = transfers({"o_stream": Stalls(windows=[(0, 30)])}, 0)
    assert held["o_stream"][0] >= 30 and held["cfg_stream"][0] == 0


def test_queue_feed_and_program():
    """A program queues payloads while the run goes on and reads what arrived."""
    async def program(ctx, run):
        run.send("cfg_stream", [4])
        run.send("i_stream", [1, 2])
        while run.unsent["i_stream"]:
            await ctx.tick()
        sent_at = run.cycle
        run.send("i_stream", [3, 4])
        while len(run.beats["o_stream"]) < 4:
            await ctx.tick()
        return sent_at

    run = run_jobs(_Stage(), [], **PORTS, feed="queue", end=None, program=program, stalls=0.2)
    assert run.beats["o_stream"] == [2, 3, 4, 5]
    assert run.transfers["i_stream"][2] >= run.result


@pytest.mark.parametrize("allowed", [True, False])
def test_withdrawal_only_where_allowed(allowed):
    """The monitor fails a beat withdrawn without a transfer, unless the test allowed that port
    to withdraw in that very cycle; the withdrawal is then recorded and the rules go on."""
    async def program(ctx, run):
        run.send("cfg_stream", [2])
        run.send("i_stream", [1, 2])
        while not ctx.get(dut.o_stream.valid):
            await ctx.tick()
        for _ in range(3):                      # the sink holds ready low (its window)
            await ctx.tick()
        cycle = run.cycle + 1
        if allowed:
            run.withdrawals["o_stream"].allow(cycle)
        ctx.set(dut.drop, 1)
        await ctx.tick()
        ctx.set(dut.drop, 0)
        while len(run.beats["o_stream"]) < 1:
            await ctx.tick()
        return cycle

    dut = _Stage()
    run = functools.partial(run_jobs, dut, [], **PORTS, feed="queue", end=None, program=program,
                            stalls={"o_stream": Stalls(windows=[(0, 20)])})
    if not allowed:
        with pytest.raises(AssertionError, match=r"o_stream: valid fell in cycle \d+ without a "
                                                 r"transfer"):
            run()
        return
    result = run()
    assert result.withdrawals["o_stream"].done == [result.result]
    assert result.beats["o_stream"] == [3]      # the second beat; the first was withdrawn


def test_watchdog_names_the_transfers():
    with pytest.raises(AssertionError, match=r"^_Stage timed out after 300 cycles \(transfers: "
                       r"cfg_stream 1/2, i_stream 0/5, o_stream 0/5; 0 of 2 jobs done\)$"):
        run_jobs(_Stage(hang=True), jobs(2, 3), **PORTS, max_cycles=300)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"^_Stage has no stream port 'x_stream'"):
        run_jobs(_Stage(), [], inputs=("x_stream",), outputs=())
    with pytest.raises(ValueError, match=r"^feed must be one of serial, parallel, queue"):
        run_jobs(_Stage(), [], **PORTS, feed="both")
