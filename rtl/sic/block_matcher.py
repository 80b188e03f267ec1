"""The SIC block matcher (spec 4.2): 2x2x2 block matching, similarity map and unique vectors."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, ResetInserter, Signal, signed, unsigned
from amaranth.lib import data, fifo, memory, stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..lib.clock_gate import ICG_CELL
from ..params import ceil_log2
from .similarity_comparator import COMPARATOR_LATENCY, SimilarityComparator, vector_layout
from .vector_norm import VectorNorm
from .window_buffer import WindowBuffer, window_slots

__all__ = ["BlockMatcher", "match_input_layout", "match_config_layout", "match_output_layout",
           "matcher_rounds", "matcher_latency", "tile_index_bits", "mean_sum_bits"]

#: Candidates per token (c = 1..7 of the 2x2x2 block).
CANDIDATES = 7


def matcher_rounds(p):
    """Cycles a token spends issuing its candidates: ceil(7 / comparators)."""
    return -(-CANDIDATES // p.comparators)


def _tree_levels(p):
    return ceil_log2(p.comparators)


#: Stages from the comparators' outputs to the map lookup, for every comparator count: the tree
#: of "better" tests (ceil(log2(comparators)) levels), the running best across rounds (when there
#: are several), and delay stages up to this.
SELECT_STAGES = 4


def _pad_stages(p):
    return SELECT_STAGES - _tree_levels(p) - (1 if matcher_rounds(p) > 1 else 0)


def matcher_latency(p):
    """Cycles from a token's input transfer to its map beat's transfer, inclusive, with no stalls
    and ``first``, when it does not wait for earlier tokens: 12 for every comparator count (input
    register, window read, read-data register, 3 comparator stages, 4 selection stages, map
    lookup, output register). A job of S tokens takes ``S * rounds + 12`` cycles
    (:func:`golden.cycles.block_match_cycles`)."""
    return 3 + COMPARATOR_LATENCY + SELECT_STAGES + 2


def tile_index_bits(p):
    """Bits of a tile-local unique index or token index, 0 .. tile-1."""
    return max(1, ceil_log2(p.tile))


def mean_sum_bits(p):
    """Signed bits of a group's element sum: |sum| <= tile * 2**(elem_bits-1)."""
    return p.elem_bits + p.tile.bit_length()


def match_input_layout(p):
    """One token: its sub-vector, its original position (strictly increasing within the job) and
    ``last`` on the job's final token."""
    return data.StructLayout({
        "vector": vector_layout(p),
        "position": unsigned(p.position_bits),
        "last": 1,
    })


def match_config_layout(p):
    """The job's settings: FS and HS (FS + HS + 1 must be < ``window``), the layer (selects theta_q
    from the threshold table, < ``layers``), and the representative: ``mean`` = 0 for ``first``,
    1 for ``mean``."""
    return data.StructLayout({
        "frame_stride": unsigned(p.position_bits),
        "row_stride": unsigned(p.position_bits),
        "layer": unsigned(p.layer_bits),
        "mean": 1,
    })


def match_output_layout(p):
    """One output beat.

    - ``token`` = 1: the map entry of the next token in input order, ``map``; ``vector`` is the
      token's own vector. With ``first``, ``unique`` is also 1 when the token opened a new group:
      then ``vector`` is unique vector number ``map``.
    - ``token`` = 0, ``unique`` = 1 (``mean`` only, after each tile's tokens): unique vector number
      ``map``, the rounded mean of its group.
    - ``last``: the job's final beat.
    """
    return data.StructLayout({
        "map": unsigned(p.position_bits),
        "vector": vector_layout(p),
        "token": 1,
        "unique": 1,
        "last": 1,
    })


class BlockMatcher(FocusBlock):
    """Block-matches a job's tokens in 2x2x2 (frame, row, column) neighbourhoods and streams the
    similarity map and the unique vectors, exactly as :func:`golden.block_match`.

    Throughput: one token per ``rounds = ceil(7 / comparators)`` cycles in steady state (1 cycle
    with 7 comparators, 7 with one), with ``first``: a job of S tokens takes ``rounds * S + 12``
    cycles. Latency: :func:`matcher_latency`, 12 cycles from a token's input transfer to its map
    beat for every comparator count. With ``mean``, each tile's unique vectors leave after its last
    map beat, ``elem_bits + 2`` cycles each (the divider is bit-serial; 2 cycles for a group of one
    token, which needs no division), and the next tile waits for them. Back-pressure: ``o_stream``
    back-pressure stops the whole pipeline (``i_stream.ready`` falls once it is full); nothing is
    lost or duplicated.

    A job is one ``cfg_stream`` beat (:func:`match_config_layout`), then tokens on ``i_stream``
    (:func:`match_input_layout`) up to the one with ``last``. Tiles are runs of ``tile`` tokens;
    a token's candidates are looked up only inside its tile. Output
    (:func:`match_output_layout`): one map beat per token in input order; with ``first`` a new
    token's beat also carries its unique vector, with ``mean`` the unique vectors of a tile follow
    its last map beat. The final beat has ``last``.

    Pipeline: input register (norm, tile bookkeeping, position check) -> window lookups
    (:class:`~rtl.sic.window_buffer.WindowBuffer`: slots addressed by position, one read port per
    comparator, all of a round's candidates in one cycle, conflict-free for any FS, HS and
    pruning; see its docstring for the comparison with the paper's 8 parity banks) -> a register
    of the read data -> ``comparators`` :class:`~rtl.sic.similarity_comparator.SimilarityComparator`
    instances (3 cycles; zero skip and clock gating inside; candidate c = r * comparators + j + 1
    on comparator j in round r) -> a tree of exact "better" tests on their dot**2 outputs
    (``dot1**2 * ny2 > dot2**2 * ny1``; on equality the lower c wins) -> across rounds, a
    running best -> delay stages (4 selection stages for any comparator count) -> unique-index
    lookup (each window slot's tile-local unique index, read with write-through so the previous
    token's decision is seen) -> output register. Map indices are ``tile base + tile-local
    index``, so the index memory is ``tile_index_bits`` wide. A candidate's decision is always made
    before its map index is needed: tokens are resolved in order, one per cycle. Vectors wait in a
    small FIFO from the input register to the output register instead of riding every stage.

    ``mean``: a memory of ``tile`` entries holds each group's element sums and count (updated in
    the token's first cycle in the output register; read with write-through), costing
    ``tile * (dim * mean_sum_bits + bit_length(tile))`` bits: 622 592 + 11 264 bits (77 KiB) with
    the default parameters, against 2**window_bits * 300 bits (9.4 KiB) per window-buffer copy.
    At the end of a tile each sum is divided, ``sign(t) * ((2|t| + c) // (2c))``, exactly.

    Errors (``error`` rises, the job's remaining tokens are dropped up to the one with ``last``,
    then the block is idle; a beat already offered on ``o_stream`` is still delivered; ``error``
    stays high until the next ``cfg_stream`` beat is accepted):
    ``frame_stride + row_stride + 1 >= window``, ``layer >= layers`` (on the configuration beat),
    and a position not greater than the previous one (that token and everything in flight is
    dropped).

    Parameters
    ----------
    params : FocusParams
        Uses ``dim``, ``elem_bits``, ``theta_bits``, ``layers``, ``window``, ``tile``,
        ``comparators`` and ``gating``.
    icg_cell : str or None
        Clock-gate cell of the comparators with ``gating="icg"`` (``None`` models it as a clock
        enable, for the Amaranth simulator).
    gate : bool
        False builds the comparators without clock gating (a baseline for power comparisons).

    Members
    -------
    cfg_stream : In(stream.Signature(match_config_layout(params)))
    i_stream : In(stream.Signature(match_input_layout(params)))
    o_stream : Out(stream.Signature(match_output_layout(params)))
    theta_we, theta_addr, theta_data : In
        Threshold table write port: entry ``theta_addr`` (a layer) becomes ``theta_data``
        (theta_q) at the clock edge. A job reads its layer's entry when its configuration beat is
        accepted.
    busy : Out(1)
        A job is in progress (from its configuration beat to its last output beat, or until its
        dropped tokens have been consumed).
    error : Out(1)
    active, gated : Out(32)
        Comparator-cycles of the job: comparisons computed, and comparator slots with no valid,
        non-zero candidate (datapath clocks off). Their sum is ``comparators * rounds * S``.
    uniques : Out(position_bits)
        Unique vectors of the job so far.
    """

    def __init__(self, params=None, *, icg_cell=ICG_CELL, gate=True):
        self._icg_cell = icg_cell
        self._gate = gate
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(match_config_layout(p))),
            "i_stream": In(stream.Signature(match_input_layout(p))),
            "o_stream": Out(stream.Signature(match_output_layout(p))),
            "theta_we": In(1),
            "theta_addr": In(p.layer_bits),
            "theta_data": In(p.theta_bits),
            "busy": Out(1),
            "error": Out(1),
            "active": Out(32),
            "gated": Out(32),
            "uniques": Out(p.position_bits),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        k = p.comparators
        rounds = matcher_rounds(p)
        levels = _tree_levels(p)
        wb, tb, pb = p.window_bits, tile_index_bits(p), p.position_bits
        e, V = p.elem_bits, p.dim
        dsq_bits = 2 * (p.dot_bits - 1)
        cfg, inp, out = self.cfg_stream, self.i_stream, self.o_stream

        # ---- threshold table and job settings -----------------------------------------------
        m.submodules.thetas = thetas = memory.Memory(shape=unsigned(p.theta_bits),
                                                     depth=p.layers, init=[])
        theta_wp = thetas.write_port()
        theta_rp = thetas.read_port()
        m.d.comb += [
            theta_wp.en.eq(self.theta_we),
            theta_wp.addr.eq(self.theta_addr),
            theta_wp.data.eq(self.theta_data),
        ]
        fs = Signal(pb)
        hs = Signal(pb)
        layer = Signal(p.layer_bits)
        mean = Signal()
        theta = Signal(p.theta_bits)
        offsets = [Const(0, wb)] + [Signal(wb, name=f"offset{c}") for c in range(1, 8)]

        job_clear = Signal()        # the configuration beat is accepted this cycle
        flush = Signal()            # a bad position: drop everything in flight
        in_running = Signal()       # state RUN: tokens are taken into the pipeline
        bad_pos = Signal()
        n_ready = Signal()          # the input register can take a token this cycle
        o_valid = Signal()
        last_out = Signal()
        m.d.comb += last_out.eq(out.valid & out.ready & out.payload.last)

        with m.FSM(name="job"):
            with m.State("START"):
                # One cycle out of reset before IDLE. Icarus (-g2012) never evaluates a Verilog
                # `always @*` block whose inputs do not change after time 0, and Yosys's
                # time-0 trigger is a declaration initializer, which makes no event there: without
                # this state change, the outputs decoded from the FSM state stay X until the
                # first configuration beat.
                m.next = "IDLE"
            with m.State("IDLE"):
                m.d.comb += [
                    cfg.ready.eq(1),
                    theta_rp.addr.eq(cfg.payload.layer),
                    theta_rp.en.eq(1),
                    job_clear.eq(cfg.valid),
                ]
                with m.If(cfg.valid):
                    m.d.sync += [
                        fs.eq(cfg.payload.frame_stride),
                        hs.eq(cfg.payload.row_stride),
                        layer.eq(cfg.payload.layer),
                        mean.eq(cfg.payload.mean),
                        self.error.eq(0),
                    ]
                    m.next = "SETUP"
            with m.State("SETUP"):
                m.d.comb += self.busy.eq(1)
                m.d.sync += theta.eq(theta_rp.data)
                for c in range(1, 8):
                    f, dh, dw = c >> 2, (c >> 1) & 1, c & 1
                    m.d.sync += offsets[c].eq((fs if f else 0) + (hs if dh else 0) + dw)
                with m.If((fs + hs + 1 >= p.window) | (layer >= p.layers)):
                    m.d.sync += self.error.eq(1)
                    m.next = "DROP"
                with m.Else():
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [self.busy.eq(1), in_running.eq(1), inp.ready.eq(n_ready)]
                with m.If(inp.valid & n_ready):
                    with m.If(bad_pos):
                        m.d.comb += flush.eq(1)
                        m.d.sync += self.error.eq(1)
                        with m.If(inp.payload.last):
                            m.next = "WAIT"
                        with m.Else():
                            m.next = "DROP"
                    with m.Elif(inp.payload.last):
                        m.next = "FINISH"
            with m.State("FINISH"):
                m.d.comb += self.busy.eq(1)
                with m.If(last_out):
                    m.next = "IDLE"
            with m.State("DROP"):
                # Consume the rest of a failed job, up to its last token, without looking at it.
                m.d.comb += [self.busy.eq(1), inp.ready.eq(1)]
                with m.If(inp.valid & inp.payload.last):
                    m.next = "WAIT"
            with m.State("WAIT"):
                # A beat offered on o_stream before the error is still delivered.
                m.d.comb += self.busy.eq(1)
                with m.If(~o_valid):
                    m.next = "IDLE"

        # ---- input register N: norm, tile bookkeeping, position check -----------------------
        n_valid = Signal()
        n_x = Signal(vector_layout(p))
        n_pos = Signal(pb)
        n_round = Signal(range(rounds))
        n_dclip = Signal(wb)        # min(p - tile's first position, 2**wb - 1)
        n_tile_first = Signal()
        n_tile_last = Signal()
        n_job_last = Signal()
        tile_idx = Signal(tb)       # tokens of the current tile taken so far
        tile_p0 = Signal(pb)        # the current tile's first position
        started = Signal()
        prev_pos = Signal(pb)

        m.submodules.norm = norm = VectorNorm(p)
        m.d.comb += norm.x.eq(n_x)

        d_accept = Signal()
        n_go = Signal()             # a round of N moves to D (its window lookups are issued)
        n_done = Signal()           # ... and it is the token's last round
        m.d.comb += [
            n_go.eq(n_valid & d_accept),
            n_done.eq(n_go & (n_round == rounds - 1)),
            n_ready.eq(~n_valid | n_done),
            bad_pos.eq(started & (inp.payload.position <= prev_pos)),
        ]
        n_load = Signal()
        m.d.comb += n_load.eq(in_running & inp.valid & n_ready & ~bad_pos)

        pos = inp.payload.position
        first = tile_idx == 0
        distance = Signal(pb)
        m.d.comb += distance.eq(pos - Mux(first, pos, tile_p0))
        with m.If(n_go):
            m.d.sync += n_round.eq(Mux(n_round == rounds - 1, 0, n_round + 1))
        with m.If(n_done):
            m.d.sync += n_valid.eq(0)
        with m.If(n_load):
            tile_last = (tile_idx == p.tile - 1) | inp.payload.last
            m.d.sync += [
                n_valid.eq(1),
                n_x.eq(inp.payload.vector),
                n_pos.eq(pos),
                n_dclip.eq(Mux(distance >> wb != 0, (1 << wb) - 1, distance[:wb])),
                n_tile_first.eq(first),
                n_tile_last.eq(tile_last),
                n_job_last.eq(inp.payload.last),
                tile_idx.eq(Mux(tile_last, 0, tile_idx + 1)),
                tile_p0.eq(Mux(first, pos, tile_p0)),
                started.eq(1),
                prev_pos.eq(pos),
            ]
        with m.If(job_clear):
            m.d.sync += [tile_idx.eq(0), started.eq(0)]
        with m.If(flush):
            m.d.sync += [n_valid.eq(0), n_round.eq(0)]

        # ---- window lookups, issued as a round moves from N to D ----------------------------
        m.submodules.window = window = WindowBuffer(p, k)
        m.d.comb += [
            window.clear.eq(job_clear),
            window.w_en.eq(n_done),
            window.w_pos.eq(n_pos),
            window.w_vec.eq(n_x),
            window.w_norm.eq(norm.norm),
            window.r_en.eq(n_go),
            window.r_pos.eq(n_pos),
        ]
        for j in range(k):
            cands = [r * k + j + 1 for r in range(rounds)]
            offs = [offsets[c] if c <= 7 else Const(0, wb) for c in cands]
            off = Array(offs)[n_round] if rounds > 1 else offs[0]
            m.d.comb += [
                window.r_offset[j].eq(off),
                window.r_want[j].eq((off != 0) & (n_dclip >= off)),
            ]

        # ---- D: the window's read data; E: the comparators' input --------------------------
        token_layout = data.StructLayout({
            "valid": 1, "first_round": 1, "last_round": 1,
            "tile_first": 1, "tile_last": 1, "job_last": 1, "own_slot": unsigned(wb),
        })
        d_tok = Signal(token_layout)
        d_x = Signal(vector_layout(p))
        d_nx = Signal(p.norm_bits)
        e_accept = Signal()
        with m.If(d_accept):
            m.d.sync += [
                d_tok.valid.eq(n_go),
                d_tok.first_round.eq(n_round == 0),
                d_tok.last_round.eq(n_round == rounds - 1),
                d_tok.tile_first.eq(n_tile_first),
                d_tok.tile_last.eq(n_tile_last),
                d_tok.job_last.eq(n_job_last),
                d_tok.own_slot.eq(n_pos[:wb]),
                d_x.eq(n_x),
                d_nx.eq(norm.norm),
            ]
        # E registers the window's read data: a block RAM's clock-to-output delay then does not
        # add to the comparators' first stage (the dot product), the longest path.
        lane_layout = data.StructLayout({
            "y": data.ArrayLayout(vector_layout(p), k),
            "ny": data.ArrayLayout(unsigned(p.norm_bits), k),
            "slot": data.ArrayLayout(unsigned(wb), k),
        })
        e_tok = Signal(token_layout)
        e_x = Signal(vector_layout(p))
        e_nx = Signal(p.norm_bits)
        e_lanes = Signal(lane_layout)
        with m.If(e_accept):
            m.d.sync += [
                e_tok.eq(d_tok),
                e_x.eq(d_x),
                e_nx.eq(d_nx),
                e_lanes.y.eq(window.y),
                e_lanes.ny.eq(window.ny),
                e_lanes.slot.eq(window.slot),
            ]
        m.d.comb += d_accept.eq(~d_tok.valid | e_accept)
        with m.If(flush):
            m.d.sync += [d_tok.valid.eq(0), e_tok.valid.eq(0)]

        post_adv = Signal()         # the stages after the comparators move on (all together)
        comps = []
        for j in range(k):
            comp = SimilarityComparator(p, icg_cell=self._icg_cell, gate=self._gate)
            m.submodules[f"comparator{j}"] = comp
            comps.append(comp)
            m.d.comb += [
                comp.i_stream.valid.eq(e_tok.valid),
                comp.i_stream.payload.x.eq(e_x),
                comp.i_stream.payload.y.eq(e_lanes.y[j]),
                comp.i_stream.payload.nx.eq(e_nx),
                comp.i_stream.payload.ny.eq(e_lanes.ny[j]),
                comp.i_stream.payload.theta_q.eq(theta),
                comp.o_stream.ready.eq(post_adv),
                comp.clear.eq(job_clear),
            ]
        # All comparators get the same valid and ready, so they move in lockstep.
        comp_ready = comps[0].i_stream.ready
        m.d.comb += e_accept.eq(~e_tok.valid | comp_ready)
        m.d.comb += [
            self.active.eq(sum(c.active for c in comps)),
            self.gated.eq(sum(c.gated for c in comps)),
        ]

        # ---- a side pipeline moving exactly like the comparators' (same input, same enable) --
        side_layout = data.StructLayout({
            "tok": token_layout,
            "ny": data.ArrayLayout(unsigned(p.norm_bits), k),
            "slot": data.ArrayLayout(unsigned(wb), k),
        })
        side = [Signal(side_layout, name=f"side{i}") for i in range(COMPARATOR_LATENCY)]
        with m.If(comp_ready):
            m.d.sync += [
                side[0].tok.eq(e_tok),
                side[0].ny.eq(e_lanes.ny),
                side[0].slot.eq(e_lanes.slot),
            ]
            m.d.sync += [side[i].eq(side[i - 1]) for i in range(1, COMPARATOR_LATENCY)]
        with m.If(flush):
            # The comparators keep their beats; with these valid bits low they are dropped.
            m.d.sync += [s.tok.valid.eq(0) for s in side]
        side_out = side[-1]

        # ---- best candidate: squares, a tree of exact "better" tests, rounds ----------------
        cand_layout = data.StructLayout({
            "sim": 1, "dsq": unsigned(dsq_bits), "ny": unsigned(p.norm_bits),
            "slot": unsigned(wb),
        })

        def keep_first(a, b):
            """a (lower c) stays unless b is similar and strictly better (a larger cosine)."""
            b_better = b.sim & (~a.sim | (b.dsq * a.ny > a.dsq * b.ny))
            return ~b_better

        def stage(name, tok_in, cands_in):
            tok = Signal(token_layout, name=f"{name}_tok")
            with m.If(post_adv):
                m.d.sync += tok.eq(tok_in)
            with m.If(flush):
                m.d.sync += tok.valid.eq(0)
            regs = []
            for i, value in enumerate(cands_in):
                reg = Signal(cand_layout, name=f"{name}_c{i}")
                with m.If(post_adv):
                    m.d.sync += reg.eq(value)
                regs.append(reg)
            return tok, regs

        # The comparators' outputs feed the tree directly (dot**2 comes with them).
        tok = Signal(token_layout, name="lane_tok")
        m.d.comb += tok.eq(side_out.tok)
        cands = []
        for j, comp in enumerate(comps):
            value = Signal(cand_layout, name=f"lane{j}")
            m.d.comb += [
                value.sim.eq(comp.o_stream.payload.similar),
                value.dsq.eq(comp.o_stream.payload.dot_sq),
                value.ny.eq(side_out.ny[j]),
                value.slot.eq(side_out.slot[j]),
            ]
            cands.append(value)
        for level in range(levels):
            merged = []
            for i in range(0, len(cands) - 1, 2):
                a, b = cands[i], cands[i + 1]
                value = Signal(cand_layout, name=f"t{level}_{i // 2}")
                m.d.comb += value.eq(Mux(keep_first(a, b), a, b))
                merged.append(value)
            if len(cands) % 2:
                merged.append(cands[-1])
            tok, cands = stage(f"tree{level}", tok, merged)
        best, best_tok = cands[0], tok
        if rounds > 1:
            acc = Signal(cand_layout)
            acc_tok = Signal(token_layout)
            with m.If(post_adv):
                m.d.sync += [acc_tok.eq(best_tok), acc_tok.valid.eq(best_tok.valid &
                                                                     best_tok.last_round)]
                with m.If(best_tok.valid):
                    with m.If(best_tok.first_round | ~keep_first(acc, best)):
                        m.d.sync += acc.eq(best)
            with m.If(flush):
                m.d.sync += acc_tok.valid.eq(0)
            best, best_tok = acc, acc_tok
        # Delay stages: the same latency for every comparator count.
        for i in range(_pad_stages(p)):
            best_tok, (best,) = stage(f"pad{i}", best_tok, [best])

        # ---- RES: the map index. The window slot of each resolved token keeps its tile-local
        # unique index; a match reads its candidate's, with write-through, so a token resolved
        # in the previous cycle is seen.
        m.submodules.uids = uids = memory.Memory(shape=unsigned(tb), depth=window_slots(p),
                                                 init=[])
        uid_wp = uids.write_port()
        uid_rp = uids.read_port(transparent_for=(uid_wp,))
        r_tok = Signal(token_layout)
        r_match = Signal()
        m.d.comb += [uid_rp.addr.eq(best.slot), uid_rp.en.eq(post_adv)]
        with m.If(post_adv):
            m.d.sync += [r_tok.eq(best_tok), r_match.eq(best.sim)]
        with m.If(flush):
            m.d.sync += r_tok.valid.eq(0)

        uniques = self.uniques
        base = Signal(pb)           # the current tile's first unique index
        tile_count = Signal(range(p.tile + 1))     # unique vectors of the current tile
        base_eff = Signal(pb)
        count_eff = Signal(range(p.tile + 1))
        u = Signal(tb)              # the token's tile-local unique index
        res_move = Signal()
        m.d.comb += [
            base_eff.eq(Mux(r_tok.tile_first, uniques, base)),
            count_eff.eq(Mux(r_tok.tile_first, 0, tile_count)),
            u.eq(Mux(r_match, uid_rp.data, count_eff)),
            res_move.eq(r_tok.valid & post_adv),
            uid_wp.en.eq(res_move),
            uid_wp.addr.eq(r_tok.own_slot),
            uid_wp.data.eq(u),
        ]
        with m.If(res_move):
            m.d.sync += [
                base.eq(base_eff),
                tile_count.eq(count_eff + ~r_match),
                uniques.eq(uniques + ~r_match),
            ]
        with m.If(job_clear):
            m.d.sync += [uniques.eq(0), base.eq(0), tile_count.eq(0)]

        # The tokens' vectors wait in a FIFO from N to RES instead of riding every stage.
        in_flight = 2 + COMPARATOR_LATENCY + SELECT_STAGES + 1
        vectors = fifo.SyncFIFOBuffered(width=V * e, depth=in_flight + 2)
        m.submodules.vectors = ResetInserter({"sync": flush})(vectors)
        m.d.comb += [
            vectors.w_en.eq(n_done),
            vectors.w_data.eq(n_x.as_value()),
            vectors.r_en.eq(res_move),
        ]

        # ---- O: the output register; mean sums; the end-of-tile mean drain ------------------
        o_beat = Signal(match_output_layout(p))
        o_u = Signal(tb)
        o_new = Signal()
        o_tile_last = Signal()
        o_job_last = Signal()
        o_sum_pending = Signal()
        o_take = Signal()
        drain = Signal()
        m.d.comb += [
            out.valid.eq(o_valid),
            out.payload.eq(o_beat),
            o_take.eq(o_valid & out.ready),
            post_adv.eq(~drain & (~o_valid | (out.ready & ~(o_tile_last & mean)))),
        ]

        sum_layout = data.StructLayout({
            "sums": data.ArrayLayout(signed(mean_sum_bits(p)), V),
            "count": unsigned(p.tile.bit_length()),
        })
        m.submodules.sums = sums = memory.Memory(shape=sum_layout, depth=p.tile, init=[])
        sum_wp = sums.write_port()
        sum_rp = sums.read_port(transparent_for=(sum_wp,))
        drain_u = Signal(tb)
        drain_addr = Signal(tb)
        drain_read = Signal()
        m.d.comb += [
            sum_rp.addr.eq(Mux(drain, drain_addr, u)),
            sum_rp.en.eq(Mux(drain, drain_read, post_adv)),
            # A token's group sum is updated in its first cycle in O (the read was issued as it
            # entered O, write-through covers the next token's read in the same cycle).
            sum_wp.en.eq(o_sum_pending),
            sum_wp.addr.eq(o_u),
            sum_wp.data.count.eq(Mux(o_new, 1, sum_rp.data.count + 1)),
        ]
        for i in range(V):
            x_i = o_beat.vector[i]
            m.d.comb += sum_wp.data.sums[i].eq(Mux(o_new, x_i, sum_rp.data.sums[i] + x_i))
        m.d.sync += o_sum_pending.eq(0)

        with m.If(post_adv):
            m.d.sync += [
                o_valid.eq(r_tok.valid),
                o_beat.map.eq(base_eff + u),
                o_beat.vector.eq(vectors.r_data),
                o_beat.token.eq(1),
                o_beat.unique.eq(~r_match & ~mean),
                o_beat.last.eq(r_tok.job_last & ~mean),
                o_u.eq(u),
                o_new.eq(~r_match),
                o_tile_last.eq(r_tok.valid & r_tok.tile_last),
                o_job_last.eq(r_tok.job_last),
                o_sum_pending.eq(r_tok.valid & mean),
            ]
        with m.Elif(o_take):
            m.d.sync += o_valid.eq(0)

        # Drain: for u = 0 .. tile_count-1, read the group's sums, divide bit-serially, emit.
        rem_bits = (p.tile * ((1 << e) + 1)).bit_length()
        rems = [Signal(rem_bits, name=f"rem{i}") for i in range(V)]
        quots = [Signal(e, name=f"quot{i}") for i in range(V)]
        negs = [Signal(name=f"neg{i}") for i in range(V)]
        divisor = Signal(rem_bits)
        step = Signal(range(e))
        drain_job_last = Signal()
        with m.FSM(name="drain"):
            with m.State("OFF"):
                with m.If(o_take & o_tile_last & mean):
                    m.d.sync += [drain.eq(1), drain_u.eq(0), drain_job_last.eq(o_job_last),
                                 o_tile_last.eq(0)]
                    m.next = "READ"
            with m.State("READ"):
                m.d.comb += [drain_read.eq(1), drain_addr.eq(drain_u)]
                m.next = "LOAD"
                with m.If(flush):
                    m.next = "OFF"
            with m.State("LOAD"):
                count = sum_rp.data.count
                single = count == 1
                for i in range(V):
                    t = sum_rp.data.sums[i]
                    magnitude = Mux(t < 0, -t, t).as_unsigned()
                    m.d.sync += [
                        negs[i].eq(t < 0),
                        rems[i].eq((magnitude << 1) + count),
                        # A group of one is its own mean: no division.
                        quots[i].eq(Mux(single, magnitude, 0)),
                    ]
                m.d.sync += [divisor.eq(count << e), step.eq(0)]
                m.next = "DIVIDE"
                with m.If(single):
                    m.next = "EMIT"
                with m.If(flush):
                    m.next = "OFF"
            with m.State("DIVIDE"):
                # Restoring division, one quotient bit per cycle for all V elements at once; the
                # quotient has elem_bits bits since |t| <= c * 2**(elem_bits-1).
                for i in range(V):
                    fits = rems[i] >= divisor
                    with m.If(fits):
                        m.d.sync += rems[i].eq(rems[i] - divisor)
                    m.d.sync += quots[i].eq(Cat(fits, quots[i][:-1]))
                m.d.sync += [divisor.eq(divisor >> 1), step.eq(step + 1)]
                with m.If(step == e - 1):
                    m.next = "EMIT"
                with m.If(flush):
                    m.next = "OFF"
            with m.State("EMIT"):
                with m.If(~o_valid | o_take):
                    done = drain_u == tile_count - 1
                    m.d.sync += [
                        o_valid.eq(1),
                        o_beat.map.eq(base + drain_u),
                        o_beat.token.eq(0),
                        o_beat.unique.eq(1),
                        o_beat.last.eq(drain_job_last & done),
                        o_tile_last.eq(0),
                        o_sum_pending.eq(0),
                    ]
                    m.d.sync += [o_beat.vector[i].eq(Mux(negs[i], -quots[i], quots[i]))
                                 for i in range(V)]
                    with m.If(done):
                        m.d.sync += drain.eq(0)
                        m.next = "OFF"
                    with m.Else():
                        # The next group's sums are read now, while this one leaves.
                        m.d.comb += [drain_read.eq(1), drain_addr.eq(drain_u + 1)]
                        m.d.sync += drain_u.eq(drain_u + 1)
                        m.next = "LOAD"
                with m.If(flush):
                    m.next = "OFF"
        with m.If(flush):
            m.d.sync += [o_tile_last.eq(0), o_sum_pending.eq(0), drain.eq(0)]
        return m
