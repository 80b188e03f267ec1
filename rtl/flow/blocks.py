"""The registry of emittable, synthesizable blocks: the one list that ``focus-rtl emit``,
``focus-rtl synth``, the cocotb runner and the tests walk. Add a block here when you add its file.
"""

from ..sec.importance_analyzer import ImportanceAnalyzer
from ..sec.offset_decoder import OffsetDecoder
from ..sec.offset_encoder import OffsetEncoder
from ..sec.semantic_concentrator import SemanticConcentrator
from ..sec.topk_selector import TopKSelector
from ..sic.block_matcher import BlockMatcher
from ..sic.similarity_comparator import SimilarityComparator
from ..tile.focus_gemm import FocusGemm
from ..tile.scatter_stage import ScatterStage
from ..tile.systolic_array import SystolicArray
from ..top.focus_unit import FocusUnit

__all__ = ["BLOCKS", "REFERENCE_BLOCKS", "build_block"]

#: block name -> factory(params, icg_cell) -> wiring.Component
BLOCKS = {
    "similarity_comparator": lambda p, icg_cell: SimilarityComparator(p, icg_cell=icg_cell),
    "block_matcher": lambda p, icg_cell: BlockMatcher(p, icg_cell=icg_cell),
    "offset_encoder": lambda p, icg_cell: OffsetEncoder(p),
    "offset_decoder": lambda p, icg_cell: OffsetDecoder(p),
    "importance_analyzer": lambda p, icg_cell: ImportanceAnalyzer(p),
    "topk_selector": lambda p, icg_cell: TopKSelector(p),
    "sec": lambda p, icg_cell: SemanticConcentrator(p),
    "focus_unit": lambda p, icg_cell: FocusUnit(p, icg_cell=icg_cell),
    "focus_gemm": lambda p, icg_cell: FocusGemm(p),
}

#: Reference designs, not part of the Focus unit, so not in BLOCKS (nor walked by default): only
#: ``focus-rtl synth --block NAME`` / ``--relative-to NAME`` and :func:`build_block` use them.
#: The systolic array has the unit's shape: dim x dim PEs of elem_bits (32 x 32 int8 by default).
REFERENCE_BLOCKS = {
    "systolic_array": lambda p, icg_cell: SystolicArray(p.dim, p.dim, p.elem_bits),
    # FocusGemm's scatter stage alone (accumulation buffer and adders): its area beside the array.
    "scatter_stage": lambda p, icg_cell: ScatterStage(p),
}


def build_block(name, params, *, icg_cell="focus_icg"):
    """Construct block ``name`` (of BLOCKS or REFERENCE_BLOCKS) for ``params``; ``icg_cell=None``
    models ICGs as clock enables."""
    factory = BLOCKS.get(name) or REFERENCE_BLOCKS.get(name)
    if factory is None:
        raise ValueError(f"Unknown block {name!r}: blocks are {', '.join(sorted(BLOCKS))}")
    return factory(params, icg_cell)
