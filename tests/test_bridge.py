# amaranth: UnusedElaboratable=no
"""The UART bridge and its protocol, end to end through a bit-level simulated UART.

The target is a test fixture (not a stub of anything): a register file on the bus, two loopback
FIFOs between push and pull ports of different widths (12 and 17 bits), a push port whose ready
is a register bit (to make it stall), and a pull port that never has data. A stream-rule monitor
watches every bridge stream. Each error case is followed by good frames that must work.
"""

import binascii
import random

import pytest
from amaranth.hdl import Module, Signal, Value
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from boards.bridge import UARTBridge
from boards.host import BoardError, BridgeClient
from boards.protocol import (
    REPLY_SYNC,
    SYNC,
    Cmd,
    Status,
    decode_reply,
    encode_reply,
    encode_request,
)
from boards.sim_transport import SimTransport
from rtl.lib.register_bus import RegisterSignature

DIVISOR = 8
MAX_LEN = 32
WIDTHS_PUSH = [12, 17, 8]
WIDTHS_PULL = [12, 17, 8]
BYTE_TIMEOUT = 30 * DIVISOR
STREAM_TIMEOUT = 20 * DIVISOR


class _Target(wiring.Component):
    """Register file (8 words; word 7 bit 0 opens push port 2; word 6 counts its beats and word 5
    sums them), FIFO loopbacks push_i -> pull_i for i = 0, 1, a never-valid pull port 2."""

    def __init__(self):
        super().__init__({
            "bus": In(RegisterSignature()),
            **{f"push_{i}": In(stream.Signature(w)) for i, w in enumerate(WIDTHS_PUSH)},
            **{f"pull_{i}": Out(stream.Signature(w)) for i, w in enumerate(WIDTHS_PULL)},
        })

    def elaborate(self, platform):
        m = Module()
        regs = [Signal(32, name=f"reg{i}") for i in range(8)]
        with m.If(self.bus.w_en & (self.bus.addr < 8)):
            with m.Switch(self.bus.addr):
                for i in range(8):
                    with m.Case(i):
                        m.d.sync += regs[i].eq(self.bus.w_data)
        m.d.sync += self.bus.r_data.eq(0)
        with m.If(self.bus.r_en):
            with m.Switch(self.bus.addr):
                for i in range(8):
                    with m.Case(i):
                        m.d.sync += self.bus.r_data.eq(regs[i])
        for i in range(2):
            q = fifo.SyncFIFOBuffered(width=WIDTHS_PUSH[i], depth=4)
            m.submodules[f"q{i}"] = q
            wiring.connect(m, wiring.flipped(getattr(self, f"push_{i}")), q.w_stream)
            wiring.connect(m, q.r_stream, wiring.flipped(getattr(self, f"pull_{i}")))
        m.d.comb += self.push_2.ready.eq(regs[7][0])
        with m.If(self.push_2.valid & self.push_2.ready):
            m.d.sync += [regs[6].eq(regs[6] + 1), regs[5].eq(regs[5] + self.push_2.payload)]
        return m


class _Rig(wiring.Component):
    rx: In(1, init=1)
    tx: Out(1, init=1)
    rule_broken: Out(1)

    def __init__(self):
        super().__init__()
        self.target = _Target()
        self.bridge = UARTBridge(
            DIVISOR, push=[stream.Signature(w) for w in WIDTHS_PUSH],
            pull=[stream.Signature(w) for w in WIDTHS_PULL], max_len=MAX_LEN,
            byte_timeout=BYTE_TIMEOUT, push_timeout=STREAM_TIMEOUT, pull_timeout=STREAM_TIMEOUT)

    def elaborate(self, platform):
        m = Module()
        m.submodules.target, m.submodules.bridge = self.target, self.bridge
        wiring.connect(m, self.bridge.bus, self.target.bus)
        for i in range(3):
            wiring.connect(m, getattr(self.bridge, f"push_{i}"), getattr(self.target, f"push_{i}"))
            wiring.connect(m, getattr(self.target, f"pull_{i}"), getattr(self.bridge, f"pull_{i}"))
        m.d.comb += [self.bridge.rx.eq(self.rx), self.tx.eq(self.bridge.tx)]
        streams = {f"{kind}_{i}": getattr(self.bridge, f"{kind}_{i}")
                   for kind in ("push", "pull") for i in range(3)}
        m.d.comb += self.rule_broken.eq(stream_rule_checker(m, streams))
        return m


def stream_rule_checker(m, streams):
    """Hardware stream-rule monitor (test logic added to the rig): returns a signal that rises in
    the cycle after a stream's ``valid`` falls, or its payload changes, before a transfer. One
    event-driven testbench then watches it: a Python monitor ticking every cycle would cost
    several times the simulation itself."""
    bad = Signal()
    for name, s in streams.items():
        held = Signal(name=f"{name}_held")
        payload = Signal.like(s.payload, name=f"{name}_held_payload")
        m.d.sync += [held.eq(s.valid & ~s.ready), payload.eq(s.payload)]
        with m.If(held & (~s.valid | (Value.cast(s.payload) != Value.cast(payload)))):
            m.d.sync += bad.eq(1)
    return bad


def _watch_rules(bad):
    async def watch(ctx):
        await ctx.posedge(bad)
        raise AssertionError("a bridge stream broke the stream rules (valid fell or payload "
                             "changed before the transfer)")
    return watch


def _rig(baud_error=0.0):
    rig = _Rig()
    transport = SimTransport(rig, DIVISOR, baud_error=baud_error)
    transport.default_timeout = 400 * 10 * transport.bit_time
    transport.sim.add_testbench(_watch_rules(rig.rule_broken), background=True)
    client = BridgeClient(transport, push_layouts=WIDTHS_PUSH, pull_layouts=WIDTHS_PULL)
    return client, transport


def _quiet(transport, chars=50):
    """No byte arrives for ``chars`` character times (no stray or duplicate reply)."""
    return transport.read(1, chars * 10 * transport.bit_time) == b""


def _still_works(client, value):
    client.write_reg(3, value)
    assert client.read_reg(3) == value
    assert client.ping()["max_len"] == MAX_LEN


# ---- protocol (pure Python) ---------------------------------------------------------------------

def test_frame_encoding_by_hand():
    body = bytes([Cmd.READ_REG, 1, 0, 0x42])
    frame = encode_request(Cmd.READ_REG, b"\x42")
    assert frame == bytes([SYNC]) + body + binascii.crc_hqx(body, 0xFFFF).to_bytes(2, "little")
    reply = encode_reply(Cmd.READ_REG, Status.OK, b"\x01\x02\x03\x04")
    assert reply[:5] == bytes([REPLY_SYNC, Cmd.READ_REG, 0, 4, 0])
    assert decode_reply(reply) == (Cmd.READ_REG, Status.OK, b"\x01\x02\x03\x04")


def test_bridge_parameters_checked():
    with pytest.raises(ValueError, match=r"^Bridge max_len must be in \[8, 65535\]"):
        UARTBridge(8, max_len=4)
    with pytest.raises(TypeError, match=r"must be stream.Signature objects"):
        UARTBridge(8, push=[8])
    with pytest.raises(ValueError, match=r"^Bridge byte_timeout must be a positive integer"):
        UARTBridge(8, byte_timeout=0)


# ---- good traffic -------------------------------------------------------------------------------

@pytest.mark.parametrize("baud_error", [-0.02, 0.0, 0.02], ids=["-2%", "0%", "+2%"])
def test_ping_and_registers(baud_error):
    client, _ = _rig(baud_error)
    info = client.ping()
    assert info == {"version": 1, "max_len": MAX_LEN, "push": [2, 3, 1], "pull": [2, 3, 1]}
    rng = random.Random(7)
    values = {addr: rng.getrandbits(32) for addr in (0, 1, 4, 7)}
    for addr, value in values.items():
        client.write_reg(addr, value)
    for addr, value in values.items():
        assert client.read_reg(addr) == value
    assert client.read_reg(200) == 0        # the fixture reads 0 outside its 8 words


def test_push_pull_loopback_with_back_pressure():
    client, transport = _rig()
    rng = random.Random(3)
    for port, width in ((0, 12), (1, 17)):
        beats = [rng.getrandbits(width) for _ in range(14)]
        received = []
        todo = list(beats)
        while todo or len(received) < len(beats):
            n = client.push(port, todo)     # the FIFO holds 4 (+1 in the bridge's register)
            todo = todo[n:]
            received += client.pull(port, 3)
        assert received == beats
        assert client.pull(port, 5) == []   # nothing left: waits pull_timeout, replies empty
    assert transport.host_framing_errors == 0


def test_push_chunks_into_frames():
    client, _ = _rig()
    beats = [1, 2, 0x1FFFF, 0x10000, 0x0ABCD]
    assert client.push(1, beats) == len(beats)      # 4 in the FIFO, 1 in the bridge's register
    assert client.pull(1, 10) == beats              # the last one follows as the FIFO drains
    client.write_reg(7, 1)                          # open port 2: 31 one-byte beats per frame
    beats = list(range(1, 71))
    assert client.push(2, beats) == len(beats)      # three frames
    assert client.read_reg(6) == len(beats) and client.read_reg(5) == sum(beats)


def test_push_timeout_keeps_the_waiting_beat():
    client, _ = _rig()
    assert client.push(2, [5, 6, 7]) == 1           # port 2 is closed: the first beat waits
    status, data = client.request(Cmd.PUSH, bytes([2, 9]))
    assert (status, data) == (Status.TIMEOUT, b"\x00\x00")
    client.write_reg(7, 1)                          # open the port: the waiting beat goes
    assert client.read_reg(6) == 1 and client.read_reg(5) == 5
    assert client.push(2, [6, 7]) == 2
    assert client.read_reg(6) == 3 and client.read_reg(5) == 18


def test_pull_clamps_count_and_reports_available():
    client, _ = _rig()
    assert client.pull(2, 1000) == []               # never valid: empty after the timeout
    assert client.push(0, [1, 2, 3]) == 3
    status, data = client.request(Cmd.PULL, bytes([0, 0xFF, 0xFF]))
    assert status == Status.OK and data == b"\x01\x00\x02\x00\x03\x00"
    status, data = client.request(Cmd.PULL, bytes([0, 0, 0]))
    assert (status, data) == (Status.OK, b"")


# ---- errors: each gets a reply, the bridge stays responsive ------------------------------------

def test_bad_crc():
    client, transport = _rig()
    frame = bytearray(encode_request(Cmd.WRITE_REG, bytes([3, 1, 2, 3, 4])))
    frame[-1] ^= 0x10
    transport.write(frame)
    assert client.reply() == (Status.BAD_CRC, b"")
    assert client.read_reg(3) == 0                  # nothing was executed
    assert _quiet(transport)
    _still_works(client, 0x12345678)


def test_unknown_command_and_the_error_led():
    client, transport = _rig()
    led = transport.dut.bridge.error
    transport.watch(led)
    client.ping()
    assert transport.value(led) == 0
    status, data = client.request(0x77, b"\x01\x02")
    assert (status, data) == (Status.UNKNOWN_CMD, b"")
    assert transport.value(led) == 1                # held until the next OK reply
    assert _quiet(transport)
    assert transport.value(led) == 1
    _still_works(client, 1)
    assert transport.value(led) == 0


def test_oversize_length_is_discarded_whole():
    client, transport = _rig()
    payload = bytes([SYNC]) * (MAX_LEN + 8)         # sync bytes inside must not start frames
    transport.write(bytes([SYNC, Cmd.PUSH]) + (MAX_LEN + 8).to_bytes(2, "little") + payload
                    + b"\x00\x00")
    assert client.reply(Cmd.PUSH) == (Status.OVERSIZE, b"")
    assert _quiet(transport)
    _still_works(client, 2)


def test_truncated_frame_times_out():
    client, transport = _rig()
    transport.write(encode_request(Cmd.WRITE_REG, bytes([3, 9, 9, 9, 9]))[:6])
    assert client.reply(Cmd.WRITE_REG) == (Status.TIMEOUT, b"")
    assert client.read_reg(3) == 0
    assert _quiet(transport)
    _still_works(client, 3)


@pytest.mark.parametrize("cut", [0, 1, 4, 7])
def test_break_mid_frame(cut):
    client, transport = _rig()
    transport.write(encode_request(Cmd.WRITE_REG, bytes([3, 9, 9, 9, 9]))[:cut])
    transport.send_break(25)
    status, data = client.reply()
    assert (status, data) == (Status.BREAK, b"")
    assert client.read_reg(3) == 0
    assert _quiet(transport)
    _still_works(client, 4)


def test_framing_error():
    client, transport = _rig()
    transport.write(encode_request(Cmd.PING)[:2])
    transport.write(b"\x13", stop=0)
    assert client.reply() == (Status.FRAMING, b"")
    assert _quiet(transport)
    _still_works(client, 5)


def test_overrun_when_the_host_does_not_wait():
    client, transport = _rig()
    transport.write(encode_request(Cmd.READ_REG, b"\x00") + encode_request(Cmd.PING))
    assert client.reply(Cmd.READ_REG) == (Status.OK, b"\x00" * 4)
    assert client.reply() == (Status.OVERRUN, b"")
    assert _quiet(transport)
    _still_works(client, 6)


@pytest.mark.parametrize("cmd, payload, status", [
    (Cmd.PING, b"\x00", Status.BAD_LENGTH),
    (Cmd.READ_REG, b"\x00\x00", Status.BAD_LENGTH),
    (Cmd.WRITE_REG, b"\x00\x01", Status.BAD_LENGTH),
    (Cmd.PUSH, b"", Status.BAD_LENGTH),
    (Cmd.PUSH, b"\x00\x01\x02\x03", Status.BAD_LENGTH),     # 1.5 beats of 2 bytes
    (Cmd.PUSH, b"\x03\x01", Status.BAD_PORT),
    (Cmd.PULL, b"\x00\x01", Status.BAD_LENGTH),
    (Cmd.PULL, b"\x03\x01\x00", Status.BAD_PORT),
], ids=["ping-len", "read-len", "write-len", "push-empty", "push-half-beat", "push-port",
        "pull-len", "pull-port"])
def test_bad_arguments(cmd, payload, status):
    client, transport = _rig()
    assert client.request(cmd, payload) == (status, b"")
    with pytest.raises(BoardError, match=status.name):
        client.command(cmd, payload)
    assert client.pull(0, 4) == []                 # a bad PUSH handed nothing over
    _still_works(client, 7)


def test_rule_checker_catches_a_withdrawn_beat():
    class Bad(wiring.Component):
        o: Out(stream.Signature(8))
        rule_broken: Out(1)

        def elaborate(self, platform):
            m = Module()
            m.d.sync += [self.o.valid.eq(~self.o.valid), self.o.payload.eq(self.o.payload + 1)]
            m.d.comb += self.rule_broken.eq(stream_rule_checker(m, {"o": self.o}))
            return m

    from amaranth.sim import Simulator
    dut = Bad()
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(_watch_rules(dut.rule_broken), background=True)
    with pytest.raises(AssertionError, match="broke the stream rules"):
        sim.run_until(1e-7)
