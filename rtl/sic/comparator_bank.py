"""The block matcher's comparators: one pair scorer per candidate lane, in lockstep."""

from amaranth.hdl import Module
from amaranth.lib import data

from ..block import FocusBlock
from ..lib.clock_gate import ICG_CELL, activity_members
from .dot_scorer import SCORER_LATENCY, DotScorer
from .match_layouts import compare_layout, matcher_stage_members, round_tag_layout, scored_layout

__all__ = ["ComparatorBank"]


class ComparatorBank(FocusBlock):
    """Scores a round's token against its ``comparators`` candidates, one
    :class:`~rtl.sic.dot_scorer.DotScorer` per lane (dot, dot**2 and eligibility; the threshold
    test is the selection's, once per token).

    Every scorer gets the same ``valid``, ``ready`` and ``flush``, so they move in lockstep and
    the bank is one pipeline: latency :data:`~rtl.sic.dot_scorer.SCORER_LATENCY` (5),
    throughput one round per cycle, and under ``o_stream`` back-pressure the whole bank holds
    (``i_stream.ready`` falls once it is full); nothing is lost or duplicated. Side data travels
    in the scorers' tags: each lane's candidate norm and window slot in its own scorer, the
    round's tag and the token's norm in scorer 0's. So each result leaves with its own
    candidate, whatever the scorers' latency.

    Parameters
    ----------
    params : FocusParams
        Uses ``comparators`` and what the comparators use.
    icg_cell : str or None
        As for :class:`~rtl.sic.dot_scorer.DotScorer`.
    gate : bool
        As for :class:`~rtl.sic.dot_scorer.DotScorer`.

    Members
    -------
    i_stream : In(stream.Signature(compare_layout(params)))
    o_stream : Out(stream.Signature(scored_layout(params)))
    clear : In(1)
        Zeroes the counters (the start of a job).
    flush : In(1)
        Drops the rounds in flight (the counters keep them). An abort: a beat being offered on
        ``o_stream`` is withdrawn, so the consumer must be flushed in the same cycle.
    active, gated : Out(32)
        Comparator-cycles computed and skipped since ``clear`` (the comparators' counters
        summed).
    """

    #: Cycles from a round's input transfer to its results being offered.
    latency = SCORER_LATENCY
    #: Rounds held at most.
    capacity = SCORER_LATENCY

    def __init__(self, params=None, *, icg_cell=ICG_CELL, gate=True):
        self._icg_cell = icg_cell
        self._gate = gate
        super().__init__(params, lambda p: matcher_stage_members(
            compare_layout(p), scored_layout(p),
            **activity_members(),
        ))

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        lane_tag = data.StructLayout({"ny": p.norm_bits, "slot": p.window_bits, "code": 3})
        first_tag = data.StructLayout({"lane": lane_tag, "round": round_tag_layout(p),
                                       "nx": p.norm_bits})

        comps = []
        for j in range(p.comparators):
            comp = DotScorer(p, icg_cell=self._icg_cell, gate=self._gate,
                             tag=first_tag if j == 0 else lane_tag)
            m.submodules[f"comparator{j}"] = comp
            comps.append(comp)
            lane = i.payload.lanes[j]
            tag_in = comp.i_stream.payload.tag.lane if j == 0 else comp.i_stream.payload.tag
            tag_out = comp.o_stream.payload.tag.lane if j == 0 else comp.o_stream.payload.tag
            m.d.comb += [
                comp.i_stream.valid.eq(i.valid),
                comp.i_stream.payload.x.eq(i.payload.x),
                comp.i_stream.payload.x_nonzero.eq(i.payload.x_nonzero),
                comp.i_stream.payload.y.eq(lane.y),
                comp.i_stream.payload.y_nonzero.eq(lane.nonzero),
                tag_in.ny.eq(lane.ny),
                tag_in.slot.eq(lane.slot),
                tag_in.code.eq(lane.code),
                comp.o_stream.ready.eq(o.ready),
                comp.clear.eq(self.clear),
                comp.flush.eq(self.flush),
                o.payload.cands[j].eligible.eq(comp.o_stream.payload.eligible),
                o.payload.cands[j].dsq.eq(comp.o_stream.payload.dsq),
                o.payload.cands[j].ny.eq(tag_out.ny),
                o.payload.cands[j].slot.eq(tag_out.slot),
                o.payload.cands[j].code.eq(tag_out.code),
            ]
        # Lockstep: comparator 0 speaks for all of them.
        m.d.comb += [
            comps[0].i_stream.payload.tag.round.eq(i.payload.tag),
            comps[0].i_stream.payload.tag.nx.eq(i.payload.nx),
            o.payload.tag.eq(comps[0].o_stream.payload.tag.round),
            o.payload.nx.eq(comps[0].o_stream.payload.tag.nx),
            i.ready.eq(comps[0].i_stream.ready),
            o.valid.eq(comps[0].o_stream.valid),
            self.active.eq(sum(c.active for c in comps)),
            self.gated.eq(sum(c.gated for c in comps)),
        ]
        return m
