"""The Focus GEMM: a weight-stationary systolic array fed SIC's unique vectors, and a scatter stage
that rebuilds every token's output from its group's partial sums (paper, section VI).

An output tile is m x ``dim`` (m <= ``tile`` tokens). For each ``dim``-wide chunk j of the reduction
dimension K the array holds the ``dim`` x ``dim`` weights W_j, only the p_j unique vectors U_j of
that chunk stream through it, giving p_j rows of partial sums P_j, and the scatter stage adds
``P_j[map_j[s]]`` into row s of the int32 accumulation buffer for every row s of the tile. After the
tile's last chunk the finished rows stream out. The dense baseline on the same hardware is the same
job with every row unique and map_j the identity.
"""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from .scatter_stage import (
    ScatterStage,
    map_beat_layout,
    psum_row_layout,
    result_beat_layout,
    scatter_latency,
)
from .systolic_array import SystolicArray, array_latency

__all__ = ["FocusGemm", "weight_beat_layout", "unique_beat_layout", "map_beat_layout",
           "result_beat_layout", "chunk_overhead", "scatter_latency"]


def weight_beat_layout(p):
    """One row of a chunk's ``dim`` x ``dim`` weights (row 0 first), as the array takes it."""
    return data.StructLayout({"w": data.ArrayLayout(signed(p.elem_bits), p.dim)})


def unique_beat_layout(p):
    """One unique vector of a chunk (``dim`` elements); ``last`` marks the chunk's final one."""
    return data.StructLayout({"x": data.ArrayLayout(signed(p.elem_bits), p.dim), "last": 1})


def chunk_overhead(p):
    """Cycles the array spends on a chunk besides its p unique vectors: ``dim`` weight rows, and
    the drain of the last vector (:func:`rtl.tile.systolic_array.array_latency`, with the product
    register) before the next chunk's weights can enter: ``3 * dim``."""
    return p.dim + array_latency(p.dim, p.dim, product_register=True)


class FocusGemm(FocusBlock):
    """A ``dim`` x ``dim`` int8 weight-stationary array (:class:`SystolicArray` with its product
    register, for the clock: latency ``2 * dim``), a double-buffered partial-sum buffer and the
    scatter stage (:class:`ScatterStage`).

    Per chunk the host sends ``dim`` weight rows on ``w_stream``, then the chunk's unique vectors
    on ``u_stream`` (``last`` on the final one), and the chunk's map on ``map_stream``
    (``ceil(m / scatter_rows)`` beats, ``final`` on the tile's last chunk); the three streams are
    independent and may run ahead of each other. Results leave on ``o_stream`` after each tile's
    final chunk, ``scatter_rows`` rows per beat, in row order.

    Pipeline. The array computes chunk j into one bank of the partial-sum buffer (two banks of
    ``tile`` rows of ``dim`` exact partial sums, ``scatter_rows`` read ports) while the scatter
    stage reads chunk j-1 from the other. A chunk's weights enter only once the array has drained
    the previous chunk (the array's own rule), and its vectors only after its ``dim`` weight rows
    and once its bank has been read by the scatter of chunk j-2. So a chunk occupies the array for
    ``p_j + chunk_overhead`` cycles (``p_j + 3*dim``) and the scatter stage for
    ``ceil(m / scatter_rows)`` cycles, and the two overlap: without stalls a job takes exactly
    :func:`golden.gemm_cycles.gemm_cycles` cycles, from its first weight row to its last result.

    Latency: a tile's last result leaves :func:`scatter_latency` (4) cycles after its final map
    beat is taken. Throughput: one unique vector per cycle into the array, ``scatter_rows`` output
    rows per cycle through the scatter stage. Back-pressure: a result waiting on ``o_stream`` holds
    the scatter stage; the array keeps going until both banks are full, then ``u_stream`` waits.

    Arithmetic: exact. Partial sums have the array's width (:func:`min_acc_bits`), the buffer is
    int32 (``gemm_out_bits``) and wraps modulo 2**32: a result that fits in int32 is exact even if
    a running sum overflowed.

    Parameters
    ----------
    params : FocusParams
        ``dim`` (array rows and columns, V), ``elem_bits`` (weights and vectors), ``tile``
        (rows of an output tile, m <= tile; p_j <= tile), ``scatter_rows``.

    Members
    -------
    w_stream : In(stream.Signature(weight_beat_layout(p)))
    u_stream : In(stream.Signature(unique_beat_layout(p)))
    map_stream : In(stream.Signature(map_beat_layout(p)))
    o_stream : Out(stream.Signature(result_beat_layout(p)))
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "w_stream": In(stream.Signature(weight_beat_layout(p))),
            "u_stream": In(stream.Signature(unique_beat_layout(p))),
            "map_stream": In(stream.Signature(map_beat_layout(p))),
            "o_stream": Out(stream.Signature(result_beat_layout(p))),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        tile = p.tile
        m.submodules.array = array = SystolicArray(p.dim, p.dim, p.elem_bits,
                                                   product_register=True)
        m.submodules.scatter = scatter = ScatterStage(p)
        # Two banks of `tile` rows: bank b holds row i at address b*tile + i.
        m.submodules.psums = psums = memory.Memory(shape=psum_row_layout(p), depth=2 * tile,
                                                   init=[])
        p_w = psums.write_port()
        p_r = [psums.read_port() for _ in range(p.scatter_rows)]
        full = Signal(2, name="full")           # bank b holds a complete chunk not yet scattered
        full_set, full_clear = Signal(2, name="full_set"), Signal(2, name="full_clear")
        m.d.sync += full.eq((full | full_set) & ~full_clear)

        # ---- into the array: dim weight rows, then the chunk's unique vectors --------------------
        loading = Signal(init=1, name="loading")    # taking weights (else unique vectors)
        w_count = Signal(range(p.dim), name="w_count")
        u_count = Signal(range(tile), name="u_count")
        in_bank = Signal(name="in_bank")
        bank_free = ~full.bit_select(in_bank, 1)
        # The array takes weights only when drained and holds vectors off while a weight beat is
        # offered, so gating both streams by `loading` keeps every vector with its chunk's W.
        m.d.comb += [
            array.w_stream.payload.eq(self.w_stream.payload),
            array.w_stream.valid.eq(self.w_stream.valid & loading),
            self.w_stream.ready.eq(array.w_stream.ready & loading),
            array.i_stream.payload.x.eq(self.u_stream.payload.x),
            array.i_stream.valid.eq(self.u_stream.valid & ~loading & bank_free),
            self.u_stream.ready.eq(array.i_stream.ready & ~loading & bank_free),
        ]
        with m.If(self.w_stream.valid & self.w_stream.ready):
            with m.If(w_count == p.dim - 1):
                m.d.sync += [w_count.eq(0), loading.eq(0)]
            with m.Else():
                m.d.sync += w_count.eq(w_count + 1)
        closing = Signal(name="closing")            # the chunk's last vector is in the array
        p_len = Signal(range(tile + 1), name="p_len")
        with m.If(self.u_stream.valid & self.u_stream.ready):
            with m.If(self.u_stream.payload.last):
                m.d.sync += [u_count.eq(0), loading.eq(1), in_bank.eq(~in_bank),
                             closing.eq(1), p_len.eq(u_count + 1)]
            with m.Else():
                m.d.sync += u_count.eq(u_count + 1)

        # ---- out of the array: row after row into the chunk's bank -------------------------------
        wr_bank = Signal(name="wr_bank")
        wr_count = Signal(range(tile), name="wr_count")
        m.d.comb += [
            array.o_stream.ready.eq(1),
            p_w.addr.eq(Mux(wr_bank, tile, 0) + wr_count),
            p_w.data.eq(array.o_stream.payload.y),
            p_w.en.eq(array.o_stream.valid),
        ]
        with m.If(array.o_stream.valid):
            with m.If(closing & (wr_count + 1 == p_len)):
                m.d.comb += full_set.bit_select(wr_bank, 1).eq(1)
                m.d.sync += [closing.eq(0), wr_bank.eq(~wr_bank), wr_count.eq(0)]
            with m.Else():
                m.d.sync += wr_count.eq(wr_count + 1)

        # ---- the scatter stage reads the oldest full bank ----------------------------------------
        rd_bank = Signal(name="rd_bank")
        m.d.comb += scatter.bank_ready.eq(full.bit_select(rd_bank, 1))
        for lane, port in enumerate(p_r):
            m.d.comb += [
                port.addr.eq(Mux(rd_bank, tile, 0) + scatter.p_addr[lane]),
                port.en.eq(scatter.p_en),
                scatter.p_data[lane].eq(port.data),
            ]
        with m.If(scatter.chunk_done):
            m.d.comb += full_clear.bit_select(rd_bank, 1).eq(1)
            m.d.sync += rd_bank.eq(~rd_bank)
        wiring.connect(m, scatter=scatter.map_stream, port=wiring.flipped(self.map_stream))
        wiring.connect(m, scatter=scatter.o_stream, port=wiring.flipped(self.o_stream))
        return m

