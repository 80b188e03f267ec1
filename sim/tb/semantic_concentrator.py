"""cocotb testbench of the complete SEC, block ``sec`` (spec 3; style R8).

Run through :func:`sim.runner.run_cocotb` (parameters as JSON in ``FOCUS_PARAMS``). One test,
``job``: the data path of :func:`sim.sec.run_sec_jobs` (and so of ``sim.sec``) with
``simulator="icarus"``/``"verilator"``. It reads ``{"jobs", "stalls", "seed", "budget"}`` from the
JSON file ``FOCUS_JOB``, runs the jobs back to back the way the Amaranth runner does (the same
seeded stall decisions per port, one per cycle), records every transfer, the per-cycle
``busy``/``done``/``error``/``cause`` and the ``kept``/``nbits``/``order`` outputs at each
``done``, checks the stream rules on all four ports, and writes the record to ``FOCUS_JOB_OUT``,
where :func:`sim.sec.collect` turns it into per-job results.
"""

import json
import os

import cocotb
from amaranth.lib import data
from cocotb.triggers import FallingEdge, RisingEdge, with_timeout

from rtl.layouts import mask_beat_layout, offset_word_layout, score_beat_layout
from rtl.sec.importance_analyzer import Dataflow
from rtl.sec.semantic_concentrator import sec_config_layout

from ..cocotb_streams import PERIOD_NS, StreamMonitor, StreamSource, start_bench
from ..sec import PORTS, TRACED, config_is_good
from ..streams import Stalls, unpack
from .settings import PARAMS


def _high(handle):
    return str(handle.value) == "1"


def _int(handle):
    """The value of a signal of any width (``Logic`` for one bit, ``LogicArray`` otherwise)."""
    return int(str(handle.value), 2)


@cocotb.test(skip="FOCUS_JOB" not in os.environ)
async def job(dut):
    """Jobs from ``FOCUS_JOB`` (JSON), the record of the run to ``FOCUS_JOB_OUT``."""
    with open(os.environ["FOCUS_JOB"]) as f:
        spec = json.load(f)
    p, stalls, seed = PARAMS, spec["stalls"], spec["seed"]
    jobs = spec["jobs"]
    inputs, outputs = PORTS
    out_layouts = {"mask_stream": mask_beat_layout(p), "code_stream": offset_word_layout(p)}
    cfg_src = StreamSource(dut, "cfg_stream", sec_config_layout(p), stalls, seed)
    beat_src = StreamSource(dut, "i_stream", score_beat_layout(p), stalls, seed)
    sink_stalls = {port: Stalls.of(stalls, seed=f"{seed}:{port}") for port in outputs}
    for port in outputs:
        getattr(dut, f"{port}__ready").value = 0
    monitors = [StreamMonitor(dut, port) for port in (*inputs, *outputs)]
    await start_bench(dut, monitors)
    dut._log.info("SEC: %d jobs, params %s, stalls %s, seed %s", len(jobs), p.tag, stalls, seed)

    expected = sum(config_is_good(p, j["cfg"]) for j in jobs)
    transfers = {port: [] for port in (*inputs, *outputs)}
    trace = {name: [] for name in TRACED}
    values = []
    state = {"sent": False}

    async def driver():
        for j in jobs:
            cfg = dict(j["cfg"], mode=Dataflow[j["cfg"]["mode"].upper()])
            await cfg_src.send([cfg])
            await beat_src.send([{"scores": beat} for beat in j["beats"]])
        state["sent"] = True

    async def sink(port):
        ready = getattr(dut, f"{port}__ready")
        while True:
            ready.value = int(not sink_stalls[port]())
            await RisingEdge(dut.clk)

    handles = {port: [getattr(dut, f"{port}__{s}") for s in ("valid", "ready", "payload")]
               for port in (*inputs, *outputs)}

    async def recorder():
        cycle = 0
        while True:
            await FallingEdge(dut.clk)
            now = [_int(dut.busy), _int(dut.done), _int(dut.error), _int(dut.cause)]
            for name, v in zip(TRACED, now, strict=True):
                trace[name].append(str(v))
            if now[1]:
                values.append((cycle, _int(dut.kept), _int(dut.nbits), _int(dut.order)))
            for port, (valid, ready, payload) in handles.items():
                if _high(valid) and _high(ready):
                    if port in inputs:
                        transfers[port].append(cycle)
                    else:
                        bits = payload.value.to_unsigned()
                        transfers[port].append(
                            (cycle, unpack(data.Const(out_layouts[port], bits))))
            cycle += 1

    async def finish():
        while True:
            await RisingEdge(dut.clk)
            lasts = [sum(1 for _, q in transfers[port] if q["last"]) for port in outputs]
            if state["sent"] and all(n >= expected for n in lasts) \
                    and len(transfers["cfg_stream"]) == len(jobs):
                break
        for _ in range(3):
            await RisingEdge(dut.clk)

    tasks = [cocotb.start_soon(driver()), cocotb.start_soon(recorder())]
    tasks += [cocotb.start_soon(sink(port)) for port in outputs]
    await with_timeout(cocotb.start_soon(finish()), spec["budget"] * PERIOD_NS, "ns")
    for task in tasks:
        task.cancel()
    for monitor in monitors:
        monitor.check()
        monitor.stop()
    with open(os.environ["FOCUS_JOB_OUT"], "w") as f:
        json.dump({"transfers": transfers, "values": values,
                   "trace": {k: "".join(v) for k, v in trace.items()}}, f)
