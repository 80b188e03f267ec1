"""A simulated serial line into an Amaranth design: :class:`SimTransport`, the host driver's
(:class:`boards.host.BridgeClient`, :class:`boards.host.FocusBoard`) transport for a board in the
Amaranth simulator.

The design (normally :class:`boards.bridge.FocusBoardCore`) is driven **bit by bit**: the host's
UART model sets ``rx`` one bit time at a time and decodes ``tx`` by sampling it in the middle of
each bit, so the design's real UART, framing and timeouts are exercised. The simulation only
advances while the host waits for reply bytes; timeouts are in simulated seconds. At 2 800
simulated cycles per second for the board's core, use a small divisor (4 to 8 clocks per bit) in
tests. :meth:`SimTransport.watch` follows an output such as an LED.

It has the transport interface of :mod:`boards.host` (``write``, ``read``, ``send_break``,
``close``, ``default_timeout``). It lives apart from the host driver, which talks to real boards
and imports no simulator.
"""

from collections import deque

from amaranth.sim import Simulator

__all__ = ["SimTransport"]


class SimTransport:
    """A simulated serial line into an Amaranth design (bit level; see the module doc).

    Parameters
    ----------
    dut : wiring.Component
        The design; its ``sync`` domain gets a clock of ``clock_period`` seconds.
    divisor : int
        The design's UART divisor (clock cycles per bit).
    rx, tx : Signal or None
        The design's serial input and output (``dut.rx``, ``dut.tx`` by default).
    clock_period : float
    baud_error : float
        Relative error of the host's bit time against the design's (e.g. 0.02: 2 % slower).

    Attributes
    ----------
    host_framing_errors : int
        Characters from the design whose stop bit the host model read as 0.
    """

    def __init__(self, dut, divisor, *, rx=None, tx=None, clock_period=1e-8, baud_error=0.0):
        self.dut = dut
        self.divisor = divisor
        self.clock_period = clock_period
        self.bit_time = divisor * clock_period
        self.host_bit_time = self.bit_time * (1.0 + baud_error)
        self.default_timeout = 3000 * 10 * self.bit_time
        self.host_framing_errors = 0
        self.sent = 0
        self.received = 0
        self._rx = dut.rx if rx is None else rx
        self._tx = dut.tx if tx is None else tx
        self._out = deque()
        self._in = bytearray()
        self._cycles = 0
        self._watched = {}
        self.sim = Simulator(dut)
        self.sim.add_clock(clock_period)
        self.sim.add_testbench(self._drive, background=True)
        self.sim.add_testbench(self._decode, background=True)

    @property
    def now(self):
        """Simulated time, seconds."""
        return self._cycles * self.clock_period

    @property
    def cycles(self):
        """Clock cycles simulated so far."""
        return self._cycles

    async def _drive(self, ctx):
        ctx.set(self._rx, 1)
        while True:
            if not self._out:
                await ctx.delay(self.host_bit_time)
                continue
            kind, value, stop = self._out.popleft()
            if kind == "byte":
                for bit in [0, *(value >> i & 1 for i in range(8)), stop]:
                    ctx.set(self._rx, bit)
                    await ctx.delay(self.host_bit_time)
                ctx.set(self._rx, 1)
                self.sent += 1
            elif kind == "low":
                ctx.set(self._rx, 0)
                await ctx.delay(value * self.host_bit_time)
                ctx.set(self._rx, 1)
            else:
                await ctx.delay(value * self.host_bit_time)

    async def _decode(self, ctx):
        while True:
            await ctx.negedge(self._tx)
            await ctx.delay(1.5 * self.bit_time)
            byte = 0
            for i in range(8):
                byte |= ctx.get(self._tx) << i
                await ctx.delay(self.bit_time)
            if ctx.get(self._tx):
                self._in.append(byte)
                self.received += 1
            else:
                self.host_framing_errors += 1
                while not ctx.get(self._tx):
                    await ctx.delay(self.bit_time / 4)

    def watch(self, signal):
        """Track ``signal`` (e.g. an LED output): :meth:`value` gives its value at the current
        simulated time. Event-driven (no cost per cycle); call before the first read."""
        key = id(signal)        # signals are not hashable
        self._watched[key] = 0

        async def track(ctx):
            self._watched[key] = ctx.get(signal)
            while True:
                (value,) = await ctx.changed(signal)
                self._watched[key] = value
        self.sim.add_testbench(track, background=True)

    def value(self, signal):
        """The value of a :meth:`watch`-ed signal now."""
        return self._watched[id(signal)]

    def write(self, data, *, stop=1):
        """Queue bytes to send (``stop=0`` sends them with a bad stop bit: framing errors)."""
        for byte in bytes(data):
            self._out.append(("byte", byte, stop))

    def send_break(self, bits=30):
        """Hold the line low for ``bits`` bit times."""
        self._out.append(("low", bits, 0))

    def idle(self, bits):
        """Leave the line idle for ``bits`` bit times before the next queued item."""
        self._out.append(("idle", bits, 1))

    def run(self, seconds):
        """Advance the simulation by ``seconds`` (whole clock cycles, at least one)."""
        self._cycles += max(1, -(-round(seconds / self.clock_period * 1e6) // 1_000_000))
        self.sim.run_until(self._cycles * self.clock_period)

    def read(self, n, timeout):
        """Up to ``n`` bytes; fewer when ``timeout`` simulated seconds pass first."""
        step = 20 * self.bit_time
        deadline = self.now + timeout
        while len(self._in) < n and self.now < deadline:
            self.run(min(step, deadline - self.now))
        out = bytes(self._in[:n])
        del self._in[:n]
        return out

    def close(self):
        pass
