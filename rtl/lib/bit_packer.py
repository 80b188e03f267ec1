"""A bit packer (spec 3.3, 4.5): variable-length fields in, words out, for the offset encoder
and the map coder."""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import offset_word_layout

__all__ = ["BitPacker", "packer_field_layout"]


def packer_field_layout(field_bits):
    """One field for :class:`BitPacker`: its ``length`` (0 .. ``field_bits``) low bits of
    ``value``, sent MSB first; the bits of ``value`` above ``length`` must be 0."""
    return data.StructLayout({
        "value": unsigned(field_bits),
        "length": range(field_bits + 1),
    })


class BitPacker(FocusBlock):
    """Packs a job's fields, MSB first and back to back, into ``word_bits`` words: the string of
    the offset code, for :class:`rtl.sec.offset_encoder.OffsetEncoder`.

    The fields arrive on ``i_stream`` (:func:`packer_field_layout`); the words leave on
    ``o_stream`` (:func:`rtl.layouts.offset_word_layout`, ``nbits`` copied from the ``nbits``
    input). ``flush`` tells the packer that no further field of the job will come: once the
    fields sent so far are packed, the last bits go out in a final word, zero-padded, flagged
    ``last``; ``done`` pulses in the cycle that word is written. The packer is then empty and
    takes the next job's fields. A job must hold at least one bit: a flush with nothing to pack
    never ends (both users start every job with a header field).

    Datapath: an accumulator of ``word_bits - 1 + field_bits`` bits, left-aligned. Each cycle it
    writes its top word to ``o_stream``'s register when it holds a whole word (or, flushing, any
    bits), and takes a field when fewer than ``word_bits`` bits stay in it after that write. The
    field is shifted into place by its registered free space minus the field's length (in a copy
    one word wider), and the written word is removed by a final select, so the output handshake
    does not feed the field's shifter.

    Latency and throughput: a field taken in cycle t is in a word offered on ``o_stream`` from
    cycle t + 2 (once the word is full, or on ``flush``). One field per cycle while the fields
    average at most ``word_bits`` bits, one word per cycle: a field longer than a word holds
    ``i_stream`` for ceil(length/word_bits) cycles, so a job of f fields and w words takes about
    ``max(f, w)`` cycles.

    Back-pressure: while ``o_stream`` is not ready the packer writes no word and, once a word
    waits in the accumulator, takes no field; ``i_stream.ready`` depends combinationally on
    ``o_stream.ready`` only (not on ``flush`` or ``i_stream.valid``). Nothing is lost or
    repeated.

    Parameters
    ----------
    params : FocusParams
        Uses ``word_bits`` (and the derived ``nbits_bits``).
    field_bits : int
        The longest field.

    Members
    -------
    i_stream : In(stream.Signature(packer_field_layout(field_bits)))
        The fields, in string order.
    flush : In(1)
        No field follows those already sent (``i_stream.valid`` low); hold until ``done``.
    nbits : In(nbits_bits)
        Copied into every word's ``nbits``.
    o_stream : Out(stream.Signature(offset_word_layout(params)))
        The words.
    done : Out(1)
        The job's final word is written to ``o_stream``'s register in this cycle.
    """

    def __init__(self, params, field_bits):
        self._field_bits = field_bits
        super().__init__(params, lambda p: {
            "i_stream": In(stream.Signature(packer_field_layout(field_bits))),
            "flush": In(1),
            "nbits": In(p.nbits_bits),
            "o_stream": Out(stream.Signature(offset_word_layout(p))),
            "done": Out(1),
        })

    def elaborate(self, platform):
        wb, fw = self._params.word_bits, self._field_bits
        acc_bits = wb - 1 + fw          # a field is taken only while fill < word_bits
        m = Module()
        i, o = self.i_stream, self.o_stream

        acc = Signal(acc_bits)          # left-aligned: bit acc_bits-1 is the next bit out
        # The accumulator's free bits in the copy one word wider (wide - the bits it holds),
        # kept instead of the fill so that the field's shift amount is one subtraction of two
        # registers: room - length.
        wide = acc_bits + wb
        room = Signal(range(wide + 1), init=wide)
        flushing = self.flush & ~i.valid
        full = room <= acc_bits         # holds a whole word
        can_out = full | (flushing & (room != wide))
        out_fire = can_out & (~o.valid | o.ready)
        # The room once this cycle's word (if any) has left. While a field is offered the
        # packer is not flushing, so only a whole word can leave: ``i.ready`` and the room
        # after the field do not depend on ``flush``, which comes late from the producer.
        # (``room + wb > acc_bits`` is written ``room >= fw``: compares with constants only.)
        room1 = Signal.like(room)
        room_fed = Signal.like(room)
        word_out = full & (~o.valid | o.ready)
        m.d.comb += [
            room1.eq(Mux(out_fire, Mux(full, room + wb, wide), room)),
            room_fed.eq(Mux(word_out, room + wb, room)),
            i.ready.eq(Mux(word_out, room >= fw, room > acc_bits)),
        ]
        # The field is placed behind the bits already in the accumulator, in the wider copy,
        # before this cycle's word (if any) leaves: its position comes from registers only, and
        # the word's removal is a select at the end.
        shift = Signal(range(wide + 1))         # where the field's last bit lands
        m.d.comb += shift.eq(room - i.payload.length)
        placed = Signal(wide)
        m.d.comb += placed.eq((acc << wb) | Mux(i.valid & i.ready, i.payload.value << shift, 0))
        m.d.sync += acc.eq(Mux(out_fire, placed[:acc_bits], placed[wb:]))
        with m.If(i.valid & i.ready):
            m.d.sync += room.eq(room_fed - i.payload.length)
        with m.Else():
            m.d.sync += room.eq(room1)

        last = flushing & (room >= acc_bits)     # at most one word left
        m.d.comb += self.done.eq(out_fire & last)
        with m.If(out_fire):
            m.d.sync += [o.valid.eq(1), o.payload.word.eq(acc[acc_bits - wb:]),
                         o.payload.nbits.eq(self.nbits), o.payload.last.eq(last)]
        with m.Elif(o.ready):
            m.d.sync += o.valid.eq(0)
        return m
