"""cocotb 2.1 stream drivers and monitors for Amaranth's emitted Verilog (spec 5; style R4, R8).

Amaranth flattens a stream port ``<port>`` into the Verilog ports ``<port>__valid``,
``<port>__ready`` and ``<port>__payload`` (the payload as one packed vector). Payloads are packed
with ``layout.const({...}).as_bits()`` and unpacked with ``data.Const(layout, bits)``
(:func:`rtl.codecs.to_bits`, :func:`rtl.codecs.from_bits`), the same layouts the RTL uses;
received payloads are plain Python values (``dict``/``list``/``int``).

Timing discipline, the same on Icarus and Verilator: every driver writes just after a rising
edge, and every sampler reads at the falling edge, when everything driven in that cycle has
settled; a transfer happens at the next rising edge when ``valid & ready`` was seen. Nothing in
these synchronous designs changes on the falling edge (an ICG's latch only opens), and reading at
the falling edge avoids the simulators' different answers to "which value does a read right at
the rising edge see?".

Verilator: the cocotb runner builds with ``--public-flat-rw``, and with it Verilator 5.48 gives
VPI access to the ``__`` port names (checked; verilator#6140 concerns only signals made public by a
``.vlt`` file), so no wrapper is needed. See :mod:`sim.runner` for the ``-Wno-fatal`` build flag.
"""

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, RisingEdge

from rtl.codecs import from_bits, to_bits

from .streams import Stalls

__all__ = ["PERIOD_NS", "start_clock", "reset", "start_bench", "StreamSource", "StreamSink",
           "StreamMonitor", "transfer_cycles"]

#: Clock period of the cocotb testbenches, in ns.
PERIOD_NS = 10


def start_clock(dut, period_ns=PERIOD_NS):
    """Start ``Clock(dut.clk, period_ns, unit="ns")`` and return it."""
    clock = Clock(dut.clk, period_ns, unit="ns")
    clock.start()
    return clock


async def reset(dut, cycles=2):
    """Hold ``dut.rst`` high for ``cycles`` (>= 2) rising edges. Returns just after a rising edge
    with ``rst`` low, the point where drivers start."""
    if cycles < 2:
        raise ValueError(f"Reset must last at least 2 cycles, not {cycles}")
    dut.rst.value = 1
    for _ in range(cycles):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


async def start_bench(dut, monitors):
    """Start ``dut``'s clock (:func:`start_clock`), reset it (:func:`reset`), then start the
    stream ``monitors``: they watch from the first cycle after the reset."""
    start_clock(dut)
    await reset(dut)
    for monitor in monitors:
        monitor.start()


def _port(dut, port, suffix):
    name = f"{port}__{suffix}"
    try:
        return getattr(dut, name)
    except AttributeError:
        raise AttributeError(f"{dut._name} has no signal {name!r}: is {port!r} a stream port of "
                             f"the emitted Verilog?") from None


def _unsigned(handle):
    """A handle's value as an unsigned int (a 1-bit signal's value is a ``Logic``)."""
    value = handle.value
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)


def _hex(bits):
    return "/".join(f"{b:#x}" for b in bits)


def _high(handle):
    return str(handle.value) == "1"


class StreamSource:
    """Drives the DUT's input stream ``port`` with payloads of ``layout``, with random idles.

    Parameters
    ----------
    dut, port : the cocotb top handle and the stream port name, e.g. ``"i_stream"``.
    layout : data.Layout
        The payload layout, as the RTL builds it.
    stalls : float or Stalls
        Probability of an idle cycle before each payload (seeded by ``seed`` and ``port``).
    """

    def __init__(self, dut, port, layout, stalls=0.0, seed=0):
        self.port, self.layout, self.clk = port, layout, dut.clk
        self.valid, self.ready = _port(dut, port, "valid"), _port(dut, port, "ready")
        self.payload = _port(dut, port, "payload")
        self.stalls = Stalls.of(stalls, seed=f"{seed}:{port}")
        self.sent = 0
        self.valid.value = 0

    def bits(self, payload):
        """``payload`` (dict, list, int or ``data.Const``) as the raw bits of the port."""
        return to_bits(self.layout, payload)

    async def send(self, payloads):
        """Send ``payloads`` in order; call just after a rising edge (as :func:`reset` returns).
        Returns just after the rising edge of the last transfer, with ``valid`` low."""
        for payload in payloads:
            while self.stalls():
                await RisingEdge(self.clk)
            self.payload.value = self.bits(payload)
            self.valid.value = 1
            while True:
                await FallingEdge(self.clk)
                ready = _high(self.ready)
                await RisingEdge(self.clk)
                if ready:
                    break
            self.valid.value = 0
            self.sent += 1


class StreamSink:
    """Receives from the DUT's output stream ``port``, with random back-pressure.

    ``stalls`` is the probability that ``ready`` is low in a cycle (seeded by ``seed`` and
    ``port``). Received payloads are plain Python values of ``layout``.
    """

    def __init__(self, dut, port, layout, stalls=0.0, seed=0):
        self.port, self.layout, self.clk = port, layout, dut.clk
        self.valid, self.ready = _port(dut, port, "valid"), _port(dut, port, "ready")
        self.payload = _port(dut, port, "payload")
        self.stalls = Stalls.of(stalls, seed=f"{seed}:{port}")
        self.ready.value = 0

    def value(self, bits):
        return from_bits(self.layout, bits)

    async def recv(self, count):
        """Receive ``count`` payloads (a list); call just after a rising edge."""
        received = []
        while len(received) < count:
            ready = not self.stalls()
            self.ready.value = int(ready)
            await FallingEdge(self.clk)
            bits = self.payload.value.to_unsigned() if ready and _high(self.valid) else None
            await RisingEdge(self.clk)
            if bits is not None:
                received.append(self.value(bits))
        self.ready.value = 0
        return received


class StreamMonitor:
    """Checks the stream rules on ``port`` every cycle and records the transfers.

    Once ``valid`` is high, ``valid`` and the payload must stay unchanged until the transfer.
    The signals are ``<port>__valid``, ``__ready`` and ``__payload`` (Amaranth's names), or those
    of ``signals``: ``{"valid": handle, "ready": handle, "payload": [handles]}`` (for instance an
    AXI4-Stream port's ``tvalid``, ``tready`` and ``[tdata, tlast]``, which must all hold), on
    ``clock`` (default ``dut.clk``).
    Violations do not stop the simulation: they are recorded in :attr:`errors` (naming the port,
    the time and the cycle), and :meth:`check`, called at the end of the test, raises
    ``AssertionError`` if there were any. :attr:`transfers` holds the sim time (ns, mid-cycle) of
    every transfer.
    """

    def __init__(self, dut, port, *, clock=None, signals=None):
        self.port = port
        self.clk = dut.clk if clock is None else clock
        if signals is None:
            self.valid, self.ready = _port(dut, port, "valid"), _port(dut, port, "ready")
            self.payload = (_port(dut, port, "payload"),)
        else:
            self.valid, self.ready = signals["valid"], signals["ready"]
            self.payload = tuple(signals["payload"])
        self.errors, self.transfers = [], []
        self._task = None

    def start(self):
        self._task = cocotb.start_soon(self._run())
        return self

    def stop(self):
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self):
        cycle, held = 0, None       # held: (payload bits, cycle) of a beat offered, not yet taken
        while True:
            await FallingEdge(self.clk)
            valid, ready = _high(self.valid), _high(self.ready)
            bits = tuple(_unsigned(h) for h in self.payload) if valid else None
            if held is not None:
                where = f"at {get_sim_time('ns'):g} ns (cycle {cycle}; valid since {held[1]})"
                if not valid:
                    self.errors.append(f"{self.port}: valid fell without a transfer {where}")
                elif bits != held[0]:
                    self.errors.append(f"{self.port}: payload changed while waiting {where}: "
                                       f"{_hex(held[0])} -> {_hex(bits)}")
            if valid and ready:
                self.transfers.append(get_sim_time("ns"))
                held = None
            elif valid:
                held = (bits, cycle if held is None else held[1])
            else:
                held = None
            cycle += 1

    def check(self):
        """Raise ``AssertionError`` listing the first violations, if any were recorded."""
        if self.errors:
            shown = "; ".join(self.errors[:5])
            raise AssertionError(f"{len(self.errors)} stream rule violation(s): {shown}")


def transfer_cycles(first, last, period_ns=PERIOD_NS):
    """Cycles from the first transfer seen by monitor ``first`` to the last one seen by monitor
    ``last``, inclusive (0 when either saw none)."""
    if not first.transfers or not last.transfers:
        return 0
    return round((last.transfers[-1] - first.transfers[0]) / period_ns) + 1
