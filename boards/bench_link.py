"""Host-link throughput of the Focus board, measured in simulation: ``python -m boards.bench_link``.

What is simulated
-----------------
:class:`boards.bridge.FocusBoardCore` with ``FocusParams.board()`` and the bridge's default
timeouts (as :class:`boards.top.BoardTop` builds it), driven by the real host driver
:class:`boards.host.FocusBoard` through :class:`boards.sim_transport.SimTransport` (a bit-level
8N1 line). The only difference from the board is the UART divisor: the ULX3S runs at 25 MHz,
divisor ``uart_divisor(25e6) = 217`` clocks per bit; simulating that is about 50 times slower than
the default ``--divisor 4``.

What is measured, per job
-------------------------
- wire bytes in each direction: ``SimTransport.sent`` (bytes the host put on ``rx``) and
  ``SimTransport.received`` (bytes the host decoded from ``tx``), every request and reply of the
  job: register writes and reads, PUSH, PULL (polls included);
- simulated clock cycles from the job's first request to its last reply
  (``SimTransport.cycles``).

Conversion to seconds at ``baud`` (115200): with ``divisor`` clocks per bit, one bit time is
``divisor`` cycles and lasts ``1 / baud`` s, so **seconds = cycles / (divisor * baud)**. The time on
the wire alone is ``bytes * 10 / baud`` (8N1). This is exact for everything counted in bit times
(the characters, the bridge's timeouts, which default to multiples of the divisor) and pessimistic
for what takes a fixed number of clocks (the unit's compute, the bridge's turnaround): those
count ``217 / divisor`` times too long (at the defaults, divisor 4 gave rates 5 to 6 % below
``--divisor 217``, with the same bytes and requests; 2026-11-29). The simulated host reacts to
a reply within the 20-bit-time steps in which ``SimTransport.read`` advances the simulation (up
to 20 bit times per request are counted); a real host adds its USB-serial latency (milliseconds
per request with an FTDI chip), which neither this nor the model contains.

Rates: SEC in image tokens per second (``M`` per job); SIC in token-columns per second (kept
tokens times ``D / V`` sub-vector columns). The model is :func:`boards.host.token_rates`: steady
state, full frames, no register traffic and no polling, so an upper bound. The ``sic`` job runs
:meth:`FocusBoard.sic`, which first runs a one-row SEC job to give the unit the positions; the
``sic columns`` row is the SIC part of that call alone.

Every job's result is checked against :mod:`golden` (``AssertionError`` if it differs).
"""

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

import golden
from rtl.flow.cli_args import BadArgs, add_param_arguments, fail, params_from
from rtl.params import FocusParams

from .bridge import FocusBoardCore
from .host import FocusBoard, token_rates
from .protocol import Cmd, Status, reply_bytes, request_bytes
from .sim_transport import SimTransport
from .top import BOARDS
from .uart import BAUD_RATE, uart_divisor

__all__ = ["Request", "measure", "frame_bytes", "markdown", "main"]

#: The ULX3S's UART divisor (what the real board runs).
BOARD_DIVISOR = uart_divisor(BOARDS["ulx3s"].clock_hz)

#: The SIC job's settings (frame_stride + row_stride + 1 < window = 64 of the board).
SIC = {"frame_stride": 32, "row_stride": 8, "theta_q": 200}


class Request(NamedTuple):
    """One request of a job: its command, payload, the reply's status and data, and the cycles
    from the request being queued to the reply's end as the host saw it."""
    cmd: int
    payload: bytes
    status: int
    data: bytes
    cycles: int


class _LoggingBoard(FocusBoard):
    """:class:`FocusBoard` that logs every request as a :class:`Request` and marks where each
    ``_sic_columns`` call starts and ends (for the ``sic columns`` row)."""

    def __init__(self, transport, **kw):
        self.log = []
        self.marks = []
        super().__init__(transport, **kw)

    def request(self, cmd, payload=b""):
        start = self.transport.cycles
        status, data_ = super().request(cmd, payload)
        self.log.append(Request(int(cmd), bytes(payload), status, bytes(data_),
                                self.transport.cycles - start))
        return status, data_

    def _sic_columns(self, kept, **kw):
        start = _snapshot(self)
        out = super()._sic_columns(kept, **kw)
        self.marks.append((start, _snapshot(self)))
        return out


def _snapshot(board):
    t = board.transport
    return {"cycles": t.cycles, "sent": t.sent, "received": t.received, "log": len(board.log)}


def _row(board, job, units, unit, start, end, model, divisor, baud):
    cycles = end["cycles"] - start["cycles"]
    seconds = cycles / (divisor * baud)
    log = board.log[start["log"]:end["log"]]
    rate = units / seconds
    return {"job": job, "units": units, "unit": unit,
            "sent": end["sent"] - start["sent"], "received": end["received"] - start["received"],
            "requests": len(log), "log": log, "cycles": cycles, "seconds": seconds,
            "rate": rate, "model": model, "ratio": rate / model}


def _same(name, got, expected):
    for n, (g, e) in enumerate(zip(got, expected, strict=True)):
        if isinstance(e, list):
            ok = len(g) == len(e) and all(np.array_equal(x, y) for x, y in zip(g, e, strict=True))
        else:
            ok = np.array_equal(np.asarray(g), np.asarray(e))
        if not ok:
            raise AssertionError(f"{name}: result {n} of the board differs from golden")


def measure(params=None, *, rows=4, tokens=64, keep=16, columns=2, seed=0, divisor=4,
            baud=BAUD_RATE):
    """Run one ``sec`` job and one ``sic`` job on a simulated board; measure bytes and cycles.

    Parameters
    ----------
    params : FocusParams or None
        The board's parameters (``FocusParams.board()`` by default).
    rows, tokens, keep : int
        R score rows, M image tokens (at most ``params.tokens``), tokens kept by SEC.
    columns : int
        Sub-vector columns of each kept token in the SIC job (D = ``columns * params.dim``).
    seed : int
        Random scores and tokens.
    divisor : int
        UART clocks per bit in the simulation (the board's is :data:`BOARD_DIVISOR`).
    baud : int
        The rate the cycles are converted at (see the module doc).

    Returns
    -------
    list of dict
        One per row of the table: ``job``, ``units`` (tokens or token-columns) and ``unit``,
        ``sent`` (host to board bytes), ``received`` (board to host), ``requests``, ``log``
        (a :class:`Request` per request), ``cycles``, ``seconds``,
        ``rate`` (units per second), ``model`` (:func:`token_rates`), ``ratio``; the ``sec`` and
        ``sic`` rows also ``result``, the board's (equal to golden's).
    """
    p = FocusParams.board() if params is None else params
    if rows < 1 or columns < 1:
        raise ValueError(f"need rows >= 1 and columns >= 1: rows = {rows}, columns = {columns}")
    if not 1 <= keep <= tokens <= p.tokens:
        raise ValueError(f"need 1 <= keep <= tokens <= {p.tokens}: keep = {keep}, "
                         f"tokens = {tokens}")
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 1 << p.score_bits, size=(rows, tokens))
    kept = rng.integers(-8, 8, size=(keep, columns * p.dim))
    kept[1::4] = kept[0::4][:len(kept[1::4])]        # some exact repeats: matches to find

    core = FocusBoardCore(p, divisor)
    transport = SimTransport(core, divisor)
    board = _LoggingBoard(transport, params=p)
    max_len = board.info["max_len"]
    model_sec = token_rates(p, rows=rows, tokens=tokens, max_len=max_len, baud=baud)
    model_sic = token_rates(p, rows=rows, tokens=keep, max_len=max_len, baud=baud)

    start = _snapshot(board)
    result = board.sec(scores, keep)
    end = _snapshot(board)
    expected = golden.sec(scores, keep, schemes=p.offset_schemes)
    _same("sec", result, expected)
    out = [_row(board, "sec", tokens, "tokens", start, end, model_sec["sec_tokens_s"],
                divisor, baud)]
    out[0]["result"] = result

    positions = np.flatnonzero(expected[0])
    start = _snapshot(board)
    result = board.sic(kept, positions, **SIC, dim=p.dim)
    end = _snapshot(board)
    _same("sic", result, golden.sic(kept, positions, **SIC, dim=p.dim))
    units = keep * columns
    out.append(_row(board, "sic", units, "token-columns", start, end,
                    model_sic["sic_tokens_s"], divisor, baud))
    out[-1]["result"] = result
    out.append(_row(board, "sic columns", units, "token-columns", *board.marks[-1],
                    model_sic["sic_tokens_s"], divisor, baud))
    if transport.host_framing_errors:
        raise AssertionError(f"{transport.host_framing_errors} framing errors on the host side")
    return out


def frame_bytes(row):
    """``(host to board, board to host)`` bytes of the row's requests by the protocol's frame
    sizes (:func:`boards.protocol.request_bytes`, :func:`~boards.protocol.reply_bytes`)."""
    return (sum(request_bytes(len(r.payload)) for r in row["log"]),
            sum(reply_bytes(len(r.data)) for r in row["log"]))


def markdown(results, *, params, divisor, baud, title=None):
    """The results as a markdown table (with a header line saying what was run)."""
    lines = []
    if title:
        lines += [title, ""]
    lines += [(f"Simulated FocusBoardCore `{params.tag}`, UART divisor {divisor} in simulation, "
              f"cycles converted at {baud} baud 8N1: seconds = cycles / ({divisor} * {baud})."),
              "",
              ("Requests: all of the job's (PUSH replies with TIMEOUT: the port stopped taking "
              "beats). Line busy: time on the wire (bytes * 10 / baud) over the job's time."),
              "",
              ("| job | tokens | wire bytes host->board | board->host | requests (PUSH timeouts) "
              f"| cycles | s at {baud} | line busy | measured /s | model /s | measured/model |"),
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        timeouts = sum(q.cmd == Cmd.PUSH and q.status == Status.TIMEOUT for q in r["log"])
        busy = (r["sent"] + r["received"]) * 10 / baud / r["seconds"]
        lines.append(f"| {r['job']} | {r['units']} {r['unit']} | {r['sent']} | {r['received']} | "
                     f"{r['requests']} ({timeouts}) | {r['cycles']} | {r['seconds']:.4f} | "
                     f"{100 * busy:.0f} % | {r['rate']:.0f} | {r['model']:.0f} | "
                     f"{r['ratio']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m boards.bench_link",
                                     description="Host-link throughput of the Focus board, "
                                                 "measured in simulation (see the module doc).")
    parser.add_argument("--rows", type=int, default=4, help="R score rows (default 4)")
    parser.add_argument("--tokens", "-M", type=int, default=64, help="M image tokens (64)")
    parser.add_argument("--keep", type=int, default=16, help="tokens kept by SEC (16)")
    parser.add_argument("--columns", type=int, default=2,
                        help="sub-vector columns per kept token in SIC (2: D = 2 V)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--divisor", type=int, default=4,
                        help=f"UART clocks per bit in simulation (4; the ULX3S's is "
                             f"{BOARD_DIVISOR}, about 50 times slower to simulate)")
    add_param_arguments(parser, preset_default="board")
    parser.add_argument("--out", type=Path, default=Path("build/bench/link.md"),
                        help="markdown output (build/bench/link.md)")
    args = parser.parse_args(argv)
    try:
        params = params_from(args.preset, args.set)
        results = measure(params, rows=args.rows, tokens=args.tokens, keep=args.keep,
                          columns=args.columns, seed=args.seed, divisor=args.divisor)
    except (BadArgs, ValueError, TypeError) as e:
        return fail(e, 2)
    title = (f"# Host link throughput (M = {args.tokens}, R = {args.rows}, keep = {args.keep}, "
             f"D = {args.columns} x V = {params.dim}, seed {args.seed})")
    text = markdown(results, params=params, divisor=args.divisor, baud=BAUD_RATE, title=title)
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
