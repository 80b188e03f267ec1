"""The block matcher's map coder (spec 4.5): one symbol per token in, packed map-code words out."""



from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..lib.bit_packer import BitPacker, packer_field_layout
from ..lib.stream_buffer import StreamBuffer
from .match_layouts import map_code_config_layout, map_symbol_layout, map_word_layout

__all__ = ["MapCoder", "HEADER_BITS_VARIABLE"]

#: The variable code's header: the flag and 8 ranking entries of 3 bits.
HEADER_BITS_VARIABLE = 25


def _prefix_code(rank):
    """The variable code's field of a symbol of rank ``rank`` (0..7), as ``(value, length)``:
    rank 0 ``0``, ranks 1..3 ``1`` + 2 bits, ranks 4..7 ``111`` + 2 bits."""
    value = Mux(rank == 0, 0, Mux(rank < 4, 0b100 + rank - 1, 0b11100 + rank - 4))
    length = Mux(rank == 0, 1, Mux(rank < 4, 3, 5))
    return value, length


class MapCoder(FocusBlock):
    """Packs a job's map symbols (0 new, else the matched candidate c) into map-code words,
    as :func:`golden.map_code.encode_map`: the header (the ``variable`` flag, and for the
    variable code the ranking), then 3 bits per symbol (fixed) or the prefix code of the
    symbol's rank (variable: rank 0 ``0``, ranks 1..3 ``1`` + 2 bits, ranks 4..7 ``111`` + 2
    bits).

    A job: ``start`` pulses (``variable`` and ``ranking`` are sampled then), then symbols on
    ``i_stream`` up to the one with ``last``; or ``stop`` ends the job early (the symbols so
    far are packed and the job's words end as usual, with ``last``). Out come the words
    (:func:`~rtl.sic.match_layouts.map_word_layout`): ``nbits`` is the string's length on the
    last word and the bits up to the end of the word on the others. A ranking that is not a
    permutation raises ``error`` (the coder's one error; it is tested on the sampled ranking, so
    it is high from the second cycle after ``start``): the job writes no word, its symbols are
    taken and dropped up to ``last`` (or ``stop``). ``error`` holds until the next ``start``.

    Latency and throughput: the header is packed the cycle after ``start``, then one symbol per
    cycle (every field is shorter than a word, so the packer takes a field per cycle); a symbol
    taken in cycle t is in a word offered from t + 4 (a skid buffer, then the packer's field
    register and accumulator; once the word is full, or at the end of the job), so the last word
    is offered from the fourth cycle after the last symbol is taken.
    ``idle`` is high once that word has been taken. Back-pressure: ``i_stream.ready`` falls
    while a full word waits on ``o_stream``; nothing is lost.

    Members
    -------
    i_stream : In(stream.Signature(map_symbol_layout(params)))
    start : In(1)
    variable : In(1)
    ranking : In(data.ArrayLayout(3, 8))
        The symbols from rank 0 to rank 7.
    stop : In(1)
    o_stream : Out(stream.Signature(map_word_layout(params)))
    counts : Out(data.ArrayLayout(position_bits, 8))
        How often each symbol occurred in the job so far (cleared by ``start``): the host's
        input for the next job's ranking.
    idle : Out(1)
    error : Out(1)
        The job's ranking is not a permutation of 0..7.
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "i_stream": In(stream.Signature(map_symbol_layout(p))),
            "start": In(1),
            "variable": In(1),
            "ranking": In(map_code_config_layout(p).members["ranking"]),
            "stop": In(1),
            "o_stream": Out(stream.Signature(map_word_layout(p))),
            "counts": Out(data.ArrayLayout(p.position_bits, 8)),
            "idle": Out(1),
            "error": Out(1),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        i, o = self.i_stream, self.o_stream
        pb, wb = p.position_bits, p.word_bits
        m.submodules.packer = packer = BitPacker(p, HEADER_BITS_VARIABLE)
        # The fields go through a stream of their own (so that the packer's port names do not
        # clash with this block's in the netlist), then a skid buffer: the packer's ready, which
        # hangs off ``o_stream.ready``, then reaches neither ``i_stream.ready`` nor the symbol
        # counters' enable in the same cycle.
        field = stream.Signature(packer_field_layout(HEADER_BITS_VARIABLE)).create(
            path=("field",))
        m.submodules.field_reg = field_reg = StreamBuffer(
            packer_field_layout(HEADER_BITS_VARIABLE), skid=True)
        wiring.connect(m, field, field_reg.i_stream)
        wiring.connect(m, field_reg.o_stream, packer.i_stream)

        variable = Signal(name="job_variable")
        ranking = Signal.like(self.ranking, name="job_ranking")
        rank_of = Signal(data.ArrayLayout(3, 8))         # rank of each symbol
        stopped = Signal()          # stop was high: the job ends (registered, so that ``stop``
        #                             does not feed ``i_stream.ready``)
        with m.If(self.stop):
            m.d.sync += stopped.eq(1)
        with m.If(self.start):
            m.d.sync += stopped.eq(0)
        # The symbol counters (a register array read out as the ``counts`` port: updating the
        # port's elements in place trips an assertion in Yosys 0.70's abc9 on ECP5).
        counts = [Signal(pb, name=f"count{s}") for s in range(8)]
        m.d.comb += [self.counts[s].eq(counts[s]) for s in range(8)]
        total = Signal(pb)                               # string bits packed so far
        # The length of the symbol taken in the previous cycle, added to ``total`` then, so
        # that the symbol's field select and the adder's carry chain are not in one cycle (the
        # last word, the one that reads ``total``, is offered four cycles after its symbol).
        added = Signal(3)
        m.d.sync += [total.eq(total + added), added.eq(0)]
        word_end = Signal(pb)                            # bits up to the end of the next word
        m.d.comb += [
            packer.nbits.eq(0),
            o.valid.eq(packer.o_stream.valid),
            o.payload.word.eq(packer.o_stream.payload.word),
            o.payload.last.eq(packer.o_stream.payload.last),
            o.payload.nbits.eq(Mux(packer.o_stream.payload.last, total, word_end + wb)),
            packer.o_stream.ready.eq(o.ready),
        ]
        with m.If(o.valid & o.ready):
            m.d.sync += word_end.eq(Mux(o.payload.last, 0, word_end + wb))

        # Each symbol's field, formed from the job's ranks in the header's cycle: a symbol's
        # field is then one 8-way select of registers (the rank lookup and the prefix code's
        # adders stood between the input and the packer's shifter).
        sym_value = Array(Signal(5, name=f"sym_value{s}") for s in range(8))
        sym_length = Array(Signal(3, name=f"sym_length{s}") for s in range(8))
        # Whether the ranking names each symbol, sampled with it (8 names of 8 entries: then it
        # is a permutation). The job's state tests them in the header's cycle, so that the 64
        # compares do not stand between the ``ranking`` port and the state.
        named = Signal(8)
        bad = Signal(name="bad_ranking")
        m.d.comb += bad.eq(variable & ~named.all())

        with m.FSM(name="coder"):
            with m.State("IDLE"):
                m.d.comb += self.idle.eq(~packer.o_stream.valid)
                with m.If(self.start):
                    m.d.sync += [variable.eq(self.variable), ranking.eq(self.ranking),
                                 named.eq(Cat(Cat(self.ranking[r] == s for r in range(8)).any()
                                              for s in range(8))),
                                 total.eq(0), word_end.eq(0),
                                 self.error.eq(0)]
                    m.d.sync += [counts[s].eq(0) for s in range(8)]
                    for s in range(8):
                        m.d.sync += rank_of[s].eq(0)
                        for r in range(8):
                            with m.If(self.ranking[r] == s):
                                m.d.sync += rank_of[s].eq(r)
                    m.next = "HEADER"
            with m.State("HEADER"):
                for sym in range(8):
                    value, length = _prefix_code(rank_of[sym])
                    m.d.sync += [sym_value[sym].eq(Mux(variable, value, sym)),
                                 sym_length[sym].eq(Mux(variable, length, 3))]
                head = Cat(*(ranking[r] for r in range(7, -1, -1)), Const(1, 1))
                m.d.comb += [
                    field.valid.eq(~bad),
                    field.payload.value.eq(Mux(variable, head, 0)),
                    field.payload.length.eq(Mux(variable, HEADER_BITS_VARIABLE, 1)),
                ]
                with m.If(bad):
                    m.d.sync += self.error.eq(1)
                    m.next = "DROP"
                with m.Elif(field.ready):
                    m.d.sync += total.eq(Mux(variable, HEADER_BITS_VARIABLE, 1))
                    m.next = "SYMBOLS"
            with m.State("SYMBOLS"):
                m.d.comb += [
                    field.valid.eq(i.valid & ~stopped),
                    field.payload.value.eq(sym_value[i.payload.code]),
                    field.payload.length.eq(sym_length[i.payload.code]),
                    i.ready.eq(field.ready & ~stopped),
                ]
                with m.If(i.valid & i.ready):
                    m.d.sync += added.eq(field.payload.length)
                    for sym in range(8):
                        with m.If(i.payload.code == sym):
                            m.d.sync += counts[sym].eq(counts[sym] + 1)
                    with m.If(i.payload.last):
                        m.next = "FLUSH"
                with m.If(stopped):
                    m.next = "FLUSH"
            with m.State("FLUSH"):
                m.d.comb += packer.flush.eq(1)
                with m.If(packer.done):
                    m.next = "IDLE"
            with m.State("DROP"):
                m.d.comb += i.ready.eq(1)
                with m.If((i.valid & i.payload.last) | stopped):
                    m.next = "IDLE"
        return m
