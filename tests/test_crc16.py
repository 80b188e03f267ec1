"""CRC-16/CCITT-FALSE: the Python function and the Amaranth unit against binascii.crc_hqx (an
independent implementation) and the catalogue check value."""

import binascii
import random

import pytest
from amaranth.sim import Simulator

from boards.crc16 import CRC16, crc16


def test_check_value():
    assert crc16(b"123456789") == 0x29B1
    assert binascii.crc_hqx(b"123456789", 0xFFFF) == 0x29B1


def test_function_matches_crc_hqx():
    rng = random.Random(1)
    for n in [0, 1, 2, 3, 7, 64, 255, 1000]:
        data = rng.randbytes(n)
        assert crc16(data) == binascii.crc_hqx(data, 0xFFFF)
        half = n // 2
        assert crc16(data[half:], crc16(data[:half])) == crc16(data)


@pytest.mark.parametrize("seed", [0, 1])
def test_unit_matches_crc_hqx(seed):
    rng = random.Random(seed)
    messages = [b"123456789", b"", b"\x00", b"\xff\xff"] + [rng.randbytes(rng.randrange(1, 40))
                                                           for _ in range(8)]
    dut = CRC16()
    results = []

    async def bench(ctx):
        for message in messages:
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            for byte in message:
                while rng.random() < 0.3:       # idle cycles: en low keeps the CRC
                    await ctx.tick()
                ctx.set(dut.data, byte)
                ctx.set(dut.en, 1)
                await ctx.tick()
                ctx.set(dut.en, 0)
                ctx.set(dut.data, rng.getrandbits(8))
            results.append(ctx.get(dut.crc))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert results == [binascii.crc_hqx(m, 0xFFFF) for m in messages]


def test_clear_wins_over_en():
    dut = CRC16()
    seen = []

    async def bench(ctx):
        ctx.set(dut.data, 0x31)
        ctx.set(dut.en, 1)
        await ctx.tick()
        ctx.set(dut.clear, 1)
        await ctx.tick()
        seen.append(ctx.get(dut.crc))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [0xFFFF]
