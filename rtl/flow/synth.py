"""Area and timing reports of the registry blocks (``focus-rtl synth``, spec section 7).

Six targets, one work directory per (params, block, target) under ``build/synth-work``:

``generic``
    The block alone: Yosys ``synth -flatten``, flip-flops legalized to plain ``$_DFF_P_`` (so
    enables and resets are costed as gates), ``abc -g cmos2`` and ``stat -json -tech cmos``. Gives
    the generic cell counts and Yosys's transistor estimate. The estimate is a lower bound when
    cells without a CMOS cost remain (the latches of the behavioural ICG, ``gating="icg"``).
``ice40``
    The block inside a :class:`TimingHarness`, ``synth_ice40`` then ``nextpnr-ice40 --up5k
    --package sg48``.
``ecp5``
    Likewise with ``synth_ecp5`` and ``nextpnr-ecp5 --85k --package CABGA381``.
``osu018``
    The block alone, mapped to the OSU 0.18 um standard cells (Debian ``qflow-tech-osu018``'s
    ``osu018_stdcells.lib``, 32 cells; ``make liberty`` fetches it without root; found by
    :func:`rtl.flow.toolchain.liberty_path`, ``FOCUS_LIBERTY`` overrides): Yosys ``synth -flatten``,
    ``dfflibmap``, ``abc -liberty``, ``stat -liberty``. Gives the cell area in um^2 (cells only:
    no placement density, wiring or clock tree) and the part in flip-flops. The library has
    plain D flip-flops only, so enables and synchronous resets become gates, as in ``generic``.
    Its ``LATCH`` cell has area 0, so the area is a lower bound (``area_lower_bound``) when latches
    remain (the behavioural ICG, ``gating="icg"``). No timing here: see ``osu018-sta``.
    Without the liberty file the result is ``"no_liberty"``, with the command that fetches it.
    Every memory becomes flip-flops and read multiplexers (the library has no SRAM macros), which
    dominates the area of the blocks with large buffers.
``osu018-logic``
    The same flow with the memories left as macros: Yosys ``synth -run begin:fine`` (up to and
    including ``memory -nomap``), then the rest of ``synth``'s fine stage *without*
    ``memory_map``, ``dfflibmap``, ``abc -liberty``, ``stat -liberty``. The ``$mem_v2`` cells pass
    through untouched, with their ports connected (the logic around them stays), and are not in
    the area (the liberty does not know them). ROMs (memories without a write port: constant
    tables, and ``case`` statements that Yosys's ``proc_rom`` turns into tables) are mapped to
    logic as in ``osu018`` (``memory_map -rom-only``). Gives the standard-cell area of the logic
    (``area_um2``, memories excluded) and ``memories``: per memory its name, width, depth, read
    ports (``sync_read_ports`` of them registered: a read-data register folded into the memory
    by Yosys's ``memory_dff`` is part of the memory, as in a synchronous SRAM), write ports and
    bits; ``memory_bits`` is their total. An engineer adds the SRAM macro area of their own memory
    compiler. ``memories_dropped`` lists memories that were in the coarse netlist but not in the
    final one (none expected). Same liberty and ``"no_liberty"`` handling as ``osu018``.

``osu018-sta``
    The ``osu018-logic`` flow with ABC's fanout buffering and gate sizing added (``buffer -p;
    upsize; dnsize``) and buffer trees on the flip-flops' outputs of more than 16 loads
    (:func:`rtl.flow.sta.buffer_register_fanout`), so its area is a little above
    ``osu018-logic``'s, then static timing with
    OpenSTA (Debian's ``opensta``: ``sta``; ``FOCUS_STA`` overrides) on its netlist, memories
    cut out as ideal synchronous SRAMs whose ports are timing boundaries, the block's own ports
    register boundaries (0 input and output delay), one ideal clock at the target period
    (``freq``, default 100 MHz). Adds to the
    ``osu018-logic`` result ``clock_period_ns``, ``critical_path`` (start and end points and
    their kinds, arrival, setup, slack, minimum period, Fmax, logic levels and the path's pins,
    cells, nets and fanouts), ``fmax_mhz`` (1000 / (period - worst slack)), ``wns_ns``,
    ``timing_met``, ``paths`` (the worst path of each class: ``reg_to_reg``, ``in_to_reg``,
    ``reg_to_out``, ``in_to_out``), ``worst_endpoints``, ``fanout_buffers`` (the flip-flop
    nets buffered, the buffers added and their um^2) and ``sta`` (version, memory boundary
    delays and ports). Details in :mod:`rtl.flow.sta`. Without OpenSTA the result is
    ``"no_sta"`` with the install command; an OpenSTA error is ``"sta_failed"``.

FPGA critical path. ``critical_path`` of an FPGA result is nextpnr's slowest register-to-register
path (``--report`` JSON): its start and end cells and ports, its first and last nets, its delay
(1000 / delay is the Fmax), the logic and routing parts and the number of logic steps
(:func:`rtl.flow.fpga.critical_path`).

FPGA numbers. The harness keeps the block's module boundary through synthesis
(``keep_hierarchy``), so the Yosys per-module statistics split the LUT/FF/BRAM/DSP counts into
the *block's own* (``block``) and the harness's overhead (``harness``). The nextpnr utilization
(``device``) and the Fmax are for the placed design and so *include the harness*; every timed
path is register to register and passes through the block, except the harness's own shift chain
and XOR tree, which are at most one LUT level deep. On the FPGA targets a ``gating="icg"`` block is
built with clock enables (``icg_cell=None``), the FPGA equivalent of its clock gates.

DSP inference (``dsp="auto"``, the default): multipliers go to the DSP blocks (``SB_MAC16``,
``MULT18X18D``); when the placer finds more DSP cells than the device has, the run is redone with
DSP inference off (LUT multipliers) and ``dsp_fallback`` records the first attempt (the placer's
error line, its device utilization and the block's counts). ``dsp="on"`` and ``dsp="off"`` force
it. The two attempts run in the ``dsp`` and ``nodsp`` subdirectories of the work directory.

Each result has a ``status``: ``"ok"``; ``"does_not_fit"`` (the placer ran out of a resource);
``"pnr_failed"`` (any other place-and-route error); ``"timeout"`` (for nextpnr: when the next
seeds, :data:`rtl.flow.fpga.PNR_TIMEOUT_RETRIES` of them, timed out too); ``"tool_crashed"`` (the
WebAssembly Yosys died without an error message, as it does when a very large design exhausts its
memory); ``"synth_failed"`` (Yosys rejected the design with an ``ERROR:``: a real error); or
``"no_liberty"`` (``osu018`` without its liberty file: nothing ran), ``"no_sta"``
(``osu018-sta`` without OpenSTA) or ``"sta_failed"``. ``error`` holds the tool's
error line. A failing run never stops the others.

Share of a reference design. With ``relative_to`` (``focus-rtl synth --relative-to
systolic_array``, or several: ``--relative-to systolic_array,systolic_array_fp16``; automatic
for each of the two arrays that the block list holds) the report also gives each block's
transistors, um^2 and iCE40/ECP5 LUTs as a percentage of the reference block's, from the same flows
with the same parameters (:func:`relative_shares`). The um^2 share uses ``osu018``
(``area_um2``, memories as flip-flops); when ``osu018-logic`` ran, a separate share
(``logic_area_um2``) gives the logic without the memories against the array (which has none, so
its two areas are the same flow's): the two are reported side by side rather than one replacing
the other, since neither includes SRAM macro area. With several references, ``relative`` is
the first one's shares and ``relative_by`` maps every reference to its shares
(``relative_to_all`` lists them). The reference
:class:`rtl.tile.systolic_array.SystolicArray` has the unit's shape (``dim`` x ``dim`` PEs of
``elem_bits``: 32 x 32 int8 at the default and paper presets). The LUT shares count LUTs only
(DSP and BRAM blocks are not converted to LUTs), and they use the Yosys counts of each block, which
exist even when the design then does not fit the device. The paper's own reference, a
``dim`` x ``dim`` array of fp16 multipliers and fp32 adders, is ``systolic_array_fp16``
(:class:`rtl.tile.systolic_array_fp16.SystolicArrayFp16`).
"""

import itertools
import time
from pathlib import Path

from . import toolchain
from .asic import generic_flow, liberty_info, osu018_flow
from .blocks import BLOCKS, REFERENCE_BLOCKS
from .cycles import job_cycles
from .dist import ResultCache, execute
from .fpga import fpga_flow, timeout_note
from .harness import TimingHarness, harness_verilog
from .pareto import pareto_front
from .report import plot_sweep, report_markdown, sweep_markdown, write_json
from .targets import (
    DEFAULT_FREQ_MHZ,
    DEFAULT_STA_FREQ_MHZ,
    DEVICES,
    FREQ_TARGETS,
    HARD_FAILURES,
    LIBERTY_TARGETS,
    SHARE_METRICS,
    SKIPPED,
    STA_TARGETS,
    TARGETS,
)
from .tools import ToolError, check_tools, relative_path, tool_versions

__all__ = ["TARGETS", "DEVICES", "DEFAULT_FREQ_MHZ", "ToolError", "TimingHarness",
           "harness_verilog", "synth_block", "run_synth", "run_sweep", "run_grid", "grid_points",
           "point_label", "report_markdown",
           "sweep_markdown", "plot_sweep", "write_json", "HARD_FAILURES", "SKIPPED",
           "SHARE_METRICS", "relative_shares", "liberty_info", "LIBERTY_TARGETS"]


def work_root_default():
    return toolchain.BUILD_ROOT / "synth-work"


def synth_block(block, target, params, *, work_root=None, dsp="auto", freq=None, timeout=None,
                sta=None, seeds=1):
    """Run one flow and return its result dict (see the module docstring).

    Parameters
    ----------
    block : str
        A :data:`rtl.flow.blocks.BLOCKS` name.
    target : str
        ``"generic"``, ``"ice40"``, ``"ecp5"``, ``"osu018"`` or ``"osu018-logic"``.
    params : FocusParams
    work_root : path-like, optional
        Root of the work directories (default ``build/synth-work``). It must not be under
        ``/tmp``: the YoWASP tools run in a sandbox with a private ``/tmp``. The flow runs in
        ``<work_root>/<params.tag>/<block>/<target>``, with relative paths.
    dsp : str
        ``"auto"``, ``"on"`` or ``"off"`` (FPGA targets).
    freq : float, optional
        nextpnr's timing target in MHz (default :data:`DEFAULT_FREQ_MHZ`), or the clock of the
        OpenSTA target (default :data:`DEFAULT_STA_FREQ_MHZ`: 100 MHz).
    sta : dict, optional
        More options of the ``osu018-sta`` flow: ``mem_read_ns`` and ``mem_setup_ns``, the
        memory macros' read (clock-to-data) and setup times (default 0: ideal SRAMs).
    timeout : float, optional
        Seconds allowed per tool run; the result is ``"timeout"`` when exceeded.
    seeds : int
        FPGA targets: place and route once per nextpnr seed 1..``seeds``; ``fmax_mhz`` and the
        critical path are then the median run's, ``fmax_seeds`` lists every run
        (:func:`rtl.flow.fpga.seed_summary`). A single run's Fmax moves by up to about 10 %
        with the seed. A seed whose nextpnr run times out is replaced by the next one
        (``pnr_timeouts`` lists those seeds, ``pnr_seeds`` the seeds of the runs reported).
    """
    if block not in BLOCKS and block not in REFERENCE_BLOCKS:
        raise ValueError(f"Unknown block {block!r}: blocks are "
                         f"{', '.join(sorted([*BLOCKS, *REFERENCE_BLOCKS]))}")
    if target not in TARGETS:
        raise ValueError(f"Unknown target {target!r}: targets are {', '.join(TARGETS)}")
    if dsp not in ("auto", "on", "off"):
        raise ValueError(f"dsp = {dsp!r} is not allowed: it must be 'auto', 'on' or 'off'")
    _check_seeds(seeds)
    toolchain.apply()
    workdir = Path(work_root or work_root_default()) / params.tag / block / target
    if str(workdir.resolve()).startswith("/tmp/"):
        raise ValueError(f"work directory {workdir} is under /tmp, which the YoWASP tools cannot "
                         "see; use a directory under the checkout's build/")
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    if target == "generic":
        result = generic_flow(block, params, workdir, timeout)
    elif target in STA_TARGETS:
        freq = freq if freq is not None else DEFAULT_STA_FREQ_MHZ[target]
        if not freq > 0:
            raise ValueError(f"freq = {freq!r}: the clock target must be positive")
        result = osu018_flow(block, params, workdir, timeout, logic=True,
                             sta={"period_ns": round(1000.0 / freq, 6), **(sta or {})})
    elif target in LIBERTY_TARGETS:
        result = osu018_flow(block, params, workdir, timeout, logic=target == "osu018-logic")
    else:
        freq = freq if freq is not None else DEFAULT_FREQ_MHZ[target]
        result = fpga_flow(target, block, params, workdir, dsp, freq, timeout, seeds)
        result["freq_target_mhz"] = freq
        result["device_name"] = DEVICES[target][0]
    result["seconds"]["total"] = round(time.monotonic() - start, 2)
    result["workdir"] = relative_path(workdir)
    return result


def _summary(result):
    """One short line about a finished flow, for progress output."""
    if result["status"] != "ok":
        return f"{result['status']}: {result['error']}"
    if "transistors" in result:
        plus = "+" if result["transistors_lower_bound"] else ""
        return f"ok, {result['cells']} cells, {result['transistors']}{plus} transistors"
    if "area_um2" in result:
        plus = "+" if result["area_lower_bound"] else ""
        line = f"ok, {result['cells']} cells, {result['area_um2']:.0f}{plus} um^2"
        if "memories" in result:
            n = len(result["memories"])
            line += (f" of logic + {n} {'memory' if n == 1 else 'memories'} "
                     f"({result['memory_bits'] / 1024:.1f} kbit)")
        path = result.get("critical_path")
        if path:
            line += (f", Fmax {result['fmax_mhz']:.1f} MHz (WNS {result['wns_ns']:.3f} ns at "
                     f"{result['clock_period_ns']:g} ns; {path['startpoint']} -> "
                     f"{path['endpoint']})")
        return line
    fmax = result.get("fmax_mhz")
    b = result["block"]
    spread = result.get("fmax_seeds")
    seeds = (f" (median of {len(spread['seeds'])} seeds, {spread['min']:.1f} to "
             f"{spread['max']:.1f})" if spread else "")
    note = timeout_note(result)
    return (f"ok, {b['lut']} LUT, {b['ff']} FF, {b['dsp']} DSP"
            + (f", {fmax:.1f} MHz{seeds}" if fmax else ", no Fmax")
            + (f" ({note})" if note else ""))


def _run_tasks(tasks, jobs, progress, options, executor="threads", scheduler=None, cache=None):
    """Run ``(key, note, block, target, params)`` tasks ``jobs`` at a time
    (:func:`rtl.flow.dist.execute`); returns {key: result}."""
    return execute(tasks, options, jobs=jobs, progress=progress, executor=executor,
                   scheduler=scheduler, cache=cache, summary=_summary)


def _check_seeds(seeds):
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
        raise ValueError(f"seeds = {seeds!r}: it must be a whole number, at least 1")


def _options(work_root, dsp, freq, timeout, sta=None, seeds=1):
    _check_seeds(seeds)
    return {"work_root": work_root, "dsp": dsp, "freq": dict(freq or {}), "timeout": timeout,
            "sta": dict(sta or {}), "seeds": seeds}


def _cache(cache):
    """A :class:`ResultCache` for ``cache``: None or False (no cache), True (the default
    directory, ``build/synth-cache``), a directory, or a ResultCache."""
    if cache is None or cache is False:
        return None
    if isinstance(cache, ResultCache):
        return cache
    return ResultCache(None if cache is True else cache)


def _cache_meta(cache):
    if cache is None:
        return {}
    meta = {"dir": relative_path(cache.directory), "hits": cache.hits, "misses": cache.misses}
    if cache.record is not None:
        meta["record"] = relative_path(cache.record)
    return {"cache": meta}


#: The reference arrays that become references by themselves when the block list holds them.
AUTO_REFERENCES = ("systolic_array", "systolic_array_fp16")


def _references(blocks, relative_to):
    """The block list with the reference blocks in it, and the references: ``relative_to`` (a
    block name, a comma-separated list of them, or a list), else those of
    :data:`AUTO_REFERENCES` that the list holds (possibly none)."""
    blocks = list(blocks or BLOCKS)
    if isinstance(relative_to, str):
        relative_to = [r.strip() for r in relative_to.split(",") if r.strip()]
    references = list(dict.fromkeys(relative_to or [])) or [
        r for r in AUTO_REFERENCES if r in blocks]
    for reference in references:
        if reference not in BLOCKS and reference not in REFERENCE_BLOCKS:
            raise ValueError(f"Unknown reference block {reference!r}: blocks are "
                             f"{', '.join(sorted([*BLOCKS, *REFERENCE_BLOCKS]))}")
        if reference not in blocks:
            blocks.append(reference)
    return blocks, references


def _reference(blocks, relative_to):
    """:func:`_references` with only the first reference (None when there is none)."""
    blocks, references = _references(blocks, relative_to)
    return blocks, (references[0] if references else None)


def _add_shares(report, results, references):
    """``relative`` (the first reference's shares) and, per reference, ``relative_by``."""
    if references:
        report["relative"] = relative_shares(results, references[0])
        report["relative_by"] = {r: relative_shares(results, r) for r in references}


def _share(value, reference):
    if value is None or not reference:
        return None
    return round(100.0 * value / reference, 2)


def relative_shares(results, reference):
    """Each block's metrics as a percentage of block ``reference``'s.

    Parameters
    ----------
    results : dict
        ``{block: {target: result}}`` as in a report.
    reference : str
        The reference block, a key of ``results``.

    Returns
    -------
    dict
        ``{block: {metric: percent or None}}`` for every block but the reference, over the
        :data:`SHARE_METRICS` whose target was run (None where either flow gave no number).
    """
    def metrics(per_target):
        return {name: read(per_target[target]) for name, (target, read) in SHARE_METRICS.items()
                if target in per_target}

    ref = metrics(results[reference])
    return {block: {name: _share(value, ref[name]) for name, value in metrics(per).items()}
            for block, per in results.items() if block != reference}


def run_synth(params, blocks=None, targets=TARGETS, *, jobs=1, progress=print, work_root=None,
              dsp="auto", freq=None, timeout=None, meta=None, relative_to=None, sta=None,
              executor="threads", scheduler=None, cache=None, seeds=1):
    """Run every (block, target) flow for ``params``; returns the report dict.

    ``freq`` maps an FPGA target to its nextpnr timing target in MHz (and ``osu018-sta`` to its
    clock). ``meta`` (e.g. the preset and the overrides) is copied into the report.
    ``relative_to`` names a reference block, or several (a list or a comma-separated string;
    each is added to ``blocks`` when missing; by default those of :data:`AUTO_REFERENCES` that
    ``blocks`` holds): the report then has ``relative_to`` (the first), ``relative_to_all``,
    ``relative`` (:func:`relative_shares` against the first) and ``relative_by`` (reference ->
    its shares). ``sta`` and ``seeds``: the ``osu018-sta`` options and the nextpnr seeds of
    :func:`synth_block`. ``executor``, ``scheduler`` and ``cache`` choose where the flows run
    and whether unchanged ones are taken from the cache (:mod:`rtl.flow.dist`; ``cache=True`` is
    ``build/synth-cache``). Raises :class:`ToolError` when a tool is missing.
    """
    blocks, references = _references(blocks, relative_to)
    targets = list(targets)
    check_tools(targets)
    options = _options(work_root, dsp, freq, timeout, sta, seeds)
    cache = _cache(cache)
    tasks = [((None, block, target), None, block, target, params)
             for block in blocks for target in targets]
    results = _run_tasks(tasks, jobs, progress, options, executor, scheduler, cache)
    report = _report_header(params, targets, dsp, freq, meta)
    report.update(_cache_meta(cache))
    report["results"] = {block: {target: results[(None, block, target)] for target in targets}
                         for block in blocks}
    if references:
        report["relative_to"] = references[0]
        report["relative_to_all"] = references
        _add_shares(report, report["results"], references)
    return report


def _report_header(params, targets, dsp, freq, meta):
    return {
        **(meta or {}),
        "params": params.to_dict(),
        "tag": params.tag,
        "targets": list(targets),
        "devices": {t: DEVICES[t][0] for t in targets if t in DEVICES},
        "dsp": dsp,
        "freq_target_mhz": {t: (freq or {}).get(t, FREQ_TARGETS[t])
                            for t in targets if t in FREQ_TARGETS},
        "tools": tool_versions(targets),
        **({"liberty": liberty_info()} if set(LIBERTY_TARGETS) & set(targets) else {}),
        "notes": _notes(targets),
    }


def _notes(targets):
    notes = []
    if "generic" in targets:
        notes.append("generic: the block alone, Yosys synth + abc -g cmos2, stat -tech cmos; "
                     "memories become flip-flops (no RAM macros), so buffers dominate where a "
                     "block has them.")
    if any(t in DEVICES for t in targets):
        notes += [
            ("FPGA LUT/FF/carry/BRAM/DSP: the block's own cells (Yosys per-module stat), "
            "without the timing harness."),
            ("FPGA harness LUT / FF: the harness's own cells (shift chain, output registers, "
            "XOR tree)."),
            "FPGA Fmax and logic cells used: nextpnr, for block + harness (JSON 'device').",
            ("'LUT multipliers': the DSP blocks did not fit, so the run was redone without DSP "
            "inference (--dsp auto)."),
        ]
    if "ecp5" in targets:
        notes.append("ecp5 LUT = LUT4 + 2 * CCU2C (a CCU2C is two LUT4s with carry).")
    if "osu018" in targets:
        notes.append("osu018: the block alone, Yosys synth + dfflibmap + abc -liberty, stat "
                     "-liberty on the OSU 0.18 um cells: cell area only (no placement density, "
                     "wires or clock tree; memories as flip-flops and multiplexers); no timing "
                     "(osu018-sta times the osu018-logic netlist). '+': latches remain, which "
                     "the library costs at 0 um^2.")
    if "osu018-logic" in targets:
        notes.append("osu018-logic: as osu018, but the memories are left as macros (synth "
                     "without memory_map): logic area um^2 is the standard cells of everything "
                     "but the memories, whose SRAM macro area is to be added from a memory "
                     "compiler (ROMs, i.e. memories without a write port, are mapped to logic "
                     "as in osu018); each memory is listed (width x depth, read ports (sync), "
                     "write ports, bits). A read-data register folded into a memory by Yosys "
                     "counts as part of it (a synchronous-read SRAM). Compared with osu018, the "
                     "memories' flip-flops, write-enable multiplexers and read multiplexers are "
                     "gone.")
    if "osu018-sta" in targets:
        notes.append("osu018-sta: the osu018-logic netlist, with ABC's fanout buffering and gate "
                     "sizing (buffer; upsize; dnsize) and buffer trees on the flip-flops' outputs "
                     "of more than 16 loads (its logic area includes all those buffers), "
                     "timed by OpenSTA (Debian's opensta) on the liberty's delay tables: one ideal"
                     " clock (no clock tree, skew or wires); every port but clk is a register "
                     "boundary with 0 input / output delay; each memory is cut out as an ideal "
                     "synchronous SRAM (its read data are input ports, its address, data and "
                     "enables output ports). Fmax = 1 / (clock period - worst setup slack): the "
                     "constraints scale with the period, so it does not depend on the clock "
                     "target. WNS < 0: the target is missed. With gating=icg the clock gates' "
                     "latches are timed too (clock-gating checks, time borrowing; half-period "
                     "paths make the Fmax an estimate).")
    if any(t in DEVICES for t in targets):
        notes.append("FPGA critical path: nextpnr's slowest register-to-register path (in the "
                     "block + harness): its start and end cells and nets, and its delay "
                     "(1000 / delay = the Fmax).")
    if "osu018" in targets and "osu018-logic" in targets:
        notes.append("Share of the reference: '% um^2 (osu018)' counts memories as flip-flops, "
                     "'% logic um^2 (osu018-logic)' leaves them out; neither has SRAM macros.")
    return notes


def run_sweep(params, field, values, blocks=None, targets=TARGETS, **kwargs):
    """Run the flows once per value of ``field`` (strings, as given to ``--set``):
    :func:`run_grid` over one axis. The sweep's ``field`` is the field and each run's ``value``
    the parsed value."""
    return run_grid(params, [(field, values)], blocks, targets, **kwargs)


def grid_points(params, axes):
    """The points of the grid ``axes`` (``[(field, [value strings])]``): a list of
    ``({field: value string}, FocusParams)``, the last axis varying fastest, duplicates (the same
    parameters twice) dropped. Bad fields or values raise ``ValueError``."""
    axes = [(field.strip(), [str(v).strip() for v in values]) for field, values in axes]
    if not axes or any(not values for _, values in axes):
        raise ValueError("a sweep needs at least one field with at least one value")
    fields = [field for field, _ in axes]
    if len(set(fields)) != len(fields):
        raise ValueError(f"a field is swept twice: {', '.join(fields)}")
    points, seen = [], set()
    for combination in itertools.product(*(values for _, values in axes)):
        point = dict(zip(fields, combination, strict=True))
        p = params.with_overrides([f"{f}={v}" for f, v in point.items()])
        if p.tag not in seen:
            seen.add(p.tag)
            points.append((point, p))
    return points


def point_label(point):
    """``"comparators=1,lanes=2"`` for ``{"comparators": 1, "lanes": 2}``."""
    return ",".join(f"{field}={value}" for field, value in point.items())


def run_grid(params, axes, blocks=None, targets=TARGETS, *, jobs=1, progress=print,
             work_root=None, dsp="auto", freq=None, timeout=None, meta=None, relative_to=None,
             sta=None, executor="threads", scheduler=None, cache=None, cycles=True, seeds=1):
    """Run the flows at every point of the grid ``axes`` (``[(field, [values])]``, values as
    strings given to ``--set``; one axis is a plain sweep).

    Returns the sweep dict: the header of :func:`run_synth`'s report, plus ``fields``, ``axes``
    (``{field: [values]}``), ``field`` (the fields joined with ",") and ``runs`` (one per point:
    ``point`` (field -> parsed value), ``value`` (the parsed value of a one-axis sweep, else the
    point's label ``"f1=v1,f2=v2"``), the params tag, the per-block per-target results, with
    ``relative_to`` the shares of that run as in :func:`run_synth`, and with ``cycles`` the
    :func:`rtl.flow.cycles.job_cycles` of each block), and with ``cycles`` the ``pareto`` front
    of :func:`rtl.flow.pareto.pareto_front`. For one axis ``values`` lists its values. The other
    options are :func:`run_synth`'s. Bad values raise ``ValueError`` before anything runs.
    """
    blocks, references = _references(blocks, relative_to)
    targets = list(targets)
    points = grid_points(params, axes)
    fields = [field for field, _ in axes]
    check_tools(targets)
    options = _options(work_root, dsp, freq, timeout, sta, seeds)
    cache = _cache(cache)
    tasks = [((p.tag, block, target), point_label(point), block, target, p)
             for point, p in points for block in blocks for target in targets]
    results = _run_tasks(tasks, jobs, progress, options, executor, scheduler, cache)
    sweep = _report_header(params, targets, dsp, freq, meta)
    sweep.update(_cache_meta(cache))
    sweep.update(fields=fields, field=",".join(fields),
                 axes={field: list(values) for field, values in axes})
    if len(fields) == 1:
        sweep["values"] = list(axes[0][1])
    sweep["runs"] = []
    for point, p in points:
        parsed = {field: getattr(p, field) for field in point}
        run = {"point": parsed,
               "value": parsed[fields[0]] if len(fields) == 1 else point_label(parsed),
               "tag": p.tag,
               "results": {block: {target: results[(p.tag, block, target)]
                                   for target in targets} for block in blocks}}
        _add_shares(run, run["results"], references)
        if cycles:
            run["cycles"] = {block: job_cycles(block, p) for block in blocks}
        sweep["runs"].append(run)
    if references:
        sweep["relative_to"] = references[0]
        sweep["relative_to_all"] = references
    if cycles:
        sweep["pareto"] = pareto_front(sweep)
    return sweep
