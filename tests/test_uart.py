# amaranth: UnusedElaboratable=no
"""The board UART alone: loopback at baud errors of -2 %, 0, +2 % (and +-4 %), random and
back-to-back bytes, the transmitter's exact waveform, framing errors, breaks, glitches, overrun."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from boards.uart import BAUD_RATE, UARTReceiver, UARTTransmitter, uart_divisor
from sim.streams import stream_monitor, stream_put

RX_DIVISOR = 50     # 50 +- 1 is exactly +-2 % of bit time


class _Loopback(wiring.Component):
    """A transmitter at one divisor wired to a receiver at another."""
    i_stream: In(stream.Signature(8))
    o_stream: Out(stream.Signature(8))
    framing: Out(1)
    brk: Out(1)

    def __init__(self, tx_divisor, rx_divisor):
        super().__init__()
        self.txu = UARTTransmitter(tx_divisor)
        self.rxu = UARTReceiver(rx_divisor)

    def elaborate(self, platform):
        m = Module()
        m.submodules.txu, m.submodules.rxu = self.txu, self.rxu
        wiring.connect(m, wiring.flipped(self.i_stream), self.txu.i_stream)
        wiring.connect(m, self.rxu.o_stream, wiring.flipped(self.o_stream))
        m.d.comb += [self.rxu.rx.eq(self.txu.tx), self.framing.eq(self.rxu.framing),
                     self.brk.eq(self.rxu.brk)]
        return m


def _loopback(data, tx_divisor, rx_divisor=RX_DIVISOR, gaps=False, seed=0):
    """Send ``data`` through the loopback; returns (received bytes, error pulses).

    One testbench does everything, one tick per cycle (the simulation's cost is per tick): it
    offers the next byte (holding it until taken, idling at random with ``gaps``), takes every
    received byte (always ready) and records the error pulses.
    """
    dut = _Loopback(tx_divisor, rx_divisor)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    received, errors = [], []
    rng = random.Random(seed)

    async def bench(ctx):
        ctx.set(dut.o_stream.ready, 1)
        todo = list(data)
        limit = 12 * max(tx_divisor, rx_divisor) * (len(data) + 4)
        for cycle in range(limit):
            if todo and not ctx.get(dut.i_stream.valid) and not (gaps and rng.random() < 0.01):
                ctx.set(dut.i_stream.payload, todo[0])
                ctx.set(dut.i_stream.valid, 1)
            _, _, ready, valid, payload, framing, brk = await ctx.tick().sample(
                dut.i_stream.ready, dut.o_stream.valid, dut.o_stream.payload, dut.framing,
                dut.brk)
            if ready and ctx.get(dut.i_stream.valid):
                todo.pop(0)
                ctx.set(dut.i_stream.valid, 0)
            if valid:
                received.append(payload)
            if framing or brk:
                errors.append(("framing" if framing else "brk", cycle))
            if not todo and len(received) + len(errors) >= len(data) and cycle % 64 == 0:
                break

    sim.add_testbench(bench)
    sim.run()
    return bytes(received), errors


@pytest.mark.parametrize("tx_divisor", [49, 50, 51], ids=["-2%", "0%", "+2%"])
def test_loopback_baud_error_2_percent(tx_divisor):
    data = bytes([0x00, 0xFF, 0x55, 0xAA, 0x01, 0x80, 0x7F, 0xFE]) + random.Random(
        tx_divisor).randbytes(40)
    received, errors = _loopback(data, tx_divisor)
    assert received == data
    assert errors == []


@pytest.mark.parametrize("tx_divisor", [48, 52], ids=["-4%", "+4%"])
def test_loopback_baud_error_4_percent_with_gaps(tx_divisor):
    data = random.Random(tx_divisor).randbytes(32)
    received, errors = _loopback(data, tx_divisor, gaps=True, seed=tx_divisor)
    assert received == data
    assert errors == []


@pytest.mark.parametrize("tx_divisor", [46, 54], ids=["-8%", "+8%"])
def test_loopback_beyond_tolerance_is_not_silently_accepted(tx_divisor):
    # 9.5 bit times at 8 % is 0.76 bit: the stop-bit sample lands in a neighbouring bit.
    data = random.Random(1).randbytes(32)
    received, errors = _loopback(data, tx_divisor)
    assert received != data or errors


def test_transmitter_waveform_back_to_back():
    d = 8
    data = [0x00, 0xFF, 0xA5, 0x3C]
    dut = UARTTransmitter(d)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    line = []

    async def put(ctx):
        await stream_put(ctx, dut.i_stream, data)

    async def trace(ctx):
        while True:
            _, _, tx = await ctx.tick().sample(dut.tx)
            line.append(tx)

    sim.add_testbench(put)
    sim.add_testbench(trace, background=True)
    sim.add_testbench(stream_monitor(dut.i_stream, "i_stream"), background=True)
    sim.run_until(1e-8 * (len(data) * (10 * d + 1) + 20))
    start = line.index(0)
    for n, byte in enumerate(data):
        frame = line[start:start + 10 * d]
        bits = [0] + [byte >> i & 1 for i in range(8)] + [1]
        assert frame == [b for b in bits for _ in range(d)], f"frame {n}"
        start += 10 * d + 1     # one idle cycle between back-to-back frames (ready -> start)
        assert line[start - 1] == 1
    assert all(level == 1 for level in line[start - 1:])


def _levels(frames, d):
    """Line levels, one per cycle: items are (byte, stop_bit) frames, ("idle", cycles) or
    ("low", cycles)."""
    out = [1] * (2 * d)
    for item in frames:
        if item[0] == "idle":
            out += [1] * item[1]
        elif item[0] == "low":
            out += [0] * item[1]
        else:
            byte, stop = item
            for bit in [0] + [byte >> i & 1 for i in range(8)] + [stop]:
                out += [bit] * d
    return out + [1] * (3 * d)


def _drive_receiver(levels, d, ready=True):
    dut = UARTReceiver(d)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    events = []

    async def drive(ctx):
        ctx.set(dut.o_stream.ready, ready)
        for level in levels:
            ctx.set(dut.rx, level)
            _, _, valid, ready_, payload, framing, brk, overrun = await ctx.tick().sample(
                dut.o_stream.valid, dut.o_stream.ready, dut.o_stream.payload, dut.framing,
                dut.brk, dut.overrun)
            if valid and ready_:
                events.append(payload)
            for name, flag in (("framing", framing), ("brk", brk), ("overrun", overrun)):
                if flag:
                    events.append(name)
        events.append(("pending", ctx.get(dut.o_stream.valid), ctx.get(dut.o_stream.payload)))

    sim.add_testbench(drive)
    sim.add_testbench(stream_monitor(dut.o_stream, "o_stream"), background=True)
    sim.run()
    return events


@pytest.mark.parametrize("d", [4, 8, 13])
def test_receiver_framing_error_then_good_byte(d):
    events = _drive_receiver(_levels([(0x5A, 1), (0x81, 0), ("idle", d), (0x3C, 1)], d), d)
    assert events[:-1] == [0x5A, "framing", 0x3C]


def test_receiver_break_reported_once_and_recovers():
    d = 8
    events = _drive_receiver(_levels([(0x11, 1), ("low", 40 * d), ("idle", 2 * d), (0x22, 1)],
                                     d), d)
    assert events[:-1] == [0x11, "brk", 0x22]


def test_receiver_zero_byte_with_stop_bit_is_data_not_break():
    d = 8
    events = _drive_receiver(_levels([(0x00, 1), (0x00, 0), ("idle", d), (0x00, 1)], d), d)
    assert events[:-1] == [0x00, "brk", 0x00]


def test_receiver_ignores_glitch():
    d = 8
    events = _drive_receiver(_levels([("low", d // 2 - 1), ("idle", d), (0x42, 1)], d), d)
    assert events[:-1] == [0x42]


def test_receiver_overrun_keeps_first_byte():
    d = 8
    events = _drive_receiver(_levels([(0x12, 1), (0x34, 1)], d), d, ready=False)
    assert events == ["overrun", ("pending", 1, 0x12)]


def test_divisor_for_board_clocks():
    assert BAUD_RATE == 115200
    assert uart_divisor(12_000_000) == 104
    assert uart_divisor(25_000_000) == 217
    with pytest.raises(ValueError, match=r"too slow for 115200 baud"):
        uart_divisor(300_000)
    with pytest.raises(ValueError, match=r"7.41 % error \(divisor 6\)"):
        uart_divisor(640_000)   # 128000 baud: 11 % off


def test_divisor_checked():
    with pytest.raises(ValueError, match=r"^UART divisor must be at least 4, not 3$"):
        UARTReceiver(3)
    with pytest.raises(TypeError, match=r"^UART divisor must be an integer, not 8.0$"):
        UARTTransmitter(8.0)
