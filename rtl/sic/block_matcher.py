"""The SIC block matcher (spec 4.2): 2x2x2 block matching, similarity map and unique vectors."""

from amaranth.hdl import Cat, Module, ResetInserter, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..lib.clock_gate import ICG_CELL, activity_members
from ..lib.ready_slice import ReadySlice
from ..lib.stream_buffer import StreamBuffer
from ..lib.stream_fork import StreamFork
from .best_candidate import BestCandidate
from .candidate_fetch import CandidateFetch
from .comparator_bank import ComparatorBank
from .frame_stats import FrameStats
from .job_control import JobControl, MatchError
from .map_coder import MapCoder
from .match_layouts import (
    frame_stats_layout,
    indexed_layout,
    map_code_config_layout,
    map_word_layout,
    match_config_layout,
    match_input_layout,
    match_output_layout,
    matcher_rounds,
    mean_sum_bits,
    tile_index_bits,
)
from .output_stage import OutputStage
from .serial_best_candidate import best_candidate
from .threshold_table import ThresholdTable
from .token_register import TokenRegister
from .unique_indexer import UniqueIndexer

__all__ = ["BlockMatcher", "MatchError", "match_input_layout", "match_config_layout",
           "match_output_layout", "matcher_rounds", "matcher_latency", "tile_index_bits",
           "mean_sum_bits"]

#: The stages from the input register to the output register, in order; each states its own
#: ``latency`` (and, but for the last, ``capacity``: the beats it can hold).
_PIPELINE = (TokenRegister, CandidateFetch, ComparatorBank, BestCandidate, UniqueIndexer,
           OutputStage)

#: The stages after which a :class:`~rtl.lib.ready_slice.ReadySlice` cuts the back-pressure
#: path (no cycle of latency; one beat of storage each). Without them ``ready`` ran from the
#: output register through every stage's advance enable to the input register, each enable
#: fanning out to its stage's registers, and limited the ECP5 clock. Not after the token
#: register: its two vector registers serve the at most two tokens between it and the fetch's
#: copy, and a slice there would hold a third.
_READY_CUTS = (CandidateFetch, ComparatorBank, BestCandidate)


def matcher_latency(p):
    """Cycles from a token's input transfer to its map beat's transfer, inclusive, with no stalls
    and ``first``, when it does not wait for earlier tokens (and, with several rounds, from its
    last round): the same for every comparator count, the sum of the stages' ``latency``: input
    register (1), window read and its data register (2), 5 scorer stages, the selection stages
    (``SELECT_STAGES``, 21), map lookup (1), output register (1): 31. A job of S tokens takes
    ``S * rounds + matcher_latency`` cycles (:func:`golden.cycles.block_match_cycles`)."""
    return sum(stage.latency for stage in _PIPELINE)


class BlockMatcher(FocusBlock):
    """Block-matches a job's tokens in 2x2x2 (frame, row, column) neighbourhoods and streams the
    similarity map and the unique vectors, exactly as :func:`golden.block_match`.

    Throughput: one token per ``rounds = ceil(7 / comparators)`` cycles in steady state (1 cycle
    with 7 comparators, 7 with one), with ``first``: a job of S tokens takes ``rounds * S +
    matcher_latency`` cycles. Latency: :func:`matcher_latency`, 31 cycles (1 + 2 + 5 + 21 + 1 + 1,
    the stages below) from a token's (last round's) input transfer to its map beat for every
    comparator count. With ``mean``, each tile's unique vectors
    leave after its last map beat, ``elem_bits + 2`` cycles each (the divider is bit-serial; 2
    cycles for a group of one token, which needs no division), and the next tile waits for them.
    Back-pressure: under ``o_stream`` back-pressure the stages fill up and hold
    (``i_stream.ready`` falls once they are full); nothing is lost or duplicated, however long
    the stall. ``ready`` runs combinationally only inside the four segments that ready slices
    (:class:`~rtl.lib.ready_slice.ReadySlice`: no latency, one beat of storage) cut after the
    candidate fetch, the comparator bank and the best-candidate selection.

    A job is one ``cfg_stream`` beat (:func:`match_config_layout`), then tokens on ``i_stream``
    (:func:`match_input_layout`) up to the one with ``last``. Tiles are runs of ``tile`` tokens;
    a token's candidates are looked up only inside its tile. Output
    (:func:`match_output_layout`): one map beat per token in input order; with ``first`` a new
    token's beat also carries its unique vector, with ``mean`` the unique vectors of a tile follow
    its last map beat. The final beat has ``last``.

    Every unit is sized to the rate it must sustain: a token has ``rounds`` cycles, and the work
    that is per token, not per pair, is done once per token. Per pair (7 per token): a dot
    product of V products and dot**2 (:class:`~rtl.sic.dot_scorer.DotScorer`). Per token: its
    squared norm, with ceil(V / (rounds - 1)) squarers over its first rounds (V with one round);
    one exact threshold test, on its best candidate only (theta_q**2 * nx formed once); the
    "better" tests between its candidates (a tree over a round's lanes, a running best over
    rounds in two accumulators, two tests a round, one of which merges them in a cycle it has
    free per token; at one comparator, one test unit that does a token's seven tests, threshold
    included, in its seven cycles). Per job: theta_q**2.

    Pipeline, one Component per stage, joined by streams (``wiring.connect``), each stage holding
    only under back-pressure from the next:

    - :class:`~rtl.sic.job_control.JobControl`: the configuration beat (theta_q from the
      :class:`~rtl.sic.threshold_table.ThresholdTable`, and theta_q**2; the candidate offsets),
      the position check and the error path; tokens pass through combinationally.
    - :class:`~rtl.sic.token_register.TokenRegister` (1 cycle): the input register (two vector
      registers used in turn), the norm over the rounds, the tile bookkeeping, one beat per
      round.
    - :class:`~rtl.sic.candidate_fetch.CandidateFetch` (2): the window lookups
      (:class:`~rtl.sic.window_buffer.WindowBuffer`: slots addressed by position, one read port
      per comparator, all of a round's candidates in one cycle, conflict-free for any FS, HS and
      pruning; see its docstring for the comparison with banked layouts), the read data
      registered straight out of the memory, then the tag compare; the scorers register the
      lookups.
    - :class:`~rtl.sic.comparator_bank.ComparatorBank` (5): ``comparators``
      :class:`~rtl.sic.dot_scorer.DotScorer` instances in lockstep (zero skip and clock gating
      inside; candidate c = r * comparators + j + 1 on scorer j in round r); each candidate's
      norm and slot, and the round's tag and the token's norm, ride in the scorers' tags.
    - :class:`~rtl.sic.best_candidate.BestCandidate` (21 for any comparator count, three per
      test): a tree of exact "better" tests on dot**2 (``dot1**2 * ny2 > dot2**2 * ny1``; on
      equality the lower c wins), a running best across rounds (two interleaved accumulators,
      each round tested against both of its possible values, merged after the token's last
      round), the threshold test of the winner (``dot**2 * 2**(2F) >
      theta_q**2 * nx * ny``), delay stages. At one comparator,
      :class:`~rtl.sic.serial_best_candidate.SerialBestCandidate` instead: the same decisions
      and timing from one shared test unit (:func:`~rtl.sic.serial_best_candidate.best_candidate`
      chooses).
    - :class:`~rtl.sic.unique_indexer.UniqueIndexer` (1): the map lookup (each window slot's
      tile-local unique index, read with write-through so the previous token's decision is seen;
      map indices are ``tile base + tile-local index``).
    - :class:`~rtl.sic.output_stage.OutputStage` (1): the output register, the ``mean`` sums
      and the end-of-tile drain through the :class:`~rtl.sic.mean_divider.MeanDivider`.

    Vectors wait in a FIFO from the input register to the output register instead of riding
    every stage (a :class:`~rtl.lib.stream_fork.StreamFork` gives each token to both; a register
    stage in front of the FIFO takes it a cycle later), and leave from the FIFO's head with their
    map beats; its depth is derived from the stages' capacities.

    ``mean`` (only with ``representatives = "first+mean"``): a memory of ``tile`` entries holds
    each group's element sums and count, costing ``tile * (dim * mean_sum_bits +
    bit_length(tile))`` bits: 622 592 + 11 264 bits (77 KiB) with the default parameters,
    against 2**window_bits * 300 bits (9.4 KiB) per window-buffer copy. At the end of a tile
    each sum is divided, ``sign(t) * ((2|t| + c) // (2c))``, exactly. With ``representatives =
    "first"`` none of it is built, and a job asking for ``mean`` is rejected.

    Errors (``error`` rises, ``cause`` says why (:class:`MatchError`), the job's remaining tokens
    are dropped up to the one with ``last``, then the block is idle; a beat already offered on
    ``o_stream`` is still delivered; ``error`` and ``cause`` hold until the next ``cfg_stream``
    beat is accepted): ``frame_stride + row_stride + 1 >= window`` (``GEOMETRY``), ``layer >=
    layers`` (``LAYER``), ``mean`` without the mean unit (``MEAN``), all on the configuration
    beat, and a position not greater than the previous one (``POSITION``: that token and
    everything in flight is dropped). The stages before the output are cleared a cycle after
    the bad position (from a register: the position compare into every stage's reset was the
    ECP5 limit) and pass nothing on meanwhile, so the beats, the map code, the frame statistics
    and ``uniques`` are those of a flush in the same cycle; ``active`` and ``gated`` may count a
    round the scorers take in that cycle.

    A job's state in the stages (the window's slot flags, the tile and unique counts, so
    ``uniques``, ``active`` and ``gated``) is cleared the cycle after its configuration beat is
    accepted, from a register; the first token enters two cycles after that beat.

    Parameters
    ----------
    params : FocusParams
        Uses ``dim``, ``elem_bits``, ``theta_bits``, ``layers``, ``window``, ``tile``,
        ``comparators``, ``gating`` and ``representatives``.
    icg_cell : str or None
        Clock-gate cell of the scorers with ``gating="icg"`` (``None`` models it as a clock
        enable, for the Amaranth simulator).
    gate : bool
        False builds the scorers without clock gating (a baseline for power comparisons).
    map_code : bool
        True adds the :class:`~rtl.sic.map_coder.MapCoder` (spec 4.5): ``code_cfg``,
        ``code_stream``, ``code_counts`` and ``code_error``. The map output is unchanged.
    frame_stats : bool
        True adds the :class:`~rtl.sic.frame_stats.FrameStats` (spec 4.6): ``frame_stream``.
        With either, each resolved token also goes (through a
        :class:`~rtl.lib.stream_fork.StreamFork`) to them, a stall on their streams stops the
        matcher, and the next configuration beat waits until their last beats have left.

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
    cause : Out(MatchError)
        Why ``error`` is high (``NONE`` while it is low).
    active, gated : Out(32)
        Comparator-cycles of the job: comparisons computed, and comparator slots with no valid,
        non-zero candidate (datapath clocks off). Their sum is ``comparators * rounds * S``.
    uniques : Out(position_bits)
        Unique vectors of the job so far.
    code_cfg : In(map_code_config_layout(params))
        (``map_code``) The job's map code (``variable``, ``ranking``), sampled with its
        configuration beat.
    code_stream : Out(stream.Signature(map_word_layout(params)))
        (``map_code``) The job's map-code words.
    code_counts : Out(data.ArrayLayout(position_bits, 8))
        (``map_code``) How often each symbol occurred in the job (cleared when it starts).
    code_error : Out(1)
        (``map_code``) The job's ranking is not a permutation: it writes no word.
    frame_stream : Out(stream.Signature(frame_stats_layout(params)))
        (``frame_stats``) One beat per frame of the job.
    """

    def __init__(self, params=None, *, icg_cell=ICG_CELL, gate=True, map_code=False,
                 frame_stats=False):
        for name, value in (("map_code", map_code), ("frame_stats", frame_stats)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be True or False, not {value!r}")
        self._icg_cell = icg_cell
        self._gate = gate
        self._map_code = map_code
        self._frame_stats = frame_stats
        super().__init__(params, lambda p: {**self._members(p), **self._extra_members(p)})

    def _extra_members(self, p):
        members = {}
        if self._map_code:
            members.update({
                "code_cfg": In(map_code_config_layout(p)),
                "code_stream": Out(stream.Signature(map_word_layout(p))),
                "code_counts": Out(data.ArrayLayout(p.position_bits, 8)),
                "code_error": Out(1),
            })
        if self._frame_stats:
            members["frame_stream"] = Out(stream.Signature(frame_stats_layout(p)))
        return members

    @property
    def map_code(self):
        """Built with the map coder (``code_stream``)."""
        return self._map_code

    @property
    def frame_stats(self):
        """Built with the frame statistics (``frame_stream``)."""
        return self._frame_stats

    @staticmethod
    def _members(p):
        return {
            "cfg_stream": In(stream.Signature(match_config_layout(p))),
            "i_stream": In(stream.Signature(match_input_layout(p))),
            "o_stream": Out(stream.Signature(match_output_layout(p))),
            "theta_we": In(1),
            "theta_addr": In(p.layer_bits),
            "theta_data": In(p.theta_bits),
            "busy": Out(1),
            "error": Out(1),
            "cause": Out(MatchError),
            **activity_members(),
            "uniques": Out(p.position_bits),
        }

    def elaborate(self, platform):
        p = self._params
        m = Module()

        m.submodules.thetas = thetas = ThresholdTable(p)
        m.submodules.job = job = JobControl(p)
        m.d.comb += [
            thetas.w_en.eq(self.theta_we),
            thetas.w_addr.eq(self.theta_addr),
            thetas.w_data.eq(self.theta_data),
            self.error.eq(job.error),
            self.cause.eq(job.cause),
        ]
        wiring.connect(m, job.theta, thetas.read)
        extras = self._extras(m, job)
        if extras is None:
            m.d.comb += self.busy.eq(job.busy)
            wiring.connect(m, cfg=wiring.flipped(self.cfg_stream), job=job.cfg_stream)
        else:
            # The next job waits until the map code and the statistics of this one are out.
            idle, extra_inputs = extras
            m.d.comb += [
                self.busy.eq(job.busy | ~idle),
                job.cfg_stream.valid.eq(self.cfg_stream.valid & idle),
                job.cfg_stream.payload.eq(self.cfg_stream.payload),
                self.cfg_stream.ready.eq(job.cfg_stream.ready & idle),
            ]
        wiring.connect(m, tokens=wiring.flipped(self.i_stream), job=job.i_stream)

        # The pipeline. Every stage takes the job's start (``clear``) and ``flush``.
        m.submodules.tokens = tokens = TokenRegister(p)
        m.submodules.fetch = fetch = CandidateFetch(p)
        m.submodules.bank = bank = ComparatorBank(p, icg_cell=self._icg_cell, gate=self._gate)
        m.submodules.select = select = best_candidate(p)
        m.submodules.index = index = UniqueIndexer(p)
        m.submodules.output = output = OutputStage(p)
        # The stages are cleared a cycle after the configuration beat, from a register: no token
        # enters before the job's RUN state, and as the reset of the window's slot flags and
        # the indexer's counts, ``start`` (the caller's ``valid``) was the FocusUnit's ECP5
        # limit.
        clear = Signal(name="stage_clear")
        m.d.sync += clear.eq(job.start)
        for stage in (tokens, fetch, bank, index):
            m.d.comb += stage.clear.eq(clear)
        # The stages before the output drop what they hold a cycle after the bad position
        # (``stage_flush``, a register): ``flush`` follows the position compare of the token
        # offered, and as the reset of every stage's registers it was the matcher's ECP5 limit.
        # They may move on in between, so in that cycle no beat leaves the unique indexer; the
        # output stage, the map coder and the frame statistics take ``flush`` as it comes, so a
        # failed job delivers the same beats as with every stage flushed at once.
        stage_flush = Signal()
        m.d.sync += stage_flush.eq(job.flush)
        for stage in (tokens, fetch, bank, select, index):
            m.d.comb += stage.flush.eq(stage_flush)
        m.d.comb += output.flush.eq(job.flush)
        m.d.comb += [
            tokens.offsets.eq(job.offsets),
            fetch.x_store.eq(tokens.x_store),
            select.theta_sq.eq(job.theta_sq),
            output.mean.eq(job.mean),
            self.active.eq(bank.active),
            self.gated.eq(bank.gated),
            self.uniques.eq(index.uniques),
            job.out_valid.eq(self.o_stream.valid),
            job.out_last.eq(self.o_stream.valid & self.o_stream.ready
                            & self.o_stream.payload.last),
        ]

        # Each token's vector waits in a FIFO from the input register until its map beat leaves
        # the output register, instead of riding every stage. Its depth covers every token the
        # stages hold, and one more for the entry read in the cycle the next one is written, so
        # it never holds the pipeline back; a full FIFO would only stall the fork, never lose a
        # vector.
        stages = (tokens, fetch, bank, select, index, output)
        # Each stage's output as the next stage sees it: through a ready slice after the cuts.
        outs, cuts = {}, []
        for stage in stages[:-1]:
            outs[stage] = stage.o_stream
            if type(stage) in _READY_CUTS:
                cut = ReadySlice(stage.o_stream.payload.shape())
                m.submodules[f"{type(stage).__name__}_ready"] = ResetInserter(
                    {"sync": stage_flush})(cut)
                wiring.connect(m, stage.o_stream, cut.i_stream)
                outs[stage] = cut.o_stream
                cuts.append(cut)
        depth = sum(s.capacity for s in (*stages, *cuts)) + 1
        m.submodules.fork = fork = StreamFork(match_input_layout(p), 2)
        vectors = self._vector_queue(m, fork.o_streams[1], depth, output.v_flush)

        wiring.connect(m, job.o_stream, fork.i_stream)
        wiring.connect(m, fork.o_streams[0], tokens.i_stream)
        for stage, after in zip(stages[:4], stages[1:5], strict=True):
            wiring.connect(m, outs[stage], after.i_stream)
        # The unique indexer's beats, held back in the cycle its stage flush is pending.
        resolved = stream.Signature(indexed_layout(p)).create(path=("resolved",))
        m.d.comb += [
            resolved.valid.eq(index.o_stream.valid & ~stage_flush),
            resolved.payload.eq(index.o_stream.payload),
            index.o_stream.ready.eq(resolved.ready & ~stage_flush),
        ]
        if extras is None:
            wiring.connect(m, resolved, output.i_stream)
        else:
            # Each resolved token goes to the output stage and to the map coder and/or the frame
            # statistics; the fork drops its beat with the rest of a flushed job.
            fork = StreamFork(indexed_layout(p), 1 + len(extra_inputs))
            m.submodules.symbols = ResetInserter({"sync": job.flush})(fork)
            wiring.connect(m, resolved, fork.i_stream)
            wiring.connect(m, fork.o_streams[0], output.i_stream)
            for k, sink in enumerate(extra_inputs):
                src = fork.o_streams[k + 1]
                m.d.comb += [
                    sink.valid.eq(src.valid),
                    sink.payload.code.eq(src.payload.code),
                    sink.payload.last.eq(src.payload.job_last),
                    *([sink.payload.position.eq(src.payload.position)]
                      if "position" in sink.payload.shape().members else []),
                    src.ready.eq(sink.ready),
                ]
        wiring.connect(m, vectors.r_stream, output.v_stream)
        wiring.connect(m, output.o_stream, wiring.flipped(self.o_stream))
        return m

    def _vector_queue(self, m, token_beat, depth, flush):
        """The FIFO of the tokens' vectors, written from ``token_beat`` (a fork's output)
        through a register stage, both cleared by ``flush``: its stream."""
        p = self._params
        width = p.dim * p.elem_bits
        # The register loads every offered vector while it has room, so the position check
        # behind ``valid`` reaches one flip-flop, not the FIFO's write enable (a limit before).
        # A vector then waits one cycle more; it is read a map beat (30 cycles or more) later.
        buffer = StreamBuffer(width, keep_last=False)
        vectors = fifo.SyncFIFOBuffered(width=width, depth=depth)
        m.submodules.vector_register = ResetInserter({"sync": flush})(buffer)
        m.submodules.vectors = ResetInserter({"sync": flush})(vectors)
        m.d.comb += [
            buffer.i_stream.valid.eq(token_beat.valid),
            buffer.i_stream.payload.eq(token_beat.payload.vector),
            token_beat.ready.eq(buffer.i_stream.ready),
        ]
        wiring.connect(m, buffer.o_stream, vectors.w_stream)
        return vectors

    def _extras(self, m, job):
        """The map coder and the frame statistics, as built: None, or (all of them idle, their
        symbol inputs)."""
        if not (self._map_code or self._frame_stats):
            return None
        p = self._params
        idle, inputs = [], []
        code_cfg = Signal(map_code_config_layout(p))
        frame_stride = Signal(p.position_bits)
        with m.If(job.start):
            m.d.sync += frame_stride.eq(self.cfg_stream.payload.frame_stride)
            if self._map_code:
                m.d.sync += code_cfg.eq(self.code_cfg)
        if self._map_code:
            m.submodules.coder = coder = MapCoder(p)
            m.d.comb += [
                coder.start.eq(job.go),
                coder.variable.eq(code_cfg.variable),
                coder.ranking.eq(code_cfg.ranking),
                coder.stop.eq(job.flush),
                self.code_counts.eq(coder.counts),
                self.code_error.eq(coder.error),
            ]
            wiring.connect(m, coder.o_stream, wiring.flipped(self.code_stream))
            idle.append(coder.idle)
            inputs.append(coder.i_stream)
        if self._frame_stats:
            m.submodules.frames = frames = FrameStats(p)
            m.d.comb += [
                frames.start.eq(job.go),
                frames.stop.eq(job.flush),
                frames.frame_stride.eq(frame_stride),
            ]
            wiring.connect(m, frames.o_stream, wiring.flipped(self.frame_stream))
            idle.append(frames.idle)
            inputs.append(frames.i_stream)
        all_idle = Signal()
        m.d.comb += all_idle.eq(Cat(*idle).all())
        return all_idle, inputs
