"""Board tops: the Focus unit on an iCEBreaker or a ULX3S, driven over the board's USB UART.

:class:`BoardTop` wraps :class:`boards.bridge.FocusBoardCore` (``FocusUnit(FocusParams.board())``
behind the :class:`boards.bridge.UARTBridge`, 8N1 at :data:`boards.uart.BAUD_RATE`) with the
board's clock, a reset, the UART pins and status LEDs; on a board whose ``sic`` is False the unit
is built without SIC (``FocusUnit(..., sic=False)``). :class:`Blinky` is a check of a board and
its programmer that needs none of the core (``focus-rtl board flash --design blinky``).

Boards (:data:`BOARDS`)
-----------------------
``icebreaker``
    1BitSquared iCEBreaker (iCE40UP5K-SG48), 12 MHz oscillator, the FT2232H's second channel as
    the UART. Bitstream ``.bin``, programmed with ``iceprog`` (or ``openFPGALoader -b
    ice40_generic``). **SEC only**: the whole unit does not fit the UP5K (with SIC, 4 lanes: 16 786
    of 5 280 logic cells and 38 of 8 DSPs; the smallest shape tried, ``tokens=128 lanes=1 dim=1
    comparators=1 window=16 tile=64``, still 8 313), so the iCEBreaker's unit is built with
    ``sic=False``, and with ``offset_schemes = "kept-exp-golomb"`` (:func:`board_params`: the
    offset encoder has the 8 kept-set Exp-Golomb schemes, not 32): 4 860 of 5 280 logic cells
    (92 %) with the bridge, Fmax 32.9 MHz at its 12 MHz clock (``focus-rtl board build --board
    icebreaker`` on ``e3c9e1b``); with all 32 schemes 6 240, which does not fit. SIC cannot
    fit beside it whatever its comparator: the offset decoder it needs is 2 457 LUTs alone.
``ulx3s``
    Radiona ULX3S with the LFE5U-85F (``ulx3s`` is the 85F; the 12F/25F/45F are ``ulx3s-12f``,
    ``ulx3s-25f``, ``ulx3s-45f``), 25 MHz oscillator, the FT231X as the UART. Bitstream ``.bit``,
    programmed with ``openFPGALoader -b ulx3s`` (into SRAM). The Focus unit with
    ``FocusParams.board()`` takes about 20 100 LUTs and no DSP block (measured with ``focus-rtl
    synth --preset board --block focus_unit --target ecp5``): more than the 12F's 12 k LUTs, 84 %
    of the 25F's 24 k before the bridge, room on the 45F and 85F.

The core runs directly on the board oscillator (no PLL): 12 MHz and 25 MHz are both fine for a
115200-baud UART (divisor 104 and 217) and nothing in the design needs a faster clock.

LEDs
----
A lit LED means its condition holds. "busy" is stretched to at least 1/8 s so that a short job
shows.

========= =========================================== ===================================
meaning   iCEBreaker                                  ULX3S
========= =========================================== ===================================
idle      ``led_g`` (green, main board)               LED 0
busy      ``led_g`` #1 (break-off PMOD, green LED 2)  LED 1
error     ``led_r`` (red, main board) and ``led_r``   LED 2
          #1 (break-off PMOD, red centre LED 1)
heartbeat ``led_g`` #2 (break-off PMOD, green LED 3)  LED 7
========= =========================================== ===================================

idle: no job runs, no request is being handled, and no error is flagged. error: a sticky error
flag of the Focus unit is set (cleared by a ``CTRL.CLEAR`` write), or the bridge's last reply was
an error (cleared by the next good reply). heartbeat: blinks at about 1.5 Hz (12 MHz / 2**23;
25 MHz / 2**24): the bitstream is loaded and the clock runs.

Reset: a power-on reset of 4096 cycles (the iCE40's block RAMs need a few microseconds after
configuration), and the user button (iCEBreaker: the button on the main board; ULX3S: FIRE1,
amaranth-boards ``button`` 0) while pressed.
"""

import copy
import importlib
from dataclasses import dataclass

from amaranth.build import Clock
from amaranth.hdl import ClockDomain, ClockSignal, Module, ResetSignal, Signal
from amaranth.lib import io, wiring
from amaranth.lib.cdc import ResetSynchronizer

from rtl.params import FocusParams

from .bridge import FocusBoardCore
from .uart import uart_divisor

__all__ = ["BOARDS", "Board", "BoardTop", "Blinky", "DESIGNS", "board_params", "make_platform",
           "make_top"]


@dataclass(frozen=True)
class Board:
    """What the build and flash commands need to know about a board."""

    name: str
    description: str
    family: str              # "ice40" or "ecp5"
    platform_module: str     # amaranth_boards module
    platform_class: str
    clock_hz: float          # the oscillator; the UART divisor is computed from it
    bitstream_ext: str       # "bin" or "bit"
    programmers: tuple       # candidate commands (argv without the bitstream), first found wins
    sic: bool = True         # False: the FocusUnit is built without SIC (see the module doc)
    offset_schemes: str = "all"     # FocusParams.offset_schemes of the board's build


BOARDS = {
    "icebreaker": Board("icebreaker", "iCEBreaker (iCE40UP5K-SG48)", "ice40",
                        "amaranth_boards.icebreaker", "ICEBreakerPlatform", 12e6, "bin",
                        (("iceprog",), ("openFPGALoader", "-b", "ice40_generic")),
                        sic=False, offset_schemes="kept-exp-golomb"),
    "ulx3s": Board("ulx3s", "ULX3S (LFE5U-85F-6BG381)", "ecp5",
                   "amaranth_boards.ulx3s", "ULX3S_85F_Platform", 25e6, "bit",
                   (("openFPGALoader", "-b", "ulx3s"),)),
    **{f"ulx3s-{size}": Board(f"ulx3s-{size}", f"ULX3S (LFE5U-{size.upper()}-6BG381)", "ecp5",
                              "amaranth_boards.ulx3s", f"ULX3S_{size.upper()}_Platform", 25e6,
                              "bit", (("openFPGALoader", "-b", "ulx3s"),))
       for size in ("12f", "25f", "45f")},
}

def board_params(board, overrides=()):
    """The parameters ``board`` (a name in :data:`BOARDS`) is built with: ``FocusParams.board()``
    with the board's ``offset_schemes``, then the ``"field=value"`` ``overrides`` (``--set``;
    ``ValueError`` or ``TypeError`` for a bad one)."""
    spec = BOARDS[board]
    return FocusParams.board().replace(offset_schemes=spec.offset_schemes) \
        .with_overrides(list(overrides or []))


#: Power-on reset length, cycles.
POR_CYCLES = 4096

#: The "busy" LED stays lit at least this long after the last busy cycle, seconds (about).
_STRETCH_SECONDS = 0.125


def make_platform(board, freq_hz=None):
    """The amaranth-boards platform of ``board`` (a name in :data:`BOARDS`).

    ``freq_hz`` replaces the clock constraint given to nextpnr (not the clock on the board, and
    not the UART divisor): a way to see how much slack the design has, or to force a timing
    failure in a test.
    """
    spec = BOARDS[board]
    platform = getattr(importlib.import_module(spec.platform_module), spec.platform_class)()
    if spec.family == "ice40":
        platform.add_resources(platform.break_off_pmod)
    if freq_hz is not None:
        # A copy: the Resource objects are shared by every instance of the platform class.
        key = (platform.default_clk, 0)
        platform.resources[key] = copy.copy(platform.resources[key])
        platform.resources[key].clock = Clock(float(freq_hz))
    return platform


class _BoardBase(wiring.Component):
    """Clock, reset and LEDs shared by :class:`BoardTop` and :class:`Blinky`."""

    def __init__(self, board):
        if board not in BOARDS:
            raise ValueError(f"Unknown board {board!r}: boards are {', '.join(BOARDS)}")
        self.board = BOARDS[board]
        super().__init__({})

    def _clock_and_reset(self, m, platform):
        """The ``sync`` domain on the board oscillator, with power-on and button reset."""
        m.submodules.clk_buf = clk_buf = io.Buffer("i", platform.request(platform.default_clk,
                                                                         0, dir="-"))
        m.domains.sync = ClockDomain("sync")
        m.domains.por = ClockDomain("por", reset_less=True, local=True)
        m.d.comb += [ClockSignal("sync").eq(clk_buf.i), ClockSignal("por").eq(clk_buf.i)]
        por = Signal(range(POR_CYCLES + 1))
        with m.If(por != POR_CYCLES):
            m.d.por += por.eq(por + 1)
        button = platform.request("button", 0, dir="-")
        m.submodules.button_buf = button_buf = io.Buffer("i", button)
        m.submodules.reset_sync = ResetSynchronizer((por != POR_CYCLES) | button_buf.i,
                                                    domain="sync")

    @staticmethod
    def _output(m, platform, name, number):
        """The output signal of LED resource ``name`` #``number`` (its inversion, if any, is
        applied by the buffer)."""
        m.submodules[f"{name}_{number}_buf"] = buf = io.Buffer(
            "o", platform.request(name, number, dir="-"))
        return buf.o

    def _leds(self, m, platform):
        """``{"idle": [...], "busy": [...], "error": [...], "heartbeat": [...]}``: the signals
        that light each LED."""
        out = lambda name, number: self._output(m, platform, name, number)     # noqa: E731
        if self.board.family == "ice40":
            return {
                "idle": [out("led_g", 0)],
                "busy": [out("led_g", 1)],
                "error": [out("led_r", 0), out("led_r", 1)],
                "heartbeat": [out("led_g", 2)],
            }
        return {name: [out("led", n)]
                for name, n in (("idle", 0), ("busy", 1), ("error", 2), ("heartbeat", 7))}

    def _uart(self, m, platform):
        """(rx, tx): the UART's input signal and output signal."""
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx_buf = rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx_buf = tx = io.Buffer("o", uart.tx)
        return rx.i, tx.o

    def _heartbeat(self, m):
        bits = max(2, int(self.board.clock_hz).bit_length() - 1)    # about 1.5 Hz
        count = Signal(bits)
        m.d.sync += count.eq(count + 1)
        return count[-1]


class BoardTop(_BoardBase):
    """The Focus unit on ``board``: :class:`boards.bridge.FocusBoardCore` with
    ``FocusParams.board()``, the UART at :data:`boards.uart.BAUD_RATE` on the board's USB serial
    port, reset and the LEDs of the module docstring.

    Parameters
    ----------
    board : str
        A name in :data:`BOARDS`.
    params : FocusParams or None
        Default :func:`board_params` (``FocusParams.board()`` with the board's
        ``offset_schemes``).
    """

    def __init__(self, board, params=None):
        super().__init__(board)
        self.params = params if params is not None else board_params(board)

    def elaborate(self, platform):
        m = Module()
        self._clock_and_reset(m, platform)
        m.submodules.core = core = FocusBoardCore(self.params,
                                                  uart_divisor(self.board.clock_hz),
                                                  icg_cell=None, sic=self.board.sic)
        rx, tx = self._uart(m, platform)
        m.d.comb += [core.rx.eq(rx), tx.eq(core.tx)]

        stretch_bits = max(1, int(self.board.clock_hz * _STRETCH_SECONDS).bit_length())
        stretch = Signal(stretch_bits)
        with m.If(core.busy):
            m.d.sync += stretch.eq((1 << stretch_bits) - 1)
        with m.Elif(stretch != 0):
            m.d.sync += stretch.eq(stretch - 1)
        busy = core.busy | (stretch != 0)

        leds = self._leds(m, platform)
        state = {"idle": ~busy & ~core.error, "busy": busy, "error": core.error,
                 "heartbeat": self._heartbeat(m)}
        for name, outs in leds.items():
            for o in outs:
                m.d.comb += o.eq(state[name])
        return m


class Blinky(_BoardBase):
    """A board check with no core: the heartbeat LED blinks, the idle LED is lit, the busy and
    error LEDs are lit while the user button is held; the UART echoes nothing (tx idles high)."""

    def elaborate(self, platform):
        m = Module()
        self._clock_and_reset(m, platform)
        _, tx = self._uart(m, platform)
        m.d.comb += tx.eq(1)
        beat = self._heartbeat(m)
        pressed = ResetSignal("sync")
        state = {"idle": 1, "busy": pressed, "error": pressed, "heartbeat": beat}
        for name, outs in self._leds(m, platform).items():
            for o in outs:
                m.d.comb += o.eq(state[name])
        return m


#: design name -> top class
DESIGNS = {"focus": BoardTop, "blinky": Blinky}


def make_top(design, board, params=None):
    """The top Elaboratable of ``design`` (a name in :data:`DESIGNS`) for ``board``;
    ``params`` (default :func:`board_params`) is used by the ``focus`` design only."""
    if design == "focus":
        return BoardTop(board, params)
    return DESIGNS[design](board)
