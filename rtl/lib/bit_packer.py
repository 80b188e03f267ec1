"""A bit packer (spec 3.3, 4.5): variable-length fields in, words out, for the offset encoder
and the map coder."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
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

    Datapath: a field register, then an accumulator of ``word_bits - 1 + field_bits`` bits,
    left-aligned. The field register holds the next field left-aligned in ``field_bits`` bits
    (shifted by its own length, a value of the input beat alone). Each cycle the accumulator
    writes its top word to ``o_stream``'s register when it holds a whole word (or, flushing, any
    bits), and takes the registered field when fewer than ``word_bits`` bits stay in it after
    that write. The field is shifted into place by the accumulator's registered fill (in a copy
    one word wider), and the written word is removed by a final select: no adder feeds the
    shifter, and the output handshake does not feed it either.

    Latency and throughput: a field taken in cycle t is in a word offered on ``o_stream`` from
    cycle t + 3 (once the word is full, or on ``flush``). One field per cycle while the fields
    average at most ``word_bits`` bits, one word per cycle: a field longer than a word holds
    ``i_stream`` for ceil(length/word_bits) cycles, so a job of f fields and w words takes about
    ``max(f, w)`` cycles.

    Back-pressure: while ``o_stream`` is not ready the packer writes no word and, once a word
    waits in the accumulator, takes no field into it; ``i_stream.ready`` (the field register
    is empty or moves on) depends combinationally on ``o_stream.ready`` only (not on ``flush``
    or ``i_stream.valid``). Nothing is lost or repeated.

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
        No field follows those already sent (``i_stream.valid`` low); hold until ``done``. The
        packer flushes once the field register is empty.
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
        acc_bits = wb - 1 + fw          # a field is taken only while fewer than wb bits stay
        wide = acc_bits + wb            # the accumulator in a copy one word wider
        m = Module()
        i, o = self.i_stream, self.o_stream

        # The field register: each field left-aligned in fw bits (a shift by its own length
        # only), so that placing it takes a shift by the accumulator's registered fill alone.
        f_valid = Signal()
        f_top = Signal(fw)
        f_length = Signal.like(i.payload.length)

        acc = Signal(acc_bits)          # left-aligned: bit acc_bits-1 is the next bit out
        held = Signal(range(wide + 1))  # bits in acc
        flushing = self.flush & ~i.valid & ~f_valid
        full = held >= wb
        can_out = full | (flushing & (held != 0))
        out_fire = can_out & (~o.valid | o.ready)
        # The accumulator takes the field register's field when fewer than wb bits stay in it
        # after this cycle's word. While a field waits the packer is not flushing, so only a
        # whole word can leave: this does not depend on ``flush``, which comes late from the
        # producer (``held - wb < wb`` is written ``held < 2 * wb``: compares with constants).
        word_out = full & (~o.valid | o.ready)
        take = Signal()
        m.d.comb += [
            take.eq(f_valid & Mux(word_out, held < 2 * wb, held < wb)),
            i.ready.eq(~f_valid | take),
        ]
        with m.If(i.ready):
            m.d.sync += [
                f_valid.eq(i.valid),
                f_top.eq(((i.payload.value << fw) >> i.payload.length)[:fw]),
                f_length.eq(i.payload.length),
            ]

        # The field is placed behind the bits already in the accumulator, in the wider copy,
        # before this cycle's word (if any) leaves: a shift by a register, and the word's
        # removal is a select at the end.
        placed = Signal(wide)
        field = Signal(wide)
        m.d.comb += [
            field.eq(Cat(Const(0, wide - fw), f_top) >> held),
            placed.eq((acc << wb) | Mux(take, field, 0)),
        ]
        m.d.sync += acc.eq(Mux(out_fire, placed[:acc_bits], placed[wb:]))
        left = Mux(out_fire, Mux(full, held - wb, 0), held)
        m.d.sync += held.eq(left + Mux(take, f_length, 0))

        last = flushing & (held <= wb)     # at most one word left
        m.d.comb += self.done.eq(out_fire & last)
        with m.If(out_fire):
            m.d.sync += [o.valid.eq(1), o.payload.word.eq(acc[acc_bits - wb:]),
                         o.payload.nbits.eq(self.nbits), o.payload.last.eq(last)]
        with m.Elif(o.ready):
            m.d.sync += o.valid.eq(0)
        return m
