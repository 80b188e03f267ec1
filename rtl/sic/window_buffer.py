"""The SIC window buffer (the paper's layouter): recent tokens addressed by position (spec 4.2)."""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, memory
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock, resolve_params
from .similarity_comparator import vector_layout

__all__ = ["WindowBuffer", "window_entry_layout", "window_slots"]


def window_slots(p):
    """Slots of the buffer: ``2**window_bits``, the power of two >= ``window``."""
    return 1 << p.window_bits


def window_entry_layout(p):
    """One slot: the token's vector, its squared norm (computed once, at entry) and the high bits
    of its position (the tag; the low ``window_bits`` bits are the slot address)."""
    return data.StructLayout({
        "vec": vector_layout(p),
        "norm": unsigned(p.norm_bits),
        "tag": unsigned(p.position_bits - p.window_bits),
    })


class WindowBuffer(FocusBlock):
    """The last tokens of the current job, each with its vector, norm and position, addressed by
    position, with ``lanes`` candidate lookups per cycle.

    Organisation. A token at position p is written to slot ``p mod 2**window_bits`` with the high
    bits of p as its tag. Candidate q = p - offset (0 < offset < window) is found in slot
    ``q mod 2**window_bits`` and exists when the slot's tag equals q's high bits and the slot was
    written in this job (a ``live`` flip-flop per slot, cleared by ``clear`` in one cycle). Because
    positions strictly increase, a slot can only hold q itself or an older position, never a later
    one, so the tag decides. Pruned positions need no bookkeeping: their slots simply keep older
    tags. Whether q is in the current *tile* (q >= the tile's first position) is the caller's
    ``want`` bit.

    Ports. One :class:`amaranth.lib.memory.Memory` of ``2**window_bits`` entries with one write
    port and ``lanes`` synchronous read ports, so all ``lanes`` candidates of a token (all 7 with
    ``lanes = 7``) are read in the same cycle, for any FS, HS and any pruning pattern, with no bank
    conflicts and no stall. Read ports are not transparent: a slot written in the cycle it is read
    returns its old contents, which is what a lookup issued for an earlier token needs.

    Compared with the paper's layout (8 banks of window/8 entries selected by the (frame, row,
    column) parity of the position, so that the 2x2x2 block is one read per bank): that layout
    needs each position's frame, row and column (a division by the runtime strides), and it is
    conflict-free only when the offsets ``{0, 1} + {0, HS} + {0, FS}`` tile the integers (they do
    not for HS = 2, FS = 5, for example); this buffer is conflict-free for every geometry and
    pruning pattern. Its storage is one copy per read port, ``lanes`` x window entries: synthesis
    replicates a memory per read port (Yosys ``memory_libmap``). With one comparator (every
    preset but the board's; 7 cycles per token) that is one copy, the paper's storage.

    Seven reads per cycle (7 comparators) without 7 copies: the candidates of position p are
    p - 1 and three pairs of consecutive positions {b - 1, b}, b = p - HS, p - FS, p - FS - HS.
    Two banks by position parity serve a pair with one read of each bank, whatever FS, HS and the
    pruning, so 4 read ports per bank of window/2 entries (3 with p - 1 taken from a register of
    the last token written, which is p - 1 whenever p - 1 exists): 4 (3) windows of storage
    instead of 7. Finer banks by position alone cannot do better for every stride (p - HS and
    p - FS share a bank of B whenever FS = HS mod B). That is the ASIC answer (SRAM area goes
    with bits and ports). On FPGA block RAM, copies are the right answer: a copy costs
    ceil(width / 36) block RAMs at any depth up to 512 (the ECP5's 512 x 36 mode; the window is
    256 deep), so halving the depth saves nothing, and the banks need as many or more read
    ports in all (8, or 6 with the register, against 7 or 6 copies), plus the multiplexers that
    steer each pair's reads to their lanes. This buffer keeps the copies (the presets need one).

    A second flip-flop per slot keeps the writer's ``w_nonzero`` (the vector is not zero, so
    its norm is not 0) and is read like ``live`` (``nonzero``): the comparators' zero skip then
    needs no wide test of ``ny`` after the memory's read path, which limited the board block
    matcher's clock on the ECP5.

    Latency 2, two stages moving together with ``r_en``: the memory's read (stage 1), then its
    read data registered straight out of the memory, before the tag compare (stage 2: a block
    RAM's read data must go straight into a register on the ECP5). ``hit``, ``y``, ``ny``,
    ``nonzero`` and ``slot`` give the lookups issued at the ``r_en`` cycle before the last one
    (two cycles earlier when ``r_en`` stays high), and hold while ``r_en`` is low (the caller
    stalls by holding ``r_en`` low; it issues a lookup, wanted or not, at every cycle in which
    its pipeline moves). A lookup reads the memory in its issue cycle, as with one stage, so it
    sees every write of an earlier cycle and nothing needs forwarding. The per-slot ``live``
    and ``nonzero`` bits are sampled in the issue cycle too, in two steps: stage 1 registers
    the group of ``2**(window_bits // 2)`` bits that holds the slot's (a narrow multiplexer
    after the address's subtraction, where one 256:1 multiplexer limited the board matcher on
    the ECP5), stage 2 the slot's bit among them.

    Parameters
    ----------
    params : FocusParams
        Uses ``dim``, ``elem_bits``, ``window`` and ``position_bits``.
    lanes : int
        Candidate lookups per cycle (the block matcher uses ``params.comparators``).

    Members
    -------
    clear : In(1)
        Forget every slot (the start of a job). Takes effect at the next clock edge.
    w_en, w_pos, w_vec, w_norm, w_nonzero : In
        Write the token at position ``w_pos`` (with its vector, its squared norm, and whether the
        vector is not zero: the caller's, tested once per token).
    r_en : In(1)
        Issue the lookups below and move the earlier ones on (their results appear after the
        next ``r_en`` cycle).
    r_pos : In(position_bits)
        The position p of the token whose candidates are looked up.
    r_offset : In(ArrayLayout(unsigned(window_bits), lanes))
        Lane j looks up position ``r_pos - r_offset[j]``.
    r_want : In(lanes)
        Lane j's lookup counts only when its bit is set (the candidate exists in the tile; the
        caller guarantees ``r_pos - r_offset[j] >= 0`` then).
    hit : Out(lanes)
        Lane j found its candidate (wanted, written in this job, tag equal).
    y : Out(ArrayLayout(vector_layout, lanes))
        The candidates' vectors (meaningless where ``hit`` is 0).
    ny : Out(ArrayLayout(unsigned(norm_bits), lanes))
        The candidates' squared norms, 0 where ``hit`` is 0: a missing candidate looks like a zero
        vector, which the comparator skips.
    nonzero : Out(lanes)
        Lane j's ``ny`` is not 0: it found its candidate and that vector is not zero.
    slot : Out(ArrayLayout(unsigned(window_bits), lanes))
        The slot of each lookup (where the block matcher keeps the token's unique index).
    """

    def __init__(self, params=None, lanes=None):
        p = resolve_params(params)
        self._lanes = lanes = p.comparators if lanes is None else lanes
        if not 1 <= lanes <= 7:
            raise ValueError(f"lanes = {lanes} is out of range: it must be in [1, 7]")
        slot = unsigned(p.window_bits)
        super().__init__(p, {
            "clear": In(1),
            "w_en": In(1),
            "w_pos": In(p.position_bits),
            "w_vec": In(vector_layout(p)),
            "w_norm": In(p.norm_bits),
            "w_nonzero": In(1),
            "r_en": In(1),
            "r_pos": In(p.position_bits),
            "r_offset": In(data.ArrayLayout(slot, lanes)),
            "r_want": In(lanes),
            "hit": Out(lanes),
            "y": Out(data.ArrayLayout(vector_layout(p), lanes)),
            "ny": Out(data.ArrayLayout(unsigned(p.norm_bits), lanes)),
            "nonzero": Out(lanes),
            "slot": Out(data.ArrayLayout(slot, lanes)),
        })

    @property
    def lanes(self):
        return self._lanes

    def elaborate(self, platform):
        p = self._params
        m = Module()
        wb = p.window_bits

        m.submodules.mem = mem = memory.Memory(shape=window_entry_layout(p),
                                               depth=window_slots(p), init=[])
        wp = mem.write_port()
        m.d.comb += [
            wp.en.eq(self.w_en),
            wp.addr.eq(self.w_pos[:wb]),
            wp.data.vec.eq(self.w_vec),
            wp.data.norm.eq(self.w_norm),
            wp.data.tag.eq(self.w_pos[wb:]),
        ]

        # One flip-flop per slot: written in this job. Cleared in one cycle at the job's start, so
        # a slot left by an earlier job (whose positions started again from 0) never matches.
        live = Signal(window_slots(p))
        with m.If(self.clear):
            m.d.sync += live.eq(0)
        with m.Elif(self.w_en):
            m.d.sync += live.bit_select(self.w_pos[:wb], 1).eq(1)
        # And one per slot: its vector is not zero (``w_nonzero``). Read like ``live``, so a
        # lookup's zero test is a registered bit, not a wide test of the norm after the memory.
        nonzero = Signal(window_slots(p))
        with m.If(self.w_en):
            m.d.sync += nonzero.bit_select(self.w_pos[:wb], 1).eq(self.w_nonzero)

        # The per-slot bits are looked up in two steps, one per stage: the issue cycle takes the
        # 2**low bits of the slot's group of slots (a 4:1 multiplexer after the address's
        # subtraction, which is in the same cycle), the next stage the slot's bit among them
        # (from registers). With the split at the middle (a 16:1 multiplexer after the
        # subtraction at the board preset) this was the ECP5 limit of the block matcher.
        low = max(0, wb - 2)

        def pick(bits, part_slot):
            return bits if low == 0 else bits.bit_select(part_slot[:low], 1)

        for j in range(self._lanes):
            rp = mem.read_port()
            q = Signal(p.position_bits, name=f"q{j}")
            want = Signal(name=f"want{j}")
            tag = Signal(p.position_bits - wb, name=f"tag{j}")
            slot = Signal(wb, name=f"slot{j}")
            alive = Signal(1 << low, name=f"alive{j}")
            filled = Signal(1 << low, name=f"filled{j}")
            m.d.comb += [
                q.eq(self.r_pos - self.r_offset[j]),
                rp.addr.eq(q[:wb]),
                rp.en.eq(self.r_en),
            ]
            # Stage 1: the memory reads; the lookup's side data beside it.
            with m.If(self.r_en):
                m.d.sync += [
                    want.eq(self.r_want[j]),
                    tag.eq(q[wb:]),
                    slot.eq(q[:wb]),
                    alive.eq(live.word_select(q[low:wb], 1 << low)),
                    filled.eq(nonzero.word_select(q[low:wb], 1 << low)),
                ]
            # Stage 2: the read data registered straight out of the memory (on the ECP5 a block
            # RAM's data leaves 5.8 ns after the clock: no logic after it in the same cycle),
            # then the tag compare. The read is issued when it was, so it sees every write up to
            # the cycle before its issue, as before: no write needs forwarding.
            r_data = Signal(window_entry_layout(p), name=f"r_data{j}")
            r_want = Signal(name=f"r_want{j}")
            r_tag = Signal.like(tag, name=f"r_tag{j}")
            r_slot = Signal.like(slot, name=f"r_slot{j}")
            r_alive = Signal(name=f"r_alive{j}")
            r_filled = Signal(name=f"r_filled{j}")
            with m.If(self.r_en):
                m.d.sync += [
                    r_data.eq(rp.data),
                    r_want.eq(want),
                    r_tag.eq(tag),
                    r_slot.eq(slot),
                    r_alive.eq(pick(alive, slot)),
                    r_filled.eq(pick(filled, slot)),
                ]
            hit = r_want & r_alive & (r_data.tag == r_tag)
            m.d.comb += [
                self.hit[j].eq(hit),
                self.y[j].eq(r_data.vec),
                self.ny[j].eq(hit.replicate(p.norm_bits) & r_data.norm),
                self.nonzero[j].eq(hit & r_filled),
                self.slot[j].eq(r_slot),
            ]
        return m
