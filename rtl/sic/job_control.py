"""The block matcher's job control: configuration, the position check, the error path (spec 4.2)."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import enum, stream
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock
from ..lib.arith import unsigned_square
from .match_layouts import (
    CANDIDATES,
    match_config_layout,
    match_input_layout,
    offsets_layout,
)
from .threshold_table import threshold_read_signature

__all__ = ["JobControl", "MatchError"]


class MatchError(enum.Enum, shape=3):
    """Why the block matcher raised ``error`` (its ``cause`` output, held with ``error``)."""
    NONE = 0
    #: frame_stride + row_stride + 1 >= window (the configuration beat).
    GEOMETRY = 1
    #: layer >= layers (the configuration beat).
    LAYER = 2
    #: A job asking for ``mean`` on a build without it (``representatives = "first"``).
    MEAN = 3
    #: A position not greater than the previous one.
    POSITION = 4


class JobControl(FocusBlock):
    """Takes a job's configuration beat, passes its tokens on, and rejects bad jobs.

    A job is one ``cfg_stream`` beat, taken only when idle, then tokens up to the one with
    ``last``. On the configuration beat the block loads the layer's theta_q (``theta``, valid
    from the next cycle on and held for the job) and registers the candidate offsets and the
    representative. One cycle later (state ``SETUP``, where it registers ``theta_sq`` =
    theta_q**2 for the job) it either starts passing tokens (``RUN``) or, for ``frame_stride +
    row_stride + 1 >= window``, ``layer >= layers`` or ``mean`` on a build without it
    (``representatives = "first"``), raises ``error`` and drops the job's tokens (``DROP``).
    ``cause`` (:class:`MatchError`) says which, the first that applies in that order.

    Tokens: combinational, latency 0. In ``RUN``, ``i_stream`` is ``o_stream`` (``ready`` is
    ``o_stream.ready``, throughput one token per cycle) except for a token whose position is not
    greater than the previous token's: it is not passed on, ``flush`` is high in the first cycle
    it is offered (everything in flight after this block is to be dropped), ``error`` rises, and
    it and the rest of the job are taken and dropped up to its ``last`` token (the bad token
    with ``o_stream``'s ready, or in the next cycle). So ``flush`` depends on the token and this
    block's state only, not on the back-pressure chain behind it (whose end it would otherwise
    extend into every stage's reset), and ``ready`` does not depend on the position compare.
    After a job's last token, the next configuration beat waits for the job's last output beat
    (``out_last``), or after an error for the output beat being offered to leave (``out_valid``
    low): a beat offered before the error is still delivered.

    Parameters
    ----------
    params : FocusParams
        Uses ``window``, ``layers`` and the widths.

    Members
    -------
    cfg_stream : In(stream.Signature(match_config_layout(params)))
    i_stream : In(stream.Signature(match_input_layout(params)))
    o_stream : Out(stream.Signature(match_input_layout(params)))
        The job's tokens, checked.
    theta : Out(threshold_read_signature(params))
        Loads the job's theta_q from the threshold table; ``theta.theta_q`` is the job's.
    start : Out(1)
        The configuration beat is taken this cycle: the stages clear their job state.
    flush : Out(1)
        A bad position is taken this cycle: the stages drop everything in flight.
    go : Out(1)
        The job's configuration is good and its tokens are passed on from the next cycle on (the
        map coder and the frame statistics start their job).
    offsets : Out(offsets_layout(params))
    mean : Out(1)
        The job's representative is ``mean``.
    theta_sq : Out(2 * theta_bits)
        theta_q**2 of the job, from the cycle after ``SETUP``.
    cause : Out(MatchError)
        Why ``error`` is high (``NONE`` while it is low).
    out_valid, out_last : In(1)
        The block's output offers a beat; its beat with ``last`` is transferred.
    busy, error : Out(1)
        As :class:`~rtl.sic.block_matcher.BlockMatcher`'s.
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "cfg_stream": In(stream.Signature(match_config_layout(p))),
            "i_stream": In(stream.Signature(match_input_layout(p))),
            "o_stream": Out(stream.Signature(match_input_layout(p))),
            "theta": Out(threshold_read_signature(p)),
            "start": Out(1),
            "flush": Out(1),
            "go": Out(1),
            "offsets": Out(offsets_layout(p)),
            "mean": Out(1),
            "theta_sq": Out(2 * p.theta_bits),
            "cause": Out(MatchError),
            "out_valid": In(1),
            "out_last": In(1),
            "busy": Out(1),
            "error": Out(1),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        cfg, i, o = self.cfg_stream, self.i_stream, self.o_stream
        fs, hs, layer = cfg.payload.frame_stride, cfg.payload.row_stride, cfg.payload.layer

        mean = Signal()
        bad_cfg = Signal(MatchError)    # why the job's configuration is rejected (or NONE)
        started = Signal()          # the job has passed a token on
        prev_pos = Signal(p.position_bits)
        bad_pos = Signal()
        m.d.comb += [
            o.payload.eq(i.payload),
            bad_pos.eq(started & (i.payload.position <= prev_pos)),
            self.mean.eq(mean),
        ]

        # FS + HS + 1 >= window without a 33-bit addition and compare after the input: either
        # stride has a bit at or above 2**k >= window, or the k-bit sum is checked.
        k = p.window.bit_length()
        too_far = Signal()
        m.d.comb += too_far.eq((fs >> k).any() | (hs >> k).any()
                               | (fs[:k] + hs[:k] + 1 >= p.window))

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
                    self.theta.en.eq(cfg.valid),
                    self.theta.layer.eq(layer),
                    self.start.eq(cfg.valid),
                ]
                with m.If(cfg.valid):
                    no_mean = 0 if p.mean_unit else cfg.payload.mean
                    m.d.sync += [
                        mean.eq(cfg.payload.mean),
                        bad_cfg.eq(Mux(too_far, MatchError.GEOMETRY,
                                       Mux(layer >= p.layers, MatchError.LAYER,
                                           Mux(no_mean, MatchError.MEAN, MatchError.NONE)))),
                        started.eq(0),
                        self.error.eq(0),
                        self.cause.eq(MatchError.NONE),
                    ]
                    for c in range(1, CANDIDATES + 1):
                        f, dh, dw = c >> 2, (c >> 1) & 1, c & 1
                        m.d.sync += self.offsets[c - 1].eq((fs if f else 0) + (hs if dh else 0)
                                                           + dw)
                    m.next = "SETUP"
            with m.State("SETUP"):
                # theta_q arrives from the table in this cycle.
                m.d.comb += self.busy.eq(1)
                m.d.sync += self.theta_sq.eq(unsigned_square(m, self.theta.theta_q,
                                                                     2 * p.theta_bits))
                with m.If(bad_cfg != MatchError.NONE):
                    m.d.sync += [self.error.eq(1), self.cause.eq(bad_cfg)]
                    m.next = "DROP"
                with m.Else():
                    m.d.comb += self.go.eq(1)
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [
                    self.busy.eq(1),
                    o.valid.eq(i.valid & ~bad_pos),
                    i.ready.eq(o.ready),
                ]
                with m.If(i.valid & bad_pos):
                    m.d.comb += self.flush.eq(1)
                    m.d.sync += [self.error.eq(1), self.cause.eq(MatchError.POSITION)]
                    # Taken now if the stages are ready, else by DROP in the next cycle.
                    with m.If(i.payload.last & o.ready):
                        m.next = "WAIT"
                    with m.Else():
                        m.next = "DROP"
                with m.Elif(i.valid & o.ready):
                    m.d.sync += [started.eq(1), prev_pos.eq(i.payload.position)]
                    with m.If(i.payload.last):
                        m.next = "FINISH"
            with m.State("FINISH"):
                m.d.comb += self.busy.eq(1)
                with m.If(self.out_last):
                    m.next = "IDLE"
            with m.State("DROP"):
                # Consume the rest of a failed job, up to its last token, without looking at it.
                m.d.comb += [self.busy.eq(1), i.ready.eq(1)]
                with m.If(i.valid & i.payload.last):
                    m.next = "WAIT"
            with m.State("WAIT"):
                # A beat offered on the output before the error is still delivered.
                m.d.comb += self.busy.eq(1)
                with m.If(~self.out_valid):
                    m.next = "IDLE"
        return m
