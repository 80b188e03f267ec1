"""The bit-exact NumPy golden model of the Focus unit (spec sections 2 to 4 and 6).

``golden`` and ``sim`` expose the same functions with the same signatures: ``golden`` computes in
NumPy, ``sim`` runs the RTL, so any input can be run through both and compared with ``==``.

- :mod:`golden.formats`: scores from fp16, int8 quantization, thresholds (spec 2, 4.3).
- :mod:`golden.sec`: importance, top-k and the whole SEC (spec 3.1, 3.2).
- :mod:`golden.offsets`: the Exp-Golomb offset code (spec 3.3).
- :mod:`golden.similarity`: the exact integer cosine test (spec 4.1).
- :mod:`golden.block_match`: the block matcher and the whole SIC (spec 4.2).
- :mod:`golden.cycles`: the analytic cycle model of every block.
- :mod:`golden.reference`: the float64 model of the paper's algorithm.
- :mod:`golden.photo`: real data: tokens and attention from a photograph panned into frames.
- :mod:`golden.gemm`, :mod:`golden.gemm_cycles`: the Focus GEMM and its cycle model.
"""

from . import cycles, gemm_cycles, photo, reference
from .block_match import block_match, sic
from .focus import focus
from .formats import depth_thresholds, quantize, scores_from_fp16, theta_q
from .gemm import focus_gemm, focus_layer
from .offsets import decode_offsets, encode_offsets
from .sec import importance, sec, topk_mask
from .similarity import similar

__all__ = [
    "scores_from_fp16", "quantize", "theta_q", "depth_thresholds",
    "importance", "topk_mask", "sec",
    "encode_offsets", "decode_offsets",
    "similar", "block_match", "sic",
    "focus",
    "cycles", "reference", "photo",
    "focus_gemm", "focus_layer", "gemm_cycles",
]
