"""The squared norm of a sub-vector, computed once when a token enters the SIC window (spec 4.1)."""

from amaranth.hdl import Array, Const, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..lib.arith import carry_save, carry_save_sum, squares_terms, sum_of_squares
from .similarity_comparator import vector_layout

__all__ = ["VectorNorm", "norm_squarers"]


def norm_squarers(p, steps):
    """Squarers of a :class:`VectorNorm` spread over ``steps`` cycles: ceil(dim / steps)."""
    return -(-p.dim // steps)


class VectorNorm(FocusBlock):
    """``norm = sum(x[i]**2)``, exact, for V signed ``elem_bits`` elements, with
    ``s = ceil(V / steps)`` squarers: sized to the rate at which tokens arrive.

    ``steps = 1`` (the default): combinational, no state, V squarers whose partial products are
    added in one tree (:func:`~rtl.lib.arith.sum_of_squares`: a square needs about half the
    partial products of a product). The block matcher uses it so with 7 comparators (a token per
    cycle).

    ``steps > 1``: the squares are spread over ``steps`` steps, one per cycle at most. Step r
    squares elements ``r*s .. r*s + s - 1`` (those below V) and ``norm`` is the sum of the
    steps before it (a register) plus its own squares (combinational): after the last step it is
    the norm. ``advance`` ends the step at the clock edge (the register takes ``norm``); step 0
    starts a new sum. The squarers' operands are registers, loaded at the clock edge before
    their step: with a step's ``advance``, the next step's elements of ``x``; with ``load``, step
    0's elements of ``x_next``, the vector that ``x`` holds from the next cycle on (``load``
    wins). So no multiplexer stands between a register and the squarers. The block matcher runs
    one step per round of a token (``rounds = ceil(7 / comparators)`` cycles per token), so
    with one comparator 5 squarers do the work of 32.

    ``registered=True``: a step's squares are reduced, in carry-save form, to two rows that are
    registered at its ``advance``; the sum register takes them in the next step. ``norm`` is the
    sum register plus those two rows, one carry chain from registers: the norm from the clock
    edge that ends the last step (held while ``advance`` is low); with ``steps = 1`` too (the
    squarers' operands then loaded with ``load`` only). So the squarers' tree and a carry
    chain are never in one cycle (on the ECP5 they were the block matcher's longest path, 17
    levels). The block matcher's input register uses it so with several rounds: ``rounds - 1``
    steps, and the norm read on the last round, where it is written into the window and carried
    to the comparators in that cycle.

    The block matcher writes the norm into the window next to the vector, so each candidate's
    norm is read, never recomputed; it is used only by the selection and the threshold test,
    late enough to wait for the last step.

    Parameters
    ----------
    params : FocusParams
        Uses ``dim`` and ``elem_bits``.
    steps : int
        Cycles the norm is spread over, 1 or more.
    registered : bool
        ``norm`` is a register, valid after the last step (``step``, ``advance``, ``load`` and
        ``x_next`` are then members even with one step).

    Members
    -------
    x : In(vector_layout(params))
        Held through the steps of one vector.
    step : In(range(steps))
        The step of this cycle (``steps > 1`` or ``registered`` only).
    advance : In(1)
        The step ends at this clock edge (``steps > 1`` or ``registered`` only).
    load, x_next : In(1), In(vector_layout(params))
        A new vector, ``x_next``, starts at step 0 after this clock edge (``steps > 1`` or
        ``registered`` only).
    norm : Out(params.norm_bits)
        Zero exactly when ``x`` is the zero vector (after the last step).
    """

    def __init__(self, params=None, steps=1, *, registered=False):
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive integer, not {steps!r}")
        self._steps, self._registered = steps, bool(registered)
        spread = steps > 1 or registered
        super().__init__(params, lambda p: {
            "x": In(vector_layout(p)),
            **({"step": In(range(steps)), "advance": In(1), "load": In(1),
                "x_next": In(vector_layout(p))} if spread else {}),
            "norm": Out(p.norm_bits),
        })

    @property
    def steps(self):
        return self._steps

    def elaborate(self, platform):
        p = self._params
        m = Module()
        x = self.x
        if self._steps == 1 and not self._registered:
            m.d.comb += self.norm.eq(sum_of_squares(m, [x[i] for i in range(p.dim)], p.norm_bits))
            return m

        s, steps = norm_squarers(p, self._steps), self._steps
        zero = Const(0, x[0].shape())

        def element(vector, r, j):
            """Squarer j's element in step r: r*s + j (0 past the last element)."""
            return vector[r * s + j] if r * s + j < p.dim else zero

        operands = [Signal(x[0].shape(), name=f"operand{j}") for j in range(s)]
        for j, operand in enumerate(operands):
            with m.If(self.load):
                m.d.sync += operand.eq(element(self.x_next, 0, j))
            if steps > 1:
                with m.Elif(self.advance):
                    following = [element(x, r + 1, j) for r in range(steps - 1)]
                    m.d.sync += operand.eq(Array(following)[self.step])
        total = Signal(p.norm_bits, name="total")
        if not self._registered:
            # The steps before are one more row of the squares' sum: a single carry chain.
            partial = Signal(p.norm_bits, name="partial")
            m.d.comb += partial.eq(sum_of_squares(m, operands, p.norm_bits,
                                                  plus=[(Mux(self.step == 0, 0, total), 0)]))
            with m.If(self.advance):
                m.d.sync += total.eq(partial)
            m.d.comb += self.norm.eq(partial)
            return m
        # Registered: a step's squares are reduced to two rows in carry-save form (``part``,
        # registered at its ``advance``) and added to the sum in the next step, so the
        # squarers' tree and a carry chain are never in one cycle.
        part = [Signal(p.norm_bits, name=f"part{n}") for n in range(2)]
        rows, constant = squares_terms(m, operands)
        squares = carry_save(m, rows, constant, p.norm_bits, name="squares_csa")
        norm = Signal(p.norm_bits, name="norm_sum")     # total + part: the steps so far
        m.d.comb += norm.eq(carry_save_sum(m, [(total, 0), *((row, 0) for row in part)], 0,
                                           p.norm_bits, name="norm_csa"))
        with m.If(self.advance):
            m.d.sync += [row.eq(sq) for row, sq in zip(part, squares, strict=True)]
            # Step 0's ``part`` is the last vector's: the sum starts again.
            m.d.sync += total.eq(Mux(self.step == 0, 0, norm))
        m.d.comb += self.norm.eq(norm)
        return m
