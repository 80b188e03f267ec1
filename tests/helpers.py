"""Helpers shared by the tests that run tools as subprocesses: the console script and yowasp-sby.

Fixtures live in ``conftest.py``; these are plain functions a test imports (``from helpers import
...``; pytest puts ``tests/`` on the path).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["focus_rtl", "run_sby"]


def _command():
    script = Path(sys.executable).parent / "focus-rtl"
    return [str(script)] if script.exists() else [sys.executable, "-m", "focus_rtl.cli"]


def focus_rtl(*args, cwd, build=None):
    """Runs the ``focus-rtl`` console script in ``cwd``; ``build`` sets ``FOCUS_BUILD`` (where
    the default outputs go). Returns the ``CompletedProcess`` with text output."""
    env = dict(os.environ)
    if build is not None:
        env["FOCUS_BUILD"] = str(build)
    return subprocess.run(_command() + [str(a) for a in args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def run_sby(work, name, top, ports, modes, depth, engine="smtbmc --nopresat z3", script="",
            timeout=900):
    """Checks the assertions of the Amaranth module ``top`` with yowasp-sby and z3 in ``work``.

    ``modes`` is one sby mode (``prove``, ``bmc``, ``cover``; the run goes in ``work/name``) or a
    list of them, run as sby tasks (in ``work/name_<mode>``). ``script`` adds Yosys commands after
    ``prep``. Returns (exit status, log, {mode: the task's status word, or "MISSING"}).

    ``ports`` must include the clock: left out, Amaranth ties it to 0 and every assertion holds
    vacuously. The YoWASP tools cannot see /tmp, so ``work`` is a directory under build/ and sby
    runs there with relative paths.
    """
    tasked = not isinstance(modes, str)
    modes = list(modes) if tasked else [modes]
    options = "\n".join(f"{mode}: mode {mode}" for mode in modes) if tasked else f"mode {modes[0]}"
    tasks = "[tasks]\n" + "\n".join(modes) + "\n\n" if tasked else ""
    (work / f"{name}.il").write_text(rtlil.convert(top, name="top", ports=ports))
    (work / f"{name}.sby").write_text(
        f"{tasks}[options]\n{options}\ndepth {depth}\nmulticlock off\n\n[engines]\n{engine}\n\n"
        f"[script]\nread_rtlil {name}.il\nprep -top top\n{script}\n[files]\n{name}.il\n")
    runs = {mode: work / (f"{name}_{mode}" if tasked else name) for mode in modes}
    for run_dir in runs.values():
        shutil.rmtree(run_dir, ignore_errors=True)
    run = subprocess.run([os.environ.get("SBY", "yowasp-sby"), "-f", f"{name}.sby"], cwd=work,
                         capture_output=True, text=True, timeout=timeout)
    status = {mode: (d / "status").read_text().split()[0] if (d / "status").exists() else "MISSING"
              for mode, d in runs.items()}
    return run.returncode, run.stdout + run.stderr, status
