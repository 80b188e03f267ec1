"""The bridge's command side: :class:`CommandExecutor` (checks and runs each request, builds its
reply) and :class:`StreamEngine` (moves PUSH and PULL beats between the buffer and the streams).

Both work on the bridge's buffer (:class:`boards.framing.BufferSignature`): the request payload is
in it when a request arrives, and the reply data must be in it when the reply goes to the framer.
Commands and statuses as in :mod:`boards.protocol`.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Shape, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.lib.register_bus import RegisterSignature

from .framing import BufferSignature, reply_layout, request_layout
from .protocol import Cmd, Status, beat_bytes

__all__ = ["stream_job_layout", "stream_result_layout", "CommandExecutor", "StreamEngine"]


def stream_job_layout():
    """A PUSH or PULL for the :class:`StreamEngine`: the port (it exists), and ``n``: for a PUSH
    the request's payload length (the port byte, then the beats from buffer byte 1 on), for a PULL
    the beats asked for."""
    return data.StructLayout({"pull": 1, "port": 8, "n": 16})


def stream_result_layout(max_len):
    """What a PUSH or PULL did: ``beats`` handed over (PUSH; ``timeout``: it stopped on the push
    timeout) or ``length`` bytes written to the buffer (PULL)."""
    return data.StructLayout({"timeout": 1, "beats": range(max_len + 1),
                              "length": range(max_len + 1)})


def _payload_width(signature):
    return Shape.cast(signature.members["payload"].shape).width


def _per_port(m, ports):
    """Cases of an enclosing ``m.Switch(port)``, one per existing port: yields (stream, bytes
    per beat)."""
    for i, s in enumerate(ports):
        with m.Case(i):
            yield s, beat_bytes(_payload_width(s.signature))


def _answer(m, state, request, answer):
    """FSM state ``state``: offers ``answer`` (its payload is driven elsewhere) and, as it is
    taken, takes ``request`` and goes back to IDLE. The request stays on offer until its answer
    leaves, so its payload is the answer's context all along."""
    with m.State(state):
        m.d.comb += answer.valid.eq(1)
        with m.If(answer.ready):
            m.d.comb += request.ready.eq(1)
            m.next = "IDLE"


class CommandExecutor(wiring.Component):
    """Checks each request's command and arguments, runs it, and hands its reply to the framer.

    PING, READ_REG and WRITE_REG run here (a few cycles; a register read has one cycle of latency,
    see :class:`rtl.lib.register_bus.RegisterSignature`), PUSH and PULL as a job of the
    :class:`StreamEngine`. A request the parser ended with an error status is answered with that
    status. The request is taken when its reply has been sent.

    Parameters
    ----------
    max_len : int
    info : bytes
        The PING reply data.
    n_push, n_pull : int
        How many push and pull ports exist (BAD_PORT above).

    Members
    -------
    i_stream : In(stream.Signature(request_layout(max_len)))
    o_stream : Out(stream.Signature(reply_layout(max_len)))
    jobs : Out(stream.Signature(stream_job_layout()))
    results : In(stream.Signature(stream_result_layout(max_len)))
    buf : Out(BufferSignature(max_len))
    bus : Out(RegisterSignature())
    """

    def __init__(self, *, max_len, info, n_push, n_pull):
        self._max_len = max_len
        self._info = bytes(info)
        self._n_push = n_push
        self._n_pull = n_pull
        super().__init__({
            "i_stream": In(stream.Signature(request_layout(max_len))),
            "o_stream": Out(stream.Signature(reply_layout(max_len))),
            "jobs": Out(stream.Signature(stream_job_layout())),
            "results": In(stream.Signature(stream_result_layout(max_len))),
            "buf": Out(BufferSignature(max_len)),
            "bus": Out(RegisterSignature()),
        })

    def elaborate(self, platform):
        m = Module()
        req, buf, bus = self.i_stream.payload, self.buf, self.bus
        result = self.results.payload
        status = Signal(8)
        rlen = Signal(range(self._max_len + 1))
        idx = Signal(range(self._max_len + 1))
        # Arguments are shifted in at the top from the buffer (WRITE_REG's word, PULL's count);
        # reply words are shifted out at the bottom into it (READ_REG's word, PUSH's count).
        word = Signal(32)
        m.d.comb += [
            # Meaningful only with r_en or w_en (RegisterSignature): no need to gate them.
            bus.addr.eq(req.arg),
            bus.w_data.eq(word),
            self.o_stream.payload.cmd.eq(req.cmd),
            self.o_stream.payload.status.eq(status),
            self.o_stream.payload.length.eq(rlen),
            self.jobs.payload.pull.eq(req.cmd == Cmd.PULL),
            self.jobs.payload.port.eq(req.arg),
            self.jobs.payload.n.eq(Mux(req.cmd == Cmd.PULL, word[16:], req.length)),
        ]

        def reply(code, n=0):
            m.d.sync += [status.eq(code), rlen.eq(n)]
            m.next = "REPLY"

        def reply_word(value, n):
            """Reply with the ``n`` low bytes of ``value`` (the status is set before)."""
            m.d.sync += [word.eq(value), idx.eq(0), rlen.eq(n)]
            m.next = "STORE"

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.i_stream.valid):
                    m.d.sync += [idx.eq(0), status.eq(Status.OK)]
                    with m.If(req.status != Status.OK):
                        reply(req.status)               # the frame was bad: say why
                    with m.Else():
                        self._dispatch(m, req, reply, idx)

            with m.State("PING"):
                info = Array(Const(b, 8) for b in self._info)
                m.d.comb += [buf.w_addr.eq(idx), buf.w_data.eq(info[idx]), buf.w_en.eq(1)]
                m.d.sync += idx.eq(idx + 1)
                with m.If(idx == len(self._info) - 1):
                    reply(Status.OK, len(self._info))

            with m.State("READ_REG"):
                m.d.comb += bus.r_en.eq(1)
                m.next = "READ_DATA"
            with m.State("READ_DATA"):
                reply_word(bus.r_data, 4)

            with m.State("STORE"):
                m.d.comb += [buf.w_addr.eq(idx), buf.w_data.eq(word[:8]), buf.w_en.eq(1)]
                m.d.sync += [idx.eq(idx + 1), word.eq(word >> 8)]
                with m.If(idx == rlen - 1):
                    m.next = "REPLY"

            # WRITE_REG's and PULL's arguments after the first byte: 2 cycles a byte.
            with m.State("ARGS_ADDR"):
                m.d.comb += buf.r_addr.eq(idx)
                m.next = "ARGS_DATA"
            with m.State("ARGS_DATA"):
                m.d.sync += [word.eq(Cat(word[8:], buf.r_data)), idx.eq(idx + 1)]
                with m.If(idx != req.length - 1):
                    m.next = "ARGS_ADDR"
                with m.Elif(req.cmd == Cmd.PULL):
                    m.next = "STREAM"
                with m.Else():
                    m.next = "WRITE_REG"
            with m.State("WRITE_REG"):
                m.d.comb += bus.w_en.eq(1)
                reply(Status.OK)

            with m.State("STREAM"):
                m.d.comb += [self.jobs.valid.eq(1), self.results.ready.eq(1)]
                with m.If(self.results.valid):
                    with m.If(req.cmd == Cmd.PULL):
                        reply(Status.OK, result.length)
                    with m.Else():
                        m.d.sync += status.eq(Mux(result.timeout, Status.TIMEOUT, Status.OK))
                        reply_word(result.beats, 2)

            _answer(m, "REPLY", self.i_stream, self.o_stream)
        return m

    def _dispatch(self, m, req, reply, idx):
        """The state after IDLE for a good frame: a command's first state, or an error reply."""
        # Per command, its checks in order (each a condition and the status it replies with)
        # and its first state. The argument states read the buffer from byte 1 on.
        rules = {
            Cmd.PING: ([(req.length != 0, Status.BAD_LENGTH)], "PING"),
            Cmd.READ_REG: ([(req.length != 1, Status.BAD_LENGTH)], "READ_REG"),
            Cmd.WRITE_REG: ([(req.length != 5, Status.BAD_LENGTH)], "ARGS_ADDR"),
            Cmd.PUSH: ([(req.length == 0, Status.BAD_LENGTH),
                        (req.arg >= self._n_push, Status.BAD_PORT),
                        (~req.whole, Status.BAD_LENGTH)], "STREAM"),
            Cmd.PULL: ([(req.length != 3, Status.BAD_LENGTH),
                        (req.arg >= self._n_pull, Status.BAD_PORT)], "ARGS_ADDR"),
        }
        with m.Switch(req.cmd):
            for cmd, (checks, state) in rules.items():
                with m.Case(cmd):
                    (bad, status), *more = checks
                    with m.If(bad):
                        reply(status)
                    for bad, status in more:
                        with m.Elif(bad):
                            reply(status)
                    with m.Else():
                        if state == "ARGS_ADDR":
                            m.d.sync += idx.eq(1)
                        m.next = state
            with m.Default():
                reply(Status.UNKNOWN_CMD)


class StreamEngine(wiring.Component):
    """PUSH and PULL: beats between the buffer and the bridge's streams.

    PUSH: the beats from buffer byte 1 on, each ``ceil(width / 8)`` little-endian bytes, go to the
    port's one-beat output register in order (2 cycles a byte, then the wait for the register to
    empty); valid and payload hold until the transfer and are never withdrawn, also not on a
    timeout (the push timeout: the register stayed full that many cycles). PULL: ``ready`` is high
    only while waiting for a beat, and comes from a register; up to ``n`` beats (clamped to what
    the buffer holds) are written to the buffer from byte 0 on (1 cycle a byte), until a beat
    does not come within the pull timeout. A job is taken when its result is.

    Parameters
    ----------
    max_len : int
    push, pull : sequence of stream.Signature
    push_timeout, pull_timeout : int
        Cycles.

    Members
    -------
    i_stream : In(stream.Signature(stream_job_layout()))
    o_stream : Out(stream.Signature(stream_result_layout(max_len)))
    buf : Out(BufferSignature(max_len))
    push_<i> : Out(push[i])
    pull_<i> : In(pull[i])
    """

    def __init__(self, *, max_len, push, pull, push_timeout, pull_timeout):
        self._max_len = max_len
        self._push_timeout = push_timeout
        self._pull_timeout = pull_timeout
        self._n_push, self._n_pull = len(push), len(pull)
        members = {
            "i_stream": In(stream.Signature(stream_job_layout())),
            "o_stream": Out(stream.Signature(stream_result_layout(max_len))),
            "buf": Out(BufferSignature(max_len)),
        }
        for i, s in enumerate(push):
            members[f"push_{i}"] = Out(s)
        for i, s in enumerate(pull):
            members[f"pull_{i}"] = In(s)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        max_len, job, buf = self._max_len, self.i_stream.payload, self.buf
        pushes = [getattr(self, f"push_{i}") for i in range(self._n_push)]
        pulls = [getattr(self, f"pull_{i}") for i in range(self._n_pull)]
        nb_max = max([1, *(beat_bytes(_payload_width(s.signature)) for s in pushes + pulls)])
        idx = Signal(range(max_len + 1))
        beats = Signal(range(max_len + 1))
        count = Signal(range(max_len + 1))
        beat_pos = Signal(range(nb_max))
        timer = Signal(range(max(self._push_timeout, self._pull_timeout) + 1))
        timeout = Signal()
        beat = Signal(8 * nb_max)
        m.d.comb += [self.o_stream.payload.timeout.eq(timeout),
                     self.o_stream.payload.beats.eq(beats), self.o_stream.payload.length.eq(idx)]

        for p in pushes:
            with m.If(p.ready):
                m.d.sync += p.valid.eq(0)
        # Bit i is pull port i's ready: in PULL_WAIT on port i while beats < count, set by the
        # transitions into that state, so the design's ready is a register, not this FSM's
        # decode (on the UP5K that decode was the board's longest path, into the encoder's).
        pulling = Signal(max(1, self._n_pull))
        m.d.comb += [p.ready.eq(pulling[i]) for i, p in enumerate(pulls)]
        m.d.sync += pulling.eq(0)

        def done(timed_out=0):
            m.d.sync += timeout.eq(timed_out)
            m.next = "DONE"

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.i_stream.valid):
                    m.d.sync += [beats.eq(0), beat_pos.eq(0), timer.eq(0)]
                    with m.If(job.pull):
                        m.d.sync += idx.eq(0)               # the first byte of the reply data
                        with m.Switch(job.port):
                            for i, (_, nb) in enumerate(_per_port(m, pulls)):
                                m.d.sync += [count.eq(Mux(job.n > max_len // nb, max_len // nb,
                                                          job.n)),
                                             pulling.eq(Mux(job.n == 0, 0, 1 << i))]
                        m.next = "PULL_WAIT"
                    with m.Else():
                        m.d.sync += idx.eq(1)               # the first beat, after the port
                        m.next = "PUSH_ADDR"

            with m.State("PUSH_ADDR"):
                m.d.comb += buf.r_addr.eq(idx)
                with m.If(idx == job.n):
                    done()
                with m.Else():
                    m.next = "PUSH_DATA"
            with m.State("PUSH_DATA"):
                # Shift the bytes in at the top: after nb of them the beat is the top nb bytes
                # (a shift register is much smaller than a byte-addressed write).
                m.d.sync += [beat.eq(Cat(beat[8:], buf.r_data)), idx.eq(idx + 1)]
                with m.Switch(job.port):
                    for _, nb in _per_port(m, pushes):
                        with m.If(beat_pos == nb - 1):
                            m.d.sync += [beat_pos.eq(0), timer.eq(0)]
                            m.next = "PUSH_WAIT"
                        with m.Else():
                            m.d.sync += beat_pos.eq(beat_pos + 1)
                            m.next = "PUSH_ADDR"
            with m.State("PUSH_WAIT"):
                with m.Switch(job.port):
                    for p, nb in _per_port(m, pushes):
                        with m.If(~p.valid | p.ready):
                            top = beat[8 * (nb_max - nb):]
                            m.d.sync += [p.payload.eq(top[:_payload_width(p.signature)]),
                                         p.valid.eq(1), beats.eq(beats + 1)]
                            m.next = "PUSH_ADDR"
                        with m.Elif(timer == self._push_timeout):
                            done(timed_out=1)
                        with m.Else():
                            m.d.sync += timer.eq(timer + 1)

            with m.State("PULL_WAIT"):
                with m.If(beats == count):
                    done()
                with m.Else():
                    with m.Switch(job.port):
                        for i, (p, _) in enumerate(_per_port(m, pulls)):
                            with m.If(p.valid):
                                m.d.sync += [beat.eq(Value.cast(p.payload)), beat_pos.eq(0)]
                                m.next = "PULL_STORE"
                            with m.Elif(timer == self._pull_timeout):
                                done()
                            with m.Else():
                                m.d.sync += [timer.eq(timer + 1), pulling.eq(1 << i)]
            with m.State("PULL_STORE"):
                m.d.comb += [buf.w_addr.eq(idx), buf.w_data.eq(beat[:8]), buf.w_en.eq(1)]
                m.d.sync += [idx.eq(idx + 1), beat.eq(beat >> 8)]
                with m.Switch(job.port):
                    for i, (_, nb) in enumerate(_per_port(m, pulls)):
                        with m.If(beat_pos == nb - 1):
                            m.d.sync += [beats.eq(beats + 1), timer.eq(0),
                                         pulling.eq(Mux(beats + 1 == count, 0, 1 << i))]
                            m.next = "PULL_WAIT"
                        with m.Else():
                            m.d.sync += beat_pos.eq(beat_pos + 1)

            _answer(m, "DONE", self.i_stream, self.o_stream)
        return m
