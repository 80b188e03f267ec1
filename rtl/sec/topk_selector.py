"""The top-k selector of SEC (spec 3.2): the keep mask of the k most important tokens."""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import mask_beat_layout, score_beat_layout
from ..lib.bounds import at_most, outside_1_to
from .bubble_sorter import BubbleSorter
from .importance_buffer import (
    ImportanceBuffer,
    buffer_addr_bits,
    buffer_members,
)
from .radix_selector import RadixSelector

__all__ = ["TopKSelector", "selector_config_layout"]


def selector_config_layout(p):
    """The job's settings: ``M`` tokens (1 .. tokens), ``keep`` (k >= 0; k >= M keeps every
    token), and ``preloaded``: the importance vector is already in the buffer (1, SEC after the
    analyzer) or arrives on ``i_stream`` (0)."""
    return data.StructLayout({
        "M": unsigned(p.count_bits),
        "keep": unsigned(p.count_bits),
        "preloaded": 1,
    })


class TopKSelector(FocusBlock):
    """Streams the keep mask of the ``keep`` most important tokens, in index order.

    Order: score descending, then index ascending; mask[j] is set for the first min(keep, M)
    tokens in that order (exactly ``golden.topk_mask``). The engine is ``params.sorter``:

    - ``"bubble"`` (:class:`rtl.sec.bubble_sorter.BubbleSorter`): P = ceil(k/a) passes of M cycles
      each, one score per cycle through a chain of ``lanes`` compare-exchange cells, then the
      mask. Cycles (no stalls, the vector on ``i_stream``, k = min(keep, M)):
      ``P * M + ceil(M/a) + 7``, or ``ceil(M/a) + 4`` for k = 0 (``golden.cycles.topk_cycles``).
    - ``"radix"`` (:class:`rtl.sec.radix_selector.RadixSelector`): D = ceil(score_bits/4) histogram
      passes, then the mask pass, each reading ``lanes`` scores per cycle, whatever k is.
      Cycles: ``(D + 1) * ceil(M/a) + 4 * D + 6``.

    A job: one ``cfg_stream`` beat (:func:`selector_config_layout`); unless ``preloaded``, the
    importance vector on ``i_stream`` as ceil(M/lanes) beats (padding lanes ignored); the mask on
    ``o_stream`` as ceil(M/lanes) :func:`rtl.layouts.mask_beat_layout` beats (bit i of beat b is
    token b*lanes + i, padding bits 0, ``last`` on the final beat). ``i_stream`` is always ready
    while the vector is being loaded; the first pass follows the words being written, so loading
    costs no pass of its own. ``o_stream`` back-pressure only delays the mask. M = 0 or M > tokens
    raise ``error`` (held until the next configuration beat is accepted) and the selector stays
    idle; while ``error`` is high and no configuration beat waits, stray ``i_stream`` beats are
    accepted and dropped, so no producer hangs.

    Handing over from the analyzer (SEC): built with ``buffer="external"`` the selector has a
    ``buffer`` port instead of its own memory. SEC connects it, with the analyzer's, to one
    two-client :class:`rtl.sec.importance_buffer.ImportanceBuffer`, gives the buffer to the selector
    at the analyzer's ``done``, and sends the selector's configuration beat with ``preloaded=1``
    and no ``i_stream`` beats. The passes then read the vector where the analyzer wrote it.

    Parameters
    ----------
    params : FocusParams
        Uses ``tokens``, ``lanes``, ``score_bits`` and ``sorter``.
    buffer : str
        ``"internal"`` (a one-client :class:`ImportanceBuffer` inside) or ``"external"``.

    Members
    -------
    cfg_stream : In(stream.Signature(selector_config_layout(params)))
    i_stream : In(stream.Signature(score_beat_layout(params)))
        The importance vector (jobs with ``preloaded=0``).
    o_stream : Out(stream.Signature(mask_beat_layout(params)))
        The keep mask.
    buffer : Out(BufferPortSignature(params))
        Only with ``buffer="external"``.
    error : Out(1)
        The last configuration beat was rejected.
    busy : Out(1)
        A job is in progress (until the last mask beat's transfer).
    """

    def __init__(self, params=None, *, buffer="internal"):
        self._buffer = buffer
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(selector_config_layout(p))),
            "i_stream": In(stream.Signature(score_beat_layout(p))),
            "o_stream": Out(stream.Signature(mask_beat_layout(p))),
            "error": Out(1),
            "busy": Out(1),
            **buffer_members(p, buffer),
        })

    def elaborate(self, platform):
        p = self._params
        a = p.lanes
        m = Module()
        cfg, i = self.cfg_stream, self.i_stream
        if self._buffer == "internal":
            m.submodules.buffer = buf = ImportanceBuffer(p)
            port = buf.clients[0]
        else:
            port = self.buffer
        engine = BubbleSorter(p) if p.sorter == "bubble" else RadixSelector(p)
        m.submodules.engine = engine

        loaded = Signal(buffer_addr_bits(p) + 1)    # words written so far
        load_left = Signal(p.count_bits)            # tokens not yet loaded
        load_done = Signal()
        m.d.comb += [
            engine.avail.eq(loaded), engine.all_avail.eq(load_done),
            port.r_addr.eq(engine.r_addr), port.r_en.eq(engine.r_en),
            engine.r_data.eq(port.r_data),
        ]
        wiring.connect(m, wiring.flipped(self.o_stream), engine.o_stream)

        c = cfg.payload
        bad = outside_1_to(c.M, p.tokens)
        # Combinational outputs are assigned unconditionally, from the state (see the note in
        # rtl/sec/importance_analyzer.py about Icarus).
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(cfg.valid):
                    # Loaded whatever ``bad`` is (unused after a rejected beat): the compares
                    # stay off the registers' enables.
                    m.d.sync += [self.error.eq(bad), loaded.eq(0), load_left.eq(c.M),
                                 load_done.eq(c.preloaded)]
                    with m.If(~bad):
                        m.next = "RUN"
            with m.State("RUN"):
                with m.If(i.valid & ~load_done):
                    m.d.sync += [loaded.eq(loaded + 1), load_left.eq(load_left - a)]
                    with m.If(at_most(load_left, a)):
                        m.d.sync += load_done.eq(1)
                with m.If(load_done & ~engine.busy):
                    m.next = "IDLE"
        idle, run = fsm.ongoing("IDLE"), fsm.ongoing("RUN")
        m.d.comb += [
            self.busy.eq(~idle),
            cfg.ready.eq(idle),
            i.ready.eq(Mux(idle, self.error & ~cfg.valid, run & ~load_done)),
            engine.start.eq(idle & cfg.valid & ~bad),
            engine.M.eq(c.M), engine.keep.eq(Mux(c.keep < c.M, c.keep, c.M)),
            engine.keep_zero.eq(c.keep == 0),       # min(k, M) = 0 for the M >= 1 it starts
            port.w_addr.eq(loaded), port.w_data.eq(i.payload),
            port.w_en.eq(run & i.valid & ~load_done),
        ]
        return m
