"""The block matcher's decision: the best candidate by exact "better" tests, then its threshold."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In

from ..block import FocusBlock
from ..params import ceil_log2
from .arith import product
from .match_layouts import (
    best_layout,
    candidate_layout,
    matcher_rounds,
    matcher_stage_members,
    round_tag_layout,
    scored_layout,
)

__all__ = ["BestCandidate", "SELECT_STAGES", "keep_first", "better"]

#: Register stages of the selection for every comparator count: the tree of "better" tests
#: (ceil(log2(comparators)) levels), the running best across rounds (when there are several),
#: the threshold test, and delay stages up to this.
SELECT_STAGES = 5


def _product(m, a, b):
    """``a * b`` of unsigned values (``b`` Booth-recoded: :func:`~rtl.sic.arith.product`)."""
    return product(m, b, a, len(a) + len(b))


def better(m, a, b):
    """Whether candidate ``b`` is strictly better than ``a``: ``b`` is eligible and ``a`` is not,
    or both are and ``b`` has the larger cosine, ``b.dsq * a.ny > a.dsq * b.ny`` (dot**2 / ny
    compared without a division; both share the token's norm)."""
    return b.eligible & (~a.eligible | (_product(m, b.dsq, a.ny) > _product(m, a.dsq, b.ny)))


def keep_first(m, a, b):
    """Whether candidate ``a`` (the lower c) stays against ``b``: unless ``b`` is better."""
    return ~better(m, a, b)


class BestCandidate(FocusBlock):
    """Decides each token from its rounds of scored candidates: its best candidate is the
    eligible one (non-zero, dot > 0) with the largest cosine, exactly (``dot1**2 * ny2 > dot2**2
    * ny1``), the lowest c on equality; the token matches when that candidate is similar,
    ``dsq * 2**(2F) > theta_q**2 * nx * ny``. Lane j of round r is candidate c = r *
    comparators + j + 1, so lower lanes and earlier rounds win ties.

    Testing the threshold once, on the best, is exact: the threshold test compares the same
    rational dsq / ny as the "better" test with the token's bound theta_q**2 * nx / 2**(2F). If
    the best candidate is above it, so is every candidate of equal cosine, and the best is the
    lowest c of largest cosine among the similar ones (golden's rule); if it is not, no
    candidate is similar.

    One beat in per round (``tag.first`` and ``tag.last`` mark a token's first and last rounds;
    ``nx`` counts on the last), one beat out per token: ``match``, the winner's ``slot`` and the
    last round's ``tag``.

    Pipeline (:data:`SELECT_STAGES` register stages, 5, for every comparator count): a tree of
    ``ceil(log2(comparators))`` levels of pairwise "better" tests; with more than one round, the
    running best (a register that keeps the better of itself and the round's best, restarting on
    the first round); the threshold test; delay registers of the 1-bit decision and its slot up
    to 5. Multipliers are sized to the rate: with more than one round, the running best's two
    products do the token's threshold test too, in the cycle after its last round, when the
    next token's first round only loads the register; with one round (7 comparators) the
    threshold test has its own ``token_threshold_bits`` x ``norm_bits`` product.
    ``theta_q**2 * nx`` is formed once per token, on its last round. Throughput one round per
    cycle. Back-pressure: all stages move together, whenever the output register is empty or
    taken; ``i_stream.ready`` is that condition.

    Parameters
    ----------
    params : FocusParams
        Uses ``comparators``, ``theta_bits`` and the widths of
        :func:`~rtl.sic.match_layouts.candidate_layout`.

    Members
    -------
    i_stream : In(stream.Signature(scored_layout(params)))
    o_stream : Out(stream.Signature(best_layout(params)))
    theta_sq : In(2 * theta_bits)
        theta_q**2 of the job (held during the job).
    flush : In(1)
        Drops the rounds in flight. An abort: a beat being offered on ``o_stream`` is withdrawn, so
        the consumer must be flushed in the same cycle.
    """

    #: Cycles from a token's last round's input transfer to its decision being offered.
    latency = SELECT_STAGES
    #: Rounds held at most.
    capacity = SELECT_STAGES

    def __init__(self, params=None):
        super().__init__(params, lambda p: matcher_stage_members(
            scored_layout(p), best_layout(p),
            clear=False,
            theta_sq=In(2 * p.theta_bits),
        ))

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        rounds = matcher_rounds(p)
        levels = ceil_log2(p.comparators)
        shift = 2 * p.theta_bits
        pads = SELECT_STAGES - levels - (1 if rounds > 1 else 0) - 1
        assert pads >= 0, "SELECT_STAGES is too small for this comparator count"
        assert rounds > 1 or levels > 0
        advance = Signal()

        def register(name, shape, value):
            reg = Signal(shape, name=name)
            with m.If(advance):
                m.d.sync += reg.eq(value)
            return reg

        def valid_register(name, value):
            reg = register(name, 1, value)
            with m.If(self.flush):
                m.d.sync += reg.eq(0)
            return reg

        def token_threshold(nx):
            """theta_q**2 * nx, the token's side of the threshold test."""
            return _product(m, nx, self.theta_sq)

        valid, tag, nx = i.valid, i.payload.tag, i.payload.nx
        cands = [i.payload.cands[j] for j in range(p.comparators)]
        threshold = None
        for level in range(levels):
            merged = []
            for n in range(0, len(cands) - 1, 2):
                a, b = cands[n], cands[n + 1]
                value = Signal(candidate_layout(p), name=f"t{level}_{n // 2}")
                m.d.comb += value.eq(Mux(keep_first(m, a, b), a, b))
                merged.append(value)
            if len(cands) % 2:
                merged.append(cands[-1])
            name = f"tree{level}"
            last = level == levels - 1 and rounds == 1
            valid = valid_register(f"{name}_valid", valid)
            if last:
                # The last level before the threshold test forms theta_q**2 * nx.
                threshold = register(f"{name}_threshold", p.token_threshold_bits,
                                     token_threshold(nx))
            else:
                nx = register(f"{name}_nx", p.norm_bits, nx)
            tag = register(f"{name}_tag", round_tag_layout(p), tag)
            cands = [register(f"{name}_c{n}", candidate_layout(p), c)
                     for n, c in enumerate(merged)]

        if rounds > 1:
            # The running best: earlier rounds hold lower c, so the register is the first
            # argument. ``done``: it holds a token's final best, whose threshold test takes the
            # two products this cycle (the next beat can only be a first round, which loads
            # the register without a test).
            new = cands[0]
            acc = Signal(candidate_layout(p))
            acc_threshold = Signal(p.token_threshold_bits)
            acc_tag = register("acc_tag", round_tag_layout(p), tag)
            done = valid_register("acc_valid", valid & tag.last)
            left = _product(m, new.dsq, acc.ny)
            right = _product(m, Mux(done, acc_threshold, acc.dsq), Mux(done, acc.ny, new.ny))
            new_better = new.eligible & (~acc.eligible | (left > right))
            with m.If(advance & valid):
                with m.If(tag.first | new_better):
                    m.d.sync += acc.eq(new)
                with m.If(tag.last):
                    m.d.sync += acc_threshold.eq(token_threshold(nx))
            best_valid, best_tag, best = done, acc_tag, acc
        else:
            right = _product(m, threshold, cands[0].ny)
            best_valid, best_tag, best = valid, tag, cands[0]

        # The threshold test of the best candidate.
        match = best.eligible & ((best.dsq << shift) > right)
        valid = valid_register("decided_valid", best_valid)
        tag = register("decided_tag", round_tag_layout(p), best_tag)
        decision = register("decided", data.StructLayout({"match": 1, "slot": p.window_bits,
                                                          "code": 3}),
                            Cat(match, best.slot, best.code))

        # Delay stages: the same latency for every comparator count.
        for n in range(pads):
            valid = valid_register(f"pad{n}_valid", valid)
            tag = register(f"pad{n}_tag", round_tag_layout(p), tag)
            decision = register(f"pad{n}", decision.shape(), decision)

        m.d.comb += [
            advance.eq(~valid | o.ready),
            i.ready.eq(advance),
            o.valid.eq(valid),
            o.payload.match.eq(decision.match),
            o.payload.slot.eq(decision.slot),
            o.payload.code.eq(decision.code),
            o.payload.tag.eq(tag),
        ]
        return m
