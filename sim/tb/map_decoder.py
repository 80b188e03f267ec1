"""cocotb testbench of the map decoder (spec 4.5; style R8).

Run through :func:`sim.runner.run_cocotb` on block ``map_decoder`` (parameters as JSON in
``FOCUS_PARAMS``). Test ``regression``: golden's codes (fixed and variable, random rankings) of
``FOCUS_JOBS`` block-matcher jobs from :func:`sim.block_match.regression_jobs`, each followed by
a corrupted copy (flipped bits, another ``nbits``, a word missing or added, random words,
positions changed); every job ends in golden's map and symbols or, exactly where golden raises
``ValueError``, in the error flag, then the decoder is idle. Without stalls and with 30 % input
idles and output back-pressure (``FOCUS_STALLS``), a stream-rule monitor on every port. The seed
is ``FOCUS_SEED`` (default 1), logged.
"""

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, RisingEdge

from golden import map_code as gmc
from rtl.sic.map_decoder import (
    map_decoder_config_layout,
    map_entry_layout,
    map_position_layout,
)
from rtl.sic.match_layouts import map_word_layout

from ..block_match import regression_jobs
from ..cocotb_streams import StreamMonitor, StreamSource, reset, start_clock
from ..map_code import word_beats
from ..streams import Stalls
from .settings import PARAMS, SEED, env_int, env_stalls

JOBS = env_int("FOCUS_JOBS", 16)
STALLS = env_stalls()
PORTS = ("cfg_stream", "i_stream", "pos_stream", "o_stream")


def _jobs(p, seed):
    """(words, nbits, positions, FS, HS) of good codes, each followed by a corrupted one."""
    jobs, thetas = regression_jobs(p, JOBS, seed=seed, tokens=(10, 60))
    rng = np.random.default_rng(seed)
    wb = p.word_bits
    out = []
    for n, job in enumerate(jobs):
        codes = gmc.match_codes(job.vectors, job.positions, frame_stride=job.frame_stride,
                                row_stride=job.row_stride, theta_q=thetas[job.layer],
                                tile=p.tile, window=p.window)
        ranking = tuple(int(s) for s in rng.permutation(8))
        words, nbits = gmc.encode_map(codes, variable=bool(n % 2), ranking=ranking,
                                      word_bits=wb)
        words = [int(w) for w in words]
        pos = np.asarray(job.positions)
        out.append((words, nbits, pos, job.frame_stride, job.row_stride))
        bad_words, bad_nbits, bad_pos = list(words), nbits, pos.copy()
        kind = n % 6
        if kind == 0:
            bit = int(rng.integers(0, nbits))
            bad_words[bit // wb] ^= 1 << (wb - 1 - bit % wb)
        elif kind == 1:
            bad_nbits = max(1, nbits + int(rng.integers(-9, 10)))
        elif kind == 2 and len(words) > 1:
            bad_words = words[:-1]
        elif kind == 3:
            bad_words = words + [int(rng.integers(0, 1 << wb))]
        elif kind == 4:
            bad_words = [int(w) for w in rng.integers(0, 1 << wb, len(words))]
        else:
            bad_pos = np.r_[pos, pos[-1] + 1]
        out.append((bad_words, bad_nbits, bad_pos, job.frame_stride, job.row_stride))
    return out


def _golden(p, job):
    words, nbits, pos, fs, hs = job
    try:
        mp, codes = gmc.decode_map(words, nbits, pos, frame_stride=fs, row_stride=hs,
                                   tile=p.tile, window=p.window, word_bits=p.word_bits)
    except ValueError:
        return None
    return mp.tolist(), codes.tolist()


@cocotb.test()
async def regression(dut):
    p = PARAMS
    dut._log.info(f"seed {SEED}, {JOBS} jobs (+ as many corrupted), stalls {STALLS}")
    start_clock(dut)
    monitors = [StreamMonitor(dut, port).start() for port in PORTS]
    for stalls in STALLS:
        await reset(dut)
        sources = {port: StreamSource(dut, port, layout, stalls, SEED)
                   for port, layout in (("cfg_stream", map_decoder_config_layout(p)),
                                        ("i_stream", map_word_layout(p)),
                                        ("pos_stream", map_position_layout(p)))}
        back = Stalls(stalls, seed=f"{SEED}:o_stream")
        entry = map_entry_layout(p)
        received = []

        async def sink(back=back, received=received, entry=entry):
            while True:
                ready = not back()
                dut.o_stream__ready.value = int(ready)
                await FallingEdge(dut.clk)
                take = ready and str(dut.o_stream__valid.value) == "1"
                bits = dut.o_stream__payload.value.to_unsigned() if take else None
                await RisingEdge(dut.clk)
                if bits is not None:
                    received.append(entry.from_bits(bits))

        task = cocotb.start_soon(sink())
        rejected = 0
        for n, job in enumerate(_jobs(p, SEED)):
            words, nbits, pos, fs, hs = job
            received.clear()
            tasks = [cocotb.start_soon(sources["cfg_stream"].send(
                         [{"frame_stride": fs, "row_stride": hs}])),
                     cocotb.start_soon(sources["i_stream"].send(
                         word_beats(words, nbits, p.word_bits))),
                     cocotb.start_soon(sources["pos_stream"].send(
                         [{"position": int(q), "last": int(k == len(pos) - 1)}
                          for k, q in enumerate(pos)]))]
            for t in tasks:
                await t
            idle, cycles = 0, 0
            while idle < 3:
                await RisingEdge(dut.clk)
                cycles += 1
                idle = idle + 1 if str(dut.busy.value) == "0" else 0
                assert cycles < 2000, f"job {n}: the decoder did not go idle"
            want = _golden(p, job)
            error = str(dut.error.value) == "1"
            if want is None:
                assert error, f"job {n}: golden rejects the code, the RTL does not"
                rejected += 1
            else:
                assert not error, f"job {n}: the RTL rejects a code golden accepts"
                assert [int(e.map) for e in received] == want[0], f"job {n}: map"
                assert [int(e.code) for e in received] == want[1], f"job {n}: codes"
                assert [int(e.last) for e in received] == [0] * (len(want[0]) - 1) + [1]
        task.cancel()
        dut.o_stream__ready.value = 0
        dut._log.info(f"stalls {stalls}: {rejected} of {2 * JOBS} codes rejected, as golden")
        assert JOBS // 4 <= rejected <= JOBS, "the corrupted codes should be rejected often"
    for monitor in monitors:
        monitor.check()
