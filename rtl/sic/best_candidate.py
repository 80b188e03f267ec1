"""The block matcher's decision: the best candidate by exact "better" tests, then its threshold."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In

from ..block import FocusBlock
from ..params import ceil_log2
from .arith import partial_sums, product, product_terms, row_sum, split_groups
from .match_layouts import (
    best_layout,
    candidate_layout,
    matcher_rounds,
    matcher_stage_members,
    round_tag_layout,
    scored_layout,
)

__all__ = ["BestCandidate", "SELECT_STAGES", "keep_first", "better"]

#: Register stages of the selection for every comparator count: two per level of the tree of
#: "better" tests (ceil(log2(comparators)) levels), four for the running best across rounds
#: (when there are several: its test and the merge of its two accumulators), two for the
#: threshold test, and delay stages up to this (the most: 5 or 6 comparators, which have none;
#: the first delay stage is an input register).
SELECT_STAGES = 12


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

    Every test takes two register stages: the Booth rows of its two products, one of them
    negated, are added into a few registered partial sums (:func:`~rtl.sic.arith.partial_sums`),
    and the next stage adds those and takes the sign. So no cycle holds more than a few
    carry-propagate adders (for the ECP5's 100 MHz target). Pipeline (:data:`SELECT_STAGES`
    register stages, 12, for every comparator count):

    - a tree of ``ceil(log2(comparators))`` levels of pairwise "better" tests, two stages each;
    - with more than one round, the running best: two accumulators, one for the token's even
      rounds and one for its odd rounds, so each is tested and updated every other cycle while
      its test takes two; one shared "better" test (two products) does it. A token's first two
      rounds only load them, so the test is free in the cycle after its last round's update,
      and merges the two accumulators there (on equal cosines the lower c wins: the odd rounds'
      best may have the lower c). The test's two operands are registers, loaded beside the
      round's candidate in the stage before, with the update being made in that cycle
      forwarded: no multiplexer stands between them and the products. Four stages: the test,
      the update; the merge's test, its choice;
    - the threshold test of the winner (two stages, its own ``token_threshold_bits`` x
      ``norm_bits`` product); ``theta_q**2 * nx`` is formed once per token, on its last round,
      in two stages as well;
    - delay registers up to 12: the first of them (where the comparator count leaves one,
      every count but 5 and 6) is an input register of the whole round, so that the first
      test starts from registers, the others delay the 1-bit decision and its slot. A round's
      place in its token (its accumulator, and whether it only loads it) is formed at the input
      and carried beside the round.

    Throughput one round per cycle. Back-pressure: all stages move together, whenever the
    output register is empty or taken; ``i_stream.ready`` is that condition.

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

    # ---- helpers (they close over the module and the pipeline's move condition) ----------------

    def _register(self, name, shape, value):
        reg = Signal(shape, name=name)
        with self._m.If(self._advance):
            self._m.d.sync += reg.eq(value)
        self._inputs[name] = value
        return reg

    def _valid_register(self, name, value):
        reg = self._register(name, 1, value)
        with self._m.If(self.flush):
            self._m.d.sync += reg.eq(0)
        return reg

    def _difference(self, name, plus, constant, minus, width):
        """The first of a test's two stages: registered partial sums of ``plus + constant -
        minus`` (row lists), ``width`` bits. The tests fold a -1 into ``constant``, so that
        "difference > 0" is the sign bit of their sum (no wide zero test after its adders)."""
        parts = partial_sums(self._m, plus, constant, width,
                             split_groups(len(plus) + len(minus) + 1), minus=minus,
                             name=f"{name}_part")
        return [self._register(f"{name}_sum{g}", width, v) for g, v in enumerate(parts)]

    def _total(self, parts, width, signed):
        """The second stage: the partial sums added."""
        return row_sum(self._m, [(r, 0) for r in parts], 0, width, signed=signed)

    def _better_parts(self, name, a, b, *, ties=False):
        """The first stage of "``b`` has the larger cosine than ``a``" (with ``ties``: or an
        equal one and a lower c): partial sums of ``b.dsq * a.ny - a.dsq * b.ny - 1`` (plus 1
        with ``ties`` when ``b.code < a.code``), non-negative when it does."""
        plus, c_plus = product_terms(self._m, a.ny, b.dsq)
        minus, c_minus = product_terms(self._m, b.ny, a.dsq)
        if ties:
            plus = [*plus, (b.code < a.code, 0)]
        return self._difference(name, plus, c_plus - c_minus - 1, minus, self._better_bits)

    def _better(self, a, b, parts):
        """The second stage: whether ``b`` beats ``a`` (eligible, and ``a`` is not or
        :meth:`_better_parts` is non-negative)."""
        d = self._total(parts, self._better_bits, signed=True)
        return b.eligible & (~a.eligible | ~d[-1])

    def _threshold_parts(self, name, nx):
        """First stage of theta_q**2 * nx."""
        p = self._params
        rows, constant = product_terms(self._m, self.theta_sq, nx)
        return self._difference(name, rows, constant, [], p.token_threshold_bits)

    # ---- the pipeline ---------------------------------------------------------------------------

    def elaborate(self, platform):
        p = self._params
        self._m = m = Module()
        i, o = self.i_stream, self.o_stream
        rounds = matcher_rounds(p)
        levels = ceil_log2(p.comparators)
        self._better_bits = p.dot_sq_bits + p.norm_bits + 1
        pads = SELECT_STAGES - 2 * levels - (4 if rounds > 1 else 0) - 2
        assert pads >= 0, "SELECT_STAGES is too small for this comparator count"
        assert rounds > 1 or levels > 0
        self._advance = advance = Signal()
        self._inputs = {}               # register name -> what it loads

        # The token's threshold theta_q**2 * nx rides beside its rounds: its partial sums in
        # the first stage, their sum in the second (``thr`` is either).
        valid, tag = i.valid, i.payload.tag
        cands = [i.payload.cands[j] for j in range(p.comparators)]
        thr = ("nx", i.payload.nx)
        # A round's place in its token, for the running best: formed at the input and carried,
        # so that no count sits in front of the running best's test.
        order = self._round_order(valid, tag.first) if rounds > 1 else None
        # The registers in front of the running best (its operands are loaded beside them).
        front = "in"
        if pads:
            # One delay stage goes first when there is one: the tests then start from registers.
            pads -= 1
            valid = self._valid_register("in_valid", valid)
            tag = self._register("in_tag", round_tag_layout(p), tag)
            thr = ("nx", self._register("in_nx", p.norm_bits, thr[1]))
            cands = [self._register(f"in_c{j}", candidate_layout(p), c)
                     for j, c in enumerate(cands)]
            order = None if order is None else self._register("in_order", 2, order)
        for level in range(levels):
            valid, tag, thr, cands = self._tree_level(level, valid, tag, thr, cands)
            front = f"t{level}_pick"
            if order is not None:
                for step in ("test", "pick"):
                    order = self._register(f"t{level}_{step}_order", 2, order)
        if rounds > 1:
            valid, tag, thr, best = self._running_best(
                valid, tag, thr, cands[0], order,
                new_next=self._inputs[f"{front}_c0"], order_next=self._inputs[f"{front}_order"])
        else:
            best = cands[0]
        assert thr[0] == "thr"
        valid, tag, decision = self._threshold_test(valid, tag, thr[1], best)

        # Delay stages: the same latency for every comparator count.
        for n in range(pads):
            valid = self._valid_register(f"pad{n}_valid", valid)
            tag = self._register(f"pad{n}_tag", round_tag_layout(p), tag)
            decision = self._register(f"pad{n}", decision.shape(), decision)

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

    def _carry_threshold(self, name, thr):
        """One stage of the token's threshold: ``nx`` to partial sums, those to their sum."""
        p = self._params
        kind, value = thr
        if kind == "nx":
            return ("parts", self._threshold_parts(f"{name}_thr", value))
        if kind == "parts":
            value = self._total(value, p.token_threshold_bits, signed=False)
        return ("thr", self._register(f"{name}_thr", p.token_threshold_bits, value))

    def _tree_level(self, level, valid, tag, thr, cands):
        """One level of pairwise "better" tests, two stages: (valid, tag, thr, merged)."""
        p = self._params
        layout = candidate_layout(p)
        for step in ("test", "pick"):
            name = f"t{level}_{step}"
            valid = self._valid_register(f"{name}_valid", valid)
            tag = self._register(f"{name}_tag", round_tag_layout(p), tag)
            thr = self._carry_threshold(name, thr)
            if step == "test":
                pairs = [(cands[n], cands[n + 1]) for n in range(0, len(cands) - 1, 2)]
                parts = [self._better_parts(f"{name}{n}", a, b) for n, (a, b) in enumerate(pairs)]
                odd = cands[-1:] if len(cands) % 2 else []
                cands = [self._register(f"{name}_c{n}", layout, c)
                         for n, c in enumerate([c for pair in pairs for c in pair] + odd)]
            else:
                picked = [Mux(self._better(cands[2 * n], cands[2 * n + 1], parts[n]),
                              cands[2 * n + 1], cands[2 * n]) for n in range(len(parts))]
                picked += cands[2 * len(parts):]
                cands = [self._register(f"{name}_c{n}", layout, c) for n, c in enumerate(picked)]
        return valid, tag, thr, cands

    def _round_order(self, valid, first):
        """The place of the round on the input in its token, ``Cat(odd, load)``: its index's
        parity (its accumulator) and whether it is one of the token's first two rounds (which
        only load their accumulators)."""
        p, m = self._params, self._m
        count = Signal(range(matcher_rounds(p) + 1))
        index = Signal.like(count)
        m.d.comb += index.eq(Mux(first, 0, count))
        with m.If(self._advance & valid):
            m.d.sync += count.eq(index + 1)
        return Cat(index[0], index < 2)

    def _running_best(self, valid, tag, thr, new, order, *, new_next, order_next):
        """The best over a token's rounds (four stages): (valid, tag, thr, best), valid once per
        token. ``order`` is the round's :meth:`_round_order`; ``new`` and ``order`` are
        registers and ``new_next`` and ``order_next`` what they load, so that the test's
        operands are registers loaded beside them, with the accumulator being updated in
        that cycle forwarded: no multiplexer stands in front of the test's products."""
        p, m = self._params, self._m
        layout = candidate_layout(p)
        acc = [Signal(layout, name=f"acc_{parity}") for parity in ("even", "odd")]
        # Stage 1's registers of the round (stage 2 reads them).
        s_valid = self._valid_register("acc_valid", valid)
        s_tag = self._register("acc_tag", round_tag_layout(p), tag)
        s_new = self._register("acc_new", layout, new)
        s_odd = self._register("acc_odd", 1, order[0])
        s_load = self._register("acc_load", 1, order[1])
        s_thr = self._carry_threshold("acc", thr)
        # Whether stage 2 updates accumulator 0 or 1 as this cycle ends (``wins``: its test).
        wins = Signal()
        updates = [Signal(name=f"acc_{parity}_update") for parity in ("even", "odd")]
        m.d.comb += [u.eq(s_valid & (s_odd == parity) & (s_load | wins))
                     for parity, u in enumerate(updates)]
        # The merge is issued two cycles after the last round's test, when both accumulators
        # are final (and the beat beside it can only be a token's first or second round): its
        # operands are loaded as that round's update is made.
        merge_next = s_valid & s_tag.last
        merge_req = self._valid_register("merge_req", merge_next)
        # The operands of the next test, loaded beside ``new``: the accumulator of the round
        # coming in (both for the merge) as it is once this cycle's update is made, and the
        # round's candidate.
        a_odd = ~merge_next & order_next[0]
        a = self._register("test_a", layout,
                           Mux(Mux(a_odd, updates[1], updates[0]), s_new,
                               Mux(a_odd, acc[1], acc[0])))
        b = self._register("test_b", layout,
                           Mux(merge_next, Mux(updates[1], s_new, acc[1]), new_next))
        # Stage 1: the test.
        parts = self._better_parts("acc", a, b, ties=True)
        s_merge = self._valid_register("merge_valid", merge_req)
        s_a = self._register("merge_a", layout, a)
        s_b = self._register("merge_b", layout, b)
        # Stage 2: the update, or the merge's choice.
        m.d.comb += wins.eq(self._better(s_a, s_b, parts))
        with m.If(self._advance):
            for parity in (0, 1):
                with m.If(updates[parity]):
                    m.d.sync += acc[parity].eq(s_new)
        # The last round's tag and threshold wait a cycle for the merge (``merge_req`` rises
        # with them).
        token_tag = self._register("token_tag", round_tag_layout(p), s_tag)
        kind, value = s_thr
        if kind == "parts":
            value = self._total(value, p.token_threshold_bits, signed=False)
        token_thr = self._register("token_thr", p.token_threshold_bits, value)
        # The merge's two stages carry the token's tag and threshold.
        m_tag = self._register("merge_tag", round_tag_layout(p), token_tag)
        m_thr = self._register("merge_thr", p.token_threshold_bits, token_thr)
        best = self._register("best", layout, Mux(wins, s_b, s_a))
        best_valid = self._valid_register("best_valid", s_merge)
        best_tag = self._register("best_tag", round_tag_layout(p), m_tag)
        best_thr = self._register("best_thr", p.token_threshold_bits, m_thr)
        return best_valid, best_tag, ("thr", best_thr), best

    def _threshold_test(self, valid, tag, thr, best):
        """The threshold test of the best candidate, two stages: (valid, tag, decision)."""
        p, m = self._params, self._m
        shift = 2 * p.theta_bits
        width = p.dot_sq_bits + shift + 1
        minus, c_minus = product_terms(m, best.ny, thr)
        parts = self._difference("match", [(best.dsq, shift)], -c_minus - 1, minus, width)
        t_valid = self._valid_register("match_valid", valid)
        t_tag = self._register("match_tag", round_tag_layout(p), tag)
        t_best = self._register("match_best", candidate_layout(p), best)
        match = t_best.eligible & ~self._total(parts, width, signed=True)[-1]
        valid = self._valid_register("decided_valid", t_valid)
        tag = self._register("decided_tag", round_tag_layout(p), t_tag)
        decision = self._register("decided", data.StructLayout({"match": 1, "slot": p.window_bits,
                                                               "code": 3}),
                                  Cat(match, t_best.slot, t_best.code))
        return valid, tag, decision
