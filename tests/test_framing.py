# amaranth: UnusedElaboratable=no
"""The bridge's frame CRC (``amaranth.lib.crc``'s CRC16_IBM_3740, in boards.framing) against
``binascii.crc_hqx(data, 0xFFFF)``, the host's (an independent implementation): the catalogue
check value, random frames through the bridge's RequestParser (good ones accepted, corrupted ones
BAD_CRC) and ReplyFramer (every reply decodes on the host), and the host protocol rejecting a
corrupted CRC. The frame components run on their own, without UARTs: fast."""

import binascii
import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from boards.framing import FRAME_CRC, ReplyFramer, RequestParser, reply_layout
from boards.protocol import (
    ProtocolError,
    ReplyParser,
    Status,
    decode_reply,
    decode_request,
    encode_reply,
    encode_request,
    frame_crc,
)
from sim.streams import stream_get, stream_monitor, stream_put

MAX_LEN = 24
CHECK = b"123456789"


def _run(dut, *benches, background=(), cycles=20_000):
    """Run ``benches`` to their end; a DUT that stalls them fails after ``cycles``."""
    async def watchdog(ctx):
        for _ in range(cycles):
            await ctx.tick()
        raise AssertionError(f"the testbenches did not end within {cycles} cycles")

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for bench in (*background, watchdog):
        sim.add_testbench(bench, background=True)
    for bench in benches:
        sim.add_testbench(bench)
    sim.run()


def test_check_value():
    assert binascii.crc_hqx(CHECK, 0xFFFF) == frame_crc(CHECK) == 0x29B1
    assert FRAME_CRC.compute(CHECK) == 0x29B1


@pytest.mark.parametrize("seed", [0, 1])
def test_hardware_crc_matches_crc_hqx(seed):
    """The CRC unit the parser and the framer instantiate, with idle cycles between bytes."""
    rng = random.Random(seed)
    messages = [CHECK, b"\x00", b"\xff\xff"] + [rng.randbytes(rng.randrange(1, 40))
                                               for _ in range(8)]
    dut = FRAME_CRC.create()
    results = []

    async def bench(ctx):
        for message in messages:
            for i, byte in enumerate(message):
                while rng.random() < 0.3:       # valid low keeps the CRC
                    await ctx.tick()
                ctx.set(dut.start, i == 0)      # start with the first byte: a new CRC
                ctx.set(dut.data, byte)
                ctx.set(dut.valid, 1)
                await ctx.tick()
                ctx.set(dut.valid, 0)
                ctx.set(dut.start, 0)
            results.append(ctx.get(dut.crc))

    _run(dut, bench)
    assert results[0] == 0x29B1
    assert results == [binascii.crc_hqx(message, 0xFFFF) for message in messages]


def _random_frames(rng, n):
    """(frame, good): request frames from the host's encoder; about half have one bit flipped in
    the command, the payload or the CRC (never in the length: the frame keeps its size). Half the
    payloads start with 0, the parser's push port (whose beats it counts)."""
    frames = []
    for _ in range(n):
        payload = bytearray(rng.randbytes(rng.choice([0, 1, 2, 5, rng.randrange(MAX_LEN + 1),
                                                      MAX_LEN])))
        if payload and rng.random() < 0.5:
            payload[0] = 0                      # push port 0: the parser counts its beats
        frame = bytearray(encode_request(rng.randrange(256), payload))
        good = rng.random() < 0.5
        if not good:
            pos = rng.choice([1, *range(4, len(frame))])
            frame[pos] ^= 1 << rng.randrange(8)
        frames.append((bytes(frame), good))
    return frames


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parser_accepts_exactly_the_frames_crc_hqx_accepts(seed):
    rng = random.Random(seed)
    frames = _random_frames(rng, 24)
    dut = RequestParser(max_len=MAX_LEN, push_beat_bytes=[2], byte_timeout=10**6)
    written = {}

    async def buffer_writes(ctx):
        async for _, _, en, addr, byte in ctx.tick().sample(dut.buf.w_en, dut.buf.w_addr,
                                                            dut.buf.w_data):
            if en:
                written[addr] = byte

    async def bench(ctx):
        for frame, good in frames:
            written.clear()
            await stream_put(ctx, dut.i_stream, frame, stalls=0.3)
            (request,) = await stream_get(ctx, dut.o_stream, 1, stalls=0.3)
            cmd, length = frame[1], frame[2] | frame[3] << 8
            assert request["status"] == (Status.OK if good else Status.BAD_CRC), frame.hex()
            assert (request["cmd"], request["length"]) == (cmd, length)
            assert [written.get(i) for i in range(length)] == list(frame[4:-2])
            payload = frame[4:-2]
            if good:
                assert decode_request(frame) == (cmd, payload)
                if length:
                    assert request["arg"] == frame[4]
                if length and frame[4] == 0:
                    assert request["whole"] == ((length - 1) % 2 == 0)     # 2-byte beats
            else:
                with pytest.raises(ProtocolError, match="bad CRC"):
                    decode_request(frame)

    _run(dut, bench, background=[buffer_writes, stream_monitor(dut.o_stream, "o_stream")])


@pytest.mark.parametrize("length", [MAX_LEN + 1, 64, 255, 256, 0x0103, 0xFFFF])
def test_parser_oversize(length):
    """A length over max_len is OVERSIZE (whatever its low byte), reported once the line has been
    quiet for byte_timeout; the next frame is good."""
    dut = RequestParser(max_len=MAX_LEN, push_beat_bytes=[2], byte_timeout=40)
    good = encode_request(0x02, b"\x07")

    async def bench(ctx):
        await stream_put(ctx, dut.i_stream, [0xA5, 0x04, length & 0xFF, length >> 8, 1, 2, 3])
        (request,) = await stream_get(ctx, dut.o_stream, 1)
        assert (request["status"], request["cmd"]) == (Status.OVERSIZE, 0x04)
        await stream_put(ctx, dut.i_stream, good)
        (request,) = await stream_get(ctx, dut.o_stream, 1)
        assert (request["status"], request["cmd"], request["length"]) == (Status.OK, 0x02, 1)

    _run(dut, bench)


class _FramerRig(wiring.Component):
    """The framer reading a buffer of known bytes."""

    i_stream: In(stream.Signature(reply_layout(MAX_LEN)))
    o_stream: Out(stream.Signature(8))

    def __init__(self, contents):
        self.contents = bytes(contents)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.framer = framer = ReplyFramer(max_len=MAX_LEN)
        m.submodules.mem = mem = memory.Memory(shape=8, depth=MAX_LEN, init=self.contents)
        rd = mem.read_port()
        m.d.comb += [rd.addr.eq(framer.buf.r_addr), framer.buf.r_data.eq(rd.data)]
        wiring.connect(m, wiring.flipped(self.i_stream), framer.i_stream)
        wiring.connect(m, framer.o_stream, wiring.flipped(self.o_stream))
        return m


@pytest.mark.parametrize("seed", [0, 1])
def test_framer_replies_decode_with_crc_hqx(seed):
    rng = random.Random(seed)
    contents = rng.randbytes(MAX_LEN)
    replies = [(rng.randrange(256), rng.choice(list(Status)), rng.choice(
        [0, 1, 4, MAX_LEN, rng.randrange(MAX_LEN + 1)])) for _ in range(12)]
    dut = _FramerRig(contents)
    sent = []

    async def host(ctx):
        for cmd, status, length in replies:
            frame = encode_reply(cmd, status, contents[:length])
            got = bytes(await stream_get(ctx, dut.o_stream, len(frame), stalls=0.5))
            assert got == frame
            assert decode_reply(got) == (cmd, status, contents[:length])
            sent.append(got)

    async def bridge(ctx):
        await stream_put(ctx, dut.i_stream,
                         [{"cmd": c, "status": s, "length": n} for c, s, n in replies])

    _run(dut, host, bridge, background=[stream_monitor(dut.o_stream, "o_stream")])
    assert len(sent) == len(replies)


def test_protocol_rejects_a_corrupted_crc():
    frame = bytearray(encode_request(0x03, bytes([3, 1, 2, 3, 4])))
    assert decode_request(bytes(frame)) == (0x03, bytes([3, 1, 2, 3, 4]))
    for pos, bit in ((-1, 0x10), (-2, 0x01)):
        bad = bytearray(frame)
        bad[pos] ^= bit
        with pytest.raises(ProtocolError, match="bad CRC"):
            decode_request(bytes(bad))
    reply = bytearray(encode_reply(0x02, Status.OK, b"\x01\x02\x03\x04"))
    reply[-2] ^= 0x80
    with pytest.raises(ProtocolError, match="bad CRC"):
        ReplyParser().feed(bytes(reply))
    with pytest.raises(ProtocolError, match="bad CRC"):
        decode_reply(bytes(reply))
