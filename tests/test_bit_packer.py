# amaranth: UnusedElaboratable=no
"""The bit packer (``rtl/lib/bit_packer.py``) in the Amaranth simulator, job after job, against a
string reference (each field's bits written out MSB first, cut into words, the last one padded)
under the four stall patterns with the stream-rule monitor: fields of every length from 0 to the
widest, fields longer than a word, jobs that end exactly on a word boundary and one-bit jobs; its
throughput with no stalls."""

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from test_stream_lib import PATTERNS, stalls_for

from rtl.layouts import offset_word_layout
from rtl.lib.bit_packer import BitPacker
from rtl.params import FocusParams
from sim.streams import run_streams


def _field_layout(fw):
    return data.StructLayout({"value": fw, "length": range(fw + 1), "end": 1})


class _PackerJobs(wiring.Component):
    """The packer with the flush protocol of its users: the field flagged ``end`` is a job's
    last; ``flush`` then stays high, and no field is offered, until ``done``. ``nbits`` is the
    job's number (mod 2**nbits_bits), to check that every word copies it."""

    def __init__(self, params, fw):
        self._params, self._fw = params, fw
        super().__init__({
            "i_stream": In(stream.Signature(_field_layout(fw))),
            "o_stream": Out(stream.Signature(offset_word_layout(params))),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.packer = packer = BitPacker(self._params, self._fw)
        i = self.i_stream
        flushing = Signal()
        job = Signal(self._params.nbits_bits)
        m.d.comb += [
            packer.i_stream.payload.value.eq(i.payload.value),
            packer.i_stream.payload.length.eq(i.payload.length),
            packer.i_stream.valid.eq(i.valid & ~flushing),
            i.ready.eq(packer.i_stream.ready & ~flushing),
            packer.flush.eq(flushing),
            packer.nbits.eq(job),
        ]
        with m.If(i.valid & i.ready & i.payload.end):
            m.d.sync += flushing.eq(1)
        with m.If(packer.done):
            m.d.sync += [flushing.eq(0), job.eq(job + 1)]
        wiring.connect(m, packer.o_stream, wiring.flipped(self.o_stream))
        return m


def reference_words(jobs, wb, nbits_bits):
    """The words of ``jobs`` (lists of (value, length)), written out as strings."""
    words = []
    for number, job in enumerate(jobs):
        bits = "".join(format(v, f"0{n}b") if n else "" for v, n in job)
        bits += "0" * (-len(bits) % wb)
        count = len(bits) // wb
        words += [{"word": int(bits[k * wb:(k + 1) * wb], 2),
                   "nbits": number % (1 << nbits_bits), "last": int(k == count - 1)}
                  for k in range(count)]
    return words


def random_jobs(rng, count, fw, wb):
    """``count`` jobs of random fields (lengths 0..fw, values filling them), each with at least
    one bit; among them jobs that end on a word boundary and one-bit jobs."""
    jobs = []
    for n in range(count):
        if n % 5 == 1:
            jobs.append([(1, 1)])
            continue
        job = [(rng.randrange(1 << k) if k else 0, k)
               for k in (rng.randint(0, fw) for _ in range(rng.randint(1, 12)))]
        bits = sum(k for _, k in job)
        if bits == 0:
            job.append((0, 1))
            bits = 1
        if n % 5 == 3 and bits % wb:
            pad = wb - bits % wb
            while pad:
                k = min(pad, fw)
                job.append((rng.randrange(1 << k), k))
                pad -= k
        jobs.append(job)
    return jobs


def beats(jobs):
    return [{"value": v, "length": k, "end": int(f == len(job) - 1)}
            for job in jobs for f, (v, k) in enumerate(job)]


@pytest.mark.parametrize("wb,fw", [(8, 13), (16, 5), (8, 8)])
@pytest.mark.parametrize("pattern", [p for p, _ in PATTERNS])
def test_packer_equals_reference(pattern, wb, fw):
    rng = random.Random(wb * 100 + fw + len(pattern))
    p = FocusParams(tokens=16, word_bits=wb)
    jobs = random_jobs(rng, 40, fw, wb)
    want = reference_words(jobs, wb, p.nbits_bits)
    got, _ = run_streams(_PackerJobs(p, fw), {"i_stream": beats(jobs)},
                         {"o_stream": len(want)}, stalls=stalls_for(pattern, ["i_stream"],
                                                                    ["o_stream"]),
                         seed=wb + fw)
    assert got["o_stream"] == want


@pytest.mark.parametrize("job,cycles", [
    ([(5, 3)] * 16, 19), ([(1, 8)] * 8, 11), ([(1, 1)], 4), ([(0, 0), (3, 2)] * 5, 13),
    # 7 + 8 * 8 = 71 bits: from the second field on the buffer holds 15 bits, one word more
    # than it sends, and takes a field in the same cycle as it sends a word (the case the
    # take test "held < 2 * word_bits" is for); the extra word leaves one cycle late.
    ([(1, 7)] + [(255, 8)] * 8, 13),
])
def test_packer_takes_a_field_per_cycle(job, cycles):
    """Fields no longer than a word, no stalls: a job of f fields takes f + 3 cycles from its
    first field to its last word (one field per cycle; a field taken in cycle t is in a word
    offered from t + 3), one more when a word is still waiting behind the last field's."""
    p = FocusParams(tokens=16, word_bits=8)
    want = reference_words([job], 8, p.nbits_bits)
    got, stats = run_streams(_PackerJobs(p, 8), {"i_stream": beats([job])},
                             {"o_stream": len(want)})
    assert got["o_stream"] == want
    assert stats["cycles"] == cycles
