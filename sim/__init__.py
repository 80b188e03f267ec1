"""The RTL behind the golden model's API (spec 6).

``sim`` mirrors :mod:`golden`: the same functions with the same signatures, computed by running the
RTL instead of NumPy, so any input can be run through both and compared with ``==``. Every function
also takes ``params=None`` (a fitting :class:`rtl.params.FocusParams` when None),
``simulator="amaranth"`` (``"icarus"`` or ``"verilator"`` run the emitted Verilog under cocotb),
``stalls=0.0`` (the seeded probability of an input idle or an output back-pressure cycle) and
``stats=None`` (a dict filled with at least ``cycles``).

The harness the drivers share: :mod:`sim.streams` (Amaranth simulator), :mod:`sim.cocotb_streams`
(cocotb drivers and monitors) and :mod:`sim.runner` (builds and runs cocotb per case).
"""

from .block_match import block_match, sic
from .focus import focus
from .gemm import focus_gemm, focus_layer
from .offsets import decode_offsets, encode_offsets
from .sec import importance, topk_mask
from .sec_unit import sec
from .similarity import similar

__all__ = ["importance", "topk_mask", "sec", "encode_offsets", "decode_offsets", "similar",
           "block_match", "sic", "focus", "focus_gemm", "focus_layer"]
