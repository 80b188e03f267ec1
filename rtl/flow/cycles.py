"""The cycles of one reference job of each block, from the analytic models of
:mod:`golden.cycles`, for the area / Fmax / cycles Pareto front of a sweep.

The reference job is the same for every block, set by the parameters alone:

- ``M = tokens`` image tokens, ``R = 64`` score rows (the benchmarks' ``ROWS``), spatial order;
- every other token kept (``k = ceil(M / 2)``), so the offset code holds a first gap of 0
  and ``k - 1`` gaps of 1 (``golden.offsets.encode_offsets``, adaptive order, gives ``nbits``);
- a SIC tile of ``S = min(tile, k)`` tokens: the kept ones.

Per block: ``similarity_comparator`` compares ``S`` pairs (``similar_cycles``);
``block_matcher`` matches a tile (``block_match_cycles(S, comparators)``);
``importance_analyzer`` (``importance_cycles(R, M, lanes)``), ``topk_selector``
(``topk_cycles(M, k, lanes, score_bits, sorter)``), ``offset_encoder`` (``encode_cycles``) and
``offset_decoder`` (``decode_cycles``); ``sec`` is the analyzer's input beats plus the
selector's job (the vector goes from one to the other through the buffer, not through the
analyzer's readout); ``focus_unit`` is the SEC job plus one SIC tile. The last two are sums of
the block models, not a model of the unit's own pipeline. Blocks without a model (the reference
systolic array) give None.
"""

from functools import lru_cache

__all__ = ["ROWS", "job_cycles"]

#: Score rows of the reference job (as the SEC benchmarks).
ROWS = 64


@lru_cache(maxsize=256)
def _nbits(M, word_bits):
    import numpy as np

    from golden.offsets import encode_offsets

    mask = np.zeros(M, dtype=bool)
    mask[::2] = True
    return int(encode_offsets(mask, None, word_bits)[1])


def job_cycles(block, params):
    """``{"job": description, "cycles": int}`` of the reference job of ``block`` at ``params``,
    or None for a block without a cycle model."""
    from golden import cycles as model

    M, a = params.tokens, params.lanes
    k = (M + 1) // 2
    S = min(params.tile, k)
    nbits = _nbits(M, params.word_bits)
    job = f"M={M} R={ROWS} k={k} S={S}"
    sec = (ROWS * -(-M // a) + model.IMPORTANCE_LATENCY
           + model.topk_cycles(M, k, a, params.score_bits, params.sorter))
    per_block = {
        "similarity_comparator": lambda: model.similar_cycles(S),
        "block_matcher": lambda: model.block_match_cycles(S, params.comparators),
        "importance_analyzer": lambda: model.importance_cycles(ROWS, M, a),
        "topk_selector": lambda: model.topk_cycles(M, k, a, params.score_bits, params.sorter),
        "offset_encoder": lambda: model.encode_cycles(M, k, nbits, a, params.word_bits),
        "offset_decoder": lambda: model.decode_cycles(nbits, k, M, a, params.word_bits),
        "sec": lambda: sec,
        "focus_unit": lambda: sec + model.block_match_cycles(S, params.comparators),
    }
    if block not in per_block:
        return None
    return {"job": job, "cycles": int(per_block[block]())}
