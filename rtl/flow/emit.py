"""Verilog emission: deterministic (``emit_src=False``), ports from the component's signature.

:func:`emit_files` is what ``focus-rtl emit`` runs: one ``<block>.v`` per registry block (module
name = block name) and ``params.json``; with ``--wrap axi`` also ``focus_unit_axi.v``, the top
behind AXI4-Lite and AXI4-Stream (:class:`rtl.top.axi_wrapper.FocusUnitAXI`). Same arguments,
same bytes: no timestamps, no paths.

Compiling the files together: every file compiles on its own, and all the files of one output
directory also compile together in one Icarus or Verilator run. Amaranth names every submodule
``<top>.<path>`` (an escaped identifier, e.g. ``similarity_comparator.stage1_icg``), so two
files never define the same module, except for the behavioural ICG model (below), which is guarded.

Clock gates (``gating="icg"``): each gated stage instantiates the cell ``icg_cell`` (ports ``CLK``,
``EN``, ``GCLK``). By default that is ``focus_icg``, whose behavioural latch-and-AND model is
appended to every file that uses it, so that each file simulates and lints on its own. The model
is wrapped in an include guard on the macro ``FOCUS_ICG_MODEL`` (ifndef, define, endif), so that
when several files are compiled together only the first one defines ``focus_icg``. (Defining
``FOCUS_ICG_MODEL`` on the command line, ``+define+FOCUS_ICG_MODEL`` or ``-DFOCUS_ICG_MODEL``,
leaves the model out of every file: for your own ``focus_icg``.) Naming a library cell instead
(``icg_cell="ICGX1"``, ``icg_model=False``; on the command line ``--icg-cell ICGX1``) instantiates
that cell and leaves the model out: the library's Verilog model or liberty file supplies it. A
library cell whose pins are not called ``CLK``, ``EN`` and ``GCLK`` needs a thin wrapper module,
named with ``--icg-cell``, for example for the SkyWater 130 nm gate::

    module sky130_icg (input wire CLK, input wire EN, output wire GCLK);
        sky130_fd_sc_hd__dlclkp_1 u_icg (.CLK(CLK), .GATE(EN), .GCLK(GCLK));
    endmodule

Post-processing of Amaranth's Verilog (:func:`postprocess`):

- Lint: Amaranth's backend (Yosys ``write_verilog``) does not pad operands to the expression width
  and writes ``casez`` statements without a ``default`` (a default assignment comes first, so no
  latch is inferred). Verilator's default warning set flags these as ``WIDTHEXPAND``,
  ``WIDTHTRUNC`` and ``CASEINCOMPLETE``, which are fatal. Widths are fixed by Amaranth's own
  semantics before Verilog is written, so these warnings never point at a design error; each file
  turns exactly these three off between ``/* verilator lint_save */`` and ``lint_restore``, which
  leaves files compiled after it unaffected. ``verilator --lint-only`` then passes with no options.
- Zero-width signals: Amaranth declares a zero-width signal (``Signal(range(1))``, legal and
  useful at some parameters) as ``wire [-1:0] x;``, which Verilator flags (``ASCRANGE``) and
  which Verilog reads as two bits. Yosys folds every use of such a signal to a constant, so the
  declaration is dead; it is removed when nothing else in its module names the signal (a
  one-word memory's 0-bit address, for example, is declared in the memory's module and again in
  its parent's, and used in neither).
- Time zero: Yosys gives every ``always @*`` block a dummy read of a register initialised to 0
  (``$auto$verilog_backend...``) so that the block runs at time zero. Under Icarus with
  ``-g2012`` (what cocotb uses) that initialisation makes no event when the design is the
  simulation's top level (cocotb's case), so combinational outputs that depend only on registers
  stay ``x`` until a register changes (amaranth-lang/amaranth#1629; the trigger is from
  YosysHQ/yosys#2273). Each file adds ``initial #0 <trigger> = 1'h1;`` after the trigger, which
  runs once all processes wait on their events. It is left out by ifndef ``SYNTHESIS`` (Yosys
  defines it) and ifndef ``VERILATOR`` (Verilator evaluates combinational logic at time zero
  anyway, and a delay would need ``--timing``). Amaranth 0.5 has no option for this:
  ``verilog.convert`` passes no options to ``write_verilog``.
"""

import json
import re
from pathlib import Path

from amaranth.back import verilog

from ..lib.clock_gate import ICG_CELL, icg_verilog
from ..params import FocusParams
from . import toolchain
from .blocks import BLOCKS, WRAPPERS, build_block
from .datasheet import datasheet_texts
from .datasheet_md import find_synth_report

__all__ = ["emit_verilog", "emit_block", "emit_files", "params_record", "check_icg_cell",
           "check_wraps",
           "instantiates", "postprocess", "icg_model_guard", "LINT_OFF"]

#: Verilator warnings of the default set that Amaranth's Verilog trips by construction (see the
#: module docstring); each emitted file turns off exactly these, between lint_save and lint_restore.
LINT_OFF = ("WIDTHEXPAND", "WIDTHTRUNC", "CASEINCOMPLETE")

# Yosys's time-zero trigger of the ``always @*`` blocks: one per module.
_TRIGGER = re.compile(r"^(?P<indent>[ \t]*)reg (?P<name>\\\$auto\$verilog_backend\.cc:\d+:"
                      r"dump_module\$\d+ ) = 0;\n", re.MULTILINE)


def instantiates(text, cell):
    """Whether Verilog ``text`` has an instance of module ``cell``."""
    return re.search(rf"^\s+{re.escape(cell)}\s+\S+\s*\(", text, re.MULTILINE) is not None


def icg_model_guard(cell):
    """The include-guard macro of the behavioural model of ICG cell ``cell``:
    ``FOCUS_ICG_MODEL`` for ``focus_icg``."""
    return f"{cell.upper().replace('$', '_')}_MODEL"


def _guarded_icg_model(cell):
    guard = icg_model_guard(cell)
    return (f"// Defined once per compilation, so that the files of one focus-rtl emit compile\n"
            f"// together. Define {guard} (+define+{guard}) to supply your own {cell}.\n"
            f"`ifndef {guard}\n`define {guard}\n{icg_verilog(cell)}`endif // {guard}\n")


def _trigger_fix(match):
    indent, name = match["indent"], match["name"]
    return (f"{match[0]}`ifndef SYNTHESIS\n`ifndef VERILATOR\n"
            f"{indent}initial #0 {name} = 1'h1;  // focus-rtl: run always @* at time 0 (Icarus)\n"
            f"`endif\n`endif\n")


# A zero-width Amaranth signal (e.g. ``Signal(range(1))``) is declared as ``wire [-1:0] x;`` and
# never used: Yosys folds every use to a constant.
_ZERO_WIDTH = re.compile(r"^[ \t]*(?:wire|reg) \[-1:0\] (?P<name>\\\S+ |[A-Za-z_][\w$]*);\n",
                         re.MULTILINE)
_MODULE = re.compile(r"^module .*?^endmodule\n", re.MULTILINE | re.DOTALL)


def _drop_zero_width(text):
    """Remove the declarations of zero-width signals that nothing else in their module mentions
    (names repeat between modules: a port's name is declared in the module and its parent)."""
    return _MODULE.sub(lambda module: _ZERO_WIDTH.sub(
        lambda match: "" if _uses(match["name"], module[0]) == 1 else match[0], module[0]), text)


def _uses(name, text):
    """How many times the Verilog identifier ``name`` occurs in ``text``."""
    if name.startswith("\\"):
        return text.count(name)
    return len(re.findall(rf"(?<![\w$\\.]){re.escape(name)}(?![\w$])", text))


def postprocess(text, name, params):
    """Amaranth's Verilog ``text`` of module ``name`` made lint-clean and safe at time zero (see the
    module docstring): a header, the Verilator waivers of :data:`LINT_OFF` (saved and restored),
    an ``initial #0`` pulse on each module's ``always @*`` trigger, and no declarations of unused
    zero-width signals."""
    fixed, count = _TRIGGER.subn(_trigger_fix, _drop_zero_width(text))
    if count == 0 and "always @*" in text:
        raise RuntimeError("emit: Yosys's always @* trigger was not found; the time-zero fix of "
                           "rtl/flow/emit.py needs updating for this Yosys version")
    waivers = "".join(f"/* verilator lint_off {w} */\n" for w in LINT_OFF)
    header = (f"// focus-rtl emit: module {name}, FocusParams {params.tag}\n"
              "// Amaranth's Verilog does not pad operands to the expression width and leaves\n"
              "// casez without default (after a default assignment): waived for Verilator\n"
              "// below. The initial #0 lines run always @* at time 0 under Icarus -g2012:\n"
              "// see rtl/flow/emit.py in focus-rtl.\n"
              f"/* verilator lint_save */\n{waivers}")
    return f"{header}{fixed}/* verilator lint_restore */\n"


def emit_verilog(component, name, params, *, icg_cell=ICG_CELL, icg_model=True):
    """Verilog text of ``component`` as module ``name``, post-processed (:func:`postprocess`);
    with ``gating="icg"`` the behavioural ICG module ``icg_cell`` is appended, behind an include
    guard, when the design instantiates it (unless ``icg_model`` is false), so the file is
    self-contained for simulation and lint and still compiles together with its siblings."""
    text = verilog.convert(component, name=name, emit_src=False)
    if (params.gating == "icg" and icg_cell is not None and icg_model
            and instantiates(text, icg_cell)):
        text += "\n" + _guarded_icg_model(icg_cell)
    return postprocess(text, name, params)


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
                  icg_model=True, wraps=()):
    """The content of ``params.json``: the fields, the derived widths and how they were chosen.

    ``params`` rebuilds the parameters with ``FocusParams.from_dict(record["params"])``;
    ``wrapped`` lists the wrapped tops' module names (``focus-rtl emit --wrap``).
    """
    return {
        "preset": preset,
        "overrides": list(overrides),
        "tag": params.tag,
        "params": params.to_dict(),
        "derived": _derived(params),
        "blocks": list(blocks),
        "wrapped": [WRAPPERS[w][0] for w in wraps],
        "icg": None if params.gating != "icg" else {
            "cell": icg_cell, "behavioural_model_included": bool(icg_model)},
    }


def check_wraps(wraps):
    """``wraps`` as a list without repeats; ``ValueError`` for a name not in :data:`WRAPPERS`."""
    wraps = list(dict.fromkeys(wraps or ()))
    for wrap in wraps:
        if wrap not in WRAPPERS:
            raise ValueError(f"Unknown wrapper {wrap!r}: wrappers are {', '.join(WRAPPERS)}")
    return wraps


def emit_files(params, out_dir, blocks=None, *, preset=None, overrides=(), icg_cell=None,
               wraps=(), synth_root=None):
    """Write ``<block>.v`` for each of ``blocks`` (default: every registry block), the wrapped
    tops of ``wraps`` (``"axi"``: ``focus_unit_axi.v``, :class:`rtl.top.axi_wrapper.FocusUnitAXI`)
    and ``params.json`` into ``out_dir``, and with ``focus_unit`` the datasheet files of
    :mod:`rtl.flow.datasheet` (describing the wrapped tops too); returns the paths written, in
    order.

    ``icg_cell=None`` uses the behavioural ``focus_icg`` (included); a name instantiates that
    library cell and leaves the model out. The Markdown datasheet lists the resources of the
    newest ``focus-rtl synth`` report for ``params`` under ``synth_root`` (default
    ``build/synth``), when there is one.
    """
    blocks = list(blocks or BLOCKS)
    for block in blocks:
        if block not in BLOCKS:
            raise ValueError(f"Unknown block {block!r}: blocks are {', '.join(sorted(BLOCKS))}")
    wraps = check_wraps(wraps)
    if wraps and "focus_unit" not in blocks:
        raise ValueError("a wrapped top is emitted with its datasheet, which needs the block "
                         "focus_unit: add it to the blocks")
    cell, model = (ICG_CELL, True) if icg_cell is None else (check_icg_cell(icg_cell), False)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    modules = blocks + [WRAPPERS[w][0] for w in wraps]
    for block in modules:
        path = out_dir / f"{block}.v"
        path.write_text(emit_block(block, params, icg_cell=cell, icg_model=model))
        written.append(path)
    record = params_record(params, preset=preset, overrides=overrides, blocks=blocks,
                           icg_cell=cell, icg_model=model, wraps=wraps)
    path = out_dir / "params.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    written.append(path)
    if "focus_unit" in blocks:
        # The top's datasheet files (register map, C header, payload fields, SV package).
        root = toolchain.BUILD_ROOT / "synth" if synth_root is None else Path(synth_root)
        report = find_synth_report(params, root)
        for name, text in datasheet_texts(params, wraps=wraps, report=report).items():
            path = out_dir / name
            path.write_text(text)
            written.append(path)
    return written
