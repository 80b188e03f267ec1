"""The board's UART bridge: the serial protocol of :mod:`boards.protocol` in hardware.

:class:`UARTBridge` receives request frames on ``rx``, checks them, masters the register bus
(:class:`rtl.lib.register_bus.RegisterSignature`), pushes beats into the design's input streams,
pulls beats from its output streams, and sends one reply frame per request on ``tx``.
"""

from amaranth.hdl import Array, Cat, Const, Module, Shape, Signal, Value
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.register_bus import RegisterSignature

from .crc16 import CRC16
from .protocol import PROTOCOL_VERSION, REPLY_SYNC, SYNC, Cmd, Status, beat_bytes
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
        pushes = [getattr(self, f"push_{i}") for i in range(len(self._push_widths))]
        pulls = [getattr(self, f"pull_{i}") for i in range(len(self._pull_widths))]
        push_nb = [beat_bytes(w) for w in self._push_widths]
        pull_nb = [beat_bytes(w) for w in self._pull_widths]
        nb_max = max([1, *push_nb, *pull_nb])

        m.submodules.rxu = rxu = UARTReceiver(self._divisor)
        m.submodules.txu = txu = UARTTransmitter(self._divisor)
        m.submodules.crc_rx = crc_rx = CRC16()
        m.submodules.crc_tx = crc_tx = CRC16()
        m.submodules.buf = buf = memory.Memory(shape=8, depth=max_len, init=[])
        rd = buf.read_port()
        wr = buf.write_port()
        m.d.comb += [rxu.rx.eq(self.rx), self.tx.eq(txu.tx)]

        byte = rxu.o_stream.payload
        got = rxu.o_stream.valid & rxu.o_stream.ready

        # Quiet time: cycles since the receiver last had a frame in progress or a byte pending.
        byte_timeout = self.byte_timeout
        quiet = Signal(range(byte_timeout + 1))
        timed_out = quiet == byte_timeout
        with m.If(rxu.busy | rxu.o_stream.valid):
            m.d.sync += quiet.eq(0)
        with m.Elif(~timed_out):
            m.d.sync += quiet.eq(quiet + 1)

        rx_err = Signal(8)          # a pending receiver error: its Status code, or 0
        clear_rx_err = Signal()

        cmd = Signal(8)
        len_lo = Signal(8)
        length = Signal(range(max_len + 1))     # only lengths <= max_len are kept
        idx = Signal(range(max_len + 1))
        status = Signal(8)
        rlen = Signal(range(max_len + 1))
        crc_lo = Signal(8)
        port = Signal(8)
        beat_pos = Signal(range(nb_max))
        beats = Signal(range(max_len + 1))
        count = Signal(16)
        word = Signal(32)
        waddr = Signal(8)
        beat = Signal(8 * nb_max)
        timer = Signal(range(max(self.push_timeout, self.pull_timeout) + 1))
        seq = Signal(range(max_len + 8))
        tx_valid = Signal()
        tx_byte = Signal(8)
        m.d.comb += [txu.i_stream.valid.eq(tx_valid), txu.i_stream.payload.eq(tx_byte),
                     crc_rx.data.eq(byte)]

        for p in pushes:
            with m.If(p.ready):
                m.d.sync += p.valid.eq(0)

        def rx_errors(next_if_ok=None):
            """Common exits of the receiving states: a receiver error, then a quiet line."""
            with m.If(rx_err != 0):
                m.d.sync += status.eq(rx_err)
                m.d.comb += clear_rx_err.eq(1)
                m.next = "DISCARD"
            with m.Elif(timed_out):
                m.d.sync += [status.eq(Status.TIMEOUT), rlen.eq(0)]
                m.next = "REPLY"

        def reply(code, n=0):
            m.d.sync += [status.eq(code), rlen.eq(n)]
            m.next = "REPLY"

        def switch_port(ports, nbs):
            """``with`` cases per existing port: yields (i, stream, bytes per beat)."""
            for i, (p, nb) in enumerate(zip(ports, nbs, strict=True)):
                with m.Case(i):
                    yield i, p, nb

        with m.FSM() as fsm:
            with m.State("IDLE"):
                m.d.comb += rxu.o_stream.ready.eq(1)
                with m.If(rx_err != 0):
                    m.d.sync += [status.eq(rx_err), cmd.eq(0)]
                    m.d.comb += clear_rx_err.eq(1)
                    m.next = "DISCARD"
                with m.Elif(got & (byte == SYNC)):
                    m.d.comb += crc_rx.clear.eq(1)
                    m.d.sync += [idx.eq(0), cmd.eq(0), beat_pos.eq(0), beats.eq(0), port.eq(0)]
                    m.next = "HEADER"

            with m.State("HEADER"):
                m.d.comb += [rxu.o_stream.ready.eq(1), crc_rx.en.eq(got)]
                rx_errors()
                with m.If((rx_err == 0) & got):
                    m.d.sync += idx.eq(idx + 1)
                    with m.Switch(idx):
                        with m.Case(0):
                            m.d.sync += cmd.eq(byte)
                        with m.Case(1):
                            m.d.sync += len_lo.eq(byte)
                        with m.Case(2):
                            full = Cat(len_lo, byte)
                            m.d.sync += [length.eq(full), idx.eq(0)]
                            with m.If(full > max_len):
                                m.d.sync += status.eq(Status.OVERSIZE)
                                m.next = "DISCARD"
                            with m.Elif(full == 0):
                                m.next = "CRC_LO"
                            with m.Else():
                                m.next = "PAYLOAD"

            with m.State("PAYLOAD"):
                m.d.comb += [rxu.o_stream.ready.eq(1), crc_rx.en.eq(got),
                             wr.addr.eq(idx), wr.data.eq(byte), wr.en.eq(got & (rx_err == 0))]
                rx_errors()
                with m.If((rx_err == 0) & got):
                    m.d.sync += idx.eq(idx + 1)
                    # Track the PUSH beat boundaries as the bytes arrive (no divider needed to
                    # check that the payload is a whole number of beats).
                    with m.If(idx == 0):
                        m.d.sync += port.eq(byte)
                    with m.Else():
                        with m.Switch(port):
                            for _, _, nb in switch_port(pushes, push_nb):
                                with m.If(beat_pos == nb - 1):
                                    m.d.sync += [beat_pos.eq(0), beats.eq(beats + 1)]
                                with m.Else():
                                    m.d.sync += beat_pos.eq(beat_pos + 1)
                    with m.If(idx == length - 1):
                        m.next = "CRC_LO"

            with m.State("CRC_LO"):
                m.d.comb += rxu.o_stream.ready.eq(1)
                rx_errors()
                with m.If((rx_err == 0) & got):
                    m.d.sync += crc_lo.eq(byte)
                    m.next = "CRC_HI"

            with m.State("CRC_HI"):
                m.d.comb += rxu.o_stream.ready.eq(1)
                rx_errors()
                with m.If((rx_err == 0) & got):
                    with m.If(Cat(crc_lo, byte) != crc_rx.crc):
                        reply(Status.BAD_CRC)
                    with m.Else():
                        m.next = "DISPATCH"

            with m.State("DISCARD"):
                # Drop everything until the line has been high and quiet, then reply.
                m.d.comb += [rxu.o_stream.ready.eq(1), clear_rx_err.eq(1)]
                with m.If(timed_out):
                    m.d.sync += rlen.eq(0)
                    m.next = "REPLY"

            with m.State("DISPATCH"):
                m.d.sync += [idx.eq(0), timer.eq(0), status.eq(Status.OK)]
                with m.Switch(cmd):
                    with m.Case(Cmd.PING):
                        with m.If(length != 0):
                            reply(Status.BAD_LENGTH)
                        with m.Else():
                            m.next = "PING"
                    with m.Case(Cmd.READ_REG):
                        with m.If(length != 1):
                            reply(Status.BAD_LENGTH)
                        with m.Else():
                            m.d.comb += rd.addr.eq(0)
                            m.next = "READ_REG"
                    with m.Case(Cmd.WRITE_REG):
                        with m.If(length != 5):
                            reply(Status.BAD_LENGTH)
                        with m.Else():
                            m.next = "WRITE_A"
                    with m.Case(Cmd.PUSH):
                        with m.If(length == 0):
                            reply(Status.BAD_LENGTH)
                        with m.Elif(port >= len(pushes)):
                            reply(Status.BAD_PORT)
                        with m.Elif(beat_pos != 0):
                            reply(Status.BAD_LENGTH)
                        with m.Else():
                            m.d.sync += [idx.eq(1), beats.eq(0)]
                            m.next = "PUSH_A"
                    with m.Case(Cmd.PULL):
                        with m.If(length != 3):
                            reply(Status.BAD_LENGTH)
                        with m.Else():
                            m.next = "PULL_A"
                    with m.Default():
                        reply(Status.UNKNOWN_CMD)

            with m.State("PING"):
                info = Array(Const(b, 8) for b in self._info)
                m.d.comb += [wr.addr.eq(idx), wr.data.eq(info[idx]), wr.en.eq(1)]
                m.d.sync += idx.eq(idx + 1)
                with m.If(idx == len(self._info) - 1):
                    reply(Status.OK, len(self._info))

            # READ_REG: rd.data is buffer[0] (the address); read the register, write its 4 bytes.
            with m.State("READ_REG"):
                m.d.comb += [self.bus.addr.eq(rd.data), self.bus.r_en.eq(1)]
                m.next = "READ_DATA"
            with m.State("READ_DATA"):
                m.d.sync += [word.eq(self.bus.r_data), idx.eq(0), beats.eq(4)]
                m.next = "WORD"

            # WORD: write the low ``beats`` bytes of ``word`` to the buffer, reply with them
            # (with the status set before: OK, or PUSH's TIMEOUT).
            with m.State("WORD"):
                m.d.comb += [wr.addr.eq(idx), wr.data.eq(word.word_select(idx[:2], 8)),
                             wr.en.eq(1)]
                m.d.sync += idx.eq(idx + 1)
                with m.If(idx == beats - 1):
                    m.d.sync += rlen.eq(beats)
                    m.next = "REPLY"

            # WRITE_REG: read the address and the 4 data bytes (2 cycles a byte), then write.
            with m.State("WRITE_A"):
                m.d.comb += rd.addr.eq(idx)
                m.next = "WRITE_D"
            with m.State("WRITE_D"):
                with m.If(idx == 0):
                    m.d.sync += waddr.eq(rd.data)
                with m.Else():
                    m.d.sync += word.eq(Cat(word[8:], rd.data))
                m.d.sync += idx.eq(idx + 1)
                with m.If(idx == 4):
                    m.next = "WRITE_GO"
                with m.Else():
                    m.next = "WRITE_A"
            with m.State("WRITE_GO"):
                m.d.comb += [self.bus.addr.eq(waddr), self.bus.w_data.eq(word),
                             self.bus.w_en.eq(1)]
                reply(Status.OK)

            # PUSH: assemble each beat from the buffer, hand it to the port's register.
            with m.State("PUSH_A"):
                m.d.comb += rd.addr.eq(idx)
                with m.If(idx == length):
                    m.d.sync += [word.eq(beats), idx.eq(0), beats.eq(2)]
                    m.next = "WORD"
                with m.Else():
                    m.next = "PUSH_D"
            with m.State("PUSH_D"):
                # Shift the bytes in at the top: after nb of them the beat is the top nb bytes
                # (a shift register is much smaller than a byte-addressed write).
                m.d.sync += [beat.eq(Cat(beat[8:], rd.data)), idx.eq(idx + 1)]
                with m.Switch(port):
                    for _, _, nb in switch_port(pushes, push_nb):
                        with m.If(beat_pos == nb - 1):
                            m.d.sync += [beat_pos.eq(0), timer.eq(0)]
                            m.next = "PUSH_W"
                        with m.Else():
                            m.d.sync += beat_pos.eq(beat_pos + 1)
                            m.next = "PUSH_A"
            with m.State("PUSH_W"):
                with m.Switch(port):
                    for i, p, _ in switch_port(pushes, push_nb):
                        with m.If(~p.valid | p.ready):
                            top = beat[8 * (nb_max - push_nb[i]):]
                            m.d.sync += [p.payload.eq(top[:self._push_widths[i]]),
                                         p.valid.eq(1), beats.eq(beats + 1)]
                            m.next = "PUSH_A"
                        with m.Elif(timer == self.push_timeout):
                            m.d.sync += [status.eq(Status.TIMEOUT), word.eq(beats), idx.eq(0),
                                         beats.eq(2)]
                            m.next = "WORD"
                        with m.Else():
                            m.d.sync += timer.eq(timer + 1)
            # PULL: read port and count, clamp, then collect beats into the buffer.
            with m.State("PULL_A"):
                m.d.comb += rd.addr.eq(idx)
                m.next = "PULL_D"
            with m.State("PULL_D"):
                with m.Switch(idx):
                    with m.Case(0):
                        m.d.sync += port.eq(rd.data)
                    with m.Case(1):
                        m.d.sync += count[:8].eq(rd.data)
                    with m.Case(2):
                        m.d.sync += count[8:].eq(rd.data)
                m.d.sync += idx.eq(idx + 1)
                with m.If(idx == 2):
                    m.next = "PULL_CHECK"
                with m.Else():
                    m.next = "PULL_A"
            with m.State("PULL_CHECK"):
                m.d.sync += [idx.eq(0), beats.eq(0), timer.eq(0), beat_pos.eq(0)]
                with m.If(port >= len(pulls)):
                    reply(Status.BAD_PORT)
                with m.Else():
                    with m.Switch(port):
                        for _, _, nb in switch_port(pulls, pull_nb):
                            with m.If(count > max_len // nb):
                                m.d.sync += count.eq(max_len // nb)
                    m.next = "PULL_W"
            with m.State("PULL_W"):
                with m.If(beats == count):
                    reply(Status.OK, idx)
                with m.Else():
                    with m.Switch(port):
                        for _, p, _ in switch_port(pulls, pull_nb):
                            m.d.comb += p.ready.eq(1)
                            with m.If(p.valid):
                                m.d.sync += [beat.eq(Value.cast(p.payload)), beat_pos.eq(0)]
                                m.next = "PULL_S"
                            with m.Elif(timer == self.pull_timeout):
                                reply(Status.OK, idx)
                            with m.Else():
                                m.d.sync += timer.eq(timer + 1)
            with m.State("PULL_S"):
                m.d.comb += [wr.addr.eq(idx), wr.data.eq(beat[:8]), wr.en.eq(1)]
                m.d.sync += [idx.eq(idx + 1), beat.eq(beat >> 8)]
                with m.Switch(port):
                    for _, _, nb in switch_port(pulls, pull_nb):
                        with m.If(beat_pos == nb - 1):
                            m.d.sync += [beats.eq(beats + 1), timer.eq(0)]
                            m.next = "PULL_W"
                        with m.Else():
                            m.d.sync += beat_pos.eq(beat_pos + 1)

            # REPLY: 0x5A cmd status len_lo len_hi data[rlen] crc_lo crc_hi.
            with m.State("REPLY"):
                m.d.comb += crc_tx.clear.eq(1)
                m.d.sync += [seq.eq(0), self.error.eq(status != Status.OK)]
                m.next = "TX_LOAD"
            with m.State("TX_LOAD"):
                out = Signal(8)
                with m.If(seq == 0):
                    m.d.comb += out.eq(REPLY_SYNC)
                with m.Elif(seq == 1):
                    m.d.comb += out.eq(cmd)
                with m.Elif(seq == 2):
                    m.d.comb += out.eq(status)
                with m.Elif(seq == 3):
                    m.d.comb += out.eq(rlen[:8])
                with m.Elif(seq == 4):
                    m.d.comb += out.eq(rlen >> 8)
                with m.Elif(seq < rlen + 5):
                    m.d.comb += out.eq(rd.data)
                with m.Elif(seq == rlen + 5):
                    m.d.comb += out.eq(crc_tx.crc[:8])
                with m.Else():
                    m.d.comb += out.eq(crc_tx.crc[8:])
                m.d.comb += [crc_tx.data.eq(out), crc_tx.en.eq((seq != 0) & (seq < rlen + 5))]
                m.d.sync += [tx_byte.eq(out), tx_valid.eq(1)]
                m.next = "TX_WAIT"
            with m.State("TX_WAIT"):
                m.d.comb += rd.addr.eq(seq - 4)     # buffer[seq + 1 - 5], for the next byte
                with m.If(txu.i_stream.ready):
                    m.d.sync += [tx_valid.eq(0), seq.eq(seq + 1)]
                    with m.If(seq == rlen + 6):
                        m.next = "IDLE"
                    with m.Else():
                        m.next = "TX_LOAD"

        # Receiver errors are latched in any state (after the FSM, so a new one is not lost to a
        # clear in the same cycle) and handled by the receiving states.
        with m.If(clear_rx_err):
            m.d.sync += rx_err.eq(0)
        with m.If(rxu.brk):
            m.d.sync += rx_err.eq(Status.BREAK)
        with m.Elif(rxu.framing):
            m.d.sync += rx_err.eq(Status.FRAMING)
        with m.Elif(rxu.overrun):
            m.d.sync += rx_err.eq(Status.OVERRUN)

        m.d.comb += self.busy.eq(~fsm.ongoing("IDLE"))
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
        from rtl.top.focus_unit import FocusUnit

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
