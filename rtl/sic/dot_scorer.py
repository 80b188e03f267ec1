"""The block matcher's per-pair unit: dot(x, y), dot**2 and whether the pair can be similar."""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data

from ..block import FocusBlock
from ..lib.arith import carry_save, carry_save_sum, dot_terms, unsigned_square_terms
from ..lib.clock_gate import ICG_CELL, activity_members, add_gated, gated_pipeline
from .match_layouts import matcher_stage_members
from .similarity_comparator import vector_layout

__all__ = ["DotScorer", "scorer_input_layout", "scorer_output_layout", "SCORER_LATENCY"]

#: Cycles from an input transfer to its result being valid on ``o_stream`` (no back-pressure).
SCORER_LATENCY = 5


def _with_tag(fields, tag):
    return data.StructLayout(fields if tag is None else {**fields, "tag": tag})


def scorer_input_layout(p, tag=None):
    """One pair: the token x, whether x is non-zero, the candidate y and whether y exists and is
    non-zero (its squared norm is not 0); with a ``tag`` shape, also the caller's side data."""
    return _with_tag({
        "x": vector_layout(p),
        "x_nonzero": 1,
        "y": vector_layout(p),
        "y_nonzero": 1,
    }, tag)


def scorer_output_layout(p, tag=None):
    """``eligible``: both vectors non-zero and dot(x, y) > 0, the pairs that can be similar;
    ``dsq`` = dot**2 (``dot_sq_bits``), meaningful only when ``eligible``; and the tag."""
    return _with_tag({
        "eligible": 1,
        "dsq": unsigned(p.dot_sq_bits),
    }, tag)


class DotScorer(FocusBlock):
    """Scores a (token, candidate) pair for the block matcher: ``eligible`` (x and y non-zero and
    dot(x, y) > 0) and ``dsq = dot(x, y)**2``, exactly.

    This is the part of the similarity test (:class:`~rtl.sic.similarity_comparator.\
SimilarityComparator`) that depends on the pair. The rest, ``dot**2 * 2**(2F) > theta_q**2 * nx
    * ny``, compares the rational dot**2 / ny with a per-token bound theta_q**2 * nx / 2**(2F),
    and the "better" test between candidates compares the same rationals; so the block matcher
    first picks each token's best eligible candidate by dot**2 / ny
    (:class:`~rtl.sic.best_candidate.BestCandidate`) and tests only that one against the
    threshold, once per token. A pair costs V products (their Booth rows,
    :func:`~rtl.lib.arith.dot_terms`, added over two stages), one squarer of the positive dot
    (``norm_bits`` wide: dot <= nx, ny) and nothing else.

    Latency 5 cycles (:data:`SCORER_LATENCY`), throughput one pair per cycle. The stages: the pair's
    registers (the window's read data goes no further in its cycle); the dot product's Booth rows
    reduced by full adders to a few rows in carry-save form (:func:`~rtl.lib.arith.carry_save`, as
    many as split the full-adder levels evenly between this stage and the next, which also has the
    carry chain), registered; those reduced to two and added, the dot; the same for dot**2's rows,
    and dot > 0; dot**2. Only the second stage of each sum has a carry chain. Under ``o_stream``
    back-pressure the pipeline holds; nothing is lost or duplicated, results leave in input order.

    Zero skip and clock gating as in the similarity comparator: a pair with a zero vector (or no
    candidate: ``y_nonzero`` low) passes as a control token only (``eligible = 0``), and each
    stage's datapath registers after the pair's are clocked only when the stage takes a valid,
    non-zero pair (clock enable, or an ICG cell with ``gating="icg"``); the pair's registers
    take every valid pair (its zero test is too late in the cycle to enable them).

    Parameters
    ----------
    params : FocusParams
        Uses ``dim``, ``elem_bits`` and ``gating``.
    icg_cell : str or None
        Module name of the clock-gate cell for ``gating="icg"`` (``None``: a clock enable, for the
        Amaranth simulator).
    gate : bool
        False clocks the datapath registers whenever the pipeline moves (the ungated baseline).
    tag : shape-like or None
        The caller's side data, carried with the control registers (never gated) and returned
        with the result.

    Members
    -------
    i_stream : In(stream.Signature(scorer_input_layout(params, tag)))
    o_stream : Out(stream.Signature(scorer_output_layout(params, tag)))
    active, gated : Out(32)
        Pairs computed (both non-zero) and skipped with the datapath clocks off, since ``clear``
        (each counted the cycle after its transfer; ``clear`` in that cycle drops it).
    clear : In(1)
        Zeroes both counters.
    flush : In(1)
        Drops every pair in flight at the clock edge, including one taken in the same cycle
        (which is still counted). An abort: a result being offered is withdrawn.
    """

    def __init__(self, params=None, *, icg_cell=ICG_CELL, gate=True, tag=None):
        self._icg_cell = icg_cell
        self._gate = gate
        self._tag = tag
        super().__init__(params, lambda p: matcher_stage_members(
            scorer_input_layout(p, tag), scorer_output_layout(p, tag),
            **activity_members(),
        ))

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream

        in_nonzero = i.payload.x_nonzero & i.payload.y_nonzero
        advance, valid, nonzero = gated_pipeline(m, i, o, SCORER_LATENCY, in_nonzero,
                                                 flush=self.flush, tag=self._tag)

        def gate(name, enable, statements):
            add_gated(m, name, enable if self._gate else advance, statements, gating=p.gating,
                      icg_cell=self._icg_cell)

        x = Signal(vector_layout(p), reset_less=True)
        y = Signal(vector_layout(p), reset_less=True)
        # Clocked for every valid pair: its zero test comes from the window's read port, too
        # late in the cycle for a clock enable (nonzero[0] registers it for the later stages).
        gate("pair", advance & i.valid, [x.eq(i.payload.x), y.eq(i.payload.y)])

        def stage(k, name, statements):
            gate(name, advance & valid[k] & nonzero[k], statements)

        dot = self._two_stages(m, stage, 0, "dot", dot_terms(
            m, [x[n] for n in range(p.dim)], [y[n] for n in range(p.dim)]), p.dot_bits)
        dot = dot.as_signed()

        # A positive dot is below 2**(dot_bits-1) = 2**norm_bits, so its square is that of its
        # low norm_bits bits, unsigned.
        positive = Signal(reset_less=True)
        stage(2, "sign", [positive.eq(dot > 0)])
        positive4 = Signal(reset_less=True)
        stage(3, "sign_delay", [positive4.eq(positive)])
        dsq = self._two_stages(m, stage, 2, "dsq", (unsigned_square_terms(m, dot[:p.norm_bits]),
                                                    0), p.dot_sq_bits)

        m.d.comb += [
            o.payload.eligible.eq(nonzero[4] & positive4),
            o.payload.dsq.eq(dsq),
        ]
        self._count(m, in_nonzero)
        return m

    def _count(self, m, in_nonzero):
        """The activity counters, a cycle after the transfer: the zero test comes from the
        window's read port, too late in the cycle for the counters' clock enables."""
        i = self.i_stream
        taken, work = Signal(name="taken"), Signal(name="work")
        m.d.sync += [taken.eq(i.valid & i.ready), work.eq(in_nonzero)]
        with m.If(self.clear):
            m.d.sync += [self.active.eq(0), self.gated.eq(0)]
        with m.Elif(taken):
            with m.If(work):
                m.d.sync += self.active.eq(self.active + 1)
            with m.Else():
                m.d.sync += self.gated.eq(self.gated + 1)

    @staticmethod
    def _two_stages(m, stage, k, name, terms, width):
        """The sum of ``terms`` (rows, constant) in two stages after stage ``k``: the rows
        reduced by full adders to a few registered rows (carry-save, no carry chain), then
        those to two and added, registered; returns that register."""
        rows, constant = terms
        parts = carry_save(m, rows, constant, width, outputs="balanced", name=f"{name}_csa")
        regs = [Signal(width, name=f"{name}_sum{g}", reset_less=True) for g in range(len(parts))]
        stage(k, f"{name}_parts", [r.eq(v) for r, v in zip(regs, parts, strict=True)])
        total = Signal(width, name=name, reset_less=True)
        stage(k + 1, name, [total.eq(carry_save_sum(m, [(r, 0) for r in regs], 0, width,
                                                    name=f"{name}_pair"))])
        return total
