"""The Focus GEMM fed the compressed similarity map (spec 4.5, 6): :class:`FocusGemm` with the map
decoder in front of its scatter stage.

A wrapper, not a parameter of :class:`FocusGemm`: the tile is reused unchanged (its ``map_stream``
is simply driven from inside), the decoder is reused unchanged, and the map path (decoder ->
:class:`MapBeatPacker` -> ``map_stream``) is joined with ``wiring.connect``, so the coded variant
adds ports and a small job control without touching the tile's pipeline or its tests. It lives in
``rtl/top`` because it joins a SIC block to the tile: ``rtl.sic`` and ``rtl.tile`` are one layer
and do not import each other (tests/test_layers.py).
"""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock, job_status_members
from ..lib.ready_slice import ReadySlice
from ..sic.map_decoder import MapDecodeError, MapDecoder, map_position_layout
from ..sic.match_layouts import map_word_layout
from ..tile.focus_gemm import (
    FocusGemm,
    result_beat_layout,
    unique_beat_layout,
    weight_beat_layout,
)
from .map_beat_packer import MapBeatPacker

__all__ = ["FocusGemmCoded", "coded_gemm_config_layout"]


def coded_gemm_config_layout(p):
    """A job: FS and HS of the map codes (FS + HS + 1 < ``window``), ``columns`` (C, chunks per
    output block) and ``passes`` (output blocks: row tiles x column tiles); the job has
    ``columns * passes`` map codes."""
    return data.StructLayout({"frame_stride": unsigned(p.position_bits),
                              "row_stride": unsigned(p.position_bits),
                              "columns": unsigned(p.position_bits),
                              "passes": unsigned(p.position_bits)})


class FocusGemmCoded(FocusBlock):
    """:class:`FocusGemm` whose chunk maps arrive as map codes (spec 4.5) plus the rows' positions.

    A job: one ``cfg_stream`` beat, then per chunk, in the tile's order (output block by output
    block, chunk c = 0 .. ``columns - 1`` in each), the ``dim`` weight rows on ``w_stream`` and
    the unique vectors on ``u_stream`` as for :class:`FocusGemm`, and the map code of the
    block's rows in column c (``code_stream``: words up to ``last``, ``nbits`` on it; the code of
    those rows alone, unique indices from 0, as the block matcher writes it for a job of one
    tile) with the rows' positions (``pos_stream``, up to ``last``; m <= ``tile``). The chunk's
    p_c unique vectors must be the code's p_c new groups, in order. Results leave on
    ``o_stream`` as for :class:`FocusGemm`; the job control marks chunk ``columns - 1`` of each
    block ``final``. ``columns`` or ``passes`` 0 is an empty job.

    Structure: per chunk the job control gives the :class:`MapDecoder` a configuration beat
    (FS, HS); the decoder's entries (the chunk's local map, one per row) go through a
    :class:`~rtl.lib.ready_slice.ReadySlice` (no latency; it cuts the scatter stage's ready
    from the decoder's stages) to a :class:`MapBeatPacker`, whose beats are the tile's
    ``map_stream``.

    Latency: a map entry reaches the scatter stage 4 cycles after its symbol is parsed (the
    decoder's address, read and check stages, the packer's beat); a block's last result leaves
    :func:`scatter_latency` (4) cycles after its final beat is taken. Throughput: as
    :class:`FocusGemm` on the array side; the map side carries one row per cycle (the
    decoder's rate), not ``scatter_rows``, plus per chunk the decoder's configuration beat,
    header and end of job (m + 8 cycles for m rows, measured without stalls), so a chunk whose
    array time ``p_c + 3 * dim`` is below that is bound by the decoder. Back-pressure: a
    result waiting on ``o_stream`` holds the scatter stage, then the packer and the decoder
    (``code_stream`` and ``pos_stream`` wait); the array runs on until both partial-sum banks
    are full.

    Errors: a malformed code raises ``error`` with ``cause`` (:class:`MapDecodeError`, the
    job's first). The decoder drops the rest of that code's words and positions up to their
    ``last``; the packer completes the chunk's map with index 0 for the rows not decoded (as
    many as positions were sent), so the tile finishes the chunk and the job, and every result
    beat of the job still leaves (those of the failed chunk's block are invalid, as ``error``
    says). The tile is then idle; ``error`` and ``cause`` hold until the next ``cfg_stream``
    beat. ``busy`` is high while a job's codes are not all decoded.

    Members
    -------
    cfg_stream : In(stream.Signature(coded_gemm_config_layout(params)))
    w_stream : In(stream.Signature(weight_beat_layout(params)))
    u_stream : In(stream.Signature(unique_beat_layout(params)))
    code_stream : In(stream.Signature(map_word_layout(params)))
    pos_stream : In(stream.Signature(map_position_layout(params)))
    o_stream : Out(stream.Signature(result_beat_layout(params)))
    busy, error : Out(1)
    cause : Out(MapDecodeError)
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(coded_gemm_config_layout(p))),
            "w_stream": In(stream.Signature(weight_beat_layout(p))),
            "u_stream": In(stream.Signature(unique_beat_layout(p))),
            "code_stream": In(stream.Signature(map_word_layout(p))),
            "pos_stream": In(stream.Signature(map_position_layout(p))),
            "o_stream": Out(stream.Signature(result_beat_layout(p))),
            **job_status_members(MapDecodeError),
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.gemm = gemm = FocusGemm(p)
        m.submodules.decoder = dec = MapDecoder(p)
        m.submodules.packer = packer = MapBeatPacker(p)
        # The packer's ready comes from the scatter stage; the slice keeps that path out of the
        # decoder's stage enables (the ECP5 limit of this tile without it).
        m.submodules.map_cut = cut = ReadySlice(dec.o_stream.payload.shape())
        for name in ("w_stream", "u_stream", "o_stream"):
            wiring.connect(m, tile=getattr(gemm, name), port=wiring.flipped(getattr(self, name)))
        wiring.connect(m, decoder=dec.i_stream, port=wiring.flipped(self.code_stream))
        wiring.connect(m, decoder=dec.pos_stream, port=wiring.flipped(self.pos_stream))
        wiring.connect(m, decoder=dec.o_stream, cut=cut.i_stream)
        wiring.connect(m, cut=cut.o_stream, packer=packer.i_stream)
        # The decoder is done with a code once it is idle and its last entry has left the slice.
        dec_busy = Signal(name="dec_busy")
        m.d.comb += dec_busy.eq(dec.busy | cut.o_stream.valid)
        wiring.connect(m, packer=packer.o_stream, tile=gemm.map_stream)

        # ---- the job: one configuration beat, columns * passes map codes ---------------------
        cfg = self.cfg_stream
        job = Signal.like(cfg.payload, name="job")
        active = Signal(name="active")          # map codes of the job not yet started
        col = Signal.like(cfg.payload.columns, name="col")
        passes = Signal.like(cfg.payload.passes, name="passes_left")
        chunk_open = Signal(name="chunk_open")  # the chunk's map is not complete at the packer
        faulted = Signal(name="faulted")        # the decoder has failed on this chunk
        need_fill = Signal(name="need_fill")    # ... before the chunk's map was complete
        final = Signal(name="final")
        rows = Signal(range(p.tile + 1), name="rows")   # the chunk's positions taken so far
        m.d.comb += [
            # The next job starts once the decoder is done with this one (a fault found after
            # the last entry, TRAILING, belongs to this job).
            cfg.ready.eq(~active & ~chunk_open & ~dec_busy),
            dec.cfg_stream.payload.frame_stride.eq(job.frame_stride),
            dec.cfg_stream.payload.row_stride.eq(job.row_stride),
            dec.cfg_stream.valid.eq(active & ~chunk_open),
            packer.final.eq(final),
            packer.rows.eq(rows),
            # The decoder is idle once it has taken the chunk's positions and words up to
            # their `last` and its entries have left: what it did not decode is filled.
            packer.fill.eq(need_fill & chunk_open & ~dec_busy),
            self.busy.eq(active | chunk_open | dec_busy),
        ]
        with m.If(cfg.valid & cfg.ready):
            m.d.sync += [job.eq(cfg.payload), col.eq(0), passes.eq(cfg.payload.passes),
                         active.eq((cfg.payload.columns != 0) & (cfg.payload.passes != 0)),
                         self.error.eq(0), self.cause.eq(MapDecodeError.NONE)]
        with m.If(dec.cfg_stream.valid & dec.cfg_stream.ready):
            m.d.sync += [chunk_open.eq(1), faulted.eq(0), need_fill.eq(0), rows.eq(0),
                         final.eq(col == job.columns - 1)]
            with m.If(col == job.columns - 1):
                m.d.sync += [col.eq(0), passes.eq(passes - 1)]
                with m.If(passes == 1):
                    m.d.sync += active.eq(0)
            with m.Else():
                m.d.sync += col.eq(col + 1)
        with m.If(self.pos_stream.valid & self.pos_stream.ready):
            m.d.sync += rows.eq(rows + 1)
        # The decoder's error rises in the cycle after the fault and holds while it drains.
        with m.If(dec.error & dec.busy & ~faulted):
            m.d.sync += [faulted.eq(1), need_fill.eq(chunk_open & ~packer.closed)]
            with m.If(~self.error):
                m.d.sync += [self.error.eq(1), self.cause.eq(dec.cause)]
        with m.If(packer.closed):
            m.d.sync += [chunk_open.eq(0), need_fill.eq(0)]
        return m
