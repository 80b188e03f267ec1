"""A plain int8 weight-stationary systolic array: the area reference of ``focus-rtl synth``.

The paper puts Focus's cost as a share of the 32x32 systolic array it sits beside (2.7 %: 1.9 %
SEC and 0.8 % SIC). :class:`SystolicArray` is that array, built with nothing Focus-specific, so
that ``focus-rtl synth --relative-to systolic_array`` can report the Focus blocks' area as a
percentage of it in the same flow. It is not part of the Focus unit (registry
:data:`rtl.flow.blocks.REFERENCE_BLOCKS`, not :data:`rtl.flow.blocks.BLOCKS`).
:class:`rtl.tile.focus_gemm.FocusGemm` builds it with ``product_register=True``, for its clock;
the reference is the plain array.
"""

from amaranth.hdl import Cat, Module, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import ceil_log2

__all__ = ["SystolicArray", "array_latency", "min_acc_bits"]


def min_acc_bits(rows, data_bits):
    """The narrowest signed accumulator that cannot overflow: a product of two signed
    ``data_bits`` numbers needs ``2 * data_bits`` bits, a sum of ``rows`` of them
    ``ceil_log2(rows)`` more (21 bits for 32 rows of int8)."""
    return 2 * data_bits + ceil_log2(rows)


def array_latency(rows, cols, product_register=False):
    """Cycles from an activation vector's transfer on ``i_stream`` to its result being valid on
    ``o_stream``, without back-pressure: ``rows + cols - 1``, one more with ``product_register``."""
    return rows + cols - 1 + int(product_register)


def _vector(shape, length, name):
    # A struct around the array: a top-level ArrayLayout payload gives element wires named
    # "port[0]", which collide with bit names in Yosys's abc9 (synth_ecp5 asserts).
    return data.StructLayout({name: data.ArrayLayout(shape, length)})


class SystolicArray(wiring.Component):
    """A ``rows`` x ``cols`` weight-stationary systolic array computing ``y = x @ W``.

    Processing element (r, c) holds the weight ``W[r, c]``, multiplies the activation arriving
    from its left neighbour by it, adds the partial sum arriving from above, and passes the
    activation right and the partial sum down, each through one register. Row ``r`` of every
    activation vector is delayed ``r`` cycles on entry (input skew) and column ``c`` of the result
    ``cols - 1 - c`` cycles on exit (output deskew), so that whole vectors go in and come out.
    Each PE therefore has three registers: weight (``data_bits``), activation (``data_bits``; none
    in the last column) and partial sum (``acc_bits``); the skew and deskew triangles add
    ``rows * (rows - 1) / 2 * data_bits`` and ``cols * (cols - 1) / 2 * acc_bits`` flip-flops, and
    one valid bit per cycle of latency tracks the vectors in flight. Every register has an enable
    (the stall); there is no reset but on the valid bits.

    With ``product_register`` each PE also registers its product (``2 * data_bits`` bits) and adds
    it to the partial sum from above one cycle later, so the multiplier and the adder are in
    different cycles (on an FPGA: the DSP's output is registered before the carry chain). The
    stage is in every PE, row 0 included, so the skew between rows is unchanged and only the
    latency grows, by one cycle.

    Latency ``rows + cols - 1`` cycles, ``rows + cols`` with ``product_register``
    (:func:`array_latency`); throughput one vector per cycle.
    Back-pressure: the whole array moves as one pipeline; while a result waits on ``o_stream``
    nothing moves and ``i_stream.ready`` is low. Results leave in input order, none lost or
    duplicated.

    Weights: ``w_stream`` loads one row of ``W`` per beat, row 0 first; the rows shift up the
    array, so after ``rows`` beats PE (r, c) holds ``W[r, c]`` (extra beats push the oldest rows
    out; the array does not count them). A weight beat is accepted only when no activation is in
    flight, and a pending weight beat holds ``i_stream`` off until the array has drained, so a
    vector is always multiplied by the weights present when it was accepted.

    Arithmetic: two's complement, exact. Products are ``2 * data_bits`` bits and the partial sums
    ``acc_bits`` bits; the default is the narrowest width that cannot overflow,
    :func:`min_acc_bits` (21 bits for 32 rows of int8). ``acc_bits=32`` gives the usual int32
    accumulators, a larger array. A narrower ``acc_bits`` wraps modulo ``2**acc_bits``.

    Parameters
    ----------
    rows : int
        Length of an activation vector: rows of PEs. At least 1.
    cols : int
        Length of a result vector: columns of PEs. At least 1.
    data_bits : int
        Width of the signed activations and weights (8: int8). At least 2.
    acc_bits : int or None
        Width of the signed partial sums and results; ``None`` for :func:`min_acc_bits`.
    product_register : bool
        Register each PE's product before the addition (one more cycle of latency). The area
        reference is the array without it (the default).

    Members
    -------
    w_stream : In(stream.Signature(StructLayout({"w": ArrayLayout(signed(data_bits), cols)})))
        One row of weights per beat.
    i_stream : In(stream.Signature(StructLayout({"x": ArrayLayout(signed(data_bits), rows)})))
        One activation vector ``x`` per beat.
    o_stream : Out(stream.Signature(StructLayout({"y": ArrayLayout(signed(acc_bits), cols)})))
        ``y = x @ W`` for each ``x``, in order.
    busy : Out(1)
        An activation is in flight.
    """

    def __init__(self, rows=32, cols=32, data_bits=8, acc_bits=None, *, product_register=False):
        for name, value, low in (("rows", rows, 1), ("cols", cols, 1),
                                 ("data_bits", data_bits, 2)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{type(self).__name__} {name} = {value!r}: it must be an "
                                 f"integer >= {low}")
        if acc_bits is None:
            acc_bits = min_acc_bits(rows, data_bits)
        if isinstance(acc_bits, bool) or not isinstance(acc_bits, int) or acc_bits < 2:
            raise ValueError(f"SystolicArray acc_bits = {acc_bits!r}: it must be an integer >= 2")
        if not isinstance(product_register, bool):
            raise ValueError(f"SystolicArray product_register = {product_register!r}: it must be "
                             f"True or False")
        self.rows, self.cols = rows, cols
        self.product_register = product_register
        self.data_bits, self.acc_bits = data_bits, acc_bits
        data_shape, acc_shape = self._shapes()
        super().__init__({
            "w_stream": In(stream.Signature(_vector(data_shape, cols, "w"))),
            "i_stream": In(stream.Signature(_vector(data_shape, rows, "x"))),
            "o_stream": Out(stream.Signature(_vector(acc_shape, cols, "y"))),
            "busy": Out(1),
        })

    def _shapes(self):
        """The shapes of an activation or weight, and of a partial sum."""
        return signed(self.data_bits), signed(self.acc_bits)

    def _product(self, m, r, c, act, weight):
        """PE (r, c)'s product ``act * weight``."""
        return act * weight

    def _add(self, m, r, c, above, product):
        """PE (r, c)'s partial sum ``above + product`` (rows 1 and below)."""
        return above + product

    @property
    def latency(self):
        """:func:`array_latency` of this array."""
        return array_latency(self.rows, self.cols, self.product_register)

    def elaborate(self, platform):
        m = Module()
        rows, cols = self.rows, self.cols

        # One valid bit per pipeline step; the last one is o_stream.valid.
        valid = Signal(self.latency)
        advance = ~self.o_stream.valid | self.o_stream.ready
        m.d.comb += [
            self.o_stream.valid.eq(valid[-1]),
            self.busy.eq(valid.any()),
            self.w_stream.ready.eq(~valid.any()),
            self.i_stream.ready.eq(advance & ~self.w_stream.valid),
        ]
        take = self.i_stream.valid & self.i_stream.ready
        with m.If(advance):
            m.d.sync += valid.eq(Cat(take, valid[:-1]) if self.latency > 1 else take)

        data_shape, acc_shape = self._shapes()
        weight = [[Signal(data_shape, name=f"w_{r}_{c}") for c in range(cols)]
                  for r in range(rows)]
        with m.If(self.w_stream.valid & self.w_stream.ready):
            for c in range(cols):
                m.d.sync += weight[rows - 1][c].eq(self.w_stream.payload.w[c])
                for r in range(rows - 1):
                    m.d.sync += weight[r][c].eq(weight[r + 1][c])

        # Input skew: row r enters r cycles late. Stage 0 is the input itself.
        left = []
        for r in range(rows):
            value = self.i_stream.payload.x[r]
            for k in range(r):
                stage = Signal(data_shape, name=f"skew_{r}_{k}")
                with m.If(advance):
                    m.d.sync += stage.eq(value)
                value = stage
            left.append(value)

        above = [None] * cols
        for r in range(rows):
            act = left[r]
            for c in range(cols):
                product = self._product(m, r, c, act, weight[r][c])
                if self.product_register:
                    product_reg = Signal.like(product, name=f"m_{r}_{c}")
                    with m.If(advance):
                        m.d.sync += product_reg.eq(product)
                    product = product_reg
                psum = Signal(acc_shape, name=f"p_{r}_{c}")
                with m.If(advance):
                    m.d.sync += psum.eq(product if above[c] is None
                                        else self._add(m, r, c, above[c], product))
                above[c] = psum
                if c < cols - 1:
                    act_reg = Signal(data_shape, name=f"a_{r}_{c}")
                    with m.If(advance):
                        m.d.sync += act_reg.eq(act)
                    act = act_reg

        # Output deskew: column c waits cols - 1 - c more cycles.
        for c in range(cols):
            value = above[c]
            for k in range(cols - 1 - c):
                stage = Signal(acc_shape, name=f"deskew_{c}_{k}")
                with m.If(advance):
                    m.d.sync += stage.eq(value)
                value = stage
            m.d.comb += self.o_stream.payload.y[c].eq(value)
        return m
