"""The map decoder (spec 4.5): map-code words and the tokens' positions in, map entries out."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, memory, stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock, job_status_members
from .match_layouts import CANDIDATES, map_word_layout
from .window_buffer import window_slots

__all__ = ["MapDecoder", "MapDecodeError", "map_decoder_config_layout", "map_position_layout",
           "map_entry_layout"]

#: Bits the decoder buffers beyond one word: the variable code's header (25) fits with a word.
_SLACK = 32
_HEADER_VARIABLE = 25
#: A symbol's lengths: 1, 3 or 5 bits with the variable code, 3 with the fixed one.
_SYMBOL_LENGTHS = (1, 3, 5)
#: The next bits the parse reads: a symbol's longest.
_HEAD_BITS = max(_SYMBOL_LENGTHS)


class MapDecodeError(enum.Enum, shape=3):
    """Why the map decoder raised ``error`` (golden's message starts with the same name)."""
    NONE = 0
    #: frame_stride + row_stride + 1 >= window.
    CONFIG = 1
    #: The last word's ``nbits`` does not end in that word (too few or too many words).
    LENGTH = 2
    #: nbits shorter than the header, or a ranking that is not a permutation of 0..7.
    HEADER = 3
    #: A symbol runs past nbits.
    SHORT = 4
    #: A symbol names a candidate that is not a token of the tile (or has offset 0).
    CANDIDATE = 5
    #: Bits left after the last token's symbol.
    TRAILING = 6
    #: A position not greater than the previous one.
    POSITION = 7


def map_decoder_config_layout(p):
    """A job's geometry: FS and HS (FS + HS + 1 < ``window``)."""
    return data.StructLayout({"frame_stride": unsigned(p.position_bits),
                              "row_stride": unsigned(p.position_bits)})


def map_position_layout(p):
    """A token's position (strictly increasing), ``last`` on the job's final token."""
    return data.StructLayout({"position": unsigned(p.position_bits), "last": 1})


def map_entry_layout(p):
    """A token's map entry, its symbol (0 new, else c) and ``last`` on the job's final token."""
    return data.StructLayout({"map": unsigned(p.position_bits), "code": unsigned(3), "last": 1})


def _slot_layout(p):
    return data.StructLayout({"tag": unsigned(p.position_bits), "serial": unsigned(32),
                              "map": unsigned(p.position_bits)})


def _token_layout(p):
    """A parsed token on its way through the address, read and check stages: its candidate's
    position ``q`` (bit ``position_bits``: below 0) and whether its offset is 0 are formed in
    the address stage, its slot (``q``'s low bits) in the parse."""
    return data.StructLayout({"code": unsigned(3), "q": unsigned(p.position_bits + 1),
                              "slot": unsigned(p.window_bits),
                              "pos": unsigned(p.position_bits), "off_zero": 1, "last": 1,
                              "serial": unsigned(32)})


def _found(p, entry, tok):
    """Whether the slot ``entry`` holds the token's candidate: its position, of the same tile."""
    pb = p.position_bits
    return ((entry.tag == tok.q[:pb]) & ~tok.q[pb] & (entry.serial == tok.serial)
            & ~tok.off_zero)


class MapDecoder(FocusBlock):
    """Rebuilds the block matcher's map from its map code (:class:`~rtl.sic.map_coder.MapCoder`)
    and the tokens' positions, exactly as :func:`golden.map_code.decode_map`: symbol 0 takes the
    next unique index (from 0 per job), symbol c the map entry of the token at position ``p -
    offset_c`` of the same tile.

    A job: one ``cfg_stream`` beat (FS, HS), then the words on ``i_stream`` up to the one with
    ``last`` (its ``nbits`` is the string's length; the other words' ``nbits`` is ignored) and
    the positions on ``pos_stream`` up to the one with ``last``; one ``o_stream`` beat per
    position, in order.

    Structure: a bit buffer that holds up to ``word_bits + 32`` bits and takes a word whenever
    it has room (in parallel with the parsing), kept as a ring of word slots: a word is written
    to its slot as it is (no shifter), and the next 5 bits wait in a register, reloaded each
    cycle from the ring at a pointer that moves by what the parse consumes; a parse step,
    combinational, that reads the header (one cycle, at the ring's start) or the next symbol
    (one per token) from that register and forms the slot of its candidate (only the position's
    low bits are subtracted after the decode) in a window memory of ``2**window_bits`` entries
    (each token's position, tile serial number and map entry, stored at slot ``position mod
    2**window_bits``); an address stage that registers the slot and issues the read (so no
    decode runs into the block RAM's address) while it forms the candidate's whole position; a
    read stage that registers the memory's read data as it is (no logic between the memory and
    that register), beside the slot writes the read missed: those of the two tokens before (the
    read is not transparent; the later write wins); a check stage that checks the candidate,
    forms the entry and writes the token's slot (also when the check fails: the job then ends,
    and no later tile looks up that tile's serial number). Latency: a token's entry is offered
    (``o_stream.valid``) 4 cycles after the cycle its position is taken (parse, address, read
    and check stages); without stalls a job of m tokens takes m + 7 cycles from its
    configuration beat to its last entry, inclusive (``tests/test_map_code.py`` checks it), and
    the next configuration beat is taken the cycle after. Throughput: one token per cycle while
    the buffer holds its symbol (a symbol waits for a word only while fewer than 5 bits, 3 with
    the fixed code, are buffered and the last word has not come); the header takes a cycle and
    waits for 25 bits (or the last word). Back-pressure: parsing and the stages stop while the
    entry register is full and not taken; the word and position streams wait.

    Errors (``error`` rises with ``cause``, :class:`MapDecodeError`; no further entry is
    written; the rest of the job's words and positions are taken and dropped up to their
    ``last``; then the block is idle, ``error`` and ``cause`` holding until the next
    configuration beat): ``CONFIG`` the cycle after the configuration beat (checked on the
    registered offsets); ``LENGTH`` the cycle after the last word arrives (the check is
    registered; it wins over any other fault of that cycle); ``HEADER`` while parsing the
    header; ``SHORT`` and ``POSITION`` the cycle after the parse meets them (registered; the
    token waits meanwhile; they win over a ``CANDIDATE`` of that cycle); ``CANDIDATE`` the
    cycle after the check stage (the failed check is registered; the tokens already parsed
    behind it, up to three, write nothing);
    ``TRAILING`` after the last token, once the last word is in. A fault drops the tokens in
    the address, read and check stages whose entry has not been formed, so the entries a failed
    job wrote are those of its first tokens, not always of all the tokens parsed before the
    fault. Each is raised when the decoder reaches it, so with several faults the reported one
    can differ from golden's (which checks ``LENGTH`` and the positions first); whether a job is
    rejected never differs.

    Members
    -------
    cfg_stream : In(stream.Signature(map_decoder_config_layout(params)))
    i_stream : In(stream.Signature(map_word_layout(params)))
    pos_stream : In(stream.Signature(map_position_layout(params)))
    o_stream : Out(stream.Signature(map_entry_layout(params)))
    busy, error : Out(1)
    cause : Out(MapDecodeError)
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(map_decoder_config_layout(p))),
            "i_stream": In(stream.Signature(map_word_layout(p))),
            "pos_stream": In(stream.Signature(map_position_layout(p))),
            "o_stream": Out(stream.Signature(map_entry_layout(p))),
            **job_status_members(MapDecodeError),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        s = _State(p)
        m.submodules.slots = s.mem
        self._buffer(m, s)
        self._parse(m, s)
        self._forward(m, s)
        self._resolve(m, s)
        self._control(m, s)
        return m

    # ---- the bit buffer ---------------------------------------------------------------------

    def _buffer(self, m, s):
        """Words in; ``consume`` bits out of the top each cycle. After the last token's symbol
        (``tail``) words are only counted, for the ``LENGTH`` and ``TRAILING`` checks.

        The buffer is a ring of whole words (``ring``): a word is written to the next word slot
        as it is, and the string's next bits are read at a pointer that moves by the bits
        consumed. The parse reads them from a register (``head``), which is reloaded each cycle
        with the bits after the pointer for every length the parse may consume, the choice
        made last; so the parse's loop is the symbol's decode and that choice, with no shifter
        of the word or the buffer in it."""
        p, i = self._params, self.i_stream
        wb, cap = p.word_bits, s.cap
        take = Signal()
        m.d.comb += [
            take.eq(s.words_open & ~s.words_done & (s.room | s.tail)),
            i.ready.eq(take | (s.drain & ~s.words_done)),
        ]
        # The count of bits used only serves the TRAILING check, at least two cycles after the
        # last consume: it adds each cycle's consume a cycle late, off the parse's path.
        m.d.sync += [s.consumed.eq(s.consume), s.used.eq(s.used + s.consumed)]
        arrive = take & i.valid
        # The ring's bit j is the string's bit j (mod its size); a word's first bit is its MSB.
        size = len(s.ring)
        slots = size // wb
        m.d.comb += s.ring_next.eq(s.ring)
        with m.If(arrive & ~s.tail):
            with m.Switch(s.slot):
                for k in range(slots):
                    with m.Case(k):
                        m.d.comb += s.ring_next[k * wb:(k + 1) * wb].eq(i.payload.word[::-1])
            m.d.sync += s.slot.eq(Mux(s.slot == slots - 1, 0, s.slot + 1))
        m.d.sync += s.ring.eq(s.ring_next)
        # The bits after the pointer, each read from the ring and from the word as it would sit
        # in the ring, both by the registered pointer; whether the word arrives into that
        # bit's slot is a last 2:1 choice (the arrival waits on the input's valid).
        ahead = Signal(_HEAD_BITS + max(_SYMBOL_LENGTHS))   # a head after the longest symbol
        from_ring = Cat(s.ring, s.ring).bit_select(s.ptr, len(ahead))
        image = Cat(*[i.payload.word[::-1]] * (2 * slots))
        from_word = image.bit_select(s.ptr, len(ahead))
        in_slot = Cat(*[s.slot == k // wb for k in range(size)] * 2).bit_select(s.ptr, len(ahead))
        m.d.comb += ahead.eq(Mux(arrive & ~s.tail, (from_word & in_slot) | (from_ring & ~in_slot),
                                 from_ring))
        turned = Signal.like(s.ptr)
        rest, rest_in = Signal.like(s.fill), Signal.like(s.fill)
        # Whether a word fits (fill <= cap - wb) is registered with the fill: formed for every
        # value the fill may take, as compares of the registered fill with constants, and
        # chosen as the fill is.
        room_rest, room_rest_in = Signal(), Signal()
        with m.Switch(s.eat_bits):
            for n in (*_SYMBOL_LENGTHS, _HEADER_VARIABLE):
                with m.Case(n):
                    m.d.comb += [turned.eq(Mux(s.ptr >= size - n, s.ptr + n - size, s.ptr + n)),
                                 rest.eq(s.fill - n), rest_in.eq(s.fill + wb - n),
                                 room_rest.eq(s.fill <= cap - wb + n),
                                 room_rest_in.eq(s.fill <= cap - 2 * wb + n)]
        m.d.comb += s.consume.eq(Mux(s.eat, s.eat_bits, 0))
        with m.Switch(s.consume):
            for n in (0, *_SYMBOL_LENGTHS):
                with m.Case(n):
                    m.d.sync += s.head.eq(ahead[n:n + _HEAD_BITS][::-1])
            with m.Case(_HEADER_VARIABLE):     # the header is consumed at the ring's start
                m.d.sync += s.head.eq(
                    s.ring_next[_HEADER_VARIABLE:_HEADER_VARIABLE + _HEAD_BITS][::-1])
        with m.If(~s.tail):
            with m.If(s.eat):
                m.d.sync += [s.ptr.eq(turned), s.fill.eq(Mux(arrive, rest_in, rest))]
                m.d.sync += s.room.eq(Mux(arrive, room_rest_in, room_rest))
            with m.Elif(arrive):
                m.d.sync += [s.fill.eq(s.fill + wb), s.room.eq(s.fill <= cap - 2 * wb)]
            # Once the last word is in, the string bits in the buffer (``avail``: its padding not
            # counted) are counted down by what is consumed, so the symbols' checks compare it
            # with constants; before the last word it is not used. The fill less the bits loaded
            # (``unloaded``) changes only by what is consumed, so the string bits held as the
            # last word arrives are one sum with its nbits.
            after = Signal.like(s.avail)
            m.d.comb += after.eq(Mux(arrive & i.payload.last,
                                     (s.unloaded + i.payload.nbits)[:len(after)], s.avail))
            m.d.sync += [s.avail.eq(Mux(s.eat, after - s.eat_bits, after)),
                         s.unloaded.eq(Mux(s.eat, s.unloaded - s.eat_bits, s.unloaded))]
        with m.If(arrive):
            m.d.sync += [s.loaded.eq(s.loaded_end), s.loaded_end.eq(s.loaded_end + wb)]
            with m.If(i.payload.last):
                m.d.sync += s.nbits.eq(i.payload.nbits)
                with m.If((i.payload.nbits <= s.loaded) | (i.payload.nbits > s.loaded_end)):
                    m.d.sync += s.length_bad.eq(1)
        with m.If(i.valid & i.ready & i.payload.last):
            m.d.sync += s.words_done.eq(1)

    # ---- the parse step ---------------------------------------------------------------------

    def _parse(self, m, s):
        """The next token's symbol from the top of the buffer, its candidate's slot read."""
        p, pos = self._params, self.pos_stream
        top = s.head                                        # the next 5 bits, MSB first
        var_rank, var_len = Signal(3, name="var_rank"), Signal(3, name="var_len")
        with m.If(~top[4]):
            m.d.comb += [var_rank.eq(0), var_len.eq(1)]
        with m.Elif(top[2:4] != 0b11):
            m.d.comb += [var_rank.eq(1 + top[2:4]), var_len.eq(3)]
        with m.Else():
            m.d.comb += [var_rank.eq(4 + top[0:2]), var_len.eq(5)]
        sym_len, code = Signal(3, name="sym_len"), Signal(3, name="code")
        m.d.comb += [sym_len.eq(Mux(s.variable, var_len, 3)),
                     code.eq(Mux(s.variable, s.ranking[var_rank], top[2:5]))]
        # A symbol is parsed once 5 (fixed: 3) bits are in, or all of them: the last word is in.
        ready_bits = s.words_done | Mux(s.variable, _at_least(s.fill, 5), _at_least(s.fill, 3))
        bad_pos = s.started & (pos.payload.position <= s.prev_pos)
        enough = Signal()
        with m.Switch(sym_len):
            for n in _SYMBOL_LENGTHS:
                with m.Case(n):
                    m.d.comb += enough.eq(s.has(n))
        # Only the candidate's slot (its position's low bits) is formed after the symbol's
        # decode: its whole position waits for the address stage.
        wb = p.window_bits
        slot = Signal(wb)
        with m.Switch(code):
            with m.Case(0):
                m.d.comb += slot.eq(pos.payload.position[:wb])
            for c in range(1, CANDIDATES + 1):
                with m.Case(c):
                    m.d.comb += slot.eq(pos.payload.position[:wb] - s.offsets[c - 1][:wb])
        go, ok = Signal(name="go"), Signal(name="ok")
        m.d.comb += [
            go.eq(s.parsing & pos.valid & ready_bits & s.advance),
            ok.eq(go & ~bad_pos & enough),
            s.rd.addr.eq(s.a_tok.slot),
            s.rd.en.eq(s.advance),
        ]
        # The address stage: the slot's address is a register, so the symbol's decode does not
        # run into the slot memory's address (the decoder's critical path, mostly routing to
        # the block RAM); the read is issued, and the candidate's whole position formed, as the
        # token moves on to the read stage.
        q, off_zero = Signal(p.position_bits + 1), Signal()
        with m.Switch(s.a_tok.code):
            with m.Case(0):
                m.d.comb += q.eq(s.a_tok.pos)
            for c in range(1, CANDIDATES + 1):
                with m.Case(c):
                    m.d.comb += [q.eq(s.a_tok.pos - s.offsets[c - 1]),
                                 off_zero.eq(s.offsets[c - 1] == 0)]
        with m.If(s.advance):
            m.d.sync += [s.a_valid.eq(0), s.r_valid.eq(s.a_valid), s.r_tok.eq(s.a_tok),
                         s.r_tok.q.eq(q), s.r_tok.off_zero.eq(off_zero)]
        # A bad position or a short symbol is registered and raised the next cycle (by
        # _control), so the parse's compares do not run into the job's control: the token
        # waits (its position is not taken and no word can come), so the check repeats.
        m.d.sync += s.parse_fault.eq(Mux(go & bad_pos, MapDecodeError.POSITION,
                                         Mux(go & ~ok, MapDecodeError.SHORT,
                                             MapDecodeError.NONE)))
        # The symbol is consumed also when its position is bad: the job then fails and the
        # buffer is not read again (the position compare stays off the buffer's path).
        m.d.comb += s.eat_bits.eq(sym_len)
        with m.If(go & enough):
            m.d.comb += s.eat.eq(1)
        serial = Mux(s.tile_count == 0, s.serial + 1, s.serial)   # a tile's first token opens it
        # The address stage's token is loaded whenever the stages move, a token or not
        # (``a_valid`` says which): its enable is not the symbol's decode.
        with m.If(s.advance):
            m.d.sync += [
                s.a_tok.code.eq(code),
                s.a_tok.slot.eq(slot),
                s.a_tok.pos.eq(pos.payload.position),
                s.a_tok.last.eq(pos.payload.last),
                s.a_tok.serial.eq(serial),
            ]
        with m.If(ok):
            m.d.comb += pos.ready.eq(1)
            m.d.sync += [
                s.a_valid.eq(1),
                s.serial.eq(serial),
                s.tile_count.eq(Mux(s.tile_count == p.tile - 1, 0, s.tile_count + 1)),
                s.started.eq(1),
                s.prev_pos.eq(pos.payload.position),
            ]
            with m.If(pos.payload.last):
                m.d.sync += [s.parsing.eq(0), s.tail.eq(1)]
        with m.If(s.drain):
            m.d.comb += pos.ready.eq(~s.pos_done)
        with m.If(pos.valid & pos.ready & pos.payload.last):
            m.d.sync += s.pos_done.eq(1)

    # ---- the read and check stages ---------------------------------------------------------

    def _forward(self, m, s):
        """The read stage: the slot's read data registered as it is, beside the writes the
        read missed. The read is not transparent, so a token misses the slot writes of the
        cycle it is parsed in and of the cycle it moves to the check stage (the two tokens
        before it, with stalls also fewer); the later one wins."""
        p = self._params
        slot = s.r_tok.q[:p.window_bits]
        late, early = Signal(name="late"), Signal(name="early")
        m.d.comb += [
            late.eq(s.wr.en & (s.wr.addr == slot)),
            early.eq(s.r_wen & (s.r_wslot == slot)),
        ]
        # The candidate check against both writes, chosen after: the check of this cycle's
        # write reads only registers (its tag and serial), so the write enable, which waits on
        # the entry register's back-pressure, is followed by one 2:1 choice, not the compare.
        with m.If(s.advance):
            m.d.sync += [
                s.r_wen.eq(s.wr.en), s.r_wslot.eq(s.wr.addr), s.r_wdata.eq(s.wr.data),
                s.c_valid.eq(s.r_valid), s.c_tok.eq(s.r_tok), s.c_ram.eq(s.rd.data),
                s.c_fwd.eq(late | early),
                s.c_fwd_map.eq(Mux(late, s.wr.data.map, s.r_wdata.map)),
                s.c_fwd_found.eq(Mux(late, _found(p, s.wr.data, s.r_tok),
                                     _found(p, s.r_wdata, s.r_tok))),
            ]

    def _resolve(self, m, s):
        """The check stage: the candidate's entry checked (same position, same tile), the map
        entry formed, the token's slot written."""
        p, o, t = self._params, self.o_stream, s.c_tok
        found = Mux(s.c_fwd, s.c_fwd_found, _found(p, s.c_ram, t))
        new = t.code == 0
        value = Signal.like(o.payload.map)
        m.d.comb += [
            value.eq(Mux(new, s.unique, Mux(s.c_fwd, s.c_fwd_map, s.c_ram.map))),
            s.advance.eq(~o.valid | o.ready),
            s.wr.addr.eq(t.pos[:p.window_bits]),
            s.wr.data.tag.eq(t.pos),
            s.wr.data.serial.eq(t.serial),
            s.wr.data.map.eq(value),
        ]
        with m.If(o.valid & o.ready):
            m.d.sync += o.valid.eq(0)
        # A failed check is registered and raised the next cycle (as the last fault assigned, so
        # it wins over the next token's): the entry drives only the output, the slot write and
        # the counters, not the job's control. The slot is written whether or not the check
        # passes: after a failed one the job ends, and the entry's tile serial is never seen
        # again (a tile's tokens only look up their own tile).
        with m.If(s.c_valid & s.advance & ~s.cand_bad):
            m.d.comb += s.wr.en.eq(1)
            with m.If(new | found):
                m.d.sync += [o.valid.eq(1), o.payload.map.eq(value), o.payload.code.eq(t.code),
                             o.payload.last.eq(t.last), s.unique.eq(s.unique + new)]
                with m.If(t.last):
                    m.d.sync += s.finished.eq(1)
            with m.Else():
                m.d.sync += s.cand_bad.eq(1)

    # ---- jobs and errors --------------------------------------------------------------------

    def _control(self, m, s):
        p, cfg = self._params, self.cfg_stream
        fs, hs = cfg.payload.frame_stride, cfg.payload.row_stride
        m.d.comb += self.busy.eq(~s.idle)
        # The header: the variable flag, and for the variable code the ranking.
        # The header is the string's first bits: at the ring's start (a job starts it empty).
        top = s.ring[:_HEADER_VARIABLE][::-1]
        variable = top[-1]
        ranking = _ranking(top)
        # Whether the ranking is a permutation, found from the ring's next contents and
        # registered, so that the header's check reads a flag.
        m.d.sync += s.header_ok.eq(_permutation(
            _ranking(s.ring_next[:_HEADER_VARIABLE][::-1])))

        with m.If(s.cand_bad):
            m.d.comb += s.fault.eq(MapDecodeError.CANDIDATE)
        # A registered bad position or short symbol wins over a failed check of the cycle: that
        # fault was met a cycle before it.
        with m.If(s.parsing & (s.parse_fault != MapDecodeError.NONE)):
            m.d.comb += s.fault.eq(s.parse_fault)

        def on_fault():
            with m.If(s.fault != MapDecodeError.NONE):
                m.d.sync += [self.error.eq(1), self.cause.eq(s.fault), s.parsing.eq(0),
                             s.a_valid.eq(0), s.r_valid.eq(0), s.c_valid.eq(0)]
                m.next = "DRAIN"

        with m.FSM(name="job"):
            with m.State("IDLE"):
                # The next job starts once this one's last entry has left.
                m.d.comb += [s.idle.eq(~self.o_stream.valid), cfg.ready.eq(~self.o_stream.valid)]
                with m.If(cfg.valid & cfg.ready):
                    m.d.sync += [self.error.eq(0), self.cause.eq(MapDecodeError.NONE),
                                 s.ptr.eq(0), s.slot.eq(0),
                                 s.head.eq(s.ring_next[:_HEAD_BITS][::-1]),
                                 s.fill.eq(0), s.loaded.eq(0), s.unloaded.eq(0),
                                 s.room.eq(1),
                                 s.used.eq(0),
                                 s.loaded_end.eq(p.word_bits),
                                 s.words_done.eq(0), s.pos_done.eq(0), s.unique.eq(0),
                                 s.tile_count.eq(0), s.started.eq(0), s.tail.eq(0),
                                 s.finished.eq(0), s.cand_bad.eq(0), s.length_bad.eq(0)]
                    for c in range(1, CANDIDATES + 1):
                        f, dh, dw = c >> 2, (c >> 1) & 1, c & 1
                        m.d.sync += s.offsets[c - 1].eq((fs if f else 0) + (hs if dh else 0)
                                                        + dw)
                    m.next = "HEADER"
            with m.State("HEADER"):
                m.d.comb += [s.words_open.eq(1),
                             s.eat_bits.eq(Mux(variable, _HEADER_VARIABLE, 1))]
                # The geometry is checked on the registered offsets (c = 7's is FS + HS + 1), in
                # the first cycle here, which cannot parse the header: the buffer is empty.
                with m.If(_at_least(s.offsets[CANDIDATES - 1], p.window)):
                    m.d.comb += s.fault.eq(MapDecodeError.CONFIG)
                with m.If(s.words_done | _at_least(s.fill, _HEADER_VARIABLE)):
                    with m.If(~s.has(1) | (variable & (~s.has(_HEADER_VARIABLE) | ~s.header_ok))):
                        m.d.comb += s.fault.eq(MapDecodeError.HEADER)
                    with m.Else():
                        m.d.comb += s.eat.eq(1)
                        m.d.sync += [s.variable.eq(variable), s.parsing.eq(1)]
                        m.d.sync += [s.ranking[r].eq(ranking[r]) for r in range(8)]
                        m.next = "RUN"
                on_fault()
            with m.State("RUN"):
                m.d.comb += s.words_open.eq(1)
                # After the last entry, once the last word is in: every bit used.
                with m.If(s.finished & s.words_done):
                    with m.If(s.nbits != s.used):
                        m.d.comb += s.fault.eq(MapDecodeError.TRAILING)
                    with m.Else():
                        m.next = "IDLE"
                on_fault()
            with m.State("DRAIN"):
                m.d.comb += s.drain.eq(1)
                with m.If(s.words_done & s.pos_done):
                    m.next = "IDLE"
        # The last word's length check is registered (its compare stays off the stages' valid
        # bits) and raised the cycle after the word, over any other fault of that cycle
        # (golden checks it first): assigned after the states' own faults, so that it wins.
        with m.If(s.length_bad):
            m.d.comb += s.fault.eq(MapDecodeError.LENGTH)


def _at_least(value, n):
    """``value >= n`` for a constant n, as AND/OR logic on the bits (a subtraction would be
    mapped to a carry chain): from the lowest bit up, a bit of n that is 1 must be matched,
    one that is 0 is exceeded by a 1."""
    if n <= 0:
        return Const(1)
    if n >= 2 ** len(value):
        return Const(0)
    result = Const(1)
    for k in range(len(value)):
        result = (value[k] & result) if (n >> k) & 1 else (value[k] | result)
    return result


def _ranking(header):
    """The variable header's ranking: eight 3-bit fields after its flag (``header``: its 25
    bits, MSB first)."""
    return [header[21 - 3 * r:24 - 3 * r] for r in range(8)]


def _permutation(ranking):
    """Whether the eight 3-bit values ``ranking`` are 0..7 in some order."""
    return Cat(Cat(ranking[r] == v for r in range(8)).any() for v in range(8)).all()


class _State:
    """The decoder's registers and shared wires."""

    def has(self, n):
        """Whether the buffer holds n valid bits: all but the last word's padding are valid."""
        return ~self.words_done | _at_least(self.avail, n)

    def __init__(self, p):
        pb = p.position_bits
        self.cap = cap = p.word_bits + _SLACK
        # The ring of word slots (at least cap bits), the string's next bit and the slot the
        # next word goes to.
        size = -(-cap // p.word_bits) * p.word_bits
        self.ring = Signal(size)
        self.ring_next = Signal(size)                   # the ring with this cycle's word
        self.ptr = Signal(range(size))
        self.head = Signal(_HEAD_BITS)                  # the ring's bits at ptr, MSB first
        self.slot = Signal(range(size // p.word_bits))
        self.fill = Signal(range(cap + 1))
        self.room = Signal(init=1)                      # fill <= cap - word_bits
        self.consume = Signal(range(_HEADER_VARIABLE + 1))  # bits consumed this cycle:
        self.eat = Signal()                             # ... if any,
        self.eat_bits = Signal(range(_HEADER_VARIABLE + 1))  # ... this many
        self.loaded = Signal(pb + 1)                    # string bits in the words so far
        self.loaded_end = Signal(pb + 1, init=p.word_bits)  # ... and with the next word
        self.avail = Signal(range(cap + 1))            # after the last word: string bits held
        self.unloaded = Signal(pb + 1)                  # fill - loaded (mod 2**(pb + 1))
        self.header_ok = Signal()                       # the ring's first bits: a whole ranking
        self.words_open = Signal()
        self.words_done = Signal()
        self.drain = Signal()
        self.pos_done = Signal()
        self.parsing = Signal()
        self.started = Signal()
        self.tail = Signal()                            # the last symbol parsed
        self.finished = Signal()                        # ... and its entry out
        self.cand_bad = Signal()                        # the last candidate check failed
        self.length_bad = Signal()                      # the last word's nbits is not in it
        self.used = Signal(pb)                          # string bits consumed ...
        self.consumed = Signal.like(self.consume)       # ... but the last cycle's
        self.nbits = Signal(pb)                         # the last word's nbits
        self.idle, self.advance = Signal(name="idle"), Signal(name="advance")
        self.fault = Signal(MapDecodeError)
        self.parse_fault = Signal(MapDecodeError)      # the parse's fault, a cycle late
        self.variable = Signal()
        self.ranking = Signal(data.ArrayLayout(3, 8))
        self.offsets = Signal(data.ArrayLayout(pb + 1, CANDIDATES))
        self.prev_pos = Signal(pb)
        self.unique = Signal(pb)
        self.serial = Signal(32)
        self.tile_count = Signal(range(p.tile))
        # The address stage (the token whose slot address is registered), the read stage (the
        # token whose slot read is on the memory's output) and the check stage, and what the
        # forwarding keeps (_forward).
        self.a_valid, self.a_tok = Signal(name="a_valid"), Signal(_token_layout(p), name="a_tok")
        self.r_valid, self.c_valid = Signal(name="r_valid"), Signal(name="c_valid")
        self.r_tok = Signal(_token_layout(p))
        self.c_tok = Signal(_token_layout(p))
        self.r_wen = Signal()
        self.r_wslot = Signal(p.window_bits)
        self.r_wdata = Signal(_slot_layout(p))
        self.c_ram = Signal(_slot_layout(p))
        self.c_fwd, self.c_fwd_found = Signal(name="c_fwd"), Signal(name="c_fwd_found")
        self.c_fwd_map = Signal(pb)
        self.mem = memory.Memory(shape=_slot_layout(p), depth=window_slots(p), init=[])
        self.wr = self.mem.write_port()
        self.rd = self.mem.read_port()
