"""The registry of emittable, synthesizable blocks: the one list that ``focus-rtl emit``,
``focus-rtl synth``, the cocotb runner and the tests walk. Add a block here when you add its file.
"""

from ..sec.importance_analyzer import ImportanceAnalyzer
from ..sec.offset_decoder import OffsetDecoder
from ..sec.offset_encoder import OffsetEncoder
from ..sec.semantic_concentrator import SemanticConcentrator
from ..sec.topk_selector import TopKSelector
from ..sic.block_matcher import BlockMatcher
from ..sic.dot_scorer import DotScorer
from ..sic.frame_stats import FrameStats
from ..sic.map_coder import MapCoder
from ..sic.map_decoder import MapDecoder
from ..sic.serial_best_candidate import best_candidate
from ..sic.similarity_comparator import SimilarityComparator
from ..tile.focus_gemm import FocusGemm
from ..tile.fp16_multiplier import FP16Multiplier
from ..tile.fp32_adder import FP32Adder
from ..tile.scatter_stage import ScatterStage
from ..tile.systolic_array import SystolicArray
from ..tile.systolic_array_fp16 import SystolicArrayFp16
from ..top.axi_wrapper import FocusUnitAXI
from ..top.focus_gemm_coded import FocusGemmCoded
from ..top.focus_unit import FocusUnit

__all__ = ["BLOCKS", "REFERENCE_BLOCKS", "WRAPPERS", "build_block"]

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
    # The compressed similarity map (spec 4.5, 4.6): the matcher with its map coder and frame
    # statistics, those two alone, and the consumer's decoder.
    "block_matcher_map_code": lambda p, icg_cell: BlockMatcher(p, icg_cell=icg_cell,
                                                               map_code=True, frame_stats=True),
    "map_coder": lambda p, icg_cell: MapCoder(p),
    "frame_stats": lambda p, icg_cell: FrameStats(p),
    "map_decoder": lambda p, icg_cell: MapDecoder(p),
    # The tile fed map codes: the decoder in front of FocusGemm's scatter stage.
    "focus_gemm_coded": lambda p, icg_cell: FocusGemmCoded(p),
}

#: Reference designs, not part of the Focus unit, so not in BLOCKS (nor walked by default): only
#: ``focus-rtl synth --block NAME`` / ``--relative-to NAME`` and :func:`build_block` use them.
#: The systolic array has the unit's shape: dim x dim PEs of elem_bits (32 x 32 int8 by default).
REFERENCE_BLOCKS = {
    "systolic_array": lambda p, icg_cell: SystolicArray(p.dim, p.dim, p.elem_bits),
    # The paper's array (its Table I): dim x dim PEs of fp16 multiply, fp32 accumulate.
    "systolic_array_fp16": lambda p, icg_cell: SystolicArrayFp16(p.dim, p.dim),
    # One fp16 array PE's arithmetic (combinational): its multiplier and its adder.
    "fp16_multiplier": lambda p, icg_cell: FP16Multiplier(),
    "fp32_adder": lambda p, icg_cell: FP32Adder(),
    # The comparator without clock gating (gate=False): the baseline of the power comparison.
    "similarity_comparator_ungated": lambda p, icg_cell: SimilarityComparator(
        p, icg_cell=icg_cell, gate=False),
    # FocusGemm's scatter stage alone (accumulation buffer and adders): its area beside the array.
    "scatter_stage": lambda p, icg_cell: ScatterStage(p),
    # Two of the block matcher's stages alone, to time them in minutes: one pair scorer (dot
    # product and dot**2) and the selection (the "better" tests and the threshold test).
    "dot_scorer": lambda p, icg_cell: DotScorer(p, icg_cell=icg_cell),
    "best_candidate": lambda p, icg_cell: best_candidate(p),
}


#: The top behind standard buses, by ``focus-rtl emit --wrap`` name: wrap -> (module name,
#: factory). Not in BLOCKS (emit writes it only when asked); :func:`build_block` and the cocotb
#: runner take the module name.
WRAPPERS = {
    "axi": ("focus_unit_axi", lambda p, icg_cell: FocusUnitAXI(p, icg_cell=icg_cell)),
}


def build_block(name, params, *, icg_cell="focus_icg"):
    """Construct block ``name`` (of BLOCKS, REFERENCE_BLOCKS, or a module name of WRAPPERS) for
    ``params``; ``icg_cell=None`` models ICGs as clock enables."""
    wrapped = {module: factory for module, factory in WRAPPERS.values()}
    factory = BLOCKS.get(name) or REFERENCE_BLOCKS.get(name) or wrapped.get(name)
    if factory is None:
        raise ValueError(f"Unknown block {name!r}: blocks are {', '.join(sorted(BLOCKS))}")
    return factory(params, icg_cell)
