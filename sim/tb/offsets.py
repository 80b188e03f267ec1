"""cocotb testbench of the offset encoder and decoder (spec 3.3; style R8).

Run through :func:`sim.runner.run_cocotb` on block ``offset_encoder`` or ``offset_decoder`` (the
parameters come as JSON in ``FOCUS_PARAMS``). Tests:

- ``job`` (either block): the data path of ``sim.encode_offsets``/``sim.decode_offsets`` with
  ``simulator="icarus"``/``"verilator"``. Reads ``{"jobs", "stalls", "seed"}`` from the JSON file
  ``FOCUS_JOB``, runs the jobs with :class:`JobRunner` and writes the per-job results (the same
  dicts as :func:`sim.offsets.run_jobs`) to ``FOCUS_JOB_OUT``.
- ``encoder_regression`` (encoder): ``FOCUS_JOBS`` masks from
  :func:`sim.offsets.regression_masks` (M from 1 to tokens, densities 0 to 1, long gaps, every
  fixed order and the adaptive one) plus the H.264 ue(v) masks, checked word by word against
  :func:`golden.offsets.encode_offsets`, without and with 30 % input idles and output
  back-pressure (``FOCUS_STALLS``, default ``0.0,0.3``); without stalls the cycles are checked
  against the encoder's documented bound.
- ``decoder_regression`` (decoder): golden's codes of ``FOCUS_JOBS`` masks, then ``FOCUS_FUZZ``
  random and mutated streams (:func:`sim.offsets.fuzz_codes`). Each job must end in golden's mask
  (and the matching index stream) or, exactly where golden raises ``ValueError``, in the error
  flag; without stalls each must end within the decoder's stated cycle bound.

Every port has a stream-rule monitor. The seed is ``FOCUS_SEED`` (default 1), logged.
"""

import json
import os

import cocotb
import numpy as np
from amaranth.lib import data
from cocotb.triggers import FallingEdge, RisingEdge, with_timeout

from golden.cycles import ENCODE_RTL_CONSTANT
from golden.offsets import decode_offsets as golden_decode
from golden.offsets import expgolomb_bits, gaps_from_mask, rice_bits
from rtl.layouts import mask_beat_layout, offset_word_layout
from rtl.sec.offset_decoder import decoder_config_layout, index_layout
from rtl.sec.offset_encoder import encoder_config_layout

from ..cocotb_streams import PERIOD_NS, StreamMonitor, start_bench
from ..offsets import (
    DECODER_PORTS,
    ENCODER_PORTS,
    checked_code,
    decoder_job,
    decoder_result,
    encoder_job,
    fuzz_codes,
    golden_code,
    job_budget,
    regression_masks,
)
from ..streams import pack, stall_sources, unpack
from .settings import PARAMS, SEED, env_int, env_stalls

JOBS = env_int("FOCUS_JOBS", 120)
FUZZ = env_int("FOCUS_FUZZ", 300)
STALLS = env_stalls()

#: The H.264 ue(v) table (ITU-T H.264 clause 9.1, Table 9-2): codeNum -> bit string.
UE_TABLE = {0: "1", 1: "010", 2: "011", 3: "00100", 4: "00101", 5: "00110", 6: "00111",
            7: "0001000", 8: "0001001"}


def _layouts(params, encoder):
    if encoder:
        return {"cfg_stream": encoder_config_layout(params), "i_stream": mask_beat_layout(params),
                "o_stream": offset_word_layout(params)}
    return {"cfg_stream": decoder_config_layout(params), "i_stream": offset_word_layout(params),
            "o_stream": mask_beat_layout(params), "idx_stream": index_layout(params)}


def _is_decoder(dut):
    return hasattr(dut, "idx_stream__valid")


def _high(handle):
    return str(handle.value) == "1"


class JobRunner:
    """The cocotb twin of :func:`sim.offsets.run_jobs`: jobs one after the other (each starts when
    the previous one is idle), seeded stalls per port (the same decisions, in the same cycles,
    as the Amaranth runner), a :class:`StreamMonitor` on every port, and per-job results."""

    def __init__(self, dut, params, stalls=0.0, seed=0):
        self.dut, self.params = dut, params
        decoder = _is_decoder(dut)
        self.inputs, self.outputs = DECODER_PORTS if decoder else ENCODER_PORTS
        self.layouts = _layouts(params, not decoder)
        self.stalls = stall_sources(stalls, (*self.inputs, *self.outputs), seed)
        self.monitors = [StreamMonitor(dut, port) for port in (*self.inputs, *self.outputs)]
        for port in self.inputs:
            getattr(dut, f"{port}__valid").value = 0
        for port in self.outputs:
            getattr(dut, f"{port}__ready").value = 0

    async def start(self):
        await start_bench(self.dut, self.monitors)

    async def run(self, jobs):
        """Run ``jobs`` (``{input port: [payload, ...]}`` each); returns the per-job results."""
        dut = self.dut
        results = [{port: [] for port in self.outputs} for _ in jobs]
        state = {"job": 0, "sent": False, "sent_at": None, "start": None, "last": None}

        async def source():
            cycle = 0
            for k, job in enumerate(jobs):
                while state["job"] != k:
                    await RisingEdge(dut.clk)
                    cycle += 1
                for port in self.inputs:
                    valid = getattr(dut, f"{port}__valid")
                    ready = getattr(dut, f"{port}__ready")
                    payload = getattr(dut, f"{port}__payload")
                    for beat in job[port]:
                        while self.stalls[port]():
                            await RisingEdge(dut.clk)
                            cycle += 1
                        value = pack(self.layouts[port], beat)
                        payload.value = value.as_bits() if isinstance(value, data.Const) \
                            else int(value)
                        valid.value = 1
                        taken = False
                        while not taken:
                            await FallingEdge(dut.clk)
                            taken = _high(ready)
                            await RisingEdge(dut.clk)
                            cycle += 1
                        if state["start"] is None:
                            state["start"] = cycle - 1
                        state["sent_at"] = cycle - 1
                        valid.value = 0
                state["sent"] = True

        async def sink(port):
            valid = getattr(dut, f"{port}__valid")
            ready = getattr(dut, f"{port}__ready")
            payload = getattr(dut, f"{port}__payload")
            cycle = 0
            while True:
                take = not self.stalls[port]()
                ready.value = int(take)
                await FallingEdge(dut.clk)
                bits = payload.value.to_unsigned() if take and _high(valid) else None
                await RisingEdge(dut.clk)
                if bits is not None and state["job"] < len(jobs):
                    results[state["job"]][port].append(
                        unpack(data.Const(self.layouts[port], bits)))
                    state["last"] = cycle
                cycle += 1

        async def control():
            cycle = 0
            for k in range(len(jobs)):
                while True:
                    await FallingEdge(dut.clk)
                    busy = _high(dut.busy)
                    error, cause = _high(dut.error), dut.cause.value.to_unsigned()
                    await RisingEdge(dut.clk)
                    if state["sent"] and cycle > state["sent_at"] and not busy:
                        break
                    cycle += 1
                start, last = state["start"], state["last"]
                results[k].update(error=int(error), cause=int(cause), start=start,
                                  end=cycle - start + 1,
                                  cycles=0 if last is None else last - start + 1)
                state.update(job=k + 1, sent=False, start=None, last=None)
                cycle += 1

        p = max(s.p for s in self.stalls.values())
        budget = job_budget(jobs, self.inputs, p) * PERIOD_NS
        tasks = [cocotb.start_soon(source())]
        tasks += [cocotb.start_soon(sink(port)) for port in self.outputs]
        await with_timeout(cocotb.start_soon(control()), budget, "ns")
        for task in tasks:
            task.cancel()
        for monitor in self.monitors:
            monitor.check()
            monitor.stop()
        return results


@cocotb.test(skip="FOCUS_JOB" not in os.environ)
async def job(dut):
    """Jobs from ``FOCUS_JOB`` (JSON), results to ``FOCUS_JOB_OUT``."""
    with open(os.environ["FOCUS_JOB"]) as f:
        spec = json.load(f)
    runner = JobRunner(dut, PARAMS, spec["stalls"], spec["seed"])
    await runner.start()
    results = await runner.run(spec["jobs"])
    with open(os.environ["FOCUS_JOB_OUT"], "w") as f:
        json.dump(results, f)


def ue_masks():
    """Masks whose order-0 code bodies are codeNum 0..8: one kept token after g dropped ones."""
    masks = []
    for code_num in UE_TABLE:
        mask = np.zeros(code_num + 1, bool)
        mask[code_num] = True
        masks.append(mask)
    return masks


def ue_check(mask, words, nbits, word_bits):
    """The bits after the header of the single-gap code must be the table's string."""
    code_num = int(np.flatnonzero(mask)[0])
    bits = "".join(format(int(w), f"0{word_bits}b") for w in words)[:nbits]
    header = 5 + mask.size.bit_length()
    assert bits[:5] == "00000", f"codeNum {code_num}: order, set, family {bits[:5]}"
    assert bits[header:] == UE_TABLE[code_num], (
        f"codeNum {code_num}: the RTL wrote {bits[header:]}, H.264 says {UE_TABLE[code_num]}")


@cocotb.test()
async def encoder_regression(dut):
    """Random masks and the ue(v) table against golden, word by word, for each of ``STALLS``."""
    assert not _is_decoder(dut), "encoder_regression needs the offset_encoder block"
    for stalls in STALLS:
        await _encoder_regression(dut, stalls)


async def _encoder_regression(dut, stalls):
    p = PARAMS
    masks = regression_masks(p, JOBS, seed=SEED) + [(mask, 0) for mask in ue_masks()]
    dut._log.info("encoder regression: %d jobs, params %s, stalls %s, seed %d (FOCUS_SEED)",
                  len(masks), p.tag, stalls, SEED)
    runner = JobRunner(dut, p, stalls, SEED)
    await runner.start()
    results = await runner.run([encoder_job(mask, order, p.lanes) for mask, order in masks])
    longest = 0
    for k, ((mask, order), result) in enumerate(zip(masks, results, strict=True)):
        words, nbits = checked_code(k, mask, order, result, p)
        if k >= JOBS:
            ue_check(mask, words, nbits, p.word_bits)
        if stalls == 0.0:
            # Ingest, the choice (33 cycles; 9 with offset_schemes = "kept-exp-golomb"), then
            # the header and one field per cycle (a dropped-set walk has at most M fields).
            W, n = -(-mask.size // p.lanes), int(mask.sum())
            bound = W + n + max(mask.size + 1, len(words)) + ENCODE_RTL_CONSTANT + 1
            assert result["cycles"] <= bound, (
                f"job {k}: {result['cycles']} cycles > bound {bound} (M {mask.size}, n {n})")
        head = int(words[0]) >> (p.word_bits - 5)
        coded = mask if not (head >> 1) & 1 else ~mask
        if coded.any():
            e, gaps = head >> 2, gaps_from_mask(coded)
            lengths = rice_bits(gaps, e) if head & 1 else expgolomb_bits(gaps, e)
            longest = max(longest, int(lengths.max()))
    if 2 * p.tokens.bit_length() - 1 > p.word_bits:
        assert longest > p.word_bits, f"no code longer than a word ({longest} bits at most)"
    dut._log.info("encoder regression passed: the longest code has %d bits (word_bits %d)",
                  longest, p.word_bits)


@cocotb.test()
async def decoder_regression(dut):
    """Valid codes and fuzzed streams: golden's mask, or the error flag where golden raises; for
    each of ``STALLS``."""
    assert _is_decoder(dut), "decoder_regression needs the offset_decoder block"
    for stalls in STALLS:
        await _decoder_regression(dut, stalls)


async def _decoder_regression(dut, stalls):
    p = PARAMS
    valid = []
    for mask, order in regression_masks(p, JOBS, seed=SEED):
        words, nbits = golden_code(mask, order, p.word_bits)
        valid.append(([int(w) for w in words], nbits, mask.size))
    jobs = valid + fuzz_codes(p, FUZZ, seed=SEED)
    dut._log.info("decoder regression: %d valid and %d fuzzed jobs, params %s, stalls %s, "
                  "seed %d (FOCUS_SEED)", len(valid), FUZZ, p.tag, stalls, SEED)
    runner = JobRunner(dut, p, stalls, SEED)
    await runner.start()
    results = await runner.run([decoder_job(w, nbits, M) for w, nbits, M in jobs])
    errors = 0
    for k, ((words, nbits, M), result) in enumerate(zip(jobs, results, strict=True)):
        try:
            want = golden_decode(words, nbits, M, p.word_bits)
        except ValueError:
            want = None
        try:
            got, _ = decoder_result(result, M, p.lanes)
        except ValueError:
            got = None
        what = f"job {k} (words {words}, nbits {nbits}, M {M})"
        if want is None:
            assert got is None, f"{what}: golden rejects it, the RTL decoded {got}"
            errors += 1
        else:
            assert got is not None, f"{what}: the RTL flagged cause {result['cause']}"
            assert np.array_equal(got, want), f"{what}: RTL {got}, golden {want}"
        if stalls == 0.0:
            written = len(result["idx_stream"])
            if words and nbits >= 4 and (words[0] >> (p.word_bits - 4)) & 1:
                written = M             # a dropped-set code: the walk over the M positions
            bound = len(words) + written + -(-M // p.lanes) + 11
            assert result["end"] <= bound, f"{what}: idle after {result['end']} > {bound} cycles"
    dut._log.info("decoder regression passed: %d jobs, %d rejected by golden and flagged",
                  len(jobs), errors)
