# amaranth: UnusedElaboratable=no
"""The Markdown datasheet ``datasheet.md`` that ``focus-rtl emit`` writes beside the top: the
parameters, every port with its field layout, the register map, the latency and throughput of
each stream, and the resources of the last ``focus-rtl synth`` run for these parameters, when
``build/synth/`` has one. Everything comes from the tables the RTL is built from
(:data:`rtl.top.registers.REGISTERS`, the payload ``StructLayout``s, the parameters and the
matcher's stage latencies) and from the synthesis report; nothing is written twice.
"""

import json
from pathlib import Path

from amaranth.hdl import Shape
from amaranth.lib import stream
from amaranth.lib.wiring import In

from ..sic.block_matcher import matcher_latency, matcher_rounds
from ..top.axi_wrapper import AXI_CTRL, axis_ports
from ..top.focus_unit import focus_unit_members
from ..top.registers import render_markdown
from .layouts_doc import layout_fields

__all__ = ["datasheet_markdown", "find_synth_report", "stream_timing"]


def find_synth_report(params, root):
    """The newest ``report.json`` under ``root/*/`` (``build/synth/<preset>/``) made for
    ``params`` (same tag), as a dict, or None."""
    found = []
    for path in Path(root).glob("*/report.json"):
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if report.get("tag") == params.tag and isinstance(report.get("results"), dict):
            found.append((path.stat().st_mtime, str(path), report))
    if not found:
        return None
    _, path, report = max(found)
    report = dict(report)
    report["path"] = path
    return report


def stream_timing(params):
    """``{port: (beats per job, throughput, latency)}`` of the top's streams, with no stalls (the
    figures of :class:`rtl.top.focus_unit.FocusUnit`'s docstring and spec 3.4 and 5)."""
    p = params
    rounds, latency = matcher_rounds(p), matcher_latency(p)
    return {
        "scores": ("R * ceil(M / lanes) (either layout)", "1 beat per cycle",
                   "a beat offered early transfers 2 cycles after the START_SEC write"),
        "mask": ("ceil(M / lanes), `last` on the final one",
                 ("1 beat per cycle at best; a beat with j >= 2 kept tokens takes j cycles "
                 "(the encoder takes one kept token per cycle)"),
                 "after the analysis and the selection: the SEC job model of spec 3.4"),
        "code": ("ceil(nbits / word_bits) words, `last` on the final one",
                 "1 word per cycle at best", "beside the mask (spec 3.4)"),
        "tokens": ("S = kept tokens, one V-element column each, `last` on the final one",
                   (f"1 token per {rounds} cycle{'s' if rounds > 1 else ''} "
                   f"(ceil(7 / comparators))"),
                   "a token offered early transfers 5 cycles after the START_SIC write"),
        "sic": (("S map beats, plus one beat per unique vector with `mean`, `last` on the final "
                "one"), f"1 map beat per {rounds} cycle{'s' if rounds > 1 else ''}",
                (f"a token's map beat leaves {latency + rounds - 1} cycles after the token "
                f"(SIC_CYCLES = S * {rounds} + {latency} with `first`)")),
    }


def _fields_table(layout):
    """A field table of ``layout``; an array is one row, ``name[i]`` at ``offset + width*i``."""
    rows = ["| field | offset | width | signed |", "|---|---:|---:|---|"]
    fields = layout_fields(layout)
    seen = set()
    for f in fields:
        name, offset = f"`{f['name']}`", str(f["offset"])
        if f["name"].endswith("]"):
            base = f["name"][:f["name"].rindex("[")]
            if base in seen:
                continue
            seen.add(base)
            count = sum(1 for g in fields if g["name"].startswith(base + "["))
            name, offset = f"`{base}[i]`, i = 0..{count - 1}", f"{offset} + {f['width']}*i"
        rows.append(f"| {name} | {offset} | {f['width']} | "
                    f"{'yes' if f['signed'] else 'no'} |")
    return rows


def _unit_ports(params):
    lines = ["| port | direction | width | what |", "|---|---|---:|---|"]
    members = focus_unit_members(params)
    layouts = {}
    for name, member in members.items():
        direction = "in" if member.flow == In else "out"
        if member.is_signature and isinstance(member.signature, stream.Signature):
            layout = member.signature.members["payload"].shape
            layouts[name] = layout
            lines.append(f"| `{name}` (`{name}__payload`, `__valid`, `__ready`) | {direction} | "
                         f"{Shape.cast(layout).width} | stream |")
        elif member.is_signature:
            lines.append(f"| `{name}__*` | {direction} | - | the register bus (spec 5.4) |")
        else:
            lines.append(f"| `{name}` | {direction} | {Shape.cast(member.shape).width} | |")
    lines.append("| `clk`, `rst` | in | 1 | clock, synchronous active-high reset |")
    return lines, layouts


def _axi_ports(params):
    lines = ["| port | direction | `tdata` width | `tlast` | carries |", "|---|---|---:|---|---|",
             "| `aclk`, `aresetn` | in | - | - | clock, synchronous active-low reset |",
             (f"| `{AXI_CTRL}_*` | AXI4-Lite target | 32 | - | the registers, register n at "
             f"byte 4n; SLVERR for unmapped reads and for writes to read-only or unmapped "
             f"addresses or with a partial WSTRB |")]
    layouts = {}
    for name, (prefix, flow, _, tdata, has_last) in axis_ports(params).items():
        layouts[prefix] = tdata
        lines.append(f"| `{prefix}_*` | AXI4-Stream {'in' if flow == In else 'out'} | "
                     f"{Shape.cast(tdata).width} | {'yes' if has_last else 'no'} | `{name}` |")
    lines.append("| `irq` | out | - | - | high while IRQ_STATUS & IRQ_ENABLE != 0 |")
    return lines, layouts


def _resources(report):
    lines = ["| block | target | result |", "|---|---|---|"]
    for block, targets in report["results"].items():
        for target, r in targets.items():
            status = r.get("status")
            if status != "ok":
                text = status
            elif target == "generic":
                text = f"{r['cells']} cells, {r['ff']} FF, {r['transistors']} transistors"
            elif target in ("ice40", "ecp5"):
                b = r.get("block", {})
                text = (f"{b.get('lut')} LUT, {b.get('ff')} FF, {b.get('bram')} BRAM, "
                        f"{b.get('dsp')} DSP")
                if r.get("fmax_mhz") is not None:
                    text += f", {r['fmax_mhz']:.1f} MHz"
            elif "area_um2" in r:
                text = f"{r['area_um2']:.0f} um^2"
                if r.get("memory_bits"):
                    text += f" + {r['memory_bits']} memory bits"
                if r.get("fmax_mhz") is not None:
                    text += f", {r['fmax_mhz']:.1f} MHz (OpenSTA)"
            else:
                text = "ok"
            lines.append(f"| {block} | {target} | {text} |")
    return lines


def datasheet_markdown(params, sic=True, wraps=(), report=None, version="0"):
    """The text of ``datasheet.md`` for ``params``; ``report`` is a ``focus-rtl synth``
    report for them (:func:`find_synth_report`) or None."""
    p = params
    out = [f"# Focus unit datasheet: {p.tag}", "",
           (f"Generated by focus-rtl {version} `emit` from the code's tables: do not edit. The "
           f"contract is the project's `docs/spec.md`."), "",
           "## Parameters", "", "| parameter | value |", "|---|---|"]
    out += [f"| `{k}` | {v} |" for k, v in p.to_dict().items()]
    out += ["", "## Ports of `focus_unit`", ""]
    lines, layouts = _unit_ports(p)
    out += lines
    for name, layout in layouts.items():
        out += ["", f"### `{name}` payload ({Shape.cast(layout).width} bits)", ""]
        out += _fields_table(layout)
    if "axi" in wraps:
        out += ["", "## Ports of `focus_unit_axi` (`--wrap axi`)", "",
                ("`tdata` is the payload without `last` at the same offsets, padded with zero "
                "bits (`reserved`) to whole bytes; `tlast` is `last`. Handshakes and timing are "
                "those of the `focus_unit` port of the same name."), ""]
        lines, layouts = _axi_ports(p)
        out += lines
        for prefix, layout in layouts.items():
            out += ["", f"### `{prefix}_tdata` ({Shape.cast(layout).width} bits)", ""]
            out += _fields_table(layout)
    out += ["", "## Registers", "",
            "32-bit words; word address n (byte address 4n on AXI4-Lite)."
            + ("" if sic else " The SIC registers are unmapped in this unit (built without SIC)."),
            "", render_markdown().rstrip("\n"), ""]
    out += ["## Latency and throughput of each stream", "",
            "With no stalls; every stream may be stalled at any time and loses nothing.", "",
            "| stream | beats per job | throughput | latency |", "|---|---|---|---|"]
    out += [f"| `{name}` | {beats} | {rate} | {latency} |"
            for name, (beats, rate, latency) in stream_timing(p).items()]
    out += ["", "## Resources", ""]
    if report is None:
        out += [("No `focus-rtl synth` report for these parameters in `build/synth/`: run "
                f"`focus-rtl synth` with them (tag {p.tag}) and emit again."), ""]
    else:
        out += [(f"From the last `focus-rtl synth` run for these parameters "
                f"(`{Path(report['path']).parent.name}/report.json`, preset "
                f"{report.get('preset')})."), ""]
        out += _resources(report) + [""]
    return "\n".join(out)
