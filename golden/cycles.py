"""The analytic cycle model of the Focus unit's blocks (first version).

Every ``*_cycles`` function gives the cycles of one job of a block with no stalls: from the job's
first input transfer to its last output transfer, inclusive (``stats["cycles"]`` of ``sim``, spec
section 6). The ``*_target`` functions give the spec's upper bounds (rounded down to an integer,
since a cycle count is at most X exactly when it is at most floor(X)), and ``topk_paper`` the
paper's cost estimate. The benchmarks report measured cycles against all three.

The pipeline latencies below are named so that later issues can refine them against the RTL.
"""

from numbers import Integral

import numpy as np

__all__ = [
    "SIMILAR_LATENCY", "IMPORTANCE_LATENCY", "TOPK_LATENCY", "BUBBLE_SORT_LATENCY",
    "RADIX_DIGIT_GAP", "RADIX_MASK_LATENCY", "ENCODE_LATENCY", "ENCODE_RTL_CONSTANT",
    "DECODE_LATENCY",
    "DECODE_WALK_LATENCY",
    "BLOCK_MATCH_LATENCY", "TARGET_SLACK",
    "similar_cycles", "importance_cycles", "topk_cycles", "topk_target", "topk_paper",
    "encode_cycles", "encode_fields", "encode_rtl_cycles", "decode_cycles", "block_match_cycles",
    "block_match_target", "SIC_INPUT_LATENCY", "sic_cycles",
]

# Similarity comparator: 7 register stages (operands, products, group sums, dot, dot**2's pieces,
# dot**2, compare; the threshold side alongside); one pair per cycle.
SIMILAR_LATENCY = 7
# Importance analyzer: the vector is complete 3 cycles after the last beat (read, read register,
# write back; spec 3.1 allows 3); its readout's first read is issued then, and the first beat
# leaves the cycle after.
IMPORTANCE_LATENCY = 3
# Top-k selector: a vector beat is written, its word read back the next cycle, registered by the
# sweeper (so the block RAM's output delay has a cycle of its own), and a mask beat leaves through
# the output register: 4 cycles from a beat in to the first mask beat it allows.
TOPK_LATENCY = 4
# Bubble sorter, once per job with k > 0: the serializer's word register, the chain's input
# register and the threshold register, between the words and the mask pass.
BUBBLE_SORT_LATENCY = 3
# Radix selector: idle cycles between histogram passes (the last word passes the three histogram
# stages, digit and candidacy, the bins' counts and their accumulation, and the digit is chosen
# in two steps, while the next pass's first word waits in the sweeper), and the mask pass's two
# extra stages (the tie prefix counts, then the choice of the ties kept).
RADIX_DIGIT_GAP = 4
RADIX_MASK_LATENCY = 2
# Offset encoder: gap counter, gap memory read and its register, code value, code length, bit
# packer (its field register and accumulator) and output register stages (10), plus the tail
# gap and the counting stage (2) and the choice of the scheme, one of 32 per cycle read and
# compared a cycle later (25 more than the 8 orders it once chose among).
ENCODE_LATENCY = 37
# The offset encoder's exact count, which the estimate above does not give: the sum over mask
# beats of max(1, kept) (ingest, one kept token per cycle), then max(encode_fields, words)
# (emission, one field per cycle), then this constant, one fewer when no code follows the header
# (no gap passes the gap register). Measured counts are that or one more.
ENCODE_RTL_CONSTANT = 45
# Offset decoder: word window, the parser's lookahead (a cycle after the header, and a cycle
# from a word into the window to its codes), code parse, value stage, index stage, mask write
# stages.
DECODE_LATENCY = 8
# A dropped-set code: the walker's dropped-index and pending-index registers, and its last step.
DECODE_WALK_LATENCY = 3
# Block matcher (rtl.sic.block_matcher.matcher_latency): input register (1), window read and its
# data register (2), pair scorers (5), selection and threshold test (21 for any comparator count),
# map lookup (1), output register (1).
BLOCK_MATCH_LATENCY = 1 + 2 + 5 + 21 + 1 + 1
# The constant term of the spec's targets ("... + 64 cycles").
TARGET_SLACK = 64


def _int(value, name, low=0):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    if value < low:
        raise ValueError(f"{name} = {value} is out of range: it must be >= {low}")
    return int(value)


def _cdiv(a, b):
    return -(-a // b)


def similar_cycles(n_pairs):
    """Cycles of the similarity comparator for ``n_pairs`` comparisons.

    ``n_pairs + SIMILAR_LATENCY`` (one pair per cycle into a 7-stage pipeline); 0 for n = 0.
    """
    n = _int(n_pairs, "n_pairs")
    return n + SIMILAR_LATENCY if n else 0


def importance_cycles(R, M, lanes, mode="spatial"):
    """Cycles of the importance analyzer for an [R, M] job with ``a = lanes``.

    ``beats + IMPORTANCE_LATENCY + ceil(M/a)``, where the input is one beat per cycle:
    ``beats = R * ceil(M/a)`` (spatial) or ``M * ceil(R/a)`` (temporal), and the importance vector
    leaves as ceil(M/a) beats of a scores (the analyzer's ``readout``; inside SEC the selector
    reads the buffer instead).
    """
    R, M, a = _int(R, "R", 1), _int(M, "M", 1), _int(lanes, "lanes", 1)
    if mode == "spatial":
        beats = R * _cdiv(M, a)
    elif mode == "temporal":
        beats = M * _cdiv(R, a)
    else:
        raise ValueError(f"mode = {mode!r} is not allowed: it must be 'spatial' or 'temporal'")
    return beats + IMPORTANCE_LATENCY + _cdiv(M, a)


def _check_sorter(sorter):
    if sorter not in ("bubble", "radix"):
        raise ValueError(f"sorter = {sorter!r} is not allowed: it must be 'bubble' or 'radix'")


def topk_cycles(M, keep, lanes, score_bits=16, sorter="bubble"):
    """Cycles of the top-k selector, from the first importance score in to the last mask beat out.

    The vector arrives on the selector's input, one beat per cycle, and the first pass follows
    the words as they are written (loading costs no pass of its own). With ``a = lanes``,
    ``k = min(keep, M)``, ``P = ceil(k/a)`` and ``D = ceil(score_bits/4)``:

    - bubble: ``P * M + (BUBBLE_SORT_LATENCY if P else 0) + ceil(M/a) + TOPK_LATENCY``: the passes
      run back to back, one score per cycle through the a-cell chain (no drain), then the mask
      leaves in ceil(M/a) beats. k = 0 runs no pass.
    - radix: ``(D + 1) * ceil(M/a) + RADIX_DIGIT_GAP * D + TOPK_LATENCY + RADIX_MASK_LATENCY``:
      D histogram passes and one mask pass, each reading a scores per cycle; independent of k.
    """
    M, a = _int(M, "M", 1), _int(lanes, "lanes", 1)
    k, sb = min(_int(keep, "keep"), M), _int(score_bits, "score_bits", 1)
    _check_sorter(sorter)
    if sorter == "bubble":
        passes = _cdiv(k, a)
        return (passes * M + (BUBBLE_SORT_LATENCY if passes else 0) + _cdiv(M, a)
                + TOPK_LATENCY)
    digits = _cdiv(sb, 4)
    return ((digits + 1) * _cdiv(M, a) + RADIX_DIGIT_GAP * digits + TOPK_LATENCY
            + RADIX_MASK_LATENCY)


def topk_target(M, keep, lanes, score_bits=16, sorter="bubble"):
    """The spec's bound on the top-k selector's cycles (spec 3.2), k = min(keep, M).

    - bubble: ``floor(1.05 * ceil(k/a) * M) + 64``;
    - radix: ``(ceil(score_bits/4) + 1) * ceil(M/a) + 64``.
    """
    M, a = _int(M, "M", 1), _int(lanes, "lanes", 1)
    k, sb = min(_int(keep, "keep"), M), _int(score_bits, "score_bits", 1)
    _check_sorter(sorter)
    if sorter == "bubble":
        return (105 * _cdiv(k, a) * M) // 100 + TARGET_SLACK
    return (_cdiv(sb, 4) + 1) * _cdiv(M, a) + TARGET_SLACK


def topk_paper(M, keep, lanes):
    """The paper's sorter cost, ``ceil(M * k / a)`` with k = min(keep, M)."""
    M, a = _int(M, "M", 1), _int(lanes, "lanes", 1)
    k = min(_int(keep, "keep"), M)
    return _cdiv(M * k, a)


def encode_cycles(M, n_kept, nbits, lanes, word_bits=32):
    """Cycles of the offset encoder (an estimate).

    ``max(ceil(M/a), n_kept) + ceil(nbits/word_bits) + ENCODE_LATENCY``: the mask is read a bits
    per cycle, but at most one code is formed per cycle; then the words leave one per cycle. The
    RTL (spec 3.3) ingests one kept token per cycle and then emits one field per cycle (for a
    dropped-set code, one per dropped token and per kept token with gap 0), so it is above this
    when many tokens are kept per beat.
    """
    M, n = _int(M, "M", 1), _int(n_kept, "n_kept")
    nbits, a, w = _int(nbits, "nbits", 1), _int(lanes, "lanes", 1), _int(word_bits, "word_bits", 1)
    if n > M:
        raise ValueError(f"n_kept = {n} > M = {M}")
    return max(_cdiv(M, a), n) + _cdiv(nbits, w) + ENCODE_LATENCY


def encode_fields(mask, dropped=False):
    """Cycles of the offset encoder's emission stage for a mask, before the words: the header,
    then one cycle per code of the kept set (``dropped`` False), or, for the dropped set, one
    cycle per kept gap and the tail (the tokens after the last kept one) up to the last non-zero
    one, a gap g taking max(1, g) cycles (g codes, or a cycle with none for g = 0). The emission
    takes ``max(encode_fields, words)`` cycles (spec 3.3)."""
    m = np.asarray(mask, dtype=bool).reshape(-1)
    kept = np.flatnonzero(m)
    if not dropped:
        return 1 + int(kept.size)
    gaps = np.diff(kept, prepend=-1) - 1
    tail = m.size - (int(kept[-1]) + 1 if kept.size else 0)
    entries = np.append(gaps, tail)
    nonzero = np.flatnonzero(entries)
    walked = entries[:int(nonzero[-1]) + 1] if nonzero.size else entries[:0]
    return 1 + int(np.maximum(walked, 1).sum())


def encode_rtl_cycles(mask, lanes, words, dropped=False, schemes=32):
    """The offset encoder's exact cycles for a mask whose code is ``words`` words long, the
    model of :data:`ENCODE_RTL_CONSTANT`: the sum over mask beats of max(1, kept), then
    ``max(encode_fields, words)``, then the constant, one fewer when no code follows the header.
    ``schemes`` is the encoder's scheme count (32, or 8 with ``offset_schemes =
    "kept-exp-golomb"``: its choice takes one cycle per scheme, 24 fewer). Measured counts are
    this or one more."""
    m = np.asarray(mask, dtype=bool).reshape(-1)
    beats = -(-m.size // lanes)
    ingest = sum(max(1, int(m[b * lanes:(b + 1) * lanes].sum())) for b in range(beats))
    fields = encode_fields(m, dropped)
    return (ingest + max(fields, words) + ENCODE_RTL_CONSTANT - (32 - schemes)
            - (fields <= 1))


def decode_cycles(nbits, n_kept, M, lanes, word_bits=32, *, dropped=False):
    """Cycles of the offset decoder (an upper bound).

    ``ceil(nbits/word_bits) + n_kept + ceil(M/a) + DECODE_LATENCY``: the words arrive one per
    cycle, one code is decoded per cycle, and the mask leaves a bits per beat. A code of the
    dropped set (``dropped``) is walked one position per cycle: M in place of n_kept, plus
    ``DECODE_WALK_LATENCY``.
    """
    M, n = _int(M, "M", 1), _int(n_kept, "n_kept")
    nbits, a, w = _int(nbits, "nbits", 1), _int(lanes, "lanes", 1), _int(word_bits, "word_bits", 1)
    if n > M:
        raise ValueError(f"n_kept = {n} > M = {M}")
    if dropped:
        return _cdiv(nbits, w) + M + _cdiv(M, a) + DECODE_LATENCY + DECODE_WALK_LATENCY
    return _cdiv(nbits, w) + n + _cdiv(M, a) + DECODE_LATENCY


def _comparators(comparators):
    c = _int(comparators, "comparators", 1)
    if c > 7:
        raise ValueError(f"comparators = {c} is out of range: it must be in [1, 7]")
    return c


def block_match_cycles(S, comparators=7):
    """Cycles of the block matcher for a tile of S tokens.

    ``S * ceil(7/comparators) + BLOCK_MATCH_LATENCY``: the 7 candidates of a token are compared
    ``comparators`` at a time; 0 for S = 0.
    """
    S, c = _int(S, "S"), _comparators(comparators)
    return S * _cdiv(7, c) + BLOCK_MATCH_LATENCY if S else 0


# The FocusUnit's SIC path (rtl.top.sic_sequencer): the two-beat FIFO before the block matcher.
SIC_INPUT_LATENCY = 1


def sic_cycles(S, comparators=7):
    """The FocusUnit's ``SIC_CYCLES`` for a column of S kept tokens with ``first`` and no
    stalls: the block matcher's :func:`block_match_cycles` and :data:`SIC_INPUT_LATENCY`."""
    return block_match_cycles(S, comparators) + SIC_INPUT_LATENCY if S else 0


def block_match_target(S, comparators=7):
    """The spec's bound on the block matcher's cycles for a tile of S tokens (spec 4.2).

    - 7 comparators: ``floor(1.1 * S) + 64``;
    - fewer: ``(ceil(7/comparators) + 1) * S + 64``. For one comparator that is the paper's
      8 cycles per token; between 2 and 6 the spec is silent and this extends it the same way
      (one cycle per round of comparisons, plus one).
    """
    S, c = _int(S, "S"), _comparators(comparators)
    if c == 7:
        return (11 * S) // 10 + TARGET_SLACK
    return (_cdiv(7, c) + 1) * S + TARGET_SLACK
