"""CRC-16/CCITT-FALSE for the board protocol: a Python function and a byte-serial Amaranth unit.

CRC-16/CCITT-FALSE (also called CRC-16/IBM-3740): polynomial 0x1021, initial value 0xFFFF, no
reflection, no final XOR; check value 0x29B1 for ``b"123456789"``. It equals Python's
``binascii.crc_hqx(data, 0xFFFF)``, which the tests use as the independent reference.
"""

from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CRC16_POLY", "CRC16_INIT", "crc16", "CRC16"]

CRC16_POLY = 0x1021
CRC16_INIT = 0xFFFF


def crc16(data, crc=CRC16_INIT):
    """CRC-16/CCITT-FALSE of ``data`` (bytes-like or iterable of ints 0..255), continuing from
    ``crc`` (the initial value by default)."""
    for byte in bytes(data):
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ CRC16_POLY if crc & 0x8000 else crc << 1) & 0xFFFF
    return crc


def _next_crc(crc, byte):
    """The CRC after one more byte, as an Amaranth expression (eight unrolled bit steps)."""
    bits = [crc[i] for i in range(16)]
    for i in range(7, -1, -1):     # MSB of the byte first
        feedback = bits[15] ^ byte[i]
        bits = [feedback] + bits[:15]
        for tap in range(1, 16):
            if CRC16_POLY >> tap & 1:
                bits[tap] = bits[tap] ^ feedback
    return Cat(*bits)


class CRC16(wiring.Component):
    """Byte-serial CRC-16/CCITT-FALSE: one byte per cycle.

    In a cycle with ``clear`` high, ``crc`` returns to 0xFFFF (``clear`` wins over ``en``); in a
    cycle with ``en`` high, ``data`` is folded in. ``crc`` is a register: it shows the CRC of the
    bytes folded in so far from the next cycle on. One level of XOR logic per output bit (at most
    about 10 inputs): no timing concern at the board's clocks.

    Members
    -------
    data : In(8)
    en : In(1)
    clear : In(1)
    crc : Out(16)
    """

    data: In(8)
    en: In(1)
    clear: In(1)
    crc: Out(16, init=CRC16_INIT)

    def elaborate(self, platform):
        m = Module()
        with m.If(self.clear):
            m.d.sync += self.crc.eq(CRC16_INIT)
        with m.Elif(self.en):
            m.d.sync += self.crc.eq(_next_crc(self.crc, self.data))
        return m
