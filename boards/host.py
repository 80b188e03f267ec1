"""The host driver of the Focus board: :class:`FocusBoard`, over a real or a simulated UART.

Transports (anything with ``write``, ``read``, ``send_break``, ``close`` and ``default_timeout``):

- :class:`SerialTransport`: a serial port through pyserial, 8N1 at :data:`boards.uart.BAUD_RATE`.
- :class:`boards.sim_transport.SimTransport`: an Amaranth simulation of a design with
  ``rx``/``tx`` ports (normally :class:`boards.bridge.FocusBoardCore`), driven bit by bit. It is
  in its own module so that this driver imports no simulator.
- :class:`boards.tb_board.CocotbTransport`: the same bit-level line in cocotb, for the emitted
  Verilog on Icarus or Verilator (:func:`boards.tb_board.run_board_job`).

:class:`BridgeClient` has the protocol's low-level commands (:mod:`boards.protocol`): ``ping``,
``read_reg``, ``write_reg``, ``push``, ``pull``. :class:`FocusBoard` adds ``sec``, ``sic`` and
``focus`` with the signatures and results of :mod:`golden`.

Example (on a real board; see the README)::

    from .host import FocusBoard
    board = FocusBoard("/dev/ttyUSB1")
    mask, words, nbits = board.sec(scores, keep=16)
"""

import time

import numpy as np
from amaranth.hdl import Shape
from amaranth.lib import data

from golden.block_match import check_columns, check_config, check_positions
from golden.focus import check_focus_inputs
from golden.offsets import check_order, check_word_bits
from golden.sec import MODES, check_keep, check_scores
from rtl.codecs import decode_beats, mask_from_beats, score_beats, token_beats, unpack
from rtl.layouts import mask_beat_layout, offset_word_layout, score_beat_layout
from rtl.params import FocusParams, check_scores_fit
from rtl.sic.block_matcher import match_output_layout
from rtl.top.focus_unit import token_layout
from rtl.top.registers import ERROR_SHIFT, Ctrl, ErrorFlag, Reg

from .bridge import FOCUS_PULL_PORTS, FOCUS_PUSH_PORTS
from .protocol import (
    PROTOCOL_VERSION,
    Cmd,
    ProtocolError,
    ReplyParser,
    Status,
    beat_bytes,
    encode_request,
    stream_bytes,
)
from .uart import BAUD_RATE

__all__ = ["SerialTransport", "BoardError", "BridgeClient", "FocusBoard", "token_rates"]


# ---- transports ---------------------------------------------------------------------------------

class SerialTransport:
    """A serial port (pyserial), 8N1.

    Parameters
    ----------
    port : str
        Device name, e.g. ``/dev/ttyUSB1`` (the iCEBreaker's second FTDI channel) or ``COM5``.
    baud : int
    """

    def __init__(self, port, baud=BAUD_RATE):
        import serial

        self.baud = baud
        self.default_timeout = 2.0
        # serial_for_url also takes pyserial URLs such as "loop://" (a loopback, for tests).
        self._port = serial.serial_for_url(port, baudrate=baud, bytesize=8, parity="N",
                                           stopbits=1, timeout=0.05)

    def write(self, data):
        self._port.write(bytes(data))
        self._port.flush()

    def read(self, n, timeout):
        """Up to ``n`` bytes; fewer when ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        out = bytearray()
        while len(out) < n and time.monotonic() < deadline:
            out += self._port.read(n - len(out))
        return bytes(out)

    def send_break(self, duration=0.01):
        self._port.send_break(duration)

    def close(self):
        self._port.close()


# ---- the protocol client ----------------------------------------------------------------------

class BoardError(RuntimeError):
    """The board replied with an error status."""

    def __init__(self, cmd, status, data=b""):
        name = status.name if isinstance(status, Status) else f"{status:#04x}"
        super().__init__(f"board replied {name} to command {cmd:#04x}")
        self.cmd = cmd
        self.status = status
        self.data = bytes(data)


def _layout_width(layout):
    return Shape.cast(layout).width if layout is not None else None


class BridgeClient:
    """The protocol's low-level commands (:mod:`boards.protocol`) over a transport.

    Parameters
    ----------
    transport : transport object, or str (a serial port name for :class:`SerialTransport`)
    push_layouts, pull_layouts : sequence of layouts or int widths
        The payload shapes of the bridge's ports: beats are given and returned as dicts/lists
        (packed with the layout) for ``data.Layout`` ports, as raw ints for int widths.
    names : (push names, pull names) or None
        Port names usable instead of port numbers.
    timeout : float or None
        Seconds to wait for a reply (the transport's default when None).
    """

    def __init__(self, transport, *, push_layouts=(), pull_layouts=(), names=None, timeout=None):
        if isinstance(transport, str):
            transport = SerialTransport(transport)
        self.transport = transport
        self.timeout = transport.default_timeout if timeout is None else timeout
        self._push = list(push_layouts)
        self._pull = list(pull_layouts)
        self._names = names or ((), ())
        self._parser = ReplyParser()
        self._info = None
        #: Requests sent, per command code.
        self.requests = {}

    # -- frames --

    def request(self, cmd, payload=b""):
        """Send one request and return its reply ``(status, data)`` (no check of the status)."""
        self.requests[int(cmd)] = self.requests.get(int(cmd), 0) + 1
        self.transport.write(encode_request(cmd, payload))
        return self.reply(cmd)

    def reply(self, cmd=None):
        """The next reply's ``(status, data)``; raises :class:`ProtocolError` on a bad reply or
        a timeout."""
        replies = []
        while not replies:
            chunk = self.transport.read(self._parser.needed(), self.timeout)
            if not chunk:
                raise ProtocolError(f"no reply from the board within {self.timeout} s")
            replies = self._parser.feed(chunk)
        if len(replies) != 1 or self._parser.pending:
            raise ProtocolError(f"unexpected extra reply bytes: {replies}")
        rcmd, status, data = replies[0]
        if cmd is not None and rcmd != int(cmd):
            raise ProtocolError(f"reply to command {rcmd:#04x}, expected {int(cmd):#04x}")
        return status, data

    def command(self, cmd, payload=b""):
        """Send a request; return the reply data, or raise :class:`BoardError`."""
        status, data = self.request(cmd, payload)
        if status != Status.OK:
            raise BoardError(int(cmd), status, data)
        return data

    # -- commands --

    def ping(self):
        """``{version, push: [bytes per beat], pull: [...], max_len}``."""
        d = self.command(Cmd.PING)
        n_push, n_pull = d[1], d[2]
        info = {"version": d[0], "max_len": d[3] | d[4] << 8,
                "push": list(d[5:5 + n_push]), "pull": list(d[5 + n_push:5 + n_push + n_pull])}
        if info["version"] != PROTOCOL_VERSION:
            raise ProtocolError(f"board speaks protocol version {info['version']}, this host "
                                f"{PROTOCOL_VERSION}")
        self._info = info
        return info

    @property
    def info(self):
        return self._info if self._info is not None else self.ping()

    def read_reg(self, addr):
        return int.from_bytes(self.command(Cmd.READ_REG, bytes([int(addr)])), "little")

    def write_reg(self, addr, value):
        self.command(Cmd.WRITE_REG, bytes([int(addr)]) + (int(value) & 0xFFFFFFFF).to_bytes(
            4, "little"))

    def _port(self, port, names, layouts):
        if isinstance(port, str):
            port = names.index(port)
        layout = layouts[port] if port < len(layouts) else None
        return port, layout

    def _pack(self, layout, beat, nb):
        if isinstance(layout, data.Layout) and not isinstance(beat, int):
            bits = layout.const(beat).as_bits()
        else:
            bits = int(beat)
        return bits.to_bytes(nb, "little")

    def _unpack(self, layout, raw):
        bits = int.from_bytes(raw, "little")
        if isinstance(layout, data.Layout):
            return unpack(data.Const(layout, bits))
        return bits

    def push(self, port, beats):
        """Push ``beats`` into push port ``port`` (number or name), in frames of as many beats as
        fit. Returns how many beats were handed over: fewer than given when the port stopped
        taking beats (a PUSH TIMEOUT: flow control, not an error; push the rest later)."""
        port, layout = self._port(port, self._names[0], self._push)
        nb = self.info["push"][port]
        per_frame = (self.info["max_len"] - 1) // nb
        beats = list(beats)
        done = 0
        while done < len(beats):
            chunk = beats[done:done + per_frame]
            payload = bytes([port]) + b"".join(self._pack(layout, b, nb) for b in chunk)
            status, data_ = self.request(Cmd.PUSH, payload)
            if status == Status.TIMEOUT:
                return done + int.from_bytes(data_, "little")
            if status != Status.OK:
                raise BoardError(Cmd.PUSH, status, data_)
            done += len(chunk)
        return done

    def pull(self, port, count):
        """Up to ``count`` beats from pull port ``port`` (one request: at most
        ``max_len // bytes_per_beat``): what the stream delivered before it stayed idle for the
        bridge's pull timeout."""
        port, layout = self._port(port, self._names[1], self._pull)
        nb = self.info["pull"][port]
        data_ = self.command(Cmd.PULL, bytes([port]) + int(count).to_bytes(2, "little"))
        return [self._unpack(layout, data_[i:i + nb]) for i in range(0, len(data_), nb)]

    def resync(self):
        """Send a break and read the bridge's BREAK reply: back to a known state."""
        self.transport.send_break()
        status, _ = self.reply()
        return status

    def close(self):
        self.transport.close()


# ---- the Focus board --------------------------------------------------------------------------

def _repack(words, nbits, from_bits, to_bits):
    """Offset-code words of ``from_bits`` repacked into ``to_bits`` words (MSB first)."""
    total = 0
    for w in words:
        total = total << from_bits | int(w)
    total >>= len(words) * from_bits - nbits if words else 0
    n = -(-nbits // to_bits)
    total <<= n * to_bits - nbits
    return np.array([(total >> (to_bits * (n - 1 - i))) & ((1 << to_bits) - 1) for i in range(n)],
                    dtype=np.uint64)


class FocusBoard(BridgeClient):
    """The Focus unit on a board (or in simulation), with :mod:`golden`'s API.

    Parameters
    ----------
    port_or_transport : str or transport
        A serial port name, or a transport (:class:`boards.sim_transport.SimTransport` for a
        simulated board).
    params : FocusParams or None
        The board's build parameters (``FocusParams.board()`` by default); checked against the
        PING reply.
    timeout : float or None
        Seconds to wait for each reply.
    max_polls : int
        How many PULL rounds in a row may bring nothing before a job is declared stuck.
    """

    def __init__(self, port_or_transport, *, params=None, timeout=None, max_polls=200):

        p = FocusParams.board() if params is None else params
        self.params = p
        self.max_polls = max_polls
        super().__init__(port_or_transport, timeout=timeout,
                         push_layouts=[score_beat_layout(p), token_layout(p)],
                         pull_layouts=[mask_beat_layout(p), offset_word_layout(p),
                                       match_output_layout(p)],
                         names=(FOCUS_PUSH_PORTS, FOCUS_PULL_PORTS))
        try:
            info = self.ping()
        except (BoardError, ProtocolError):
            # The bridge may hold part of an earlier frame (a host that died mid-request): a
            # break puts it back to idle, then ping again.
            self._parser = ReplyParser()
            self.resync()
            info = self.ping()
        want_push = [beat_bytes(_layout_width(x)) for x in self._push]
        want_pull = [beat_bytes(_layout_width(x)) for x in self._pull]
        #: Whether the board's unit has SIC (an iCEBreaker's is SEC only: its bridge has only
        #: the SEC ports).
        self.has_sic = (info["push"], info["pull"]) == (want_push, want_pull)
        if not self.has_sic and (info["push"], info["pull"]) != (want_push[:1], want_pull[:2]):
            raise ProtocolError(f"the board's ports {info} do not match params {p.tag}")

    # -- helpers --

    def _reg(self, name):
        return Reg[name]

    def status(self):
        """The unit's ``STATUS`` register."""
        return self.read_reg(self._reg("STATUS"))

    def _check_errors(self, what):
        status = self.status()
        flags = ErrorFlag(status >> ERROR_SHIFT & 0xFF)
        if flags:
            self.write_reg(self._reg("CTRL"), 4)     # CLEAR: the next job starts clean
            raise RuntimeError(f"the Focus unit flagged {flags!r} during {what}")

    def _abort(self):
        """End the running job (``CTRL.ABORT``) and clear the ``ABORTED`` flag it sets."""
        self.write_reg(self._reg("CTRL"), Ctrl.ABORT)
        self.write_reg(self._reg("CTRL"), Ctrl.CLEAR)

    def _drain(self, pulls, pushes=(), paced=None):
        """Push ``pushes`` ((port, beats) pairs) and pull every port in ``pulls`` until a beat
        with ``last`` arrived on each (ports with ``count`` 0 are done at once).

        ``pulls``: ``{port: expected count or None}``. ``paced``: ``{pull port: push port}``
        where each beat pushed gives at least one pulled beat (SIC: a map beat per token); such
        a port is pulled for the beats owed, so that the bridge replies as soon as they are
        there instead of waiting its pull timeout for a full frame. Returns ``{port: beats}``."""
        paced = paced or {}
        pushed = {port: 0 for port, _ in pushes}
        got = {port: [] for port in pulls}
        done = {port: count == 0 for port, count in pulls.items()}
        pending = {port: list(beats) for port, beats in pushes}
        # Beats to offer per PUSH: after a PUSH that timed out having taken n beats, offer n at
        # a time (the unit takes about that many before its output must be pulled), so that the
        # rest is not sent, refused and sent again; double it after each PUSH taken whole.
        window = {port: None for port in pending}
        idle = 0
        while not all(done.values()) or any(pending.values()):
            progress = False
            for port, beats in pending.items():
                if beats:
                    offer = beats[:window[port]] if window[port] else beats
                    n = self.push(port, offer)
                    pushed[port] += n
                    pending[port] = beats[n:]
                    progress |= n > 0
                    if n < len(offer):
                        window[port] = max(1, n)
                    elif window[port]:
                        window[port] *= 2
            for port in pulls:
                if done[port]:
                    continue
                nb = self.info["pull"][FOCUS_PULL_PORTS.index(port)]
                count = self.info["max_len"] // nb
                owed = pushed[paced[port]] - len(got[port]) if port in paced else 0
                new = self.pull(port, min(count, owed) if owed > 0 else count)
                got[port] += new
                progress |= bool(new)
                if new and new[-1]["last"]:
                    done[port] = True
            idle = 0 if progress else idle + 1
            if idle > self.max_polls:
                self._check_errors("a job")
                self._abort()
                raise RuntimeError(f"the Focus unit stopped: {idle} polls without progress "
                                   f"(received { {k: len(v) for k, v in got.items()} }); the job "
                                   f"was aborted, the board is idle")
        return got

    def _sec_job(self, a, keep, mode, order):
        p = self.params
        R, M = a.shape
        for name, value in (("SEC_M", M), ("SEC_R", R), ("SEC_KEEP", min(keep, M)),
                            ("SEC_MODE", int(mode == "temporal")),
                            ("SEC_ORDER", 8 if order is None else order)):
            self.write_reg(self._reg(name), value)
        self.write_reg(self._reg("CTRL"), 1)
        got = self._drain({"mask": None, "code": None},
                          [("scores", score_beats(a, mode, p.lanes))])
        self._check_errors("an SEC job")
        return got

    def _check_sec_inputs(self, scores, keep, mode, order, word_bits):
        # golden's order of checks: mode, scores, keep, order, word_bits
        if mode not in MODES:
            raise ValueError(f"mode = {mode!r} is not allowed: it must be 'spatial' or 'temporal'")
        a = check_scores(scores)
        keep = check_keep(keep)
        check_order(order)
        check_word_bits(word_bits)
        p = self.params
        R, M = a.shape
        check_scores_fit(p, a)
        if R > 0xFFFF:
            raise ValueError(f"R = {R} > 65535 rows: the board's SEC_R register limit")
        return a, keep

    def _code(self, beats, word_bits):
        words = [b["word"] for b in beats]
        nbits = beats[-1]["nbits"] if beats else 0
        return _repack(words, nbits, self.params.word_bits, word_bits), int(nbits)

    # -- the golden API --

    def sec(self, scores, keep, *, mode="spatial", order=None, word_bits=32):
        """:func:`golden.sec` on the board: ``(mask, words, nbits)``. The board's code words
        (``params.word_bits``) are repacked into ``word_bits`` words on the host. The code is
        the one of the board's encoder: on an iCEBreaker (``offset_schemes =
        "kept-exp-golomb"``, :func:`boards.top.board_params`) the adaptive code is
        ``golden.sec(..., schemes="kept-exp-golomb")``'s."""
        a, keep = self._check_sec_inputs(scores, keep, mode, order, word_bits)
        got = self._sec_job(a, keep, mode, order)
        mask = mask_from_beats(got["mask"], a.shape[1], self.params.lanes)
        words, nbits = self._code(got["code"], word_bits)
        return mask, words, nbits

    def _check_sic_board(self, n, dim, theta_bits, tile, window, frame_stride, row_stride):
        p = self.params
        if dim != p.dim:
            raise ValueError(f"dim = {dim} does not match the board's dim = {p.dim}")
        if theta_bits != p.theta_bits:
            raise ValueError(f"theta_bits = {theta_bits} does not match the board's "
                             f"theta_bits = {p.theta_bits}")
        if frame_stride + row_stride + 1 >= p.window:
            raise ValueError(f"frame_stride + row_stride + 1 = {frame_stride + row_stride + 1} "
                             f">= the board's window = {p.window}")
        if n > min(tile, p.tile):
            raise ValueError(f"{n} tokens do not fit one tile (tile = {tile}, the board's "
                             f"tile = {p.tile}): the board cannot split them the same way")

    def _check_elements(self, orig):
        low, high = -self.params.elem_max, self.params.elem_max - 1
        if orig.size and (int(orig.min()) < low or int(orig.max()) > high):
            raise ValueError(f"tokens has elements outside the signed {self.params.elem_bits}-bit "
                             f"range of the board: min {orig.min()}, max {orig.max()}")

    def _sic_columns(self, kept, *, frame_stride, row_stride, theta_q, representative):
        p = self.params
        self.write_reg(self._reg("THETA_ADDR"), 0)
        self.write_reg(self._reg("THETA_DATA"), theta_q)
        for name, value in (("SIC_FRAME_STRIDE", frame_stride), ("SIC_ROW_STRIDE", row_stride),
                            ("SIC_LAYER", 0), ("SIC_REPR", int(representative == "mean"))):
            self.write_reg(self._reg(name), value)
        n, columns = len(kept), kept.shape[1] // p.dim
        maps, uniques = np.zeros((n, columns), np.int64), []
        for column in range(columns):
            self.write_reg(self._reg("CTRL"), 2)
            if n:
                got = self._drain({"sic": None},
                                  [("tokens", token_beats(kept, column, p.dim))],
                                  paced={"sic": "tokens"})["sic"]
            else:
                got = []
            self._check_errors("a SIC job")
            mp, u = decode_beats(got, p.dim, representative == "mean")
            if len(mp) != n:
                raise RuntimeError(f"column {column}: the board sent {len(mp)} map entries for "
                                   f"{n} tokens")
            maps[:, column] = mp
            uniques.append(u)
        return maps, uniques

    def _require_sic(self, what):
        if not self.has_sic:
            raise RuntimeError(f"{what}: this board's Focus unit was built without SIC (SEC "
                               f"only, as on the iCEBreaker): use a board with SIC (ULX3S)")

    def sic(self, tokens, positions, *, frame_stride, row_stride, theta_q, theta_bits=8,
            tile=1024, window=256, representative="first", dim=32):
        """:func:`golden.sic` on the board: ``(maps, uniques)``.

        The board's SIC takes its positions from the offset code of the last SEC job, so this
        first runs an SEC job whose keep mask is exactly ``positions`` (one score row: 1 at the
        positions, 0 elsewhere; keep = their count). Positions must therefore be below the
        board's ``tokens``, and the tokens must fit one tile. Zero tokens give golden's empty
        result without starting a job. ``RuntimeError`` on a board built without SIC."""
        self._require_sic("sic")
        check_config(frame_stride, row_stride, theta_q, theta_bits, tile, window, representative)
        orig, dim, columns = check_columns(tokens, dim)
        pos = check_positions(positions, len(orig))
        self._check_sic_board(len(orig), dim, theta_bits, tile, window, frame_stride, row_stride)
        self._check_elements(orig)
        if len(pos) and int(pos[-1]) >= self.params.tokens:
            raise ValueError(f"position {int(pos[-1])} >= the board's tokens = "
                             f"{self.params.tokens}")
        if not len(pos):
            # golden's answer is empty; the unit has no job of zero tokens to run (SEC needs
            # M >= 1, and a SIC job without a stored code is refused: COMMAND), so none starts.
            return (np.zeros((0, columns), np.int64),
                    [orig[:0, :dim].copy() for _ in range(columns)])
        M = int(pos[-1]) + 1
        a = np.zeros((1, M), dtype=np.uint64)
        a[0, pos] = 1
        self._sec_job(a, len(pos), "spatial", None)
        maps, uniques = self._sic_columns(orig, frame_stride=frame_stride, row_stride=row_stride,
                                          theta_q=theta_q, representative=representative)
        return maps, [u.astype(orig.dtype) for u in uniques]

    def focus(self, scores, tokens, keep, *, mode="spatial", order=None, word_bits=32,
              frame_stride, row_stride, theta_q, theta_bits=8, tile=1024, window=256,
              representative="first", dim=32):
        """:func:`golden.focus` on the board: ``(mask, words, nbits, maps, uniques)``.
        ``RuntimeError`` on a board built without SIC."""
        self._require_sic("focus")
        a, orig, _ = check_focus_inputs(scores, tokens, frame_stride=frame_stride,
                                        row_stride=row_stride, theta_q=theta_q,
                                        theta_bits=theta_bits, tile=tile, window=window,
                                        representative=representative, dim=dim)
        a, keep = self._check_sec_inputs(a, keep, mode, order, word_bits)
        self._check_elements(orig)
        self._check_sic_board(min(keep, a.shape[1]), dim, theta_bits, tile, window,
                              frame_stride, row_stride)
        got = self._sec_job(a, keep, mode, order)
        mask = mask_from_beats(got["mask"], a.shape[1], self.params.lanes)
        words, nbits = self._code(got["code"], word_bits)
        orig = np.asarray(orig)
        maps, uniques = self._sic_columns(orig[mask], frame_stride=frame_stride,
                                          row_stride=row_stride, theta_q=theta_q,
                                          representative=representative)
        return mask, words, nbits, maps, [u.astype(orig.dtype) for u in uniques]


def token_rates(params=None, *, rows=16, tokens=None, max_len=256, baud=BAUD_RATE):
    """Host-side throughput over the UART, from the protocol (steady state, full frames, no
    polling or register traffic): bytes on the wire per token and tokens per second.

    - SEC: per image token, its ``rows`` scores (spatial, ``lanes`` per beat of
      ``ceil(lanes * score_bits / 8)`` bytes) plus its share of the mask beats; the offset code
      is a few bits per token and is left out.
    - SIC: per kept token and sub-vector column, its ``tokens`` beat pushed and its ``sic`` beat
      pulled (``first``: one beat per token).

    Returns a dict: ``sec_bytes``, ``sic_bytes`` (per token / token-column), ``sec_tokens_s``,
    ``sic_tokens_s`` (token-columns per second), ``bytes_s`` (baud / 10, 8N1).
    """

    p = FocusParams.board() if params is None else params
    M = p.tokens if tokens is None else tokens
    nb_score = beat_bytes(Shape.cast(score_beat_layout(p)).width)
    nb_mask = beat_bytes(Shape.cast(mask_beat_layout(p)).width)
    nb_token = beat_bytes(Shape.cast(token_layout(p)).width)
    nb_sic = beat_bytes(Shape.cast(match_output_layout(p)).width)
    per_row = -(-M // p.lanes)
    sec = (stream_bytes(rows * per_row, nb_score, max_len, push=True)
           + stream_bytes(per_row, nb_mask, max_len, push=False)) / M
    sic = (stream_bytes(M, nb_token, max_len, push=True)
           + stream_bytes(M, nb_sic, max_len, push=False)) / M
    rate = baud / 10
    return {"sec_bytes": sec, "sic_bytes": sic, "sec_tokens_s": rate / sec,
            "sic_tokens_s": rate / sic, "bytes_s": rate,
            "beat_bytes": {"scores": nb_score, "mask": nb_mask, "tokens": nb_token,
                           "sic": nb_sic}}
