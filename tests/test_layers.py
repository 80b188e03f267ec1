"""The layering of the packages: no import runs back up the layers and no module-level import
cycle exists.

The layers, lowest first (a module may import from its own layer and the ones below):

- ``golden``: the NumPy model; imports no project package.
- ``rtl`` blocks (``rtl.params``, ``rtl.layouts``, ``rtl.block``, ``rtl.lib``, ``rtl.sec``,
  ``rtl.sic``, ``rtl.top``, ``rtl.tile``): hardware only; never the tools in ``rtl.flow``.
- ``rtl.flow``: emit, synth, toolchain, the block registry and the shared CLI arguments.
- ``sim``: the drivers, harness, testbenches and benchmarks.
- ``boards``: gateware for the boards, the protocol, the host driver, board builds.
- ``focus_rtl``: the command line, the only package that may import every other.

Within ``rtl``, ``lib`` is below ``sec`` and ``sic``, which are below ``top``; ``sec`` and ``sic``
do not import each other. ``boards.host`` (the driver for a real board) imports neither ``sim``
nor a simulator.

The check reads the source (``ast``), so imports inside functions count too.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("golden", "rtl", "sim", "boards", "focus_rtl")

RANK = {"golden": 0, "rtl": 1, "rtl.flow": 2, "sim": 3, "boards": 4, "focus_rtl": 5}
RTL_RANK = {"rtl.params": 0, "rtl.layouts": 0, "rtl.block": 0, "rtl": 0, "rtl.lib": 1,
            "rtl.sec": 2, "rtl.sic": 2, "rtl.tile": 2, "rtl.top": 3}


def modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            yield ".".join(parts), path, is_package


def imports(name, path, is_package, top_level_only=False):
    """(line, imported module) for every import in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    base = name.split(".") if is_package else name.split(".")[:-1]
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                module = ".".join(anchor + ([node.module] if node.module else []))
            else:
                module = node.module
            yield node.lineno, module
            for alias in node.names:               # "from rtl import toolchain" names a module
                yield node.lineno, f"{module}.{alias.name}"


def layer(module):
    parts = module.split(".")
    if parts[0] == "rtl" and len(parts) > 1 and parts[1] == "flow":
        return "rtl.flow"
    return parts[0]


def rtl_group(module):
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else "rtl"


def project_module(module, known):
    """The longest prefix of ``module`` that is a project module, or None."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in known:
            return candidate
    return None


ALL = list(modules())
KNOWN = {name for name, _, _ in ALL}


def violations(name, path, is_package):
    here = layer(name)
    seen = set()
    for line, imported in imports(name, path, is_package):
        target = project_module(imported, KNOWN) or imported
        if (line, target) in seen or target.split(".")[0] not in PACKAGES + ("amaranth",):
            continue
        seen.add((line, target))
        if target.startswith("amaranth"):
            if name == "boards.host" and target.startswith("amaranth.sim"):
                yield (f"{path.relative_to(ROOT)}:{line}: {name} imports {target} (the host "
                       "driver needs no simulator)")
            continue
        there = layer(target)
        where = f"{path.relative_to(ROOT)}:{line}: {name} imports {target}"
        if RANK[there] > RANK[here]:
            yield f"{where} (layer {there} is above {here})"
        elif here == there == "rtl":
            a, b = RTL_RANK.get(rtl_group(name), 0), RTL_RANK.get(rtl_group(target), 0)
            if b > a or (a == b == 2 and rtl_group(name) != rtl_group(target)):
                yield f"{where} ({rtl_group(target)} is not below {rtl_group(name)})"
        if name == "boards.host" and there == "sim":
            yield f"{where} (the host driver needs no simulator)"


@pytest.mark.parametrize("name,path,is_package", ALL, ids=[name for name, _, _ in ALL])
def test_no_import_from_a_higher_layer(name, path, is_package):
    found = list(violations(name, path, is_package))
    assert not found, "\n".join(found)


def test_host_needs_no_simulator():
    path = ROOT / "boards" / "host.py"
    tree = ast.parse(path.read_text())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
              if node.module}
    assert not {n for n in names if n.startswith(("amaranth.sim", "sim", "cocotb"))}


def test_no_module_level_import_cycle():
    graph = {}
    for name, path, is_package in ALL:
        found = (project_module(t, KNOWN)
                 for _, t in imports(name, path, is_package, top_level_only=True))
        graph[name] = {t for t in found if t and t != name}
    # a package's __init__ importing its own submodules is not a cycle of concern
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                if not all(b.startswith(a + ".") or a.startswith(b + ".")
                           for a, b in zip(cycle, cycle[1:], strict=False)):
                    raise AssertionError("import cycle: " + " -> ".join(cycle))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name)


@pytest.mark.parametrize("name,source,reason", [
    ("rtl.sec.probe", "from sim.streams import pack\n", "layer sim is above rtl"),
    ("rtl.sic.probe", "def f():\n    from rtl.flow import toolchain\n", "rtl.flow is above rtl"),
    ("rtl.sec.probe", "from ..sic.window_buffer import WindowBuffer\n", "not below rtl.sec"),
    ("sim.probe", "import boards.host\n", "layer boards is above sim"),
    ("boards.host", "from amaranth.sim import Simulator\n", "needs no simulator"),
])
def test_the_checker_sees_a_violation(name, source, reason):
    """The check can fail: each kind of violation is reported."""
    probe = ROOT / "build" / "layers_probe" / f"{name}.py"
    probe.parent.mkdir(parents=True, exist_ok=True)
    probe.write_text(source)
    found = list(violations(name, probe, False))
    assert found and all(reason in f for f in found), found
