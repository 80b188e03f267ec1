"""The importance buffer of SEC (spec 3.1, 3.2): the importance vector, one beat per word.

The buffer is the only copy of the importance vector. The analyzer builds it in place
(read-modify-write, one word per cycle), and the top-k selector sweeps it as often as its algorithm
needs. Neither block owns it: each has a :class:`BufferPortSignature` port (``buffer``), and
:class:`ImportanceBuffer` gives the memory to one client at a time (``owner``). A block built with
``buffer="internal"`` (the default, used on its own and in the tests) holds a one-client buffer of
its own instead of exposing the port.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import score_beat_layout
from ..params import ceil_log2

__all__ = ["buffer_depth", "buffer_addr_bits", "buffer_word_layout", "BufferPortSignature",
           "buffer_members", "ImportanceBuffer", "BufferSweeper"]


def buffer_depth(p):
    """Words of the buffer: ceil(tokens / lanes) (one word holds ``lanes`` scores)."""
    return -(-p.tokens // p.lanes)


def buffer_addr_bits(p):
    """Bits of a word address (0 when the buffer is one word deep)."""
    return ceil_log2(buffer_depth(p))


def buffer_word_layout(p):
    """A word is one score beat: lane i of word w is token w*lanes + i."""
    return score_beat_layout(p)


class BufferPortSignature(wiring.Signature):
    """One client's access to the importance buffer, seen from the client (the buffer flips it).

    A synchronous read port (``r_data`` is valid the cycle after ``r_addr`` is presented with
    ``r_en``, and holds its value while ``r_en`` is low) and a synchronous write port. A read of
    a word written in the same cycle returns the old word (no transparency: block RAM).

    Members
    -------
    r_addr : Out(buffer_addr_bits(p))
    r_en : Out(1)
    r_data : In(buffer_word_layout(p))
    w_addr : Out(buffer_addr_bits(p))
    w_en : Out(1)
    w_data : Out(buffer_word_layout(p))
    """

    def __init__(self, p):
        addr = buffer_addr_bits(p)
        word = buffer_word_layout(p)
        super().__init__({
            "r_addr": Out(addr), "r_en": Out(1), "r_data": In(word),
            "w_addr": Out(addr), "w_en": Out(1), "w_data": Out(word),
        })


def buffer_members(p, buffer):
    """The members a client block built with ``buffer=buffer`` adds to its signature: none for
    ``"internal"`` (it holds a one-client :class:`ImportanceBuffer`), ``buffer:
    Out(BufferPortSignature(p))`` for ``"external"``. Raises ``ValueError`` for any other value.
    """
    if buffer not in ("internal", "external"):
        raise ValueError(f"buffer = {buffer!r} is not allowed: it must be 'internal' or "
                         "'external'")
    return {"buffer": Out(BufferPortSignature(p))} if buffer == "external" else {}


class ImportanceBuffer(FocusBlock):
    """``ceil(tokens/lanes)`` words of ``lanes * score_bits`` bits, in one ``lib.memory`` with one
    synchronous read port and one write port, shared by ``clients`` clients.

    Read latency one cycle; one read and one write per cycle. The memory is marked
    ``ram_style = "block"`` and has exactly one read and one write port without reset or
    transparency, so Yosys maps it to block RAM (``SB_RAM40_4K`` on iCE40, ``DP16KD`` on ECP5)
    rather than to flip-flops or LUT RAM. The word is as wide as a beat (the analyzer reads and
    writes a whole beat per cycle), so the RAM count is set by the width: ceil(lanes*score_bits /
    RAM width) RAMs, each as deep as the buffer needs.

    How SEC uses it without a copy: one buffer with ``clients=2``; the analyzer (built with
    ``buffer="external"``) is client 0, the selector (likewise) client 1. ``owner`` is 0 while the
    analyzer works and 1 once it reports ``done``; the selector then runs with ``preloaded=1`` on
    its configuration beat and reads the vector where the analyzer left it. Two buffers used
    alternately would let the next analyzer job overlap the selector (the paper hides the sorter
    behind the next QK^T).

    Parameters
    ----------
    params : FocusParams
        Uses ``tokens``, ``lanes`` and ``score_bits``.
    clients : int
        Number of client ports (1 or more).

    Members
    -------
    clients : In(BufferPortSignature(params)).array(clients)
        The client ports; only the owner's requests reach the memory, every client sees
        ``r_data``.
    owner : In(range(clients))
        The client that owns the memory (only present when ``clients > 1``).
    """

    def __init__(self, params, *, clients=1):
        if not isinstance(clients, int) or clients < 1:
            raise ValueError(f"clients must be a positive integer, not {clients!r}")
        self._n = clients
        super().__init__(params, lambda p: {
            "clients": In(BufferPortSignature(p)).array(clients),
            **({"owner": In(range(clients))} if clients > 1 else {}),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        m.submodules.mem = mem = memory.Memory(
            shape=buffer_word_layout(p), depth=buffer_depth(p), init=[],
            attrs={"ram_style": "block"})
        rd = mem.read_port()
        wr = mem.write_port()
        ports = list(self.clients)
        owner = self.owner if self._n > 1 else 0

        def pick(name):
            value = getattr(ports[0], name)
            for n in range(1, self._n):
                value = Mux(owner == n, getattr(ports[n], name), value)
            return value

        m.d.comb += [
            rd.addr.eq(pick("r_addr")), rd.en.eq(pick("r_en")),
            wr.addr.eq(pick("w_addr")), wr.en.eq(pick("w_en")), wr.data.eq(pick("w_data")),
        ]
        for port in ports:
            m.d.comb += port.r_data.eq(rd.data)
        return m


class BufferSweeper(FocusBlock):
    """Reads the first ceil(M/lanes) words of the buffer in order, once per sweep, as many sweeps
    as the user asks for, one word per cycle when the user keeps up.

    Two stages: the buffer's read port (its data register ``r_data``), then a word register
    (``w_data``) that the user reads, so the block RAM's output delay never shares a cycle with
    the user's logic. The word in ``w_data`` is described by the ``w_*`` members while
    ``w_valid`` is high and stays there until the user takes it (``take``); the word behind it
    waits in the read port (which is then not enabled). Each stage moves up when the one after
    it is free or being emptied, so a user that takes every cycle gets one word per cycle, and
    a word taken at cycle t was read at t - 2 at the latest (2 cycles from ``start`` to the
    first ``w_valid``, when the word is available). A word is read only once it is available:
    ``w < avail`` words have been written, or ``all_avail``; so a sweep can follow the words
    being loaded, two cycles behind.

    Used by both top-k engines; it has no stream ports.

    Members
    -------
    start : In(1)
        Begin the first sweep (``M`` is sampled). Ignored while busy.
    M : In(count_bits)
        Tokens of the job, >= 1.
    final : In(1)
        Combinational, from the user: the sweep now being issued is the last one.
    avail : In(buffer_addr_bits + 1)
        Words written so far (the user's loader).
    all_avail : In(1)
        Every word is in the buffer.
    r_addr, r_en : Out; r_data : In
        To and from the buffer's read port.
    w_valid : Out(1)
        ``w_data`` holds a word that has not been taken.
    w_data : Out(buffer_word_layout(p))
        The word (a register).
    w_base : Out(count_bits)
        Index of the word's lane 0 (w * lanes).
    w_count : Out(range(lanes + 1))
        Valid lanes in the word, min(lanes, M - w_base) (1 .. lanes).
    w_lanes : Out(lanes)
        The same as a thermometer code: bit n is ``n < w_count``.
    w_first, w_last : Out(1)
        First and last word of its sweep.
    w_final : Out(1)
        The word belongs to the final sweep.
    take : In(1)
        The user takes the word this cycle (only while ``w_valid``).
    wrap : Out(1)
        Pulse: the last word of a sweep is read this cycle (the user updates ``final`` for the
        next sweep from it).
    busy : Out(1)
        Sweeps remain to be issued.
    """

    def __init__(self, params):
        super().__init__(params, lambda p: {
            "start": In(1), "M": In(p.count_bits), "final": In(1),
            "avail": In(buffer_addr_bits(p) + 1), "all_avail": In(1),
            "r_addr": Out(buffer_addr_bits(p)), "r_en": Out(1),
            "r_data": In(buffer_word_layout(p)),
            "w_valid": Out(1), "w_data": Out(buffer_word_layout(p)),
            "w_base": Out(p.count_bits), "w_count": Out(range(p.lanes + 1)),
            "w_lanes": Out(p.lanes),
            "w_first": Out(1), "w_last": Out(1), "w_final": Out(1),
            "take": In(1), "wrap": Out(1), "busy": Out(1),
        })

    def elaborate(self, platform):
        p = self._params
        a = p.lanes
        m = Module()
        M = Signal(p.count_bits)
        addr = Signal(buffer_addr_bits(p) + 1)      # next word to read
        base = Signal(p.count_bits + 1)             # addr * lanes
        active = Signal()
        is_last = Signal()
        issue = Signal()
        # Stage 1: the word in the read port's data register, and what it is.
        r_valid = Signal()
        r_base = Signal(p.count_bits)
        r_count = Signal(range(a + 1))
        r_first = Signal()
        r_last = Signal()
        r_final = Signal()
        # Stage 2 (the w_* registers) loads when it is empty or its word is taken.
        load = Signal()
        m.d.comb += [
            load.eq(r_valid & (~self.w_valid | self.take)),
            is_last.eq(base + a >= M),
            issue.eq(active & (~r_valid | load) & (self.all_avail | (addr < self.avail))),
            self.r_addr.eq(addr), self.r_en.eq(issue),
            self.wrap.eq(issue & is_last),
            self.busy.eq(active),
        ]
        with m.If(issue):
            m.d.sync += [
                r_valid.eq(1), r_base.eq(base), r_count.eq(Mux(is_last, M - base, a)),
                r_first.eq(addr == 0), r_last.eq(is_last), r_final.eq(self.final),
            ]
            with m.If(is_last):
                m.d.sync += [addr.eq(0), base.eq(0)]
                with m.If(self.final):
                    m.d.sync += active.eq(0)
            with m.Else():
                m.d.sync += [addr.eq(addr + 1), base.eq(base + a)]
        with m.Elif(load):
            m.d.sync += r_valid.eq(0)
        with m.If(load):
            m.d.sync += [
                self.w_valid.eq(1), self.w_data.eq(self.r_data), self.w_base.eq(r_base),
                self.w_count.eq(r_count), self.w_lanes.eq(Cat(r_count > n for n in range(a))),
                self.w_first.eq(r_first), self.w_last.eq(r_last), self.w_final.eq(r_final),
            ]
        with m.Elif(self.take):
            m.d.sync += self.w_valid.eq(0)
        # Idle, the sweeper has addr = base = 0 (the final sweep's last read wrapped them) and
        # both stages empty (the user took every word); ``start`` sets only ``active``.
        with m.If(~active):
            m.d.sync += M.eq(self.M)
            with m.If(self.start):
                m.d.sync += active.eq(1)
        return m
