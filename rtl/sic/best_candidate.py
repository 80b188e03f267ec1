"""The block matcher's decision: the best candidate by exact "better" tests, then its threshold."""

from amaranth.hdl import Cat, Module, Mux, ResetInserter, Signal
from amaranth.lib import data, fifo
from amaranth.lib.wiring import In

from ..block import FocusBlock
from ..lib.arith import carry_save, product, product_terms, row_sum
from ..params import ceil_log2
from .match_layouts import (
    best_layout,
    candidate_layout,
    matcher_rounds,
    matcher_stage_members,
    round_tag_layout,
    scored_layout,
)

__all__ = ["BestCandidate", "SELECT_STAGES", "TEST_STAGES", "keep_first", "better"]

#: Register stages of each "better" or threshold test: its products' Booth rows reduced by full
#: adders to a few registered rows, those to two registered rows (carry-save, no carry chain),
#: those two added for the sign.
TEST_STAGES = 3

#: Register stages of the selection for every comparator count: three per level of the tree of
#: "better" tests (ceil(log2(comparators)) levels), nine for the running best across rounds
#: (when there are several: the operands, the two tests' three stages, the choice, then the
#: merge's three stages and its choice), three for the threshold test, and delay stages up to
#: this (the most: 5 or 6 comparators, which have none; the first delay stage is an input
#: register).
SELECT_STAGES = 21

def _product(m, a, b):
    """``a * b`` of unsigned values (``b`` Booth-recoded: :func:`~rtl.lib.arith.product`)."""
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

    Every test takes three register stages (:data:`TEST_STAGES`): the Booth rows of its two
    products, one of them negated, are reduced by full adders to a few registered rows (a
    carry-save form, :func:`~rtl.lib.arith.carry_save`), the next stage reduces those to two
    registered rows, and the third adds the two and takes the sign. So the first two stages
    hold no carry chain at all (about half of the full-adder levels each, whatever the width),
    and the sign, the one carry chain of the third stage, is followed only by the choice it
    makes. Pipeline
    (:data:`SELECT_STAGES` register stages, 21, for every comparator count):

    - a tree of ``ceil(log2(comparators))`` levels of pairwise "better" tests, three stages
      each, the third choosing the winners;
    - with more than one round, the running best, nine stages (:meth:`_running_best`): two
      accumulators, one for the token's even rounds and one for its odd rounds. Round r >= 2
      is tested against its accumulator, whose last update (by round r - 2) is still in its
      tests when round r starts, so round r takes two tests: against the accumulator as it was
      before round r - 2, and against round r - 2's candidate. Their outcomes are registered;
      in the next stage round r - 2's registered outcome chooses between them and the
      accumulator is updated, the update forwarded to the operands being loaded: no test
      waits for another's result, and no sign drives more than a register. A token's first
      two rounds only load the accumulators, its rounds 2 and 3 need only the second test, so
      the first is free for the merge of the two accumulators as the token's last update is
      made (on equal cosines the lower c wins: the odd rounds' best may have the lower c).
      Stages: the operands, the tests (three), the choice, which loads the merge's operands,
      the merge's test (three), its choice. Four products, where one shared test (two
      products) did it when tests took two stages. The merge's operands and the token's
      threshold wait in a held register (one, or two used in turn when tokens have fewer
      than four rounds) instead of riding through the test's stages;
    - the threshold test of the winner (three stages, its own ``token_threshold_bits`` x
      ``norm_bits`` product); ``theta_q**2 * nx`` is formed once per token, on its last round,
      in three stages as well;
    - delay registers up to 21: the first of them (where the comparator count leaves one,
      every count but 5 and 6) is an input register of the whole round, so that the first
      test starts from registers, the others delay the 1-bit decision and its slot. A round's
      place in its token (its accumulator, and whether it only loads it) is formed at the input
      and carried beside the round.

    A round carries only its last-round flag through the stages. The token's tag waits in a
    queue (:class:`~amaranth.lib.fifo.SyncFIFOBuffered`, :meth:`tag_depth` entries: 4 at one
    comparator, 22 at seven), written with the token's last round and read with its decision,
    both cleared by ``flush``; the queue never refuses a write, since it holds at least as many
    tokens as the stages can.

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

    @staticmethod
    def tag_depth(p):
        """Entries of the tag queue: the most tokens in the stages at once (their last rounds
        are at least ``rounds`` stages apart), plus one for a token entering as one leaves (a
        full queue takes no write, even in the cycle it is read)."""
        return (SELECT_STAGES - 1) // matcher_rounds(p) + 2

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
        return reg

    def _valid_register(self, name, value):
        reg = self._register(name, 1, value)
        with self._m.If(self.flush):
            self._m.d.sync += reg.eq(0)
        return reg

    def _difference(self, name, plus, constant, minus, width):
        """The first of a test's three stages: ``plus + constant - minus`` (row lists),
        ``width`` bits, reduced by full adders to a few registered rows (a carry-save form,
        :func:`~rtl.lib.arith.carry_save`; no carry runs the width). The tests fold a -1 into
        ``constant``, so that "difference > 0" is the sign bit of their sum (no wide zero test
        after its adders)."""
        parts = carry_save(self._m, plus, constant, width, minus=minus, outputs="balanced",
                           name=f"{name}_csa")
        return [self._register(f"{name}_group{g}", width, v) for g, v in enumerate(parts)]

    def _pair(self, name, parts, width):
        """The second stage: the rows reduced by full adders to two registered rows."""
        sums = carry_save(self._m, [(r, 0) for r in parts], 0, width, name=f"{name}_pair")
        return [self._register(f"{name}_sum{n}", width, v) for n, v in enumerate(sums)]

    def _total(self, pair, width, signed):
        """The third stage: the two carry-save rows added."""
        return row_sum(self._m, [(r, 0) for r in pair], 0, width, signed=signed)

    def _better_parts(self, name, a, b, *, ties=False):
        """The first stage of "``b`` has the larger cosine than ``a``" (with ``ties``: or an
        equal one and a lower c): carry-save rows of ``b.dsq * a.ny - a.dsq * b.ny - 1`` (plus 1
        with ``ties`` when ``b.code < a.code``), non-negative when it does."""
        plus, c_plus = product_terms(self._m, a.ny, b.dsq)
        minus, c_minus = product_terms(self._m, b.ny, a.dsq)
        if ties:
            plus = [*plus, (b.code < a.code, 0)]
        return self._difference(name, plus, c_plus - c_minus - 1, minus, self._better_bits)

    def _better(self, a_eligible, b_eligible, pair):
        """The third stage: whether ``b`` beats ``a`` (eligible, and ``a`` is not or the
        difference of :meth:`_better_parts` is non-negative)."""
        d = self._total(pair, self._better_bits, signed=True)
        return b_eligible & (~a_eligible | ~d[-1])

    def _carry_threshold(self, name, thr):
        """One stage of the token's threshold theta_q**2 * nx, carried beside its rounds:
        ``("nx", nx)`` to its product's carry-save rows, those to two rows, those to their sum
        (``("thr", value)``), which then rides on."""
        p = self._params
        kind, value = thr
        width = p.token_threshold_bits
        if kind == "nx":
            rows, constant = product_terms(self._m, self.theta_sq, value)
            return ("rows", self._difference(f"{name}_thr", rows, constant, [], width))
        if kind == "rows":
            return ("pair", self._pair(f"{name}_thr", value, width))
        if kind == "pair":
            value = self._total(value, width, signed=False)
        return ("thr", self._register(f"{name}_thr", width, value))

    def _carry(self, name, valid, last, thr):
        """The round's valid, last-round flag and threshold through one stage."""
        valid = self._valid_register(f"{name}_valid", valid)
        last = self._register(f"{name}_last", 1, last)
        return valid, last, self._carry_threshold(name, thr)

    # ---- the pipeline ---------------------------------------------------------------------------

    def elaborate(self, platform):
        p = self._params
        self._m = m = Module()
        i, o = self.i_stream, self.o_stream
        rounds = matcher_rounds(p)
        levels = ceil_log2(p.comparators)
        self._better_bits = p.dot_sq_bits + p.norm_bits + 1
        pads = SELECT_STAGES - TEST_STAGES * (levels + 1) - (9 if rounds > 1 else 0)
        assert pads >= 0, "SELECT_STAGES is too small for this comparator count"
        assert rounds > 1 or levels > 0
        self._advance = advance = Signal()

        valid, last = i.valid, i.payload.tag.last
        cands = [i.payload.cands[j] for j in range(p.comparators)]
        thr = ("nx", i.payload.nx)
        # A round's place in its token, for the running best: formed at the input and carried,
        # so that no count sits in front of the running best.
        order = self._round_order(valid, i.payload.tag.first) if rounds > 1 else None
        if pads:
            # One delay stage goes first when there is one: the tests then start from registers.
            pads -= 1
            valid = self._valid_register("in_valid", valid)
            last = self._register("in_last", 1, last)
            thr = ("nx", self._register("in_nx", p.norm_bits, thr[1]))
            cands = [self._register(f"in_c{j}", candidate_layout(p), c)
                     for j, c in enumerate(cands)]
            order = None if order is None else self._register("in_order", 2, order)
        for level in range(levels):
            valid, last, thr, cands, order = self._tree_level(level, valid, last, thr, cands,
                                                              order)
        if rounds > 1:
            valid, thr, best = self._running_best(valid, last, thr, cands[0], order)
        else:
            best = cands[0]
        assert thr[0] == "thr"
        valid, decision = self._threshold_test(valid, thr[1], best)

        # Delay stages: the same latency for every comparator count.
        for n in range(pads):
            valid = self._valid_register(f"pad{n}_valid", valid)
            decision = self._register(f"pad{n}", decision.shape(), decision)

        m.d.comb += [
            advance.eq(~valid | o.ready),
            i.ready.eq(advance),
            o.valid.eq(valid),
            o.payload.match.eq(decision.match),
            o.payload.slot.eq(decision.slot),
            o.payload.code.eq(decision.code),
        ]
        self._tag_queue(m)
        return m

    def _tag_queue(self, m):
        """A token's tag waits in a queue, pushed with its last round and popped with its
        decision: the rounds carry only their last-round flag. The push is registered first
        (the queue's write enable would otherwise wait on ``advance``, the stages' enable, and
        on the write port of its memory); its decision leaves ``SELECT_STAGES`` cycles later."""
        i, o = self.i_stream, self.o_stream
        layout = round_tag_layout(self._params)
        tags = fifo.SyncFIFOBuffered(width=layout.size, depth=self.tag_depth(self._params))
        m.submodules.tags = ResetInserter(self.flush)(tags)
        push, push_tag = Signal(name="tag_push"), Signal(layout, name="tag_pushed")
        m.d.sync += [push.eq(i.valid & i.ready & i.payload.tag.last), push_tag.eq(i.payload.tag)]
        with m.If(self.flush):
            m.d.sync += push.eq(0)
        m.d.comb += [
            o.payload.tag.eq(tags.r_data),
            tags.w_data.eq(push_tag),
            tags.w_en.eq(push),
            tags.r_en.eq(o.valid & o.ready),
        ]

    def _carry_round(self, name, valid, last, thr, cands, order):
        """The round through one stage: valid, last-round flag, threshold, candidates, place."""
        layout = candidate_layout(self._params)
        valid, last, thr = self._carry(name, valid, last, thr)
        cands = [self._register(f"{name}_c{n}", layout, c) for n, c in enumerate(cands)]
        order = None if order is None else self._register(f"{name}_order", 2, order)
        return valid, last, thr, cands, order

    def _tree_level(self, level, valid, last, thr, cands, order):
        """One level of pairwise "better" tests, three stages, the last picking the winners:
        (valid, last, thr, merged, order)."""
        n_pairs = len(cands) // 2
        name = f"t{level}"
        tests = [self._better_parts(f"{name}_test{n}", cands[2 * n], cands[2 * n + 1])
                 for n in range(n_pairs)]
        valid, last, thr, cands, order = self._carry_round(f"{name}_test", valid, last, thr,
                                                           cands, order)
        tests = [self._pair(f"{name}_sum{n}", t, self._better_bits) for n, t in enumerate(tests)]
        valid, last, thr, cands, order = self._carry_round(f"{name}_sum", valid, last, thr,
                                                           cands, order)
        picked = [Mux(self._better(cands[2 * n].eligible, cands[2 * n + 1].eligible, t),
                      cands[2 * n + 1], cands[2 * n]) for n, t in enumerate(tests)]
        return self._carry_round(f"{name}_pick", valid, last, thr,
                                 picked + cands[2 * n_pairs:], order)

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

    def _running_best(self, valid, last, thr, new, order):
        """The best over a token's rounds (nine stages): (valid, thr, best), valid once per
        token. ``valid``, ``last`` (the round's last-round flag), ``new`` (the round's
        candidate) and ``order`` (its :meth:`_round_order`) are registers.

        Two accumulators, one for the token's even rounds and one for its odd rounds; a round
        r >= 2 is tested against its accumulator, whose last update, by round r - 2, is still
        in its tests when round r's operands are loaded. So round r takes two tests and
        chooses between them once round r - 2 is decided: against the accumulator as it was
        before round r - 2 (test 1), and against round r - 2's candidate (test 2), which is
        the accumulator when round r - 2 won. The tests' outcomes are registered; the choice,
        a stage later, needs only round r - 2's registered outcome, and the update being made
        there is forwarded to test 1's operands: they are registered as the accumulators were
        before it, beside the update's candidate and whether each takes it, and chosen after
        the registers, so the choice's sign reaches two 1-bit registers. After the token's last
        round both accumulators are final and test 1, which no round before r = 4 uses, merges
        them (on equal cosines the lower c wins: the odd rounds' best may have the lower c).
        The merge's operands and the token's threshold wait in a held register
        (:meth:`_merge_holds`) rather than riding through the test's stages."""
        p, m = self._params, self._m
        layout = candidate_layout(p)
        rounds = matcher_rounds(p)
        acc = [Signal(layout, name=f"acc_{parity}") for parity in ("even", "odd")]
        # Whether the accumulator's last update took its round's candidate (round r - 2 won),
        # and the candidate of the parity's last round (round r - 2's).
        won = [Signal(name=f"won_{parity}") for parity in ("even", "odd")]
        prev = [Signal(layout, name=f"last_{parity}") for parity in ("even", "odd")]
        # The choice stage's update, forwarded to the operands, and the merge's request: the
        # choice stage holds a token's last round, so both accumulators are final once its
        # update is made.
        updates = [Signal(name=f"acc_{parity}_update") for parity in ("even", "odd")]
        d_new = Signal(layout, name="rb_choice_new")
        d_thr = Signal(p.token_threshold_bits, name="rb_choice_thr")
        merge_req = Signal(name="merge_req")
        odd, load = order[0], order[1]

        # Stage 1: the operands. The round's candidate is test 2's b, and test 1's unless the
        # merge takes test 1 (a token's rounds 0 to 3 need no test 1, and the merge's cycle
        # can only hold one of them).
        with m.If(self._advance & valid):
            for parity in (0, 1):
                with m.If(odd == parity):
                    m.d.sync += prev[parity].eq(new)
        # Test 1's operands are the accumulators as updated by the choice stage in this cycle,
        # whose update waits on a test's sign: registered as they were before it, with the
        # choice's candidate and whether each takes it, and chosen after the registers. So the
        # sign drives two 1-bit registers, not the operands' every bit.
        t1_new = self._register("t1_new", layout, d_new)
        t1_a = layout(Mux(
            self._register("t1_a_take", 1,
                           Mux(merge_req, updates[0], Mux(odd, updates[1], updates[0]))),
            t1_new,
            self._register("t1_a_kept", layout, Mux(merge_req, acc[0], Mux(odd, acc[1], acc[0])))))
        t1_b = layout(Mux(self._register("t1_b_take", 1, merge_req & updates[1]), t1_new,
                          self._register("t1_b_kept", layout, Mux(merge_req, acc[1], new))))
        t2_a = self._register("t2_a", layout, Mux(odd, prev[1], prev[0])) if rounds > 2 else None
        valid, last, thr = self._carry("rb_in", valid, last, thr)
        new = self._register("rb_in_new", layout, new)
        odd = self._register("rb_in_odd", 1, odd)
        load = self._register("rb_in_load", 1, load)
        merging = self._valid_register("merge_in_valid", merge_req)
        held, hold = self._merge_holds(merge_req, merging, t1_a, t1_b, d_thr)

        # Stages 2 to 4: the tests, their outcomes registered; the round's candidate and place
        # ride beside them.
        tests = {"t1": (t1_a, t1_b, True)}
        if t2_a is not None:
            tests["t2"] = (t2_a, new, False)
        parts = {n: self._better_parts(f"rb_{n}", a, b, ties=ties)
                 for n, (a, b, ties) in tests.items()}
        eligible = {"t1_a": t1_a.eligible, "t1_b": t1_b.eligible}
        if t2_a is not None:
            eligible["t2_a"] = t2_a.eligible
        for step in ("test", "sum", "sign"):
            name = f"rb_{step}"
            if step == "sum":
                parts = {n: self._pair(f"rb_{n}", v, self._better_bits) for n, v in parts.items()}
            if step == "sign":
                t1_wins = self._register("rb_t1_wins", 1, self._better(
                    eligible["t1_a"], eligible["t1_b"], parts["t1"]))
                t2_wins = (0 if t2_a is None else self._register(
                    "rb_t2_wins", 1, self._better(eligible["t2_a"], new.eligible, parts["t2"])))
            else:
                eligible = {n: self._register(f"{name}_{n}_eligible", 1, e)
                            for n, e in eligible.items()}
            valid, last, thr = self._carry(name, valid, last, thr)
            new = self._register(f"{name}_new", layout, new)
            odd = self._register(f"{name}_odd", 1, odd)
            load = self._register(f"{name}_load", 1, load)
            merging = self._valid_register(f"merge_{step}_valid", merging)
            hold = self._register(f"merge_{step}_hold", len(hold), hold)

        # Stage 5: the round's choice and its accumulator's update; the merge's choice.
        assert thr[0] == "thr"
        wins = Signal(name="rb_wins")
        m.d.comb += [
            wins.eq(Mux(Mux(odd, won[1], won[0]), t2_wins, t1_wins)),
            d_new.eq(new),
            d_thr.eq(thr[1]),
            merge_req.eq(valid & last),
        ]
        m.d.comb += [u.eq(valid & (odd == parity) & (load | wins))
                     for parity, u in enumerate(updates)]
        with m.If(self._advance & valid):
            for parity in (0, 1):
                with m.If(odd == parity):
                    m.d.sync += won[parity].eq(load | wins)
                    with m.If(load | wins):
                        m.d.sync += acc[parity].eq(new)
        merged = held[0] if len(held) == 1 else held[0].shape()(Mux(hold, held[1], held[0]))
        best = self._register("best", layout, Mux(t1_wins, merged.b, merged.a))
        best_valid = self._valid_register("best_valid", merging)
        best_thr = self._register("best_thr", p.token_threshold_bits, merged.thr)
        return best_valid, ("thr", best_thr), best

    def _merge_holds(self, merge_req, merging, a, b, thr):
        """The merges' operands and the token's threshold, held until the merge's choice
        ``TEST_STAGES + 1`` stages after its request ``merge_req``: the threshold from the
        request, the operands ``a`` and ``b`` (the two final accumulators, test 1's operands)
        from the next stage (``merging``), where they are chosen. Requests come at least
        ``rounds`` stages apart, so one hold serves four rounds or more and two serve two or
        three rounds, used in turn. Returns the holds and the register of the hold being loaded
        (0 with one hold), which rides beside the merge to its choice."""
        p, m = self._params, self._m
        layout = data.StructLayout({"a": candidate_layout(p), "b": candidate_layout(p),
                                    "thr": p.token_threshold_bits})
        count = -(-(TEST_STAGES + 1) // matcher_rounds(p))
        held = [Signal(layout, name=f"merge_hold{n}") for n in range(count)]
        loading = Signal(range(count), name="merge_loading")
        hold = self._register("merge_in_hold", len(loading), loading)
        for n, h in enumerate(held):
            with m.If(self._advance & merge_req & (loading == n)):
                m.d.sync += h.thr.eq(thr)
            with m.If(self._advance & merging & (hold == n)):
                m.d.sync += [h.a.eq(a), h.b.eq(b)]
        if count > 1:
            with m.If(self._advance & merge_req):
                m.d.sync += loading.eq(~loading)
        return held, hold

    def _threshold_test(self, valid, thr, best):
        """The threshold test of the best candidate, three stages: (valid, decision)."""
        p, m = self._params, self._m
        shift = 2 * p.theta_bits
        width = p.dot_sq_bits + shift + 1
        minus, c_minus = product_terms(m, best.ny, thr)
        parts = self._difference("match", [(best.dsq, shift)], -c_minus - 1, minus, width)
        layout = candidate_layout(p)
        for step in ("test", "sum"):
            valid = self._valid_register(f"match_{step}_valid", valid)
            best = self._register(f"match_{step}_best", layout, best)
            if step == "test":
                parts = self._pair("match", parts, width)
        match = best.eligible & ~self._total(parts, width, signed=True)[-1]
        valid = self._valid_register("decided_valid", valid)
        decision = self._register("decided", data.StructLayout({"match": 1, "slot": p.window_bits,
                                                               "code": 3}),
                                  Cat(match, best.slot, best.code))
        return valid, decision
