"""The Focus unit's code memory: the last SEC job's offset code and its header, for SIC jobs to
replay."""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..block import FocusBlock

__all__ = ["CodeMemory", "CodeWriteSignature", "CodeReadSignature", "code_header_layout"]


def code_header_layout(p):
    """What a SIC job needs to know of the stored code besides its words: the SEC job's M, its
    kept count n and the code's length ``nbits``."""
    return data.StructLayout({
        "m": unsigned(p.count_bits),
        "kept": range(p.tokens + 1),
        "nbits": unsigned(p.nbits_bits),
    })


class CodeWriteSignature(wiring.Signature):
    """The code memory's write side, seen from the writer (the SEC sequencer).

    Members
    -------
    rewind : Out(1)
        An SEC job starts: the stored code is no longer valid, the next word goes to address 0.
    word : Out(stream.Signature(params.word_bits, always_ready=True))
        A code word, appended (the memory always takes it; past ``params.code_words`` words it
        sets ``overflow`` instead).
    commit : Out(stream.Signature(code_header_layout(params), always_ready=True))
        The job ended well: the words written since ``rewind`` are the stored code, with this
        header; it is valid unless the memory overflowed.
    overflow : In(1)
        A word did not fit since the last ``rewind``.
    """

    def __init__(self, params):
        super().__init__({
            "rewind": Out(1),
            "word": Out(stream.Signature(params.word_bits, always_ready=True)),
            "commit": Out(stream.Signature(code_header_layout(params), always_ready=True)),
            "overflow": In(1),
        })


class CodeReadSignature(wiring.Signature):
    """The code memory's read side, seen from the memory (a reader, the SIC sequencer, takes it
    as ``In(CodeReadSignature(params))``).

    Members
    -------
    valid : Out(1)
        The memory holds the code of the last SEC job, which ended without error.
    m, kept, nbits : Out
        The stored code's header (:func:`code_header_layout`).
    nwords : Out(range(params.code_words + 1))
        Words of the stored code.
    addr, en : In
        The read port: the word at ``addr`` is read in a cycle with ``en``...
    data : Out(params.word_bits)
        ... and is on ``data`` from the next cycle until the next read.
    """

    def __init__(self, params):
        super().__init__({
            "valid": Out(1),
            "m": Out(unsigned(params.count_bits)),
            "kept": Out(range(params.tokens + 1)),
            "nbits": Out(unsigned(params.nbits_bits)),
            "nwords": Out(range(params.code_words + 1)),
            "addr": In(range(params.code_words)),
            "en": In(1),
            "data": Out(params.word_bits),
        })


class CodeMemory(FocusBlock):
    """``params.code_words`` words (the longest code of any job) and the header of the code they
    hold.

    Writes take effect at the end of the cycle of the ``write.word`` beat; a commit in cycle t
    makes ``read.valid`` and the header hold from cycle t + 1. Reads have one cycle of latency
    (a synchronous read port: block RAM on an FPGA). Nothing here is reset by ``CTRL.ABORT``: a
    valid code survives it; only ``write.rewind`` (an SEC start) makes it invalid.

    Members
    -------
    write : In(CodeWriteSignature(params))
    read : Out(CodeReadSignature(params))
    """

    def __init__(self, params=None):
        super().__init__(params, lambda p: {
            "write": In(CodeWriteSignature(p)),
            "read": Out(CodeReadSignature(p)),
        })

    def elaborate(self, platform):
        p = self._params
        m = Module()
        w, r = self.write, self.read
        m.submodules.memory = mem = memory.Memory(shape=unsigned(p.word_bits),
                                                  depth=p.code_words, init=[])
        wp = mem.write_port()
        rp = mem.read_port()

        wptr = Signal(range(p.code_words + 1))
        overflow = Signal()
        m.d.comb += [
            wp.addr.eq(wptr),
            wp.data.eq(w.word.payload),
            wp.en.eq(w.word.valid & (wptr < p.code_words)),
            w.overflow.eq(overflow),
            rp.addr.eq(r.addr),
            rp.en.eq(r.en),
            r.data.eq(rp.data),
        ]
        with m.If(wp.en):
            m.d.sync += wptr.eq(wptr + 1)
        with m.If(w.word.valid & (wptr == p.code_words)):
            m.d.sync += overflow.eq(1)
        with m.If(w.commit.valid):
            header = w.commit.payload
            m.d.sync += [r.valid.eq(~overflow), r.m.eq(header.m), r.kept.eq(header.kept),
                         r.nbits.eq(header.nbits), r.nwords.eq(wptr)]
        with m.If(w.rewind):
            m.d.sync += [r.valid.eq(0), wptr.eq(0), overflow.eq(0)]
        return m
