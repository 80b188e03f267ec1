"""The register table (``rtl/top/registers.py``): the map other tools rely on (addresses, names,
access, bit positions) is frozen here; the constants derived from the table; the README's copy of
the table equals the rendered one; the command line that regenerates it; the table's own
checks."""

import subprocess
import sys
from pathlib import Path

import pytest

from rtl.top import registers
from rtl.top.registers import (
    ERROR_SHIFT,
    FOCUS_ID,
    MARKERS,
    READABLE,
    REGISTER,
    REGISTERS,
    SIC_SETTINGS,
    WRITABLE,
    Ctrl,
    ErrorFlag,
    Field,
    Reg,
    Register,
    Status,
    render_markdown,
    update_markdown,
)

ROOT = Path(__file__).resolve().parent.parent

#: The map as host tools know it: name -> (address, access). Changing it breaks them.
MAP = {
    "ID": (0x00, "RO"), "CTRL": (0x01, "WO"), "STATUS": (0x02, "RO"),
    "SEC_M": (0x04, "RW"), "SEC_R": (0x05, "RW"), "SEC_KEEP": (0x06, "RW"),
    "SEC_MODE": (0x07, "RW"), "SEC_ORDER": (0x08, "RW"),
    "SIC_FRAME_STRIDE": (0x09, "RW"), "SIC_ROW_STRIDE": (0x0A, "RW"),
    "SIC_LAYER": (0x0B, "RW"), "SIC_REPR": (0x0C, "RW"),
    "THETA_ADDR": (0x0D, "RW"), "THETA_DATA": (0x0E, "WO"),
    "SEC_CYCLES": (0x10, "RO"), "SIC_CYCLES": (0x11, "RO"), "KEPT": (0x12, "RO"),
    "NBITS": (0x13, "RO"), "ORDER": (0x14, "RO"), "UNIQUES": (0x15, "RO"),
    "ACTIVE": (0x16, "RO"), "GATED": (0x17, "RO"), "CAUSE": (0x18, "RO"),
    "SIC_TOKENS": (0x19, "RO"), "CODE_WORDS": (0x1A, "RO"),
}


def test_the_map_is_unchanged():
    assert {r.name: (r.addr, r.access) for r in REGISTERS} == MAP
    assert {r.name: int(r) for r in Reg} == {name: addr for name, (addr, _) in MAP.items()}
    assert FOCUS_ID == 0xF0C05001
    assert {f.name: f.value for f in Ctrl} == {"START_SEC": 1, "START_SIC": 2, "CLEAR": 4,
                                               "ABORT": 8}
    assert {f.name: f.value for f in Status} == {"SEC_BUSY": 1, "SIC_BUSY": 2, "CODE_VALID": 4}
    assert ERROR_SHIFT == 8
    assert [f.name for f in ErrorFlag] == ["SEC_CONFIG", "SEC_STREAM", "DECODER", "MATCHER",
                                           "TOKENS", "BUS", "COMMAND", "ABORTED"]
    assert [f.value for f in ErrorFlag] == [1 << n for n in range(8)]
    fields = {(r.name, f.name): (f.lsb, f.width) for r in REGISTERS for f in r.fields
              if r.name not in ("CTRL", "STATUS")}
    assert fields == {("SEC_MODE", "TEMPORAL"): (0, 1), ("SEC_ORDER", "ORDER"): (0, 3),
                      ("SEC_ORDER", "ADAPTIVE"): (3, 1), ("SIC_REPR", "MEAN"): (0, 1),
                      ("CAUSE", "SEC"): (0, 2), ("CAUSE", "DECODER"): (4, 4)}
    # The RW registers' stored widths (a write is masked to them).
    assert {r.name: r.width for r in REGISTERS if r.access == "RW" and r.width != 32} == {
        "SEC_MODE": 1, "SEC_ORDER": 4, "SIC_REPR": 1}


def test_address_sets():
    assert READABLE == frozenset(Reg)
    assert WRITABLE == {r for r in Reg if MAP[r.name][1] != "RO"}
    assert SIC_SETTINGS == {Reg.SIC_FRAME_STRIDE, Reg.SIC_ROW_STRIDE, Reg.SIC_LAYER,
                            Reg.SIC_REPR, Reg.THETA_ADDR, Reg.THETA_DATA}


def test_pack_unpack():
    order = REGISTER["SEC_ORDER"]
    assert order.pack(adaptive=1) == 8 and order.pack(order=5) == 5
    assert order.unpack(13) == {"order": 5, "adaptive": 1}
    status = REGISTER["STATUS"]
    assert status.pack(code_valid=1, bus=1) == Status.CODE_VALID | ErrorFlag.BUS << ERROR_SHIFT
    with pytest.raises(ValueError, match=r"^SEC_ORDER.ORDER holds 3 bits, not 8$"):
        order.pack(order=8)
    with pytest.raises(KeyError, match=r"SEC_ORDER has no field 'MODE'"):
        order.pack(mode=1)


def test_table_checks():
    with pytest.raises(ValueError, match=r"^X: access must be RO, WO or RW, not 'R'$"):
        Register(0x30, "X", "R", 8, "")
    with pytest.raises(ValueError, match=r"^X.F \(bits 8..7\) is outside the register's 8 bits$"):
        Register(0x30, "X", "RO", 8, "", fields=(Field("F", 7, 2),))


@pytest.mark.parametrize("document", ["README.md", "docs/spec.md"])
def test_document_tables_are_the_rendered_one(document):
    """The register tables of README.md and docs/spec.md are generated: regenerate them with
    ``python -m rtl.top.registers --update FILE``."""
    text = (ROOT / document).read_text()
    begin, end = MARKERS
    assert text.count(begin) == text.count(end) == 1
    table = text.split(begin)[1].split(end)[0]
    assert table == "\n" + render_markdown(), (
        f"{document}'s register table is stale: run python -m rtl.top.registers --update "
        f"{document}")
    assert update_markdown(text) == text


def test_markdown_lists_every_register_and_field():
    text = render_markdown()
    rows = text.splitlines()[2:]
    assert len(rows) == len(REGISTERS)
    for row, r in zip(rows, REGISTERS, strict=True):
        assert row.startswith(f"| 0x{r.addr:02X} | {r.name} | {r.access} | {r.width} | ")
        for f in r.fields:
            assert f"{f.bits} {f.name}" in row


def test_update_needs_markers():
    with pytest.raises(ValueError, match=r"^the text must hold"):
        update_markdown("no markers here")


def test_command_line(tmp_path):
    """``python -m rtl.top.registers``: plain Python (no Amaranth, no focus-rtl install needed)
    prints or rewrites the table."""
    run = subprocess.run([sys.executable, "-m", "rtl.top.registers", "--markdown"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    assert run.stdout == render_markdown()
    page = tmp_path / "page.md"
    page.write_text(f"before\n{MARKERS[0]}\nold\n{MARKERS[1]}\nafter\n")
    subprocess.run([sys.executable, "-m", "rtl.top.registers", "--update", str(page)], cwd=ROOT,
                   check=True)
    assert page.read_text() == f"before\n{MARKERS[0]}\n{render_markdown()}{MARKERS[1]}\nafter\n"
    probe = ("import sys, rtl.top.registers; "
             "print(any(m.startswith('amaranth') for m in sys.modules))")
    check = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                           text=True, check=True)
    assert check.stdout.strip() == "False"
    assert registers.main(["--markdown"]) == 0
