"""The bridge's frame layer: :class:`RequestParser` (bytes from the UART to checked requests) and
:class:`ReplyFramer` (replies to bytes for the UART), each with its CRC.

Frames and CRC as in :mod:`boards.protocol`. The CRC is ``CRC16_IBM_3740`` of
:mod:`amaranth.lib.crc.catalog` (:data:`FRAME_CRC`), the same function as
:func:`boards.protocol.frame_crc` on the host.

The parser, :class:`boards.executor.CommandExecutor` and the framer share the bridge's buffer
(one block RAM) through :class:`BufferSignature`. They take turns: the parser writes the request
payload, the executor reads it and writes the reply data, the framer reads that. A request stays
on the parser's ``o_stream`` until its reply has been sent (the executor takes it then), and the
parser reads no byte meanwhile: one request is handled at a time, as the protocol says.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.crc import catalog
from amaranth.lib.wiring import In, Out

from .protocol import REPLY_SYNC, SYNC, Status

__all__ = ["FRAME_CRC", "request_layout", "reply_layout", "BufferSignature", "RequestParser",
           "ReplyFramer"]

#: The frames' CRC, a byte at a time: CRC-16/CCITT-FALSE (= CRC-16/IBM-3740), check value 0x29B1.
FRAME_CRC = catalog.CRC16_IBM_3740(data_width=8)


def request_layout(max_len):
    """A received request (the parser's ``o_stream`` payload).

    ``status`` is ``Status.OK`` for a good frame, or the error that ended the frame (BAD_CRC,
    OVERSIZE, TIMEOUT, BREAK, FRAMING, OVERRUN); then only ``cmd`` is meaningful (0 when no
    command byte was received). ``arg`` is the first payload byte (a register address or a port).
    ``whole`` says that the payload after ``arg`` is a whole number of beats of push port ``arg``
    (meaningful only when that port exists).
    """
    return data.StructLayout({
        "status": 8,
        "cmd": 8,
        "length": range(max_len + 1),
        "arg": 8,
        "whole": 1,
    })


def reply_layout(max_len):
    """A reply to send (the framer's ``i_stream`` payload): its data are the first ``length``
    bytes of the buffer."""
    return data.StructLayout({"cmd": 8, "status": 8, "length": range(max_len + 1)})


class BufferSignature(wiring.Signature):
    """One user's side of the bridge's ``max_len``-byte buffer: a write port and a read port
    (``r_data`` is the byte at ``r_addr`` one cycle earlier).

    The bridge ORs its users' outputs onto the memory's ports, so a user drives every output 0
    while it is not using the buffer.

    Members
    -------
    w_addr, w_data, w_en : Out
    r_addr : Out
    r_data : In(8)
    """

    def __init__(self, max_len):
        super().__init__({
            "w_addr": Out(range(max_len)),
            "w_data": Out(8),
            "w_en": Out(1),
            "r_addr": Out(range(max_len)),
            "r_data": In(8),
        })


class RequestParser(wiring.Component):
    """Request frames from the UART receiver's bytes: header parsed, payload written to the
    buffer, CRC checked.

    Receives one byte per cycle at most, with no back-pressure on a frame being received; error
    exits as :mod:`boards.protocol` describes (receiver errors, a quiet line, a bad length). Every
    frame, good or not, ends as one request on ``o_stream``; the parser then holds it and reads no
    byte (a second byte in that time is an OVERRUN) until it is taken.

    Parameters
    ----------
    max_len : int
        Buffer size, bytes: longer payloads are OVERSIZE.
    push_beat_bytes : sequence of int
        Bytes per beat of each push port (for ``whole``).
    byte_timeout : int
        Cycles of a quiet line that end a truncated frame (TIMEOUT) or a discard after an error.

    Members
    -------
    i_stream : In(stream.Signature(8))
        The UART receiver's bytes.
    brk, framing, overrun : In(1)
        The UART receiver's error pulses.
    line_busy : In(1)
        The UART receiver is in a character (resets the quiet time).
    o_stream : Out(stream.Signature(request_layout(max_len)))
    buf : Out(BufferSignature(max_len))
        Write only.
    busy : Out(1)
        In a frame, or holding a request.
    """

    def __init__(self, *, max_len, push_beat_bytes, byte_timeout):
        self._max_len = max_len
        self._push_nb = tuple(push_beat_bytes)
        self._byte_timeout = byte_timeout
        super().__init__({
            "i_stream": In(stream.Signature(8)),
            "brk": In(1),
            "framing": In(1),
            "overrun": In(1),
            "line_busy": In(1),
            "o_stream": Out(stream.Signature(request_layout(max_len))),
            "buf": Out(BufferSignature(max_len)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = FRAME_CRC.create()
        req = self.o_stream.payload
        byte = self.i_stream.payload
        got = self.i_stream.valid & self.i_stream.ready
        m.d.comb += crc.data.eq(byte)

        # Quiet time: cycles since the receiver last was in a character or had a byte pending.
        quiet = Signal(range(self._byte_timeout + 1))
        timed_out = quiet == self._byte_timeout
        with m.If(self.line_busy | self.i_stream.valid):
            m.d.sync += quiet.eq(0)
        with m.Elif(~timed_out):
            m.d.sync += quiet.eq(quiet + 1)

        rx_err = Signal(8)          # a pending receiver error: its Status code, or 0
        clear_rx_err = Signal()
        idx = Signal(range(self._max_len + 1))
        len_lo = Signal(8)
        beat_pos = Signal(range(max([1, *self._push_nb])))
        crc_lo_ok = Signal()

        def receive():
            """The common part of the states inside a frame: take bytes, leave on an error or
            a quiet line; returns the condition under which a byte of the frame was taken."""
            m.d.comb += self.i_stream.ready.eq(1)
            with m.If(rx_err != 0):
                m.d.sync += req.status.eq(rx_err)
                m.d.comb += clear_rx_err.eq(1)
                m.next = "DISCARD"
            with m.Elif(timed_out):
                m.d.sync += req.status.eq(Status.TIMEOUT)
                m.next = "REQUEST"
            return (rx_err == 0) & ~timed_out & got

        with m.FSM() as fsm:
            with m.State("IDLE"):
                m.d.comb += self.i_stream.ready.eq(1)
                with m.If(rx_err != 0):
                    m.d.sync += [req.status.eq(rx_err), req.cmd.eq(0)]
                    m.d.comb += clear_rx_err.eq(1)
                    m.next = "DISCARD"
                with m.Elif(got & (byte == SYNC)):      # other bytes outside a frame: ignored
                    m.d.comb += crc.start.eq(1)
                    m.d.sync += [req.cmd.eq(0), idx.eq(0), beat_pos.eq(0)]
                    m.next = "CMD"

            with m.State("CMD"):
                with m.If(receive()):
                    m.d.comb += crc.valid.eq(1)
                    m.d.sync += req.cmd.eq(byte)
                    m.next = "LEN_LO"
            with m.State("LEN_LO"):
                with m.If(receive()):
                    m.d.comb += crc.valid.eq(1)
                    m.d.sync += len_lo.eq(byte)
                    m.next = "LEN_HI"
            with m.State("LEN_HI"):
                with m.If(receive()):
                    m.d.comb += crc.valid.eq(1)
                    length = Cat(len_lo, byte)
                    m.d.sync += req.length.eq(length)
                    with m.If(length > self._max_len):
                        m.d.sync += req.status.eq(Status.OVERSIZE)
                        m.next = "DISCARD"
                    with m.Elif(length == 0):
                        m.next = "CRC_LO"
                    with m.Else():
                        m.next = "PAYLOAD"

            with m.State("PAYLOAD"):
                with m.If(receive()):
                    m.d.comb += [crc.valid.eq(1), self.buf.w_addr.eq(idx),
                                 self.buf.w_data.eq(byte), self.buf.w_en.eq(1)]
                    m.d.sync += idx.eq(idx + 1)
                    # Track the PUSH beat boundaries as the bytes arrive (no divider needed to
                    # check that the payload is a whole number of beats).
                    with m.If(idx == 0):
                        m.d.sync += req.arg.eq(byte)
                    with m.Else():
                        with m.Switch(req.arg):
                            for port, nb in enumerate(self._push_nb):
                                with m.Case(port):
                                    with m.If(beat_pos == nb - 1):
                                        m.d.sync += beat_pos.eq(0)
                                    with m.Else():
                                        m.d.sync += beat_pos.eq(beat_pos + 1)
                    with m.If(idx == req.length - 1):
                        m.next = "CRC_LO"

            # The CRC is sent low byte first: compare each byte as it comes.
            with m.State("CRC_LO"):
                with m.If(receive()):
                    m.d.sync += crc_lo_ok.eq(byte == crc.crc[:8])
                    m.next = "CRC_HI"
            with m.State("CRC_HI"):
                with m.If(receive()):
                    good = crc_lo_ok & (byte == crc.crc[8:])
                    m.d.sync += [req.status.eq(Status.OK), req.whole.eq(beat_pos == 0)]
                    with m.If(~good):
                        m.d.sync += req.status.eq(Status.BAD_CRC)
                    m.next = "REQUEST"

            with m.State("DISCARD"):
                # Drop everything until the line has been high and quiet, then report.
                m.d.comb += [self.i_stream.ready.eq(1), clear_rx_err.eq(1)]
                with m.If(timed_out):
                    m.next = "REQUEST"

            with m.State("REQUEST"):
                m.d.comb += self.o_stream.valid.eq(1)
                with m.If(self.o_stream.ready):
                    m.next = "IDLE"

        # Receiver errors are latched in any state (after the FSM, so a new one is not lost to a
        # clear in the same cycle) and handled by the receiving states.
        with m.If(clear_rx_err):
            m.d.sync += rx_err.eq(0)
        with m.If(self.brk):
            m.d.sync += rx_err.eq(Status.BREAK)
        with m.Elif(self.framing):
            m.d.sync += rx_err.eq(Status.FRAMING)
        with m.Elif(self.overrun):
            m.d.sync += rx_err.eq(Status.OVERRUN)

        m.d.comb += self.busy.eq(~fsm.ongoing("IDLE"))
        return m


class ReplyFramer(wiring.Component):
    """Reply frames, ``0x5A cmd status len_lo len_hi data[len] crc_lo crc_hi``, a byte at a time
    on ``o_stream`` (the UART transmitter), the data read from the buffer.

    A reply is taken from ``i_stream`` (``ready``) in the cycle its last byte is; ``cmd``,
    ``status`` and ``length`` must hold until then (the stream rules see to it). Each byte is
    offered as soon as the previous one has been taken.

    Parameters
    ----------
    max_len : int

    Members
    -------
    i_stream : In(stream.Signature(reply_layout(max_len)))
    o_stream : Out(stream.Signature(8))
    buf : Out(BufferSignature(max_len))
        Read only.
    error : Out(1)
        The last reply (from its first byte on) has an error status.
    """

    def __init__(self, *, max_len):
        self._max_len = max_len
        super().__init__({
            "i_stream": In(stream.Signature(reply_layout(max_len))),
            "o_stream": Out(stream.Signature(8)),
            "buf": Out(BufferSignature(max_len)),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = FRAME_CRC.create()
        reply = self.i_stream.payload
        out = self.o_stream
        idx = Signal(range(self._max_len + 1))     # the data byte on offer
        m.d.comb += crc.data.eq(out.payload)

        def send(value, next_state, *, crc_=True):
            """Offer ``value`` (it holds until taken); ``crc_``: it counts in the CRC."""
            m.d.comb += [out.valid.eq(1), out.payload.eq(value)]
            with m.If(out.ready):
                m.d.comb += crc.valid.eq(crc_)
                m.next = next_state

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.i_stream.valid):
                    m.d.comb += crc.start.eq(1)
                    m.d.sync += [idx.eq(0), self.error.eq(reply.status != Status.OK)]
                    m.next = "SYNC"
            with m.State("SYNC"):
                send(REPLY_SYNC, "CMD", crc_=False)
            with m.State("CMD"):
                send(reply.cmd, "STATUS")
            with m.State("STATUS"):
                send(reply.status, "LEN_LO")
            with m.State("LEN_LO"):
                send(reply.length[:8], "LEN_HI")
            with m.State("LEN_HI"):
                # Meanwhile r_addr is 0 (idx), so data byte 0 is on r_data when DATA starts.
                send(reply.length >> 8, "DATA")
                with m.If(out.ready & (reply.length == 0)):
                    m.next = "CRC_LO"
            with m.State("DATA"):
                # The next byte's address as this one is taken, so that r_data changes only then.
                m.d.comb += self.buf.r_addr.eq(idx + out.ready)
                send(self.buf.r_data, "DATA")
                with m.If(out.ready):
                    m.d.sync += idx.eq(idx + 1)
                    with m.If(idx == reply.length - 1):
                        m.next = "CRC_LO"
            with m.State("CRC_LO"):
                send(crc.crc[:8], "CRC_HI", crc_=False)
            with m.State("CRC_HI"):
                send(crc.crc[8:], "IDLE", crc_=False)
                m.d.comb += self.i_stream.ready.eq(out.ready)
        return m
