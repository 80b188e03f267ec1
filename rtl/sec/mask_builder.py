"""The offset decoder's mask builder (spec 3.3): a job's kept indices in, its keep mask out."""

from amaranth.hdl import Cat, Module, ResetInserter, Signal, unsigned
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..layouts import mask_beat_layout

__all__ = ["MaskBuilder", "INDEX_FIFO_DEPTH"]

#: Depth of the mask builder's index queue.
INDEX_FIFO_DEPTH = 4


class MaskBuilder(FocusBlock):
    """Builds one job's keep mask from its kept indices: ceil(M/lanes) beats of
    :func:`rtl.layouts.mask_beat_layout`, bit i of beat b set when token b*lanes + i was sent
    (padding bits past M 0, ``last`` on the final beat).

    A job starts with ``start``, holds its M on ``M`` until ``busy`` falls, sends its kept
    indices on ``i_stream`` in ascending order, each < M, and raises ``i_done`` once it will send
    no further index (in the cycle of the last index's transfer or later, or at any time for a
    job with none); it holds ``i_done`` until the next ``start``. ``abort`` drops the rest of the
    job: the queue is cleared and no further beat is written (a beat already written stays on
    ``o_stream`` until it is taken). :class:`rtl.sec.offset_decoder.OffsetDecoder` drives
    ``start`` with its config beat, ``M`` with its register of the job's M, ``abort`` while no
    job runs or after an error, and ``i_done`` when its codes are all decoded.

    Datapath: the indices go through a queue of :data:`INDEX_FIFO_DEPTH` entries
    (``fifo.SyncFIFOBuffered``); each cycle the builder either sets the bit of the index at the
    queue's head in the current beat, or writes the current beat to ``o_stream``'s register (and
    sets the head's bit in the next beat when it lies there). Once ``i_done`` is high and the
    queue is empty, the remaining beats are written one per cycle up to the final one.

    Latency and throughput: an index transferred in cycle t reaches the queue's head in cycle
    t + 2 (the buffered queue's output register) and sets its bit in that cycle. Indices in the
    same beat take one cycle each; a beat is written in its own cycle, so a job of n indices
    takes at most n + ceil(M/lanes) cycles of work, and a gap that skips b whole beats costs b
    cycles, during which ``i_stream`` keeps taking indices until the queue is full. Once
    ``i_done`` is high and the queue is empty, the remaining beats are written one per cycle;
    ``busy`` falls in the cycle after the final one is written (so a job with no index and
    ``i_done`` from the cycle after ``start`` writes its beats in the next ceil(M/lanes) cycles).

    Back-pressure: ``i_stream.ready`` is the queue's room and never depends on
    ``i_stream.valid``, so a producer may offer an index only while ``ready`` is high (the
    decoder does: its index goes to its own ``idx_stream`` and here in the same cycle, or to
    neither). ``o_stream`` back-pressure holds the current beat; the builder then stops, and
    the queue fills and holds ``i_stream``. No index or beat is lost or repeated.

    Parameters
    ----------
    params : FocusParams
        Uses ``tokens`` and ``lanes`` (and the derived ``count_bits`` and ``index_bits``).

    Members
    -------
    start : In(1)
        Begin a job: clears the queue and the beat under construction (wins over ``abort``).
    M : In(count_bits)
        The job's tokens, 1 .. ``params.tokens``; held from ``start`` until ``busy`` falls.
    abort : In(1)
        While high (and ``start`` low): clear the queue and write no further beat (the job
        stays unfinished).
    i_stream : In(stream.Signature(unsigned(index_bits)))
        The job's kept indices, ascending, each < M.
    i_done : In(1)
        The job sends no further index on ``i_stream``; held until the next ``start``.
    o_stream : Out(stream.Signature(mask_beat_layout(params)))
        The keep mask.
    busy : Out(1)
        A mask is being built: from the cycle after ``start`` until the final beat has been
        written to ``o_stream`` (it may still wait for ``ready`` there), or ``abort``.
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "start": In(1),
            "M": In(p.count_bits),
            "abort": In(1),
            "i_stream": In(stream.Signature(unsigned(p.index_bits))),
            "i_done": In(1),
            "o_stream": Out(stream.Signature(mask_beat_layout(p))),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        p = self._params
        lanes, cb = p.lanes, p.count_bits
        m = Module()
        i, o = self.i_stream, self.o_stream

        # The queue, cleared by a new job and by an abort.
        queue = fifo.SyncFIFOBuffered(width=p.index_bits, depth=INDEX_FIFO_DEPTH)
        m.submodules.queue = ResetInserter(self.start | self.abort)(queue)
        wiring.connect(m, wiring.flipped(i), queue.w_stream)
        head = queue.r_stream

        base = Signal(cb + 1)           # token index of the current beat's lane 0
        bits = Signal(lanes)            # the current beat
        emit = Signal()                 # write the current beat to o_stream
        emit_last = Signal()            # ... and it is the final one

        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(self.start):
                    m.next = "BUILD"
            with m.State("BUILD"):
                with m.If(~self.start & (self.abort | emit_last)):
                    m.next = "IDLE"
        build = fsm.ongoing("BUILD") & ~self.abort
        m.d.comb += self.busy.eq(fsm.ongoing("BUILD"))

        out_free = ~o.valid | o.ready
        rel = Signal(cb + 2)            # the head's index, relative to the current beat
        m.d.comb += rel.eq(head.payload - base)
        with m.If(build & head.valid):
            with m.If(rel < lanes):
                m.d.comb += head.ready.eq(1)
                m.d.sync += bits.eq(bits | Cat(*(rel == k for k in range(lanes))))
            with m.Elif(out_free):
                m.d.comb += emit.eq(1)
                m.d.sync += base.eq(base + lanes)
                with m.If(rel < 2 * lanes):
                    m.d.comb += head.ready.eq(1)
                    m.d.sync += bits.eq(Cat(*(rel == lanes + k for k in range(lanes))))
                with m.Else():
                    m.d.sync += bits.eq(0)
        # The indices are all in: the rest of the beats, up to the final one.
        with m.Elif(build & self.i_done & ~i.valid & (queue.level == 0) & out_free):
            m.d.comb += [emit.eq(1), emit_last.eq(base + lanes >= self.M)]
            m.d.sync += [base.eq(base + lanes), bits.eq(0)]
        with m.If(self.start):
            m.d.sync += [base.eq(0), bits.eq(0)]

        with m.If(emit):
            m.d.sync += [o.valid.eq(1), o.payload.keep.eq(bits), o.payload.last.eq(emit_last)]
        with m.Elif(o.ready):
            m.d.sync += o.valid.eq(0)
        return m
