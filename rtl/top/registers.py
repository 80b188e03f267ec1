"""The Focus unit's register map: one table, :data:`REGISTERS`, and everything derived from it.

Each register is a :class:`Register` record (word address, name, access, implemented width, reset
value, description, bit fields). From the table come

- :class:`Reg` (the addresses by name), :class:`Ctrl` (the ``CTRL`` command bits),
  :class:`Status` (the ``STATUS`` job bits), :class:`ErrorFlag` and :data:`ERROR_SHIFT` (the
  sticky error flags in ``STATUS``), :class:`Irq` (the bits of ``IRQ_ENABLE`` and
  ``IRQ_STATUS``), :data:`FOCUS_ID`, and the address sets :data:`READABLE`,
  :data:`WRITABLE` and :data:`SIC_SETTINGS`;
- the register file's address decoder, access rules, RW register widths and read multiplexer
  (:class:`rtl.top.register_file.RegisterFile`);
- the Markdown table of README.md (:func:`render_markdown`; a test checks the README's copy).

Regenerate the README's table with ``python -m rtl.top.registers --update README.md`` (or print it
with ``--markdown``). The module is plain Python, without Amaranth, so a host driver can use it.

Access rules, the same for every register: a write to an RO or unmapped address is ignored and
sets ``STATUS.BUS``; a read of an unmapped address returns 0 and sets ``BUS``; a WO register reads
as 0; an RW register reads back what was written, masked to its ``width``; an RW1C register (the
interrupt status) reads its bits, and a write clears the bits written as 1. Registers marked
``sic`` are unmapped in a unit built without SIC. Addresses and bit positions are fixed: host
tools rely on them.
"""

import argparse
import enum
import sys
from dataclasses import dataclass
from pathlib import Path

from ..marked_text import markers, replace_marked

__all__ = ["RO", "WO", "RW", "RW1C", "ACCESS", "Field", "Register", "REGISTERS", "REGISTER", "Reg",
           "Ctrl", "Status", "ErrorFlag", "ERROR_SHIFT", "FOCUS_ID", "READABLE", "WRITABLE",
           "SIC_SETTINGS", "Irq", "render_markdown", "update_markdown", "MARKERS"]

#: Access modes: read-only, write-only, read-write, and read / write-1-to-clear (a write clears
#: the bits written as 1 and leaves the others).
RO, WO, RW, RW1C = "RO", "WO", "RW", "RW1C"
ACCESS = (RO, WO, RW, RW1C)


@dataclass(frozen=True)
class Field:
    """A bit field of a register: ``width`` bits from bit ``lsb``.

    ``error`` marks a sticky error flag of ``STATUS`` (set by the unit, cleared by
    ``CTRL.CLEAR``)."""

    name: str
    lsb: int
    width: int = 1
    description: str = ""
    error: bool = False

    @property
    def msb(self):
        return self.lsb + self.width - 1

    @property
    def mask(self):
        """The field's bits in the register word."""
        return ((1 << self.width) - 1) << self.lsb

    @property
    def bits(self):
        """``"bit n"`` or ``"bits m..n"``."""
        return f"bit {self.lsb}" if self.width == 1 else f"bits {self.msb}..{self.lsb}"


@dataclass(frozen=True)
class Register:
    """One register of the map.

    ``width`` is the number of implemented bits; the bits above it read 0. An RW register stores
    the low ``width`` bits of a write. For an RO counter, ``width`` is the most it can use (the
    parameters may make it narrower). ``reset`` is the value after reset (for ``ID``, the value it
    always reads). ``sic``: part of SIC, unmapped in a unit built without SIC.
    """

    addr: int
    name: str
    access: str
    width: int
    description: str
    fields: tuple = ()
    reset: int = 0
    sic: bool = False

    def __post_init__(self):
        if self.access not in ACCESS:
            raise ValueError(f"{self.name}: access must be RO, WO, RW or RW1C, not "
                             f"{self.access!r}")
        for f in self.fields:
            if f.msb >= self.width:
                raise ValueError(f"{self.name}.{f.name} ({f.bits}) is outside the register's "
                                 f"{self.width} bits")

    @property
    def readable(self):
        """A read is not a bus error (a WO register reads as 0)."""
        return True

    @property
    def writable(self):
        """A write is not a bus error."""
        return self.access in (WO, RW, RW1C)

    def field(self, name):
        """The field called ``name``."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    def pack(self, **values):
        """The register word with the named fields (lower-case keyword names) set to
        ``values``."""
        word = 0
        for name, value in values.items():
            f = self.field(name.upper())
            if not 0 <= int(value) < 1 << f.width:
                raise ValueError(f"{self.name}.{f.name} holds {f.width} bits, not {value!r}")
            word |= int(value) << f.lsb
        return word

    def unpack(self, word):
        """``{field name (lower case): value}`` of a register word."""
        return {f.name.lower(): (int(word) & f.mask) >> f.lsb for f in self.fields}


#: The register map, in address order.
REGISTERS = (
    Register(0x00, "ID", RO, 32, "the constant 0xF0C05001", reset=0xF0C05001),
    Register(0x01, "CTRL", WO, 4, "commands (bits may be combined)", fields=(
        Field("START_SEC", 0, description="start an SEC job"),
        Field("START_SIC", 1, description="start a SIC job on the stored code"),
        Field("CLEAR", 2, description="clear the error flags, the causes and the counters (the "
                                      "code memory stays valid)"),
        Field("ABORT", 3, description="end the running job at once: idle the next cycle, "
                                      "outputs on offer withdrawn; the threshold table, the "
                                      "settings and a valid code are kept; a start in the same "
                                      "write is refused (COMMAND)"),
    )),
    Register(0x02, "STATUS", RO, 16, "job state and the sticky error flags (cleared by "
                                     "CTRL.CLEAR)", fields=(
        Field("SEC_BUSY", 0, description="an SEC job runs"),
        Field("SIC_BUSY", 1, description="a SIC job runs"),
        Field("CODE_VALID", 2, description="the code memory holds the code of the last SEC job, "
                                           "which finished without error"),
        Field("SEC_CONFIG", 8, error=True, description=(
            "an SEC job's settings were rejected: M = 0, M > tokens, R = 0 or R > 65535")),
        Field("SEC_STREAM", 9, error=True, description=(
            "SEC's selector or encoder raised its error, or the code memory overflowed (neither "
            "is expected: the memory holds the longest code)")),
        Field("DECODER", 10, error=True, description=(
            "the offset decoder rejected the stored code (not expected)")),
        Field("MATCHER", 11, error=True, description=(
            "a SIC job's settings were rejected: FS + HS + 1 >= window, SIC_LAYER >= layers, or "
            "SIC_REPR.MEAN in a unit built with representatives = \"first\"")),
        Field("TOKENS", 12, error=True, description=(
            "the `tokens` stream's `last` did not come with the decoder's last index")),
        Field("BUS", 13, error=True, description=(
            "a write to an RO or unmapped address, a read of an unmapped address, or a "
            "THETA_DATA write with THETA_ADDR >= layers or a value >= 2**theta_bits")),
        Field("COMMAND", 14, error=True, description=(
            "a start that cannot run: a start while a job runs, both starts in one write, "
            "START_SIC with no valid code (or in a unit without SIC), or a start with ABORT")),
        Field("ABORTED", 15, error=True, description=(
            "CTRL.ABORT stopped a running job: its outputs are incomplete")),
    )),
    Register(0x04, "SEC_M", RW, 32, "M, 1..tokens (0 or > tokens: SEC_CONFIG)"),
    Register(0x05, "SEC_R", RW, 32, "R, 1..65535 (otherwise SEC_CONFIG)"),
    Register(0x06, "SEC_KEEP", RW, 32, "k >= 0 (k >= M keeps every token)"),
    Register(0x07, "SEC_MODE", RW, 1, "the score layout", fields=(
        Field("TEMPORAL", 0, description="0 spatial, 1 temporal"),
    )),
    Register(0x08, "SEC_ORDER", RW, 4, "the offset code's scheme", fields=(
        Field("ORDER", 0, 3, "the order e of a fixed kept-set Exp-Golomb code"),
        Field("ADAPTIVE", 3, description="pick the scheme (kept or dropped set, Exp-Golomb or "
                                         "Rice, order; the kept-set Exp-Golomb orders only on a "
                                         "build with offset_schemes = kept-exp-golomb) with the "
                                         "fewest bits per job (ORDER is then not used)"),
    )),
    Register(0x09, "SIC_FRAME_STRIDE", RW, 32, "FS (FS + HS + 1 >= window: MATCHER)", sic=True),
    Register(0x0A, "SIC_ROW_STRIDE", RW, 32, "HS", sic=True),
    Register(0x0B, "SIC_LAYER", RW, 32, "the job's threshold table entry (>= layers: MATCHER)",
             sic=True),
    Register(0x0C, "SIC_REPR", RW, 1, "the representative of a unique vector", sic=True,
             fields=(Field("MEAN", 0, description="0 first, 1 mean (without the mean unit: "
                                                  "MATCHER)"),)),
    Register(0x0D, "THETA_ADDR", RW, 32, "threshold table entry for THETA_DATA", sic=True),
    Register(0x0E, "THETA_DATA", WO, 32, "theta_q of entry THETA_ADDR; THETA_ADDR then "
                                         "increments (THETA_ADDR >= layers or theta_q >= "
                                         "2**theta_bits: ignored, BUS)", sic=True),
    Register(0x10, "SEC_CYCLES", RO, 32, "last SEC job: first score transfer to the later of the "
                                         "last mask and the last code transfer, inclusive"),
    Register(0x11, "SIC_CYCLES", RO, 32, "last SIC job: first token transfer to the last `sic` "
                                         "transfer, inclusive (to the job's end if nothing "
                                         "left)"),
    Register(0x12, "KEPT", RO, 32, "last SEC job's kept count n"),
    Register(0x13, "NBITS", RO, 32, "last SEC job's code length in bits"),
    Register(0x14, "ORDER", RO, 3, "last SEC job's code order (its set and family are in the "
             "code's header)"),
    Register(0x15, "UNIQUES", RO, 32, "last SIC job's unique vectors"),
    Register(0x16, "ACTIVE", RO, 32, "last SIC job's active comparator-cycles"),
    Register(0x17, "GATED", RO, 32, "last SIC job's gated comparator-cycles"),
    Register(0x18, "CAUSE", RO, 8, "the sub-block codes of the last errors", fields=(
        Field("SEC", 0, 2, "SEC's cause (`SecError`) of the last SEC error"),
        Field("DECODER", 4, 4, "the decoder's cause (`DecodeError`) of the last decoder error"),
    )),
    Register(0x19, "SIC_TOKENS", RO, 32, "tokens taken by the last SIC job (drained ones "
                                         "included)"),
    Register(0x1A, "CODE_WORDS", RO, 32, "words of the code in the code memory"),
    Register(0x1C, "IRQ_ENABLE", RW, 3, "the events that raise the `irq` output (bits as in "
                                        "IRQ_STATUS)", fields=(
        Field("SEC_DONE", 0, description="an SEC job ended"),
        Field("SIC_DONE", 1, description="a SIC job ended"),
        Field("ERROR", 2, description="an error flag was raised"),
    )),
    Register(0x1D, "IRQ_STATUS", RW1C, 3, "the events seen since they were last cleared, "
                                          "whether enabled or not; write 1 to a bit to clear it; "
                                          "`irq` is high while (IRQ_STATUS & IRQ_ENABLE) != 0",
             fields=(
        Field("SEC_DONE", 0, description="an SEC job ended: finished, rejected (SEC_CONFIG) or "
                                         "aborted"),
        Field("SIC_DONE", 1, description="a SIC job ended: finished, rejected, aborted, or a "
                                         "start on a code that kept no token"),
        Field("ERROR", 2, description="a sticky error flag of STATUS was raised (set again by "
                                      "every new error, even of a flag already set)"),
    )),
)

#: The registers by name.
REGISTER = {r.name: r for r in REGISTERS}


def _check_table():
    addrs = [r.addr for r in REGISTERS]
    if addrs != sorted(set(addrs)):
        raise ValueError("REGISTERS must be in strictly increasing address order")
    if len(REGISTER) != len(REGISTERS):
        raise ValueError("two registers share a name")


_check_table()

Reg = enum.IntEnum("Reg", [(r.name, r.addr) for r in REGISTERS], module=__name__)
Reg.__doc__ = "Word addresses of the Focus unit's registers, from :data:`REGISTERS`."

Ctrl = enum.IntFlag("Ctrl", [(f.name, 1 << f.lsb) for f in REGISTER["CTRL"].fields],
                    module=__name__)
Ctrl.__doc__ = "Bits of a ``CTRL`` write, from :data:`REGISTERS`."

Status = enum.IntFlag("Status", [(f.name, 1 << f.lsb) for f in REGISTER["STATUS"].fields
                                 if not f.error], module=__name__)
Status.__doc__ = "Bits of ``STATUS`` besides the error flags, from :data:`REGISTERS`."

_ERROR_FIELDS = [f for f in REGISTER["STATUS"].fields if f.error]
#: Bit of ``STATUS`` holding :class:`ErrorFlag` bit 0.
ERROR_SHIFT = min(f.lsb for f in _ERROR_FIELDS)
ErrorFlag = enum.IntFlag("ErrorFlag", [(f.name, 1 << (f.lsb - ERROR_SHIFT))
                                       for f in _ERROR_FIELDS], module=__name__)
ErrorFlag.__doc__ = ("The sticky error flags (``STATUS`` bits ``ERROR_SHIFT + n``), cleared by "
                     "``CTRL.CLEAR``, from :data:`REGISTERS`: "
                     + "; ".join(f"{f.name}: {f.description}" for f in _ERROR_FIELDS) + ".")

Irq = enum.IntFlag("Irq", [(f.name, 1 << f.lsb) for f in REGISTER["IRQ_STATUS"].fields],
                   module=__name__)
Irq.__doc__ = "Bits of ``IRQ_ENABLE`` and ``IRQ_STATUS``, from :data:`REGISTERS`."

#: The constant in register ``ID``.
FOCUS_ID = REGISTER["ID"].reset
#: Addresses a read may use without a bus error (write-only ones read as 0).
READABLE = frozenset(Reg(r.addr) for r in REGISTERS if r.readable)
#: Addresses a write may use without a bus error.
WRITABLE = frozenset(Reg(r.addr) for r in REGISTERS if r.writable)
#: The SIC registers: absent (unmapped) in a unit built with ``sic=False``.
SIC_SETTINGS = frozenset(Reg(r.addr) for r in REGISTERS if r.sic)


# ---- Markdown ------------------------------------------------------------------------------------

#: The comments around the generated table in a Markdown file.
MARKERS = markers("registers")


def _contents(r):
    text = r.description + (" (SIC only)" if r.sic else "")
    if r.fields:
        text += ". " + "; ".join(f"{f.bits} {f.name}" + (f": {f.description}"
                                                         if f.description else "")
                                 for f in r.fields)
    return text.replace("|", "\\|")


def render_markdown():
    """The register map as a Markdown table (the text between :data:`MARKERS` in README.md)."""
    lines = ["| addr | name | access | bits | reset | contents |", "|---|---|---|---|---|---|"]
    for r in REGISTERS:
        lines.append(f"| 0x{r.addr:02X} | {r.name} | {r.access} | {r.width} | 0x{r.reset:X} | "
                     f"{_contents(r)} |")
    return "\n".join(lines) + "\n"


def update_markdown(text):
    """``text`` with the part between :data:`MARKERS` replaced by :func:`render_markdown`."""
    return replace_marked(text, "registers", render_markdown())


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rtl.top.registers",
                                     description="The Focus unit's register map.")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--markdown", action="store_true", help="print the Markdown table")
    group.add_argument("--update", metavar="FILE", type=Path,
                       help=f"rewrite the table between {MARKERS[0]} and {MARKERS[1]} in FILE")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(render_markdown())
    else:
        args.update.write_text(update_markdown(args.update.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
