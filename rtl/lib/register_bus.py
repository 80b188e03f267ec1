"""The Focus unit's register bus: a minimal word-addressed, single-cycle read/write port."""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegisterSignature", "ADDR_BITS", "DATA_BITS"]

#: Width of a word address: 256 registers.
ADDR_BITS = 8
#: Width of a register word.
DATA_BITS = 32


class RegisterSignature(wiring.Signature):
    """A register bus, seen from the initiator (the host, or a UART/SPI bridge); the target
    (:class:`rtl.top.focus_unit.FocusUnit`) takes it as ``In(RegisterSignature())``.

    Timing, all on the rising edge of the target's ``sync`` clock, no wait states and no
    back-pressure (the target accepts every access in the cycle it is made):

    - **Write.** In a cycle with ``w_en`` high, the word ``w_data`` is written to register
      ``addr``; it takes effect at the end of that cycle (a read of the same register in the next
      cycle returns it).
    - **Read.** In a cycle with ``r_en`` high, register ``addr`` is read; its value is on
      ``r_data`` in the *next* cycle (one cycle of latency), and only then: ``r_data`` is 0 in
      cycles that follow a cycle without ``r_en``. A read has no side effect on the value read,
      except that a read of an unmapped address sets the target's bus-error flag.
    - ``w_en`` and ``r_en`` may be high in the same cycle (a read of the old value and a write).

    Members
    -------
    addr : Out(8)
        Word address.
    w_en : Out(1)
    w_data : Out(32)
    r_en : Out(1)
    r_data : In(32)
        Read data, valid the cycle after ``r_en``.
    """

    def __init__(self):
        super().__init__({
            "addr": Out(ADDR_BITS),
            "w_en": Out(1),
            "w_data": Out(DATA_BITS),
            "r_en": Out(1),
            "r_data": In(DATA_BITS),
        })
