"""The RTL behind the golden model's API (spec 6).

``sim`` mirrors :mod:`golden`: the same functions with the same signatures, computed by running the
RTL instead of NumPy, so any input can be run through both and compared with ``==``. Every function
also takes ``params=None`` (a fitting :class:`rtl.params.FocusParams` when None),
``simulator="amaranth"`` (``"icarus"`` or ``"verilator"`` run the emitted Verilog under cocotb:
:data:`sim.runner.SIMULATORS`), ``stalls=0.0`` (the seeded probability of an input idle or an
output back-pressure cycle) and ``stats=None`` (a dict filled with at least ``cycles``). Bad input
raises ``ValueError`` before anything runs; a run that fails on a valid job raises
:class:`sim.streams.RTLFailure` (a ``RuntimeError``) or the harness's ``AssertionError``, never
``ValueError``.

The modules mirror :mod:`golden`'s: :mod:`sim.sec` (importance, topk_mask, sec),
:mod:`sim.offsets`, :mod:`sim.similarity`, :mod:`sim.block_match` (block_match, sic) and
:mod:`sim.focus`. The harness they share: :mod:`sim.streams` (the Amaranth simulator and its one
job runner, :func:`sim.streams.run_jobs`), :mod:`sim.cocotb_streams` (cocotb drivers and monitors)
and :mod:`sim.runner` (the simulator list and check, and cocotb builds and runs per case). The
stream beats themselves are :mod:`rtl.codecs`, which needs no simulator.
"""

from .block_match import block_match, sic
from .focus import focus
from .gemm import focus_gemm, focus_layer
from .offsets import decode_offsets, encode_offsets
from .sec import importance, sec, topk_mask
from .similarity import similar

__all__ = ["importance", "topk_mask", "sec", "encode_offsets", "decode_offsets", "similar",
           "block_match", "sic", "focus", "focus_gemm", "focus_layer"]
