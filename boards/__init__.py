"""The Focus unit on a board (spec section 7), driven over UART from a Python host.

- :mod:`boards.uart`: a small 8N1 UART (115200 baud by default).
- :mod:`boards.crc16`: CRC-16/CCITT-FALSE, in Python and as a byte-serial unit.
- :mod:`boards.protocol`: the framed serial protocol (commands, statuses, encode/decode).
- :mod:`boards.bridge`: :class:`~boards.bridge.UARTBridge` (the protocol in hardware) and
  :class:`~boards.bridge.FocusBoardCore` (FocusUnit behind the bridge).
- :mod:`boards.host`: :class:`~boards.host.FocusBoard`, the host driver (serial or simulated
  transport) with golden's ``sec``, ``sic`` and ``focus``.
- :mod:`boards.top`: the board tops (iCEBreaker, ULX3S) and their build and flash.
"""
