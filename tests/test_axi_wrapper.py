# amaranth: UnusedElaboratable=no
"""The standard-bus top's interface (``FocusUnitAXI``, spec 5.6): the Verilog module's ports are
exactly the conventional AXI names, each ``tdata`` is the payload without ``last`` padded to whole
bytes, and ``emit --wrap axi`` writes it with the datasheet describing it. Its behaviour is
checked by ``tests/test_cocotb_focus_unit_axi.py`` (cocotbext-axi on Icarus and Verilator)."""

import re

import pytest
from amaranth.hdl import Shape
from amaranth.lib import data

from rtl.flow.emit import emit_block, emit_files
from rtl.flow.layouts_doc import layout_fields
from rtl.params import FocusParams
from rtl.top.axi_wrapper import axis_ports, axis_tdata_layout

P = FocusParams.board()

#: Every Verilog port of focus_unit_axi, as an integrator writes them.
PORTS = {
    "aclk": "input", "aresetn": "input",
    **{f"s_axi_ctrl_{n}": "input" for n in (
        "awaddr", "awprot", "awvalid", "wdata", "wstrb", "wvalid", "bready", "araddr",
        "arprot", "arvalid", "rready")},
    **{f"s_axi_ctrl_{n}": "output" for n in (
        "awready", "wready", "bresp", "bvalid", "arready", "rdata", "rresp", "rvalid")},
    "s_axis_scores_tdata": "input", "s_axis_scores_tvalid": "input",
    "s_axis_scores_tready": "output",
    "s_axis_tokens_tdata": "input", "s_axis_tokens_tlast": "input",
    "s_axis_tokens_tvalid": "input", "s_axis_tokens_tready": "output",
    **{f"m_axis_{port}_{s}": ("input" if s == "tready" else "output")
       for port in ("mask", "code", "sic") for s in ("tdata", "tlast", "tvalid", "tready")},
    "irq": "output",
}


def _module(text, module):
    """(port names in header order, the module's body) of module ``module`` in ``text``."""
    header = re.search(rf"^module {module}\((.*?)\);", text, re.MULTILINE | re.DOTALL)
    body = text[header.end():text.index("endmodule", header.end())]
    return [n.strip() for n in header[1].split(",")], body


def test_verilog_ports_are_the_conventional_names():
    text = emit_block("focus_unit_axi", P)
    names, body = _module(text, "focus_unit_axi")
    directions = {name: d for d, name in re.findall(
        r"^\s*(input|output)\s+(?:wire\s+)?(?:\[[^\]]+\]\s*)?(\w+);", body, re.MULTILINE)}
    assert sorted(names) == sorted(PORTS)
    assert directions == PORTS
    widths = dict((name, int(msb) + 1) for msb, name in re.findall(
        r"^\s*(?:input|output)\s+(?:wire\s+)?\[(\d+):0\]\s*(\w+);", body, re.MULTILINE))
    assert widths["s_axi_ctrl_awaddr"] == widths["s_axi_ctrl_araddr"] == 10
    assert widths["s_axi_ctrl_wdata"] == widths["s_axi_ctrl_rdata"] == 32
    assert widths["s_axi_ctrl_wstrb"] == 4 and widths["s_axi_ctrl_bresp"] == 2
    # tdata: the payload without last, to whole bytes (board preset: 2 lanes of 16-bit scores,
    # 8 int8 elements, a 2-bit mask, a 32-bit word with its nbits, the sic beat).
    assert widths["s_axis_scores_tdata"] == 32
    assert widths["s_axis_tokens_tdata"] == 64
    assert widths["m_axis_mask_tdata"] == 8
    for name in ("m_axis_code_tdata", "m_axis_sic_tdata"):
        assert widths[name] % 8 == 0
    assert "clk" not in PORTS and "rst" not in PORTS


def test_tdata_layouts():
    for name, (prefix, _, payload, tdata, has_last) in axis_ports(P).items():
        width = Shape.cast(tdata).width
        assert width % 8 == 0 and width - 8 < Shape.cast(payload).width - has_last <= width
        fields = {f["name"]: f for f in layout_fields(tdata)}
        for f in layout_fields(payload):
            if f["name"] != "last":
                assert fields[f["name"]] == f, (name, f)
        assert has_last == (name != "scores")
        assert prefix == ("s_axis_" if name in ("scores", "tokens") else "m_axis_") + name


def test_tdata_layout_needs_last_on_top():
    bad = data.StructLayout({"last": 1, "word": 8})
    with pytest.raises(ValueError, match=r"^a payload's `last` must be its top bit$"):
        axis_tdata_layout(bad)
    assert Shape.cast(axis_tdata_layout(data.StructLayout({"word": 8, "last": 1}))).width == 8


def test_emit_wrap_needs_focus_unit(tmp_path):
    with pytest.raises(ValueError, match=r"needs the block focus_unit"):
        emit_files(P, tmp_path, ["sec"], wraps=["axi"])
    with pytest.raises(ValueError, match=r"^Unknown wrapper 'wishbone': wrappers are axi$"):
        emit_files(P, tmp_path, ["focus_unit"], wraps=["wishbone"])
