# amaranth: UnusedElaboratable=no
"""rtl.lib.arith: the partial-product forms of products, squares, dot products and sums of
squares equal the integer expressions, exhaustively for narrow operands and on random and
extreme values for the widths the block matcher uses."""

import itertools

import numpy as np
import pytest
from amaranth.hdl import Module, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from rtl.lib.arith import (
    booth_rows,
    carry_save,
    carry_save_sum,
    counting,
    dot_product,
    product,
    product_rows,
    row_sum,
    square_rows,
    sum_of_squares,
    unsigned_square,
)
from rtl.params import FocusParams
from sim.bench.multipliers import count


class Arith(wiring.Component):
    """a * b (Baugh-Wooley and Booth), a * a, the dot product and the sum of squares of (a, c)
    . (b, d), e * e (folded and Booth) and a * e (signed by unsigned)."""

    def __init__(self, n, m, ue):
        self._n, self._m, self._ue = n, m, ue
        super().__init__({
            "a": In(signed(n)), "b": In(signed(m)), "c": In(signed(n)), "d": In(signed(m)),
            "e": In(unsigned(ue)),
            "prod": Out(signed(n + m)), "square": Out(unsigned(2 * n)),
            "dot": Out(signed(n + m + 1)), "squares": Out(unsigned(2 * n + 1)),
            "usquare": Out(unsigned(2 * ue)),
            "booth": Out(signed(n + m)), "booth_ue": Out(signed(n + ue + 1)),
            "booth_uu": Out(unsigned(2 * ue)),
        })

    def elaborate(self, platform):
        m = Module()
        n, w = self._n, self._n + self._m
        rows, constant = product_rows(m, self.a, self.b)
        square, square_constant = square_rows(m, self.a)
        m.d.comb += [
            self.prod.eq(row_sum(m, rows, constant, w, signed=True)),
            self.square.eq(row_sum(m, square, square_constant, 2 * n, signed=False)),
            self.dot.eq(dot_product(m, [self.a, self.c], [self.b, self.d], w + 1)),
            self.squares.eq(sum_of_squares(m, [self.a, self.c], 2 * n + 1)),
            self.usquare.eq(unsigned_square(m, self.e, 2 * self._ue)),
            self.booth.eq(row_sum(m, *booth_rows(m, self.a, self.b), w, signed=True)),
            self.booth_ue.eq(product(m, self.a, self.e, n + self._ue + 1, x_signed=True)),
            self.booth_uu.eq(product(m, self.e, self.e, 2 * self._ue)),
        ]
        return m


def run(n, m, ue, cases):
    dut = Arith(n, m, ue)
    bad = []

    async def testbench(ctx):
        for a, b, c, d, e in cases:
            for name, value in zip("abcde", (a, b, c, d, e), strict=True):
                ctx.set(getattr(dut, name), value)
            got = [ctx.get(getattr(dut, k)) for k in ("prod", "square", "dot", "squares",
                                                      "usquare", "booth", "booth_ue",
                                                      "booth_uu")]
            want = [a * b, a * a, a * b + c * d, a * a + c * c, e * e, a * b, a * e, e * e]
            if got != want:
                bad.append(((a, b, c, d, e), got, want))

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    sim.run()
    assert not bad, bad[:5]


@pytest.mark.parametrize("n, m", [(2, 2), (2, 3), (3, 2), (4, 4), (3, 5)])
def test_exhaustive_narrow(n, m):
    values_n = range(-(1 << (n - 1)), 1 << (n - 1))
    values_m = range(-(1 << (m - 1)), 1 << (m - 1))
    cases = [(a, b, c, d, (a * 7 + b) % 16) for a, b in itertools.product(values_n, values_m)
             for c, d in ((values_n[0], values_m[0]), (values_n[-1], values_m[-1]), (a, b))]
    run(n, m, 4, cases)


@pytest.mark.parametrize("n, ue", [(8, 20), (16, 5)])
def test_random_and_extremes(n, ue):
    rng = np.random.default_rng(n)
    low, high = -(1 << (n - 1)), (1 << (n - 1)) - 1
    extremes = [low, low + 1, -1, 0, 1, high]
    cases = [(a, b, c, d, (1 << ue) - 1) for a, b, c, d in itertools.product(extremes, repeat=4)]
    cases += [(*(int(v) for v in rng.integers(low, high + 1, 4)), int(rng.integers(0, 1 << ue)))
              for _ in range(300)]
    run(n, n, ue, cases)


def _carry_save_rows(m, a, b, e, k, width, outputs):
    """The carry-save rows of ``a * b - e * e + k`` (Booth rows, the square's negated);
    ``outputs="sum"``: those rows (two of them) reduced and added again by
    :func:`carry_save_sum`, with no constant (the path of a pipeline's later stages)."""
    plus, c_plus = booth_rows(m, a, b, x_signed=False, y_signed=True)
    minus, c_minus = booth_rows(m, e, e, x_signed=False, y_signed=False)
    if outputs == "sum":
        rows = carry_save(m, plus, c_plus - c_minus + k, width, minus=minus)
        return [carry_save_sum(m, [(r, 0) for r in rows], 0, width)]
    return carry_save(m, plus, c_plus - c_minus + k, width, minus=minus, outputs=outputs)


class CarrySave(wiring.Component):
    """``a * b - e * e + k`` (``a`` unsigned, ``b`` signed) as the rows of :func:`carry_save`,
    each row an output."""

    def __init__(self, n, m, ue, k, outputs, width=None):
        self._k, self._outputs = k, outputs
        self.width = n + m + 2 if width is None else width
        count = len(_carry_save_rows(Module(), Signal(n), Signal(signed(m)), Signal(ue), k,
                                     self.width, outputs))
        super().__init__({
            "a": In(unsigned(n)), "b": In(signed(m)), "e": In(unsigned(ue)),
            "rows": Out(data.ArrayLayout(self.width, count)),
        })

    def elaborate(self, platform):
        m = Module()
        rows = _carry_save_rows(m, self.a, self.b, self.e, self._k, self.width, self._outputs)
        m.d.comb += [self.rows[r].eq(row) for r, row in enumerate(rows)]
        return m


@pytest.mark.parametrize("n, m, ue, outputs, k, width", [
    (3, 3, 2, 2, -12345, None), (4, 3, 3, 3, -12345, None), (20, 20, 20, 2, -12345, None),
    (20, 40, 20, "balanced", -12345, None), (5, 7, 4, "balanced", -12345, None),
    (20, 40, 20, "sum", 0, None),                  # two stages, the second with no constant
    (20, 40, 20, "balanced", 7, 40),               # rows and products wider than the result
    (3, 3, 2, 24, 0, None),                        # more outputs than rows: zero rows padded
])
def test_carry_save_rows_add_up_to_the_sum(n, m, ue, outputs, k, width):
    """The rows of :func:`carry_save` add up, modulo 2**width, to the sum of its rows minus the
    ``minus`` rows plus the constant: exhaustively for narrow operands, on extremes and random
    values for the selection's widths (a 20 x 40 product less a 20 x 20 square), also when the
    rows run past the width, when more outputs are asked than there are rows, and through
    :func:`carry_save_sum` after a first stage. With ``"balanced"``, several rows come out (a
    first stage's), not two."""
    dut = CarrySave(n, m, ue, k, outputs, width)
    rows = [dut.rows[r] for r in range(len(dut.rows))]
    if outputs == "sum":
        assert len(rows) == 1
    elif outputs != "balanced":
        assert len(rows) == outputs
    elif n > 10:
        assert len(rows) > 2
    a_values = [0, 1, (1 << n) - 1]
    b_values = [-(1 << (m - 1)), -1, 0, 1, (1 << (m - 1)) - 1]
    e_values = [0, 1, (1 << ue) - 1]
    if n + m + ue <= 10:
        cases = list(itertools.product(range(1 << n), range(-(1 << (m - 1)), 1 << (m - 1)),
                                       range(1 << ue)))
    else:
        rng = np.random.default_rng(n + m + ue)
        cases = list(itertools.product(a_values, b_values, e_values))
        cases += [(int(rng.integers(0, 1 << n)), int(rng.integers(-(1 << (m - 1)), 1 << (m - 1))),
                   int(rng.integers(0, 1 << ue))) for _ in range(300)]
    bad = []

    async def testbench(ctx):
        for a, b, e in cases:
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            ctx.set(dut.e, e)
            got = sum(ctx.get(r) for r in rows) % (1 << dut.width)
            want = (a * b - e * e + k) % (1 << dut.width)
            if got != want:
                bad.append(((a, b, e), got, want))

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    sim.run()
    assert not bad, bad[:5]


def test_carry_save_rejects_signed_rows():
    """``carry_save`` places and negates rows as unsigned values, so a signed row is an error,
    not a silently wrong sum; so is a form of fewer than two rows."""
    m = Module()
    with pytest.raises(ValueError, match="unsigned rows only"):
        carry_save(m, [(Signal(signed(4)), 0)], 0, 8)
    with pytest.raises(ValueError, match="unsigned rows only"):
        carry_save(m, [(Signal(4), 0)], 0, 8, minus=[(Signal(signed(4)), 1)])
    with pytest.raises(ValueError, match="at least two outputs"):
        carry_save(m, [(Signal(4), 0)], 0, 8, outputs=1)


def test_counting_records_what_is_built():
    """``counting`` lists each product, dot product, sum of squares and square with its
    bit-products (n x m of the operand widths) and partial-product bits (counted here from the
    rows of :func:`booth_rows` and :func:`square_rows`); nothing is recorded outside it, and a
    nested block does not leak into the outer one."""
    m = Module()
    a, b, c, d = (Signal(signed(w)) for w in (8, 6, 8, 6))
    e = Signal(unsigned(5))
    product(m, e, e, 10)                                   # not counted
    with counting() as outer:
        product(m, a, b, 14, x_signed=True, y_signed=True)
        with counting() as inner:
            unsigned_square(m, e, 10)
        dot_product(m, [a, c], [b, d], 15)
        sum_of_squares(m, [a, c], 17)

    def pp(rows):
        return sum(len(row) for row, _ in rows[0])

    booth = pp(booth_rows(m, a, b))
    squares = pp(square_rows(m, a))
    assert inner == [("square", 1, 25, 5 + 10)]
    assert outer == [("product", 1, 48, booth), ("dot", 2, 96, 2 * booth),
                     ("squares", 2, 128, 2 * squares)]
    assert squares == 7 + 21 + 1 + 7              # the bits of a**2 for n = 8, folded


def test_multiplier_bench_counts_the_matcher():
    """``sim.bench.multipliers.count`` at V = 4, one comparator: the widths of spec 1's derived
    table give each product (dot of 4 int8 products, dot**2 of norm_bits, 1 squarer of the norm
    over 7 rounds, theta**2 * nx, theta**2) and the serial selection's one test unit: its
    ``b.dsq * a.ny`` and ``b.ny * a.dsq``, with ``a`` wide enough for the threshold candidate
    (``ny`` = 2**(2F), ``dsq`` = theta**2 * nx), so max(norm_bits, 2F + 1) x dot_sq_bits and
    norm_bits x max(dot_sq_bits, 2F + norm_bits)."""
    p = FocusParams(dim=4, window=16, tile=24, layers=4, comparators=1)
    nb, dsq, f2 = p.norm_bits, p.dot_sq_bits, 2 * p.theta_bits
    assert (nb, dsq) == (17, 33)
    bit_products, _, parts = count(p)
    sizes = sorted((kind, bp) for (kind, _, bp, _), n in parts.items() for _ in range(n))
    test_unit = [max(nb, f2 + 1) * dsq, nb * max(dsq, f2 + nb)]
    assert sizes == sorted([("dot", 4 * 64), ("square", nb * nb), ("squares", 64),
                            *[("product", bp) for bp in test_unit], ("product", f2 * nb),
                            ("square", 64)])
    want = 4 * 64 + nb * nb + 64 + sum(test_unit) + f2 * nb + 64
    assert bit_products == want
