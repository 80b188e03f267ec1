"""A small 8N1 UART for the board bridge: :class:`UARTTransmitter` and :class:`UARTReceiver`.

Frame: one start bit (0), eight data bits LSB first, one stop bit (1); the line idles high. The
bit time is ``divisor`` clock cycles, ``divisor = clk_hz / baud`` rounded (:func:`uart_divisor`).

Baud rate
---------
:data:`BAUD_RATE` = 115200, the fastest rate every USB-serial bridge and every terminal program
supports without special settings (the iCEBreaker's and the ULX3S's FT2232H/FT231X go higher, but
not all host stacks do). At the boards' clocks the rounding error of the divisor is tiny: 12 MHz /
115200 = 104.17 -> 104 (-0.16 %), 25 MHz / 115200 = 217.01 -> 217 (-0.01 %), far inside the
receiver's tolerance (about +-5 %, see :class:`UARTReceiver`).

No Amaranth 0.5 UART on PyPI is usable as is, so this is a deliberately small one; it is tested at
+-2 % baud error, random and back-to-back bytes, framing errors and breaks
(``tests/test_uart.py``).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["BAUD_RATE", "uart_divisor", "UARTTransmitter", "UARTReceiver"]

#: The board's serial rate, 8N1.
BAUD_RATE = 115200

#: Smallest supported divisor (the receiver needs a mid-bit sample point and a start check).
MIN_DIVISOR = 4


def uart_divisor(clk_hz, baud=BAUD_RATE):
    """Clock cycles per bit for ``baud`` at ``clk_hz``: ``round(clk_hz / baud)``.

    Raises ``ValueError`` when the divisor is below 4 or the rounding error exceeds 1 %.
    """
    divisor = round(clk_hz / baud)
    if divisor < MIN_DIVISOR:
        raise ValueError(f"Clock {clk_hz} Hz is too slow for {baud} baud: the divisor would be "
                         f"{divisor}, it must be at least {MIN_DIVISOR}")
    error = abs(clk_hz / divisor - baud) / baud
    if error > 0.01:
        raise ValueError(f"Clock {clk_hz} Hz gives {baud} baud with a {100 * error:.2f} % error "
                         f"(divisor {divisor}); at most 1 % is allowed")
    return divisor


def _check_divisor(divisor):
    if isinstance(divisor, bool) or not isinstance(divisor, int):
        raise TypeError(f"UART divisor must be an integer, not {divisor!r}")
    if divisor < MIN_DIVISOR:
        raise ValueError(f"UART divisor must be at least {MIN_DIVISOR}, not {divisor}")


class UARTTransmitter(wiring.Component):
    """Sends each byte of ``i_stream`` as an 8N1 frame on ``tx``.

    Throughput: one byte per ``10 * divisor + 1`` cycles when bytes are offered back to back.
    ``i_stream.ready`` is high exactly when the transmitter is idle (the previous frame's stop
    bit has ended); the byte is taken in that cycle and its start bit begins on the next one.
    ``tx`` is a register: no glitches.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (>= 4).

    Members
    -------
    i_stream : In(stream.Signature(8))
        Bytes to send.
    tx : Out(1)
        The serial line (idle high).
    busy : Out(1)
        A frame is being sent.
    """

    i_stream: In(stream.Signature(8))
    tx: Out(1, init=1)
    busy: Out(1)

    def __init__(self, divisor):
        _check_divisor(divisor)
        self._divisor = divisor
        super().__init__()

    @property
    def divisor(self):
        """Clock cycles per bit."""
        return self._divisor

    def elaborate(self, platform):
        m = Module()
        count = Signal(range(self._divisor))
        shift = Signal(9)           # data bits LSB first, then the stop bit
        left = Signal(range(10))    # bits still to put on the line after the current one

        m.d.comb += self.i_stream.ready.eq(~self.busy)
        with m.If(~self.busy):
            with m.If(self.i_stream.valid):
                m.d.sync += [
                    self.busy.eq(1),
                    self.tx.eq(0),                                  # start bit
                    shift.eq(self.i_stream.payload | (1 << 8)),     # data, then stop = 1
                    left.eq(9),
                    count.eq(self._divisor - 1),
                ]
        with m.Elif(count != 0):
            m.d.sync += count.eq(count - 1)
        with m.Elif(left != 0):
            m.d.sync += [
                self.tx.eq(shift[0]),
                shift.eq(shift >> 1),
                left.eq(left - 1),
                count.eq(self._divisor - 1),
            ]
        with m.Else():
            m.d.sync += self.busy.eq(0)     # the stop bit has lasted a whole bit time
        return m


class UARTReceiver(wiring.Component):
    """Receives 8N1 frames on ``rx`` and delivers their bytes on ``o_stream``.

    ``rx`` goes through a 2-flop synchronizer (:class:`amaranth.lib.cdc.FFSynchronizer`, idle high
    from configuration on). A falling edge starts a frame; the start bit is
    checked at its middle (a shorter low pulse is ignored as a glitch), then each data bit and the
    stop bit are sampled one ``divisor`` apart, in the middle of the bit (``(divisor - 1) // 2``
    cycles after the detected edge, then every ``divisor`` cycles). The stop bit's sample is 9.5
    bit times after the edge, so a sender whose bit time differs by a relative error e is received
    correctly while ``9.5 * |e|`` bit times plus the one-cycle edge uncertainty stay under half a
    bit: about +-5 % (+-5.0 % at divisor 104, +-5.2 % at divisor 50). The tests check +-2 % and
    +-4 %, and that +-8 % is not silently accepted.

    A byte is delivered in the cycle after its stop bit's sample (the middle of the stop bit). It
    stays on ``o_stream`` until taken; a byte that completes while the previous one has not been
    taken is dropped and ``overrun`` pulses.

    Errors, each a one-cycle pulse, and no byte is delivered for the frame:

    - ``framing``: the stop bit sampled 0 and some data bit was 1.
    - ``brk``: the stop bit and every data bit sampled 0: the line was low for a whole frame
      (a break). One pulse per break, however long the line stays low.

    After either error the receiver waits for the line to return high before looking for the
    next start bit, so a long break or a stuck-low line gives exactly one report.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit (>= 4).

    Members
    -------
    rx : In(1)
        The serial line (idle high; asynchronous to the clock).
    o_stream : Out(stream.Signature(8))
        Received bytes.
    framing, brk, overrun : Out(1)
        One-cycle error pulses.
    busy : Out(1)
        A frame is being received, or the line is held low after an error.
    """

    rx: In(1, init=1)
    o_stream: Out(stream.Signature(8))
    framing: Out(1)
    brk: Out(1)
    overrun: Out(1)
    busy: Out(1)

    def __init__(self, divisor):
        _check_divisor(divisor)
        self._divisor = divisor
        super().__init__()

    @property
    def divisor(self):
        """Clock cycles per bit."""
        return self._divisor

    def elaborate(self, platform):
        m = Module()
        d = self._divisor
        line = Signal(init=1)
        m.submodules.rx_sync = FFSynchronizer(self.rx, line, init=1)

        count = Signal(range(d))
        shift = Signal(8)
        bits = Signal(range(9))

        with m.If(self.o_stream.ready):
            m.d.sync += self.o_stream.valid.eq(0)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    # The sample points are (d - 1) // 2 cycles after the detected edge, then
                    # every d cycles: the middle of each bit, since the edge is seen up to one
                    # cycle late.
                    m.d.sync += count.eq((d - 1) // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                m.d.comb += self.busy.eq(1)
                with m.If(count != 0):
                    m.d.sync += count.eq(count - 1)
                with m.Elif(line):
                    m.next = "IDLE"                 # a glitch, not a start bit
                with m.Else():
                    m.d.sync += [count.eq(d - 1), bits.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += self.busy.eq(1)
                with m.If(count != 0):
                    m.d.sync += count.eq(count - 1)
                with m.Else():
                    m.d.sync += [
                        shift.eq(shift >> 1 | line << 7),
                        bits.eq(bits + 1),
                        count.eq(d - 1),
                    ]
                    with m.If(bits == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                m.d.comb += self.busy.eq(1)
                with m.If(count != 0):
                    m.d.sync += count.eq(count - 1)
                with m.Elif(line):
                    with m.If(self.o_stream.valid & ~self.o_stream.ready):
                        m.d.comb += self.overrun.eq(1)
                    with m.Else():
                        m.d.sync += [self.o_stream.payload.eq(shift),
                                     self.o_stream.valid.eq(1)]
                    m.next = "IDLE"
                with m.Else():
                    with m.If(shift == 0):
                        m.d.comb += self.brk.eq(1)
                    with m.Else():
                        m.d.comb += self.framing.eq(1)
                    m.next = "WAIT_HIGH"
            with m.State("WAIT_HIGH"):
                m.d.comb += self.busy.eq(1)
                with m.If(line):
                    m.next = "IDLE"
        return m
