"""The board's UART bridge: the serial protocol of :mod:`boards.protocol` in hardware.

:class:`UARTBridge` receives request frames on ``rx``, checks them, masters the register bus
(:class:`rtl.lib.register_bus.RegisterSignature`), pushes beats into the design's input streams,
pulls beats from its output streams, and sends one reply frame per request on ``tx``.
"""

import functools
import operator

from amaranth.hdl import Module, Shape
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.register_bus import RegisterSignature
from rtl.top.focus_unit import FocusUnit

from .executor import CommandExecutor, StreamEngine
from .framing import ReplyFramer, RequestParser
from .protocol import PROTOCOL_VERSION, beat_bytes
from .uart import UARTReceiver, UARTTransmitter, _check_divisor

__all__ = ["UARTBridge", "bridge_info", "FocusBoardCore", "FOCUS_PUSH_PORTS", "FOCUS_PULL_PORTS"]


def _payload_width(signature):
    if not isinstance(signature, stream.Signature):
        raise TypeError(f"Bridge ports must be stream.Signature objects, not {signature!r}")
    return Shape.cast(signature.members["payload"].shape).width


def bridge_info(push_widths, pull_widths, max_len):
    """The PING reply data of a bridge with these port payload widths (see
    :mod:`boards.protocol`)."""
    return bytes([PROTOCOL_VERSION, len(push_widths), len(pull_widths),
                  max_len & 0xFF, max_len >> 8,
                  *(beat_bytes(w) for w in push_widths),
                  *(beat_bytes(w) for w in pull_widths)])


class UARTBridge(wiring.Component):
    """Serial-protocol bridge between a UART and a design's register bus and streams.

    The protocol (frames, commands, errors, timeouts) is documented in :mod:`boards.protocol`.
    A request is received whole into a ``max_len``-byte buffer (one block RAM on the boards) and
    its CRC checked before anything is executed, so a corrupt frame has no side effect. Then the
    command runs and the reply is sent from the same buffer. While a command executes or its reply
    is sent, received bytes are not read (a second byte in that time is an OVERRUN).

    Timing: a register access takes a few cycles; PUSH takes 2 cycles per payload byte plus the
    streams' back-pressure; PULL 1 cycle per data byte plus the wait for beats. Everything else is
    the UART's 10 bit times per byte.

    Inside, a request goes through small components joined by streams: the UART receiver, the
    :class:`boards.framing.RequestParser` (frame and CRC), the
    :class:`boards.executor.CommandExecutor` (with the :class:`boards.executor.StreamEngine` for
    PUSH and PULL), the :class:`boards.framing.ReplyFramer` (frame and CRC) and the UART
    transmitter. They share the buffer (:class:`boards.framing.BufferSignature`).

    Streams: each push port has a one-beat output register (valid and payload held until the
    transfer, as the stream rules require; never withdrawn, also not on a TIMEOUT). A pull port's
    ``ready`` is high only while a PULL on that port waits for a beat.

    Parameters
    ----------
    divisor : int
        UART clock cycles per bit (:func:`boards.uart.uart_divisor`).
    push : sequence of stream.Signature
        The design's input streams, driven by the bridge: members ``push_0``, ``push_1``, ...
    pull : sequence of stream.Signature
        The design's output streams, read by the bridge: members ``pull_0``, ``pull_1``, ...
    max_len : int
        Largest request payload / reply data, bytes (the buffer depth). 8 to 65535.
    byte_timeout : int or None
        Cycles the line must be quiet to end a truncated frame (TIMEOUT) or a discard after an
        error. Default ``6000 * divisor`` (about 52 ms at any clock: 600 characters).
    push_timeout, pull_timeout : int or None
        Cycles a PUSH waits for a port's register to empty, and a PULL for each beat. Default
        ``200 * divisor`` each (20 character times, 1.7 ms at 115200 baud): these are flow
        control, not failures (the host polls again), and a stream that gives nothing for that
        long is waiting on something else.

    Members
    -------
    rx : In(1)
    tx : Out(1)
    bus : Out(RegisterSignature())
    push_<i> : Out(push[i])
    pull_<i> : In(pull[i])
    busy : Out(1)
        A request is being received or executed, or its reply sent (LED).
    error : Out(1)
        The last reply carried an error status (held until the next OK reply; LED).
    """

    def __init__(self, divisor, *, push=(), pull=(), max_len=256, byte_timeout=None,
                 push_timeout=None, pull_timeout=None):
        _check_divisor(divisor)
        push, pull = tuple(push), tuple(pull)
        self._push, self._pull = push, pull
        self._push_widths = [_payload_width(s) for s in push]
        self._pull_widths = [_payload_width(s) for s in pull]
        if isinstance(max_len, bool) or not isinstance(max_len, int):
            raise TypeError(f"Bridge max_len must be an integer, not {max_len!r}")
        info = bridge_info(self._push_widths, self._pull_widths, max_len)
        low = max(8, len(info), *(1 + beat_bytes(w) for w in self._push_widths),
                  *(beat_bytes(w) for w in self._pull_widths))
        if not low <= max_len <= 0xFFFF:
            raise ValueError(f"Bridge max_len must be in [{low}, 65535] for these ports, not "
                             f"{max_len}")
        defaults = {"byte_timeout": 6000 * divisor, "push_timeout": 200 * divisor,
                    "pull_timeout": 200 * divisor}
        self._timeouts = {}
        for name, value in (("byte_timeout", byte_timeout), ("push_timeout", push_timeout),
                            ("pull_timeout", pull_timeout)):
            value = defaults[name] if value is None else value
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Bridge {name} must be a positive integer, not {value!r}")
            self._timeouts[name] = value
        self._divisor = divisor
        self._max_len = max_len
        self._info = info
        members = {
            "rx": In(1, init=1),
            "tx": Out(1, init=1),
            "bus": Out(RegisterSignature()),
            "busy": Out(1),
            "error": Out(1),
        }
        for i, s in enumerate(push):
            members[f"push_{i}"] = Out(s)
        for i, s in enumerate(pull):
            members[f"pull_{i}"] = In(s)
        super().__init__(members)

    @property
    def divisor(self):
        return self._divisor

    @property
    def max_len(self):
        return self._max_len

    @property
    def push_widths(self):
        """Payload width of each push port."""
        return list(self._push_widths)

    @property
    def pull_widths(self):
        """Payload width of each pull port."""
        return list(self._pull_widths)

    @property
    def info(self):
        """The PING reply data."""
        return self._info

    @property
    def byte_timeout(self):
        return self._timeouts["byte_timeout"]

    @property
    def push_timeout(self):
        return self._timeouts["push_timeout"]

    @property
    def pull_timeout(self):
        return self._timeouts["pull_timeout"]

    def elaborate(self, platform):
        m = Module()
        max_len = self._max_len
        m.submodules.rx = rx = UARTReceiver(self._divisor)
        m.submodules.parser = parser = RequestParser(
            max_len=max_len, push_beat_bytes=[beat_bytes(w) for w in self._push_widths],
            byte_timeout=self.byte_timeout)
        m.submodules.executor = executor = CommandExecutor(
            max_len=max_len, info=self._info, n_push=len(self._push), n_pull=len(self._pull))
        m.submodules.engine = engine = StreamEngine(
            max_len=max_len, push=self._push, pull=self._pull, push_timeout=self.push_timeout,
            pull_timeout=self.pull_timeout)
        m.submodules.framer = framer = ReplyFramer(max_len=max_len)
        m.submodules.tx = tx = UARTTransmitter(self._divisor)

        # rx -> parser -> executor (-> engine -> executor) -> framer -> tx: each request is held
        # on its stream until its reply has been sent.
        m.d.comb += [rx.rx.eq(self.rx), parser.brk.eq(rx.brk), parser.framing.eq(rx.framing),
                     parser.overrun.eq(rx.overrun), parser.line_busy.eq(rx.busy)]
        wiring.connect(m, rx.o_stream, parser.i_stream)
        wiring.connect(m, parser.o_stream, executor.i_stream)
        wiring.connect(m, executor.jobs, engine.i_stream)
        wiring.connect(m, engine.o_stream, executor.results)
        wiring.connect(m, executor.o_stream, framer.i_stream)
        wiring.connect(m, framer.o_stream, tx.i_stream)
        m.d.comb += self.tx.eq(tx.tx)

        wiring.connect(m, executor.bus, wiring.flipped(self.bus))
        for i in range(len(self._push)):
            wiring.connect(m, getattr(engine, f"push_{i}"),
                           wiring.flipped(getattr(self, f"push_{i}")))
        for i in range(len(self._pull)):
            wiring.connect(m, wiring.flipped(getattr(self, f"pull_{i}")),
                           getattr(engine, f"pull_{i}"))

        # The buffer: its users take turns and drive 0 while they do not use it, so their
        # outputs are ORed onto the ports.
        m.submodules.buf = buf = memory.Memory(shape=8, depth=max_len, init=[])
        wr, rd = buf.write_port(), buf.read_port()
        users = [parser.buf, executor.buf, engine.buf, framer.buf]
        for port, name in ((wr.addr, "w_addr"), (wr.data, "w_data"), (wr.en, "w_en"),
                           (rd.addr, "r_addr")):
            m.d.comb += port.eq(functools.reduce(operator.or_, (getattr(u, name) for u in users)))
        m.d.comb += [u.r_data.eq(rd.data) for u in users]

        m.d.comb += [self.busy.eq(parser.busy), self.error.eq(framer.error)]
        return m


#: The Focus unit's streams on the bridge, in port order (push ports, then pull ports).
FOCUS_PUSH_PORTS = ("scores", "tokens")
FOCUS_PULL_PORTS = ("mask", "code", "sic")


class FocusBoardCore(wiring.Component):
    """The board's logic without the platform: :class:`rtl.top.focus_unit.FocusUnit` behind a
    :class:`UARTBridge`. Board tops wrap this (pins, reset, LEDs); the host's simulated transport
    drives it directly.

    Bridge ports: push 0 ``scores``, push 1 ``tokens``; pull 0 ``mask``, pull 1 ``code``, pull 2
    ``sic`` (:data:`FOCUS_PUSH_PORTS`, :data:`FOCUS_PULL_PORTS`). Built with ``sic=False``, the
    bridge has only the SEC ports (push 0, pulls 0 and 1), and the host driver, which reads the
    port list with ``PING``, knows that the board has no SIC.

    Parameters
    ----------
    params : FocusParams
    divisor : int
        UART clock cycles per bit.
    icg_cell : str or None
        As for :class:`rtl.top.focus_unit.FocusUnit` (``None`` for the Amaranth simulator).
    sic : bool
        As for :class:`rtl.top.focus_unit.FocusUnit`: False builds SEC only.
    **bridge
        ``max_len``, ``byte_timeout``, ``push_timeout``, ``pull_timeout`` of the bridge.

    Members
    -------
    rx : In(1)
    tx : Out(1)
    busy : Out(1)
        The Focus unit runs a job, or the bridge handles a request (LED).
    error : Out(1)
        A sticky error flag of the Focus unit is set, or the last reply was an error (LED).
    """

    rx: In(1, init=1)
    tx: Out(1, init=1)
    busy: Out(1)
    error: Out(1)

    def __init__(self, params, divisor, *, icg_cell=None, sic=True, **bridge):
        self.unit = unit = FocusUnit(params, icg_cell=icg_cell, sic=sic)
        push = [unit.scores.signature.flip(), unit.tokens.signature.flip()]
        pull = [unit.mask.signature, unit.code.signature, unit.sic.signature]
        if not sic:
            push, pull = push[:1], pull[:2]
        self.bridge = UARTBridge(divisor, push=push, pull=pull, **bridge)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self.unit
        m.submodules.bridge = bridge = self.bridge
        wiring.connect(m, bridge.bus, unit.bus)
        wiring.connect(m, bridge.push_0, unit.scores)
        wiring.connect(m, unit.mask, bridge.pull_0)
        wiring.connect(m, unit.code, bridge.pull_1)
        if unit.has_sic:
            wiring.connect(m, bridge.push_1, unit.tokens)
            wiring.connect(m, unit.sic, bridge.pull_2)
        m.d.comb += [bridge.rx.eq(self.rx), self.tx.eq(bridge.tx),
                     self.busy.eq(unit.busy | bridge.busy),
                     self.error.eq(unit.error | bridge.error)]
        return m
