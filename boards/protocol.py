"""The board's serial protocol: frame format, command and status codes, encode and decode.

Pure Python; the hardware side is :class:`boards.bridge.UARTBridge`, the host side
:class:`boards.host.FocusBoard`. All multi-byte numbers are little-endian.

Frames
------
Request (host to board)::

    0xA5  cmd  len_lo len_hi  payload[len]  crc_lo crc_hi

Reply (board to host), exactly one per request, error or not::

    0x5A  cmd  status  len_lo len_hi  data[len]  crc_lo crc_hi

The CRC is CRC-16/CCITT-FALSE (:func:`frame_crc`; polynomial 0x1021, initial value 0xFFFF, no
reflection, no final XOR, check value 0x29B1; the same as ``CRC16_IBM_3740`` in
:mod:`amaranth.lib.crc.catalog`, which the bridge uses) over everything between the sync byte
and the CRC (request: ``cmd .. payload``; reply: ``cmd status len data``). ``len`` is at most
``max_len`` (the bridge's buffer, reported by PING; 256 on the boards). A reply echoes the request's
``cmd`` (0 when the error came before a command byte, e.g. a break on an idle line).

Commands (request payload -> reply data when the status is OK):

- ``PING`` (0x01): empty -> ``version, n_push, n_pull, max_len (2 bytes)``, then one byte per push
  port and one per pull port: that port's bytes per beat.
- ``READ_REG`` (0x02): ``addr`` -> the 32-bit register word (4 bytes).
- ``WRITE_REG`` (0x03): ``addr, word (4 bytes)`` -> empty.
- ``PUSH`` (0x04): ``port, beats`` -> ``count (2 bytes)``. Each beat is its stream payload packed
  into ``ceil(width / 8)`` little-endian bytes (bit 0 of the payload is bit 0 of the first byte).
  The beats go to input stream ``port`` in order. Each port has a one-beat output register: a beat
  waits there until the stream takes it. If the register does not empty for ``push_timeout``
  cycles, the bridge stops and replies ``TIMEOUT`` with ``count`` = beats handed over (the last of
  them may still be waiting in the register; it is delivered later, never dropped: the stream
  rules hold). A PUSH with no beats only reports that the previous ones have been handed over.
- ``PULL`` (0x05): ``port, count (2 bytes)`` -> up to ``count`` beats of output stream ``port``,
  packed like PUSH's. ``count`` is clamped to ``max_len // bytes_per_beat``. The bridge waits for
  each beat at most ``pull_timeout`` cycles, then replies with the beats it has (status OK; the
  reply's ``len`` says how many). ``count = 0`` returns at once with no data.

Errors (status, reply data empty except for PUSH's TIMEOUT):

- ``BAD_CRC``: the request's CRC does not match; nothing is executed.
- ``UNKNOWN_CMD``: a command byte not listed above (CRC good).
- ``OVERSIZE``: ``len > max_len``. Seen in the header: the bridge drops bytes until the line has
  been quiet for ``byte_timeout`` cycles, then replies (so the rest of the oversize frame is never
  mistaken for new frames).
- ``BAD_LENGTH``: the payload length does not fit the command (READ_REG 1, WRITE_REG 5, PULL 3,
  PUSH 1 + a whole number of beats, PING 0).
- ``BAD_PORT``: a PUSH/PULL port that does not exist.
- ``TIMEOUT``: a frame stopped for ``byte_timeout`` cycles before its CRC (truncated frame), or a
  PUSH timed out (see above).
- ``BREAK``: the line was held low for a whole character (a break); ``FRAMING``: a stop bit was 0;
  ``OVERRUN``: a byte arrived while the bridge was busy executing or replying (the host must wait
  for the reply). For these three the bridge drops bytes until the line has been high and quiet for
  ``byte_timeout`` cycles, then replies. A break is therefore also the way to resynchronize: send a
  break, read the BREAK reply, go on. (A break that starts in the middle of a character ends that
  character with a 0 stop bit: it is reported once, as FRAMING.)

Bytes outside a frame other than 0xA5 are ignored. After any error the bridge is idle again: the
next good frame works.
"""

import binascii
import enum
import struct

__all__ = ["SYNC", "REPLY_SYNC", "PROTOCOL_VERSION", "CRC_INIT", "frame_crc", "Cmd", "Status",
           "ProtocolError", "encode_request", "decode_request", "encode_reply", "decode_reply",
           "ReplyParser", "pack_beat", "unpack_beat", "beat_bytes", "request_bytes", "reply_bytes",
           "REQUEST_OVERHEAD", "REPLY_OVERHEAD", "stream_bytes"]

SYNC = 0xA5
REPLY_SYNC = 0x5A
PROTOCOL_VERSION = 1

#: Bytes of a request / reply frame around its payload / data.
REQUEST_OVERHEAD = 6
REPLY_OVERHEAD = 7


#: The CRC register's initial value (CRC-16/CCITT-FALSE).
CRC_INIT = 0xFFFF


def frame_crc(data):
    """CRC-16/CCITT-FALSE of ``data`` (bytes-like): ``binascii.crc_hqx(data, 0xFFFF)``."""
    return binascii.crc_hqx(bytes(data), CRC_INIT)


class Cmd(enum.IntEnum):
    PING = 0x01
    READ_REG = 0x02
    WRITE_REG = 0x03
    PUSH = 0x04
    PULL = 0x05


class Status(enum.IntEnum):
    OK = 0x00
    BAD_CRC = 0x01
    UNKNOWN_CMD = 0x02
    OVERSIZE = 0x03
    BAD_LENGTH = 0x04
    BAD_PORT = 0x05
    TIMEOUT = 0x06
    BREAK = 0x07
    FRAMING = 0x08
    OVERRUN = 0x09


class ProtocolError(ValueError):
    """A malformed frame (host side): bad sync byte, bad CRC, truncated."""


def _check_len(data, max_len=0xFFFF):
    if len(data) > max_len:
        raise ValueError(f"Frame payload of {len(data)} bytes is longer than {max_len}")


def encode_request(cmd, payload=b""):
    """The request frame for command ``cmd`` (an int 0..255) with ``payload`` (bytes)."""
    payload = bytes(payload)
    _check_len(payload)
    body = bytes([int(cmd)]) + struct.pack("<H", len(payload)) + payload
    return bytes([SYNC]) + body + struct.pack("<H", frame_crc(body))


def decode_request(frame):
    """``(cmd, payload)`` of a whole request frame; raises :class:`ProtocolError`."""
    frame = bytes(frame)
    if len(frame) < REQUEST_OVERHEAD or frame[0] != SYNC:
        raise ProtocolError(f"Not a request frame: {frame[:8].hex()}")
    (length,) = struct.unpack_from("<H", frame, 2)
    if len(frame) != REQUEST_OVERHEAD + length:
        raise ProtocolError(f"Request frame of {len(frame)} bytes does not match len {length}")
    body = frame[1:-2]
    if frame_crc(body) != struct.unpack_from("<H", frame, len(frame) - 2)[0]:
        raise ProtocolError("Request frame has a bad CRC")
    return frame[1], frame[4:-2]


def encode_reply(cmd, status, data=b""):
    """The reply frame echoing ``cmd`` with ``status`` and ``data``."""
    data = bytes(data)
    _check_len(data)
    body = bytes([int(cmd), int(status)]) + struct.pack("<H", len(data)) + data
    return bytes([REPLY_SYNC]) + body + struct.pack("<H", frame_crc(body))


def decode_reply(frame):
    """``(cmd, status, data)`` of a whole reply frame; ``status`` is a :class:`Status` when known,
    else the raw int. Raises :class:`ProtocolError`."""
    parser = ReplyParser()
    replies = parser.feed(frame)
    if len(replies) != 1 or parser.pending:
        raise ProtocolError(f"Not exactly one reply frame: {bytes(frame)[:16].hex()}")
    return replies[0]


class ReplyParser:
    """Incremental reply-frame parser: :meth:`feed` bytes, get whole replies.

    Bytes before a 0x5A sync byte are skipped (counted in ``skipped``); a frame with a bad CRC
    raises :class:`ProtocolError`.
    """

    def __init__(self):
        self._buf = bytearray()
        self.skipped = 0

    @property
    def pending(self):
        """Bytes received that do not make a whole reply yet."""
        return len(self._buf)

    def needed(self):
        """How many more bytes the current frame needs at least (the header first)."""
        if len(self._buf) < 5:
            return 5 - len(self._buf) + 2
        (length,) = struct.unpack_from("<H", self._buf, 3)
        return REPLY_OVERHEAD + length - len(self._buf)

    def feed(self, data):
        self._buf += bytes(data)
        replies = []
        while True:
            while self._buf and self._buf[0] != REPLY_SYNC:
                del self._buf[0]
                self.skipped += 1
            if len(self._buf) < 5:
                return replies
            (length,) = struct.unpack_from("<H", self._buf, 3)
            total = REPLY_OVERHEAD + length
            if len(self._buf) < total:
                return replies
            frame = bytes(self._buf[:total])
            del self._buf[:total]
            body = frame[1:-2]
            if frame_crc(body) != struct.unpack_from("<H", frame, total - 2)[0]:
                raise ProtocolError(f"Reply frame has a bad CRC: {frame[:16].hex()}")
            try:
                status = Status(frame[2])
            except ValueError:
                status = frame[2]
            replies.append((frame[1], status, frame[5:-2]))


def beat_bytes(width):
    """Bytes per beat of a ``width``-bit stream payload: ceil(width / 8) (at least 1)."""
    return max(1, (int(width) + 7) // 8)


def pack_beat(value, width):
    """The payload bits ``value`` (an int < 2**width) as ``beat_bytes(width)`` LE bytes."""
    value = int(value)
    if not 0 <= value < 1 << width:
        raise ValueError(f"Beat value {value:#x} does not fit {width} bits")
    return value.to_bytes(beat_bytes(width), "little")


def unpack_beat(data, width):
    """The payload bits of one packed beat (bits past ``width`` must be 0)."""
    value = int.from_bytes(bytes(data), "little")
    if value >> width:
        raise ProtocolError(f"Beat {bytes(data).hex()} has bits set past its width {width}")
    return value


def request_bytes(payload_len):
    """Bytes on the wire for a request with ``payload_len`` payload bytes."""
    return REQUEST_OVERHEAD + payload_len


def reply_bytes(data_len):
    """Bytes on the wire for a reply with ``data_len`` data bytes."""
    return REPLY_OVERHEAD + data_len


def stream_bytes(beats, nb, max_len, *, push):
    """Bytes on the wire (requests and replies) to move ``beats`` beats of ``nb`` bytes each with
    PUSH (``push=True``: as many beats per frame as fit in ``max_len - 1``) or PULL (``max_len //
    nb`` per frame, every reply full), no polling."""
    per = (max_len - 1) // nb if push else max_len // nb
    frames = -(-beats // per)
    if push:
        per_frame = request_bytes(1) + reply_bytes(2)
    else:
        per_frame = request_bytes(3) + reply_bytes(0)
    return frames * per_frame + beats * nb
