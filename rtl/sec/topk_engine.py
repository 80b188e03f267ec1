"""The interface between :class:`~rtl.sec.topk_selector.TopKSelector` and its sorting engines
(:class:`~rtl.sec.bubble_sorter.BubbleSorter`, :class:`~rtl.sec.radix_selector.RadixSelector`)."""

from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import mask_beat_layout
from .importance_buffer import BufferSweeper, buffer_addr_bits, buffer_word_layout

__all__ = ["TopKEngineSignature", "add_sweeper", "or_tree"]


class TopKEngineSignature(wiring.Signature):
    """A sorting engine inside :class:`TopKSelector`, seen from the engine.

    Members
    -------
    start : In(1)
        Begin a job with ``M`` (>= 1) and ``keep`` (already min(k, M)).
    M, keep : In(count_bits)
    keep_zero : In(1)
        ``keep`` is 0, given beside it so that no compare follows the min(k, M) of ``keep``.
    avail : In(buffer_addr_bits + 1)
        Words of the vector in the buffer so far.
    all_avail : In(1)
        The whole vector is in the buffer.
    r_addr, r_en : Out; r_data : In
        The buffer's read port.
    o_stream : Out(stream.Signature(mask_beat_layout(p)))
        The keep mask in index order.
    busy : Out(1)
        From the cycle after ``start`` to the last mask beat's transfer.
    """

    def __init__(self, p):
        super().__init__({
            "start": In(1), "M": In(p.count_bits), "keep": In(p.count_bits), "keep_zero": In(1),
            "avail": In(buffer_addr_bits(p) + 1), "all_avail": In(1),
            "r_addr": Out(buffer_addr_bits(p)), "r_en": Out(1),
            "r_data": In(buffer_word_layout(p)),
            "o_stream": Out(stream.Signature(mask_beat_layout(p))),
            "busy": Out(1),
        })


def add_sweeper(m, engine):
    """Adds to ``m``, as submodule ``sweeper``, the
    :class:`~rtl.sec.importance_buffer.BufferSweeper` through which a :class:`TopKEngineSignature`
    engine reads the vector, and returns it.

    The engine's ``start``, ``M``, ``avail``, ``all_avail`` and ``r_data`` drive the sweeper, which
    drives the engine's ``r_addr`` and ``r_en``; the engine drives ``final`` and ``take`` itself
    and reads the words from the sweeper's ``w_data`` register, never from ``r_data``.
    """
    m.submodules.sweeper = sw = BufferSweeper(engine.params)
    m.d.comb += [
        sw.start.eq(engine.start), sw.M.eq(engine.M),
        sw.avail.eq(engine.avail), sw.all_avail.eq(engine.all_avail),
        engine.r_addr.eq(sw.r_addr), engine.r_en.eq(sw.r_en), sw.r_data.eq(engine.r_data),
    ]
    return sw


def or_tree(terms):
    """The OR of ``terms`` as a balanced tree (for one-hot AND-OR selects)."""
    terms = list(terms)
    while len(terms) > 1:
        pairs = [terms[i] | terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]
