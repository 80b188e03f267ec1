"""Verilog emission: deterministic (``emit_src=False``), ports from the component's signature."""

from amaranth.back import verilog

from .blocks import build_block
from .clock_gate import ICG_CELL, icg_verilog

__all__ = ["emit_verilog", "emit_block"]


def emit_verilog(component, name, params, *, icg_cell=ICG_CELL):
    """Verilog text of ``component`` as module ``name``; with ``gating="icg"`` the behavioural ICG
    module ``icg_cell`` is appended, so the file is self-contained for simulation and lint."""
    text = verilog.convert(component, name=name, emit_src=False)
    if params.gating == "icg" and icg_cell is not None:
        text += "\n" + icg_verilog(icg_cell)
    return text


def emit_block(block, params, *, name=None, icg_cell=ICG_CELL):
    """Verilog text of registry block ``block`` (module name defaults to the block name)."""
    component = build_block(block, params, icg_cell=icg_cell)
    return emit_verilog(component, name or block, params, icg_cell=icg_cell)
