"""Stream testbench helpers for the Amaranth simulator (spec 5; style R6, R7).

Every block of the project moves data on :mod:`amaranth.lib.stream` ports. This module drives and
checks such ports from async testbenches, and :func:`run_streams` runs a whole component with
random input idles and output back-pressure, a protocol monitor on every stream port, a cycle
timeout and a cycle count.

Payload values
--------------
Payloads are given as ints (raw bits, or the value of a plain ``signed``/``unsigned`` shape), as
dicts/lists for ``data.StructLayout``/``data.ArrayLayout`` payloads (packed with
``layout.const(...)``), or as ``data.Const``. Received payloads come back as plain Python values:
``dict`` for a struct layout, ``list`` for an array layout (recursively) and ``int`` otherwise
(see :func:`unpack`).

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
from collections.abc import Mapping, Sequence

from amaranth.lib import data
from amaranth.lib.stream import Signature as StreamSignature
from amaranth.sim import Simulator

from rtl.flow.toolchain import BUILD_ROOT

__all__ = ["Stalls", "stall_sources", "pack", "unpack", "stream_put", "stream_get",
           "stream_monitor", "run_streams", "CLOCK_PERIOD", "RTLFailure", "rtl_failures"]

#: Clock period of :func:`run_streams`, in seconds (10 ns, as in the cocotb testbenches).
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


def pack(shape, payload):
    """``payload`` as a value for a port of ``shape``: ``data.Const`` for a layout, else as is."""
    if isinstance(shape, data.Layout):
        if isinstance(payload, data.Const):
            return shape.const(payload)
        if isinstance(payload, (Mapping, Sequence)):
            return shape.const(payload)
        return data.Const(shape, int(payload))
    return payload


def unpack(value):
    """A sampled payload as plain Python: dict (struct), list (array) or int, recursively."""
    if isinstance(value, data.Const):
        layout = value.shape()
        if isinstance(layout, data.ArrayLayout):
            return [unpack(value[i]) for i in range(layout.length)]
        return {name: unpack(value[name]) for name, _ in layout}
    return value


def _bits(value):
    return value.as_bits() if isinstance(value, data.Const) else int(value)


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


def stream_monitor(stream, name, transfers=None):
    """A background testbench that checks the stream rules on ``stream`` every cycle.

    Once ``valid`` is high, ``valid`` and the payload must stay unchanged until the transfer
    (``valid & ready`` at a clock edge). A violation raises ``AssertionError`` naming the port
    ``name`` and the cycle. The cycle of every transfer is appended to ``transfers`` (a list).
    """
    async def monitor(ctx):
        cycle = 0
        held = None     # (payload bits, cycle) of a beat that was offered but not yet taken
        while True:
            _, _, valid, ready, payload = await ctx.tick().sample(
                stream.valid, stream.ready, stream.payload)
            if held is not None:
                bits, since = held
                if not valid:
                    raise AssertionError(
                        f"{name}: valid fell in cycle {cycle} without a transfer "
                        f"(it was raised in cycle {since})")
                if _bits(payload) != bits:
                    raise AssertionError(
                        f"{name}: payload changed in cycle {cycle} while valid was high and "
                        f"ready low (valid since cycle {since}): {bits:#x} -> "
                        f"{_bits(payload):#x}")
            if valid and ready:
                if transfers is not None:
                    transfers.append(cycle)
                held = None
            elif valid:
                held = (_bits(payload), cycle if held is None else held[1])
            else:
                held = None
            cycle += 1
    return monitor


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


def run_streams(component, inputs, outputs, *, stalls=0.0, seed=0, max_cycles=None, probes=None,
                name=None):
    """Run ``component`` in the Amaranth simulator on streams of payloads.

    Parameters
    ----------
    component : wiring.Component
        The DUT, with its stream ports in its signature. Its ``sync`` domain gets a 10 ns clock.
    inputs : dict
        ``{port name: [payload, ...]}`` for the DUT's input streams (payload forms: module doc).
    outputs : dict
        ``{port name: count}``: how many payloads to receive from each output stream.
    stalls : float, Stalls or dict
        The probability of an input idle / output back-pressure cycle on every port, or a
        ``{port name: float or Stalls}`` dict (ports not named do not stall). A float is seeded
        per port from ``seed`` and the port name, so ports stall independently and reproducibly.
    seed : int
        Seed for the stall patterns.
    max_cycles : int or None
        Cycle limit; reaching it raises ``AssertionError`` (a hang is a failure, never a loop).
        ``None``: a generous bound from the transfer count, the stall probability and the forced
        stall windows.
    probes : sequence of str, or dict, or None
        Signals whose values are read once all streams have finished: member names of the
        component (e.g. ``("active", "gated")``) or a ``{name: value}`` dict.
    name : str or None
        Base name of the VCD file written to ``build/vcd/<name>.vcd`` when the environment
        variable ``FOCUS_VCD`` is set (not empty, not ``0``); default: the current pytest id.

    Returns
    -------
    (outputs, stats)
        ``outputs`` is ``{port name: [payload, ...]}`` in arrival order (plain Python values).
        ``stats`` has ``cycles`` (first input transfer to last output transfer, inclusive; 0 when
        there is no transfer), ``first_input`` and ``last_output`` (cycle numbers, or None), the
        ``transfers`` per port, and the final value of every probe.

    A protocol monitor checks the stream rules on every stream port of the component; a violation
    raises ``AssertionError`` naming the port and the cycle.
    """
    ports = _stream_ports(component)
    for port in (*inputs, *outputs):
        if port not in ports:
            raise ValueError(f"{type(component).__name__} has no stream port {port!r}: its "
                             f"stream ports are {', '.join(sorted(ports)) or 'none'}")
    sources = stall_sources(stalls, (*inputs, *outputs), seed)
    if probes is None:
        probes = {}
    elif not isinstance(probes, Mapping):
        probes = {probe: getattr(component, probe) for probe in probes}

    if max_cycles is None:
        beats = sum(len(v) for v in inputs.values()) + sum(outputs.values())
        p = max((s.p for s in sources.values()), default=0.0)
        forced = sum(n for s in sources.values() for _, n in s.windows)
        max_cycles = 1000 + forced + int(4 * beats / (1.0 - p))

    transfers = {port: [] for port in ports}
    received = {}
    pending = set(inputs) | set(outputs)
    final = {}

    sim = Simulator(component)
    sim.add_clock(CLOCK_PERIOD)

    for port in ports:
        sim.add_testbench(stream_monitor(ports[port], port, transfers[port]), background=True)

    def put(port):
        async def testbench(ctx):
            await stream_put(ctx, ports[port], inputs[port], sources[port])
            pending.discard(port)
        return testbench

    def get(port):
        async def testbench(ctx):
            received[port] = await stream_get(ctx, ports[port], outputs[port], sources[port])
            pending.discard(port)
        return testbench

    for port in inputs:
        sim.add_testbench(put(port))
    for port in outputs:
        sim.add_testbench(get(port))

    async def finish(ctx):
        while pending:
            await ctx.tick()
        for probe, value in probes.items():
            final[probe] = ctx.get(value)
    sim.add_testbench(finish)

    async def watchdog(ctx):
        for _ in range(max_cycles):
            await ctx.tick()
        progress = ", ".join(
            f"{port} {len(transfers[port])}/"
            f"{len(inputs[port]) if port in inputs else outputs[port]}"
            for port in (*inputs, *outputs))
        raise AssertionError(f"{type(component).__name__} timed out after {max_cycles} cycles "
                             f"(transfers: {progress})")
    sim.add_testbench(watchdog, background=True)

    vcd = os.environ.get("FOCUS_VCD", "")
    if vcd and vcd != "0":
        with sim.write_vcd(str(_vcd_path(name))):
            sim.run()
    else:
        sim.run()

    firsts = [transfers[port][0] for port in inputs if transfers[port]]
    lasts = [transfers[port][-1] for port in outputs if transfers[port]]
    first = min(firsts) if firsts else None
    last = max(lasts) if lasts else None
    stats = {
        "cycles": last - first + 1 if first is not None and last is not None else 0,
        "first_input": first,
        "last_output": last,
        "transfers": {port: len(t) for port, t in transfers.items()},
        **final,
    }
    return {port: received[port] for port in outputs}, stats
