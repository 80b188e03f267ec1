"""cocotb side of the host driver: :class:`CocotbTransport` and the test module that runs
:class:`boards.host.FocusBoard` against the emitted Verilog of
:class:`boards.bridge.FocusBoardCore`.

The host driver is blocking Python; cocotb is async. The driver runs in a cocotb ``bridge``
thread, and the transport's ``read`` ``resume``s the simulation until the bytes arrive, exactly as
:class:`boards.sim_transport.SimTransport` does in the Amaranth simulator. The serial line is
modelled bit by bit (``rx`` driven one bit time per bit, ``tx`` sampled mid-bit).

:func:`run_board_job` (pytest side) emits the Verilog, builds it with Icarus or Verilator through
the cocotb runner, and runs the ``host_job`` test, which reads a job from the JSON file named by
``FOCUS_BOARD_JOB`` and writes the results to ``FOCUS_BOARD_OUT``.
"""

import json
import os
from collections import deque

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.task import bridge, resume
from cocotb.triggers import ClockCycles, FallingEdge, Timer
from cocotb_tools.runner import get_runner

from rtl.flow import toolchain
from rtl.flow.emit import emit_verilog
from rtl.params import FocusParams
from sim.runner import BUILD_ARGS, CocotbFailure, case_dir, check_results, locked

from .bridge import FocusBoardCore
from .host import FocusBoard

__all__ = ["CocotbTransport", "run_board_job", "BOARD_TOP"]

BOARD_TOP = "focus_board"
CLOCK_NS = 10


class CocotbTransport:
    """The host's serial line into a cocotb simulation (call from a ``bridge`` thread).

    Parameters
    ----------
    dut : cocotb handle
        Top level with ``rx`` and ``tx``.
    divisor : int
        The design's clock cycles per bit.
    """

    def __init__(self, dut, divisor):
        self.dut = dut
        self.divisor = divisor
        self.bit_ns = divisor * CLOCK_NS
        self.bit_time = self.bit_ns * 1e-9
        self.default_timeout = 3000 * 10 * self.bit_time
        self.sent = self.received = self.host_framing_errors = 0
        self._out = deque()
        self._in = bytearray()

    async def drive(self):
        self.dut.rx.value = 1
        while True:
            if not self._out:
                await Timer(self.bit_ns, unit="ns")
                continue
            kind, value = self._out.popleft()
            if kind == "byte":
                for bit in [0, *(value >> i & 1 for i in range(8)), 1]:
                    self.dut.rx.value = bit
                    await Timer(self.bit_ns, unit="ns")
                self.sent += 1
            else:
                self.dut.rx.value = 0
                await Timer(value * self.bit_ns, unit="ns")
                self.dut.rx.value = 1

    async def decode(self):
        while True:
            await FallingEdge(self.dut.tx)
            await Timer(self.bit_ns * 3 // 2, unit="ns")
            byte = 0
            for i in range(8):
                byte |= int(self.dut.tx.value) << i
                await Timer(self.bit_ns, unit="ns")
            if int(self.dut.tx.value):
                self._in.append(byte)
                self.received += 1
            else:
                self.host_framing_errors += 1

    def write(self, data):
        for byte in bytes(data):
            self._out.append(("byte", byte))

    def send_break(self, bits=30):
        self._out.append(("low", bits))

    def read(self, n, timeout):
        async def wait():
            waited = 0.0
            while len(self._in) < n and waited < timeout:
                await Timer(20 * self.bit_ns, unit="ns")
                waited += 20 * self.bit_time
        resume(wait)()
        out = bytes(self._in[:n])
        del self._in[:n]
        return out

    def close(self):
        pass


def _host_job(transport, job):
    """Blocking: run ``job`` through a FocusBoard on ``transport``; returns JSON-able results."""
    board = FocusBoard(transport, params=FocusParams.from_dict(job["params"]))
    mask, words, nbits, maps, uniques = board.focus(
        np.array(job["scores"]), np.array(job["tokens"]), job["keep"], **job["kwargs"])
    return {"mask": mask.tolist(), "words": [int(w) for w in words], "nbits": int(nbits),
            "maps": maps.tolist(), "uniques": [u.tolist() for u in uniques],
            "bytes": transport.sent + transport.received,
            "host_framing_errors": transport.host_framing_errors}


@cocotb.test()
async def host_job(dut):
    job = json.loads(open(os.environ["FOCUS_BOARD_JOB"]).read())
    Clock(dut.clk, CLOCK_NS, unit="ns").start()
    dut.rx.value = 1
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    transport = CocotbTransport(dut, job["divisor"])
    cocotb.start_soon(transport.drive())
    cocotb.start_soon(transport.decode())
    result = await bridge(_host_job)(transport, job)
    with open(os.environ["FOCUS_BOARD_OUT"], "w") as out:
        json.dump(result, out)


def run_board_job(params, divisor, scores, tokens, keep, *, simulator="icarus", case="focus",
                  bridge_kw=None, **kwargs):
    """Run ``FocusBoard.focus(scores, tokens, keep, **kwargs)`` against the Verilog of
    ``FocusBoardCore(params, divisor, **bridge_kw)`` under cocotb; returns the result dict
    (``mask``, ``words``, ``nbits``, ``maps``, ``uniques`` as lists, ``bytes`` on the wire)."""
    toolchain.apply()
    directory = case_dir(BOARD_TOP, params, simulator, f"{case}-d{divisor}")
    directory.mkdir(parents=True, exist_ok=True)
    bridge_kw = bridge_kw or {}
    job_in, job_out = directory / "job.json", directory / "out.json"
    with locked(directory / ".lock"):
        source = directory / f"{BOARD_TOP}.v"
        text = emit_verilog(FocusBoardCore(params, divisor, **bridge_kw), BOARD_TOP, params)
        if not source.is_file() or source.read_text() != text:
            source.write_text(text)
        runner = get_runner(simulator)
        build_log, test_log = directory / "build.log", directory / "test.log"
        try:
            runner.build(sources=[source], hdl_toplevel=BOARD_TOP, build_dir=directory,
                         build_args=BUILD_ARGS[simulator], timescale=("1ns", "1ps"),
                         log_file=build_log)
        except (RuntimeError, SystemExit) as error:
            raise CocotbFailure(f"the board build failed ({error}); log: {build_log}") from None
        job_in.write_text(json.dumps({
            "params": params.to_dict(), "divisor": divisor,
            "scores": [[int(v) for v in row] for row in scores],
            "tokens": [[int(v) for v in row] for row in tokens], "keep": int(keep),
            "kwargs": kwargs}))
        job_out.unlink(missing_ok=True)
        results = directory / "results.xml"
        results.unlink(missing_ok=True)
        try:
            runner.test(test_module="boards.tb_board", hdl_toplevel=BOARD_TOP,
                        build_dir=directory, test_dir=directory, results_xml=str(results),
                        log_file=test_log, testcase="host_job",
                        extra_env={"FOCUS_BOARD_JOB": str(job_in),
                                   "FOCUS_BOARD_OUT": str(job_out)})
        except (RuntimeError, SystemExit):
            pass
        check_results(results, test_log, f"board on {simulator}", "host_job")
        return json.loads(job_out.read_text())
