"""The drop-in IP (``FocusUnitAXI``, ``focus_unit_axi.v``) under cocotbext-axi's bus models on
Icarus and Verilator (slow tier): reads of every address, SLVERR for bad accesses, back-to-back
jobs under the four crossed pause patterns against golden.focus, and the interrupt.

One simulator build and run per simulator (:mod:`sim.tb.focus_unit_axi` runs all its tests in
one simulation); the testbench writes what it saw, and the checks here compare it with golden
and with the register map's fixed values (``tests/test_registers.py`` freezes the map).
"""

import json
import shutil

import numpy as np
import pytest

import golden
from rtl.params import FocusParams
from rtl.top.registers import READABLE, Reg
from sim.focus import job_record, run_results
from sim.runner import case_dir, run_cocotb

pytestmark = pytest.mark.cocotb

SMALL = dict(tokens=40, lanes=4, dim=4, window=16, tile=24, layers=2)
CASES = [
    ("icarus", FocusParams(**SMALL, comparators=7, gating="icg")),
    ("verilator", FocusParams(**SMALL, comparators=2)),
]
OKAY, SLVERR = 0b00, 0b10
#: The testbench's pause patterns: (sources pause, sinks pause).
PATTERNS = {"none": (False, False), "idle": (True, False), "backpressure": (False, True),
            "both": (True, True)}


def _jobs(p):
    """Two different jobs (the second with one column, spatial, fixed order, first), as
    (golden arguments, job record)."""
    rng = np.random.default_rng(5)
    jobs = []
    for M, R, D, keep, mode, order, repr_ in [(37, 3, 8, 21, "temporal", None, "mean"),
                                              (24, 2, 4, 9, "spatial", 2, "first")]:
        scores = rng.integers(0, 5000, (R, M))
        protos = rng.integers(-100, 101, (3, D))
        tokens = protos[rng.integers(0, 3, M)] + rng.integers(-4, 5, (M, D))
        tokens[rng.random(M) < 0.1] = 0
        args = dict(mode=mode, order=order, frame_stride=6, row_stride=2,
                    theta_q=golden.theta_q(0.9), representative=repr_)
        want = golden.focus(scores, tokens, keep, theta_bits=p.theta_bits, tile=p.tile,
                            window=p.window, dim=p.dim, word_bits=p.word_bits, **args)
        jobs.append((want, job_record(p, scores, tokens, keep, **args)))
    return jobs


def _check_registers(out):
    reads = out["reads"]
    for addr, (value, resp) in enumerate(reads):
        if addr in READABLE:
            want = 0xF0C05001 if addr == Reg.ID else 0
            assert (value, resp) == (want, OKAY), f"read {addr:#04x}"
        else:
            assert (value, resp) == (0, SLVERR), f"read {addr:#04x}"
    assert sum(resp == SLVERR for _, resp in reads) == 256 - len(READABLE)
    writes = out["writes"]
    assert writes.pop("SEC_M") == writes.pop("SEC_MODE") == writes.pop("IRQ_ENABLE") == OKAY
    assert writes and all(resp == SLVERR for resp in writes.values()), writes
    after = {name: tuple(v) for name, v in out["after"].items()}
    # A refused access never reaches the unit: no BUS flag, nothing written.
    assert after == {"ID": (0xF0C05001, OKAY), "STATUS": (0, OKAY), "SEC_M": (0x12345678, OKAY),
                     "SEC_MODE": (1, OKAY), "KEPT": (0, OKAY), "IRQ_ENABLE": (7, OKAY),
                     "IRQ_STATUS": (0, OKAY)}


def _check_jobs(p, jobs, out, pattern, baseline):
    records, beats, transfers = out["records"], out["beats"], out["transfers"]
    assert len(records) == len(jobs)
    for n, ((want, job), record) in enumerate(zip(jobs, records, strict=True)):
        mask, words, nbits, maps, uniques, _ = run_results(p, job, record, beats, transfers)
        where = f"{pattern}, job {n}"
        np.testing.assert_array_equal(mask, want[0], err_msg=where)
        np.testing.assert_array_equal(words, want[1], err_msg=where)
        assert nbits == want[2], where
        np.testing.assert_array_equal(maps, want[3], err_msg=where)
        assert len(uniques) == len(want[4]), where
        for got, expected in zip(uniques, want[4], strict=True):
            np.testing.assert_array_equal(got, expected, err_msg=where)
        assert record["sec"]["KEPT"] == int(want[0].sum()), where
    # Every stream carried every job's beats: the monitors saw the transfers.
    for port in ("scores", "tokens", "mask", "code", "sic"):
        assert transfers[port], f"{pattern}: no transfer on {port}"
    # The pauses happened: without them the first job's scores go one per cycle, and its sic
    # beats at the matcher's rate (``baseline``: the run without pauses); source pauses put gaps
    # between scores, sink pauses change the spacing of the sic beats.
    source_pause, sink_pause = PATTERNS[pattern]

    def spacing(transfers, port, beats=12):
        return np.diff(transfers[port][:beats]).tolist()

    assert (max(spacing(transfers, "scores")) > 1) == source_pause, pattern
    if not source_pause:
        # All of the sic beats: a pause that falls before the first beats are offered leaves
        # their spacing alone (the SIC start's latency decides which beats the first pauses meet).
        every = len(baseline["sic"])
        changed = spacing(transfers, "sic", every) != spacing(baseline, "sic", every)
        assert changed == sink_pause, pattern


@pytest.mark.parametrize("simulator, p", CASES, ids=[s for s, _ in CASES])
def test_axi_regression(simulator, p, require_simulator):
    """All of the testbench on one build: registers, jobs x 4 pause patterns, interrupts."""
    require_simulator(simulator)
    jobs = _jobs(p)
    directory = case_dir("focus_unit_axi", p, simulator, "axi")
    out = directory / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / "jobs.json").write_text(json.dumps([job for _, job in jobs]))
    run_cocotb("focus_unit_axi", p, test_module="sim.tb.focus_unit_axi", simulator=simulator,
               case="axi", extra_env={"FOCUS_AXI_JOBS": str(out / "jobs.json"),
                                      "FOCUS_AXI_OUT": str(out)})
    _check_registers(json.loads((out / "registers.json").read_text()))
    runs = {pattern: json.loads((out / f"jobs-{pattern}.json").read_text())
            for pattern in PATTERNS}
    for pattern, run in runs.items():
        _check_jobs(p, jobs, run, pattern, runs["none"]["transfers"])
    assert json.loads((out / "interrupts.json").read_text()) == {"done": True}
