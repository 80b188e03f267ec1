"""Packaging: a normal (non-editable) install from a built wheel works from another folder and
writes nothing inside the installed package; every package of the tree is in the wheel."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtl.flow import toolchain

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("golden", "rtl", "sim", "boards", "focus_rtl")


def _tree(folder):
    return {p.relative_to(folder) for p in folder.rglob("*") if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def installed():
    """The wheel installed (without dependencies: the test venv has them) under a prefix."""
    work = toolchain.BUILD_ROOT / "test-packaging"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    (work / "wheel").mkdir(parents=True)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(work / "wheel"), str(ROOT)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    wheel = next((work / "wheel").glob("focus_rtl-*.whl"))
    prefix = work / "prefix"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                              "--ignore-installed",
                              "--prefix", str(prefix), str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr
    site = next(prefix.glob("lib/python3*/site-packages"))
    return work, prefix, site


def _run(installed, *args, cwd):
    work, prefix, site = installed
    env = {k: v for k, v in os.environ.items() if k not in ("FOCUS_BUILD", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    return subprocess.run([str(prefix / "bin" / "focus-rtl"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def test_every_package_is_in_the_wheel(installed):
    _, _, site = installed
    for package in PACKAGES:
        for init in (ROOT / package).rglob("__init__.py"):
            assert (site / init.relative_to(ROOT)).is_file(), init.relative_to(ROOT)
    assert (next(site.glob("focus_rtl-*.dist-info")) / "licenses" / "LICENSE").is_file()


def test_emit_from_another_folder_writes_nothing_in_site_packages(installed):
    work, _, site = installed
    before = _tree(site)
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    version = _run(installed, "--version", cwd=elsewhere)
    assert version.returncode == 0 and version.stdout.startswith("focus-rtl "), version
    where = subprocess.run([sys.executable, "-c", "import rtl; print(rtl.__file__)"], cwd=elsewhere,
                           env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True,
                           text=True)
    assert where.stdout.strip().startswith(str(site)), where   # the wheel's copy, not the checkout
    proc = _run(installed, "emit", "--preset", "board", "--block", "similarity_comparator",
                cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert (elsewhere / "build" / "verilog" / "board" / "similarity_comparator.v").is_file()
    assert _tree(site) == before, sorted(map(str, _tree(site) - before))[:10]
