"""The exact 8-bit similarity comparator of SIC (spec 4.1)."""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data
from amaranth.lib.wiring import In

from ..block import FocusBlock, stage_members
from ..lib.clock_gate import ICG_CELL, activity_members, add_gated, count_activity, gated_pipeline
from .arith import split_groups

__all__ = ["SimilarityComparator", "vector_layout", "comparator_input_layout",
           "comparator_output_layout", "COMPARATOR_LATENCY"]

#: Cycles from an input transfer to its result being valid on ``o_stream`` (no back-pressure).
COMPARATOR_LATENCY = 5


def vector_layout(p):
    """A sub-vector: ``dim`` signed ``elem_bits`` elements."""
    return data.ArrayLayout(signed(p.elem_bits), p.dim)


def _with_tag(fields, tag):
    return data.StructLayout(fields if tag is None else {**fields, "tag": tag})


def comparator_input_layout(p, tag=None):
    """One comparison: x, y, their squared norms (computed once, when a token enters the window),
    and the threshold theta_q (theta = theta_q / 2**F); with a ``tag`` shape, also the caller's
    side data, returned unchanged with the result."""
    return _with_tag({
        "x": vector_layout(p),
        "y": vector_layout(p),
        "nx": unsigned(p.norm_bits),
        "ny": unsigned(p.norm_bits),
        "theta_q": unsigned(p.theta_bits),
    }, tag)


def comparator_output_layout(p, tag=None):
    """The decision, and dot(x, y) and dot**2 for choosing the best of several candidates (0 when
    skipped); with a ``tag`` shape, also the comparison's tag."""
    return _with_tag({
        "similar": 1,
        "dot": signed(p.dot_bits),
        "dot_sq": unsigned(2 * (p.dot_bits - 1)),
    }, tag)


def _tree_sum(terms):
    """Balanced adder tree (depth ceil(log2 n)) rather than a chain of n-1 adders."""
    terms = list(terms)
    while len(terms) > 1:
        pairs = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


def _groups(terms, groups):
    """``terms`` cut into ``groups`` contiguous shares of near-equal size (none empty)."""
    size = -(-len(terms) // groups)
    return [terms[g:g + size] for g in range(0, len(terms), size)]


class SimilarityComparator(FocusBlock):
    """Decides cos(x, y) > theta_q / 2**F exactly, as
    ``nx > 0 and ny > 0 and dot > 0 and dot**2 * 2**(2F) > theta_q**2 * nx * ny``.

    Latency 5 cycles (:data:`COMPARATOR_LATENCY`), throughput one comparison per cycle. Under
    ``o_stream`` back-pressure the whole pipeline holds (``i_stream.ready`` is low while the output
    register is full and not being taken); nothing is lost or duplicated, and results leave in
    input order.

    Zero skip and clock gating: a comparison with ``nx == 0`` or ``ny == 0`` can never be similar,
    so it passes through the pipeline as a control token only, with ``similar = 0`` and ``dot = 0``;
    each stage's datapath registers are clocked only when that stage takes a valid, non-zero
    comparison (by clock enable, or by an ICG cell with ``gating="icg"``).

    Pipeline, each stage one level of multipliers or a few adders deep (for the ECP5's 100 MHz
    target; the multipliers are plain ``*``, so an FPGA flow maps them to its DSP blocks):
    stage 1 forms the V products x[n] * y[n], nx * ny and theta_q**2; stage 2 adds the products
    in a few groups (:func:`~rtl.sic.arith.split_groups`); stage 3 adds the groups into dot and
    forms theta_q**2 * nx * ny; stage 4 forms dot**2; stage 5 compares.

    Parameters
    ----------
    params : FocusParams
        Uses ``dim``, ``elem_bits``, ``theta_bits`` and ``gating``.
    icg_cell : str or None
        Module name of the clock-gate cell for ``gating="icg"``. ``None`` models the ICG as a clock
        enable (for the Amaranth simulator, which cannot run a Verilog instance).
    gate : bool
        False clocks the datapath registers whenever the pipeline moves, zero or not: the ungated
        baseline for power comparisons (same results).
    tag : shape-like or None
        With a shape, both payloads get a ``tag`` field: the caller's side data of the comparison
        (say, which candidate it is), carried through the pipeline's control registers (never
        gated) and returned with the result, so it cannot fall out of step with the comparison.
        None (the default): no tag, the standalone block's ports.
    flush : bool
        True adds the ``flush`` input (for a caller that aborts work in flight).

    Members
    -------
    i_stream : In(stream.Signature(comparator_input_layout(params, tag)))
    o_stream : Out(stream.Signature(comparator_output_layout(params, tag)))
    active : Out(32)
        Comparisons computed (both norms non-zero) since reset or ``clear``.
    gated : Out(32)
        Comparisons skipped with the datapath clocks off (a zero norm) since reset or ``clear``.
    clear : In(1)
        Zeroes both counters (for the start of a job).
    flush : In(1)
        Only with ``flush=True``: drops every comparison in flight at the clock edge, including
        one taken from ``i_stream`` in the same cycle (which is still counted). The counters keep
        their values. An abort: a result being offered on ``o_stream`` is withdrawn (the
        consumer is to be flushed with it).
    """

    def __init__(self, params=None, *, icg_cell=ICG_CELL, gate=True, tag=None, flush=False):
        self._icg_cell = icg_cell
        self._gate = gate
        self._tag = tag
        self._flush = flush
        super().__init__(params, lambda p: stage_members(
            comparator_input_layout(p, tag), comparator_output_layout(p, tag),
            **activity_members(),
            clear=In(1),
            **({"flush": In(1)} if flush else {}),
        ))

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        F = p.theta_bits

        # Control: valid and non-zero flags per stage, never gated.
        in_nonzero = (i.payload.nx != 0) & (i.payload.ny != 0)
        advance, valid, nonzero = gated_pipeline(
            m, i, o, COMPARATOR_LATENCY, in_nonzero,
            flush=self.flush if self._flush else None, tag=self._tag)

        def gate(name, enable, statements):
            add_gated(m, name, enable if self._gate else advance, statements, gating=p.gating,
                      icg_cell=self._icg_cell)

        def reg(name, shape):
            return Signal(shape, name=name, reset_less=True)

        # Stage 1: the V products, nx * ny and theta_q**2.
        x, y = i.payload.x, i.payload.y
        prods = [reg(f"prod{n}", signed(2 * p.elem_bits)) for n in range(p.dim)]
        norms1 = reg("norms1", unsigned(2 * p.norm_bits))
        theta_sq1 = reg("theta_sq1", unsigned(2 * F))
        gate("stage1", advance & i.valid & in_nonzero, [
            *(r.eq(x[n] * y[n]) for n, r in enumerate(prods)),
            norms1.eq(i.payload.nx * i.payload.ny),
            theta_sq1.eq(i.payload.theta_q * i.payload.theta_q),
        ])

        # Stage 2: the products' sum in a few groups.
        shares = _groups(prods, split_groups(p.dim))
        parts = [reg(f"dot_part{g}", signed(p.dot_bits)) for g in range(len(shares))]
        norms2 = reg("norms2", unsigned(2 * p.norm_bits))
        theta_sq2 = reg("theta_sq2", unsigned(2 * F))
        gate("stage2", advance & valid[0] & nonzero[0], [
            *(r.eq(_tree_sum(share)) for r, share in zip(parts, shares, strict=True)),
            norms2.eq(norms1), theta_sq2.eq(theta_sq1),
        ])

        # Stage 3: dot, and the right side of the test.
        dot3 = reg("dot3", signed(p.dot_bits))
        rhs3 = reg("rhs3", unsigned(p.rhs_bits))
        gate("stage3", advance & valid[1] & nonzero[1], [
            dot3.eq(_tree_sum(parts)),
            rhs3.eq(theta_sq2 * norms2),
        ])

        # Stage 4: dot**2 < 2**(2*(dot_bits-1)) for any V elements.
        dot4 = reg("dot4", signed(p.dot_bits))
        dot_sq4 = reg("dot_sq4", unsigned(2 * (p.dot_bits - 1)))
        rhs4 = reg("rhs4", unsigned(p.rhs_bits))
        gate("stage4", advance & valid[2] & nonzero[2], [
            dot4.eq(dot3), dot_sq4.eq(dot3 * dot3), rhs4.eq(rhs3),
        ])

        # Stage 5: the comparison; the output register.
        dot5 = reg("dot5", signed(p.dot_bits))
        dot_sq5 = reg("dot_sq5", unsigned(2 * (p.dot_bits - 1)))
        similar5 = reg("similar5", 1)
        gate("stage5", advance & valid[3] & nonzero[3], [
            dot5.eq(dot4),
            dot_sq5.eq(dot_sq4),
            similar5.eq((dot4 > 0) & ((dot_sq4 << (2 * F)) > rhs4)),
        ])

        m.d.comb += [
            o.payload.similar.eq(nonzero[4] & similar5),
            o.payload.dot.eq(Mux(nonzero[4], dot5, 0)),
            o.payload.dot_sq.eq(Mux(nonzero[4], dot_sq5, 0)),
        ]
        count_activity(m, i, in_nonzero, active=self.active, gated=self.gated, clear=self.clear)
        return m
