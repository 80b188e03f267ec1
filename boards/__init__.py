"""The Focus unit on a board (spec section 7), driven over UART from a Python host.

- :mod:`boards.uart`: a small 8N1 UART (115200 baud by default).
- :mod:`boards.protocol`: the framed serial protocol (commands, statuses, encode/decode, the
  CRC-16/CCITT-FALSE through ``binascii.crc_hqx``).
- :mod:`boards.bridge`: :class:`~boards.bridge.UARTBridge` (the protocol in hardware) and
  :class:`~boards.bridge.FocusBoardCore` (FocusUnit behind the bridge), built from
  :mod:`boards.framing` (request parser and reply framer, with ``amaranth.lib.crc``) and
  :mod:`boards.executor` (the commands, and the PUSH/PULL stream engine).
- :mod:`boards.host`: :class:`~boards.host.FocusBoard`, the host driver (serial port, or any
  transport) with golden's ``sec``, ``sic`` and ``focus``; it imports no simulator.
- :mod:`boards.sim_transport`: :class:`~boards.sim_transport.SimTransport`, the host driver's
  transport into an Amaranth simulation of the board (bit-level UART line).
- :mod:`boards.top`: the board tops (iCEBreaker, ULX3S) and their build and flash.
"""
