"""The block matcher's best-candidate selection: exact "better" tests over lanes and rounds."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..params import ceil_log2
from .match_layouts import (
    best_layout,
    candidate_layout,
    matcher_rounds,
    round_tag_layout,
    scored_layout,
)

__all__ = ["BestCandidate", "SELECT_STAGES", "keep_first"]

#: Register stages of the selection for every comparator count: the tree of "better" tests
#: (ceil(log2(comparators)) levels), the running best across rounds (when there are several),
#: and delay stages up to this.
SELECT_STAGES = 4


def keep_first(a, b):
    """Whether candidate ``a`` (the lower c) stays against ``b``: unless ``b`` is similar and
    strictly better, a larger cosine, ``b.dsq * a.ny > a.dsq * b.ny`` (dot**2 / ny compared
    without a division; both share the token's norm)."""
    b_better = b.sim & (~a.sim | (b.dsq * a.ny > a.dsq * b.ny))
    return ~b_better


class BestCandidate(FocusBlock):
    """Chooses a token's best candidate from its rounds of compared candidates: among the similar
    ones, the largest cosine, exactly (``dot1**2 * ny2 > dot2**2 * ny1``); on equality, the lowest
    c wins. Lane j of round r is candidate c = r * comparators + j + 1, so lower lanes and earlier
    rounds win ties.

    One beat in per round (``tag.first`` and ``tag.last`` mark a token's first and last rounds),
    one beat out per token, on its last round: ``best`` (``best.sim`` = 0 when no candidate is
    similar; the other fields are then meaningless) and the last round's ``tag``.

    Pipeline: a tree of ``ceil(log2(comparators))`` levels of pairwise tests, one register
    level each; with more than one round, a running best (a register that keeps the better of
    itself and the round's best, restarting on the first round); delay registers up to
    :data:`SELECT_STAGES`. Latency :data:`SELECT_STAGES` (4) for every comparator count,
    throughput one round per cycle. Back-pressure: all stages move together, whenever the
    output register is empty or taken; ``i_stream.ready`` is that condition.

    Parameters
    ----------
    params : FocusParams
        Uses ``comparators`` and the widths of :func:`~rtl.sic.match_layouts.candidate_layout`.

    Members
    -------
    i_stream : In(stream.Signature(scored_layout(params)))
    o_stream : Out(stream.Signature(best_layout(params)))
    flush : In(1)
        Drops the rounds in flight. An abort: a beat being offered on ``o_stream`` is withdrawn, so
        the consumer must be flushed in the same cycle.
    """

    #: Cycles from a token's last round's input transfer to its best candidate being offered.
    latency = SELECT_STAGES
    #: Rounds held at most.
    capacity = SELECT_STAGES

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "i_stream": In(stream.Signature(scored_layout(p))),
            "o_stream": Out(stream.Signature(best_layout(p))),
            "flush": In(1),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        rounds = matcher_rounds(p)
        levels = ceil_log2(p.comparators)
        pads = SELECT_STAGES - levels - (1 if rounds > 1 else 0)
        assert pads >= 0, "SELECT_STAGES is too small for this comparator count"
        advance = Signal()

        def stage(name, valid_in, tag_in, cands_in):
            valid = Signal(name=f"{name}_valid")
            tag = Signal(round_tag_layout(p), name=f"{name}_tag")
            regs = [Signal(candidate_layout(p), name=f"{name}_c{n}") for n in range(len(cands_in))]
            with m.If(advance):
                m.d.sync += [valid.eq(valid_in), tag.eq(tag_in)]
                m.d.sync += [reg.eq(value) for reg, value in zip(regs, cands_in, strict=True)]
            with m.If(self.flush):
                m.d.sync += valid.eq(0)
            return valid, tag, regs

        valid, tag, cands = i.valid, i.payload.tag, [i.payload.cands[j]
                                                      for j in range(p.comparators)]
        for level in range(levels):
            merged = []
            for n in range(0, len(cands) - 1, 2):
                a, b = cands[n], cands[n + 1]
                value = Signal(candidate_layout(p), name=f"t{level}_{n // 2}")
                m.d.comb += value.eq(Mux(keep_first(a, b), a, b))
                merged.append(value)
            if len(cands) % 2:
                merged.append(cands[-1])
            valid, tag, cands = stage(f"tree{level}", valid, tag, merged)

        if rounds > 1:
            # The running best: earlier rounds hold lower c, so they are the first argument.
            acc = Signal(candidate_layout(p))
            acc_valid = Signal()
            acc_tag = Signal(round_tag_layout(p))
            with m.If(advance):
                m.d.sync += [acc_valid.eq(valid & tag.last), acc_tag.eq(tag)]
                with m.If(valid & (tag.first | ~keep_first(acc, cands[0]))):
                    m.d.sync += acc.eq(cands[0])
            with m.If(self.flush):
                m.d.sync += acc_valid.eq(0)
            valid, tag, cands = acc_valid, acc_tag, [acc]

        # Delay stages: the same latency for every comparator count.
        for n in range(pads):
            valid, tag, cands = stage(f"pad{n}", valid, tag, cands)

        m.d.comb += [
            advance.eq(~valid | o.ready),
            i.ready.eq(advance),
            o.valid.eq(valid),
            o.payload.best.eq(cands[0]),
            o.payload.tag.eq(tag),
        ]
        return m
