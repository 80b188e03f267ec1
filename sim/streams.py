"""The Amaranth-simulator harness of every driver in :mod:`sim` (spec 5; style R6, R7).

Every block of the project moves data on :mod:`amaranth.lib.stream` ports. This module drives and
checks such ports from async testbenches (:func:`stream_put`, :func:`stream_get`,
:func:`stream_monitor`), and :func:`run_jobs` is the one job runner the drivers share: jobs of
stream payloads through one simulation of a component, with seeded input idles and output
back-pressure, a stream-rule monitor on every stream port, a cycle watchdog and per-job cycle
counts. :func:`run_streams` is its one-job form.

Payload values
--------------
Payloads are given as ints (raw bits, or the value of a plain ``signed``/``unsigned`` shape), as
dicts/lists for ``data.StructLayout``/``data.ArrayLayout`` payloads (packed with
``layout.const(...)``), or as ``data.Const``. Received payloads come back as plain Python values:
``dict`` for a struct layout, ``list`` for an array layout (recursively) and ``int`` otherwise.
The conversions are :func:`rtl.codecs.pack` and :func:`rtl.codecs.unpack` (re-exported here).

Cycle numbering
---------------
Cycle ``k`` is the cycle that ends with the ``k``-th active clock edge of the simulation (counted
from 0); a transfer "happens in cycle k" when ``valid & ready`` is sampled high at that edge.

Only one-shot ``await ctx.tick()...`` waits are used: an abandoned async iterator (``until``,
``repeat``, ``async for``) prints "Exception ignored" when a failed simulation is garbage-collected,
which ``filterwarnings = error`` would turn into an unrelated test failure.
"""

import contextlib
import os
import random
import re
from bisect import bisect_right
from collections import deque
from collections.abc import Mapping
from enum import Enum
from itertools import accumulate

from amaranth.lib import data
from amaranth.lib.stream import Signature as StreamSignature
from amaranth.sim import Simulator

from rtl.codecs import pack, unpack
from rtl.flow.toolchain import BUILD_ROOT

__all__ = ["Stalls", "stall_sources", "stall_patterns", "stall_bounds", "pack", "unpack",
           "stream_put", "stream_get", "stream_monitor", "streams_monitor", "Withdrawals",
           "run_jobs", "JobRun",
           "run_streams", "CLOCK_PERIOD", "RTLFailure", "rtl_failures"]

#: Clock period of the harness, in seconds (10 ns, as in the cocotb testbenches).
CLOCK_PERIOD = 10e-9


class RTLFailure(RuntimeError):
    """The RTL, or the driver running it, failed on a job whose input the checks accepted."""


@contextlib.contextmanager
def rtl_failures(what):
    """Around the run of a job whose input has been checked: a ``ValueError`` raised inside (the
    driver's or the harness's own, e.g. a result it cannot decode) becomes :class:`RTLFailure`, a
    ``RuntimeError``. ``ValueError`` means bad input, and bad input was rejected before the run,
    so a valid job never fails with one."""
    try:
        yield
    except ValueError as exc:
        raise RTLFailure(f"{what} failed on a valid job: {exc}") from exc


class Stalls:
    """A seeded source of stall decisions: one call per decision, ``True`` means stall.

    Parameters
    ----------
    p : float
        Probability of a stall (an input idle or an output back-pressure cycle), in [0, 1).
    seed : int or str
        Seed of the private :class:`random.Random`; the same seed gives the same pattern.
    windows : sequence of (start, length)
        Forced stalls: decisions ``start .. start + length - 1`` (counted from 0) are all stalls.
        On a sink, one decision is one cycle, so ``windows=[(20, 100)]`` holds ``ready`` low for
        100 cycles from cycle 20: a long consumer stall.
    """

    def __init__(self, p=0.0, seed=0, *, windows=()):
        if not 0.0 <= p < 1.0:
            raise ValueError(f"Stall probability must be in [0, 1), not {p!r}")
        self.p = float(p)
        self.seed = seed
        self.windows = tuple((int(s), int(n)) for s, n in windows)
        self._rng = random.Random(seed)
        self._count = 0

    @classmethod
    def of(cls, spec, seed=0):
        """``spec`` as a :class:`Stalls`: an instance is returned as is, ``None`` means no stalls,
        a number is the probability ``p`` with this ``seed``."""
        if isinstance(spec, Stalls):
            return spec
        return cls(0.0 if spec is None else spec, seed)

    def __call__(self):
        n = self._count
        self._count += 1
        if any(start <= n < start + length for start, length in self.windows):
            return True
        return self.p > 0.0 and self._rng.random() < self.p

    def __repr__(self):
        return f"Stalls(p={self.p}, seed={self.seed!r}, windows={list(self.windows)})"


def stall_sources(stalls, ports, seed=0):
    """``{port: Stalls}`` for ``ports`` from one probability (or :class:`Stalls`) for all of them,
    or from a ``{port: probability or Stalls}`` mapping (ports not named do not stall). Each
    port's stalls are seeded with ``f"{seed}:{port}"``."""
    if not isinstance(stalls, Mapping):
        stalls = {port: stalls for port in ports}
    return {port: Stalls.of(stalls.get(port), seed=f"{seed}:{port}") for port in ports}


def stall_patterns(inputs, outputs, p=0.3):
    """The four stall patterns every stream test runs, as verilog-axis and cocotbext-axi tests
    do: ``{"no-stalls", "idles", "backpressure", "both"}`` -> a ``stalls`` argument (none; input
    idles on every one of ``inputs``; back-pressure on every one of ``outputs``; both), each with
    probability ``p``."""
    return {"no-stalls": 0.0, "idles": dict.fromkeys(inputs, p),
            "backpressure": dict.fromkeys(outputs, p), "both": p}


def stall_bounds(stalls, ports):
    """``(p, forced)`` of ``stalls`` on ``ports``, for cycle budgets: the largest stall probability
    and the number of forced stall decisions (:class:`Stalls` windows) summed over the ports."""
    sources = stall_sources(stalls, ports).values()
    return (max((s.p for s in sources), default=0.0),
            sum(n for s in sources for _, n in s.windows))


def _bits(value):
    return value.as_bits() if isinstance(value, data.Const) else int(value)


def _plain(value):
    """A sampled signal value as an int (an enum-shaped signal samples as its member)."""
    return int(value.value if isinstance(value, Enum) else value)


async def stream_put(ctx, stream, payloads, stalls=None):
    """Send ``payloads`` on ``stream`` (the DUT's input port), in order.

    Before each payload, ``stalls()`` is asked once per cycle whether to idle (``valid`` low);
    then ``valid`` and the payload are held until the transfer, as the stream rules require.
    Returns when the last payload has been transferred; ``valid`` is low afterwards.
    """
    stalls = Stalls.of(stalls)
    shape = stream.payload.shape()
    for payload in payloads:
        while stalls():
            await ctx.tick()
        await _offer(ctx, stream, shape, payload)


async def _offer(ctx, stream, shape, payload):
    """Offer one payload and hold it until the transfer; ``valid`` is low afterwards."""
    ctx.set(stream.payload, pack(shape, payload))
    ctx.set(stream.valid, 1)
    while True:
        _, _, ready = await ctx.tick().sample(stream.ready)
        if ready:
            break
    ctx.set(stream.valid, 0)


async def stream_get(ctx, stream, count, stalls=None):
    """Receive ``count`` payloads from ``stream`` (the DUT's output port) and return them as a list
    of plain Python values (see :func:`unpack`).

    Each cycle ``stalls()`` decides whether ``ready`` is low (back-pressure). ``ready`` is low after
    the last transfer.
    """
    stalls = Stalls.of(stalls)
    received = []
    while len(received) < count:
        ctx.set(stream.ready, not stalls())
        _, _, valid, ready, payload = await ctx.tick().sample(
            stream.valid, stream.ready, stream.payload)
        if valid and ready:
            received.append(unpack(payload))
    ctx.set(stream.ready, 0)
    return received


def watchdog(cycles, what):
    """A background testbench that fails the simulation with ``what() `` (or ``what``, a string)
    in its message when it is still running after ``cycles`` clock cycles: a hung design fails
    instead of hanging the test."""
    async def testbench(ctx):
        for _ in range(cycles):
            await ctx.tick()
        raise AssertionError(f"{what() if callable(what) else what} after {cycles} cycles")
    return testbench


def stream_monitor(stream, name, transfers=None, on_transfer=None):
    """A background testbench that checks the stream rules on ``stream`` every cycle.

    Once ``valid`` is high, ``valid`` and the payload must stay unchanged until the transfer
    (``valid & ready`` at a clock edge). A violation raises ``AssertionError`` naming the port
    ``name`` and the cycle. The cycle of every transfer is appended to ``transfers`` (a list), and
    ``on_transfer(cycle, payload)`` is called with the sampled payload.
    """
    return streams_monitor({name: (stream, transfers, on_transfer)})


def streams_monitor(ports, withdrawals=None):
    """:func:`stream_monitor` of several streams in one testbench: ``ports`` maps each name to
    ``(stream, transfers, on_transfer)``. One testbench samples them all each cycle (the
    simulator's cost is per testbench woken, not per signal), checking the ports in order.

    ``withdrawals`` (optional) maps a name to a :class:`Withdrawals`: the cycles in which that
    port may drop an offered beat without a transfer (an abort's flush, the one exception a
    block's contract may make to the stream rules), and the record of those it did drop."""
    withdrawals = withdrawals or {}
    checkers = [_RuleChecker(name, *port, withdrawals=withdrawals.get(name))
                for name, port in ports.items()]
    signals = [sig for c in checkers for sig in (c.stream.valid, c.stream.ready, c.stream.payload)]

    async def monitor(ctx):
        cycle = 0
        while True:
            sampled = (await ctx.tick().sample(*signals))[2:]
            for k, checker in enumerate(checkers):
                checker.step(cycle, *sampled[3 * k:3 * k + 3])
            cycle += 1
    return monitor


class Withdrawals:
    """The cycles in which a monitored port may withdraw an offered beat (``allowed``, a set
    the test fills as it goes), and the cycles in which it did (``done``, a list)."""

    def __init__(self):
        self.allowed = set()
        self.done = []

    def allow(self, cycle):
        """Lets the port drop its offered beat in ``cycle`` (the monitor's cycle numbering)."""
        self.allowed.add(cycle)


class _RuleChecker:
    """The stream rules of one port, fed one sampled cycle at a time."""

    def __init__(self, name, stream, transfers=None, on_transfer=None, withdrawals=None):
        self.name, self.stream = name, stream
        self.transfers, self.on_transfer = transfers, on_transfer
        self.withdrawals = withdrawals
        self.held = None    # (payload bits, cycle) of a beat offered but not yet taken

    def step(self, cycle, valid, ready, payload):
        w = self.withdrawals
        if self.held is not None and not valid and w is not None and cycle in w.allowed:
            w.done.append(cycle)
            self.held = None
        if self.held is not None:
            bits, since = self.held
            if not valid:
                raise AssertionError(
                    f"{self.name}: valid fell in cycle {cycle} without a transfer "
                    f"(it was raised in cycle {since})")
            if _bits(payload) != bits:
                raise AssertionError(
                    f"{self.name}: payload changed in cycle {cycle} while valid was high and "
                    f"ready low (valid since cycle {since}): {bits:#x} -> "
                    f"{_bits(payload):#x}")
        if valid and ready:
            if self.transfers is not None:
                self.transfers.append(cycle)
            if self.on_transfer is not None:
                self.on_transfer(cycle, payload)
            self.held = None
        elif valid:
            self.held = (_bits(payload), cycle if self.held is None else self.held[1])
        else:
            self.held = None


def _stream_ports(component):
    """``{name: interface}`` of the component's top-level stream ports (either direction)."""
    return {name: getattr(component, name)
            for name, member in component.signature.members.items()
            if member.is_signature and isinstance(member.signature, StreamSignature)}


def _vcd_path(name):
    if name is None:
        name = os.environ.get("PYTEST_CURRENT_TEST", "run_streams").split(" ")[0]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")
    path = BUILD_ROOT / "vcd" / f"{name}.vcd"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


# ---- the job runner -----------------------------------------------------------------------------

FEEDS = ("serial", "parallel", "queue")
ENDS = ("outputs", "idle", None)


class JobRun:
    """The record of one :func:`run_jobs` simulation; also what ``until`` and ``program`` see
    while it runs.

    Members
    -------
    transfers : dict
        ``{port: [cycle, ...]}``: every transfer on every stream port of the component.
    beats : dict
        ``{output port: [payload, ...]}``: every payload received, as plain Python, in order
        (``beats[port][i]`` transferred in cycle ``transfers[port][i]``).
    trace : dict
        ``{name: [value, ...]}``: each traced signal's value in every cycle (sampled at the edge).
    ends : list
        The cycle in which each job ended, as far as the jobs have ended (``None``: a job that
        ended before anything was transferred, e.g. one expecting no outputs).
    cycle : int
        The cycle in progress (the number of clock edges so far).
    pending : set
        The input ports whose feeders have not finished (``serial`` and ``parallel`` feeds).
    unsent : dict
        ``queue`` feed: ``{input port: payloads queued and not yet transferred}``.
    jobs : list of dict
        After the run, per job: ``inputs`` (``{port: [cycle, ...]}``), ``first_input`` and
        ``last_input`` (over the ``count_from`` ports; None without a transfer there) and, with an
        ``end``, ``outputs`` (``{port: [payload, ...]}``), ``output_cycles``, ``last_output``,
        ``end`` (the cycle it ended) and ``cycles`` (first input to last output transfer,
        inclusive; 0 without either).
    first_input, last_output, cycles : int or None
        The same over the whole run (``cycles`` 0 without a transfer).
    final : dict
        Each probe's value once the run finished.
    result
        What ``program`` returned.
    withdrawals : dict
        ``{port: Withdrawals}``: the cycles in which the monitor lets a port drop an offered beat
        (:meth:`Withdrawals.allow`, for a block whose abort withdraws its outputs) and those in
        which it did.
    """

    def __init__(self, ports, inputs, outputs, trace, count):
        self._job_count = count
        self.transfers = {port: [] for port in ports}
        self.withdrawals = {port: Withdrawals() for port in ports}
        self.beats = {port: [] for port in outputs}
        self.trace = {name: [] for name in trace}
        self.ends = []
        self.cycle = 0
        self.pending = set(inputs)
        self.queues = {port: deque() for port in inputs}
        self.unsent = {port: 0 for port in inputs}
        self.jobs = []
        self.cycles = 0
        self.first_input = self.last_output = None
        self.final = {}
        self.result = None
        self.ctx = None

    @property
    def sent(self):
        """Whether every feeder has finished (``serial`` and ``parallel`` feeds)."""
        return not self.pending

    def ended(self, count=None):
        """Whether ``count`` jobs (default: all of them) have ended."""
        return len(self.ends) >= (self._job_count if count is None else count)

    def send(self, port, payloads):
        """``queue`` feed: queue ``payloads`` for input ``port``; they are offered from the next
        cycle on, with the port's idles."""
        self.queues[port].extend(payloads)
        self.unsent[port] += len(payloads)

    def get(self, signal):
        """The value of ``signal`` now (from ``until`` or ``program``)."""
        return self.ctx.get(signal)


def run_jobs(dut, jobs, *, inputs, outputs, feed="serial", end="outputs", stalls=0.0, seed=0,
             max_cycles=None, count_from=None, trace=(), probes=(), before=None, until=None,
             linger=0, program=None, vcd=None, name=None, helpers=()):
    """Run ``jobs`` through ``dut`` in one Amaranth simulation; returns a :class:`JobRun`.

    Parameters
    ----------
    dut : wiring.Component
        With stream ports in its signature; its ``sync`` domain gets a 10 ns clock. Every stream
        port has a monitor of the stream rules; a violation raises ``AssertionError`` naming the
        port and the cycle.
    jobs : list of dict
        Per job, ``{input port: [payload, ...]}`` and, with ``end="outputs"``, ``{output port:
        count}`` (how many payloads the job sends there). Input ports a job does not name get no
        payloads from it.
    inputs, outputs : sequence of str
        The ports driven: feeders with seeded idles on the inputs (in this order), sinks with
        seeded back-pressure on the outputs.
    feed : str
        ``"serial"``: one feeder sends each job's payloads port by port, in the order of
        ``inputs`` (a configuration beat, then the data); with an ``end``, a job's first payload
        is offered no earlier than the second cycle after the previous job ended (one idle
        cycle between jobs). ``"parallel"``: a feeder per input port sends every job's payloads
        on that port back to back, at once. ``"queue"``: a feeder per input port offers what
        ``JobRun.send`` queued (for a ``program``); ``jobs`` is then usually empty.
    end : str or None
        How a job ends. ``"outputs"``: when its output counts have all arrived (the sinks then
        stop: ``ready`` is low after the last job's outputs). ``"idle"``: in the first cycle after
        its last input transfer in which ``busy`` is low (``busy`` is then traced). ``None``: the
        runner does not split the run into jobs (sinks always run; see ``until``).
    stalls : float, Stalls or dict
        The probability of an input idle / output back-pressure cycle on every driven port, or a
        ``{port: float or Stalls}`` dict (ports not named do not stall). A float is seeded per
        port from ``seed`` and the port name (:func:`stall_sources`), so ports stall
        independently and reproducibly.
    max_cycles : int or None
        The watchdog: reaching it raises ``AssertionError`` naming the component and the
        transfers so far (a hang is a failure, never a loop). ``None``: a generous bound from the
        payload and output counts, the stall probability and the forced stall windows.
    count_from : sequence of str or None
        The input ports whose first transfer starts a job's cycle count (default: all inputs).
    trace : sequence
        Signals recorded in every cycle into ``JobRun.trace``: member names of ``dut``, or
        ``(name, signal)`` pairs.
    probes : sequence of str, or dict
        Signals read once the run has finished, into ``JobRun.final``: member names of ``dut``
        or a ``{name: value}`` dict.
    before : async callable or None
        ``await before(ctx)`` in the first feeder before its first payload (e.g. register
        writes).
    until : callable or None
        ``until(run)``, asked once per cycle: the run finishes when it is true (then ``linger``
        more cycles). Default: every feeder finished and (with an ``end``) every job ended.
    program : async callable or None
        ``await program(ctx, run)`` instead of ``until``: the run finishes when it returns
        (``JobRun.result``). It may drive other ports itself, ``run.send`` to a ``queue`` feed
        and read ``run.beats``, ``run.transfers`` and ``run.cycle``.
    vcd : path or None
        Write a VCD of the run there. None: ``build/vcd/<name>.vcd`` when the environment
        variable ``FOCUS_VCD`` is set (not empty, not ``0``); ``name`` defaults to the current
        pytest id.
    helpers : sequence of async callables
        More testbenches, run in the background (``await helper(ctx)``), e.g. to drive a
        non-stream port per job.
    """
    if feed not in FEEDS:
        raise ValueError(f"feed must be one of {', '.join(FEEDS)}, not {feed!r}")
    if end not in ENDS:
        raise ValueError(f"end must be 'outputs', 'idle' or None, not {end!r}")
    ports = _stream_ports(dut)
    inputs, outputs = tuple(inputs), tuple(outputs)
    for port in (*inputs, *outputs):
        if port not in ports:
            raise ValueError(f"{type(dut).__name__} has no stream port {port!r}: its "
                             f"stream ports are {', '.join(sorted(ports)) or 'none'}")
    count_from = inputs if count_from is None else tuple(count_from)
    sources = stall_sources(stalls, (*inputs, *outputs), seed)
    # Where each job's payloads (and, with end="outputs", its outputs) end on each port.
    in_marks = {port: list(accumulate(len(job.get(port, ())) for job in jobs)) for port in inputs}
    out_marks = ({port: list(accumulate(job.get(port, 0) for job in jobs)) for port in outputs}
                 if end == "outputs" else {})
    sent = {port: m[-1] if m else 0 for port, m in in_marks.items()}
    expected = {port: (out_marks[port][-1] if jobs else 0) if out_marks else None
                for port in outputs}
    if max_cycles is None:
        p, forced = stall_bounds(stalls, (*inputs, *outputs))
        beats = sum(sent.values()) + sum(n or 0 for n in expected.values())
        max_cycles = 1000 + forced + int(4 * beats / (1.0 - p))

    signals = dict((item, getattr(dut, item)) if isinstance(item, str) else tuple(item)
                   for item in trace)
    if end == "idle":
        signals.setdefault("busy", dut.busy)
    if not isinstance(probes, Mapping):
        probes = {probe: getattr(dut, probe) for probe in probes}
    run = JobRun(ports, inputs, outputs, signals, len(jobs))

    def last_cycle(marks, k):
        """The cycle of the last transfer of job k on any port of ``marks`` (None: none)."""
        cycles = [run.transfers[port][m[k] - 1] for port, m in marks.items() if m[k]]
        return max(cycles, default=None)

    def outputs_done():
        while len(run.ends) < len(jobs) and all(
                len(run.transfers[port]) >= m[len(run.ends)] for port, m in out_marks.items()):
            run.ends.append(last_cycle(out_marks, len(run.ends)))

    def on_transfer(port):
        def record(cycle, payload):
            if port in run.beats:
                run.beats[port].append(unpack(payload))
                if end == "outputs":
                    outputs_done()
        return record

    sim = Simulator(dut)
    sim.add_clock(CLOCK_PERIOD)

    async def watchdog(ctx):
        for n in range(max_cycles):
            await ctx.tick()
            run.cycle = n + 1
        progress = ", ".join(
            f"{port} {len(run.transfers[port])}"
            + (f"/{sent[port]}" if port in sent and feed != "queue" else "")
            + (f"/{expected[port]}" if expected.get(port) is not None else "")
            for port in (*inputs, *outputs))
        done = (f"; {len(run.ends)} of {len(jobs)} jobs done"
                if end is not None and len(jobs) > 1 else "")
        raise AssertionError(f"{type(dut).__name__} timed out after {max_cycles} cycles "
                             f"(transfers: {progress}{done})")
    sim.add_testbench(watchdog, background=True)
    for helper in helpers:
        sim.add_testbench(helper, background=True)

    sim.add_testbench(streams_monitor({
        port: (stream, run.transfers[port], on_transfer(port)) for port, stream in ports.items()},
        withdrawals=run.withdrawals), background=True)

    if signals:
        async def recorder(ctx):
            cycle = 0
            while True:
                sampled = (await ctx.tick().sample(*signals.values()))[2:]
                for name, value in zip(signals, sampled, strict=True):
                    run.trace[name].append(_plain(value))
                k = len(run.ends)
                if end == "idle" and k < len(jobs) and not run.trace["busy"][-1] and all(
                        len(run.transfers[port]) >= m[k] for port, m in in_marks.items()):
                    last = last_cycle(in_marks, k)
                    if last is None or last < cycle:
                        run.ends.append(cycle)
                cycle += 1
        sim.add_testbench(recorder, background=True)

    async def wait_for(ctx, k):
        """Job k waits for job k - 1's end and one idle cycle after it."""
        while not (run.ended(k) and (run.ends[k - 1] is None
                                     or run.cycle >= run.ends[k - 1] + 2)):
            await ctx.tick()

    if feed == "serial":
        async def serial(ctx):
            if before is not None:
                await before(ctx)
            for k, job in enumerate(jobs):
                if k and end is not None:
                    await wait_for(ctx, k)
                for port in inputs:
                    await stream_put(ctx, ports[port], job.get(port, ()), sources[port])
            run.pending.clear()
        sim.add_testbench(serial)
    elif feed == "parallel":
        def parallel(port):
            async def testbench(ctx):
                if before is not None and port == inputs[0]:
                    await before(ctx)
                payloads = [payload for job in jobs for payload in job.get(port, ())]
                await stream_put(ctx, ports[port], payloads, sources[port])
                run.pending.discard(port)
            return testbench
        for port in inputs:
            sim.add_testbench(parallel(port))
    else:
        for job in jobs:
            for port in inputs:
                run.send(port, job.get(port, ()))

        def queued(port):
            async def testbench(ctx):
                stream, stall, queue = ports[port], sources[port], run.queues[port]
                shape = stream.payload.shape()
                while True:
                    if not queue or stall():
                        await ctx.tick()
                        continue
                    await _offer(ctx, stream, shape, queue.popleft())
                    run.unsent[port] -= 1
            return testbench
        for port in inputs:
            sim.add_testbench(queued(port), background=True)
        run.pending.clear()

    async def sinks(ctx):
        """Every output's consumer: ``ready`` as its stalls say, until its expected count (one
        testbench for all of them, as for the monitors)."""
        active = list(outputs)
        while active:
            for port in list(active):
                limit = expected[port]
                if limit is not None and len(run.transfers[port]) >= limit:
                    ctx.set(ports[port].ready, 0)
                    active.remove(port)
                else:
                    ctx.set(ports[port].ready, not sources[port]())
            if active:
                await ctx.tick()
    sim.add_testbench(sinks, background=True)

    if end == "outputs":
        outputs_done()
    if until is None:
        def until(run):
            return run.sent and (end is None or run.ended())

    async def finish(ctx):
        run.ctx = ctx
        if program is not None:
            run.result = await program(ctx, run)
        else:
            while True:
                await ctx.tick()
                if until(run):
                    break
        for _ in range(linger):
            await ctx.tick()
        run.final = {probe: ctx.get(value) for probe, value in probes.items()}
    sim.add_testbench(finish)

    if vcd is None and os.environ.get("FOCUS_VCD", "") not in ("", "0"):
        vcd = _vcd_path(name)
    if vcd is not None:
        with sim.write_vcd(str(vcd)):
            sim.run()
    else:
        sim.run()

    run.jobs = _split_jobs(run, jobs, in_marks, out_marks, outputs, end, count_from)
    firsts = [run.transfers[port][0] for port in count_from if run.transfers[port]]
    lasts = [run.transfers[port][-1] for port in outputs if run.transfers[port]]
    run.first_input = min(firsts, default=None)
    run.last_output = max(lasts, default=None)
    if run.first_input is not None and run.last_output is not None:
        run.cycles = run.last_output - run.first_input + 1
    return run


def _split_jobs(run, jobs, in_marks, out_marks, outputs, end, count_from):
    """Per-job records (see :class:`JobRun`) from a finished run."""
    records = []
    for k in range(len(jobs)):
        ins = {port: run.transfers[port][m[k - 1] if k else 0:m[k]]
               for port, m in in_marks.items()}
        counted = [c for port in count_from for c in ins[port]]
        record = {"inputs": ins, "first_input": min(counted, default=None),
                  "last_input": max(counted, default=None)}
        if end is not None:
            if end == "outputs":
                picked = {port: range(m[k - 1] if k else 0, m[k])
                          for port, m in out_marks.items()}
            else:               # "idle": the outputs up to the job's end, after the previous one
                low = run.ends[k - 1] if k else -1
                high = run.ends[k] if k < len(run.ends) else low
                picked = {port: range(bisect_right(run.transfers[port], low),
                                      bisect_right(run.transfers[port], high))
                          for port in outputs}
            record["outputs"] = {port: [run.beats[port][n] for n in picked[port]]
                                 for port in outputs}
            record["output_cycles"] = {port: [run.transfers[port][n] for n in picked[port]]
                                       for port in outputs}
            last = max((c[-1] for c in record["output_cycles"].values() if c), default=None)
            first = record["first_input"]
            record.update(last_output=last, end=run.ends[k] if k < len(run.ends) else None,
                          cycles=last - first + 1 if first is not None and last is not None
                          else 0)
        records.append(record)
    return records


def run_streams(component, inputs, outputs, *, stalls=0.0, seed=0, max_cycles=None, probes=None,
                name=None):
    """Run ``component`` in the Amaranth simulator on streams of payloads: one job of
    :func:`run_jobs`, every input port fed at once.

    Parameters
    ----------
    component : wiring.Component
        The DUT, with its stream ports in its signature. Its ``sync`` domain gets a 10 ns clock.
    inputs : dict
        ``{port name: [payload, ...]}`` for the DUT's input streams (payload forms: module doc).
    outputs : dict
        ``{port name: count}``: how many payloads to receive from each output stream.
    stalls, seed, max_cycles, name
        As for :func:`run_jobs`.
    probes : sequence of str, or dict, or None
        Signals whose values are read once all streams have finished: member names of the
        component (e.g. ``("active", "gated")``) or a ``{name: value}`` dict.

    Returns
    -------
    (outputs, stats)
        ``outputs`` is ``{port name: [payload, ...]}`` in arrival order (plain Python values).
        ``stats`` has ``cycles`` (first input transfer to last output transfer, inclusive; 0 when
        there is no transfer), ``first_input`` and ``last_output`` (cycle numbers, or None), the
        ``transfers`` per port, and the final value of every probe.
    """
    run = run_jobs(component, [{**inputs, **outputs}], inputs=inputs, outputs=outputs,
                   feed="parallel", stalls=stalls, seed=seed, max_cycles=max_cycles,
                   probes=probes or (), name=name)
    stats = {"cycles": run.cycles, "first_input": run.first_input,
             "last_output": run.last_output,
             "transfers": {port: len(t) for port, t in run.transfers.items()}, **run.final}
    return {port: run.beats[port] for port in outputs}, stats
