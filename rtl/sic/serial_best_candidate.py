"""The best-candidate selection at one comparator: one shared "better" test, modulo-scheduled."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data

from .best_candidate import SELECT_STAGES, TEST_STAGES, BestCandidate
from .match_layouts import CANDIDATES, candidate_layout

__all__ = ["SerialBestCandidate", "SERIAL_SCHEDULE", "best_candidate"]

#: The shared test's schedule, by the phase of the step that loads its operands (the phase is
#: the index of the round being taken in that step, 0 to 6): the test's name, its ``a`` (the
#: lower c, which wins ties) and its ``b``. Sources: ``held`` (the odd candidates c1, c3, c5,
#: held a step), ``input`` (the input register: c2, c4, c6), ``c7``, the winners ``w12``,
#: ``w1234`` and ``final`` held for later, ``winner`` (the choice of the test that is deciding
#: in this step) and ``threshold`` (the token's bound as a candidate). Seven tests in seven
#: steps: the unit is never idle and no two tests of any tokens meet.
SERIAL_SCHEDULE = {
    2: ("c1 : c2", "held", "input"),
    4: ("c3 : c4", "held", "input"),
    6: ("c5 : c6", "held", "input"),
    1: ("w12 : w34", "w12", "winner"),
    3: ("w56 : c7", "winner", "c7"),
    0: ("w1234 : w567", "w1234", "winner"),
    5: ("threshold : best", "threshold", "final"),
}

#: Steps from a token's first round being taken to its threshold test deciding: its last
#: operands are loaded at relative step 19 (phase 5 of the token's third period), and a test
#: decides :data:`TEST_STAGES` steps after its operands are registered.
_DECIDED = 19 + 1 + TEST_STAGES

#: The phases at which a decided test's winner is held for a later test.
_HOLD_WINNER = {"w12": 6, "w1234": 5, "final": 4}
#: The phases at which the odd candidates and c7 (with the token's norm) are held.
_HOLD_ODD = (1, 3, 5)
_HOLD_C7 = 0
#: The phase at which the token's threshold theta_q**2 * nx is taken from its pipeline (its
#: norm, held from relative step 8 to 14, was in it at step 14).
_THRESHOLD_READY = 2


def best_candidate(p):
    """The selection the block matcher builds: :class:`SerialBestCandidate` at one comparator
    (two products where the parallel selection has five), else
    :class:`~rtl.sic.best_candidate.BestCandidate`."""
    return (SerialBestCandidate if p.comparators == 1 else BestCandidate)(p)


class SerialBestCandidate(BestCandidate):
    """:class:`~rtl.sic.best_candidate.BestCandidate` for one comparator: the same ports,
    decisions, latency (:data:`~rtl.sic.best_candidate.SELECT_STAGES`, 21 from a token's last
    round) and throughput (one round per cycle, a token per 7), with one "better" test of two
    products instead of the parallel selection's five products.

    A token's 7 candidates arrive one per round, and its decision takes 7 tests: a tournament
    of 6 "better" tests (c1 : c2, c3 : c4, c5 : c6, then their winners, c7 against the third,
    and the final), then the threshold test. The threshold test is a "better" test too: the
    token's bound is a candidate of ``dsq = theta_q**2 * nx`` and ``ny = 2**(2F)``, eligible,
    and the token matches when its best candidate beats it (``dsq * 2**(2F) > theta_q**2 * nx
    * ny``, strictly, as golden). So one test unit, pipelined like the parallel selection's
    (its operands, :data:`~rtl.sic.best_candidate.TEST_STAGES` stages: groups, two sums, the
    registered sign), serves all seven, in the fixed schedule :data:`SERIAL_SCHEDULE` that
    repeats every 7 steps: a test's winner is chosen in the step its sign is registered and
    loaded straight into the operands of the test that needs it, or held for a later one. In a
    tournament the lower c is always ``a``, so a strict test gives ties to the lower c.

    ``theta_q**2 * nx`` is formed in three stages from the token's norm (on its last round),
    held for the schedule's threshold test.

    The schedule is kept in steps: every register but the delay stages at the end moves only
    in a step. A step is a cycle in which the output can move and the round of the current
    phase is taken; a token's rounds therefore always occupy 7 consecutive steps, and the
    pipeline waits when a round is late. At a token's first phase with no round on the input
    while earlier tokens are in flight, the unit steps through an empty token (7 steps taking
    no input) so that they are decided: a token that arrives during it waits for it to end (at
    most 6 cycles; none with rounds back to back, the block matcher's steady state). With
    nothing in flight it waits without stepping.

    Back-pressure: every register moves only when the output register is empty or taken;
    ``i_stream.ready`` is that condition, except during an empty token.
    """

    def __init__(self, params=None):
        super().__init__(params)
        if self._params.comparators != 1:
            raise ValueError(f"SerialBestCandidate needs comparators = 1, not "
                             f"{self._params.comparators}")

    def _held(self, name, shape, loads):
        """A register loaded in the steps whose phase is a key of ``loads``, with its value."""
        reg = Signal(shape, name=name)
        with self._m.If(self._advance):
            for phase, value in loads.items():
                with self._m.If(self._phase == phase):
                    self._m.d.sync += reg.eq(value)
        return reg

    def elaborate(self, platform):
        p = self._params
        self._m = m = Module()
        i, o = self.i_stream, self.o_stream
        cand = candidate_layout(p)
        shift = 2 * p.theta_bits
        # ``a`` is wide enough for the threshold candidate.
        dsq_bits, ny_bits = max(p.dot_sq_bits, p.token_threshold_bits), max(p.norm_bits, shift + 1)
        operand = data.StructLayout({"eligible": 1, "dsq": dsq_bits, "ny": ny_bits,
                                     "slot": p.window_bits, "code": 3})
        self._better_bits = max(p.dot_sq_bits + ny_bits, dsq_bits + p.norm_bits) + 1

        advance, step = Signal(), Signal()
        self._advance = step
        self._phase = phase = Signal(range(CANDIDATES))
        empty = Signal()
        started = Signal(_DECIDED)  # bit k: a token's first round was taken k + 1 steps ago
        busy = started.any()
        m.d.comb += [
            advance.eq(~o.valid | o.ready),
            i.ready.eq(advance & ~empty),
            step.eq(advance & Mux(empty, busy, i.valid | ((phase == 0) & busy))),
        ]
        with m.If(step):
            m.d.sync += [
                phase.eq(Mux(phase == CANDIDATES - 1, 0, phase + 1)),
                started.eq(Cat(i.valid & (phase == 0) & ~empty, started[:-1])),
            ]
            with m.If(phase == 0):
                m.d.sync += empty.eq(~i.valid)
            with m.If(phase == CANDIDATES - 1):
                m.d.sync += empty.eq(0)
        with m.If(empty & ~busy):
            # Nothing left to decide: the empty token ends early, so that input is not kept
            # waiting for it.
            m.d.sync += [phase.eq(0), empty.eq(0)]
        with m.If(self.flush):
            m.d.sync += [phase.eq(0), empty.eq(0), started.eq(0)]

        # The operands' sources.
        rin = self._register("in_c", cand, i.payload.cands[0])
        rin_nx = self._register("in_nx", p.norm_bits, i.payload.nx)
        winner = Signal(cand, name="winner")
        sources = {
            "input": rin,
            "winner": winner,
            "held": self._held("held", cand, dict.fromkeys(_HOLD_ODD, rin)),
            "c7": self._held("c7", cand, {_HOLD_C7: rin}),
            **{n: self._held(n, cand, {ph: winner}) for n, ph in _HOLD_WINNER.items()},
        }
        nx = self._held("nx", p.norm_bits, {_HOLD_C7: rin_nx})
        # The ``a`` operands' sources, widened once each (their fields zero-extended); the
        # threshold's is the token's bound.
        wide = {}
        for name in dict.fromkeys(a for _, a, _ in SERIAL_SCHEDULE.values()):
            wide[name] = w = Signal(operand, name=f"{name}_wide")
            if name == "threshold":
                m.d.comb += [w.eligible.eq(1), w.dsq.eq(self._threshold(nx)), w.ny.eq(1 << shift)]
            else:
                m.d.comb += [getattr(w, f).eq(getattr(sources[name], f)) for f, _ in cand]

        # The test: its operands, loaded by the schedule, then its stages; both candidates
        # ride beside it to the step that chooses.
        op_a, op_b = Signal(operand, name="op_a"), Signal(cand, name="op_b")
        with m.If(step), m.Switch(phase):
            for ph, (_, a, b) in SERIAL_SCHEDULE.items():
                with m.Case(ph):
                    m.d.sync += [op_a.eq(wide[a]), op_b.eq(sources[b])]
        parts = self._better_parts("test", op_a, op_b)
        a, b = cand(Cat(op_a.eligible, op_a.dsq[:p.dot_sq_bits], op_a.ny[:p.norm_bits],
                        op_a.slot, op_a.code)), op_b
        for stage in ("test", "pair"):
            if stage == "pair":
                parts = self._pair("test", parts, self._better_bits)
            a = self._register(f"{stage}_a", cand, a)
            b = self._register(f"{stage}_b", cand, b)
        wins = self._register("wins", 1, self._better(a.eligible, b.eligible, parts))
        a = self._register("sign_a", cand, a)
        b = self._register("sign_b", cand, b)
        m.d.comb += winner.eq(Mux(wins, b, a))

        # The threshold test decides (the token's best candidate beats its bound), then the
        # delay stages, which move whenever the output can.
        valid = Signal()
        m.d.comb += valid.eq(step & started[-1])
        decision = Cat(wins, b.slot, b.code)
        for n in range(SELECT_STAGES - (_DECIDED - (CANDIDATES - 1))):
            valid_d, decision_d = Signal(name=f"pad{n}_valid"), Signal.like(decision,
                                                                            name=f"pad{n}")
            with m.If(advance):
                m.d.sync += [valid_d.eq(valid), decision_d.eq(decision)]
            with m.If(self.flush):
                m.d.sync += valid_d.eq(0)
            valid, decision = valid_d, decision_d
        m.d.comb += [
            o.valid.eq(valid),
            Cat(o.payload.match, o.payload.slot, o.payload.code).eq(decision),
        ]
        self._tag_queue(m)
        return m

    def _threshold(self, nx):
        """theta_q**2 * ``nx`` in three stages, computed in every step from the held norm and
        taken in the phase when it holds the token's."""
        kind, value = "nx", nx
        for _ in range(TEST_STAGES - 1):
            kind, value = self._carry_threshold("thr", (kind, value))
        assert kind == "pair"
        total = self._total(value, self._params.token_threshold_bits, signed=False)
        return self._held("thr", total.shape(), {_THRESHOLD_READY: total})

