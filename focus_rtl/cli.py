"""The ``focus-rtl`` command line (spec section 7): ``emit`` and ``synth``.

Exit status: 0 on success; 1 on a real error (a tool is missing or cannot run, Yosys rejects a
design, a file or directory cannot be read or written, or, with ``synth --strict``, any flow that
did not end ``ok``); 2 on bad arguments (unknown or badly valued ``--set`` field, unknown preset,
block or target), with one line ``focus-rtl: error: ...`` on stderr.
"""

import argparse
import os
import sys
from pathlib import Path

from rtl.flow import synth, toolchain
from rtl.flow.blocks import BLOCKS, REFERENCE_BLOCKS, WRAPPERS
from rtl.flow.cli_args import BadArgs, add_param_arguments, fail, params_from, split_list
from rtl.flow.dist import ResultCache, resolve_executor
from rtl.flow.emit import check_icg_cell, emit_files
from rtl.flow.pareto import plot_pareto
from rtl.flow.synth import TARGETS, ToolError
from rtl.flow.targets import FREQ_TARGETS
from rtl.flow.toolchain import display_path

from . import __version__

__all__ = ["main"]

_EMIT_EPILOG = """\
Output: <block>.v for each block (module name = block name) and params.json (the FocusParams
fields, the derived widths, the preset and the overrides). The same arguments give the same bytes.
Each file compiles on its own, and all the files of one run compile together in one Icarus or
Verilator invocation: submodules are named <block>.<path>, so no two files define the same module
(the ICG model below is guarded).

Lint: every file is clean under plain `verilator --lint-only` and `iverilog -g2012`. Amaranth's
Verilog trips three warnings of Verilator's default set by construction (WIDTHEXPAND, WIDTHTRUNC:
operands are not padded to the expression width; CASEINCOMPLETE: casez without default after a
default assignment); each file turns off exactly these between /* verilator lint_save */ and
/* verilator lint_restore */. Each file also pulses Yosys's always @* trigger with an `initial #0`
(not for SYNTHESIS or VERILATOR), without which Icarus -g2012 leaves combinational outputs x at
time 0 when the design is the top level, as under cocotb.

Clock gates: with --set gating=icg every gated stage instantiates an ICG cell with ports CLK, EN
and GCLK. By default the cell is focus_icg and its behavioural latch-and-AND model is appended to
each file that uses it, inside `ifndef FOCUS_ICG_MODEL / `define FOCUS_ICG_MODEL, so that each
file simulates and lints on its own and, compiled together, the model is defined once. Define
FOCUS_ICG_MODEL (+define+FOCUS_ICG_MODEL, -DFOCUS_ICG_MODEL) to supply your own focus_icg.
--icg-cell NAME instantiates the library cell NAME instead and leaves the behavioural model out:
compile the library's cell model with the emitted files (or map it in synthesis). A cell with
other pin names needs a small wrapper module called NAME, e.g. for SkyWater 130:
  module sky130_icg (input wire CLK, input wire EN, output wire GCLK);
    sky130_fd_sc_hd__dlclkp_1 u_icg (.CLK(CLK), .GATE(EN), .GCLK(GCLK));
  endmodule
and emit with --icg-cell sky130_icg.

examples:
  focus-rtl emit                                  # build/verilog/default/
  focus-rtl emit --preset board --block similarity_comparator -o out/
  focus-rtl emit --set gating=icg --icg-cell sky130_icg
"""

_SYNTH_EPILOG = """\
Targets (per block, each in its own work directory under build/synth-work/<tag>/<block>/<target>):
  generic  the block alone: Yosys synth, abc -g cmos2, stat -tech cmos: generic cells and the
           transistor estimate (a lower bound, marked '+', when latches of the behavioural ICG
           remain).
  ice40    the block in a timing harness, synth_ice40, nextpnr-ice40 --up5k --package sg48.
  ecp5     the block in a timing harness, synth_ecp5, nextpnr-ecp5 --85k --package CABGA381.
  osu018   the block alone on the OSU 0.18 um standard cells: synth, dfflibmap, abc -liberty,
           stat -liberty: cell area in um^2 (no timing). It needs osu018_stdcells.lib: `make
           liberty` fetches it (apt-get download qflow-tech-osu018, no root) into build/liberty/,
           or set FOCUS_LIBERTY=/path/to/it. Without it the flow is reported 'no_liberty' with
           that command, and the other targets run as usual. Memories become flip-flops and
           multiplexers (no SRAM macros), which dominates blocks with large buffers.
  osu018-logic
           the same, but memories are left as macros (synth without memory_map): the
           standard-cell area of the logic alone, plus the list of memories (name, width x
           depth, read/write ports, bits) to add SRAM macro area from your own memory compiler.
           Same liberty file.
  osu018-sta
           osu018-logic with ABC's fanout buffering and gate sizing (buffer; upsize; dnsize:
           the area includes the buffers), then static timing with OpenSTA (Debian's opensta,
           `sta`; as root: apt-get install opensta; FOCUS_STA=/path/to/sta overrides) on its
           netlist: one ideal
           clock at --freq osu018-sta=MHZ (default 100), every port but clk a register boundary
           (0 input/output delay), each memory cut out as an ideal synchronous SRAM (its read
           data are inputs, its address, data and enables outputs). Reports the critical path
           (start point, end point, arrival + setup, logic levels), the worst slack (WNS) and
           Fmax = 1000 / (period - WNS), which does not depend on the clock target, and the
           worst path of each class (reg->reg, in->reg, reg->out, in->out). Without `sta` the
           flow is reported 'no_sta' with the install command.

Critical paths: the report lists, per block, nextpnr's slowest register-to-register path (start
and end cells and nets, delay, logic and routing parts) for ice40/ecp5 and OpenSTA's for
osu018-sta. --check-timing exits 1 when a timed flow misses its clock target.

The timing harness drives every input bit of the block from a shift chain fed by one pin and
XOR-reduces every registered output bit into one pin, so every path is register to register.
The LUT/FF/carry/BRAM/DSP columns are the block's own cells (Yosys per-module statistics, without
the harness); the harness's overhead is reported beside them; the Fmax and the device
utilization come from nextpnr and include the harness.

--dsp auto (default) maps multipliers to DSP blocks and, when they do not fit the device, redoes
the run with LUT multipliers (the report says so). A design that does not fit or fails place and
route (or on which the WebAssembly Yosys runs out of memory) is reported with the tool's error
line and the run goes on; the exit status is 0 unless a tool is missing or Yosys reports an
ERROR, or --strict is given and some flow did not end 'ok'.

Share of the systolic array: --relative-to systolic_array (automatic when --block lists
systolic_array) also synthesizes the reference int8 weight-stationary systolic array of the unit's
shape (dim x dim PEs of elem_bits: 32x32 int8 at the default and paper presets) and reports every
block's transistors, um^2 and iCE40/ECP5 LUTs as a percentage of the array's (with
osu018-logic also the logic um^2 without memories). systolic_array_fp16 is the paper's array
(dim x dim PEs of fp16 multiply, fp32 accumulate); --relative-to
systolic_array,systolic_array_fp16 reports the shares of both. The arrays are not
part of the Focus unit: they are never in the default block list.

Output: report.json, report.md and a summary on stdout; with --sweep FIELD=V1,V2,...
sweep.json, sweep.md and sweep.png (LUTs, Fmax and area against FIELD), by default in
build/synth/<preset>/sweep-<FIELD>. Repeat --sweep for a grid of every combination
(build/synth/<preset>/sweep-<F1>-<F2>); every sweep also gives pareto.png and a table of the
area / Fmax / cycles Pareto front per block (area: osu018-sta um^2, else LUTs; Fmax: OpenSTA,
else ECP5, else iCE40; cycles of a reference job from the golden.cycles models, see
rtl/flow/cycles.py).

QoR table: --qor [PRESETS] (default: default,paper,board; `make qor`) runs ice40, ecp5 and
osu018-sta (or --target) for every block (or --block) at each preset, --set applied to each, and
writes build/qor/qor.md and qor.json (one row per preset and block with LUT, FF, BRAM, DSP, Fmax
on both FPGAs, logic um^2, memory kbit, OpenSTA Fmax and critical path) and qor.png (each
block's Fmax against the goals: ECP5 100, iCE40 40, OpenSTA 250 MHz). That is dozens of runs
of minutes each: --quick takes the board preset and similarity_comparator, offset_encoder and
offset_decoder.

Running many flows: --qor and --sweep run the flows as tasks on Dask's distributed when it is
installed (pip install 'focus-rtl[dist]'; in the dev extra): a LocalCluster of --jobs workers, or
with --scheduler ADDRESS the cluster there (its workers need the project, the liberty and
OpenSTA installed; each flow runs in the worker's own build/). --executor threads runs them here
in threads. Their results are cached in build/synth-cache (--cache-dir) under a hash of the
block, target, parameters, flow options, the generator's and flows' sources, the tool versions
and the liberty, so a rerun only does what changed (--no-cache to redo all; --cache for a
single report). --record FILE also keeps them in one JSON file to check in (make qor-board keeps
docs/qor/board-flows.json), so that another machine reruns only what changed too.

examples:
  focus-rtl synth --preset board
  focus-rtl synth --set dim=4 --target generic,ice40
  focus-rtl synth --preset board --sweep dim=2,4,8 --target ice40,ecp5
  make liberty && focus-rtl synth --target generic,osu018 --relative-to systolic_array
  focus-rtl synth --block focus_unit --target osu018-logic    # logic um^2 + list of memories
  focus-rtl synth --preset board --block offset_decoder --target osu018-sta --freq osu018-sta=50
  focus-rtl synth --preset board --sweep comparators=1,2,7 --sweep lanes=2,4 --target ecp5
  focus-rtl synth --qor board                                  # build/qor/qor.md, .json, .png
  focus-rtl synth --qor --quick --scheduler tcp://10.0.0.5:8786
"""


#: ``--qor`` without a value: every preset.
_QOR_ALL = "default,paper,board"


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line ``focus-rtl: error: ...`` and exit status 2."""

    def error(self, message):
        self.exit(2, f"focus-rtl: error: {message}\n")


def _blocks(args, reference=()):
    """The --block list (default: every block of the unit); ``reference`` names extra blocks
    allowed on request (the synth reference designs)."""
    blocks = split_list(args.block) or list(BLOCKS)
    known = [*BLOCKS, *reference]
    for block in blocks:
        if block not in known:
            raise BadArgs(f"unknown block {block!r}: blocks are {', '.join(sorted(known))}")
    return list(dict.fromkeys(blocks))


def _common(parser, what, preset_default="default"):
    add_param_arguments(parser, preset_default=preset_default)
    parser.add_argument("--block", action="append", metavar="NAME",
                        help=f"only these blocks (repeatable or comma-separated; default all: "
                             f"{', '.join(BLOCKS)})")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help=f"output directory (default: build/{what}/<preset>)")


def _parser():
    parser = _Parser(prog="focus-rtl",
                     description="Verilog and synthesis reports of the Focus unit's blocks.")
    parser.add_argument("--version", action="version", version=f"focus-rtl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    emit = sub.add_parser("emit", help="write the Verilog of each block and params.json",
                          description="Write the Verilog of each block and params.json.",
                          epilog=_EMIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(emit, "verilog")
    emit.add_argument("--icg-cell", metavar="NAME",
                      help="with gating=icg: instantiate library cell NAME (ports CLK, EN, GCLK) "
                           "and leave out the behavioural focus_icg model")
    emit.add_argument("--wrap", action="append", choices=list(WRAPPERS), metavar="BUS",
                      help="also the top behind standard buses: axi = focus_unit_axi.v "
                           "(AXI4-Lite control, AXI4-Stream data, aclk/aresetn, irq), described "
                           "in the datasheet files too (needs the block focus_unit)")

    synth = sub.add_parser("synth", help="area and timing reports (Yosys, nextpnr)",
                           description="Area and timing reports of each block: Yosys generic "
                                       "cells and transistors, iCE40 and ECP5 LUT/FF/BRAM/DSP "
                                       "and nextpnr Fmax.",
                           epilog=_SYNTH_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(synth, "synth", preset_default=None)
    synth.add_argument("--target", action="append", metavar="LIST",
                       help="targets, comma-separated: generic, ice40, ecp5, osu018, "
                            "osu018-logic, osu018-sta (default: all; with --qor: ice40, ecp5, "
                            "osu018-sta)")
    synth.add_argument("--relative-to", metavar="BLOCK",
                       help="also synthesize BLOCK (e.g. systolic_array, or a comma-separated "
                            "list: systolic_array,systolic_array_fp16) and report every "
                            "block's area as a percentage of each")
    synth.add_argument("--sweep", action="append", metavar="FIELD=V1,V2,...",
                       help="run the flows once per value of FIELD and plot LUTs and Fmax; "
                            "repeat for a grid (every combination) and its Pareto front")
    synth.add_argument("--qor", nargs="?", const=_QOR_ALL,
                       metavar="PRESETS",
                       help="the QoR table of every block at these presets (comma-separated; "
                            "default: default,paper,board): build/qor/qor.md, qor.json, qor.png")
    synth.add_argument("--readme", metavar="FILE",
                       help="with --qor: also write each preset's short table into FILE "
                            "(e.g. README.md) between its <!-- qor-PRESET:begin --> and "
                            "<!-- qor-PRESET:end --> lines")
    synth.add_argument("--quick", action="store_true",
                       help="with --qor: the board preset and similarity_comparator, "
                            "offset_encoder, offset_decoder only (unless --qor PRESETS or "
                            "--block say otherwise)")
    synth.add_argument("--executor", choices=("auto", "threads", "dask"),
                       help="where the flows run: threads here, or tasks on Dask's distributed "
                            "(a LocalCluster of --jobs workers, or --scheduler's); auto = dask "
                            "when installed (default for --qor and --sweep; threads otherwise)")
    synth.add_argument("--scheduler", metavar="ADDRESS",
                       help="run the flows on the Dask cluster at ADDRESS (e.g. "
                            "tcp://host:8786), whose workers have the project installed")
    synth.add_argument("--cache", action=argparse.BooleanOptionalAction, default=None,
                       help="take unchanged flows from the result cache and store new ones "
                            "(default: on for --qor and --sweep, off otherwise)")
    synth.add_argument("--cache-dir", metavar="DIR",
                       help="the result cache (default: build/synth-cache)")
    synth.add_argument("--record", metavar="FILE",
                       help="also keep the results in this JSON file, to check in beside a "
                            "table: unchanged flows are taken from it, each new result is "
                            "added at once, and a finished run drops the results it replaced")
    synth.add_argument("--check-timing", action="store_true",
                       help="exit 1 when a timed flow misses its clock target (FPGA: Fmax "
                            "below --freq; osu018-sta: negative worst slack)")
    synth.add_argument("--dsp", choices=("auto", "on", "off"), default="auto",
                       help="DSP inference on the FPGAs (default: auto, see below)")
    synth.add_argument("--freq", action="append", metavar="TARGET=MHZ",
                       help="nextpnr timing target or OpenSTA clock (default: ice40=48, "
                            "ecp5=100, osu018-sta=100); the achieved Fmax is reported either "
                            "way")
    synth.add_argument("--seeds", type=int, default=1, metavar="N",
                       help="FPGA targets: place and route with nextpnr seeds 1..N and report "
                            "the median run's Fmax and critical path, with the range (default: "
                            "1; a single run's Fmax moves by up to about 10 %% with the seed)")
    synth.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                       help="flows run in parallel (default: the number of CPUs)")
    synth.add_argument("--timeout", type=float, default=3600.0, metavar="SECONDS",
                       help="time allowed per tool run (default: 3600)")
    synth.add_argument("--strict", action="store_true",
                       help="exit 1 when a flow does not end 'ok' (does not fit, place and route "
                            "failed, timeout, tool crashed; a missing liberty file is not a "
                            "failure)")
    synth.add_argument("--work-dir", metavar="DIR",
                       help="root of the tool work directories (default: build/synth-work; not "
                            "under /tmp, which the YoWASP tools cannot see)")
    # Imported here, not at the top: sim and boards (and matplotlib behind them) would add about
    # 1 s to every command (focus-rtl --help: 0.56 s as it is), measured on the CI machine.
    from boards import cli as board_cli
    from rtl.flow import breakdown
    from sim import estimate, run_npz
    from sim.bench import power
    from sim.bench import suite as bench
    for module in (bench, run_npz, board_cli, estimate, power, breakdown):
        module.add_parser(sub).set_defaults(run=module.run)
    return parser


def _emit(args):

    params, blocks = params_from(args.preset, args.set), _blocks(args)
    if args.icg_cell is not None:
        try:
            check_icg_cell(args.icg_cell)
        except ValueError as exc:
            raise BadArgs(str(exc)) from None
    out = Path(args.output) if args.output else toolchain.BUILD_ROOT / "verilog" / args.preset
    if args.wrap and "focus_unit" not in blocks:
        raise BadArgs("--wrap needs the block focus_unit (its datasheet describes the wrapped "
                      "top)")
    for path in emit_files(params, out, blocks, preset=args.preset, overrides=args.set or [],
                           icg_cell=args.icg_cell, wraps=args.wrap or ()):
        print(f"wrote {display_path(path)}")
    return 0


def _targets(args):

    targets = split_list(args.target) or list(TARGETS)
    for target in targets:
        if target not in TARGETS:
            raise BadArgs(f"unknown target {target!r}: targets are {', '.join(TARGETS)}")
    return list(dict.fromkeys(targets))


def _freq(args):

    freq = {}
    for item in split_list(args.freq):
        target, _, value = item.partition("=")
        if target not in FREQ_TARGETS:
            raise BadArgs(f"--freq {item!r}: the target must be one of "
                          f"{', '.join(FREQ_TARGETS)}")
        try:
            freq[target] = float(value)
        except ValueError:
            raise BadArgs(f"--freq {item!r}: {value!r} is not a number of MHz") from None
        if not freq[target] > 0:
            raise BadArgs(f"--freq {item!r}: the frequency must be positive")
    return freq


def _sweep(args, params):
    """The --sweep axes: ``[(field, [values])]``."""
    from rtl.flow.synth import grid_points

    axes = []
    for item in args.sweep:
        field, _, text = item.partition("=")
        values = [v.strip() for v in text.split(",") if v.strip()]
        if not field.strip() or not values:
            raise BadArgs(f"--sweep {item!r} is not of the form FIELD=V1,V2,...")
        axes.append((field.strip(), values))
    try:
        grid_points(params, axes)
    except (ValueError, TypeError) as exc:
        raise BadArgs(f"--sweep: {exc}") from None
    return axes


def _check_readme(path, presets):
    """Fail before any flow runs when ``path`` cannot take the QoR tables of ``presets``."""
    from rtl.marked_text import replace_marked

    try:
        text = Path(path).read_text()
    except OSError as error:
        raise BadArgs(f"--readme {path}: {error.strerror or error}") from None
    for preset in presets:
        try:
            replace_marked(text, f"qor-{preset}", "")
        except ValueError as error:
            raise BadArgs(f"--readme {path}: {error}") from None


def _qor_presets(args):
    from rtl.flow.cli_args import PRESETS

    presets = split_list([args.qor])
    if args.quick and args.qor == _QOR_ALL:
        from rtl.flow.qor import QUICK
        presets = list(QUICK["presets"])
    for preset in presets:
        if preset not in PRESETS:
            raise BadArgs(f"--qor {args.qor!r}: unknown preset {preset!r}: presets are "
                          f"{', '.join(PRESETS)}")
    if not presets:
        raise BadArgs("--qor: no preset given")
    return list(dict.fromkeys(presets))


def _missed_timing(runs):
    """The timed flows (FPGA, osu018-sta) that ended ok but missed their clock target."""
    missed = []
    for r in runs:
        if r["status"] != "ok":
            continue
        if "timing_met" in r and not r["timing_met"]:
            missed.append(r)
        elif r.get("device_name") and r.get("fmax_mhz") is not None and \
                r["fmax_mhz"] < r["freq_target_mhz"]:
            missed.append(r)
    return missed


def _synth(args):

    qor = args.qor is not None
    if qor and args.sweep:
        raise BadArgs("--qor and --sweep do not go together")
    if qor and args.preset is not None:
        raise BadArgs("--qor takes its presets itself: --qor PRESETS (e.g. --qor board)")
    if args.quick and not qor:
        raise BadArgs("--quick goes with --qor")
    if args.readme and not qor:
        raise BadArgs("--readme goes with --qor")
    if args.readme:
        _check_readme(args.readme, _qor_presets(args))
    preset = args.preset or "default"
    params, freq = params_from(preset, args.set), _freq(args)
    if qor:
        from rtl.flow.qor import QOR_TARGETS, QUICK
        targets = _targets(args) if args.target else list(QOR_TARGETS)
        if args.quick and not args.block:
            args.block = list(QUICK["blocks"])
    else:
        targets = _targets(args)
    blocks = _blocks(args, REFERENCE_BLOCKS)
    for reference in (args.relative_to or "").split(","):
        if reference.strip() and reference.strip() not in (*BLOCKS, *REFERENCE_BLOCKS):
            raise BadArgs(f"--relative-to {reference.strip()!r}: blocks are "
                          f"{', '.join(sorted([*BLOCKS, *REFERENCE_BLOCKS]))}")
    if args.jobs < 1:
        raise BadArgs(f"--jobs {args.jobs}: must be at least 1")
    if args.seeds < 1:
        raise BadArgs(f"--seeds {args.seeds}: must be at least 1")
    if args.work_dir and str(Path(args.work_dir).resolve()).startswith("/tmp/"):
        raise BadArgs(f"--work-dir {args.work_dir}: the YoWASP tools cannot see /tmp")
    presets = _qor_presets(args) if qor else None
    many = qor or bool(args.sweep)
    try:
        executor = resolve_executor(args.executor or ("auto" if many else "threads"),
                                    args.scheduler)
    except ValueError as exc:
        raise BadArgs(str(exc)) from None
    use_cache = many if args.cache is None else args.cache
    if args.record and not use_cache:
        raise BadArgs("--record needs the cache (it is off with --no-cache, and by default "
                      "without --qor or --sweep: add --cache)")
    cache = ResultCache(args.cache_dir, record=args.record) if use_cache else None
    axes = _sweep(args, params) if args.sweep else None
    meta = {"preset": preset, "overrides": list(args.set or [])}
    progress = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    options = dict(jobs=args.jobs, work_root=args.work_dir, dsp=args.dsp, freq=freq,
                   timeout=args.timeout, progress=progress, executor=executor,
                   scheduler=args.scheduler, cache=cache, seeds=args.seeds)
    if executor == "dask":
        where = args.scheduler or f"a LocalCluster of {args.jobs} workers"
        progress(f"running the flows on Dask ({where})")
    base = toolchain.BUILD_ROOT / "synth" / preset
    pictures = []
    if qor:
        from rtl.flow.qor import plot_qor, qor_markdown, run_qor

        out = Path(args.output) if args.output else toolchain.BUILD_ROOT / "qor"
        report = run_qor(presets, blocks, targets, overrides=list(args.set or []),
                         **options)
        runs = [r for per_block in report["results"].values() for per in per_block.values()
                for r in per.values()]
        markdown = qor_markdown(report)
        names = ("qor.json", "qor.md")
        pictures = [("qor.png", plot_qor)]
        readme = None
        if args.readme:
            from rtl.flow.qor import update_readme

            readme = Path(args.readme)
            try:
                readme_text = update_readme(readme.read_text(), report)
            except ValueError as error:
                raise BadArgs(f"--readme {args.readme}: {error}") from None
    elif axes:
        fields = [field for field, _ in axes]
        out = Path(args.output) if args.output else base / f"sweep-{'-'.join(fields)}"
        report = synth.run_grid(params, axes, blocks, targets, meta=meta,
                                relative_to=args.relative_to, **options)
        runs = [r for run in report["runs"] for per in run["results"].values()
                for r in per.values()]
        markdown = synth.sweep_markdown(report)
        names = ("sweep.json", "sweep.md")
        pictures = [("sweep.png", synth.plot_sweep), ("pareto.png", plot_pareto)]
    else:
        out = Path(args.output) if args.output else base
        report = synth.run_synth(params, blocks, targets, meta=meta,
                                 relative_to=args.relative_to, **options)
        runs = [r for per in report["results"].values() for r in per.values()]
        markdown = synth.report_markdown(report)
        names = ("report.json", "report.md")
    out.mkdir(parents=True, exist_ok=True)
    written = [synth.write_json(report, out / names[0]), out / names[1]]
    if cache is not None and cache.record is not None:
        cache.save_record(prune=True)
        written.append(cache.record)
    (out / names[1]).write_text(markdown)
    if qor and readme is not None:
        readme.write_text(readme_text)
        written.append(readme)
    for name, plot in pictures:
        written.append(plot(report, out / name))
    print()
    print(markdown)
    for path in written:
        print(f"wrote {display_path(path)}")
    hard = [r for r in runs if r["status"] in synth.HARD_FAILURES]
    soft = [r for r in runs if r["status"] not in ("ok", *synth.SKIPPED)]
    if hard or (args.strict and soft):
        bad = hard or soft
        return fail(f"{len(bad)} flow(s) failed: {bad[0]['status']}: {bad[0]['error']}")
    missed = _missed_timing(runs) if args.check_timing else []
    if missed:
        r = missed[0]
        return fail(f"{len(missed)} flow(s) missed their clock target: {r['workdir']}: "
                    f"Fmax {r['fmax_mhz']} MHz < {r['freq_target_mhz']:g} MHz")
    return 0


def main(argv=None):
    """Run ``focus-rtl``; returns the exit status."""
    toolchain.apply()
    args = _parser().parse_args(argv)
    try:
        if getattr(args, "run", None):
            return args.run(args)
        return {"emit": _emit, "synth": _synth}[args.command](args)
    except BadArgs as exc:
        return fail(exc, 2)
    except ToolError as exc:
        return fail(exc)
    except OSError as exc:      # an output that cannot be created, a full disk, ...
        return fail(_os_error_message(exc))
    except KeyboardInterrupt:
        return 130


def _os_error_message(exc):
    """One line for an ``OSError``: ``PATH: reason`` (both paths for a rename), else its text."""
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    if exc.strerror and paths:
        return f"{' -> '.join(paths)}: {exc.strerror}"
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
