"""The exact 8-bit similarity comparator of SIC (spec 4.1)."""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data
from amaranth.lib.wiring import In

from ..block import FocusBlock, stage_members
from ..lib.arith import split_groups
from ..lib.clock_gate import ICG_CELL, activity_members, add_gated, count_activity, gated_pipeline

__all__ = ["SimilarityComparator", "vector_layout", "comparator_input_layout",
           "comparator_output_layout", "COMPARATOR_LATENCY"]

#: Cycles from an input transfer to its result being valid on ``o_stream`` (no back-pressure).
COMPARATOR_LATENCY = 7


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


def _nonzero(value):
    """``value != 0``, as the carry out of ``value + 2**n - 1``: an FPGA maps the add to its
    carry chain, which ORs the n bits faster than a tree of LUTs."""
    return (value + (2 ** len(value) - 1))[len(value)]


def _groups(terms, groups):
    """``terms`` cut into ``groups`` contiguous shares of near-equal size (none empty)."""
    size = -(-len(terms) // groups)
    return [terms[g:g + size] for g in range(0, len(terms), size)]


#: Width of the operand pieces of a wide product: each pair of pieces is one 18x18 signed DSP
#: multiply, so no DSP is followed by adders in its cycle. 12 bits, not the 17 a DSP could
#: take: a 17 x 17 piece product alone took 4.5 ns in OSU 0.18 um (221 MHz, the block's limit),
#: a 12 x 12 one fits 250 MHz, for 22 DSPs instead of 16 on the ECP5 at the board preset.
PIECE_BITS = 12


def _pieces(value):
    """``value`` as ``(piece, shift)`` with ``value == sum(piece << shift)``: unsigned pieces of
    :data:`PIECE_BITS` from the bottom, the top one signed when ``value`` is."""
    n = len(value)
    out = []
    for lo in range(0, n, PIECE_BITS):
        piece = value[lo:lo + PIECE_BITS]
        if value.shape().signed and lo + PIECE_BITS >= n:
            piece = piece.as_signed()
        out.append((piece, lo))
    return out


def _piece_products(a, b=None):
    """The products of the pieces of ``a`` and ``b`` (:func:`_pieces`) as ``(product, shift)``;
    ``a * b`` is their shifted sum. Without ``b``, the square of ``a``, each cross product
    once, doubled."""
    if b is None:
        pa = _pieces(a)
        return [(x * y, sx + sy + (i != j))
                for i, (x, sx) in enumerate(pa) for j, (y, sy) in enumerate(pa) if i <= j]
    return [(x * y, sx + sy) for x, sx in _pieces(a) for y, sy in _pieces(b)]


class SimilarityComparator(FocusBlock):
    """Decides cos(x, y) > theta_q / 2**F exactly, as
    ``nx > 0 and ny > 0 and dot > 0 and dot**2 * 2**(2F) > theta_q**2 * nx * ny``.

    Latency 7 cycles (:data:`COMPARATOR_LATENCY`), throughput one comparison per cycle. Under
    ``o_stream`` back-pressure the whole pipeline holds (``i_stream.ready`` is low while the output
    register is full and not being taken); nothing is lost or duplicated, and results leave in
    input order.

    Zero skip and clock gating: a comparison with ``nx == 0`` or ``ny == 0`` can never be similar,
    so it passes through the pipeline as a control token only, with ``similar = 0`` and ``dot = 0``;
    each stage's datapath registers are clocked only when that stage takes a valid, non-zero
    comparison (by clock enable, or by an ICG cell with ``gating="icg"``).

    Pipeline, each stage one level of multipliers or a few adders deep (for the ECP5's 100 MHz
    target). The multipliers are plain ``*``, so an FPGA flow maps them to its DSP blocks, and a
    wide product is formed as the products of its operands' 12-bit pieces (:data:`PIECE_BITS`),
    registered, then summed the next cycle. Stage 1: the operands, so that every multiplier has a
    register on both sides; stage 2: the V products x[n] * y[n], the pieces of nx * ny, and
    theta_q**2; stage 3: the products added in a few groups (:func:`~rtl.lib.arith.split_groups`),
    and nx * ny; stage 4: dot, and the pieces of theta_q**2 * nx * ny; stage 5: the pieces of
    dot**2, and the right side; stage 6: dot**2; stage 7: the compare.

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
        in_nonzero = Signal()
        m.d.comb += in_nonzero.eq(_nonzero(i.payload.nx) & _nonzero(i.payload.ny))
        advance, valid, nonzero = gated_pipeline(
            m, i, o, COMPARATOR_LATENCY, in_nonzero,
            flush=self.flush if self._flush else None, tag=self._tag)

        def gate(name, enable, statements):
            add_gated(m, name, enable if self._gate else advance, statements, gating=p.gating,
                      icg_cell=self._icg_cell)

        def reg(name, shape):
            return Signal(shape, name=name, reset_less=True)

        # Each stage's statements, gated together at the end (one clock gate per stage).
        stages = {k: [] for k in range(1, COMPARATOR_LATENCY + 1)}

        def stage(k, statements):
            stages[k] += statements

        def pieces(k, name, products):
            """Stage ``k`` registers the piece ``products``; returns ``(register, shift)``."""
            regs = [(reg(f"{name}{n}", value.shape()), shift)
                    for n, (value, shift) in enumerate(products)]
            stage(k, [r.eq(value) for (r, _), (value, _) in zip(regs, products, strict=True)])
            return regs

        def piece_sum(regs):
            return _tree_sum(r << shift for r, shift in regs)

        def delay(k, name, value):
            """``value`` registered by stage ``k``."""
            r = reg(name, value.shape())
            stage(k, [r.eq(value)])
            return r

        # Stage 1: the operands, so that every multiplier has a register on both sides.
        x, y = delay(1, "x", i.payload.x), delay(1, "y", i.payload.y)
        nx, ny = delay(1, "nx", i.payload.nx), delay(1, "ny", i.payload.ny)
        theta_q = delay(1, "theta_q", i.payload.theta_q)
        prods = pieces(2, "prod", [(x[n] * y[n], 0) for n in range(p.dim)])
        norms_pieces = pieces(2, "norms_piece", _piece_products(nx, ny))
        theta_sq = delay(2, "theta_sq", theta_q * theta_q)

        shares = _groups([r for r, _ in prods], split_groups(p.dim))
        parts = [reg(f"dot_part{g}", signed(p.dot_bits)) for g in range(len(shares))]
        norms = reg("norms", unsigned(2 * p.norm_bits))
        stage(3, [*(r.eq(_tree_sum(share)) for r, share in zip(parts, shares, strict=True)),
                  norms.eq(piece_sum(norms_pieces))])
        theta_sq_d = delay(3, "theta_sq_d", theta_sq)

        dot = reg("dot", signed(p.dot_bits))
        stage(4, [dot.eq(_tree_sum(parts))])
        rhs_pieces = pieces(4, "rhs_piece", _piece_products(theta_sq_d, norms))

        # dot**2 < 2**(2*(dot_bits-1)) for any V elements.
        dsq_pieces = pieces(5, "dot_sq_piece", _piece_products(dot))
        rhs = reg("rhs", unsigned(p.rhs_bits))
        stage(5, [rhs.eq(piece_sum(rhs_pieces))])
        dot_d1 = delay(5, "dot_d1", dot)

        dot_sq = reg("dot_sq", unsigned(2 * (p.dot_bits - 1)))
        stage(6, [dot_sq.eq(piece_sum(dsq_pieces))])
        rhs_d, dot_d2 = delay(6, "rhs_d", rhs), delay(6, "dot_d2", dot_d1)

        # Stage 7: the comparison; the output register.
        similar = delay(7, "similar", (dot_d2 > 0) & ((dot_sq << (2 * F)) > rhs_d))
        dot_out, dot_sq_out = delay(7, "dot_out", dot_d2), delay(7, "dot_sq_out", dot_sq)

        # Stage k takes its inputs from stage k - 1's registers (stage 1 from i_stream).
        for k, statements in stages.items():
            enable = advance & i.valid & in_nonzero if k == 1 else (
                advance & valid[k - 2] & nonzero[k - 2])
            gate(f"stage{k}", enable, statements)

        m.d.comb += [
            o.payload.similar.eq(nonzero[6] & similar),
            o.payload.dot.eq(Mux(nonzero[6], dot_out, 0)),
            o.payload.dot_sq.eq(Mux(nonzero[6], dot_sq_out, 0)),
        ]
        count_activity(m, i, in_nonzero, active=self.active, gated=self.gated, clear=self.clear)
        return m
