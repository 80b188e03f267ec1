"""The streaming importance analyzer of SEC (spec 3.1): s[j] = max over rows r of I[r, j]."""

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import score_beat_layout
from ..lib.bounds import above, at_most, outside_1_to
from .importance_buffer import (
    ImportanceBuffer,
    buffer_addr_bits,
    buffer_members,
    buffer_word_layout,
)
from .topk_engine import or_tree

__all__ = ["ImportanceAnalyzer", "Dataflow", "analyzer_config_layout", "ROWS_BITS",
           "ANALYZER_DONE_LATENCY"]

#: Width of the job's row count R (up to 65535 attention rows: heads x text tokens).
ROWS_BITS = 16

#: Cycles from the last input beat's transfer to ``done`` (the vector is complete in the buffer
#: from that cycle on: a read issued then returns final data).
ANALYZER_DONE_LATENCY = 3


class Dataflow(enum.Enum, shape=1):
    """The order of the attention scores on ``i_stream`` (spec 3.1)."""
    #: Row by row: per row, ceil(M/lanes) beats of consecutive tokens.
    SPATIAL = 0
    #: Column by column: per token, ceil(R/lanes) beats of consecutive rows.
    TEMPORAL = 1


def analyzer_config_layout(p):
    """The job's settings: ``M`` tokens (1 .. tokens), ``R`` rows (>= 1), the dataflow, and
    ``readout``: stream the importance vector out on ``o_stream`` after the job (1), or leave it
    in the buffer for the selector (0)."""
    return data.StructLayout({
        "M": unsigned(p.count_bits),
        "R": unsigned(ROWS_BITS),
        "mode": Dataflow,
        "readout": 1,
    })


def _max(a, b):
    return Mux(a > b, a, b)


def _max_of(m, values, width, name):
    """The max of a few ``values`` in one step: every pair compared at once, then an AND-OR
    select of the winner (the first of the largest), so the compares are not in series as in a
    tree of 2-input max units. Each compare and the result are signals of their own (nested
    expressions that use an operand twice would double at every level in the emitted Verilog)."""
    values = list(values)
    n = len(values)
    if n == 1:
        return values[0]
    ge = {}
    for i in range(n):
        for j in range(i + 1, n):
            ge[i, j] = Signal(name=f"{name}_ge{i}_{j}")
            m.d.comb += ge[i, j].eq(values[i] >= values[j])
    terms = []
    for i in range(n):
        wins = Cat(*(ge[i, j] if i < j else ~ge[j, i] for j in range(n) if j != i))
        terms.append(Mux(wins.all(), values[i], 0))
    node = Signal(width, name=name)
    m.d.comb += node.eq(or_tree(terms))
    return node


def _word_max(m, p, x, y, name):
    """The lane-wise max of the words ``x`` and ``y``, as a signal of its own."""
    node = Signal(buffer_word_layout(p), name=name)
    m.d.comb += node.eq(Cat(_max(x.scores[n], y.scores[n]) for n in range(p.lanes)))
    return node


def _max_pairs(m, values, width, prefix):
    """One step of the max reduction: a 2-input max of each pair of ``values``; returns the
    maxima. Each node is a signal of its own (``_max`` uses its operands twice, so nested
    expressions would double at every level in the emitted Verilog)."""
    values = list(values)
    nodes = []
    for i in range(0, len(values) - 1, 2):
        node = Signal(width, name=f"{prefix}_{i // 2}")
        m.d.comb += node.eq(_max(values[i], values[i + 1]))
        nodes.append(node)
    return nodes + ([values[-1]] if len(values) % 2 else [])


def _max_levels(m, values, width, levels, prefix):
    """``levels`` levels of a tree of 2-input max units (fewer if one value is left)."""
    for level in range(levels):
        values = _max_pairs(m, values, width, f"{prefix}_l{level}")
    return values


class _InputPosition:
    """The place of the analyzer's next input beat, and its valid lanes.

    Spatial: ``w`` is the beat's word, ``left`` the row's tokens from this beat on, ``rows`` the
    rows left. Temporal: ``rleft`` the column's rows from this beat on, ``w`` and ``lane`` the
    column's place in the buffer, ``tleft`` the tokens left. ``ok`` holds the valid lanes of the
    next beat (a thermometer code), kept a cycle ahead so that no counter comparison sits
    between the input and the max tree; ``ok_full`` is the code of a whole row (spatial,
    min(M, a) lanes) or column (temporal, min(R, a) lanes). The flags ``row_end`` (left <= a),
    ``col_end`` (rleft <= a), ``last_row`` (rows == 1) and ``last_col`` (tleft == 1) are kept a
    cycle ahead in the same way.
    """

    def __init__(self, p):
        self._lanes = a = p.lanes
        self.w = Signal(buffer_addr_bits(p))
        self.left = Signal(p.count_bits)
        self.rows = Signal(ROWS_BITS)
        self.rleft = Signal(ROWS_BITS)
        self.lane = Signal(range(a))
        self.tleft = Signal(p.count_bits)
        self.ok = Signal(a)
        self.ok_full = Signal(a)
        self.row_end, self.col_end = Signal(name="row_end"), Signal(name="col_end")
        self.last_row, self.last_col = Signal(name="last_row"), Signal(name="last_col")

    def _therm(self, count):
        return Cat(count > n for n in range(self._lanes))

    def start(self, m, c):
        """A job of configuration beat ``c`` begins: its first beat is next."""
        first = Mux(c.mode == Dataflow.TEMPORAL, c.R, c.M)
        m.d.sync += [
            self.w.eq(0), self.left.eq(c.M), self.rows.eq(c.R), self.rleft.eq(c.R),
            self.lane.eq(0), self.tleft.eq(c.M),
            self.ok.eq(self._therm(first)), self.ok_full.eq(self._therm(first)),
            self.row_end.eq(at_most(c.M, self._lanes)), self.col_end.eq(at_most(c.R, self._lanes)),
            self.last_row.eq(c.R == 1), self.last_col.eq(c.M == 1),
        ]

    def advance(self, m, temporal, M, R):
        """Step past the beat taken in this cycle, of a job of ``M`` tokens and ``R`` rows;
        returns whether it is the job's last beat."""
        a = self._lanes
        w, left, rows, rleft, lane, tleft = (
            self.w, self.left, self.rows, self.rleft, self.lane, self.tleft)
        ok, ok_full = self.ok, self.ok_full
        # The next beat's lanes and flags from this beat's counters (left - a > n is left > n + a).
        ahead = Cat(above(left, n + a) for n in range(a))
        rahead = Cat(above(rleft, n + a) for n in range(a))
        with m.If(~temporal):
            with m.If(self.row_end):
                m.d.sync += [w.eq(0), left.eq(M), rows.eq(rows - 1), ok.eq(ok_full),
                             self.row_end.eq(at_most(M, a)), self.last_row.eq(rows == 2)]
            with m.Else():
                m.d.sync += [w.eq(w + 1), left.eq(left - a), ok.eq(ahead),
                             self.row_end.eq(at_most(left, 2 * a))]
        with m.Else():
            with m.If(self.col_end):
                m.d.sync += [rleft.eq(R), tleft.eq(tleft - 1), ok.eq(ok_full),
                             self.col_end.eq(at_most(R, a)), self.last_col.eq(tleft == 2)]
                with m.If(lane == a - 1):
                    m.d.sync += [lane.eq(0), w.eq(w + 1)]
                with m.Else():
                    m.d.sync += lane.eq(lane + 1)
            with m.Else():
                m.d.sync += [rleft.eq(rleft - a), ok.eq(rahead),
                             self.col_end.eq(at_most(rleft, 2 * a))]
        return Mux(temporal, self.col_end & self.last_col, self.row_end & self.last_row)


def _column_max(m, p, start, s1_first, s2_valid, s2_part, s2_col_end, s2_lane, s2_flush):
    """The temporal dataflow's stage 3: the max of the beat's remaining tree values and of the
    column's running max, in one step (:func:`_max_of`); a finished column goes into its lane of
    the word register ``collect``, which is written to the buffer when the word is full or the
    job ends. ``start`` clears the word register. ``s1_first``: stage 1 holds a column's first
    beat (valid), so the running max restarts at 0 before that beat reaches stage 3 (the beat
    ahead of it, if any, has its stage 3 in the same cycle and no longer needs it). Returns the
    write (enable, data)."""
    a, sb = p.lanes, p.score_bits
    word = buffer_word_layout(p)
    colmax = Signal(sb)            # 0 once the beat behind is a column's first
    collect = Signal(word)
    cm = _max_of(m, [*s2_part, colmax], sb, "colmax_next")
    filled = Signal(word)
    m.d.comb += filled.eq(Cat(Mux(s2_lane[n], cm, collect.scores[n]) for n in range(a)))
    with m.If(s1_first):
        m.d.sync += colmax.eq(0)
    with m.Elif(s2_valid):
        m.d.sync += colmax.eq(cm)
    with m.If(s2_valid):
        with m.If(s2_col_end):
            with m.If(s2_flush):
                m.d.sync += collect.eq(0)
            with m.Else():
                m.d.sync += collect.eq(filled)
    with m.If(start):
        m.d.sync += collect.eq(0)
    return s2_valid & s2_col_end & s2_flush, filled


class ImportanceAnalyzer(FocusBlock):
    """Builds the importance vector ``s[j] = max_r I[r, j]`` in the importance buffer.

    Throughput one beat per cycle, sustained, in both dataflows and for any M and R: ``i_stream``
    is always ready during a job. The vector is complete :data:`ANALYZER_DONE_LATENCY` (3) cycles
    after the last beat's transfer, when ``done`` pulses; with ``readout`` it then leaves on
    ``o_stream`` as ceil(M/lanes) beats, one per cycle, the first the cycle after ``done``
    (padding lanes past M are 0). ``o_stream`` back-pressure only delays the readout; nothing is
    lost.

    A job: one ``cfg_stream`` beat (:func:`analyzer_config_layout`), then exactly the job's beats
    on ``i_stream``: ``R * ceil(M/lanes)`` (spatial) or ``M * ceil(R/lanes)`` (temporal), padding
    lanes ignored. M = 0, M > tokens or R = 0 raise ``error`` (held until the next configuration
    beat is accepted) and the analyzer stays idle; while ``error`` is high and no configuration
    beat waits, stray ``i_stream`` beats are accepted and dropped, so no producer hangs.

    Datapath. A buffer word is a beat. Spatial: each beat's word is read in the cycle of its
    transfer, the read data is registered the next cycle (nothing between the block RAM's output
    and that register), and the lane-wise max is written back the cycle after. When a row is one
    or two words long a beat reads its word before the previous beats' writes of it land (a read
    returns the old word), so the words written in the last two cycles are forwarded from
    registers instead (a one-hot select chosen in the cycle before; the beat's max with each
    candidate is computed at once, then selected). Temporal: the lanes of a beat
    are reduced over three cycles, by a max tree, one of its levels in the cycle of the transfer
    (after the lane mask) and two in the next; in the third, the rest and the column's running
    max (which restarts at 0 for a column's first beat a cycle ahead) in one step, all pairs
    compared at once and the largest selected; and the column's result goes into its lane of a
    word register that is written to the buffer when the word is full or the job ends (no
    read-modify-write at all). In both dataflows the last beat's word is written two cycles
    after its transfer.

    Handing over to the selector (SEC): built with ``buffer="external"`` the analyzer has no
    memory of its own, only the ``buffer`` port; SEC connects it and the selector's ``buffer``
    port to one two-client :class:`ImportanceBuffer`, runs the analyzer with ``readout=0``, gives
    the buffer to the selector at ``done`` and starts the selector with ``preloaded=1``. The
    vector is never copied.

    Parameters
    ----------
    params : FocusParams
        Uses ``tokens``, ``lanes``, ``score_bits``.
    buffer : str
        ``"internal"`` (a one-client :class:`ImportanceBuffer` inside) or ``"external"`` (a
        ``buffer`` port instead).

    Members
    -------
    cfg_stream : In(stream.Signature(analyzer_config_layout(params)))
    i_stream : In(stream.Signature(score_beat_layout(params)))
        Attention scores, ``lanes`` per beat.
    o_stream : Out(stream.Signature(score_beat_layout(params)))
        The importance vector (jobs with ``readout=1`` only); lane i of beat b is s[b*lanes + i].
    buffer : Out(BufferPortSignature(params))
        Only with ``buffer="external"``.
    done : Out(1)
        Pulses once per job when the vector is complete in the buffer.
    error : Out(1)
        The last configuration beat was rejected.
    busy : Out(1)
        A job is in progress (until the last readout beat's transfer; without readout, until
        the cycle after ``done``).
    """

    def __init__(self, params=None, *, buffer="internal"):
        self._buffer = buffer
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(analyzer_config_layout(p))),
            "i_stream": In(stream.Signature(score_beat_layout(p))),
            "o_stream": Out(stream.Signature(score_beat_layout(p))),
            "done": Out(1),
            "error": Out(1),
            "busy": Out(1),
            **buffer_members(p, buffer),
        })

    def elaborate(self, platform):
        p = self._params
        a, sb = p.lanes, p.score_bits
        m = Module()
        cfg, i, o = self.cfg_stream, self.i_stream, self.o_stream
        if self._buffer == "internal":
            m.submodules.buffer = buf = ImportanceBuffer(p)
            port = buf.clients[0]
        else:
            port = self.buffer

        word = buffer_word_layout(p)
        M = Signal(p.count_bits)
        R = Signal(ROWS_BITS)
        temporal = Signal()
        readout = Signal()

        pos = _InputPosition(p)

        # Stage 1: the accepted beat.
        s1_valid = Signal()
        s1_addr = Signal(buffer_addr_bits(p))
        s1_first = Signal()        # spatial: first row; temporal: first beat of the column
        s1_beat = Signal(word)     # spatial: the masked beat
        # Temporal: the beat's max tree, one level in the cycle of the transfer (after the lane
        # mask), two in stage 2, the rest with the column's running max in stage 3, in one step
        # (_column_max).
        s1_part = [Signal(sb, name=f"s1_part{n}") for n in range(-(-a // 2))]
        s2_part = [Signal(sb, name=f"s2_part{n}") for n in range(-(-a // 8))]
        s1_col_end = Signal()      # temporal: last beat of the column
        s1_lane = Signal(range(a))
        s1_flush = Signal()        # temporal: write the word after this column
        # Stage 2: the read data registered (the block RAM's output delay left no time for the
        # max and the write in the same cycle), and the temporal word to write.
        s2_valid = Signal()
        s2_addr = Signal(buffer_addr_bits(p))
        s2_beat = Signal(word)
        s2_rd = Signal(word)
        # Spatial, one-hot (none for a first row, whose word starts from 0): the old word is the
        # read data, or the word written in the cycle before stage 3, or two cycles before (reads
        # do not see those writes).
        s2_use_rd = Signal()
        s2_use_w1 = Signal()
        s2_use_w2 = Signal()
        s2_use_beat = Signal()
        s2_col_end = Signal()
        s2_lane = Signal(a)        # temporal: the column's lane, one-hot
        s2_flush = Signal()
        # The spatial writes of the last two cycles (for forwarding).
        w1_valid = Signal()
        w1_addr = Signal(buffer_addr_bits(p))
        w1_data = Signal(word)
        w2_data = Signal(word)
        rd_valid = Signal()        # readout: r_data holds a word not yet sent
        fsm, more, advance = self._sequence(m, pos, M, R, temporal, readout, rd_valid)

        idle, accum, reading = fsm.ongoing("IDLE"), fsm.ongoing("ACCUM"), fsm.ongoing("READOUT")
        m.d.comb += [
            self.busy.eq(~idle),
            cfg.ready.eq(idle),
            i.ready.eq(Mux(idle, self.error & ~cfg.valid, accum)),
            o.valid.eq(reading & rd_valid), o.payload.eq(port.r_data),
        ]
        # Stage 1 load. The spatial read of the beat's word is issued in the same cycle.
        take = i.valid & accum
        # Each word-wide signal is driven by one Cat, not lane by lane: per-lane drivers make an
        # event-driven simulator (Icarus) re-evaluate every reader once per lane.
        masked = Signal(word)
        m.d.comb += masked.eq(Cat(Mux(pos.ok[n], i.payload.scores[n], 0) for n in range(a)))
        m.d.comb += [port.r_addr.eq(pos.w),
                     port.r_en.eq(Mux(accum, take & ~temporal, reading & advance & more))]
        part = _max_levels(m, (masked.scores[n] for n in range(a)), sb, 1, "max_in")
        assert len(part) == len(s1_part)
        m.d.sync += s1_valid.eq(take)
        with m.If(take):
            m.d.sync += [
                s1_addr.eq(pos.w),
                s1_first.eq(Mux(temporal, pos.rleft == R, pos.rows == R)),
                s1_beat.eq(masked),
                [r.eq(v) for r, v in zip(s1_part, part, strict=True)],
                s1_col_end.eq(pos.col_end),
                s1_lane.eq(pos.lane),
                s1_flush.eq((pos.lane == a - 1) | pos.last_col),
            ]

        # Stage 2: register the read data (spatial; nothing between the block RAM's output and
        # the register), or the next levels of the beat's max tree (temporal).
        m.d.sync += s2_valid.eq(s1_valid)
        w_en = Signal()
        fwd1 = s2_valid & ~temporal & (s2_addr == s1_addr)
        fwd2 = w1_valid & (w1_addr == s1_addr)
        with m.If(s1_valid):
            m.d.sync += [
                s2_addr.eq(s1_addr), s2_beat.eq(s1_beat),
                s2_rd.eq(port.r_data),
                s2_use_w1.eq(~s1_first & fwd1),
                s2_use_w2.eq(~s1_first & ~fwd1 & fwd2),
                s2_use_rd.eq(~s1_first & ~fwd1 & ~fwd2),
                s2_use_beat.eq(s1_first),
            ]
        part2 = _max_levels(m, s1_part, sb, 2, "max_s1")
        with m.If(s1_valid):
            m.d.sync += [[r.eq(v) for r, v in zip(s2_part, part2, strict=True)],
                         s2_col_end.eq(s1_col_end), s2_flush.eq(s1_flush),
                         s2_lane.eq(Cat(s1_lane == n for n in range(a)))]

        # Stage 3: write back (spatial: the max of the beat with the old word, which is the read
        # data or one of the last two writes: the beat's max with each of the three, computed at
        # once from registers, then an AND-OR select, so the select is not before the compares).
        new = Signal(word)
        m.d.comb += new.eq(Mux(s2_use_rd, _word_max(m, p, s2_rd, s2_beat, "new_rd"), 0)
                           | Mux(s2_use_w1, _word_max(m, p, w1_data, s2_beat, "new_w1"), 0)
                           | Mux(s2_use_w2, _word_max(m, p, w2_data, s2_beat, "new_w2"), 0)
                           | Mux(s2_use_beat, s2_beat, 0))
        t_en, t_data = _column_max(m, p, cfg.valid & cfg.ready, s1_valid & temporal & s1_first,
                                   s2_valid & temporal, s2_part, s2_col_end, s2_lane, s2_flush)
        m.d.comb += [
            w_en.eq(Mux(temporal, t_en, s2_valid)),
            port.w_addr.eq(s2_addr), port.w_data.eq(Mux(temporal, t_data, new)),
            port.w_en.eq(w_en),
        ]
        m.d.sync += [w1_valid.eq(w_en & ~temporal), w1_addr.eq(s2_addr), w1_data.eq(new),
                     w2_data.eq(w1_data)]
        return m

    def _sequence(self, m, pos, M, R, temporal, readout, rd_valid):
        """The job's states: IDLE (a configuration beat loads the job's registers ``M``, ``R``,
        ``temporal`` and ``readout`` and the input position ``pos``; a bad one raises
        ``error``), ACCUM (the input beats), DRAIN and FLUSH (the pipeline writes the last word;
        ``done``), READOUT (the vector on ``o_stream``, when asked; ``rd_valid`` says that the
        read data holds a word not yet sent). Returns ``(fsm, more, advance)``: ``more``, a word
        is left to read out; ``advance``, the output register can take one."""
        p = self._params
        a = p.lanes
        cfg, i, o = self.cfg_stream, self.i_stream, self.o_stream
        more = readout & (pos.left != 0)
        advance = ~rd_valid | o.ready

        # Every combinational output is assigned unconditionally, from the state: under Icarus's
        # SystemVerilog mode, a conditional process whose inputs keep their initial values after
        # reset is never evaluated and would leave its outputs at X.
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(cfg.valid):
                    c = cfg.payload
                    bad = outside_1_to(c.M, p.tokens) | (c.R == 0)
                    # The job's registers load whatever ``bad`` is (unused after a rejected
                    # beat): the compares stay off their enables.
                    m.d.sync += [
                        self.error.eq(bad),
                        M.eq(c.M), R.eq(c.R), temporal.eq(c.mode == Dataflow.TEMPORAL),
                        readout.eq(c.readout),
                    ]
                    pos.start(m, c)
                    with m.If(~bad):
                        m.next = "ACCUM"
            with m.State("ACCUM"):
                with m.If(i.valid):
                    with m.If(pos.advance(m, temporal, M, R)):
                        m.next = "DRAIN"
            with m.State("DRAIN"):
                # Stage 1 holds the last beat this cycle; stage 2 writes its word the next.
                m.next = "FLUSH"
            with m.State("FLUSH"):
                m.d.sync += [self.done.eq(1), pos.w.eq(0), pos.left.eq(M)]
                m.next = "READOUT"
            with m.State("READOUT"):
                m.d.sync += self.done.eq(0)
                with m.If(advance):
                    m.d.sync += rd_valid.eq(more)
                    with m.If(more):
                        m.d.sync += [pos.w.eq(pos.w + 1),
                                     pos.left.eq(Mux(above(pos.left, a), pos.left - a, 0))]
                    with m.Else():
                        m.next = "IDLE"
        return fsm, more, advance
