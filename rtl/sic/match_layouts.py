"""Payload layouts and sizes of the SIC block matcher and of the stages it is built from.

The public layouts (:func:`match_input_layout`, :func:`match_config_layout`,
:func:`match_output_layout`) are the block matcher's ports; :mod:`rtl.sic.block_matcher`
re-exports them. The others are the payloads of the streams between its stages, in pipeline
order::

    JobControl --match_input--> TokenRegister --round--> CandidateFetch --compare-->
    ComparatorBank --scored--> BestCandidate --best--> UniqueIndexer --indexed--> OutputStage

Each stream's producer and consumer use the same factory, so ``wiring.connect`` joins them bit
for bit. Side data that a stage does not use rides in the ``tag`` field of its payload.
"""

from amaranth.hdl import Const, signed, unsigned
from amaranth.lib import data
from amaranth.lib.wiring import In

from ..block import stage_members
from ..params import ceil_log2
from .similarity_comparator import vector_layout

__all__ = [
    "CANDIDATES", "matcher_rounds", "tile_index_bits", "mean_sum_bits",
    "match_input_layout", "match_config_layout", "match_output_layout",
    "offsets_layout", "round_candidates", "round_offsets", "round_layout", "round_tag_layout",
    "lane_layout", "compare_layout",
    "candidate_layout", "scored_layout", "best_layout", "indexed_layout", "group_sum_layout",
    "map_code_config_layout", "map_symbol_layout", "frame_symbol_layout", "map_word_layout",
    "frame_stats_layout", "matcher_stage_members",
]

#: Candidates per token (c = 1..7 of the 2x2x2 block).
CANDIDATES = 7


def matcher_stage_members(i_layout, o_layout, *, clear=True, **members):
    """The members of a stage of the block matcher's pipeline: its streams
    (:func:`rtl.block.stage_members`), ``members``, then the controls that the block matcher
    drives from the job control: ``clear`` (the job starts; left out with ``clear=False``) and
    ``flush`` (an abort: the stage drops what it holds)."""
    return stage_members(i_layout, o_layout, **members, **({"clear": In(1)} if clear else {}),
                         flush=In(1))


def matcher_rounds(p):
    """Cycles a token spends issuing its candidates: ceil(7 / comparators)."""
    return -(-CANDIDATES // p.comparators)


def tile_index_bits(p):
    """Bits of a tile-local unique index or token index, 0 .. tile-1."""
    return max(1, ceil_log2(p.tile))


def mean_sum_bits(p):
    """Signed bits of a group's element sum: |sum| <= tile * 2**(elem_bits-1)."""
    return p.elem_bits + p.tile.bit_length()


# ---- the block matcher's ports ------------------------------------------------------------------

def match_input_layout(p):
    """One token: its sub-vector, its original position (strictly increasing within the job) and
    ``last`` on the job's final token."""
    return data.StructLayout({
        "vector": vector_layout(p),
        "position": unsigned(p.position_bits),
        "last": 1,
    })


def match_config_layout(p):
    """The job's settings: FS and HS (FS + HS + 1 must be < ``window``), the layer (selects theta_q
    from the threshold table, < ``layers``), and the representative: ``mean`` = 0 for ``first``,
    1 for ``mean``."""
    return data.StructLayout({
        "frame_stride": unsigned(p.position_bits),
        "row_stride": unsigned(p.position_bits),
        "layer": unsigned(p.layer_bits),
        "mean": 1,
    })


def match_output_layout(p):
    """One output beat.

    - ``token`` = 1: the map entry of the next token in input order, ``map``; ``vector`` is the
      token's own vector. With ``first``, ``unique`` is also 1 when the token opened a new group:
      then ``vector`` is unique vector number ``map``.
    - ``token`` = 0, ``unique`` = 1 (``mean`` only, after each tile's tokens): unique vector number
      ``map``, the rounded mean of its group.
    - ``last``: the job's final beat.
    """
    return data.StructLayout({
        "map": unsigned(p.position_bits),
        "vector": vector_layout(p),
        "token": 1,
        "unique": 1,
        "last": 1,
    })


def map_code_config_layout(p):
    """The map code of a job (spec 4.5): ``variable`` (0: 3 bits per symbol; 1: the ranked
    prefix code) and ``ranking``, element r the symbol of rank r (a permutation of 0..7)."""
    return data.StructLayout({
        "variable": 1,
        "ranking": data.ArrayLayout(unsigned(3), 8),
    })


def map_word_layout(p):
    """One ``word_bits`` word of the map code, MSB first; ``nbits`` is the string's length on
    the ``last`` word, and the bits up to the end of this word on the others."""
    return data.StructLayout({
        "word": unsigned(p.word_bits),
        "nbits": unsigned(p.position_bits),
        "last": 1,
    })


def frame_stats_layout(p):
    """One frame's match statistics (spec 4.6): frame f, its tokens (position // FS == f), how
    many matched (symbol != 0) and how many matched the previous frame (symbol >= 4); ``last``
    on the job's final frame."""
    return data.StructLayout({
        "frame": unsigned(p.position_bits),
        "tokens": unsigned(p.position_bits),
        "matched": unsigned(p.position_bits),
        "previous": unsigned(p.position_bits),
        "last": 1,
    })


# ---- between the stages -------------------------------------------------------------------------

def offsets_layout(p):
    """The position offsets of candidates c = 1..7 (element c - 1), ``f*FS + dh*HS + dw`` modulo
    ``2**window_bits`` (the job is rejected unless FS + HS + 1 < ``window``)."""
    return data.ArrayLayout(unsigned(p.window_bits), CANDIDATES)


def round_candidates(p, r):
    """Round r's candidates, one per lane: lane j looks up candidate c = r * comparators + j +
    1, or none (0) past c = 7."""
    cands = (r * p.comparators + j + 1 for j in range(p.comparators))
    return [c if c <= CANDIDATES else 0 for c in cands]


def round_offsets(p, offsets, r):
    """Round r's candidate offsets, one per lane (:func:`round_candidates`): ``offsets[c - 1]``
    (:func:`offsets_layout`), or 0 for no candidate."""
    return [offsets[c - 1] if c else Const(0, p.window_bits) for c in round_candidates(p, r)]


def round_layout(p):
    """One round of a token's lookups (:class:`~rtl.sic.token_register.TokenRegister` to
    :class:`~rtl.sic.candidate_fetch.CandidateFetch`): the token; which of the token register's
    two vector registers holds it (``xsel``, with more than one round); whether it is not zero
    (``x_nonzero``, tested once as the token is taken); its squared norm (on the token's last
    round: the norm unit is spread over the rounds); its distance from its
    tile's first position (clipped to ``2**window_bits - 1``), the round number (candidates
    ``round * comparators + 1 ..``), the round's candidate offsets (lane j: candidate ``round *
    comparators + j + 1``'s, 0 past c = 7; :func:`round_offsets`) and where the token sits in
    its tile and job."""
    return data.StructLayout({
        "x": vector_layout(p),
        "xsel": 1,
        "x_nonzero": 1,
        "nx": unsigned(p.norm_bits),
        "position": unsigned(p.position_bits),
        "distance": unsigned(p.window_bits),
        "round": unsigned(max(1, ceil_log2(matcher_rounds(p)))),
        "offsets": data.ArrayLayout(unsigned(p.window_bits), p.comparators),
        "tile_first": 1,
        "tile_last": 1,
        "job_last": 1,
    })


def round_tag_layout(p):
    """What a round carries past the comparators to the selection and the map lookup: its first
    and last round flags, where the token sits in its tile and job, its own window slot (where
    its unique index is kept) and its position (for the map code's frame statistics; a
    synthesizer removes its registers when no map coder uses it)."""
    return data.StructLayout({
        "first": 1,
        "last": 1,
        "tile_first": 1,
        "tile_last": 1,
        "job_last": 1,
        "own_slot": unsigned(p.window_bits),
        "position": unsigned(p.position_bits),
    })


def lane_layout(p):
    """One candidate lookup: its vector, its squared norm (0 when it does not exist), whether
    it exists and is not zero, i.e. ``ny != 0`` (``nonzero``: the window's bit, so that the
    comparators' zero skip needs no wide test of ``ny``), its window slot and its candidate
    number c (``code``, 1..7; 0 for an unused lane)."""
    return data.StructLayout({
        "y": vector_layout(p),
        "ny": unsigned(p.norm_bits),
        "nonzero": 1,
        "slot": unsigned(p.window_bits),
        "code": unsigned(3),
    })


def compare_layout(p):
    """One round's comparisons (:class:`~rtl.sic.candidate_fetch.CandidateFetch` to
    :class:`~rtl.sic.comparator_bank.ComparatorBank`): the token, whether it is not zero, its
    norm (on its last round), ``comparators`` candidate lanes, and the round's tag."""
    return data.StructLayout({
        "x": vector_layout(p),
        "x_nonzero": 1,
        "nx": unsigned(p.norm_bits),
        "lanes": data.ArrayLayout(lane_layout(p), p.comparators),
        "tag": round_tag_layout(p),
    })


def candidate_layout(p):
    """A scored candidate: eligible or not (both vectors non-zero, dot > 0), dot**2, its squared
    norm and its window slot (what the "better" test ``dot1**2 * ny2 > dot2**2 * ny1``, the
    threshold test and the map lookup need), and its candidate number c (for the map code)."""
    return data.StructLayout({
        "eligible": 1,
        "dsq": unsigned(p.dot_sq_bits),
        "ny": unsigned(p.norm_bits),
        "slot": unsigned(p.window_bits),
        "code": unsigned(3),
    })


def scored_layout(p):
    """One round's scored candidates, lane j being candidate ``round * comparators + j + 1``
    (:class:`~rtl.sic.comparator_bank.ComparatorBank` to
    :class:`~rtl.sic.best_candidate.BestCandidate`), the token's squared norm (on its last
    round) and the round's tag."""
    return data.StructLayout({
        "cands": data.ArrayLayout(candidate_layout(p), p.comparators),
        "nx": unsigned(p.norm_bits),
        "tag": round_tag_layout(p),
    })


def best_layout(p):
    """A token's decision (:class:`~rtl.sic.best_candidate.BestCandidate` to
    :class:`~rtl.sic.unique_indexer.UniqueIndexer`): ``match`` (its best candidate is similar),
    that candidate's window ``slot`` and number ``code`` (c, 1..7; both meaningless without
    ``match``) and its last round's tag."""
    return data.StructLayout({
        "match": 1,
        "slot": unsigned(p.window_bits),
        "code": unsigned(3),
        "tag": round_tag_layout(p),
    })


def indexed_layout(p):
    """A resolved token (:class:`~rtl.sic.unique_indexer.UniqueIndexer` to
    :class:`~rtl.sic.output_stage.OutputStage`): its map entry, its tile-local unique index, whether
    it opened a new group, its tile's first unique index and the tile's unique count so far (both
    complete on the tile's last token), and where it sits in its tile and job; its map-code
    symbol ``code`` (0 new, else the matched c) and its ``position``, for the map coder."""
    return data.StructLayout({
        "map": unsigned(p.position_bits),
        "code": unsigned(3),
        "position": unsigned(p.position_bits),
        "index": unsigned(tile_index_bits(p)),
        "new": 1,
        "base": unsigned(p.position_bits),
        "count": unsigned(p.tile.bit_length()),
        "tile_last": 1,
        "job_last": 1,
    })


def map_symbol_layout(p):
    """A token's map-code symbol (0 new, else the matched c) and ``last`` on the job's final
    token (the block matcher to its map coder)."""
    return data.StructLayout({
        "code": unsigned(3),
        "last": 1,
    })


def frame_symbol_layout(p):
    """A token's map-code symbol, its position, and ``last`` on the job's final token (the
    block matcher to its frame statistics)."""
    return data.StructLayout({
        "code": unsigned(3),
        "position": unsigned(p.position_bits),
        "last": 1,
    })


def group_sum_layout(p):
    """A group's element sums and its token count (the ``mean`` representative's accumulator)."""
    return data.StructLayout({
        "sums": data.ArrayLayout(signed(mean_sum_bits(p)), p.dim),
        "count": unsigned(p.tile.bit_length()),
    })
