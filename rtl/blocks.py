"""The registry of emittable, synthesizable blocks: the one list that ``focus-rtl emit``,
``focus-rtl synth``, the cocotb runner and the tests walk. Add a block here when you add its file.
"""

from .block_matcher import BlockMatcher
from .importance_analyzer import ImportanceAnalyzer
from .offset_decoder import OffsetDecoder
from .offset_encoder import OffsetEncoder
from .similarity_comparator import SimilarityComparator
from .topk_selector import TopKSelector

__all__ = ["BLOCKS", "build_block"]

#: block name -> factory(params, icg_cell) -> wiring.Component
BLOCKS = {
    "similarity_comparator": lambda p, icg_cell: SimilarityComparator(p, icg_cell=icg_cell),
    "block_matcher": lambda p, icg_cell: BlockMatcher(p, icg_cell=icg_cell),
    "offset_encoder": lambda p, icg_cell: OffsetEncoder(p),
    "offset_decoder": lambda p, icg_cell: OffsetDecoder(p),
    "importance_analyzer": lambda p, icg_cell: ImportanceAnalyzer(p),
    "topk_selector": lambda p, icg_cell: TopKSelector(p),
}


def build_block(name, params, *, icg_cell="focus_icg"):
    """Construct block ``name`` for ``params``; ``icg_cell=None`` models ICGs as clock enables."""
    if name not in BLOCKS:
        raise ValueError(f"Unknown block {name!r}: blocks are {', '.join(sorted(BLOCKS))}")
    return BLOCKS[name](params, icg_cell)
