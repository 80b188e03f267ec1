"""Exact signed sums of products and of squares as one addition of partial-product rows.

A signed multiplier written as ``a * b`` becomes, in Yosys's generic flow, an array multiplier of
the operands sign-extended to the product's width, and a sum of such products adds each product
whole. Written as partial products instead (Baugh-Wooley: every row non-negative, the signs in
one constant), a dot product of V terms is a single sum of ``V * n * m`` AND (or NAND) bits that
Yosys compresses in one carry-save tree with one carry-propagate adder, and a square needs only
about half of its partial products (``a_i a_j`` and ``a_j a_i`` are one bit of twice the weight).
The results are exact: they equal the integer expressions bit for bit
(``tests/test_block_matcher_arith.py`` checks them exhaustively for narrow operands).

A sum that a pipeline spreads over stages should not end each stage in a carry-propagate adder.
:func:`carry_save` keeps it redundant instead: rows of full adders, no carry chain, so a stage's
depth does not grow with the width; only the last stage adds its two rows.

Every function takes the ``Module`` to put its intermediate signals in (the operands, the
Booth digit selects and the sum are signals: the netlist reads well). Each row is one
whole-row expression (a replicated bit ANDed with an operand), not one expression per bit:
Amaranth's simulator compiles per-bit trees slowly.

:func:`counting` records the arithmetic built while it is active, for the multiplier figures of
``python -m sim.bench.multipliers``.
"""

from contextlib import contextmanager

from amaranth.hdl import Cat, Const, Signal, Value

__all__ = ["full_add", "product_rows", "booth_rows", "square_rows", "row_sum", "product",
           "dot_product", "sum_of_squares", "unsigned_square", "counting", "product_terms",
           "dot_terms", "squares_terms", "unsigned_square_terms", "split_groups", "carry_save",
           "carry_save_sum"]

_records = None


@contextmanager
def counting():
    """Within the block, every :func:`product`, :func:`dot_product`, :func:`sum_of_squares` and
    :func:`unsigned_square` built appends ``(kind, terms, bit_products, pp_bits)`` to the list it
    yields: ``kind`` one of ``"product"``, ``"dot"``, ``"squares"``, ``"square"``; ``terms`` the
    products or squares summed; ``bit_products`` the sum of n x m over them (n, m the operand
    widths: the size of the multipliers the expression stands for); ``pp_bits`` the
    partial-product bits actually built (rows and negate bits)."""
    global _records
    outer, _records = _records, []
    try:
        yield _records
    finally:
        _records = outer


def _record(kind, terms, bit_products, rows):
    if _records is not None:
        _records.append((kind, terms, bit_products, sum(len(row) for row, _ in rows)))


def _bits(value):
    value = value.as_value() if hasattr(value, "as_value") else value
    return [value[i] for i in range(len(value))]


def _signal(m, value, name):
    """``value`` in a comb signal of its width (bits of it are then cheap to reference)."""
    value = value.as_value() if hasattr(value, "as_value") else value
    sig = Signal(len(value), name=name)
    m.d.comb += sig.eq(value)
    return sig


def product_rows(m, a, b):
    """Baugh-Wooley rows of ``a * b`` for signed ``a`` (n bits) and ``b`` (m bits).

    Returns ``(rows, constant)``: ``a * b == sum(row << shift for row, shift in rows) +
    constant``, every row an unsigned value of AND and NAND bits (n rows of m bits).
    """
    x, y = _bits(_signal(m, a, "bw_a")), _signal(m, b, "bw_b")
    n, w = len(x), len(y)
    if n == 1 or w == 1:
        raise ValueError("operands must have at least 2 bits")
    top = Const(1 << (w - 1), w)
    rows = []
    for i in range(n - 1):
        # a_i * b_j for j < w-1, and the negative a_i * b_{w-1} as its complement.
        rows.append(((x[i].replicate(w) & y) ^ top, i))
    # The top row: the negative a_{n-1} * b_j as complements, and the positive a_{n-1} b_{w-1}.
    rows.append((~(x[n - 1].replicate(w) & y) ^ top, n - 1))
    # Each complement ~t stands for -t + 1: subtract the ones added.
    constant = -((1 << (n - 1)) - 1) * (1 << (w - 1)) - ((1 << (w - 1)) - 1) * (1 << (n - 1))
    return rows, constant


def booth_rows(m, x, y, *, x_signed=True, y_signed=True):
    """Radix-4 Booth rows of ``x * y``: ``x`` is recoded into ceil((n + 1) / 2) digits in
    -2..2 (``n`` its width, plus a sign bit when unsigned), each selecting 0, +-y or +-2y.

    Returns ``(rows, constant)`` as :func:`product_rows`: a row of ``m + 1`` bits and a negate
    bit per digit (``m`` the width of ``y``, plus a sign bit when unsigned), about half the
    partial products of :func:`product_rows` for wide operands. The digit selects (``one``,
    ``two``, ``neg``) depend on ``x`` only, so products of one ``x`` with several ``y`` can
    share them (Yosys merges the identical logic).
    """
    xb, yb = _bits(_signal(m, x, "booth_x")), _bits(_signal(m, y, "booth_y"))
    if not x_signed:
        xb = xb + [Const(0, 1)]
    if not y_signed:
        yb = yb + [Const(0, 1)]
    if len(xb) % 2:
        xb = xb + [xb[-1]]                  # sign-extend x to an even width
    w = len(yb)                             # y as a w-bit signed value
    yb = yb + [yb[-1]]                      # ... and its w+1-bit sign extension, for 2y
    xb = [Const(0, 1)] + xb                 # x_{-1} = 0
    # y and 2y as w+1-bit rows, which each digit's selects pick from.
    y1, y2 = Signal(w + 1, name="booth_y1"), Signal(w + 1, name="booth_y2")
    m.d.comb += [y1.eq(Cat(*yb)), y2.eq(Cat(Const(0, 1), *yb[:w]))]
    rows, constant = [], 0
    for k in range(len(xb) // 2):
        lo, mid, hi = xb[2 * k], xb[2 * k + 1], xb[2 * k + 2]
        one, two, neg = (Signal(name=f"booth_{name}{k}") for name in ("one", "two", "neg"))
        m.d.comb += [
            one.eq(lo ^ mid),
            two.eq((hi & ~mid & ~lo) | (~hi & mid & lo)),
            neg.eq(hi & ~(mid & lo)),
        ]
        # d * y = r + neg, r the (w+1)-bit two's complement of (one*y | two*2y) ^ neg; as an
        # unsigned row r + 2**w (its sign bit flipped), the 2**w taken back in the constant.
        row = ((one.replicate(w + 1) & y1) | (two.replicate(w + 1) & y2)) ^ neg.replicate(w + 1)
        rows.append((row ^ Const(1 << w, w + 1), 2 * k))
        rows.append((neg, 2 * k))
        constant -= 1 << (w + 2 * k)
    return rows, constant


def square_rows(m, a):
    """Rows of ``a * a`` for signed ``a`` (n bits), with each pair a_i a_j (i != j) folded.

    Returns ``(rows, constant)`` as :func:`product_rows`: n - 1 + (n - 1)(n - 2)/2 + n bits.
    """
    sq = _signal(m, a, "square_a")
    x, n = _bits(sq), len(sq)
    rows = []
    # a = -s 2**(n-1) + u: a**2 = s 2**(2n-2) - s u 2**n + u**2, with
    # u**2 = sum a_i 2**(2i) + sum_{i<j} a_i a_j 2**(i+j+1).
    for i in range(n - 1):
        rows.append((x[i], 2 * i))
        if i + 1 < n - 1:
            rows.append((x[i].replicate(n - 2 - i) & sq[i + 1:n - 1], 2 * i + 2))
    rows.append((x[n - 1], 2 * n - 2))
    if n > 1:
        rows.append((~(x[n - 1].replicate(n - 1) & sq[:n - 1]), n))
    constant = -((1 << (n - 1)) - 1) * (1 << n) if n > 1 else 0
    return rows, constant


def row_sum(m, rows, constant, width, signed):
    """``sum(rows) + constant`` as a ``width``-bit signal (signed or unsigned); the true result
    must fit ``width`` bits (the sum is taken modulo 2**width)."""
    terms = [row << shift for row, shift in rows] + [Const(constant % (1 << width), width)]
    total = Signal(width, name="row_sum")
    m.d.comb += total.eq(_tree(terms))
    return total.as_signed() if signed else total


def _tree(terms):
    """A balanced sum of ``terms`` (the simulator recurses on deep trees)."""
    while len(terms) > 1:
        pairs = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


def split_groups(terms, stages=2):
    """How many groups a pipelined sum of ``terms`` summands should be cut into (each group's
    sum registered, the groups added in the next stages) so that the adder levels fall evenly
    on the first stage and the ``stages - 1`` stages summing the groups: a
    power of two near ``terms ** ((stages - 1) / stages)`` (the square root for two stages)."""
    levels = max(1, (terms - 1).bit_length())
    return 1 << (levels - -(-levels // stages))


def _span(value, shift):
    """The bits ``value << shift`` can be non-zero in, as ``(low, high)``."""
    return shift, shift + len(value)


def _packed(items, width):
    """``items`` (``(value, shift)``) as fewer rows of ``width`` bits with the same sum: rows
    whose spans do not overlap are ORed into one (the single-bit rows of a Booth product, one
    per digit, make one row), the ones of near weights together."""
    rows = []                                   # [(value, occupied (low, high) spans)]
    for value, shift in sorted(items, key=lambda item: item[1]):
        low, high = _span(value, shift)
        high = min(high, width)
        if low >= width:
            continue
        for n, (row, spans) in enumerate(rows):
            if all(high <= a or low >= b for a, b in spans):
                rows[n] = (row | (value << shift)[:width], [*spans, (low, high)])
                break
        else:
            rows.append(((value << shift)[:width], [(low, high)]))
    return [row for row, _ in rows]


def _csa_levels(terms, outputs):
    """Levels of 3:2 compressors that :func:`carry_save` takes from ``terms`` to ``outputs``."""
    levels = 0
    while terms > outputs:
        terms -= min(terms // 3, terms - outputs)
        levels += 1
    return levels


def _balanced_outputs(terms):
    """The outputs of a first stage of compressors (after the partial products' selects, one
    level's worth) such that its levels and those of a second stage down to two outputs are as
    even as can be; the fewest such outputs (each is a register)."""
    return min(range(2, max(terms, 2) + 1),
               key=lambda o: (max(_csa_levels(terms, o) + 1, _csa_levels(o, 2)), o))


def full_add(a, b, c):
    """A row of full adders (a 3:2 compressor): ``(a ^ b ^ c, majority(a, b, c))``, so that ``a
    + b + c == sum + 2 * carry``; the caller places the carry one bit up. Expressions, no
    signals."""
    return a ^ b ^ c, (a & b) | (a & c) | (b & c)


def carry_save(m, rows, constant, width, *, minus=(), outputs=2, name="csa"):
    """``sum(rows) + constant - sum(minus)`` modulo 2**width as ``outputs`` comb signals of
    ``width`` bits (a redundant, carry-save form: their sum modulo 2**width is that value),
    by levels of 3:2 compressors (full adders, ``a ^ b ^ c`` and the majority one place up),
    with no carry propagation at all: its depth is that of about log1.5(rows / outputs) full
    adders, whatever the width. For a pipeline that registers the outputs and reduces them
    further, or adds them, in the next stages. ``rows`` and ``minus`` are ``(row, shift)``
    lists as :func:`row_sum` takes; sparse rows are packed first (:func:`_packed`).
    ``outputs="balanced"``: as many as put about half of the levels in each of two stages (the
    first also selecting the partial products; :func:`_balanced_outputs`)."""
    if outputs != "balanced" and outputs < 2:
        raise ValueError("a carry-save form has at least two outputs")
    rows, minus = list(rows), list(minus)
    if any(Value.cast(row).shape().signed for row, _ in (*rows, *minus)):
        # The rows are placed and negated as unsigned values (no sign extension).
        raise ValueError("carry_save takes unsigned rows only")
    mask = (1 << width) - 1
    items = rows                                # our own copy: the negated rows join it
    for row, shift in minus:
        # -(r << s) = ~r << s, plus the ones ~ would have set outside r's span, plus 1.
        low, high = _span(row, shift)
        items.append((~row, shift))
        constant += mask - (((1 << (high - low)) - 1) << low) + 1
    items.append((Const(constant & mask, width), 0))
    terms = _packed(items, width)
    if outputs == "balanced":
        outputs = _balanced_outputs(len(terms))
    level = 0
    while len(terms) > outputs:
        # Compress as many triples as this level can, but not below ``outputs`` terms.
        triples = min(len(terms) // 3, len(terms) - outputs)
        out = []
        for t in range(triples):
            a, b, c = terms[3 * t:3 * t + 3]
            s = Signal(width, name=f"{name}_l{level}_s{t}")
            k = Signal(width, name=f"{name}_l{level}_c{t}")
            total, carry = full_add(a, b, c)
            m.d.comb += [s.eq(total), k.eq(carry << 1)]
            out += [s, k]
        terms = out + terms[3 * triples:]
        level += 1
    sums = []
    for n, term in enumerate(terms):
        sig = Signal(width, name=f"{name}{n}")
        m.d.comb += sig.eq(term)
        sums.append(sig)
    while len(sums) < outputs:
        sums.append(Const(0, width))
    return sums


def carry_save_sum(m, rows, constant, width, *, signed=False, name="csa"):
    """:func:`row_sum`'s result, with the rows reduced by full adders (:func:`carry_save`) to
    two before the one carry-propagate adder: Yosys's own reduction of a sum of many sparse rows
    is deeper."""
    pair = carry_save(m, rows, constant, width, name=name)
    return row_sum(m, [(r, 0) for r in pair], 0, width, signed=signed)


def product_terms(m, x, y, *, x_signed=False, y_signed=False):
    """The rows and constant of the exact product ``x * y`` (:func:`booth_rows`, ``x``
    recoded), counted as a product (:func:`counting`): for :func:`row_sum` or
    :func:`carry_save`."""
    rows, constant = booth_rows(m, x, y, x_signed=x_signed, y_signed=y_signed)
    _record("product", 1, len(x) * len(y), rows)
    return rows, constant


def product(m, x, y, width, *, x_signed=False, y_signed=False):
    """The exact product ``x * y`` (:func:`booth_rows`, ``x`` recoded) as ``width`` bits,
    signed when either operand is; ``width`` must hold every possible result."""
    rows, constant = product_terms(m, x, y, x_signed=x_signed, y_signed=y_signed)
    return row_sum(m, rows, constant, width, signed=x_signed or y_signed)


def dot_terms(m, xs, ys):
    """The rows and constant of the exact signed dot product of two sequences of signed values:
    the Booth rows of every product (:func:`booth_rows`, the ``xs`` recoded)."""
    rows, constant = [], 0
    for a, b in zip(xs, ys, strict=True):
        r, c = booth_rows(m, a, b)
        rows += r
        constant += c
    _record("dot", len(xs), sum(len(a) * len(b) for a, b in zip(xs, ys, strict=True)), rows)
    return rows, constant


def dot_product(m, xs, ys, width):
    """The exact signed dot product of two sequences of signed values, as ``width`` signed bits
    (``width`` must hold every possible result): :func:`dot_terms` in one sum."""
    rows, constant = dot_terms(m, xs, ys)
    return row_sum(m, rows, constant, width, signed=True)


def squares_terms(m, xs):
    """The rows and constant of the exact sum of squares of signed values (:func:`square_rows`
    of each), counted as one sum of squares (:func:`counting`): for :func:`row_sum` or
    :func:`carry_save`."""
    rows, constant = [], 0
    for a in xs:
        r, c = square_rows(m, a)
        rows += r
        constant += c
    _record("squares", len(xs), sum(len(a) ** 2 for a in xs), rows)
    return rows, constant


def sum_of_squares(m, xs, width, *, plus=()):
    """The exact sum of squares of signed values, as ``width`` unsigned bits; with ``plus``
    (``(row, shift)`` unsigned rows), their sum too. The rows are reduced by full adders
    (:func:`carry_save`) to two, then added: one carry chain."""
    rows, constant = squares_terms(m, xs)
    return carry_save_sum(m, [*rows, *plus], constant, width, name="squares_csa")


def unsigned_square(m, a, width):
    """``a * a`` for unsigned ``a``, with the pairs a_i a_j folded, as ``width`` unsigned bits."""
    return row_sum(m, unsigned_square_terms(m, a), 0, width, signed=False)


def unsigned_square_terms(m, a):
    """The rows of ``a * a`` for unsigned ``a`` (the pairs a_i a_j folded; no constant)."""
    sq = _signal(m, a, "square_a")
    x = _bits(sq)
    rows = []
    for i in range(len(x)):
        rows.append((x[i], 2 * i))
        if i + 1 < len(x):
            rows.append((x[i].replicate(len(x) - 1 - i) & sq[i + 1:], 2 * i + 2))
    _record("square", 1, len(x) ** 2, rows)
    return rows
