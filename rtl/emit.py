"""Verilog emission: deterministic (``emit_src=False``), ports from the component's signature.

:func:`emit_files` is what ``focus-rtl emit`` runs: one ``<block>.v`` per registry block (module
name = block name) and ``params.json``. Same arguments, same bytes: no timestamps, no paths.

Clock gates (``gating="icg"``): each gated stage instantiates the cell ``icg_cell`` (ports ``CLK``,
``EN``, ``GCLK``). By default that is ``focus_icg``, whose behavioural latch-and-AND model is
appended to every file that uses it, so that each file simulates and lints on its own. Naming a
library cell instead (``icg_cell="ICGX1"``, ``icg_model=False``; on the command line
``--icg-cell ICGX1``) instantiates that cell and leaves the model out: the library's
Verilog model or liberty file supplies it. A library cell whose pins are not called ``CLK``,
``EN`` and ``GCLK`` needs a thin wrapper module, named with ``--icg-cell``.
"""

import json
import re
from pathlib import Path

from amaranth.back import verilog

from .blocks import BLOCKS, build_block
from .clock_gate import ICG_CELL, icg_verilog
from .params import FocusParams

__all__ = ["emit_verilog", "emit_block", "emit_files", "params_record", "check_icg_cell",
           "instantiates"]


def instantiates(text, cell):
    """Whether Verilog ``text`` has an instance of module ``cell``."""
    return re.search(rf"^\s+{re.escape(cell)}\s+\S+\s*\(", text, re.MULTILINE) is not None


def emit_verilog(component, name, params, *, icg_cell=ICG_CELL, icg_model=True):
    """Verilog text of ``component`` as module ``name``; with ``gating="icg"`` the behavioural ICG
    module ``icg_cell`` is appended when the design instantiates it (unless ``icg_model`` is
    false), so the file is self-contained for simulation and lint."""
    text = verilog.convert(component, name=name, emit_src=False)
    if (params.gating == "icg" and icg_cell is not None and icg_model
            and instantiates(text, icg_cell)):
        text += "\n" + icg_verilog(icg_cell)
    return text


def emit_block(block, params, *, name=None, icg_cell=ICG_CELL, icg_model=True):
    """Verilog text of registry block ``block`` (module name defaults to the block name)."""
    component = build_block(block, params, icg_cell=icg_cell)
    return emit_verilog(component, name or block, params, icg_cell=icg_cell, icg_model=icg_model)


def check_icg_cell(name):
    """Raise ``ValueError`` unless ``name`` is a plain Verilog identifier."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name):
        raise ValueError(f"ICG cell name {name!r} is not a Verilog identifier")
    return name


def _derived(params):
    """Every derived width of ``params`` (the properties of :class:`FocusParams`), by name."""
    names = [name for name in dir(FocusParams)
             if isinstance(getattr(FocusParams, name), property) and name != "tag"]
    return {name: getattr(params, name) for name in sorted(names)}


def params_record(params, *, preset=None, overrides=(), blocks=(), icg_cell=ICG_CELL,
                  icg_model=True):
    """The content of ``params.json``: the fields, the derived widths and how they were chosen.

    ``params`` rebuilds the parameters with ``FocusParams.from_dict(record["params"])``.
    """
    return {
        "preset": preset,
        "overrides": list(overrides),
        "tag": params.tag,
        "params": params.to_dict(),
        "derived": _derived(params),
        "blocks": list(blocks),
        "icg": None if params.gating != "icg" else {
            "cell": icg_cell, "behavioural_model_included": bool(icg_model)},
    }


def emit_files(params, out_dir, blocks=None, *, preset=None, overrides=(), icg_cell=None):
    """Write ``<block>.v`` for each of ``blocks`` (default: every registry block) and
    ``params.json`` into ``out_dir``; returns the paths written, in order.

    ``icg_cell=None`` uses the behavioural ``focus_icg`` (included); a name instantiates that
    library cell and leaves the model out.
    """
    blocks = list(blocks or BLOCKS)
    for block in blocks:
        if block not in BLOCKS:
            raise ValueError(f"Unknown block {block!r}: blocks are {', '.join(sorted(BLOCKS))}")
    cell, model = (ICG_CELL, True) if icg_cell is None else (check_icg_cell(icg_cell), False)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for block in blocks:
        path = out_dir / f"{block}.v"
        path.write_text(emit_block(block, params, icg_cell=cell, icg_model=model))
        written.append(path)
    record = params_record(params, preset=preset, overrides=overrides, blocks=blocks,
                           icg_cell=cell, icg_model=model)
    path = out_dir / "params.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    written.append(path)
    return written
